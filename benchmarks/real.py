"""``dpcg bench real``: a real continuous table and generated mixed networks (issue 54).

1. **Sachs et al. flow cytometry** (7,466 rows x 11 proteins, continuous), read at bench
   time from the ``cdt`` 0.6.0 wheel (``cdt/data/resources/cyto_full_data.csv`` and the
   18-edge consensus graph ``cyto_full_target.csv``; never copied into this package).
   ``--wheel FILE`` names the wheel; without it the suite looks for
   ``cdt-0.6.0-py3-none-any.whl`` in ``--workdir`` and otherwise fetches it there with
   ``python -m pip download cdt==0.6.0 --no-deps``. The SHA-256 of the wheel is reported
   beside the one of the PyPI file. The declared schema gives every protein the public
   bounds ``[0, 10^4]``: the four-decade intensity scale of the cytometers of that
   study, known without looking at the data. The consensus graph has a directed cycle,
   so only skeleton scores are reported (F1, precision, recall against its 18
   undirected pairs).

   Rows: non-private PC-stable with Fisher-z and with ``dg-lrt``; causal-learn's PC
   (``causallearn.search.ConstraintBased.PC.pc``, ``fisherz``, ``stable=True``; an
   optional test oracle) with a parity check of the skeletons; and every private
   algorithm of :func:`dpcg.private.registry.algorithms` with every test whose data kind
   fits the schema (:func:`private_candidates`), at each ``--epsilons`` value over
   ``--seeds`` noise seeds ``0..S-1``.
2. **Generated mixed networks** (:mod:`dpcg.datasets.mixed_network`; ``--nodes``,
   default 20, 50, 100; half continuous; ``--rows``, default 100,000): non-private PC with
   ``dg-lrt`` and the private candidates that fit a mixed schema.
3. **Level and power of dg-lrt on mixed data** at ``--null-ns`` (default 10^3, 10^4, 10^5):
   the rejection rate over ``--null-reps`` data sets against the binomial 99 % band
   around ``alpha``, and the power against effects ``beta`` of 0.05 and 0.2.

Each private run executes in a child process stopped after ``--timeout`` seconds (the
issue's target is 10 s per run); a configuration whose first seed is stopped is not
tried with the other seeds. A refused configuration is a row saying so: refusals happen
before anything is charged. Private runs use an in-memory ledger (benchmark data, not a
protected table). A candidate's public test options are in :data:`CANDIDATE_OPTIONS` and
in its row's label (PrivCRT has no public model-X law for these tables and runs with
``--model-x private``); ``--methods TEXT`` keeps only the private rows whose label
contains ``TEXT``.

``--crt-fit`` runs, instead of the suite, the type-I study of PrivCRT with a privately
released law (:func:`run_crt_fit`; null tables that fit and that do not fit its Gaussian
law, ``docs/benchmarks/real-crt-fit.md``).

A new private algorithm or test registered with a data kind that fits (``continuous``,
``any`` or a new kind) becomes a row with no edit here. Results:
``docs/benchmarks/real.md`` (``--out`` writes the markdown elsewhere too).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import math
import multiprocessing
import subprocess
import sys
import time
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.report import machine_description, write_section
from dpcg.data import Continuous, Dataset, Schema
from dpcg.errors import DpcgError
from dpcg.graph import CPDAG
from dpcg.metrics import skeleton_scores

__all__ = [
    "CDT_SHA256",
    "CDT_WHEEL",
    "Row",
    "SachsTable",
    "find_wheel",
    "load_sachs",
    "null_rejection_rate",
    "private_candidates",
    "register",
    "run_suite",
]

CDT_WHEEL = "cdt-0.6.0-py3-none-any.whl"
#: SHA-256 of the cdt 0.6.0 wheel on PyPI (checked on 2026-12-03).
CDT_SHA256 = "a90401b688597c3ccf23cc7b10c62e19df69dc9277095bab40a1343c6e89996b"
SACHS_DATA = "cdt/data/resources/cyto_full_data.csv"
SACHS_TARGET = "cdt/data/resources/cyto_full_target.csv"
#: Declared public bounds of every protein (the cytometers' four-decade scale).
SACHS_BOUNDS = (0.0, 10_000.0)
ALPHA = 0.05
#: The null study's ``k``-th row count uses data seeds ``null_seed + NULL_STRIDE k + r``.
NULL_STRIDE = 100_000


# ------------------------------------------------------------------ data


@dataclass(frozen=True)
class SachsTable:
    dataset: Dataset
    truth: CPDAG
    values: np.ndarray[Any, np.dtype[np.float64]]
    wheel: Path
    sha256: str


def find_wheel(given: Path | None, workdir: Path) -> Path:
    """The cdt wheel: ``given``, else ``workdir/CDT_WHEEL``, else downloaded there with
    pip (the ordinary client)."""
    if given is not None:
        if not Path(given).is_file():
            raise DpcgError(f"--wheel {given}: no such file (pip download cdt==0.6.0 "
                            "--no-deps gives it)")
        return Path(given)
    local = workdir / CDT_WHEEL
    if local.is_file():
        return local
    workdir.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "cdt==0.6.0", "--no-deps", "-d",
           str(workdir)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0 or not local.is_file():
        raise DpcgError(f"could not fetch the cdt 0.6.0 wheel with {' '.join(cmd)}; "
                        "download it and pass --wheel FILE")
    return local


def load_sachs(wheel: Path) -> SachsTable:
    """The Sachs table and consensus graph, read from the wheel (zip) itself."""
    raw = Path(wheel).read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as zf:
            data_text = zf.read(SACHS_DATA).decode("utf-8")
            target_text = zf.read(SACHS_TARGET).decode("utf-8")
    except (zipfile.BadZipFile, KeyError) as exc:
        raise DpcgError(f"{wheel}: not a cdt wheel with {SACHS_DATA} ({exc})") from None
    header, _, body = data_text.partition("\n")
    names = [h.strip().strip('"') for h in header.split(",")]
    values = np.loadtxt(io.StringIO(body), delimiter=",", dtype=np.float64, ndmin=2)
    schema = Schema([Continuous(nm, *SACHS_BOUNDS) for nm in names])
    dataset = Dataset.from_numpy(values, schema)
    edges = []
    for line in target_text.splitlines()[1:]:
        if line.strip():
            a, b = (part.strip().strip('"') for part in line.split(","))
            edges.append((a, b))
    truth = CPDAG(names, undirected=edges)
    return SachsTable(dataset, truth, values, Path(wheel), digest)


def rejection_rate(n: int, reps: int, seed: int, alpha: float = ALPHA, beta: float = 0.0
                   ) -> float:
    """dg-lrt's rejection rate of ``X _||_ Y | {Z, W}`` over ``reps`` tables of
    :func:`dpcg.datasets.mixed_network.null_mixed_table` with effect ``beta`` (data
    seeds ``seed .. seed + reps - 1``)."""
    from dpcg.citests.mixed import DegenerateGaussianTest
    from dpcg.datasets.mixed_network import null_mixed_table

    hits = 0
    for r in range(reps):
        res = DegenerateGaussianTest(null_mixed_table(n, seed + r, beta), alpha).test(
            0, 1, (2, 3))
        hits += not res.independent
    return hits / reps


def null_rejection_rate(n: int, reps: int, seed: int, alpha: float = ALPHA
                        ) -> tuple[float, float, float]:
    """dg-lrt's rejection rate of ``X _||_ Y | {Z, W}`` over ``reps`` null tables
    (:func:`dpcg.datasets.mixed_network.null_mixed_table`, seeds ``seed .. seed + reps -
    1``), and the binomial 99 % band around ``alpha``."""
    from scipy.stats import binom

    rate = rejection_rate(n, reps, seed, alpha)
    lo = float(binom.ppf(0.005, reps, alpha)) / reps
    hi = float(binom.ppf(0.995, reps, alpha)) / reps
    return rate, lo, hi


# ------------------------------------------------------------------ rows


@dataclass
class Row:
    table: str
    method: str
    epsilon: float | None = None
    f1: list[float] = field(default_factory=list)
    precision: list[float] = field(default_factory=list)
    recall: list[float] = field(default_factory=list)
    edges: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    status: str = "ok"

    def add(self, est: CPDAG, truth: CPDAG, seconds: float, cpu: float) -> None:
        s = skeleton_scores(est, truth)
        self.f1.append(s.f1)
        self.precision.append(s.precision)
        self.recall.append(s.recall)
        self.edges.append(len(est.skeleton()))
        self.seconds.append(seconds)
        self.cpu.append(cpu)

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ("table", "method", "epsilon", "f1", "precision",
                                              "recall", "edges", "seconds", "cpu", "status")}


def _fits(kind: str, schema: Schema) -> bool:
    if kind == "discrete":
        return schema.is_discrete
    if kind == "continuous":
        return schema.is_continuous
    return True  # "any", or a kind this suite does not know yet: try it (a refusal is a row)


#: Test options a candidate row runs with (public; shown in the row's label): PrivCRT
#: has no public model-X law for a real table, so it releases one (``--model-x
#: private``, docs/privacy/privcrt-released-law.md).
CANDIDATE_OPTIONS: dict[tuple[str, str], dict[str, object]] = {
    ("private-ci-pc", "privcrt"): {"model_x": "private"},
}


def _label(algo: str, test: str) -> str:
    opts = CANDIDATE_OPTIONS.get((algo, test), {})
    flags = "".join(f" --{k.replace('_', '-')} {v}" for k, v in opts.items())
    return f"{algo} / {test}{flags}"


def private_candidates(schema: Schema) -> list[tuple[str, str]]:
    """``(algorithm, test)`` for every registered private algorithm and every test of
    its whose data kind fits ``schema`` (one per resolved test)."""
    from dpcg.citests.registry import get_test
    from dpcg.private.registry import algorithms

    out: list[tuple[str, str]] = []
    for name, algo in algorithms().items():
        seen: set[str] = set()
        for test in algo.tests:
            try:
                resolved = algo.resolve_test(test)
                spec = get_test(resolved)
            except DpcgError:
                continue
            if resolved in seen or not _fits(str(spec.data), schema):
                continue
            seen.add(resolved)
            out.append((name, test))
    return out


def _nonprivate(table: str, ds: Dataset, test: str, truth: CPDAG, alpha: float
                ) -> tuple[Row, CPDAG]:
    from dpcg.citests.registry import NoOptions, TestContext, get_test, make_options
    from dpcg.pc.engine import pc_stable

    spec = get_test(test)
    row = Row(table, f"pc / {test} (non-private)")
    t0, c0 = time.perf_counter(), time.process_time()
    opts = make_options(spec.options, {}) if spec.options is not NoOptions else NoOptions()
    tester = spec.make(TestContext(ds, alpha, opts))
    res = pc_stable(tester, ds.names)
    row.add(res.cpdag, truth, time.perf_counter() - t0, time.process_time() - c0)
    return row, res.cpdag


def _causallearn(table: str, values: np.ndarray[Any, np.dtype[np.float64]],
                 names: Sequence[str], truth: CPDAG, alpha: float,
                 ours: CPDAG) -> tuple[Row, bool | None]:
    row = Row(table, "causal-learn pc / fisherz (non-private)")
    try:
        from causallearn.search.ConstraintBased.PC import pc
    except ImportError:
        row.status = "causal-learn not installed"
        return row, None
    t0, c0 = time.perf_counter(), time.process_time()
    cg = pc(values, alpha, "fisherz", stable=True, show_progress=False)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    g = np.asarray(cg.G.graph)
    p = len(names)
    pairs = [(names[i], names[j]) for i in range(p) for j in range(i + 1, p)
             if g[i, j] != 0 or g[j, i] != 0]
    est = CPDAG(names, undirected=pairs)
    row.add(est, truth, seconds, cpu)
    return row, set(est.skeleton()) == set(ours.skeleton())


def _child(conn: Any, ds: Dataset, algo: str, test: str, eps: float, seed: int) -> None:
    """Runs in the child process: one private run, the skeleton and time back."""
    try:
        from dpcg.private.run import discover_private

        t0, c0 = time.perf_counter(), time.process_time()
        res = discover_private(ds, algo, epsilon=eps, test=test, noise_seed=seed,
                               test_options=dict(CANDIDATE_OPTIONS.get((algo, test), {})))
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        conn.send(("ok", [list(e) for e in res.cpdag.sorted_directed()],
                   [list(e) for e in res.cpdag.sorted_undirected()], seconds, cpu,
                   bool(res.budget_exhausted)))
    except DpcgError as exc:
        conn.send(("refused", str(exc).splitlines()[0][:160]))
    except Exception as exc:  # reported as a row, never hidden
        conn.send(("error", f"{type(exc).__name__}: {str(exc)[:160]}"))
    finally:
        conn.close()


def _private_row(table: str, ds: Dataset, truth: CPDAG, algo: str, test: str, eps: float,
                 seeds: int, timeout: float) -> Row:
    row = Row(table, _label(algo, test), epsilon=eps)
    ctx = multiprocessing.get_context("fork")
    exhausted = 0
    for seed in range(seeds):
        parent, child = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_child, args=(child, ds, algo, test, eps, seed))
        t0 = time.perf_counter()
        proc.start()
        child.close()
        got = parent.poll(timeout)
        if not got:
            proc.terminate()  # the child this function started, by its handle
            proc.join()
            row.status = (f"stopped after {timeout:g} s (seed {seed})" if not row.f1 else
                          f"seed {seed} stopped after {timeout:g} s")
            row.seconds.append(time.perf_counter() - t0)
            break
        msg = parent.recv()
        proc.join()
        if msg[0] != "ok":
            row.status = f"{msg[0]}: {msg[1]}"
            break
        _, directed, undirected, seconds, cpu, ex = msg
        est = CPDAG(ds.names, directed=[tuple(e) for e in directed],
                    undirected=[tuple(e) for e in undirected])
        row.add(est, truth, seconds, cpu)
        exhausted += ex
    if exhausted and row.status == "ok":
        row.status = f"budget exhausted in {exhausted} of {len(row.f1)} runs"
    return row


# ------------------------------------------------------------------ suite


@dataclass
class Config:
    wheel: Path | None
    workdir: Path
    epsilons: tuple[float, ...] = (1.0, 5.0)
    seeds: int = 5
    nodes: tuple[int, ...] = (20, 50, 100)
    rows: int = 100_000
    network_seed: int = 1
    sample_seed: int = 0
    alpha: float = ALPHA
    timeout: float = 60.0
    null_ns: tuple[int, ...] = (1_000, 10_000, 100_000)
    null_reps: int = 200
    null_seed: int = 20261203
    #: Effects ``beta`` of the power columns of the level study.
    betas: tuple[float, ...] = (0.05, 0.2)
    skip_sachs: bool = False
    #: run only the private rows whose label contains this text (None: all)
    methods: str | None = None

    def wanted(self, algo: str, test: str) -> bool:
        return self.methods is None or self.methods in _label(algo, test)


@dataclass
class Results:
    rows: list[Row] = field(default_factory=list)
    parity: bool | None = None
    sachs: dict[str, Any] = field(default_factory=dict)
    networks: list[dict[str, Any]] = field(default_factory=list)
    null: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0


def run_suite(cfg: Config, log: Any = None) -> Results:
    """Run every part of the suite (see the module docstring)."""
    from dpcg.datasets.mixed_network import MixedSpec, mixed_network

    def say(text: str) -> None:
        if log is not None:
            print(text, file=log, flush=True)

    out = Results()
    t_start = time.perf_counter()
    if not cfg.skip_sachs:
        sachs = load_sachs(find_wheel(cfg.wheel, cfg.workdir))
        out.sachs = {"wheel": sachs.wheel.name, "sha256": sachs.sha256,
                     "pypi": sachs.sha256 == CDT_SHA256, "n": sachs.dataset.n,
                     "p": sachs.dataset.p, "truth_edges": len(sachs.truth.skeleton())}
        fz, ours = _nonprivate("sachs", sachs.dataset, "fisherz", sachs.truth, cfg.alpha)
        cl, out.parity = _causallearn("sachs", sachs.values, sachs.dataset.names, sachs.truth,
                                      cfg.alpha, ours)
        dg, _ = _nonprivate("sachs", sachs.dataset, "dg-lrt", sachs.truth, cfg.alpha)
        cop, _ = _nonprivate("sachs", sachs.dataset, "copula", sachs.truth, cfg.alpha)
        out.rows += [fz, cl, dg, cop]
        say(f"sachs non-private: fisherz F1 {fz.f1[0]:.3f}, parity {out.parity}")
        for algo, test in private_candidates(sachs.dataset.schema):
            if not cfg.wanted(algo, test):
                continue
            for eps in cfg.epsilons:
                row = _private_row("sachs", sachs.dataset, sachs.truth, algo, test, eps,
                                   cfg.seeds, cfg.timeout)
                out.rows.append(row)
                say(f"sachs {algo}/{test} eps {eps}: {row.status} {row.f1}")
    for nodes in cfg.nodes:
        spec = MixedSpec(nodes=nodes, continuous_share=0.5, seed=cfg.network_seed)
        net = mixed_network(spec)
        t0 = time.perf_counter()
        ds = net.sample(cfg.rows, cfg.sample_seed)
        table = f"mixed-{nodes}"
        out.networks.append({"table": table, "name": net.name, "edges": len(net.dag_edges),
                             "continuous": len(net.continuous), "rows": cfg.rows,
                             "sample_seed": cfg.sample_seed,
                             "sample_seconds": time.perf_counter() - t0})
        row, _ = _nonprivate(table, ds, "dg-lrt", net.cpdag, cfg.alpha)
        cop, _ = _nonprivate(table, ds, "copula", net.cpdag, cfg.alpha)
        out.rows += [row, cop]
        say(f"{table}: dg-lrt F1 {row.f1[0]:.3f} in {row.seconds[0]:.1f} s")
        for algo, test in private_candidates(ds.schema):
            if not cfg.wanted(algo, test):
                continue
            for eps in cfg.epsilons:
                prow = _private_row(table, ds, net.cpdag, algo, test, eps, cfg.seeds,
                                    cfg.timeout)
                out.rows.append(prow)
                say(f"{table} {algo}/{test} eps {eps}: {prow.status} {prow.f1}")
    for k, n in enumerate(cfg.null_ns):
        t0 = time.perf_counter()
        seed = cfg.null_seed + NULL_STRIDE * k
        rate, lo, hi = null_rejection_rate(n, cfg.null_reps, seed, cfg.alpha)
        power = {b: rejection_rate(n, cfg.null_reps, seed + NULL_STRIDE // 2, cfg.alpha, b)
                 for b in cfg.betas}
        out.null.append({"n": n, "reps": cfg.null_reps, "rate": rate, "band": [lo, hi],
                         "in_band": lo <= rate <= hi, "power": power,
                         "seconds": time.perf_counter() - t0})
        say(f"null n={n}: rate {rate:.3f} band [{lo:.3f}, {hi:.3f}]")
    out.seconds = time.perf_counter() - t_start
    return out


def _fmt(values: Sequence[float], digits: int = 3) -> str:
    if not values:
        return "-"
    m = float(np.mean(values))
    if len(values) == 1:
        return f"{m:.{digits}f}"
    return f"{m:.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


#: A private algorithm's non-private counterpart of the same test family (its decision
#: rule on the exact statistic): the issue's "same test family" ratio.
SAME_FAMILY = {"cov-pc": "pc / copula"}


def _family_column(rows: list[Row]) -> dict[int, str]:
    """Mean F1 over the same table's non-private row of the same test family."""
    ref = {(r.table, r.method.split(" (")[0]): float(np.mean(r.f1))
           for r in rows if r.epsilon is None and r.f1}
    out: dict[int, str] = {}
    for i, r in enumerate(rows):
        family = SAME_FAMILY.get(r.method.split(" /")[0])
        base = ref.get((r.table, family)) if family else None
        if r.f1 and base:
            out[i] = f"{float(np.mean(r.f1)) / base:.2f}"
    return out


