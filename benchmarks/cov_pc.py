"""Measurements of cov-PC (``dpcg.private.cov_pc``): type-I error of its noise-aware
tests on null data, and skeleton F1 on the Sachs flow-cytometry data.

* :func:`null_rejections`: ``reps`` seeded repetitions of one test ``X _||_ Y | Z`` on
  fresh null data, each with its own release of the moment vector through a fresh
  session (the same mechanism ``cov-pc`` plans), returning the rejection rate.
* :func:`sachs_table`: non-private Fisher-z PC and cov-PC at several budgets on the
  Sachs data read from the ``cdt`` 0.6.0 wheel (``pip download cdt==0.6.0 --no-deps``);
  the data is never copied into the package.

Run ``python -m benchmarks.cov_pc type1 [REPS]``, ``python -m benchmarks.cov_pc sachs
WHEEL`` or ``python -m benchmarks.cov_pc scale P N``.
"""

from __future__ import annotations

import io
import sys
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from accounting.costs import Budget
from accounting.session import Session
from dpcg.data.dataset import Dataset
from dpcg.data.schema import Categorical, Column, Continuous, Ordinal, Schema

#: null designs: name -> (rows, rng) -> (dataset, x, y, S)
Design = Callable[[int, np.random.Generator], tuple[Dataset, int, int, tuple[int, ...]]]

BOUND = 8.0


def _cont(names: tuple[str, ...], bound: float = BOUND) -> list[Column]:
    return [Continuous(nm, -bound, bound) for nm in names]


def gaussian_chain(n: int, rng: np.random.Generator) -> tuple[Dataset, int, int,
                                                                tuple[int, ...]]:
    """``X <- Z1 -> Y``, ``Z2 -> X``, ``Z2`` independent of ``Y``: ``X _||_ Y | Z1, Z2``
    (Gaussian, clipped at +-8 standard deviations: the declared bounds)."""
    z1 = rng.standard_normal(n)
    z2 = rng.standard_normal(n)
    x = 0.7 * z1 + 0.5 * z2 + 0.6 * rng.standard_normal(n)
    y = 0.8 * z1 + 0.6 * rng.standard_normal(n)
    arr = np.clip(np.c_[x, y, z1, z2], -BOUND, BOUND)
    return (Dataset.from_numpy(arr, Schema(_cont(("X", "Y", "Z1", "Z2")))), 0, 1, (2, 3))


def skewed_chain(n: int, rng: np.random.Generator) -> tuple[Dataset, int, int,
                                                              tuple[int, ...]]:
    """:func:`gaussian_chain` through monotone skewing maps (a Gaussian copula with
    log-normal and cubic margins): the rank route's null."""
    ds, x, y, s = gaussian_chain(n, rng)
    v = ds.values
    arr = np.c_[np.exp(v[0]), v[1] ** 3, np.exp(0.5 * v[2]), np.sinh(v[3])]
    lim = float(np.max(np.abs([np.exp(BOUND), BOUND ** 3, np.sinh(BOUND)])))
    schema = Schema([Continuous(nm, -lim, lim) for nm in ("X", "Y", "Z1", "Z2")])
    return Dataset.from_numpy(arr, schema), x, y, s


def mixed_chain(n: int, rng: np.random.Generator) -> tuple[Dataset, int, int,
                                                             tuple[int, ...]]:
    """A nominal ``Z`` (3 categories) shifts a continuous ``X`` and an ordinal ``Y``
    (4 levels): ``X _||_ Y | Z``."""
    z = rng.integers(0, 3, n)
    shift = np.array([-1.0, 0.5, 1.5])
    x = np.clip(shift[z] + rng.standard_normal(n), -BOUND, BOUND)
    ylat = np.array([1.0, -0.5, 0.2])[z] + rng.standard_normal(n)
    y = np.digitize(ylat, [-1.0, 0.0, 1.0])
    cols = [np.asarray(x), y.astype(np.int64), z.astype(np.int64)]
    schema = Schema([Continuous("X", -BOUND, BOUND), Ordinal("Y", ("0", "1", "2", "3")),
                     Categorical("Z", ("a", "b", "c"))])
    return Dataset.from_columns(cols, schema, encoded=True), 0, 1, (2,)


