"""OpenDP's public API as the package uses it, imported without :mod:`opendp.prelude`.

``opendp.prelude`` imports every extra whose dependency is installed, among them
``opendp.extras.sklearn``, which loads scikit-learn (about 2 of the 3 seconds an
``import opendp.prelude`` takes where scikit-learn is installed, as with this package's
``dev``, ``eval`` and ``bench`` extras).  The package's modules import ``dp`` from here
(``from opendp_wasserstein.core import dp``) and get the same objects under the same names as
``opendp.prelude`` gives them (a test checks every name against the prelude), from OpenDP's
public modules only (the Context API's ``register`` is reached through
:mod:`opendp_wasserstein._compat`).  User code and the docs keep ``import opendp.prelude as dp``.
"""

from opendp import combinators as c
from opendp import measurements as m
from opendp import transformations as t
from opendp.core import new_function
from opendp.domains import atom_domain, user_domain, vector_domain
from opendp.extras import numpy
from opendp.measures import max_divergence, zero_concentrated_divergence
from opendp.metrics import (
    absolute_distance,
    change_one_distance,
    l1_distance,
    l2_distance,
    linf_distance,
    symmetric_distance,
)
from opendp.mod import enable_features

__all__ = [
    "absolute_distance",
    "atom_domain",
    "c",
    "change_one_distance",
    "enable_features",
    "l1_distance",
    "l2_distance",
    "linf_distance",
    "m",
    "max_divergence",
    "new_function",
    "numpy",
    "symmetric_distance",
    "t",
    "user_domain",
    "vector_domain",
    "zero_concentrated_divergence",
]
