"""The dyadic kernel of the PMM family: grid codes and count trees, split orders, the
traversals, least squares, the noisy tree and the placement of synthetic points."""