def marginal_mixed(n: int, rng: np.random.Generator) -> tuple[Dataset, int, int,
                                                                tuple[int, ...]]:
    """A binary ``X`` and a nominal ``Y`` (4 categories), independent: ``S`` empty."""
    x = rng.integers(0, 2, n)
    y = rng.integers(0, 4, n)
    schema = Schema([Categorical("X", ("no", "yes")), Categorical("Y", ("a", "b", "c", "d"))])
    return (Dataset.from_columns([x.astype(np.int64), y.astype(np.int64)], schema,
                                 encoded=True), 0, 1, ())


def binary_confounder(n: int, rng: np.random.Generator) -> tuple[Dataset, int, int,
                                                                   tuple[int, ...]]:
    """A binary ``Z`` shifts two continuous columns: ``X _||_ Y | Z`` (a continuous pair
    conditioned on a discrete column, where the copula map and the rank scale meet)."""
    z = rng.integers(0, 2, n)
    x = np.clip(1.5 * z + rng.standard_normal(n), -BOUND, BOUND)
    y = np.clip(-1.2 * z + rng.standard_normal(n), -BOUND, BOUND)
    schema = Schema([Continuous("X", -BOUND, BOUND), Continuous("Y", -BOUND, BOUND),
                     Categorical("Z", ("no", "yes"))])
    return (Dataset.from_columns([x, y, z.astype(np.int64)], schema, encoded=True), 0, 1,
            (2,))


def wide_mixed(n: int, rng: np.random.Generator) -> tuple[Dataset, int, int,
                                                             tuple[int, ...]]:
    """Continuous ``X`` and ``Y`` given six columns (four continuous, a nominal of 3
    categories, a binary), all of which shift both linearly: ``X _||_ Y | S``, ``|S| = 6``
    (10 score columns, the largest test of these designs)."""
    z = rng.standard_normal((n, 4))
    c1 = rng.integers(0, 3, n)
    c2 = rng.integers(0, 2, n)
    shift = np.array([-1.0, 0.3, 1.0])
    x = z @ np.array([0.6, -0.4, 0.3, 0.0]) + shift[c1] + 0.5 * c2 + rng.standard_normal(n)
    y = z @ np.array([0.5, 0.0, -0.5, 0.4]) - shift[c1] + 0.8 * c2 + rng.standard_normal(n)
    cols = [np.clip(v, -BOUND, BOUND) for v in (x, y, *z.T)]
    schema = Schema([*_cont(("X", "Y", "Z1", "Z2", "Z3", "Z4")),
                     Categorical("C1", ("a", "b", "c")), Categorical("C2", ("no", "yes"))])
    return (Dataset.from_columns([*cols, c1.astype(np.int64), c2.astype(np.int64)], schema,
                                 encoded=True), 0, 1, (2, 3, 4, 5, 6, 7))


DESIGNS: dict[str, Design] = {"gaussian": gaussian_chain, "skewed": skewed_chain,
                              "mixed": mixed_chain, "mixed-marginal": marginal_mixed,
                              "binary-confounder": binary_confounder, "wide-mixed": wide_mixed}


@dataclass(frozen=True)
class Type1:
    design: str
    test: str
    n: int
    epsilon: float
    reps: int
    rejections: int
    #: repetitions whose test the release noise swamped (first-order noise sd of a
    #: tested partial correlation above ``NONLINEAR_SD``; public, post-processing)
    swamped: int = 0

    @property
    def rate(self) -> float:
        return self.rejections / self.reps


def binomial_band(reps: int, level: float = 0.05, coverage: float = 0.99) -> tuple[float,
                                                                                   float]:
    """The central ``coverage`` interval of ``Binomial(reps, level) / reps``."""
    from scipy.stats import binom

    tail = (1.0 - coverage) / 2.0
    lo = binom.ppf(tail, reps, level)
    hi = binom.ppf(1.0 - tail, reps, level)
    return float(lo) / reps, float(hi) / reps


