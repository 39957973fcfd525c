"""End-to-end audits of whole private algorithms on tiny neighbouring datasets.

Each private PC variant is run through the one public function (:func:`dpcg.discover`,
in memory) many times with fresh seeds on two neighbouring datasets (3 variables, 200
rows, one row replaced) at a declared total ``eps``; its output (the CPDAG, serialised)
is a discrete pattern and the generic harness :func:`audits.suite.algorithm_sampler`
audits it like any other mechanism. The empirical lower bound must not exceed the
declared guarantee.

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
#: The quick profile's whole-run audits (a choice of profile, not a registry).
QUICK_ALGORITHMS = ("laplace-pc", "svt-pc")
#: The full profile's first items, in the order that fixes their seeds (seed + position:
#: the published full-profile numbers); newly registered algorithms follow, sorted.
_SEED_ORDER = ("laplace-pc", "svt-pc", "priv-pc", "em-pc", "curate")


def all_algorithms() -> tuple[str, ...]:
    """Every registered private algorithm (the registry drives the audit: a new
    algorithm is audited with no edit here), the published ones first in their seed
    order."""
    from dpcg.private.registry import algorithms

    return tuple(sorted(algorithms(), key=lambda n: (
        _SEED_ORDER.index(n) if n in _SEED_ORDER else len(_SEED_ORDER), n)))


def data_kind(name: str) -> str:
    """``discrete``, ``continuous`` or ``mixed``: the data the algorithm's default test
    takes (which neighbouring pair it is audited on; :func:`dpcg.testing.data_kind`)."""
    from dpcg.private.registry import get_algorithm
    from dpcg.testing import data_kind as kind_of

    return kind_of(get_algorithm(name))


def _row0_replaced(arr: np.ndarray, names: tuple[str, ...], what: str) -> fixtures.Neighbours:
    """Three-level ordinal columns ``names`` with codes ``arr``, and the neighbour that
    replaces row 0 by ``(0, 2, ..., 2)`` (or ``(2, 0, ..., 0)`` if row 0 is that row),
    which breaks the first column's dependences."""
    from dpcg.data.dataset import Dataset
    from dpcg.data.schema import Ordinal, Schema

    breaker = (0,) + (2,) * (len(names) - 1)
    arr2 = arr.copy()
    arr2[0] = breaker if tuple(arr[0]) != breaker else tuple(2 - v for v in breaker)
    schema = Schema([Ordinal(name, ("0", "1", "2")) for name in names])
    return fixtures.Neighbours(Dataset.from_numpy(arr, schema, encoded=True),
                               Dataset.from_numpy(arr2, schema, encoded=True), what)


def tiny_pair(seed: int = 0) -> fixtures.Neighbours:
    """Three ordinal variables (x -> y, z independent), 200 rows; D' replaces row 0
    by a row that breaks the x-y dependence."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 3, N_ROWS)
    y = (x + rng.integers(0, 2, N_ROWS)) % 3
    z = rng.integers(0, 3, N_ROWS)
    return _row0_replaced(np.c_[x, y, z], ("x", "y", "z"),
                          f"3 ordinal variables, {N_ROWS} rows, row 0 replaced")


def hub_pair(seed: int = 0) -> fixtures.Neighbours:
    """Five ordinal variables, a hub ``h`` and four children, 200 rows; D' replaces row 0
    by a row that breaks the hub's dependences. With a forced level-0 selection
    (:data:`SCREENED`) Laplace-PC and Priv-PC make a screened selection on it whose
    dropped pairs are carried into level 1's candidate sets."""
    rng = np.random.default_rng(seed)
    h = rng.integers(0, 3, N_ROWS)
    arr = np.c_[(h, *((h + rng.integers(0, 2, N_ROWS)) % 3 for _ in range(4)))]
    return _row0_replaced(arr, ("h", "a", "b", "c", "d"),
                          f"a hub and 4 children (ordinal), {N_ROWS} rows, row 0 replaced")