def _ratio_column(rows: list[Row]) -> dict[int, str]:
    """Mean F1 over the non-private reference of the same table (fisherz on Sachs,
    dg-lrt on the mixed networks)."""
    ref: dict[str, float] = {}
    for r in rows:
        if r.epsilon is None and r.f1 and r.table not in ref and "causal-learn" not in r.method:
            ref[r.table] = float(np.mean(r.f1))
    out: dict[int, str] = {}
    for i, r in enumerate(rows):
        base = ref.get(r.table)
        if r.f1 and base:
            out[i] = f"{float(np.mean(r.f1)) / base:.2f}"
    return out


def markdown(cfg: Config, res: Results, command: str) -> str:
    lines = [
        "## Real tables: Sachs flow cytometry and generated mixed networks (`dpcg bench real`)",
        "",
        f"<!-- generated by {command} -->",
        f"Machine: {machine_description()}. Command: `{command}` "
        f"(total {res.seconds:.0f} s wall; alpha {cfg.alpha}; private runs: noise seeds "
        f"0..{cfg.seeds - 1}, in-memory ledger, each stopped after {cfg.timeout:g} s "
        "of wall time). Wall times are on a machine shared with other jobs; CPU seconds "
        "are those of the process that ran the row. \"F1 / non-private\": mean F1 over "
        "the F1 of the same table's non-private reference (our Fisher-z PC on Sachs, "
        "dg-lrt on the mixed networks).",
        "",
    ]
    if res.sachs:
        s = res.sachs
        lines += [
            f"**Sachs et al.** {s['n']} rows x {s['p']} proteins from `{s['wheel']}` "
            f"(SHA-256 `{s['sha256'][:16]}...`, "
            f"{'the PyPI file' if s['pypi'] else 'NOT the PyPI file'}), declared bounds "
            f"[{SACHS_BOUNDS[0]:g}, {SACHS_BOUNDS[1]:g}] per protein; truth: the "
            f"{s['truth_edges']}-edge consensus skeleton. Skeleton parity of our "
            f"PC-stable + Fisher-z with causal-learn's: "
            f"**{'equal' if res.parity else 'DIFFERENT' if res.parity is False else 'n/a'}**.",
            "",
        ]
    if res.networks:
        lines.append("**Generated mixed networks** (`dpcg datasets random --nodes P --seed "
                     f"{cfg.network_seed} --continuous-share 0.5 --rows {cfg.rows} "
                     f"--sample-seed {cfg.sample_seed}`):")
        lines.append("")
        for nw in res.networks:
            lines.append(f"* `{nw['table']}`: `{nw['name']}`, {nw['edges']} edges, "
                         f"{nw['continuous']} continuous nodes")
        lines.append("")
    ratio = _ratio_column(res.rows)
    family = _family_column(res.rows)
    lines += ["| table | method | eps | skeleton F1 mean (min-max) | F1 / non-private | "
              "F1 / same family | precision | recall | edges | seconds per run (wall) | "
              "CPU s per run | status |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for i, r in enumerate(res.rows):
        eps = "-" if r.epsilon is None else f"{r.epsilon:g}"
        edges = "-" if not r.edges else f"{float(np.mean(r.edges)):.1f}"
        lines.append(f"| {r.table} | {r.method} | {eps} | {_fmt(r.f1)} | {ratio.get(i, '-')} "
                     f"| {family.get(i, '-')} | {_fmt(r.precision, 2)} | "
                     f"{_fmt(r.recall, 2)} | {edges} | "
                     f"{_fmt(r.seconds, 1)} | {_fmt(r.cpu, 1)} | {r.status} |")
    if res.null:
        lines += ["", "**Level and power of dg-lrt on mixed data** (`X` continuous, `Y` 3 states, "
                  "`S = {Z (3 states), W (continuous)}`, `E[X | S]` linear in the embedding, "
                  "`Y | S` softmax; `dpcg.datasets.mixed_network.null_mixed_table`, "
                  f"data seeds {cfg.null_seed} + {NULL_STRIDE:,} k + r for the k-th row "
                  "count and repetition r):", "",
                  "| n | repetitions | rejection rate | 99 % band | in band | "
                  + " | ".join(f"power, beta {b:g}" for b in cfg.betas) + " | seconds |",
                  "|---|---|---|---|---|" + "---|" * len(cfg.betas) + "---|"]
        for nr in res.null:
            power = " | ".join(f"{nr['power'][b]:.3f}" for b in cfg.betas)
            lines.append(f"| {nr['n']:,} | {nr['reps']} | {nr['rate']:.3f} | "
                         f"[{nr['band'][0]:.3f}, {nr['band'][1]:.3f}] | "
                         f"{'yes' if nr['in_band'] else 'NO'} | {power} | "
                         f"{nr['seconds']:.1f} |")
        lines += ["", "Power: the same tables with `X = ... + beta 1{Y = c}` (data seeds "
                  f"shifted by {NULL_STRIDE // 2:,})."]
    return "\n".join(lines) + "\n"


def _floats(text: str) -> tuple[float, ...]:
    try:
        out = tuple(float(t) for t in text.split(",") if t.strip())
    except ValueError:
        raise DpcgError(f"expected comma-separated numbers, got {text!r}") from None
    if not out or not all(math.isfinite(v) and v > 0 for v in out):
        raise DpcgError(f"expected positive numbers, got {text!r}")
    return out


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(v) for v in _floats(text))


