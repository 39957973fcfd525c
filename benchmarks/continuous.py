"""``dpcg bench continuous [--quick]``: private CI tests for continuous data.

Reproduces the experiments of Kalemaj et al. on the Shah-Peters benchmark
(:func:`dpcg.datasets.sem.shah_peters`: ``Z ~ N(0, I_d)``, ``X = f_a(Z_1) + 0.3 e``,
``Y = f_a(Z_1) + beta X + 0.3 e``, ``f_a(z) = exp(-z^2/2) sin(a z)``) with this
project's accounting:

1. type-I error (``beta = 0``) over ``d``, the model complexity ``a`` and ``n``, for
   PrivGCM, PrivCRT, the private Kendall test with a public-grid Z and the k-means
   Kendall baseline (not private), with the non-private GCM for reference, against
   the binomial 99% band around ``alpha``;
2. power against the dependence strength ``beta`` and against ``eps``;
3. the under-fitting case (a heavily regularised KRR): the non-private GCM loses its
   level, PrivGCM keeps it;
4. speed: one PrivGCM test at ``n = 2000``; PC-stable with PrivGCM on a 10-variable
   non-linear SEM at ``n = 2000``.

``--power-curve`` runs instead the power curve to ``n = 50,000`` with the scalable
random-Fourier-feature ridge (``regression="rff"``): PrivGCM and PrivCRT at two budgets
beside the non-private GCM and CRT, type-I error under ``beta = 0`` and power under
``beta > 0`` per ``n``, and PrivGCM's power predicted from the exact residual products;
written to ``docs/benchmarks/continuous-power.md`` with a plot.

``--unit-power`` runs instead grouped PrivGCM (issue 60) on the unit-noise model
(:func:`dpcg.datasets.sem.unit_noise`): power vs ``beta`` at ``n`` 2,000 and 10,000, power
vs ``n`` at ``beta = 1``, for PrivGCM and PrivCRT at ``eps`` 1 and 2 and the non-private
GCM and CRT, and the type-I error of PrivGCM and of its non-private statistic on the
unit, heteroscedastic and sd-0.3 models; written to ``docs/benchmarks/continuous-unit.md``.
``--gcm-tuning`` runs instead the non-private GCM with regressions tuned by generalised
cross-validation against fixed ones (type-I error over ``n``, ``d``, ``a``; power; PC on
random SEMs), written to ``docs/benchmarks/continuous-gcm.md``.

Every private release goes through an ``accounting`` session (one per repetition, seeded
from the repetition number so the run is reproducible; a seeded run is marked as such in
its ledger). The repetition counts and grids are command-line options; the section
states exactly what ran.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from accounting.costs import Budget
from accounting.mechanisms import GroupedLaplace, Laplace, ReportNoisyMax
from accounting.session import Session
from benchmarks.report import machine_description, write_section
from dpcg.citests.crt import (
    GaussianModelX,
    PrivCRTTest,
    crt_pvalue,
    crt_sensitivity,
    crt_statistics,
    rank_scores,
    rejection_count,
    threshold_release,
)
from dpcg.citests.gcm import (
    GCMTest,
    PrivGCMTest,
    c_lambda,
    gcm_statistic,
    privgcm_lambda,
    rescale,
)
from dpcg.citests.kendall_kmeans import (
    floored_kendall_z,
    grid_strata,
    kendall_sensitivity,
    kmeans_strata,
)
from dpcg.datasets.sem import random_sem, shah_peters, shah_peters_bounds, shah_peters_sampler
from dpcg.graph import CPDAG
from dpcg.metrics import skeleton_scores
from dpcg.pc.engine import pc_stable
from dpcg.regression import KernelRidge, RFFFactor, rff_frequencies, rff_map

ALPHA = 0.05
FloatArr = np.ndarray[Any, np.dtype[np.float64]]
Z_CRIT = 1.959963984540054


@dataclass
class Config:
    reps_null: int
    reps_power: int
    ns: tuple[int, ...]
    dims: tuple[int, ...]
    complexities: tuple[float, ...]
    power_n: int
    betas: tuple[float, ...]
    epsilons: tuple[float, ...]
    eps_beta: float
    underfit_ns: tuple[int, ...]
    epsilon: float = 1.0
    lam_gcm: float = 1e-5  # non-private GCM reference (nothing released: no floor needed)
    lam_priv: float = 1.0  # PrivGCM, explicit (c_lam = 12; default: privgcm_lambda)
    lam_crt: float = 10.0  # PrivCRT (public; its validity does not depend on the Y fit)
    lam_underfit: float = 1.0
    bandwidth: float = 0.1  # times sqrt(d), on the [-1, 1] scale of Z (0.1 = 0.5 raw units)
    residual_bound: float = 0.3  # PrivCRT's B_r on the rescaled X scale
    m: int = 19
    clusters: int = 5
    grid_bins: int = 3
    pc_n: int = 2000
    pc_p: int = 10
    seed: int = 20240601
    notes: list[str] = field(default_factory=list)


def quick_config() -> Config:
    return Config(
        reps_null=100, reps_power=50, ns=(500,), dims=(1, 5), complexities=(2.0, 8.0),
        power_n=1000, betas=(0.0, 0.5, 1.0, 2.0), epsilons=(0.5, 1.0, 4.0), eps_beta=1.0,
        underfit_ns=(500, 1000, 2000),
    )


def full_config() -> Config:
    return Config(
        reps_null=500, reps_power=200, ns=(500, 1000, 2000), dims=(1, 5),
        complexities=(2.0, 5.0, 8.0, 12.0), power_n=2000,
        betas=(0.0, 0.25, 0.5, 1.0, 2.0), epsilons=(0.5, 1.0, 2.0, 4.0, 8.0),
        eps_beta=1.0, underfit_ns=(500, 1000, 2000, 4000),
    )


# ---------------------------------------------------------------------------------
# One repetition: every test on one dataset, sharing the KRR factorisation
# ---------------------------------------------------------------------------------


def _session(seed: int, total_eps: float) -> Any:

    return Session(Budget(total_eps), rule="basic", seed=seed)


def _laplace(eps: float, sens: float) -> Any:

    return Laplace(sensitivity=sens, epsilon=eps)


def _rnm(eps: float) -> Any:

    return ReportNoisyMax(sensitivity=1.0, epsilon=eps, noise="exponential")


def _privcrt(session: Any, eps: float, q: FloatArr, dt: float, rng: np.random.Generator,
             purpose: str, release: str = "threshold") -> bool:
    """PrivCRT's decision on the exact queries ``q`` (one release charged to
    ``session``): the default threshold release (exact level ``k/(m+1)``) or
    Kalemaj et al.'s rank release (``release="rank"``)."""
    m = q.shape[0] - 1
    if release == "rank":
        idx = int(session.release(_rnm(eps), lambda: rank_scores(q, dt), purpose=purpose))
        return bool((idx + 1) / (m + 1) <= ALPHA)
    return threshold_release(session, lambda: q, dt, eps, rejection_count(ALPHA, m), rng,
                             purpose) > 0.0


def one_rep(
    n: int, d: int, a: float, beta: float, rep: int, cfg: Config, methods: Sequence[str],
    eps: float,
) -> dict[str, bool]:
    """Rejection (True) or not of each method on one Shah-Peters dataset."""
    seed = (cfg.seed * 1_000_003 + rep * 7919 + n * 31 + d * 17 + int(a * 101)
            + int(beta * 1009) + int(eps * 10007)) % (2**32)
    ds = shah_peters(n, d, a, beta, seed)
    bounds = np.asarray(shah_peters_bounds(d, beta))
    scaled = rescale(ds.values, bounds[:, 0], bounds[:, 1])
    xs, ys, zs = scaled[0], scaled[1], scaled[2:].T
    session = _session(seed, total_eps=eps * (len(methods) + 1))
    out: dict[str, bool] = {}
    h = cfg.bandwidth * math.sqrt(d)
    fac_priv = KernelRidge(h, cfg.lam_priv).factor(zs) if "privgcm" in methods else None
    if "gcm" in methods:
        fac = KernelRidge(h, cfg.lam_gcm, lam_floor=cfg.lam_gcm).factor(zs)
        r = fac.residuals(np.stack([xs, ys], axis=1))
        out["gcm"] = gcm_statistic(r[:, 0] * r[:, 1]).pvalue <= ALPHA
    if "gcm_underfit" in methods or "privgcm_underfit" in methods:
        fac_u = KernelRidge(h, cfg.lam_underfit).factor(zs)
        r = fac_u.residuals(np.stack([xs, ys], axis=1))
        prod = r[:, 0] * r[:, 1]
        if "gcm_underfit" in methods:
            out["gcm_underfit"] = gcm_statistic(prod).pvalue <= ALPHA
        if "privgcm_underfit" in methods:
            noisy = session.release(_laplace(eps, c_lambda(cfg.lam_underfit)), lambda: prod,
                                    purpose="bench PrivGCM (under-fit lam)")
            out["privgcm_underfit"] = gcm_statistic(np.asarray(noisy)).pvalue <= ALPHA
    if "privgcm" in methods:
        assert fac_priv is not None
        r = fac_priv.residuals(np.stack([xs, ys], axis=1))
        prod = r[:, 0] * r[:, 1]
        noisy = session.release(_laplace(eps, c_lambda(cfg.lam_priv)), lambda: prod,
                                purpose="bench PrivGCM")
        out["privgcm"] = gcm_statistic(np.asarray(noisy)).pvalue <= ALPHA
    if "privcrt" in methods or "crt" in methods:
        ry = KernelRidge(h, cfg.lam_crt).factor(zs).residuals(ys)
        g = session.auxiliary_generator()
        zraw = ds.values[2:].T
        sampler = shah_peters_sampler(a)
        mu = sampler.conditional_mean(zraw)
        draws = sampler.sample(zraw, cfg.m, g)
        xraw = ds.values[0]
        scale = 2.0 / (bounds[0, 1] - bounds[0, 0])
        rx = (np.vstack([xraw[None, :], draws]) - mu[None, :]) * scale
        q = np.abs(crt_statistics(rx, ry, cfg.residual_bound))
        if "crt" in methods:
            out["crt"] = crt_pvalue(q) <= ALPHA
        if "privcrt" in methods:
            dt = crt_sensitivity(cfg.residual_bound, cfg.lam_crt, n)
            out["privcrt"] = _privcrt(session, eps, q, dt, g, "bench PrivCRT")
    if "kendall_kmeans" in methods or "kendall_grid" in methods:
        sens = kendall_sensitivity(n)
        xv, yv = ds.values[0], ds.values[1]
        if "kendall_kmeans" in methods:
            lab, k = kmeans_strata(zs, cfg.clusters)
            zk = floored_kendall_z(xv, yv, lab, k)
            noisy_k = float(session.release(_laplace(eps, sens), lambda: zk,
                                            purpose="bench Kendall k-means [NOT PRIVATE]"))
            out["kendall_kmeans"] = abs(noisy_k) > Z_CRIT
        if "kendall_grid" in methods:
            lab, k = grid_strata(zs, cfg.grid_bins)
            zg = floored_kendall_z(xv, yv, lab, k)
            noisy_g = float(session.release(_laplace(eps, sens), lambda: zg,
                                            purpose="bench Kendall public grid"))
            out["kendall_grid"] = abs(noisy_g) > Z_CRIT
    return out


