"""The one way the package imports an optional dependency: by name, naming the extra to install.

The package's own modules import each other at the top; a module that needs a dependency that
only an extra installs (Dask, Polars, POT, OR-Tools, scikit-learn, matplotlib, tqdm) imports it
where it is used, through :func:`import_optional`, so that importing the package never needs
it and a missing one says what to install (as OpenDP's ``import_optional_dependency``).
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

__all__ = ["import_optional", "lazy_module", "OptionalDependencyError", "EXTRAS"]

#: the pip name and the package extra that installs each optional module
EXTRAS: dict[str, tuple[str, str]] = {
    "dask": ("dask[distributed]", "dask"),
    "distributed": ("dask[distributed]", "dask"),
    "polars": ("polars", "polars"),
    "ot": ("POT", "eval"),
    "ortools": ("ortools", "eval"),
    "sklearn": ("scikit-learn", "eval"),
    "matplotlib": ("matplotlib", "plot"),
    "tqdm": ("tqdm", "progress"),
}


class OptionalDependencyError(ImportError):
    """An optional dependency is missing; the message names the pip package and the extra."""


def import_optional(name: str, purpose: str | None = None) -> ModuleType:
    """Import the optional module ``name`` (e.g. ``"polars"``, ``"ortools.graph.python"``).

    :param name: the module to import
    :param purpose: what needs it, for the message (default: the module's name)
    :return: the module
    :raises OptionalDependencyError: (an :class:`ImportError`) if it is not installed, naming
        the pip package and the extra that installs it

    :example:

    >>> from opendp_wasserstein.core.optional import import_optional
    >>> import_optional("json").__name__
    'json'
    >>> try:
    ...     import_optional("tqdm_is_not_a_module")
    ... except ImportError as e:
    ...     print(e)
    tqdm_is_not_a_module needs tqdm_is_not_a_module: pip install tqdm_is_not_a_module
    """
    try:
        return importlib.import_module(name)
    except ImportError as e:
        root = name.partition(".")[0]
        pip, extra = EXTRAS.get(root, (root, ""))
        hint = f"pip install {pip}" + (
            f" (or pip install 'opendp-wasserstein[{extra}]')" if extra else ""
        )
        raise OptionalDependencyError(f"{purpose or name} needs {pip}: {hint}") from e


class _LazyModule:
    """A stand-in for a required module that imports it on the first attribute read."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}>"


def lazy_module(name: str) -> Any:
    """A stand-in for the required module ``name`` that imports it when an attribute is first
    read (``pd = lazy_module("pandas")``; ``pd.Series`` imports pandas), so that a module whose
    functions use a heavy dependency does not pay its import where those functions never run
    (pandas is 0.3 s of a numeric ``synth``'s start-up).  Unlike :func:`importlib.util.LazyLoader`
    it never puts a half-loaded module into :data:`sys.modules`; each read costs one dictionary
    look-up in :data:`sys.modules` once the module is loaded.

    :param name: the module's dotted name
    :return: an object whose attributes are the module's

    :example:

    >>> from opendp_wasserstein.core.optional import lazy_module
    >>> lazy_module("json").dumps([1])
    '[1]'
    """
    return _LazyModule(name)