def _main(args: argparse.Namespace) -> int:
    if args.crt_fit:
        return _main_crt_fit(args)
    if args.seeds < 1 or args.null_reps < 0 or args.timeout <= 0 or args.rows < 1:
        raise DpcgError("--seeds, --rows and --timeout must be positive, --null-reps >= 0")
    cfg = Config(wheel=args.wheel, workdir=Path(args.workdir),
                 epsilons=_floats(args.epsilons), seeds=args.seeds,
                 nodes=_ints(args.nodes) if args.nodes else (), rows=args.rows,
                 network_seed=args.network_seed, sample_seed=args.sample_seed,
                 alpha=args.alpha, timeout=args.timeout,
                 null_ns=_ints(args.null_ns) if args.null_reps else (),
                 null_reps=args.null_reps, skip_sachs=args.no_sachs,
                 methods=args.methods)
    command = "dpcg bench real " + " ".join(sys.argv[3:]) if len(sys.argv) > 2 \
        else "dpcg bench real"
    res = run_suite(cfg, log=sys.stderr)
    md = markdown(cfg, res, command.strip())
    if args.json is not None:
        Path(args.json).write_text(json.dumps({
            "rows": [r.to_json() for r in res.rows], "parity": res.parity,
            "sachs": res.sachs, "networks": res.networks, "null": res.null,
            "seconds": res.seconds}, indent=2) + "\n", encoding="utf-8")
    if args.out is not None:
        Path(args.out).write_text(md, encoding="utf-8")
    if not args.no_docs:
        write_section("real", md)
    print(md)
    return 0