def rates(
    n: int, d: int, a: float, beta: float, reps: int, cfg: Config, methods: Sequence[str],
    eps: float,
) -> dict[str, float]:
    counts = dict.fromkeys(methods, 0)
    for rep in range(reps):
        for k, v in one_rep(n, d, a, beta, rep, cfg, methods, eps).items():
            counts[k] += int(v)
    return {k: c / reps for k, c in counts.items()}


def band(reps: int, p: float = ALPHA) -> tuple[float, float]:
    """Binomial 99% band (normal approximation) of a rejection rate with true value p."""
    half = 2.5758293035489 * math.sqrt(p * (1 - p) / reps)
    return max(0.0, p - half), min(1.0, p + half)


# ---------------------------------------------------------------------------------
# Speed
# ---------------------------------------------------------------------------------


def speed_single(cfg: Config) -> float:

    ds = shah_peters(2000, 1, 2.0, 0.0, cfg.seed)
    bounds = shah_peters_bounds(1, 0.0)
    session = _session(cfg.seed, 10.0)
    t = PrivGCMTest(ds.values, bounds, session, 1.0, bandwidth=cfg.bandwidth, lam=cfg.lam_priv)
    t0 = time.perf_counter()
    t.test(0, 1, (2,))
    return time.perf_counter() - t0


def speed_pc(cfg: Config) -> list[dict[str, Any]]:
    """PC-stable on 10-variable SEMs at ``n = pc_n`` with PrivGCM (non-linear SEM),
    PrivCRT (linear Gaussian SEM, public model-X law from the SEM's covariance) and the
    non-private GCM, eps 1 per test. Returns one row per run."""
    rows: list[dict[str, Any]] = []
    for kind in ("nonlinear", "linear"):
        sem = random_sem(cfg.pc_p, kind=kind, expected_degree=2.0, seed=cfg.seed)
        ds = sem.sample(cfg.pc_n, cfg.seed)
        bounds = [(-sem.bound, sem.bound)] * cfg.pc_p
        truth = CPDAG.from_dag(ds.names, sem.dag_edges)
        testers: list[tuple[str, Any]] = [
            ("PrivGCM", PrivGCMTest(ds.values, bounds, _session(cfg.seed, 1e6), 1.0,
                                    bandwidth=0.5, lam=cfg.lam_priv, names=ds.names)),
            ("GCM (non-private, lam 1e-3)", GCMTest(ds.values, bounds, bandwidth=0.5,
                                                    lam=1e-3, names=ds.names)),
        ]
        if kind == "linear":
            mx = GaussianModelX.from_arrays(np.zeros(cfg.pc_p), sem.covariance())
            testers.append(("PrivCRT (model-X = true Gaussian law)",
                            PrivCRTTest(ds.values, bounds, _session(cfg.seed, 1e6), 1.0, mx,
                                        bandwidth=0.5, lam=cfg.lam_crt, residual_bound=0.3,
                                        names=ds.names)))
        for label, tester in testers:
            t0 = time.perf_counter()
            res = pc_stable(tester, ds.names)
            secs = time.perf_counter() - t0
            sc = skeleton_scores(res.cpdag, truth)
            rows.append({"sem": kind, "test": label, "seconds": secs, "tests": res.n_tests,
                         "edges_true": len(sem.dag_edges), "f1": sc.f1,
                         "edges_found": sc.true_positives + sc.false_positives})
    return rows


# ---------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------

NULL_METHODS = ("gcm", "privgcm", "privcrt", "kendall_grid", "kendall_kmeans")
LABELS = {
    "gcm": "GCM (non-private)",
    "privgcm": "PrivGCM",
    "privcrt": "PrivCRT",
    "crt": "CRT (non-private)",
    "kendall_grid": "Kendall, public grid Z",
    "kendall_kmeans": "Kendall, k-means Z (not private)",
    "gcm_underfit": "GCM (non-private, under-fit)",
    "privgcm_underfit": "PrivGCM (same under-fit KRR)",
}


def _fmt(v: float, lo: float | None = None, hi: float | None = None) -> str:
    s = f"{v:.3f}"
    if lo is not None and hi is not None and not (lo <= v <= hi):
        s = f"**{s}**"
    return s