#: Options forcing the screened level-0 selection on :func:`hub_pair` (first release
#: keeps 8 of the 10 pairs, the second 2; the other 6 are carried into level 1).
SCREENED: dict[str, Any] = {"select": 0.8, "screen_selection": 1}
#: Options making every node of :func:`hub_pair` run Hub-PC's level-0 selection (each has
#: 4 pairs, more than the 2 partners it keeps: 5 top-k releases per run), with the
#: removal margin of levels 1..D on.
HUB_SELECT: dict[str, Any] = {"neighbours": 2, "margin": 1.0}
#: The same selection as Priv-PC's opt-in option.
PRIV_NODE_SELECT: dict[str, Any] = {"node_select": 2}
#: Priv-PC's hub switch on the hub fixture (``docs/privacy/algorithm-priv-pc.md``, "The hub
#: switch"): ``'auto'`` makes the check's Laplace release at any ``n eps`` (on 200 rows the
#: mean stays below the cuts: the default path follows it); ``'on'`` takes the hub
#: branch without a check (per-node selection, the margin and the repeated sieve asks).
PRIV_HUB_CHECK: dict[str, Any] = {"hub_mode": "auto"}
PRIV_HUB_FORCED: dict[str, Any] = {"hub_mode": "on"}
#: Marginal-PC's level 0 by a private selection on :func:`hub_pair`
#: (``docs/privacy/algorithm-marginal-pc.md``, "Level 0 by a private selection"): per node
#: (each node keeps 2 of its 4 pairs: 5 top-k releases, then the kept pairs' 2-way tables
#: as one Gaussian release) and global (one top-5 of the 10 pairs, no level-0 tables: the
#: selection's order ranks level 1's sets).
MARGINAL_SELECT_NODES: dict[str, Any] = {"level0": "select", "select_by": "nodes",
                                         "select_per_node": 2}
MARGINAL_SELECT_PAIRS: dict[str, Any] = {"level0": "select", "select_by": "pairs",
                                         "select_per_node": 1, "kept_tables": 0}


def private_pc(name: str, **options: Any) -> Callable[[Any, int], Hashable]:
    import dpcg

    def algorithm(dataset: Any, seed: int) -> Hashable:
        res = dpcg.discover(dataset, algorithm=name, epsilon=EPS, noise_seed=seed,
                            ledger=dpcg.NO_LEDGER, **options)
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
    names = all_algorithms() if full else QUICK_ALGORITHMS
    if not full:
        notes.append("quick profile: algorithm-level audits of laplace-pc and svt-pc only "
                     f"(all {len(all_algorithms())} registered algorithms in the full profile)")
    pairs = {"discrete": pair}
    out = []
    for name in names:
        kind = data_kind(name)
        if kind not in pairs:
            pairs[kind] = continuous_dataset_pair() if kind == "continuous" else \
                mixed_dataset_pair()
        out.append(EmpiricalItem("algorithm", f"{name} (eps={EPS:g}, whole run)",
                                 algorithm_sampler(private_pc(name)), pairs[kind], EPS,
                                 scale=-1.0))
    if full:
        hub = hub_pair()
        out += [
            EmpiricalItem("algorithm", f"{name} (eps={EPS:g}, whole run, screened selection)",
                          algorithm_sampler(private_pc(name, **SCREENED)), hub, EPS,
                          scale=-1.0)
            for name in ("laplace-pc", "priv-pc")
        ]
        out += [
            EmpiricalItem("algorithm", f"{name} (eps={EPS:g}, whole run, per-node selection)",
                          algorithm_sampler(private_pc(name, **opts)), hub, EPS, scale=-1.0)
            for name, opts in (("hub-pc", HUB_SELECT), ("priv-pc", PRIV_NODE_SELECT))
        ]
        out += [
            EmpiricalItem("algorithm", f"priv-pc (eps={EPS:g}, whole run, {what})",
                          algorithm_sampler(private_pc("priv-pc", **opts)), hub, EPS,
                          scale=-1.0)
            for what, opts in (("hub check", PRIV_HUB_CHECK),
                               ("hub branch forced", PRIV_HUB_FORCED))
        ]
        out += [
            EmpiricalItem("algorithm", f"marginal-pc (eps={EPS:g}, whole run, {what})",
                          algorithm_sampler(private_pc("marginal-pc", **opts)), hub, EPS,
                          scale=-1.0)
            for what, opts in (("level-0 selection per node", MARGINAL_SELECT_NODES),
                               ("level-0 selection of pairs", MARGINAL_SELECT_PAIRS))
        ]
    try:
        out.extend(ci_test_items())
    except ImportError as exc:  # pragma: no cover - depends on the continuous room
        notes.append(f"PrivGCM / PrivCRT audits skipped: {exc}")
    out.extend(cov_pc_items(full))
    return out