def _main_crt_fit(args: argparse.Namespace) -> int:
    cc = CrtFitConfig()
    if args.crt_fit_ns:
        cc.ns = _ints(args.crt_fit_ns)
    if args.crt_fit_reps is not None:
        if args.crt_fit_reps < 1:
            raise DpcgError("--crt-fit-reps must be positive")
        cc.reps = cc.reps_large = args.crt_fit_reps
    command = "dpcg bench real " + " ".join(sys.argv[3:]) if len(sys.argv) > 2 \
        else "dpcg bench real --crt-fit"
    md = run_crt_fit(cc, log=sys.stderr, command=command.strip())
    if args.out is not None:
        Path(args.out).write_text(md, encoding="utf-8")
    if not args.no_docs:
        write_section("real-crt-fit", md)
    print(md)
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "real", help="Sachs (cdt wheel) and generated mixed networks, private rows from the "
                     "registry (issue 54)",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--wheel", type=Path, default=None, metavar="FILE",
                   help=f"the cdt 0.6.0 wheel ({CDT_WHEEL}); default: in --workdir, else "
                        "fetched there with pip download")
    p.add_argument("--workdir", default=".bench-real", help="where the wheel is looked for")
    p.add_argument("--epsilons", default="1,5", help="private budgets (default 1,5)")
    p.add_argument("--seeds", type=int, default=5, help="noise seeds per private row")
    p.add_argument("--nodes", default="20,50,100",
                   help="mixed network sizes (default 20,50,100; empty: none)")
    p.add_argument("--rows", type=int, default=100_000, help="rows per mixed network")
    p.add_argument("--network-seed", type=int, default=1)
    p.add_argument("--sample-seed", type=int, default=0)
    p.add_argument("--alpha", type=float, default=ALPHA)
    p.add_argument("--timeout", type=float, default=60.0,
                   help="seconds after which one private run is stopped (default 60)")
    p.add_argument("--null-ns", default="1000,10000,100000",
                   help="row counts of the dg-lrt null study")
    p.add_argument("--null-reps", type=int, default=200,
                   help="null tables per row count (0: skip)")
    p.add_argument("--no-sachs", action="store_true", help="skip the Sachs table")
    p.add_argument("--methods", default=None, metavar="TEXT",
                   help="run only the private rows whose label contains TEXT (the "
                        "non-private reference rows always run)")
    p.add_argument("--crt-fit", action="store_true",
                   help="instead of the suite: the type-I error of PrivCRT with a privately "
                        "released model-X law (--model-x private) on null data that fit and "
                        "that do not fit its Gaussian law (docs/benchmarks/real-crt-fit.md)")
    p.add_argument("--crt-fit-reps", type=int, default=None,
                   help="--crt-fit: repetitions per cell (default 500; 100 at n = 1e5)")
    p.add_argument("--crt-fit-ns", default=None,
                   help="--crt-fit: row counts (default 1000,10000,100000)")
    p.add_argument("--json", type=Path, default=None, help="also write the results as JSON")
    p.add_argument("--out", type=Path, default=None, help="also write the markdown here")
    p.add_argument("--no-docs", action="store_true", help="do not write docs/benchmarks")
    p.set_defaults(func=_main)