def with_effect(ds: Dataset, x: int, y: int, beta: float) -> Dataset:
    """``ds`` with ``Y += beta X`` (both continuous), clipped to Y's declared bounds:
    an alternative of the same design (power)."""
    cols = [np.asarray(ds.column(j)) for j in range(len(ds.schema.columns))]
    ycol = ds.schema.columns[y]
    if not (isinstance(ycol, Continuous) and isinstance(ds.schema.columns[x], Continuous)):
        raise ValueError("with_effect: X and Y must be continuous")
    cols[y] = np.clip(cols[y] + beta * cols[x], ycol.lower, ycol.upper)
    return Dataset.from_columns(cols, ds.schema, encoded=True)


def null_rejections(design: str, test: str, n: int, *, epsilon: float = 1.0,
                    delta: float = 1e-6, reps: int = 100, seed: int = 0,
                    alpha: float = 0.05, draws: int = 200, null: str | None = None,
                    beta: float = 0.0) -> Type1:
    """Rejection rate of cov-PC's test on ``reps`` fresh null datasets (seeded); with
    ``beta != 0`` on the alternative ``Y += beta X`` of the same design (power), and the
    number of repetitions whose test was swamped by the release noise."""
    from dpcg.private.contract import RunSettings
    from dpcg.private.cov_pc import ALGORITHM, CovPCParams

    rng = np.random.default_rng(seed)
    rejected = 0
    swamped = 0
    for rep in range(reps):
        ds, x, y, s = DESIGNS[design](n, rng)
        if beta:
            ds = with_effect(ds, x, y, beta)
        settings = RunSettings(epsilon=epsilon, delta=delta, test=test, alpha=alpha)
        source = ALGORITHM.source(ds, settings, None)
        plan = ALGORITHM.plan(CovPCParams(null_draws=draws, null=null), settings, source)
        session = Session(Budget(epsilon, delta), rule="zcdp", seed=seed * 100_003 + rep)
        tester = ALGORITHM.tester(plan, source, session)
        rejected += int(not tester.test(x, y, s).independent)
        swamped += int(tester.swamped(x, y, s))
    return Type1(design, test, n, epsilon, reps, rejected, swamped)


# ---------------------------------------------------------------------------------
# Sachs
# ---------------------------------------------------------------------------------


def read_sachs(wheel: str) -> tuple[np.ndarray, tuple[str, ...], set[frozenset[str]]]:
    """``(values n x 11, names, consensus skeleton)`` from the ``cdt`` 0.6.0 wheel."""
    with zipfile.ZipFile(wheel) as zf:
        data_name = next(f for f in zf.namelist() if f.endswith("cyto_full_data.csv"))
        target_name = next(f for f in zf.namelist() if f.endswith("cyto_full_target.csv"))
        data = zf.read(data_name).decode()
        target = zf.read(target_name).decode()
    lines = data.strip().splitlines()
    names = tuple(h.strip().strip('"') for h in lines[0].split(","))
    values = np.loadtxt(io.StringIO("\n".join(lines[1:])), delimiter=",")
    edges: set[frozenset[str]] = set()
    for line in target.strip().splitlines()[1:]:
        a, b = (t.strip().strip('"') for t in line.split(",")[:2])
        edges.add(frozenset((a, b)))
    return values, names, edges


def skeleton_f1(found: set[frozenset[str]], truth: set[frozenset[str]]) -> float:
    tp = len(found & truth)
    if tp == 0:
        return 0.0
    prec = tp / len(found)
    rec = tp / len(truth)
    return 2 * prec * rec / (prec + rec)


def _skeleton(cpdag_json: dict[str, object]) -> set[frozenset[str]]:
    edges = cpdag_json["edges"]
    assert isinstance(edges, dict)
    return {frozenset(map(str, e)) for kind in ("directed", "undirected")
            for e in edges.get(kind, [])}