# ---------------------------------------------------------------------------------
# Private CI tests (PrivGCM, PrivCRT): one test per run, through a fresh session
# ---------------------------------------------------------------------------------

N_CONT = 100


def continuous_pair(seed: int = 1) -> fixtures.Neighbours:
    """(x, y, z) in [-1, 1]^3 with x and y both depending on z, 100 rows; D' replaces
    row 0 by the extreme row (1, -1, 0)."""
    rng = np.random.default_rng(seed)
    z = rng.uniform(-1.0, 1.0, N_CONT)
    x = np.clip(0.6 * z + 0.3 * rng.standard_normal(N_CONT), -1.0, 1.0)
    y = np.clip(-0.5 * z + 0.3 * rng.standard_normal(N_CONT), -1.0, 1.0)
    d = np.c_[x, y, z]
    dp = d.copy()
    dp[0] = [1.0, -1.0, 0.0]
    return fixtures.Neighbours(d, dp, f"3 continuous variables in [-1, 1], {N_CONT} rows, "
                                      "row 0 replaced by (1, -1, 0)")


def continuous_dataset_pair(seed: int = 1) -> fixtures.Neighbours:
    """:func:`continuous_pair` as Datasets with the declared bounds [-1, 1] (the data of
    a whole-run audit of an algorithm for continuous data)."""
    from dpcg.data.dataset import Dataset
    from dpcg.data.schema import Continuous, Schema

    pair = continuous_pair(seed)
    schema = Schema([Continuous(name, -1.0, 1.0) for name in ("x", "y", "z")])
    return fixtures.Neighbours(Dataset.from_numpy(np.asarray(pair.d), schema),
                               Dataset.from_numpy(np.asarray(pair.d_prime), schema),
                               pair.description)


def mixed_dataset_pair(seed: int = 2) -> fixtures.Neighbours:
    """Two continuous columns in [-1, 1] and a three-level ordinal one that shifts them,
    100 rows; D' replaces row 0 by the extreme row (1, -1, level 0)."""
    from dpcg.data.dataset import Dataset
    from dpcg.data.schema import Continuous, Ordinal, Schema

    rng = np.random.default_rng(seed)
    z = rng.integers(0, 3, N_CONT)
    x = np.clip(0.4 * (z - 1) + 0.3 * rng.standard_normal(N_CONT), -1.0, 1.0)
    y = np.clip(-0.4 * (z - 1) + 0.3 * rng.standard_normal(N_CONT), -1.0, 1.0)
    schema = Schema([Continuous("x", -1.0, 1.0), Continuous("y", -1.0, 1.0),
                     Ordinal("z", ("0", "1", "2"))])
    d = np.c_[x, y, z.astype(np.float64)]
    dp = d.copy()
    dp[0] = [1.0, -1.0, 0.0]
    return fixtures.Neighbours(Dataset.from_numpy(d, schema), Dataset.from_numpy(dp, schema),
                               f"2 continuous in [-1, 1] and 1 ordinal, {N_CONT} rows, "
                               "row 0 replaced by (1, -1, 0)")