# ------------------------------------------------------------------ PrivCRT, released law


#: Null models of ``--crt-fit``: one that fits the released Gaussian law and two that do
#: not (non-Gaussian noise; a non-linear conditional mean).
CRT_FIT_MODELS = ("gauss", "skew", "nonlinear")
#: The law's share of eps (``dpcg.citests.crt.DEFAULT_LAW_SHARE``, restated so that the
#: module imports no test at load).
DEFAULT_LAW_SHARE_BENCH = 0.5


@dataclass
class CrtFitConfig:
    """Grids of ``dpcg bench real --crt-fit`` (docs/benchmarks/real-crt-fit.md)."""

    ns: tuple[int, ...] = (1_000, 10_000, 100_000)
    models: tuple[str, ...] = CRT_FIT_MODELS
    epsilons: tuple[float, ...] = (1.0, 5.0)
    reps: int = 500
    #: repetitions at the largest ``n`` (fewer: CPU)
    reps_large: int = 100
    share: float = DEFAULT_LAW_SHARE_BENCH
    residual_bound: float = 0.6
    features: int = 100
    bandwidth: float = 0.5
    lam: float = 10.0
    #: ``"law"`` (the default of ``--model-x private``) or ``"ridge"``
    y_fit: str = "law"
    seed: int = 20261205

    def reps_for(self, n: int) -> int:
        return self.reps_large if n >= 100_000 else self.reps