def run_bench(cfg: Config, log: Callable[[str], None]) -> str:
    t_start = time.perf_counter()
    lines: list[str] = []

    lines += [
        "## Continuous data: PrivGCM, PrivCRT and baselines",
        "",
        f"Machine: {machine_description()}. Generated by `dpcg bench continuous` "
        f"with: {cfg.reps_null} repetitions per type-I cell, {cfg.reps_power} per power / "
        f"under-fit cell, n in {list(cfg.ns)}, d in {list(cfg.dims)}, a in "
        f"{list(cfg.complexities)}, power at n = {cfg.power_n}, seed {cfg.seed}.",
        "",
        "Data: Shah-Peters benchmark (`dpcg.datasets.sem.shah_peters`): `Z ~ N(0, I_d)`, "
        "`X = f_a(Z_1) + 0.3 e`, `Y = f_a(Z_1) + beta X + 0.3 e`, "
        "`f_a(z) = exp(-z^2/2) sin(a z)`; public bounds from the model (5 sd). "
        f"alpha = {ALPHA}. KRR: Gaussian kernel, public bandwidth {cfg.bandwidth} x sqrt(d) "
        f"on the [-1, 1] scale of Z. PrivGCM uses the public lam = {cfg.lam_priv} "
        f"(c_lam = {c_lambda(cfg.lam_priv):.0f}); PrivCRT lam = {cfg.lam_crt}, "
        f"B_r = {cfg.residual_bound}, m = {cfg.m}, model-X law "
        "`X | Z ~ N(f_a(Z_1), 0.3^2)`; the non-private GCM reference uses "
        f"lam = {cfg.lam_gcm} and the non-private CRT the PrivCRT statistic. Kendall: "
        "floored conditional z (replace-one sensitivity 9/sqrt(n)), Z discretised by "
        f"k-means (k = {cfg.clusters}, on the private Z: not private) or a public grid "
        f"({cfg.grid_bins} cells per coordinate). "
        f"Budget per test eps = {cfg.epsilon} unless stated.",
        "",
    ]
    # 1. type-I error
    lo, hi = band(cfg.reps_null)
    lines += [
        "### Type-I error (beta = 0)",
        "",
        f"{cfg.reps_null} repetitions per cell; 99% binomial band around 0.05: "
        f"[{lo:.3f}, {hi:.3f}] (values outside in bold).",
        "",
        "| n | d | a | " + " | ".join(LABELS[m] for m in NULL_METHODS) + " |",
        "|---|---|---|" + "---|" * len(NULL_METHODS),
    ]
    for n in cfg.ns:
        for d in cfg.dims:
            for a in cfg.complexities:
                r = rates(n, d, a, 0.0, cfg.reps_null, cfg, NULL_METHODS, cfg.epsilon)
                log(f"null n={n} d={d} a={a}: {r}")
                lines.append(f"| {n} | {d} | {a:g} | "
                             + " | ".join(_fmt(r[m], lo, hi) for m in NULL_METHODS) + " |")
    # 2. power
    pm = ("gcm", "crt", "privgcm", "privcrt")
    lines += [
        "",
        f"### Power against beta (n = {cfg.power_n}, d = 1, a = 2, eps = {cfg.epsilon})",
        "",
        f"{cfg.reps_power} repetitions per cell.",
        "",
        "| beta | " + " | ".join(LABELS[m] for m in pm) + " |",
        "|---|" + "---|" * len(pm),
    ]
    for beta in cfg.betas:
        r = rates(cfg.power_n, 1, 2.0, beta, cfg.reps_power, cfg, pm, cfg.epsilon)
        log(f"power beta={beta}: {r}")
        lines.append(f"| {beta:g} | " + " | ".join(_fmt(r[m]) for m in pm) + " |")
    em = ("privgcm", "privcrt")
    lines += [
        "",
        f"### Power against eps (n = {cfg.power_n}, d = 1, a = 2, beta = {cfg.eps_beta})",
        "",
        f"{cfg.reps_power} repetitions per cell.",
        "",
        "| eps | PrivGCM | PrivCRT |",
        "|---|---|---|",
    ]
    for eps in cfg.epsilons:
        r = rates(cfg.power_n, 1, 2.0, cfg.eps_beta, cfg.reps_power, cfg, em, eps)
        log(f"power eps={eps}: {r}")
        lines.append(f"| {eps:g} | {_fmt(r['privgcm'])} | {_fmt(r['privcrt'])} |")
    # 3. under-fitting
    um = ("gcm_underfit", "privgcm_underfit")
    lo2, hi2 = band(cfg.reps_power)
    lines += [
        "",
        f"### Under-fitting (beta = 0, d = 1, a = 2, lam = {cfg.lam_underfit} for both)",
        "",
        f"{cfg.reps_power} repetitions per cell (99% band [{lo2:.3f}, {hi2:.3f}]). With a "
        "heavily regularised KRR the fitted functions are shrunk towards 0, the residuals "
        "of X and Y keep a common part f_a(Z_1) and the non-private GCM rejects the true "
        "null more and more often as n grows; the Laplace noise of PrivGCM dominates that "
        "bias, so it keeps its level (Kalemaj et al., Sec. 5).",
        "",
        "| n | " + " | ".join(LABELS[m] for m in um) + " |",
        "|---|---|---|",
    ]
    for n in cfg.underfit_ns:
        r = rates(n, 1, 2.0, 0.0, cfg.reps_power, cfg, um, cfg.epsilon)
        log(f"underfit n={n}: {r}")
        lines.append(f"| {n} | " + " | ".join(_fmt(r[m], lo2, hi2) for m in um) + " |")
    # 4. speed
    one = speed_single(cfg)
    log(f"speed single: {one:.3f}s")
    pcs = speed_pc(cfg)
    log(f"speed pc: {pcs}")
    lines += [
        "",
        "### Speed",
        "",
        f"One PrivGCM test at n = 2000, d = 1 (kernel, Cholesky, release): {one:.3f} s.",
        "",
        f"PC-stable on {cfg.pc_p}-variable SEMs (`dpcg.datasets.sem.random_sem`, expected "
        f"degree 2, seed {cfg.seed}) at n = {cfg.pc_n}, eps = 1 per test, public bandwidth "
        "0.5:",
        "",
        "| SEM | CI test | seconds | tests | true edges | edges found | skeleton F1 |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in pcs:
        lines.append(f"| {row['sem']} | {row['test']} | {row['seconds']:.2f} | {row['tests']} | "
                     f"{row['edges_true']} | {row['edges_found']} | {row['f1']:.2f} |")
    lines += ["", f"Total benchmark time: {time.perf_counter() - t_start:.0f} s."]
    lines += ["", *cfg.notes]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------
# Power curve to n = 50,000 with the random-Fourier-feature ridge
# ---------------------------------------------------------------------------------


@dataclass
class CurveConfig:
    ns: tuple[int, ...] = (500, 1000, 2000, 5000, 10000, 20000, 50000)
    reps: int = 100
    betas: tuple[float, ...] = (0.1, 0.25)
    epsilons: tuple[float, ...] = (1.0, 2.0)
    #: PrivGCM variants ``(lam, eps)`` besides the default lam (``privgcm_lambda`` of n
    #: and eps) at every eps: the former fixed default lam = 1, whose shrinkage bias
    #: takes the type-I error out of its band as n grows.
    extra_privgcm: tuple[tuple[float, float], ...] = ((1.0, 2.0),)
    features: int = 200
    feature_seed: int = 0
    a: float = 2.0
    bandwidth: float = 0.1  # on the [-1, 1] scale of Z (d = 1)
    lam_gcm: float = 1e-5
    #: PrivGCM's lam at every eps; ``None``: the default rule ``privgcm_lambda(n, eps)``
    lam_priv: float | None = None
    lam_crt: float = 10.0
    residual_bound: float = 0.3
    m: int = 19
    seed: int = 20261125
    crt_max_n: int = 0  # PrivCRT / CRT skipped above this n (0: never skipped)

    def privgcm_variants(self) -> list[tuple[float | None, float]]:
        """``(lam, eps)`` of every PrivGCM column; ``lam`` ``None`` is the default rule."""
        out: list[tuple[float | None, float]] = [(self.lam_priv, e) for e in self.epsilons]
        return out + [v for v in self.extra_privgcm if v not in out]

    def privgcm_lams(self, n: int) -> list[float]:
        """The distinct ridge parameters the PrivGCM columns use at ``n`` rows."""
        return sorted({_resolve_lam(lam, n, e) for lam, e in self.privgcm_variants()},
                      reverse=True)


def _resolve_lam(lam: float | None, n: int, eps: float) -> float:
    return privgcm_lambda(n, eps) if lam is None else lam


def _gcm_key(lam: float | None, eps: float) -> str:
    return f"privgcm@{'default' if lam is None else f'{lam:g}'}@{eps:g}"


def _gcm_label(lam: float | None, eps: float) -> str:
    return f"PrivGCM {'default lam' if lam is None else f'lam {lam:g}'} eps {eps:g}"


def _curve_methods(cc: CurveConfig) -> list[str]:
    out = ["gcm", "crt"]
    out += [_gcm_key(lam, e) for lam, e in cc.privgcm_variants()]
    out += [f"privcrt@{e:g}" for e in cc.epsilons]
    return out


def _rff_factors(zs: FloatArr, lams: Sequence[float], cc: CurveConfig) -> list[RFFFactor]:
    """RFF factors of one Z for several ridge parameters, sharing ``Phi`` and
    ``Phi^T Phi`` (the same factorisation ``RandomFourierRidge.factor`` computes)."""
    import scipy.linalg

    n = zs.shape[0]
    freqs = rff_frequencies(zs.shape[1], cc.features, cc.bandwidth, cc.feature_seed)
    phi = rff_map(zs, freqs)
    gram = phi.T @ phi
    out = []
    for lam in lams:
        g = gram.copy()
        g[np.diag_indices_from(g)] += n * lam
        cho = scipy.linalg.cho_factor(g, lower=True, overwrite_a=True, check_finite=False)
        out.append(RFFFactor(phi=phi, freqs=freqs, cho=cho, n=n, lam=lam,
                             bandwidth=cc.bandwidth))
    return out


def curve_rep(n: int, beta: float, rep: int, cc: CurveConfig
              ) -> tuple[dict[str, bool], dict[float, tuple[float, float]]]:
    """One Shah-Peters dataset (``d = 1``): the rejections of every method, and per
    PrivGCM ``lam`` the mean and variance of the exact residual products (for the
    predicted power)."""
    seed = (cc.seed * 1_000_003 + rep * 7919 + n * 31 + int(beta * 1009)) % (2**32)
    ds = shah_peters(n, 1, cc.a, beta, seed)
    bounds = np.asarray(shah_peters_bounds(1, beta))
    scaled = rescale(ds.values, bounds[:, 0], bounds[:, 1])
    xs, ys, zs = scaled[0], scaled[1], scaled[2:].T
    variants = cc.privgcm_variants()
    session = _session(seed, total_eps=sum(e for _, e in variants) + sum(cc.epsilons))
    do_crt = cc.crt_max_n <= 0 or n <= cc.crt_max_n
    plams = cc.privgcm_lams(n)
    lams = [cc.lam_gcm, *plams] + ([cc.lam_crt] if do_crt else [])
    facs = dict(zip(lams, _rff_factors(zs, lams, cc), strict=True))
    xy = np.stack([xs, ys], axis=1)
    out: dict[str, bool] = {}
    r = facs[cc.lam_gcm].residuals(xy)
    out["gcm"] = gcm_statistic(r[:, 0] * r[:, 1]).pvalue <= ALPHA
    moments: dict[float, tuple[float, float]] = {}
    prods: dict[float, FloatArr] = {}
    for lam in plams:
        r = facs[lam].residuals(xy)
        prods[lam] = r[:, 0] * r[:, 1]
        moments[lam] = (float(prods[lam].mean()), float(prods[lam].var()))
    for spec, e in variants:
        lam = _resolve_lam(spec, n, e)
        prod = prods[lam]
        noisy = session.release(_laplace(e, c_lambda(lam)), lambda prod=prod: prod,
                                purpose=f"bench PrivGCM (rff, D={cc.features}, lam={lam:g})")
        out[_gcm_key(spec, e)] = gcm_statistic(np.asarray(noisy)).pvalue <= ALPHA
    if do_crt:
        ry = facs[cc.lam_crt].residuals(ys)
        g = session.auxiliary_generator()
        zraw = ds.values[2:].T
        sampler = shah_peters_sampler(cc.a)
        mu = sampler.conditional_mean(zraw)
        draws = sampler.sample(zraw, cc.m, g)
        scale = 2.0 / (bounds[0, 1] - bounds[0, 0])
        rx = (np.vstack([ds.values[0][None, :], draws]) - mu[None, :]) * scale
        q = np.abs(crt_statistics(rx, ry, cc.residual_bound))
        out["crt"] = crt_pvalue(q) <= ALPHA
        dt = crt_sensitivity(cc.residual_bound, cc.lam_crt, n)
        for e in cc.epsilons:
            out[f"privcrt@{e:g}"] = _privcrt(session, e, q, dt, g,
                                             f"bench PrivCRT (rff, D={cc.features})")
    return out, moments


def _predicted_rate(n: float, mean: float, var_r: float, c: float, eps: float) -> float:
    """Normal approximation of PrivGCM's two-sided rejection rate:
    ``T ~ N(sqrt(n) mu / s, 1)`` with ``s^2 = Var(R) + 2 c^2 / eps^2`` (Laplace noise of
    scale ``c / eps`` on every product)."""
    from scipy.special import ndtr

    s = math.sqrt(var_r + 2.0 * c * c / (eps * eps))
    shift = math.sqrt(n) * mean / s
    return float(ndtr(-Z_CRIT + shift) + ndtr(-Z_CRIT - shift))


def _n_for_rate(mean: float, var_r: float, c: float, eps: float, rate: float) -> float:
    """Smallest n at which the predicted rejection rate reaches ``rate`` (one-sided
    approximation ``Phi(sqrt(n) |mu| / s - z_{alpha/2})``)."""
    from scipy.special import ndtri

    s2 = var_r + 2.0 * c * c / (eps * eps)
    return float((Z_CRIT + ndtri(rate)) ** 2 * s2 / (mean * mean)) if mean else math.inf


def run_power_curve(cc: CurveConfig, log: Callable[[str], None]
                    ) -> tuple[str, dict[str, Any]]:
    t_start = time.perf_counter()
    cpu_start = time.process_time()
    methods = _curve_methods(cc)
    # rates[(beta, n)][method] = (rejections, reps); stats[(beta, n, lam)] = (mean, var)
    rates: dict[tuple[float, int], dict[str, tuple[int, int]]] = {}
    stats: dict[tuple[float, int, float], tuple[float, float]] = {}
    secs: dict[int, float] = {}
    for n in cc.ns:
        t0 = time.perf_counter()
        for beta in (0.0, *cc.betas):
            counts: dict[str, int] = {}
            seen: dict[str, int] = {}
            mom: dict[float, list[tuple[float, float]]] = {}
            for rep in range(cc.reps):
                res, moments = curve_rep(n, beta, rep, cc)
                for lam, mv in moments.items():
                    mom.setdefault(lam, []).append(mv)
                for k, v in res.items():
                    counts[k] = counts.get(k, 0) + int(v)
                    seen[k] = seen.get(k, 0) + 1
            rates[(beta, n)] = {k: (counts[k], seen[k]) for k in counts}
            for lam, mvs in mom.items():
                stats[(beta, n, lam)] = (float(np.mean([m for m, _ in mvs])),
                                         float(np.mean([v for _, v in mvs])))
            log(f"curve n={n} beta={beta}: "
                + ", ".join(f"{k}={c / seen[k]:.3f}" for k, c in counts.items()))
        secs[n] = time.perf_counter() - t0
    wall = time.perf_counter() - t_start
    cpu = time.process_time() - cpu_start
    lo, hi = band(cc.reps)
    labels = {"gcm": "GCM (non-private)", "crt": "CRT (non-private)"}
    for spec, e in cc.privgcm_variants():
        labels[_gcm_key(spec, e)] = _gcm_label(spec, e)
    for e in cc.epsilons:
        labels[f"privcrt@{e:g}"] = f"PrivCRT eps {e:g}"

    def cell(beta: float, n: int, m: str, band_check: bool) -> str:
        got = rates[(beta, n)].get(m)
        if got is None:
            return "skipped"
        v = got[0] / got[1]
        return _fmt(v, lo, hi) if band_check else _fmt(v)

    big = cc.ns[-1]
    cs = ", ".join(f"c_lam = {c_lambda(lam):.3g} at lam = {lam:.3g}"
                   for lam in cc.privgcm_lams(big))
    rule = ", ".join(f"lam = {privgcm_lambda(n, e):.3g} at n = {n}, eps {e:g}"
                     for e in cc.epsilons for n in (cc.ns[0], big))
    skip = ("" if cc.crt_max_n <= 0 else
            f" (PrivCRT and CRT skipped above n = {cc.crt_max_n}: 'skipped')")
    lines = [
        "## Continuous data: power curve to n = 50,000 (random-Fourier-feature ridge)",
        "",
        f"Machine: {machine_description()}. Generated by `dpcg bench continuous "
        f"--power-curve` ({cc.reps} repetitions per cell under the null and under each "
        f"alternative, n in {list(cc.ns)}, seed {cc.seed}{skip}); {wall:.0f} s wall, "
        f"{cpu:.0f} s CPU of this process, BLAS single-threaded "
        "(`OPENBLAS_NUM_THREADS=1`).",
        "",
        f"Data: Shah-Peters (`dpcg.datasets.sem.shah_peters`, d = 1, a = {cc.a:g}): "
        "`X = f_a(Z) + 0.3 e`, `Y = f_a(Z) + beta X + 0.3 e`, public bounds 5 sd from the "
        f"model. alpha = {ALPHA}. Every regression is the ridge on D = {cc.features} random "
        "Fourier features (`regression=\"rff\"`, public frequency seed "
        f"{cc.feature_seed}, public bandwidth {cc.bandwidth} on the [-1, 1] scale of Z; "
        "`O(n D^2)`: at n = 50,000 one fit takes a fraction of a second where exact KRR "
        "would need a 50,000 x 50,000 Cholesky factorisation). PrivGCM: public lam, by "
        "default `privgcm_lambda(n, eps)`, the largest lam whose shrinkage bias (for "
        "regression functions of RKHS norm at most 1) moves the null statistic by at "
        f"most 0.1 ({rule}); L1 sensitivity {cs} at n = {big} (the same constants as "
        "for KRR, docs/privacy/privgcm.md), vector Laplace noise of scale c_lam / eps on "
        "every product. GCM (non-private): "
        f"lam = {cc.lam_gcm:g}. PrivCRT: lam = {cc.lam_crt:g}, B_r = {cc.residual_bound}, "
        f"m = {cc.m}, model-X law `X | Z ~ N(f_a(Z), 0.3^2)`; the CRT (non-private) ranks "
        "the same statistic exactly. Each private release goes through an `accounting` "
        "session (one per repetition, seeded).",
        "",
        "![power curve](img/continuous-power.png)",
        "",
        f"### Type-I error (beta = 0), {cc.reps} repetitions per cell",
        "",
        f"99% binomial band around 0.05: [{lo:.3f}, {hi:.3f}] (values outside in bold; of "
        f"these {len(cc.ns) * len(methods)} cells about "
        f"{len(cc.ns) * len(methods) / 100:.1f} fall outside by chance alone, so compare "
        "with the predicted rates of the last table to tell chance from fitting bias).",
        "",
        "| n | " + " | ".join(labels[m] for m in methods) + " | seconds (all cells of n) |",
        "|---|" + "---|" * (len(methods) + 1),
    ]
    for n in cc.ns:
        lines.append(f"| {n} | " + " | ".join(cell(0.0, n, m, True) for m in methods)
                     + f" | {secs[n]:.0f} |")
    variants = cc.privgcm_variants()
    for beta in cc.betas:
        lines += [
            "",
            f"### Power (beta = {beta:g}), {cc.reps} repetitions per cell",
            "",
            "| n | " + " | ".join(labels[m] for m in methods) + " |",
            "|---|" + "---|" * len(methods),
        ]
        for n in cc.ns:
            lines.append(f"| {n} | " + " | ".join(cell(beta, n, m, False) for m in methods)
                         + " |")
    lines += [
        "",
        "### Why PrivGCM stays flat: bias, signal and noise of the residual products",
        "",
        "Mean and sd of the exact (noise-free) PrivGCM residual products at "
        f"n = {big} (averaged over the repetitions), and the normal approximation "
        "of the rejection rate, `T ~ N(sqrt(n) mu / s, 1)` with "
        "`s^2 = Var(R) + 2 c_lam^2 / eps^2`. Under the null `mu` is the fitting bias "
        "(the ridge shrinks `f_a` towards 0, so both residuals keep a common part); "
        "under the alternative it is bias plus signal. The last column keeps lam fixed "
        f"at its value at n = {big} (the default rule lowers it as n grows).",
        "",
        f"| PrivGCM | lam at n = {big} | c_lam | beta | mean R | sd R | predicted rate at "
        f"n = {big} | n for rate 0.8 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for spec, e in variants:
        lam = _resolve_lam(spec, big, e)
        c = c_lambda(lam)
        for beta in (0.0, *cc.betas):
            mu, var = stats[(beta, big, lam)]
            lines.append(f"| {_gcm_label(spec, e)} | {lam:.3g} | {c:.3g} | {beta:g} | "
                         f"{mu:.4f} | {math.sqrt(var):.4f} | "
                         f"{_predicted_rate(big, mu, var, c, e):.3f} | "
                         f"{_n_for_rate(mu, var, c, e, 0.8):.2g} |")
    lines += ["", "### Reading", ""]

    def rate(beta: float, n: int, m: str) -> float | None:
        got = rates[(beta, n)].get(m)
        return None if got is None else got[0] / got[1]

    for spec, e in variants:
        m = _gcm_key(spec, e)
        t1 = rate(0.0, big, m)
        pw = ", ".join(f"beta {b:g}: {rate(b, big, m):.3f}" for b in cc.betas)
        inside = t1 is not None and lo <= t1 <= hi
        lines.append(f"* {labels[m]}: type-I error at n = {big}: {t1:.3f} "
                     f"({'inside' if inside else 'OUTSIDE'} the 99% band); rejection rate "
                     f"under the alternatives at n = {big}: {pw}.")
    for e in cc.epsilons:
        m = f"privcrt@{e:g}"
        reach = []
        for b in cc.betas:
            ok = [n for n in cc.ns if (rate(b, n, m) or 0.0) >= 0.8]
            reach.append(f"beta {b:g}: " + (f"n = {ok[0]}" if ok else f"not by n = {big}"))
        lines.append(f"* {labels[m]}: power >= 0.8 from " + ", ".join(reach) + ".")
    n80s = [_n_for_rate(*stats[(b, big, lam)], c_lambda(lam), e, 0.8)
            for b in cc.betas for lam in (_resolve_lam(s, big, e) for s, e in variants)]
    e0 = min(cc.epsilons)
    lam0 = _resolve_lam(cc.lam_priv, big, e0)
    c0 = c_lambda(lam0)
    mu0, var0 = stats[(0.0, big, lam0)]
    inflation = 1.0 + 2.0 * c0 ** 2 / (e0 * e0 * var0)
    fixed = [(spec, e) for spec, e in variants if spec is not None and spec != lam0]
    drift = "".join(
        f" With the fixed lam = {spec:g} (eps {e:g}) the mean product under the null is "
        f"{stats[(0.0, big, spec)][0]:.4f}, against {mu0:.4f} with the default lam at eps "
        f"{e0:g}, and the type-I error at n = {big} is {rate(0.0, big, _gcm_key(spec, e)):.3f}."
        for spec, e in fixed)
    lines += [
        "",
        "The RFF ridge makes every test run to n = 50,000 (exact KRR needs an n x n "
        "Cholesky factorisation: 20 GB of memory and about 4 10^13 flops at n = 50,000). "
        "It does not give PrivGCM power: the Laplace noise on every product has "
        f"standard deviation sqrt(2) c_lam / eps ({math.sqrt(2.0) * c0 / e0:.0f} with the "
        f"default lam = {lam0:.3g} at n = {big}, eps = {e0:g}) while on this benchmark's "
        "[-1, 1] scale (public bounds at 5 sd) the dependence moves the mean product by "
        "less than 0.01 (compare the beta = 0 and beta = 1 rows above); 80% power needs "
        "n ~ (z_{alpha/2} + z_{0.8})^2 (Var R + 2 c_lam^2/eps^2) / mu^2, i.e. "
        f"{min(n80s):.1g} to {max(n80s):.1g} rows at the lams of n = {big} (table above), "
        "and more since the default lam falls as n grows. PrivGCM does reach the "
        "GCM's power at an inflated n, as the paper says, but the inflation factor "
        f"`1 + 2 c_lam^2 / (eps^2 Var(R))` is {inflation:.1g} here (default lam, "
        f"eps = {e0:g}). "
        "The default lam is chosen for validity, not power: a fixed lam leaves a "
        "shrinkage bias that does not fall with n, so the null statistic drifts by "
        "sqrt(n) bias / (sqrt(2) c_lam / eps) and the type-I error leaves alpha as n "
        f"grows.{drift} The default rule bounds the drift by 0.1 for regression "
        "functions of RKHS norm at most 1 (docs/privacy/privgcm.md, \"The default lam\"), "
        "at the price of a larger c_lam. "
        "PrivCRT, whose statistic is a mean of products with sensitivity O(1/n), reaches "
        "full power within the range. Neither a faster regression nor more rows within "
        "reach fixes PrivGCM: the per-coordinate noise scale c_lam / eps is the limit.",
    ]
    info = {"rates": rates, "stats": stats, "labels": labels, "methods": methods,
            "band": (lo, hi)}
    return "\n".join(lines) + "\n", info


def _plot_curve(cc: CurveConfig, info: dict[str, Any]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rates = info["rates"]
    labels = info["labels"]
    methods = info["methods"]
    lo, hi = info["band"]
    panels = [0.0, *cc.betas]
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.2), squeeze=False)
    palette = ["tab:blue", "tab:cyan", "tab:purple", "tab:green", "tab:olive", "tab:pink"]
    colours = {"gcm": "k", "crt": "0.45"}
    for i, (spec, e) in enumerate(cc.privgcm_variants()):
        colours[_gcm_key(spec, e)] = palette[i % len(palette)]
    for i, e in enumerate(cc.epsilons):
        colours[f"privcrt@{e:g}"] = ["tab:red", "tab:orange", "tab:brown"][i % 3]
    for ax, beta in zip(axes[0], panels, strict=True):
        for m in methods:
            xs = [n for n in cc.ns if m in rates[(beta, n)]]
            ys = [rates[(beta, n)][m][0] / rates[(beta, n)][m][1] for n in xs]
            ax.plot(xs, ys, marker="o", ms=3, color=colours[m], label=labels[m],
                    ls="--" if "crt" in m else "-")
        grid = np.geomspace(cc.ns[0], 1e8, 60)
        for lam, e in cc.privgcm_variants():
            if lam is None:  # the default lam changes with n: no fixed-lam prediction
                continue
            mu, var = info["stats"][(beta, cc.ns[-1], lam)]
            ax.plot(grid, [_predicted_rate(float(n), mu, var, c_lambda(lam), e)
                           for n in grid],
                    ls=":", color=colours[_gcm_key(lam, e)],
                    label=f"{_gcm_label(lam, e)}, predicted")
        if beta == 0.0:
            ax.axhspan(lo, hi, color="0.88", label="99% band around alpha")
            ax.set_title("type-I error (beta = 0)")
        else:
            ax.set_title(f"power (beta = {beta:g})")
        ax.set_ylim(0, 1.02)
        ax.axhline(ALPHA, color="0.6", lw=0.8)
        ax.axvline(cc.ns[-1], color="0.8", lw=0.8)
        ax.set_xscale("log")
        ax.set_xlabel("n (dotted: predicted beyond the measured range)")
        ax.set_ylabel("rejection rate")
    handles, labs = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labs, fontsize=7, loc="lower center", ncol=4,
               bbox_to_anchor=(0.5, -0.12))
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------------------------
# The non-private GCM: GCV-tuned regressions against fixed ones
# ---------------------------------------------------------------------------------


