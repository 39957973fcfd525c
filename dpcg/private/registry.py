"""The one registry of private algorithms (``dpcg discover --algorithm NAME``).

Each algorithm module of :mod:`dpcg.private` ends with
``register_algorithm(ALGORITHM)``. :func:`algorithms` imports every module of the
package once (a package scan, so a seventh algorithm is one new module: nothing else is
edited) and returns the registered objects by name.
"""

from __future__ import annotations

import importlib
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
    found = algorithms()
    if name not in found:
        raise AlgorithmError(f"algorithm: unknown private algorithm {name!r}; choose from "
                             f"{sorted(found)}")
    return found[name]