def crt_fit_table(model: str, n: int, seed: int
                  ) -> tuple[np.ndarray[Any, np.dtype[np.float64]], list[tuple[float, float]]]:
    """One null table ``(X, Y, Z)`` of ``model`` (``X _||_ Y | Z``), shape ``(3, n)``,
    clipped to the declared bounds ``+-1.5 sqrt(log n)`` of every column:

    * ``gauss``: ``Z ~ N(0, 1)``, ``X = 0.8 Z + e_X``, ``Y = 0.8 Z + e_Y``, ``e ~ N(0, 1)``
      (fits the Gaussian law up to the clipping);
    * ``skew``: the same with ``e = Exp(1) - 1`` (linear mean, skewed noise);
    * ``nonlinear``: :func:`dpcg.datasets.sem.unit_noise` with ``a = 2`` (``X = f_a(Z) +
      e_X``, ``Y = f_a(Z) + e_Y``; Gaussian noise, non-linear mean)."""
    from dpcg.datasets.sem import unit_noise, unit_noise_bounds

    bounds = [tuple(b) for b in unit_noise_bounds(n, 1)]
    if model == "nonlinear":
        values = np.asarray(unit_noise(n, 1, 2.0, 0.0, seed).values, dtype=np.float64)
        return values, bounds  # type: ignore[return-value]
    g = np.random.default_rng(seed)
    z = g.standard_normal(n)
    if model == "gauss":
        ex, ey = g.standard_normal(n), g.standard_normal(n)
    elif model == "skew":
        ex, ey = g.exponential(size=n) - 1.0, g.exponential(size=n) - 1.0
    else:
        raise DpcgError(f"model {model!r}: choose one of {CRT_FIT_MODELS}")
    raw = np.stack([0.8 * z + ex, 0.8 * z + ey, z])
    lo = np.array([b[0] for b in bounds])[:, None]
    hi = np.array([b[1] for b in bounds])[:, None]
    return np.clip(raw, lo, hi), bounds  # type: ignore[return-value]