@dataclass
class TuningConfig:
    reps: int = 100
    ns: tuple[int, ...] = (500, 1000)
    dims: tuple[int, ...] = (1, 5)
    complexities: tuple[float, ...] = (2.0, 8.0)
    power_n: int = 300
    betas: tuple[float, ...] = (0.1, 0.25)
    krr_max_n: int = 500  # tuned exact KRR: 5 eigendecompositions per subset of Z
    seed: int = 20261127
    pc_n: int = 1000
    pc_p: int = 10
    pc_seeds: tuple[int, ...] = (1, 2, 3)


TUNING_LABELS = {
    "old": "fixed bandwidth 0.5, lam 1 (the default before 2026-11-27)",
    "fixed": "fixed bandwidth 0.1 sqrt(d), lam 1e-5",
    "gcv_rff": "GCV-tuned, RFF (D = 200)",
    "gcv_krr": "GCV-tuned, exact KRR (the default)",
    "gcv_z1": "GCV-tuned RFF on Z_1 only (oracle; d > 1)",
}


def tuning_rep(n: int, d: int, a: float, beta: float, rep: int, tc: TuningConfig,
               methods: Sequence[str]) -> dict[str, bool]:
    """Rejection (True) or not of each GCM variant on one Shah-Peters dataset."""
    seed = (tc.seed * 1_000_003 + rep * 7919 + n * 31 + d * 17 + int(a * 101)
            + int(beta * 1009)) % (2**32)
    ds = shah_peters(n, d, a, beta, seed)
    bounds = shah_peters_bounds(d, beta)
    S = tuple(range(2, 2 + d))
    out: dict[str, bool] = {}
    for m in methods:
        if m == "old":
            t = GCMTest(ds.values, bounds, bandwidth=0.5, lam=1.0)
        elif m == "fixed":
            t = GCMTest(ds.values, bounds, bandwidth=0.1 * math.sqrt(d), lam=1e-5,
                        lam_floor=1e-5)
        elif m == "gcv_rff":
            t = GCMTest(ds.values, bounds, regression="rff")
        elif m == "gcv_z1":  # the one coordinate E[X | Z] and E[Y | Z] depend on
            t = GCMTest(ds.values, bounds, regression="rff")
            out[m] = not t.test(0, 1, (2,)).independent
            continue
        else:
            t = GCMTest(ds.values, bounds)
        out[m] = not t.test(0, 1, S).independent
    return out


