"""opendp-wasserstein: differentially private synthetic data and public-candidate selection with
1-Wasserstein guarantees, as OpenDP Transformations and Measurements.

- :mod:`opendp_wasserstein.transformations` and :mod:`opendp_wasserstein.measurements` hold the
  constructors (``make_x(input_domain, input_metric, ...)`` and ``then_x``).
- :func:`synthesize` and :func:`select_candidates` are the high-level entry points.
"""

from opendp_wasserstein.api import SelectionReport, SynthesisReport, select_candidates, synthesize

__version__ = "0.1.0"

__all__ = [
    "synthesize",
    "SynthesisReport",
    "select_candidates",
    "SelectionReport",
    "__version__",
]
