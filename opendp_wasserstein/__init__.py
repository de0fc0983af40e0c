"""opendp-wasserstein: differentially private synthetic data and public-candidate selection with
1-Wasserstein guarantees, as OpenDP Transformations and Measurements.

- :mod:`opendp_wasserstein.transformations` and :mod:`opendp_wasserstein.measurements` hold the
  constructors (``make_x(input_domain, input_metric, ...)`` and ``then_x``).
- :func:`synthesize` and :func:`select_candidates` are the high-level entry points.

Importing the package registers every constructor with OpenDP's Context API (the
``measurements``, ``transformations`` and ``tables`` subpackages are imported here for that;
they add about 0.25 s to the import).  The package reaches OpenDP through
:mod:`opendp_wasserstein.core.dp`, never ``opendp.prelude`` (which loads scikit-learn).
"""

from opendp_wasserstein import measurements, tables, transformations  # noqa: F401 (registers every constructor)
from opendp_wasserstein._version import __version__
from opendp_wasserstein.api import SelectionReport, SynthesisReport, select_candidates, synthesize

__all__ = [
    "synthesize",
    "SynthesisReport",
    "select_candidates",
    "SelectionReport",
    "__version__",
]