def _tuning_rates(n: int, d: int, a: float, beta: float, tc: TuningConfig
                  ) -> dict[str, float]:
    methods = [m for m in TUNING_LABELS
               if (m != "gcv_krr" or n <= tc.krr_max_n) and (m != "gcv_z1" or d > 1)]
    counts = dict.fromkeys(methods, 0)
    for rep in range(tc.reps):
        for k, v in tuning_rep(n, d, a, beta, rep, tc, methods).items():
            counts[k] += int(v)
    return {k: c / tc.reps for k, c in counts.items()}


def tuning_pc(tc: TuningConfig) -> list[dict[str, Any]]:
    """PC-stable with each GCM variant on random SEMs; one row per run."""
    variants: list[tuple[str, dict[str, Any]]] = [
        ("fixed bandwidth 0.5, lam 1e-3", {"bandwidth": 0.5, "lam": 1e-3}),
        (TUNING_LABELS["old"], {"bandwidth": 0.5, "lam": 1.0}),
        (TUNING_LABELS["gcv_rff"], {"regression": "rff"}),
        (TUNING_LABELS["gcv_krr"], {}),
    ]
    rows: list[dict[str, Any]] = []
    for kind in ("nonlinear", "linear"):
        for seed in tc.pc_seeds:
            sem = random_sem(tc.pc_p, kind=kind, expected_degree=2.0, seed=seed)
            ds = sem.sample(tc.pc_n, seed)
            bounds = [(-sem.bound, sem.bound)] * tc.pc_p
            truth = CPDAG.from_dag(ds.names, sem.dag_edges)
            for label, kw in variants:
                tester = GCMTest(ds.values, bounds, names=ds.names, **kw)
                c0 = time.process_time()
                res = pc_stable(tester, ds.names)
                cpu = time.process_time() - c0
                sc = skeleton_scores(res.cpdag, truth)
                rows.append({"sem": kind, "seed": seed, "gcm": label, "cpu": cpu,
                             "tests": res.n_tests, "f1": sc.f1})
    return rows


def run_gcm_tuning(tc: TuningConfig, log: Callable[[str], None]) -> str:
    t0 = time.perf_counter()
    c0 = time.process_time()
    lo, hi = band(tc.reps)
    head = "| " + " | ".join(TUNING_LABELS[m] for m in TUNING_LABELS) + " |"
    rule = "|---" * len(TUNING_LABELS) + "|"

    def row(r: dict[str, float], bounds: tuple[float, float] | None) -> str:
        cells = []
        for m in TUNING_LABELS:
            if m not in r:
                cells.append("not run")
            else:
                cells.append(_fmt(r[m], *bounds) if bounds else _fmt(r[m]))
        return " | ".join(cells) + " |"

    lines = [
        "## Continuous data: the non-private GCM with GCV-tuned regressions",
        "",
        "Data: Shah-Peters (`dpcg.datasets.sem.shah_peters`): `X = f_a(Z_1) + 0.3 e`, "
        "`Y = f_a(Z_1) + beta X + 0.3 e`, `Z ~ N(0, I_d)`, public bounds 5 sd from the model. "
        f"alpha = {ALPHA}, {tc.reps} repetitions per cell, seed {tc.seed}. "
        "`GCMTest` (`dpcg.citests.gcm`) with the bandwidth and lam given (fixed) or chosen "
        "per regression by generalised cross-validation over 5 bandwidths (0.05-1, times "
        "sqrt(m) for m coordinates of Z) and 29 lams (1e-7-1), on the coordinates of Z "
        "each regression selects stepwise by the same score (`dpcg.citests.ridge_cv`). "
        f"Exact KRR tuned only to n = {tc.krr_max_n} (5 eigendecompositions per subset of "
        "Z tried). Non-private: nothing here is released under privacy.",
        "",
        f"### Type-I error (beta = 0); 99% band [{lo:.3f}, {hi:.3f}] (outside in bold)",
        "",
        "| n | d | a " + head,
        "|---|---|---" + rule,
    ]
    for n in tc.ns:
        for d in tc.dims:
            for a in tc.complexities:
                r = _tuning_rates(n, d, a, 0.0, tc)
                log(f"gcm tuning null n={n} d={d} a={a}: {r}")
                lines.append(f"| {n} | {d} | {a:g} | " + row(r, (lo, hi)))
    lines += [
        "",
        f"### Power (n = {tc.power_n}, d = 1, a = 2)",
        "",
        "| beta " + head,
        "|---" + rule,
    ]
    for beta in tc.betas:
        r = _tuning_rates(tc.power_n, 1, 2.0, beta, tc)
        log(f"gcm tuning power beta={beta}: {r}")
        lines.append(f"| {beta:g} | " + row(r, None))
    lines += [
        "",
        f"### In PC-stable ({tc.pc_p}-variable SEMs, n = {tc.pc_n})",
        "",
        "`dpcg.datasets.sem.random_sem` (expected degree 2, SEM and sample seed as "
        "listed); skeleton F1 against the true DAG; CPU seconds of `pc_stable` (BLAS "
        "single-threaded if `OPENBLAS_NUM_THREADS=1`). The fixed reference is the GCM of "
        "the PC table of `dpcg bench continuous` (bandwidth 0.5, lam 1e-3).",
        "",
        "| SEM | seed | GCM | CPU s | tests | skeleton F1 |",
        "|---|---|---|---|---|---|",
    ]
    for row_pc in tuning_pc(tc):
        log(f"gcm tuning pc: {row_pc}")
        lines.append(f"| {row_pc['sem']} | {row_pc['seed']} | {row_pc['gcm']} | "
                     f"{row_pc['cpu']:.1f} | {row_pc['tests']} | {row_pc['f1']:.2f} |")
    lines += [
        "",
        f"Machine: {machine_description()}. Generated by `dpcg bench continuous "
        f"--gcm-tuning` in {time.perf_counter() - t0:.0f} s wall, "
        f"{time.process_time() - c0:.0f} s CPU.",
    ]
    return "\n".join(lines) + "\n"


def _floats(s: str) -> tuple[float, ...]:
    return tuple(float(v) for v in s.split(",") if v)


def _ints(s: str) -> tuple[int, ...]:
    return tuple(int(v) for v in s.split(",") if v)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "continuous",
        help="PrivGCM / PrivCRT / Kendall baselines on the Shah-Peters benchmark",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--quick", action="store_true", help="small profile (a few minutes)")
    p.add_argument("--reps-null", type=int, help="repetitions per type-I cell")
    p.add_argument("--reps-power", type=int, help="repetitions per power / under-fit cell")
    p.add_argument("--ns", type=_ints, help="comma-separated n for the type-I grid")
    p.add_argument("--dims", type=_ints, help="comma-separated d for the type-I grid")
    p.add_argument("--complexities", type=_floats, help="comma-separated a")
    p.add_argument("--power-n", type=int, help="n of the power experiments")
    p.add_argument("--underfit-ns", type=_ints, help="comma-separated n of the under-fit rows")
    p.add_argument("--epsilons", type=_floats, help="comma-separated eps of the eps sweep")
    p.add_argument("--betas", type=_floats, help="comma-separated beta of the power sweep")
    p.add_argument("--power-curve", action="store_true",
                   help="run only the power curve to n = 50,000 with the RFF ridge "
                        "(docs/benchmarks/continuous-power.md)")
    p.add_argument("--gcm-tuning", action="store_true",
                   help="run only the non-private GCM with GCV-tuned against fixed "
                        "regressions (docs/benchmarks/continuous-gcm.md)")
    p.add_argument("--unit-power", action="store_true",
                   help="run only grouped PrivGCM / PrivCRT / GCM on the unit-noise model: "
                        "power vs beta and vs n, type-I error on three models "
                        "(docs/benchmarks/continuous-unit.md)")
    p.add_argument("--crt-level", action="store_true",
                   help="run only PrivCRT's type-I error and power, threshold release "
                        "against the rank release, at n = 1e3, 1e4, 1e5 "
                        "(docs/benchmarks/continuous-crt-level.md)")
    p.add_argument("--bias-grid", action="store_true",
                   help="run only the null bias of the single and twice-fitted residual "
                        "products on a grid of models and lam "
                        "(docs/benchmarks/continuous-bias.md)")
    p.add_argument("--bias-n", type=int, help="--bias-grid: n of every data set")
    p.add_argument("--bias-reps", type=int, help="--bias-grid: data sets per model")
    p.add_argument("--bias-bandwidth", type=float,
                   help="--bias-grid: bandwidth per sqrt(d) (default 0.1, the rule's)")
    p.add_argument("--unit-reps-mid", type=int,
                   help="--unit-power: repetitions per power cell above n = 3,000 up to 10,000")
    p.add_argument("--unit-reps-null-mid", type=int,
                   help="--unit-power: repetitions per type-I cell above 3,000 up to 10,000")
    p.add_argument("--unit-reps-large", type=int,
                   help="--unit-power: repetitions per power cell above n = 10,000")
    p.add_argument("--unit-reps-null-large", type=int,
                   help="--unit-power: repetitions per type-I cell above n = 10,000")
    p.add_argument("--curve-ns", type=_ints, help="comma-separated n of the power curve")
    p.add_argument("--curve-reps", type=int, help="repetitions per power-curve cell")
    p.add_argument("--curve-betas", type=_floats, help="comma-separated beta > 0 of the curve")
    p.add_argument("--curve-epsilons", type=_floats, help="comma-separated eps of the curve")
    p.add_argument("--features", type=int, help="number D of random Fourier features")
    p.add_argument("--crt-max-n", type=int,
                   help="skip (Priv)CRT above this n in the power curve (0: never)")
    p.add_argument("--out", help="also write the markdown here (default: only the docs)")
    p.add_argument("--no-docs", action="store_true", help="do not write docs/benchmarks")
    p.set_defaults(func=_main)