def ci_test_sampler(kind: str) -> Callable[[Any, int, np.random.Generator], Any]:
    """``n`` runs of one private CI test X _||_ Y | Z, each in its own session with
    budget ``EPS`` and a fresh seed. PrivGCM returns the statistic computed from the
    noisy residual products (post-processing of the release); PrivCRT its p-value."""
    from accounting.costs import Budget
    from accounting.session import Session
    from dpcg.citests.crt import GaussianModelX, PrivateModelX, PrivCRTTest
    from dpcg.citests.crt_law import law_mechanism, release_model_x, split_law_budget
    from dpcg.citests.gcm import PrivGCMTest

    bounds = [(-1.0, 1.0)] * 3
    cache: dict[int, Any] = {}

    def make(values: Any) -> Any:
        key = id(values)
        if key not in cache:
            if kind == "gcm":
                # lam = 1 (not the default rule, which gives 0.34 here): the smallest
                # c_lam of the range in use, where Theorem 1 is relatively tightest
                cache[key] = PrivGCMTest(np.asarray(values).T, bounds, None, EPS, lam=1.0)
            elif kind == "gcm-grouped":
                # grouped release, 10 sums, at lam = 1: the twice-fitted default since
                # issue 60's fix (c_lambda_twice(1, 0.5) = 3.5; the single fit's c* 7.5)
                cache[key] = PrivGCMTest(np.asarray(values).T, bounds, None, EPS, lam=1.0,
                                         bandwidth=0.5, groups=10)
            elif kind == "crt-law":
                # --model-x private: half of EPS on the law's release, half on the test
                cache[key] = PrivCRTTest(np.asarray(values).T, bounds, None,
                                         split_law_budget(EPS, 0.5)[1], PrivateModelX(0.5),
                                         m=19, y_fit="law")
            else:
                model = GaussianModelX.from_arrays(
                    np.zeros(3), np.array([[1.0, 0.0, 0.6], [0.0, 1.0, -0.5],
                                           [0.6, -0.5, 1.0]]))
                cache[key] = PrivCRTTest(np.asarray(values).T, bounds, None, EPS, model, m=19)
        return cache[key]

    def run(values: Any, n: int, rng: np.random.Generator) -> Any:
        test = make(values)
        seeds = rng.integers(0, 2**63 - 1, size=n)
        out = np.empty(n, dtype=np.float64)
        for i, s in enumerate(seeds):
            test.session = Session(Budget(EPS), seed=int(s))
            if not kind.startswith("gcm"):
                test.generator = None  # the CRT resamples from the session's generator
            if kind == "crt-law":
                law_eps = split_law_budget(EPS, 0.5)[0]
                test.model = release_model_x(test.session, test.data,
                                             law_mechanism(test.data.n, 3, law_eps))
            r = test.test(0, 1, (2,))
            out[i] = r.statistic if kind.startswith("gcm") else r.pvalue
        return out

    return run


def ci_test_items() -> list[Any]:
    from audits.suite import EmpiricalItem

    pair = continuous_pair()
    return [
        EmpiricalItem("algorithm", f"PrivGCM test (eps={EPS:g}, noisy statistic)",
                      ci_test_sampler("gcm"), pair, EPS, scale=-1.0),
        EmpiricalItem("algorithm", f"grouped PrivGCM test (eps={EPS:g}, 10 sums, noisy "
                      "statistic)", ci_test_sampler("gcm-grouped"), pair, EPS, scale=-1.0),
        EmpiricalItem("algorithm", f"PrivCRT test (eps={EPS:g}, m=19, p-value)",
                      ci_test_sampler("crt"), pair, EPS, scale=-1.0),
        EmpiricalItem("algorithm", f"PrivCRT with a released law (eps={EPS:g}: half on "
                      "the law, half on the test; p-value)", ci_test_sampler("crt-law"),
                      pair, EPS, scale=-1.0),
    ]


# ---------------------------------------------------------------------------------
# cov-pc: one zCDP release of a moment vector, then PC as post-processing
# ---------------------------------------------------------------------------------

