"""opendp-wasserstein: differentially private synthetic data and public-candidate selection with
1-Wasserstein guarantees, as OpenDP Transformations and Measurements.

- :mod:`opendp_wasserstein.transformations` and :mod:`opendp_wasserstein.measurements` hold the
  constructors (``make_x(input_domain, input_metric, ...)`` and ``then_x``).
- :func:`synthesize` is the high-level entry point.
"""

from opendp_wasserstein.api import SynthesisReport, synthesize

__version__ = "0.1.0"

__all__ = ["synthesize", "SynthesisReport", "__version__"]