def _main_curve(args: argparse.Namespace) -> int:
    cc = CurveConfig()
    if args.quick:
        cc = CurveConfig(ns=(500, 2000, 10000), reps=40)
    if args.curve_ns is not None:
        cc.ns = args.curve_ns
    if args.curve_reps is not None:
        cc.reps = args.curve_reps
    if args.curve_betas is not None:
        cc.betas = args.curve_betas
    if args.curve_epsilons is not None:
        cc.epsilons = args.curve_epsilons
    if args.features is not None:
        cc.features = args.features
    if args.crt_max_n is not None:
        cc.crt_max_n = args.crt_max_n

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    md, info = run_power_curve(cc, log)
    images: dict[str, Any] = {}
    try:
        images["continuous-power.png"] = _plot_curve(cc, info)
    except ImportError:  # pragma: no cover - matplotlib missing
        md = md.replace("![power curve](img/continuous-power.png)",
                        "(matplotlib not installed: no plot)")
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(md)
    if not args.no_docs:
        write_section("continuous-power", md, images)
    print(md)
    return 0


def _main_tuning(args: argparse.Namespace) -> int:
    tc = TuningConfig(reps=40, ns=(500,), dims=(1,), power_n=500, pc_n=300, pc_p=5,
                      pc_seeds=(1,)) if args.quick else TuningConfig()
    if args.reps_null is not None:
        tc.reps = args.reps_null
    if args.ns is not None:
        tc.ns = args.ns
    if args.dims is not None:
        tc.dims = args.dims
    if args.complexities is not None:
        tc.complexities = args.complexities
    if args.power_n is not None:
        tc.power_n = args.power_n
    if args.betas is not None:
        tc.betas = args.betas

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    md = run_gcm_tuning(tc, log)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(md)
    if not args.no_docs:
        write_section("continuous-gcm", md)
    print(md)
    return 0


def _main(args: argparse.Namespace) -> int:
    if args.crt_level:
        return _main_crt_level(args)
    if args.bias_grid:
        return _main_bias(args)
    if args.unit_power:
        return _main_unit(args)
    if args.power_curve:
        return _main_curve(args)
    if args.gcm_tuning:
        return _main_tuning(args)
    cfg = quick_config() if args.quick else full_config()
    if args.reps_null is not None:
        cfg.reps_null = args.reps_null
    if args.reps_power is not None:
        cfg.reps_power = args.reps_power
    if args.ns is not None:
        cfg.ns = args.ns
    if args.dims is not None:
        cfg.dims = args.dims
    if args.complexities is not None:
        cfg.complexities = args.complexities
    if args.power_n is not None:
        cfg.power_n = args.power_n
    if args.underfit_ns is not None:
        cfg.underfit_ns = args.underfit_ns
    if args.epsilons is not None:
        cfg.epsilons = args.epsilons
    if args.betas is not None:
        cfg.betas = args.betas

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    md = run_bench(cfg, log)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(md)
    if not args.no_docs:

        write_section("continuous", md)
    print(md)
    return 0


# ---------------------------------------------------------------------------------
# Issue 60: grouped PrivGCM on the unit-noise model (power and type-I error)
# ---------------------------------------------------------------------------------


@dataclass
class UnitConfig:
    """Grids of ``--unit-power`` (docs/benchmarks/continuous-unit.md)."""

    beta_ns: tuple[int, ...] = (2000, 10000)
    betas: tuple[float, ...] = (0.0, 0.5, 1.0, 1.5, 2.0)
    curve_ns: tuple[int, ...] = (1000, 3000, 10000, 30000, 100000)
    curve_beta: float = 1.0
    epsilons: tuple[float, ...] = (1.0, 2.0)
    null_ns: tuple[int, ...] = (2000, 10000, 100000)
    null_models: tuple[str, ...] = ("unit", "hetero", "sd03")
    null_epsilons: tuple[float, ...] = (1.0, 2.0, 8.0)
    # the issue's 500 repetitions everywhere by default (one command); the committed run
    # used --unit-reps-large 100 --unit-reps-null-large 100 (a shared machine)
    reps: int = 500  # per power cell up to n = 3,000
    reps_mid: int = 500  # per power cell above 3,000 up to 10,000
    reps_large: int = 500  # per power cell above n = 10,000
    reps_null: int = 500  # per type-I cell up to n = 3,000
    reps_null_mid: int = 500  # per type-I cell above 3,000 up to 10,000
    reps_null_large: int = 500  # per type-I cell above n = 10,000

    def power_reps(self, n: int) -> int:
        return self.reps if n <= 3000 else self.reps_mid if n <= 10_000 else self.reps_large

    def null_reps(self, n: int) -> int:
        return (self.reps_null if n <= 3000 else self.reps_null_mid if n <= 10_000
                else self.reps_null_large)
    features: int = 200
    feature_seed: int = 0
    a: float = 2.0
    groups: int = 20
    lam_gcm: float = 1e-5  # the non-private GCM with a good fit
    lam_crt: float = 10.0
    crt_bandwidth: float = 0.1
    residual_bound: float = 0.6  # public clip of PrivCRT's scaled X residuals (unit sd ~ 0.22)
    m: int = 19
    seed: int = 20261203
    clip: float = 0.5  # PrivGCM's public residual clip (fit="twice", TWICE_RESIDUAL_CLIP)
    cache: dict[tuple[str, int, float, int, bool], dict[str, int]] = field(
        default_factory=dict)  # cells already run (power vs beta and vs n share one)


def _unit_factors(zs: FloatArr, specs: Sequence[tuple[float, float]], uc: UnitConfig
                  ) -> dict[tuple[float, float], RFFFactor]:
    """RFF factors of one Z for several ``(bandwidth, lam)`` (``Phi`` shared per bandwidth)."""
    import scipy.linalg

    n = zs.shape[0]
    out: dict[tuple[float, float], RFFFactor] = {}
    for h in sorted({h for h, _ in specs}):
        freqs = rff_frequencies(zs.shape[1], uc.features, h, uc.feature_seed)
        phi = rff_map(zs, freqs)
        gram = phi.T @ phi
        for hh, lam in specs:
            if hh != h:
                continue
            g = gram.copy()
            g[np.diag_indices_from(g)] += n * lam
            cho = scipy.linalg.cho_factor(g, lower=True, overwrite_a=True, check_finite=False)
            out[(h, lam)] = RFFFactor(phi=phi, freqs=freqs, cho=cho, n=n, lam=lam, bandwidth=h)
    return out


def unit_rep(model: str, n: int, beta: float, rep: int, epsilons: Sequence[float],
             uc: UnitConfig, crt: bool = True) -> dict[str, bool]:
    """One data set of ``model`` (``unit``, ``hetero``: :func:`unit_noise`; ``sd03``:
    :func:`shah_peters`), ``d = 1``: the rejections of grouped PrivGCM at every eps (its
    default: twice-fitted residuals clipped to ``uc.clip``, ``lam = twice_lambda(n)``,
    released through ``GroupedLaplace`` with ``c_lambda_twice``), of its non-private
    statistic at the same settings (``np-same``: the t-test of the exact group sums), of
    the single fit's non-private statistic at its own rule (``np-single``: the grouped
    release before issue 60's fix), of the non-private GCM with a good fit, and of
    PrivCRT / CRT (unit noise only)."""
    from dpcg.citests.gcm import (
        c_lambda_twice,
        group_sums,
        grouped_bandwidth,
        grouped_lambda,
        grouped_statistic,
        twice_lambda,
        twice_residuals,
    )
    from dpcg.datasets.sem import UnitNoiseSampler, unit_noise, unit_noise_bounds

    offset = {"unit": 0, "hetero": 1, "sd03": 2}[model]
    seed = (uc.seed * 1_000_003 + rep * 7919 + n * 31 + int(beta * 1009)
            + 17 * offset) % (2**32)
    if model == "sd03":
        ds = shah_peters(n, 1, uc.a, beta, seed)
        bounds = np.asarray(shah_peters_bounds(1, beta))
    else:
        ds = unit_noise(n, 1, uc.a, beta, seed, noise="unit" if model == "unit" else "hetero")
        bounds = np.asarray(unit_noise_bounds(n, 1))
    scaled = rescale(ds.values, bounds[:, 0], bounds[:, 1])
    xs, ys, zs = scaled[0], scaled[1], scaled[2:].T
    lam, lam1, h = twice_lambda(n), grouped_lambda(n), grouped_bandwidth(1)
    do_crt = crt and model == "unit"
    specs = ([(h, lam), (h, lam1), (h, uc.lam_gcm)]
             + ([(uc.crt_bandwidth, uc.lam_crt)] if do_crt else []))
    facs = _unit_factors(zs, specs, uc)
    xy = np.stack([xs, ys], axis=1)
    session = _session(seed, total_eps=3.0 * sum(epsilons))
    out: dict[str, bool] = {}
    r = facs[(h, uc.lam_gcm)].residuals(xy)
    out["gcm"] = gcm_statistic(r[:, 0] * r[:, 1]).pvalue <= ALPHA
    r = facs[(h, lam1)].residuals(xy)
    out["np-single"] = grouped_statistic(group_sums(r[:, 0] * r[:, 1], uc.groups)
                                         ).pvalue <= ALPHA
    r = twice_residuals(facs[(h, lam)], xy, uc.clip)
    prod = r[:, 0] * r[:, 1]
    out["np-same"] = grouped_statistic(group_sums(prod, uc.groups)).pvalue <= ALPHA
    sens = c_lambda_twice(lam, uc.clip)
    for e in epsilons:
        mech = GroupedLaplace(sensitivity=sens, epsilon=e, groups=uc.groups)
        noisy = session.release(mech, lambda: prod,
                                purpose=f"bench grouped PrivGCM (rff, D={uc.features}, "
                                        f"lam={lam:g}, {uc.groups} group sums, "
                                        f"twice-fitted, residual clip {uc.clip:g})")
        out[f"privgcm@{e:g}"] = grouped_statistic(np.asarray(noisy)).pvalue <= ALPHA
    if do_crt:
        ry = facs[(uc.crt_bandwidth, uc.lam_crt)].residuals(ys)
        g = session.auxiliary_generator()
        zraw = ds.values[2:].T
        sampler = UnitNoiseSampler(uc.a)
        mu = sampler.conditional_mean(zraw)
        draws = np.clip(sampler.sample(zraw, uc.m, g), bounds[0, 0], bounds[0, 1])
        scale = 2.0 / (bounds[0, 1] - bounds[0, 0])
        rx = (np.vstack([ds.values[0][None, :], draws]) - mu[None, :]) * scale
        q = np.abs(crt_statistics(rx, ry, uc.residual_bound))
        out["crt"] = crt_pvalue(q) <= ALPHA
        dt = crt_sensitivity(uc.residual_bound, uc.lam_crt, n)
        for e in epsilons:
            out[f"privcrt@{e:g}"] = _privcrt(session, e, q, dt, g,
                                             f"bench PrivCRT (rff, D={uc.features})")
            out[f"privcrt-rank@{e:g}"] = _privcrt(session, e, q, dt, g,
                                                  f"bench PrivCRT rank (rff, D={uc.features})",
                                                  "rank")
    return out


def wilson(k: int, reps: int, z: float = Z_CRIT) -> tuple[float, float]:
    """Wilson 95 % interval of a rejection rate ``k / reps``."""
    p = k / reps
    den = 1.0 + z * z / reps
    mid = (p + z * z / (2 * reps)) / den
    half = z * math.sqrt(p * (1 - p) / reps + z * z / (4 * reps * reps)) / den
    return max(0.0, mid - half), min(1.0, mid + half)


