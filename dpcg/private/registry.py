"""The one registry of private algorithms (``dpcg discover --algorithm NAME``).

Each algorithm module of :mod:`dpcg.private` ends with
``register_algorithm(ALGORITHM)``. :func:`algorithms` imports every module of the
package once (a package scan, so a seventh algorithm is one new module: nothing else is
edited) and returns the registered objects by name; :func:`get_algorithm` imports only
the module named after the algorithm first.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from typing import Any

from dpcg.errors import AlgorithmError
from dpcg.private.contract import PrivateAlgorithm

__all__ = ["AnyAlgorithm", "algorithms", "get_algorithm", "register_algorithm",
           "unregister_algorithm"]

#: A registered algorithm, whatever its Params/source/plan/tester types.
AnyAlgorithm = PrivateAlgorithm[Any, Any, Any, Any]

_ALGORITHMS: dict[str, AnyAlgorithm] = {}
_scanned: list[bool] = []


def register_algorithm(algorithm: AnyAlgorithm) -> AnyAlgorithm:
    """Add ``algorithm``; another object under an existing name is an error."""
    old = _ALGORITHMS.get(algorithm.name)
    if old is not None and old is not algorithm:
        raise AlgorithmError(f"algorithm {algorithm.name!r} is already registered")
    _ALGORITHMS[algorithm.name] = algorithm
    return algorithm


def unregister_algorithm(name: str) -> None:
    """Remove an algorithm (tests registering a toy algorithm clean up with it)."""
    _ALGORITHMS.pop(name, None)


def _scan() -> None:
    if _scanned:
        return
    _scanned.append(True)
    package = importlib.import_module("dpcg.private")
    for info in pkgutil.iter_modules(package.__path__, prefix="dpcg.private."):
        importlib.import_module(info.name)


def algorithms() -> dict[str, AnyAlgorithm]:
    """Every registered private algorithm, by name (sorted: import order must not matter)."""
    _scan()
    return dict(sorted(_ALGORITHMS.items()))


def get_algorithm(name: str) -> AnyAlgorithm:
    """The algorithm ``name``: the module ``dpcg.private.<name with _ for ->`` is
    imported first (the convention of the package), the whole package only when the
    name is not found there (lazy discovery)."""
    if name in _ALGORITHMS:
        return _ALGORITHMS[name]
    module = "dpcg.private." + name.replace("-", "_")
    if not _scanned and all(part.isidentifier() for part in module.split(".")):
        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            spec = None
        if spec is not None:
            importlib.import_module(module)
            if name in _ALGORITHMS:
                return _ALGORITHMS[name]
    found = algorithms()
    if name not in found:
        raise AlgorithmError(f"algorithm: unknown private algorithm {name!r}; choose from "
                             f"{sorted(found)}")
    return found[name]
