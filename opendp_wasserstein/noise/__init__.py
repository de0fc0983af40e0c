"""Randomness: the one random source, exact integer samplers, node-addressed noise.

Every random draw of a release comes from :class:`RandomSource` (:func:`as_random_source`: the
operating system's CSPRNG unless :func:`opendp_wasserstein.runtime.reproducible` asks for a
seeded, non-private run).  :func:`fast_discrete_laplace` and :func:`fast_discrete_gaussian` draw
``LapZ(sigma)`` and ``N_Z(0, sigma^2)`` exactly for whole arrays of scales (the ``"fast"``
back-end of :mod:`~opendp_wasserstein.noise.samplers`), and
:mod:`~opendp_wasserstein.noise.node_randomness` makes a tree node's noise a function of the
release key and the node.
"""

from opendp_wasserstein.noise._fast_gaussian import fast_discrete_gaussian
from opendp_wasserstein.noise._fast_laplace import fast_discrete_laplace
from opendp_wasserstein.noise._source import RandomSource, as_random_source

__all__ = ["RandomSource", "as_random_source", "fast_discrete_laplace", "fast_discrete_gaussian"]