def _unit_cell(model: str, n: int, beta: float, reps: int, epsilons: Sequence[float],
               uc: UnitConfig, crt: bool) -> dict[str, int]:
    key = (model, n, beta, reps, crt)
    hit = uc.cache.get(key)
    if hit is not None and all(f"privgcm@{e:g}" in hit for e in epsilons):
        return hit
    counts: dict[str, int] = {}
    for rep in range(reps):
        for k, v in unit_rep(model, n, beta, rep, epsilons, uc, crt).items():
            counts[k] = counts.get(k, 0) + int(v)
    uc.cache[key] = counts
    return counts


def run_unit_power(uc: UnitConfig, log: Callable[[str], None]) -> str:
    """Power vs beta, power vs n and type-I error of grouped PrivGCM (markdown)."""
    from dpcg.citests.gcm import c_lambda_twice, twice_lambda

    t0 = time.perf_counter()
    eps_cols = [f"privgcm@{e:g}" for e in uc.epsilons] + [f"privcrt@{e:g}" for e in uc.epsilons]
    cols = [*eps_cols, "np-same", "gcm", "crt"]
    heads = ([f"PrivGCM eps {e:g}" for e in uc.epsilons]
             + [f"PrivCRT eps {e:g}" for e in uc.epsilons]
             + ["np-same", "GCM (lam 1e-5)", "CRT"])

    def fmt(k: int | None, reps: int) -> str:
        if k is None:
            return "-"
        lo, hi = wilson(k, reps)
        return f"{k / reps:.2f} [{lo:.2f}, {hi:.2f}]"

    lines = [
        "# Grouped PrivGCM on the unit-noise model (issue 60)", "",
        "`dpcg bench continuous --unit-power` (one command; the grids and repetitions are "
        "options). Model: `unit_noise(n, d=1, a=2, beta)` (`Z ~ N(0,1)`, "
        "`X = f_a(Z) + N(0,1)`, `Y = f_a(Z) + beta X + N(0,1)`, every column clipped to "
        "`+-1.5 sqrt(log n)`); `hetero`: noise sd `sqrt(1/4 + Z^2)`; `sd03`: the Shah-Peters "
        "model with noise sd 0.3 (`shah_peters`). Regressions: ridge on "
        f"{uc.features} random Fourier features (public seed {uc.feature_seed}). "
        f"PrivGCM: the default grouped release, {uc.groups} group sums over a secret random "
        f"grouping (`GroupedLaplace`), twice-fitted residuals clipped to {uc.clip:g}, "
        "default rule `lam = twice_lambda(n) = 0.03 (1e4/n)^0.2`, bandwidth 0.1, sensitivity "
        "`c_lambda_twice(lam, 0.5)` (docs/privacy/privgcm.md, \"Twice-fitted residuals\"). "
        "`np-same`: the same t-test on the exact (noise-free) group sums at the same "
        "settings; `np-single`: the same for the single fit at its former rule "
        "`0.03 min(1, (1e4/n)^0.7)` (the grouped release before issue 60's fix). GCM: "
        "non-private, `lam = 1e-5`. "
        f"PrivCRT / CRT: model-X law `N(f_a(Z), 1)` (draws clipped like X), m = {uc.m}, "
        f"`lam = {uc.lam_crt:g}`, residual clip {uc.residual_bound:g}. alpha = 0.05; cells: "
        "rejection rate [Wilson 95 % interval].", "",
        f"Repetitions of this run: power cells {uc.reps} up to n = 3,000, {uc.reps_mid} up to "
        f"10,000, {uc.reps_large} above; type-I cells {uc.reps_null} / {uc.reps_null_mid} / "
        f"{uc.reps_null_large}. The default (`dpcg bench continuous --unit-power` alone) is "
        "500 everywhere; fewer above n = 10,000 with `--unit-reps-large R "
        "--unit-reps-null-large R`.", ""]
    lines += ["## Power vs beta", ""]
    for n in uc.beta_ns:
        reps = uc.power_reps(n)
        lam = twice_lambda(n)
        lines += [f"n = {n:,} (lam {lam:.4g}, c_tw {c_lambda_twice(lam, uc.clip):.1f}"
                  f", {reps} repetitions)", "", "| beta | " + " | ".join(heads) + " |",
                  "|---" * (len(heads) + 1) + "|"]
        for beta in uc.betas:
            c = _unit_cell("unit", n, beta, reps, uc.epsilons, uc, True)
            lines.append(f"| {beta:g} | " + " | ".join(fmt(c.get(k), reps) for k in cols) + " |")
            log(f"unit power n={n} beta={beta}: {c} ({time.perf_counter() - t0:.0f} s)")
        lines.append("")
    lines += [f"## Power vs n (beta = {uc.curve_beta:g})", "",
              "| n | reps | " + " | ".join(heads) + " |", "|---" * (len(heads) + 2) + "|"]
    for n in uc.curve_ns:
        reps = uc.power_reps(n)
        c = _unit_cell("unit", n, uc.curve_beta, reps, uc.epsilons, uc, True)
        lines.append(f"| {n:,} | {reps} | " + " | ".join(fmt(c.get(k), reps) for k in cols)
                     + " |")
        log(f"unit curve n={n}: {c} ({time.perf_counter() - t0:.0f} s)")
    null_cols = [f"privgcm@{e:g}" for e in uc.null_epsilons] + ["np-same", "np-single",
                                                                 "gcm"]
    null_heads = [f"PrivGCM eps {e:g}" for e in uc.null_epsilons] + [
        "np-same", "np-single (before)", "GCM (lam 1e-5)"]
    lines += ["", "## Type-I error (beta = 0)", "",
              "In band: inside the central 99 % binomial band of alpha for that many "
              "repetitions (marked `*` when outside).", "",
              "| model | n | reps | band | " + " | ".join(null_heads) + " |",
              "|---" * (len(null_heads) + 4) + "|"]
    for model in uc.null_models:
        for n in uc.null_ns:
            reps = uc.null_reps(n)
            lo, hi = band(reps)
            c = _unit_cell(model, n, 0.0, reps, uc.null_epsilons, uc, False)

            def cell(k: str, c: dict[str, int] = c, reps: int = reps, lo: float = lo,
                     hi: float = hi) -> str:
                rate = c.get(k, 0) / reps
                return f"{rate:.3f}" + ("" if lo <= rate <= hi else " *")

            lines.append(f"| {model} | {n:,} | {reps} | [{lo:.3f}, {hi:.3f}] | "
                         + " | ".join(cell(k) for k in null_cols) + " |")
            log(f"null {model} n={n}: {c} ({time.perf_counter() - t0:.0f} s)")
    lines += ["", f"Total time: {time.perf_counter() - t0:.0f} s on "
              f"{machine_description()} (at `nice -n 10`, shared with other jobs)."]
    return "\n".join(lines) + "\n"


def _main_unit(args: argparse.Namespace) -> int:
    uc = UnitConfig()
    if args.quick:
        uc = UnitConfig(beta_ns=(2000,), betas=(0.0, 2.0), curve_ns=(1000, 10000),
                        null_ns=(2000,), null_models=("unit",), reps=20, reps_mid=20,
                        reps_large=10, reps_null=40, reps_null_mid=40, reps_null_large=10)
    if args.curve_ns is not None:
        uc.curve_ns = args.curve_ns
    if args.curve_reps is not None:
        uc.reps = args.curve_reps
    if args.reps_null is not None:
        uc.reps_null = args.reps_null
    if args.curve_epsilons is not None:
        uc.epsilons = args.curve_epsilons
    if args.features is not None:
        uc.features = args.features
    if args.betas is not None:
        uc.betas = args.betas
    for name in ("unit_reps_mid", "unit_reps_large", "unit_reps_null_mid",
                 "unit_reps_null_large"):
        v = getattr(args, name, None)
        if v is not None:
            setattr(uc, name.removeprefix("unit_"), v)

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    md = run_unit_power(uc, log)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(md)
    if not args.no_docs:
        write_section("continuous-unit", md)
    print(md)
    return 0


# ---------------------------------------------------------------------------------
# Issue 60: the null bias of the twice-fitted residual products on a grid of models
# ---------------------------------------------------------------------------------

#: Models of ``--bias-grid``: (label, generator, d, a).
BIAS_MODELS: tuple[tuple[str, str, int, float], ...] = (
    ("unit, a = 2, d = 1", "unit", 1, 2.0),
    ("unit, a = 3, d = 1", "unit", 1, 3.0),
    ("hetero, a = 2, d = 1", "hetero", 1, 2.0),
    ("sd-0.3, a = 2, d = 1", "sd03", 1, 2.0),
    ("unit, a = 2, d = 2", "unit", 2, 2.0),
)


@dataclass
class BiasConfig:
    """Grid of ``--bias-grid`` (docs/benchmarks/continuous-bias.md)."""

    n: int = 20_000
    reps: int = 60
    lams: tuple[float, ...] = (0.005, 0.01, 0.02, 0.03, 0.04, 0.05, 0.07, 0.1)
    features: int = 200
    feature_seed: int = 0
    clip: float = 0.5
    seed: int = 20261204
    bandwidth: float = 0.1  # per sqrt(d), on the [-1, 1] scale of Z (the default rule's)


def bias_rep(gen: str, d: int, a: float, rep: int, bc: BiasConfig
             ) -> dict[tuple[str, float], float]:
    """``mean(R) / sd(R)`` of the exact residual products of one null data set
    (``beta = 0``) for every ``lam`` of the grid: the single fit (``single``) and the
    twice-fitted, clipped residuals (``twice``); bandwidth ``0.1 sqrt(d)``, RFF ridge."""
    import scipy.linalg

    from dpcg.citests.gcm import grouped_bandwidth, twice_residuals
    from dpcg.datasets.sem import unit_noise, unit_noise_bounds

    n = bc.n
    seed = (bc.seed * 1_000_003 + rep * 7919 + d * 101 + int(a * 13)
            + {"unit": 0, "hetero": 1, "sd03": 2}[gen]) % (2**32)
    if gen == "sd03":
        ds = shah_peters(n, d, a, 0.0, seed)
        bounds = np.asarray(shah_peters_bounds(d, 0.0))
    else:
        ds = unit_noise(n, d, a, 0.0, seed, noise=gen)
        bounds = np.asarray(unit_noise_bounds(n, d))
    scaled = rescale(ds.values, bounds[:, 0], bounds[:, 1])
    xy, zs = scaled[:2].T, scaled[2:].T
    h = grouped_bandwidth(d) * bc.bandwidth / 0.1
    freqs = rff_frequencies(d, bc.features, h, bc.feature_seed)
    phi = rff_map(zs, freqs)
    gram = phi.T @ phi
    out: dict[tuple[str, float], float] = {}
    for lam in bc.lams:
        g = gram.copy()
        g[np.diag_indices_from(g)] += n * lam
        cho = scipy.linalg.cho_factor(g, lower=True, overwrite_a=True, check_finite=False)
        fac = RFFFactor(phi=phi, freqs=freqs, cho=cho, n=n, lam=lam, bandwidth=h)
        for kind, r in (("single", fac.residuals(xy)), ("twice", twice_residuals(fac, xy,
                                                                                   bc.clip))):
            prod = r[:, 0] * r[:, 1]
            out[(kind, lam)] = float(prod.mean() / prod.std())
    return out


