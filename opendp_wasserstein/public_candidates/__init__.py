"""The kernel of selection from public candidates: candidate sets, tree metrics, Tree-EM
sampling."""