def crt_fit_rep(model: str, n: int, rep: int, cc: CrtFitConfig) -> dict[str, bool]:
    """One null table: the rejections of PrivCRT with the released law at every eps
    (law share ``cc.share``, one session per eps), of the non-private CRT with the same
    released law (at the smallest eps), and of the non-private CRT with the law of the
    exact moments (the same Gaussian fit without noise)."""
    from accounting.costs import Budget
    from accounting.session import Session
    from dpcg.citests.crt import CRTTest, PrivCRTTest
    from dpcg.citests.crt_law import (
        law_from_release,
        law_mechanism,
        release_model_x,
        split_law_budget,
    )
    from dpcg.citests.gcm import ContinuousData
    from dpcg.stats.suffstat import moment_vector

    seed = (cc.seed * 1_000_003 + rep * 7919 + n * 31
            + 17 * CRT_FIT_MODELS.index(model)) % (2**32)
    values, bounds = crt_fit_table(model, n, seed)
    data = ContinuousData.build(values, bounds, ("X", "Y", "Z"))
    kw: dict[str, Any] = {"residual_bound": cc.residual_bound, "bandwidth": cc.bandwidth,
                          "lam": cc.lam, "regression": "rff", "features": cc.features,
                          "feature_seed": 0, "y_fit": cc.y_fit}
    out: dict[str, bool] = {}
    factors = None
    for i, eps in enumerate(cc.epsilons):
        law_eps, test_eps = split_law_budget(eps, cc.share)
        for aware in (True, False) if i == 0 else (True,):
            # the same seed for both: the same release, only the resampling differs
            session = Session(Budget(eps), rule="basic", seed=seed + i)
            law = release_model_x(session, data, law_mechanism(n, 3, law_eps),
                                  noise_aware=aware)
            priv = PrivCRTTest(values, bounds, session, test_eps, law, **kw)
            if factors is not None:
                priv._factors = factors  # the same Y fit (public map of the same data)
            factors = priv._factors
            key = f"priv@{eps:g}" if aware else f"point@{eps:g}"
            out[key] = not priv.test(0, 1, (2,)).independent
    exact = law_from_release(moment_vector(data.scaled.T, True), data.lower, data.upper,
                             1e-9)
    crt = CRTTest(values, bounds, exact, generator=np.random.default_rng(seed + 98), **kw)
    crt._factors = factors  # type: ignore[assignment]
    out["crt-exact"] = not crt.test(0, 1, (2,)).independent
    return out