def run_bias_grid(bc: BiasConfig, log: Callable[[str], None]) -> str:
    """The null bias table of the single and twice-fitted residual products (markdown)."""
    from dpcg.citests.gcm import c_lambda_sharp, c_lambda_twice, twice_lambda

    t0 = time.perf_counter()
    se = 1.0 / math.sqrt(bc.n * bc.reps)
    lines = [
        "# Null bias of PrivGCM's residual products on a grid of models (issue 60)", "",
        "`dpcg bench continuous --bias-grid` (one command; options `--bias-n`, "
        "`--bias-reps`). Each cell: the mean over "
        f"{bc.reps} null data sets (`beta = 0`, n = {bc.n:,}) of `mean(R) / sd(R)` of the "
        "exact residual products, i.e. the non-private GCM statistic's drift divided by "
        f"`sqrt(n)` (Monte-Carlo s.e. about {se:.4f}; the same data sets in every column, "
        "so a common offset of a few s.e. is noise). `single`: one ridge fit (the grouped "
        "release before the fix); `twice`: the twice-fitted residuals clipped to "
        f"{bc.clip:g} (`fit=\"twice\"`, docs/privacy/privgcm.md, \"Twice-fitted "
        f"residuals\"). Ridge on {bc.features} random Fourier features (public seed "
        f"{bc.feature_seed}), bandwidth `{bc.bandwidth:g} sqrt(d)` on the `[-1, 1]` scale of "
        "Z. Models: "
        "`unit_noise` (`unit`, `hetero`: noise sd `sqrt(1/4 + Z^2)`) with bounds "
        "`1.5 sqrt(log n)`, `shah_peters` (`sd-0.3`, bounds of 5 sd).", "",
        "| model | fit | " + " | ".join(f"lam {lam:g}" for lam in bc.lams) + " |",
        "|---" * (len(bc.lams) + 2) + "|"]
    for label, gen, d, a in BIAS_MODELS:
        acc: dict[tuple[str, float], float] = {}
        for rep in range(bc.reps):
            for k, v in bias_rep(gen, d, a, rep, bc).items():
                acc[k] = acc.get(k, 0.0) + v / bc.reps
        for kind in ("single", "twice"):
            lines.append(f"| {label} | {kind} | "
                         + " | ".join(f"{acc[(kind, lam)]:.4f}" for lam in bc.lams) + " |")
        log(f"bias {label}: done ({time.perf_counter() - t0:.0f} s)")
    lines += ["", "Sensitivities at the grid's lam (clip "
              f"{bc.clip:g} for `twice`): " + ", ".join(
                  f"lam {lam:g}: single {c_lambda_sharp(lam):.1f}, twice "
                  f"{c_lambda_twice(lam, bc.clip):.1f}" for lam in bc.lams) + ".", "",
              "The default rule `twice_lambda(n) = 0.03 (10^4/n)^0.2`: " + ", ".join(
                  f"n {n:,}: {twice_lambda(n):.4f}" for n in (1000, 2000, 10_000, 100_000))
              + ".", "",
              f"Total time: {time.perf_counter() - t0:.0f} s on {machine_description()} "
              "(at `nice -n 10`, shared with other jobs)."]
    return "\n".join(lines) + "\n"


def _main_bias(args: argparse.Namespace) -> int:
    bc = BiasConfig()
    if args.quick:
        bc = BiasConfig(n=4000, reps=10)
    if args.bias_n is not None:
        bc.n = args.bias_n
    if args.bias_reps is not None:
        bc.reps = args.bias_reps
    if args.bias_bandwidth is not None:
        bc.bandwidth = args.bias_bandwidth

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    md = run_bias_grid(bc, log)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(md)
    if not args.no_docs:
        write_section("continuous-bias", md)
    print(md)
    return 0


# ---------------------------------------------------------------------------------
# Issue 54: PrivCRT's level, threshold release against the rank release
# ---------------------------------------------------------------------------------


@dataclass
class CrtLevelConfig:
    """Grids of ``--crt-level`` (docs/benchmarks/continuous-crt-level.md)."""

    ns: tuple[int, ...] = (1000, 10_000, 100_000)
    models: tuple[str, ...] = ("unit", "sd03")
    epsilons: tuple[float, ...] = (1.0, 2.0)
    reps: int = 500
    #: power rows: (model, n, beta) at which the releases are compared
    power: tuple[tuple[str, int, float], ...] = (
        ("unit", 1000, 0.1), ("unit", 10_000, 0.03), ("sd03", 1000, 0.2), ("sd03", 1000, 0.5))
    power_reps: int = 500
    a: float = 2.0
    features: int = 200
    feature_seed: int = 0
    lam_crt: float = 10.0
    bandwidth: float = 0.1
    m: int = 19
    seed: int = 20261204

    def residual_bound(self, model: str) -> float:
        """The public residual clip: 0.6 on the unit model (as ``--unit-power``), 0.3
        on the sd-0.3 Shah-Peters model (as the default suite)."""
        return 0.6 if model == "unit" else 0.3


def crt_level_rep(model: str, n: int, beta: float, rep: int, cc: CrtLevelConfig
                  ) -> dict[str, bool]:
    """One data set: the rejections of the non-private CRT and of PrivCRT's threshold
    and rank releases at every eps (the same queries for all; one session)."""
    from dpcg.datasets.sem import UnitNoiseSampler, unit_noise, unit_noise_bounds

    seed = (cc.seed * 1_000_003 + rep * 7919 + n * 31 + int(beta * 1009)
            + 17 * cc.models.index(model)) % (2**32)
    if model == "sd03":
        ds = shah_peters(n, 1, cc.a, beta, seed)
        bounds = np.asarray(shah_peters_bounds(1, beta))
        sampler: Any = shah_peters_sampler(cc.a)
    else:
        ds = unit_noise(n, 1, cc.a, beta, seed, noise="unit")
        bounds = np.asarray(unit_noise_bounds(n, 1))
        sampler = UnitNoiseSampler(cc.a)
    values = np.clip(ds.values, bounds[:, :1], bounds[:, 1:])
    scaled = rescale(values, bounds[:, 0], bounds[:, 1])
    ys, zs = scaled[1], scaled[2:].T
    fac = _unit_factors(zs, [(cc.bandwidth, cc.lam_crt)],
                        UnitConfig(features=cc.features, feature_seed=cc.feature_seed))
    ry = fac[(cc.bandwidth, cc.lam_crt)].residuals(ys)
    session = _session(seed, total_eps=2.0 * sum(cc.epsilons))
    g = session.auxiliary_generator()
    zraw = values[2:].T
    mu = sampler.conditional_mean(zraw)
    draws = np.clip(sampler.sample(zraw, cc.m, g), bounds[0, 0], bounds[0, 1])
    scale = 2.0 / (bounds[0, 1] - bounds[0, 0])
    rx = (np.vstack([values[0][None, :], draws]) - mu[None, :]) * scale
    br = cc.residual_bound(model)
    q = np.abs(crt_statistics(rx, ry, br))
    dt = crt_sensitivity(br, cc.lam_crt, n)
    out = {"crt": crt_pvalue(q) <= ALPHA}
    for e in cc.epsilons:
        out[f"threshold@{e:g}"] = _privcrt(session, e, q, dt, g, "bench PrivCRT threshold")
        out[f"rank@{e:g}"] = _privcrt(session, e, q, dt, g, "bench PrivCRT rank", "rank")
    return out


def run_crt_level(cc: CrtLevelConfig, log: Callable[[str], None]) -> str:
    cols = [*(f"threshold@{e:g}" for e in cc.epsilons), *(f"rank@{e:g}" for e in cc.epsilons),
            "crt"]
    heads = [*(f"threshold eps {e:g}" for e in cc.epsilons),
             *(f"rank eps {e:g}" for e in cc.epsilons), "CRT (non-private)"]

    def cell(model: str, n: int, beta: float, reps: int) -> tuple[dict[str, int], float]:
        t0 = time.process_time()
        counts = dict.fromkeys(cols, 0)
        for rep in range(reps):
            for k, v in crt_level_rep(model, n, beta, rep, cc).items():
                counts[k] += int(v)
        return counts, time.process_time() - t0

    lo, hi = band(cc.reps)
    lines = [
        "# PrivCRT's level: the threshold release against the rank release (issue 54)",
        "",
        "`dpcg bench continuous --crt-level` (`benchmarks/continuous.py`, `crt_level_rep`). "
        "Models (`d = 1`, `a = 2`): `unit`: `unit_noise` (`X = f_a(Z) + N(0, 1)`, "
        "`Y = f_a(Z) + beta X + N(0, 1)`, every column clipped to `+-1.5 sqrt(log n)`), "
        "model-X law `N(f_a(Z), 1)`, residual clip 0.6; `sd03`: Shah-Peters with noise sd "
        "0.3 (bounds 5 sd), model-X law `N(f_a(Z), 0.09)`, residual clip 0.3. Resamples "
        "clipped to X's bounds like X. Y fitted by the ridge on "
        f"{cc.features} random Fourier features (public seed {cc.feature_seed}, bandwidth "
        f"{cc.bandwidth:g}, lam {cc.lam_crt:g}); m = {cc.m}, alpha = {ALPHA}. Both releases "
        "and the non-private CRT rank the same statistics of the same data set (one "
        "session per repetition, seeded). `threshold`: the default release (one Laplace "
        "release of the margin, exact level `k/(m+1)` = 0.05; docs/privacy/privcrt.md, "
        "'The threshold release'); `rank`: Kalemaj et al.'s Report-Noisy-Max rank "
        "(`release=\"rank\"`).",
        "",
        f"## Type-I error (beta = 0, {cc.reps} repetitions per cell; 99 % band "
        f"[{lo:.3f}, {hi:.3f}])",
        "",
        "| model | n | " + " | ".join(heads) + " | CPU s |",
        "|---" * (len(heads) + 3) + "|",
    ]
    for model in cc.models:
        for n in cc.ns:
            counts, sec = cell(model, n, 0.0, cc.reps)
            row = []
            for k in cols:
                r = counts[k] / cc.reps
                row.append(f"{r:.3f}" + ("" if lo <= r <= hi else " *"))
            lines.append(f"| {model} | {n:,} | " + " | ".join(row) + f" | {sec:.0f} |")
            log(f"null {model} n={n}: {counts} ({sec:.0f} CPU s)")
    lines += ["", "\\* outside the 99 % band.", "",
              f"## Power ({cc.power_reps} repetitions per cell)", "",
              "| model | n | beta | " + " | ".join(heads) + " |",
              "|---" * (len(heads) + 3) + "|"]
    for model, n, beta in cc.power:
        counts, sec = cell(model, n, beta, cc.power_reps)
        lines.append(f"| {model} | {n:,} | {beta:g} | "
                     + " | ".join(f"{counts[k] / cc.power_reps:.3f}" for k in cols) + " |")
        log(f"power {model} n={n} beta={beta}: {counts} ({sec:.0f} CPU s)")
    lines += ["", f"Machine: {machine_description()}."]
    return "\n".join(lines) + "\n"


def _main_crt_level(args: argparse.Namespace) -> int:
    cc = CrtLevelConfig()
    if args.quick:
        cc = CrtLevelConfig(ns=(1000,), reps=100, power_reps=100)
    if args.ns is not None:
        cc.ns = args.ns
    if args.reps_null is not None:
        cc.reps = args.reps_null
    if args.reps_power is not None:
        cc.power_reps = args.reps_power

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    md = run_crt_level(cc, log)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(md)
    if not args.no_docs:
        write_section("continuous-crt-level", md)
    print(md)
    return 0