def sachs_table(wheel: str, epsilons: tuple[float, ...] = (1.0, 5.0),
                seeds: tuple[int, ...] = (0, 1, 2, 3, 4),
                tests: tuple[str, ...] = ("cov-rank",)) -> list[dict[str, object]]:
    """Skeleton F1 vs the consensus graph: Fisher-z PC, the non-private copula test and
    cov-PC at each ``epsilon`` and noise seed (rank route: the declared bounds are only
    validated, never used by the statistic)."""
    from dpcg.api import NO_LEDGER, discover

    values, names, truth = read_sachs(wheel)
    # Declared bounds: the rank route uses none; the schema still needs them. A public
    # instrument range would be [0, 2^18]; wider than every value here.
    schema = Schema([Continuous(nm, 0.0, float(2 ** 18)) for nm in names])
    ds = Dataset.from_numpy(values, schema)
    rows: list[dict[str, object]] = []
    for test in ("fisherz", "copula"):
        t0 = time.perf_counter()
        res = discover(ds, algorithm="pc", test=test)
        found = _skeleton(res.cpdag.to_json())
        rows.append({"method": f"pc --test {test} (non-private)", "epsilon": None,
                     "seed": None, "f1": skeleton_f1(found, truth), "edges": len(found),
                     "seconds": time.perf_counter() - t0})
    for test in tests:
        for eps in epsilons:
            for seed in seeds:
                t0 = time.perf_counter()
                priv = discover(ds, algorithm="cov-pc", epsilon=eps, delta=1e-6, test=test,
                                noise_seed=seed, ledger=NO_LEDGER)
                found = _skeleton(priv.pc.cpdag.to_json())
                rows.append({"method": f"cov-pc --test {test}", "epsilon": eps,
                             "seed": seed, "f1": skeleton_f1(found, truth),
                             "edges": len(found), "seconds": time.perf_counter() - t0})
    return rows


def scale_run(p: int, n: int, *, epsilon: float = 1.0, seed: int = 0) -> dict[str, float]:
    """cov-PC (rank route) on a random linear-Gaussian DAG of ``p`` nodes (edge
    probability ``2/p`` in a fixed order, weights +-[0.5, 1]) with ``n`` rows:
    CPU seconds, number of tests and skeleton F1."""
    from dpcg.api import NO_LEDGER, discover

    rng = np.random.default_rng(seed)
    w = np.triu(rng.uniform(0.5, 1.0, (p, p)) * (rng.random((p, p)) < 2.0 / p)
                * rng.choice([-1.0, 1.0], (p, p)), 1)
    x = np.zeros((n, p))
    for j in range(p):
        x[:, j] = x @ w[:, j] + rng.standard_normal(n)
    x = np.clip(x / x.std(axis=0), -BOUND, BOUND)
    names = tuple(f"v{i}" for i in range(p))
    truth = {frozenset((names[i], names[j])) for i in range(p) for j in range(p)
             if w[i, j] != 0}
    ds = Dataset.from_numpy(x, Schema(_cont(names)))
    t0 = time.process_time()
    res = discover(ds, algorithm="cov-pc", epsilon=epsilon, noise_seed=seed, ledger=NO_LEDGER)
    cpu = time.process_time() - t0
    found = _skeleton(res.pc.cpdag.to_json())
    return {"p": p, "n": n, "cpu_seconds": cpu, "tests": len(res.pc.tests),
            "f1": skeleton_f1(found, truth)}


def main(argv: list[str]) -> int:
    if argv and argv[0] == "scale":
        print(scale_run(int(argv[1]), int(argv[2])))
        return 0
    if argv and argv[0] == "sachs":
        for row in sachs_table(argv[1]):
            print(row)
        return 0
    reps = int(argv[1]) if len(argv) > 1 else 200
    for design, test in (("gaussian", "cov-pearson"), ("gaussian", "cov-rank"),
                         ("skewed", "cov-rank"), ("mixed", "cov-rank"),
                         ("mixed-marginal", "cov-rank"), ("mixed", "cov-pearson"),
                         ("binary-confounder", "cov-rank"),
                         ("binary-confounder", "cov-pearson"),
                         ("wide-mixed", "cov-rank"), ("wide-mixed", "cov-pearson")):
        for n in (1_000, 10_000, 100_000):
            r = null_rejections(design, test, n, reps=reps, seed=n)
            lo, hi = binomial_band(reps)
            print(f"{design:15s} {test:12s} n={n:>7,} type-I {r.rate:.3f} "
                  f"(99% band [{lo:.3f}, {hi:.3f}], {reps} reps; swamped "
                  f"{r.swamped / reps:.2f})", flush=True)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))


__all__ = ["DESIGNS", "Type1", "binomial_band", "null_rejections", "read_sachs",
           "sachs_table", "scale_run", "skeleton_f1", "with_effect"]