#: delta of the cov-pc audits (the run's declared (EPS, COV_DELTA) guarantee)
COV_DELTA = 1e-6
#: replicates of each test's simulated null in the audit runs (public; small = fast)
COV_DRAWS = 20


def cov_dataset(values: Any) -> Any:
    """The (n, 3) array of :func:`continuous_pair` as a dataset with bounds [-1, 1]."""
    from dpcg.data.dataset import Dataset
    from dpcg.data.schema import Continuous, Schema

    arr = np.asarray(values, dtype=np.float64)
    schema = Schema([Continuous(c, -1.0, 1.0) for c in ("x", "y", "z")])
    return Dataset.from_numpy(arr, schema)


def cov_pc_sampler(test: str, output: str) -> Callable[[Any, int, np.random.Generator], Any]:
    """``n`` runs of cov-pc (``test`` = ``cov-rank`` or ``cov-pearson``) at
    ``(EPS, COV_DELTA)``, each in a fresh session with a fresh seed. ``output``:
    ``"graph"`` (the CPDAG, coded as an integer) or ``"release"`` (the released moment
    of x and y: the release itself, before any post-processing)."""
    from accounting.costs import Budget
    from accounting.session import Session
    from dpcg.api import discover
    from dpcg.pipeline.request import NO_LEDGER
    from dpcg.private.contract import RunSettings
    from dpcg.private.cov_pc import ALGORITHM, CovPCParams

    cache: dict[int, Any] = {}
    codes: dict[str, int] = {}

    def data(values: Any) -> Any:
        key = id(values)
        if key not in cache:
            cache[key] = cov_dataset(values)
        return cache[key]

    def run(values: Any, n: int, rng: np.random.Generator) -> Any:
        ds = data(values)
        seeds = rng.integers(0, 2**63 - 1, size=n)
        if output == "graph":
            out = np.empty(n, dtype=np.int64)
            for i, s in enumerate(seeds):
                res = discover(ds, algorithm=ALGORITHM.name, epsilon=EPS, delta=COV_DELTA,
                               test=test, noise_seed=int(s), null_draws=COV_DRAWS,
                               ledger=NO_LEDGER)
                key = json.dumps(res.cpdag.to_json(), sort_keys=True, default=str)
                out[i] = codes.setdefault(key, len(codes))
            return out
        settings = RunSettings(epsilon=EPS, delta=COV_DELTA, test=test)
        source = ALGORITHM.source(ds, settings, None)
        plan = ALGORITHM.plan(CovPCParams(null_draws=COV_DRAWS), settings, source)
        vals = np.empty(n, dtype=np.float64)
        off = 1 if test == "cov-pearson" else 0
        for i, s in enumerate(seeds):
            session = Session(Budget(EPS, COV_DELTA), rule="zcdp", seed=int(s))
            tester = ALGORITHM.tester(plan, source, session)
            vals[i] = tester.moments[off, off + 1]
        return vals

    return run


def cov_pc_items(full: bool = True) -> list[Any]:
    """cov-pc's release (the x-y moment; both profiles) and whole run (the CPDAG; full
    profile only), both routes."""
    from audits.suite import EmpiricalItem

    pair = continuous_pair()
    out = []
    for test in ("cov-rank", "cov-pearson"):
        out.append(EmpiricalItem(
            "algorithm", f"cov-pc --test {test} (eps={EPS:g}, delta={COV_DELTA:g}, released "
            "x-y moment)", cov_pc_sampler(test, "release"), pair, EPS,
            declared_delta=COV_DELTA, scale=-1.0))
        if not full:
            continue
        out.append(EmpiricalItem(
            "algorithm", f"cov-pc --test {test} (eps={EPS:g}, delta={COV_DELTA:g}, whole run)",
            cov_pc_sampler(test, "graph"), pair, EPS, declared_delta=COV_DELTA, scale=-1.0))
    return out