def run_crt_fit(cc: CrtFitConfig, log: Any = None, command: str = "dpcg bench real --crt-fit"
                ) -> str:
    from scipy.stats import binom

    cols = [*(f"priv@{e:g}" for e in cc.epsilons), f"point@{cc.epsilons[0]:g}",
            "crt-exact"]
    heads = [*(f"PrivCRT, released law, eps {e:g}" for e in cc.epsilons),
             f"PrivCRT, point law (no re-noising), eps {cc.epsilons[0]:g}",
             "CRT (non-private), law of the exact moments"]
    lines = [
        "## PrivCRT with a privately released model-X law: type-I error "
        "(`dpcg bench real --crt-fit`)",
        "",
        "`benchmarks/real.py`, `crt_fit_rep`. One CI query `X _||_ Y | Z` per null table "
        "(`crt_fit_table`; every column clipped to its declared `+-1.5 sqrt(log n)`): "
        "`gauss` (`X = 0.8 Z + e`, `Y = 0.8 Z + e'`, Gaussian noise: fits the released "
        "Gaussian law up to the clipping), `skew` (the same with `Exp(1) - 1` noise: linear "
        "mean, skewed noise), `nonlinear` (`unit_noise`, `a = 2`: `X = f_a(Z) + e`, "
        "Gaussian noise, non-linear mean). PrivCRT as `--model-x private`: "
        f"{cc.share:g} of eps on the law (one Laplace release of the bounded moment "
        "vector), the rest on one threshold release; residual clip "
        f"{cc.residual_bound:g}, m = 19, alpha = {ALPHA}. "
        "Y residualised by the same law (`y_fit=\"law\"`, the default of "
        "`--model-x private`). 'released law': the default resampling, each resample "
        "from the law of the released vector re-noised at the release's public scale; "
        "'point law': every resample from the released law itself (same release, same "
        "seeds). The last column is the non-private CRT with the same statistic and the "
        "Gaussian law of the exact moments (what the release estimates): the error of the "
        "fit without the release's noise.",
        "",
        "| model | n | repetitions | 99 % band | " + " | ".join(heads) + " | CPU s |",
        "|---|---|---|---|" + "---|" * len(heads) + "---|",
    ]
    for model in cc.models:
        for n in cc.ns:
            reps = cc.reps_for(n)
            lo = float(binom.ppf(0.005, reps, ALPHA)) / reps
            hi = float(binom.ppf(0.995, reps, ALPHA)) / reps
            counts = dict.fromkeys(cols, 0)
            c0 = time.process_time()
            for rep in range(reps):
                for k, v in crt_fit_rep(model, n, rep, cc).items():
                    counts[k] += int(v)
            sec = time.process_time() - c0
            cells = []
            for k in cols:
                r = counts[k] / reps
                cells.append(f"{r:.3f}" + ("" if lo <= r <= hi else " *"))
            lines.append(f"| {model} | {n:,} | {reps} | [{lo:.3f}, {hi:.3f}] | "
                         + " | ".join(cells) + f" | {sec:.0f} |")
            if log is not None:
                print(f"crt-fit {model} n={n}: {counts} ({sec:.0f} CPU s)", file=log,
                      flush=True)
    lines += ["", "\\* outside the 99 % binomial band around alpha.", "",
              f"Machine: {machine_description()}. Command: `{command}` (CPU seconds per "
              "cell in the last column)."]
    return "\n".join(lines) + "\n"
