"""End-to-end audits of whole private algorithms on tiny neighbouring datasets.

Each private PC variant (``dpcg.private.discover``) is run many times with fresh
seeds on two neighbouring datasets (3 variables, 200 rows, one row replaced) at a
declared total ``eps``; its output (the CPDAG, serialised) is a discrete pattern and
the generic harness :func:`audits.suite.algorithm_sampler` audits it like any other
mechanism. The empirical lower bound must not exceed the declared guarantee.

These audits are sanity checks of the composition (every release charged, nothing
released outside the session), not tight ones: a few hundred to a few thousand runs
per dataset cannot approach the declared ``eps`` of a whole algorithm.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np

from audits import fixtures

EPS = 1.0
N_ROWS = 200
QUICK_ALGORITHMS = ("laplace-pc", "svt-pc")
ALL_ALGORITHMS = ("laplace-pc", "svt-pc", "priv-pc", "em-pc", "curate")


def tiny_pair(seed: int = 0) -> fixtures.Neighbours:
    """Three ordinal variables (x -> y, z independent), 200 rows; D' replaces row 0
    by a row that breaks the x-y dependence."""
    from dpcg.data.dataset import Dataset
    from dpcg.data.schema import Ordinal, Schema

    rng = np.random.default_rng(seed)
    x = rng.integers(0, 3, N_ROWS)
    y = (x + rng.integers(0, 2, N_ROWS)) % 3
    z = rng.integers(0, 3, N_ROWS)
    arr = np.c_[x, y, z]
    arr2 = arr.copy()
    arr2[0] = [0, 2, 2] if tuple(arr[0]) != (0, 2, 2) else [2, 0, 0]
    schema = Schema([Ordinal(name, ("0", "1", "2")) for name in ("x", "y", "z")])
    d = Dataset.from_numpy(arr, schema, encoded=True)
    dp = Dataset.from_numpy(arr2, schema, encoded=True)
    return fixtures.Neighbours(d, dp, f"3 ordinal variables, {N_ROWS} rows, row 0 replaced")


def private_pc(name: str) -> Callable[[Any, int], Hashable]:
    from dpcg.private import discover

    def algorithm(dataset: Any, seed: int) -> Hashable:
        res = discover(dataset, algorithm=name, epsilon=EPS, seed=seed)
        return json.dumps(res.cpdag.to_json(), sort_keys=True, default=str)

    return algorithm


def items(notes: list[str], full: bool = False) -> list[Any]:
    from audits.suite import EmpiricalItem, algorithm_sampler

    try:
        pair = tiny_pair()
        import dpcg.private  # noqa: F401
    except ImportError as exc:  # pragma: no cover - depends on the other rooms
        notes.append(f"algorithm-level audits skipped: {exc}")
        return []
    names = ALL_ALGORITHMS if full else QUICK_ALGORITHMS
    if not full:
        notes.append("quick profile: algorithm-level audits of laplace-pc and svt-pc only "
                     "(all five variants in the full profile)")
    notes.append("PrivGCM / PrivCRT CI tests: no algorithm-level audit yet")
    return [
        EmpiricalItem("algorithm", f"{name} (eps={EPS:g}, whole run)",
                      algorithm_sampler(private_pc(name)), pair, EPS, scale=-1.0)
        for name in names
    ]
