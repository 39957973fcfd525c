"""The audit suite: every check, in one place, with a quick and a full profile.

Sections:

1. **mechanisms**: empirical audits of the real primitives of
   :mod:`accounting.mechanisms` on their worst-case fixtures (must pass:
   ``eps_lb <= declared eps``), plus exact white-box checks where the output pmf
   can be computed;
2. **mutants**: the broken variants of :mod:`audits.mutants` (must be flagged:
   ``eps_lb > declared eps``, exact loss above it, or a sensitivity violation);
3. **statistics**: sensitivity audits of every registered statistic (must find no
   violation);
4. **accountant**: metamorphic checks of the accounting backend;
5. **algorithms**: end-to-end audits of whole algorithms ``algorithm(dataset, seed)
   -> hashable output`` on tiny neighbouring datasets.

All empirical audits of one run share a family-wise level ``alpha`` (Bonferroni:
each audit uses ``alpha / m``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from accounting.relations import Relation
from audits import fixtures, mutants
from audits.empirical import EmpiricalResult, Sampler, audit, exact_epsilon
from audits.exact import exponential_mechanism_pmf, rnm_pmf, svt_pmf, top_k_pmf

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Profile:
    name: str
    n_selection: int
    n_fresh: int
    #: samples for the (slow) algorithm-level audits
    algorithm_runs: int
    sensitivity: Any  # audits.sensitivity.Effort
    #: fresh-split runs per dataset for the private PC variants (slow: ~20 ms a run)
    pc_runs: int = 400
    alpha: float = 0.05


def quick_profile() -> Profile:
    from audits.sensitivity import QUICK

    return Profile("quick", n_selection=100_000, n_fresh=1_000_000, algorithm_runs=2_000,
                   sensitivity=QUICK)


def full_profile() -> Profile:
    from audits.sensitivity import FULL

    return Profile("full", n_selection=1_000_000, n_fresh=10_000_000, algorithm_runs=20_000,
                   sensitivity=FULL, pc_runs=1_000)


@dataclass(frozen=True)
class EmpiricalItem:
    """One empirical audit to run."""

    section: str  # "mechanism", "mutant", "algorithm"
    name: str
    sampler: Sampler
    pair: fixtures.Neighbours
    declared_epsilon: float
    declared_delta: float = 0.0
    expect_flag: bool = False
    defect: str = ""
    #: multiplier on the profile's sample sizes (slow samplers use fewer)
    scale: float = 1.0


@dataclass
class Row:
    """One line of the report."""

    section: str
    name: str
    kind: str  # "empirical", "exact", "sensitivity", "metamorphic"
    declared: str
    measured: float
    confidence: str
    tightness: float
    samples: int
    expect_flag: bool
    flagged: bool
    detail: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.flagged == self.expect_flag


@dataclass
class SuiteResult:
    profile: str
    alpha: float
    rows: list[Row] = field(default_factory=list)
    empirical: list[EmpiricalResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    cpu_seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.rows)


# ---------------------------------------------------------------------------------
# Items
# ---------------------------------------------------------------------------------

EPS = 1.0
#: ``k`` of the top-k rows (declared ``TOP_K * EPS``).
TOP_K = 2
#: Largest fresh split for a mutant (they are flagged far below it).
MUTANT_CAP = 2_000_000


def _mech_sampler(mech: Any) -> Sampler:
    def run(exact: Any, n: int, rng: np.random.Generator) -> NDArray[Any]:
        return np.asarray(mech.sample(exact, rng, n))

    return run


def _subsampled_sampler(mech: Any) -> Sampler:
    """Real SubsampledSparseVector: the primitive draws the subsamples, the queries
    are column sums over the subsample (sensitivity 1 on m rows)."""

    def run(rows: Any, n: int, rng: np.random.Generator) -> NDArray[Any]:
        x = np.asarray(rows, dtype=np.float64)
        idx = mech.draw_subsamples(rng, n)
        answers = x[idx].sum(axis=1)
        return np.asarray(mech.sample(answers, rng, n))

    return run


#: delta of the Gaussian mechanism's empirical row (the zcdp rule's guarantee at it).
GAUSSIAN_DELTA = 1e-3


def declared_epsilon(mech: Any) -> float:
    """The epsilon the filter would charge for ``mech`` under replace-one: the audits
    compare the measured loss with what the ledger records, not with the epsilon the
    mechanism was constructed with (so a cost formula that under-charges is refuted)."""
    eps = mech.cost(Relation.REPLACE_ONE).epsilon
    if eps is None:
        raise ValueError(f"{mech.kind}: no pure/approximate epsilon in its cost")
    return float(eps)


def gaussian_declared(mech: Any, delta: float = GAUSSIAN_DELTA) -> float:
    """The (eps at ``delta``) guarantee of one Gaussian release under the zcdp rule:
    ``accounting.costs.zcdp_to_epsilon`` of the rho the mechanism is charged. The
    Gaussian row declares the smaller of this and the epsilon the plan was asked for
    (both are claims the code makes about the same release)."""
    from fractions import Fraction

    from accounting.costs import zcdp_to_epsilon

    rho = mech.cost(Relation.REPLACE_ONE).rho
    return float(zcdp_to_epsilon(rho, Fraction(delta)))


def gaussian_mechanism(sampler: str = "discrete", epsilon: float = EPS,
                       delta: float = GAUSSIAN_DELTA) -> Any:
    """What the zcdp rule grants one release at ``(epsilon, delta)``: the Gaussian
    mechanism of ``accounting.planning.gaussian_plan`` (``k = 1``, Delta2 = 1), i.e.
    ``Gaussian.for_rho(1, Budget(epsilon, delta).rho())``."""
    from accounting.costs import Budget
    from accounting.planning import gaussian_plan

    mech = gaussian_plan(Budget(epsilon, delta), 1, 1.0)
    if sampler != mech.sampler:
        from accounting.mechanisms import Gaussian

        mech = Gaussian(mech.l2_sensitivity, mech.sigma, mech.relation, sampler)
    return mech


def mechanism_items(notes: list[str]) -> list[EmpiricalItem]:
    """Correct primitives from accounting.mechanisms (skipped with a note if absent).

    Every declared epsilon is the one the mechanism's ``cost`` charges (for the
    Gaussian: the zCDP conversion of its charged rho at ``GAUSSIAN_DELTA``)."""
    try:
        from accounting import mechanisms as mech
    except ImportError:
        notes.append("accounting.mechanisms not available: real primitives not audited")
        return []

    def item(name: str, m: Any, pair: fixtures.Neighbours, scale: float = 1.0,
             delta: float = 0.0) -> EmpiricalItem:
        return EmpiricalItem("mechanism", name, _mech_sampler(m), pair, declared_epsilon(m),
                             declared_delta=delta, scale=scale)

    items = [
        item("Laplace (discrete grid sampler)", mech.Laplace(1.0, EPS), fixtures.laplace_pair()),
        item("Laplace (float sampler)", mech.Laplace(1.0, EPS, sampler="float"),
             fixtures.laplace_pair()),
        item("SparseVector c=1 (Alg. 1)", mech.SparseVector(0.0, 1.0, EPS), fixtures.svt_pair(),
             scale=0.4),
        item("SparseVector c=1 (float sampler)",
             mech.SparseVector(0.0, 1.0, EPS, sampler="float"), fixtures.svt_pair()),
        item("ReportNoisyMax (exponential noise)", mech.ReportNoisyMax(1.0, EPS, "exponential"),
             fixtures.rnm_pair(), scale=0.3),
        item("ReportNoisyMax (Gumbel noise)", mech.ReportNoisyMax(1.0, EPS, "gumbel"),
             fixtures.rnm_pair(), scale=0.3),
        item("ReportNoisyMax (Laplace noise)", mech.ReportNoisyMax(1.0, EPS, "laplace"),
             fixtures.rnm_pair(), scale=0.1),
        item("Exponential mechanism", mech.Exponential(1.0, EPS), fixtures.rnm_pair(),
             scale=0.3),
        item("SmoothSensitivityMedian", mech.SmoothSensitivityMedian(EPS, 1e-3, 0.0, 1.0),
             fixtures.median_pair(), delta=1e-3),
    ]
    for sampler in ("discrete", "float"):
        g = gaussian_mechanism(sampler)
        label = "discrete Gaussian grid sampler" if sampler == "discrete" else "float sampler"
        items.append(EmpiricalItem(
            "mechanism", f"Gaussian, zcdp rule at eps=1, delta={GAUSSIAN_DELTA:g} ({label})",
            _mech_sampler(g), fixtures.laplace_pair(), min(EPS, gaussian_declared(g)),
            declared_delta=GAUSSIAN_DELTA))
    sub = mech.SubsampledSparseVector(20, 5, 0.0, 1.0, EPS)
    items.append(EmpiricalItem(
        "mechanism", "SubsampledSparseVector n=20 m=5", _subsampled_sampler(sub),
        fixtures.subsampled_svt_pair(20), declared_epsilon(sub), scale=0.2))
    # last, so that the items above keep their seeds (seed + position)
    items.append(item(f"TopK k={TOP_K} (one-shot Gumbel top-k, ordered output)",
                      mech.TopK(1.0, EPS, TOP_K), fixtures.top_k_pair(TOP_K)))
    # the gainers 0 and 1 share their groups with losers 11 and 12 (EM-PC's picks)
    items.append(item(f"GroupTopK k={TOP_K} (11 groups of 2, one per group)",
                      mech.GroupTopK.over(np.arange(22) % 11, 1.0, EPS, TOP_K),
                      fixtures.top_k_pair(TOP_K)))
    return items


def _charging_pair() -> fixtures.Neighbours:
    return fixtures.Neighbours(np.zeros(20), np.ones(20),
                               "20 test statistics, each moved by Delta = 1 by one record")


def mutant_items() -> list[EmpiricalItem]:
    svt = fixtures.svt_pair()
    opposite = fixtures.Neighbours(
        np.r_[np.ones(5), np.zeros(5)], np.r_[np.zeros(5), np.ones(5)],
        "10 answers: 5 shifted up, 5 shifted down by 1",
    )

    def v(name: str) -> mutants.SVTVariant:
        return mutants.svt_variant(name, 1.0, EPS)

    return [
        EmpiricalItem("mutant", "Laplace with half the scale", mutants.laplace_sampler(
            1.0, EPS, scale_factor=0.5), fixtures.laplace_pair(), EPS, expect_flag=True,
            defect="noise Lap(Delta/(2 eps)): 2 eps-DP"),
        EmpiricalItem("mutant", "SVT Alg. 3 (releases noisy value)",
                      mutants.svt_sampler(v("alg3"), 0.0), svt, EPS, expect_flag=True,
                      defect="positives release q_i + nu_i"),
        EmpiricalItem("mutant", "SVT Alg. 4 (eps/4, unscaled query noise)",
                      mutants.svt_sampler(v("alg4"), 0.0), svt, EPS, expect_flag=True,
                      defect="eps1 = eps/4, nu ~ Lap(Delta/eps2): (1+6c)/4 eps"),
        EmpiricalItem("mutant", "SVT Alg. 5 (no query noise)",
                      mutants.svt_sampler(v("alg5"), 0.0), svt, EPS, expect_flag=True,
                      defect="no query noise"),
        EmpiricalItem("mutant", "SVT Alg. 6 (no cutoff)",
                      mutants.svt_sampler(v("alg6"), 0.0), opposite, EPS, expect_flag=True,
                      defect="never halts; nu ~ Lap(Delta/eps2)"),
        EmpiricalItem("mutant", "SVT with Gaussian threshold refresh (Priv-PC)",
                      mutants.svt_sampler(v("gaussian-refresh"), -1.0), svt, EPS,
                      expect_flag=True, defect="threshold noise N(0, (2 Delta/eps)^2)"),
        EmpiricalItem("mutant", "Per-test Laplace charging only some tests (CURATE code)",
                      mutants.partial_charging_sampler(EPS, EPS / 4, 1.0, 3.0, 20),
                      _charging_pair(), EPS, expect_flag=True,
                      defect="tests below the lower margin (3.0) are not charged; budget "
                             "1.0 at 0.25 per charged test, up to 20 tests released"),
        EmpiricalItem("mutant", "RNM releasing the noisy max value",
                      mutants.rnm_sampler(1.0, EPS, "exponential", release_value=True),
                      fixtures.rnm_pair(), EPS, expect_flag=True,
                      defect="releases max_r s_r + Expo(2 Delta/eps)", scale=0.3),
        EmpiricalItem("mutant", f"TopK k={TOP_K} with logits eps u / Delta",
                      mutants.top_k_sampler(1.0, EPS, TOP_K, logit_factor=2.0),
                      fixtures.top_k_pair(TOP_K), TOP_K * EPS, expect_flag=True,
                      defect="Gumbel noise of scale Delta/eps on the utilities (valid for "
                             "monotone utilities only): 2 k eps-DP, declares k eps",
                      scale=0.3),
        EmpiricalItem("mutant", f"TopK k={TOP_K} charged for one selection",
                      mutants.top_k_sampler(1.0, EPS, TOP_K), fixtures.top_k_pair(TOP_K),
                      EPS, expect_flag=True,
                      defect="correct sampler, declares eps instead of k eps", scale=0.3),
    ]


def reference_items() -> list[EmpiricalItem]:
    """The mutants' correct counterparts from the same code (must pass)."""
    return [
        EmpiricalItem("mechanism", "reference Laplace (audits.mutants)",
                      mutants.laplace_sampler(1.0, EPS), fixtures.laplace_pair(), EPS),
        EmpiricalItem("mechanism", "reference SVT Alg. 1 (audits.mutants)",
                      mutants.svt_sampler(mutants.svt_variant("alg1", 1.0, EPS), 0.0),
                      fixtures.svt_pair(), EPS),
        EmpiricalItem("mechanism", "reference per-test Laplace charging every test",
                      mutants.partial_charging_sampler(EPS, EPS / 4, 1.0, 3.0, 20,
                                                       charge_all=True),
                      _charging_pair(), EPS),
        EmpiricalItem("mechanism", "reference RNM index (audits.mutants)",
                      mutants.rnm_sampler(1.0, EPS, "exponential"), fixtures.rnm_pair(), EPS,
                      scale=0.3),
        EmpiricalItem("mechanism", f"reference TopK k={TOP_K} (audits.mutants)",
                      mutants.top_k_sampler(1.0, EPS, TOP_K), fixtures.top_k_pair(TOP_K),
                      TOP_K * EPS, scale=0.3),
    ]


# ---------------------------------------------------------------------------------
# Algorithm-level harness
# ---------------------------------------------------------------------------------


def algorithm_sampler(algorithm: Callable[[Any, int], Hashable]) -> Sampler:
    """Turn ``algorithm(dataset, seed) -> hashable output`` into a sampler.

    Each release runs the algorithm once with a fresh seed drawn from the auditor's
    generator; outputs are coded as integers through one table shared by both
    datasets and both splits, so value events mean the same output everywhere."""
    codes: dict[Hashable, int] = {}

    def run(dataset: Any, n: int, rng: np.random.Generator) -> NDArray[Any]:
        seeds = rng.integers(0, 2**63 - 1, size=n)
        out = np.empty(n, dtype=np.int64)
        for i, s in enumerate(seeds):
            key = algorithm(dataset, int(s))
            out[i] = codes.setdefault(key, len(codes))
        return out

    return run


def _primitive_algorithm(scale_factor: float) -> Callable[[Any, int], Hashable]:
    """A tiny "algorithm" built on a Laplace release: which of three bins the noisy
    count falls in (tests the harness; half-scale is the mutant)."""

    def algorithm(value: Any, seed: int) -> Hashable:
        rng = np.random.default_rng(seed)
        noisy = float(value) + rng.laplace(0.0, scale_factor / EPS)
        return "low" if noisy < 0.0 else ("mid" if noisy < 1.0 else "high")

    return algorithm


def algorithm_items(notes: list[str], full: bool = False) -> list[EmpiricalItem]:
    items = [
        EmpiricalItem("algorithm", "harness: binned Laplace release",
                      algorithm_sampler(_primitive_algorithm(1.0)), fixtures.laplace_pair(),
                      EPS, scale=0.0),
        EmpiricalItem("mutant", "harness: binned half-scale Laplace",
                      algorithm_sampler(_primitive_algorithm(0.5)), fixtures.laplace_pair(),
                      EPS, expect_flag=True, defect="half the Laplace scale", scale=0.0),
    ]
    try:
        from audits import algorithms
    except ImportError:  # pragma: no cover - module of this package
        return items
    items.extend(algorithms.items(notes, full=full))
    return items


# ---------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------


def _run_empirical(items: list[EmpiricalItem], profile: Profile, seed: int,
                   result: SuiteResult, progress: Progress) -> None:
    m = len(items)
    alpha_each = profile.alpha / max(m, 1)
    for j, it in enumerate(items):
        if it.scale == 0.0:  # harness on primitives: fixed run count
            n_sel = max(profile.algorithm_runs // 4, 200)
            n_fresh = profile.algorithm_runs
        elif it.scale < 0.0:  # whole private algorithms
            n_sel = max(profile.pc_runs // 4, 50)
            n_fresh = profile.pc_runs
        else:
            n_sel = max(int(profile.n_selection * it.scale), 1000)
            n_fresh = max(int(profile.n_fresh * it.scale), 1000)
            if it.section == "mutant":  # flagged by a wide margin: cap the effort
                n_sel = min(n_sel, MUTANT_CAP // 5)
                n_fresh = min(n_fresh, MUTANT_CAP)
        progress(f"empirical [{j + 1}/{m}] {it.name} ({2 * (n_sel + n_fresh):,} releases)")
        t0 = time.perf_counter()
        r = audit(it.name, it.sampler, it.pair.d, it.pair.d_prime,
                  declared_epsilon=it.declared_epsilon, declared_delta=it.declared_delta,
                  n_selection=n_sel, n_fresh=n_fresh, alpha=alpha_each, seed=seed + j)
        dt = time.perf_counter() - t0
        result.empirical.append(r)
        declared = f"eps={it.declared_epsilon:.4g}"
        if it.declared_delta:
            declared += f", delta={it.declared_delta:g}"
        detail = (f"event {r.event}, {r.direction}: {r.count_first}/{r.count_second} of "
                  f"{r.n_fresh:,}; fixture: {it.pair.description}")
        if it.defect:
            detail = f"defect: {it.defect}; " + detail
        result.rows.append(Row(
            it.section, it.name, "empirical", declared, r.epsilon_lb,
            f"{100 * (1 - alpha_each):.3f}%", r.tightness, r.n_samples, it.expect_flag,
            r.exceeds, detail, dt,
        ))


def _exact_rows(result: SuiteResult, progress: Progress) -> None:
    """White-box checks: exact loss on the worst-case fixtures."""
    from accounting.mechanisms import TopK

    progress("exact: SVT / RNM / exponential mechanism / top-k pmfs")
    svt = fixtures.svt_pair()
    rnm = fixtures.rnm_pair()
    top = fixtures.top_k_pair(TOP_K)
    #: (section, label, expect_flag, pmf, fixture, declared eps)
    cases: list[tuple[str, str, bool, Callable[[Any], NDArray[Any]], fixtures.Neighbours,
                      float]] = []
    for name, expect in (("alg1", False), ("alg4", True), ("alg5", True),
                         ("gaussian-refresh", True)):
        var = mutants.svt_variant(name, 1.0, EPS)
        thr = -1.0 if name == "gaussian-refresh" else 0.0

        def pmf(a: Any, var: mutants.SVTVariant = var, thr: float = thr) -> NDArray[Any]:
            return svt_pmf(a, thr, var.threshold_scale, var.query_scale,
                           threshold_noise=var.threshold_noise)

        label = {"alg1": "SVT Alg. 1 c=1", "alg4": "SVT Alg. 4 c=1", "alg5": "SVT Alg. 5 c=1",
                 "gaussian-refresh": "SVT Gaussian threshold"}[name]
        cases.append(("mutant" if expect else "mechanism", label, expect, pmf, svt, EPS))
    for noise in ("exponential", "gumbel", "laplace"):
        def pmf_r(a: Any, noise: str = noise) -> NDArray[Any]:
            return rnm_pmf(a, 2.0 / EPS, noise)

        cases.append(("mechanism", f"RNM ({noise} noise)", False, pmf_r, rnm, EPS))

    def pmf_em(a: Any) -> NDArray[Any]:
        return exponential_mechanism_pmf(a, 1.0, EPS)

    cases.append(("mechanism", "Exponential mechanism", False, pmf_em, rnm, EPS))

    def pmf_top(a: Any) -> NDArray[Any]:
        return top_k_pmf(a, 1.0, EPS, TOP_K)

    def pmf_top_set(a: Any) -> NDArray[Any]:
        return top_k_pmf(a, 1.0, EPS, TOP_K, ordered=False)

    def pmf_top_double(a: Any) -> NDArray[Any]:
        return top_k_pmf(a, 1.0, 2.0 * EPS, TOP_K)  # logits eps u / Delta

    top_declared = declared_epsilon(TopK(1.0, EPS, TOP_K))  # what the real TopK charges
    cases.append(("mechanism", f"TopK k={TOP_K} (ordered output)", False, pmf_top, top,
                  top_declared))
    cases.append(("mechanism", f"TopK k={TOP_K} (selected set)", False, pmf_top_set, top,
                  top_declared))

    def pmf_rnm_half(a: Any) -> NDArray[Any]:
        return rnm_pmf(a, 1.0 / EPS, "exponential")

    cases.append(("mutant", "RNM with noise Expo(Delta/eps)", True, pmf_rnm_half, rnm, EPS))
    cases.append(("mutant", f"TopK k={TOP_K} with logits eps u / Delta", True, pmf_top_double,
                  top, TOP_K * EPS))
    cases.append(("mutant", f"TopK k={TOP_K} charged for one selection", True, pmf_top, top,
                  EPS))
    for section, label, expect, pmf_fn, pair, declared in cases:
        t0 = time.perf_counter()
        e = exact_epsilon(pmf_fn(pair.d), pmf_fn(pair.d_prime))
        result.rows.append(Row(
            section, label, "exact", f"eps={declared:g}", e, "exact (quadrature)",
            e / declared, 0, expect, e > declared * (1 + 1e-9),
            f"max log-ratio of the output pmf; fixture: {pair.description}",
            time.perf_counter() - t0,
        ))


def _sensitivity_rows(profile: Profile, seed: int, result: SuiteResult,
                      progress: Progress) -> None:
    from audits import sensitivity as sens

    t0 = time.perf_counter()
    try:
        results = sens.audit_all(profile.sensitivity, seed=seed, progress=progress)
    except sens.UnauditedSpecError as exc:
        result.rows.append(Row("statistic", "registry coverage", "sensitivity", "-",
                               math.nan, "-", math.nan, 0, False, True, str(exc)))
        results = []
    for r in results:
        result.rows.append(Row(
            "statistic", f"{r.name} ({r.relation})", "sensitivity", "declared bound",
            r.max_gap, "search", r.max_ratio, r.evaluations, False, r.violated,
            f"max ratio by method {_fmt_methods(r.by_method)}; worst: {r.witness}",
            time.perf_counter() - t0,
        ))
        t0 = time.perf_counter()
    progress("sensitivity: mutant Priv-PC conditional tau")
    spec = sens.privpc_conditional_tau_spec()
    r = sens.audit_spec(spec, sens.CASES["conditional-kendall-z"], profile.sensitivity, seed + 99)
    result.rows.append(Row(
        "mutant", "Priv-PC conditional tau, claimed 4.5/sqrt(n)", "sensitivity",
        "4.5/sqrt(n)", r.max_gap, "search + regression", r.max_ratio, r.evaluations, True,
        r.violated, f"max ratio by method {_fmt_methods(r.by_method)}; worst: {r.witness}",
        time.perf_counter() - t0,
    ))


    progress("sensitivity: PrivGCM residual products (correct and scikit-learn alpha mutant)")
    t0 = time.perf_counter()
    ok, bad = sens.gcm_audits(profile.sensitivity, seed + 7)
    dt = (time.perf_counter() - t0) / 2
    result.rows.append(Row(
        "statistic", "PrivGCM residual products (replace-one, L1)", "sensitivity",
        "c_lambda(lam)", ok.max_gap, "search", ok.max_ratio, ok.evaluations, False,
        ok.violated, f"worst: {ok.witness}", dt,
    ))
    result.rows.append(Row(
        "mutant", "PrivGCM with scikit-learn alpha used as lambda", "sensitivity",
        "c_lambda(alpha)", bad.max_gap, "search", bad.max_ratio, bad.evaluations, True,
        bad.violated, "defect: KernelRidge(alpha=a) fits with lam = a/n but the "
        f"sensitivity is c_lambda(a); worst: {bad.witness}", dt,
    ))
    progress("sensitivity: grouped PrivGCM group sums")
    t0 = time.perf_counter()
    grp = sens.gcm_grouped_audit(profile.sensitivity, seed + 9)
    result.rows.append(Row(
        "statistic", "grouped PrivGCM group sums (replace-one, L1)", "sensitivity",
        "c_lambda_sharp(lam)", grp.max_gap, "search", grp.max_ratio, grp.evaluations, False,
        grp.violated, f"worst: {grp.witness}", time.perf_counter() - t0,
    ))
    progress("sensitivity: twice-fitted grouped PrivGCM group sums")
    t0 = time.perf_counter()
    tw = sens.gcm_twice_audit(profile.sensitivity, seed + 10)
    result.rows.append(Row(
        "statistic", "twice-fitted grouped PrivGCM group sums (replace-one, L1)",
        "sensitivity", "c_lambda_twice(lam, 1)", tw.max_gap, "search", tw.max_ratio,
        tw.evaluations, False, tw.violated, f"worst: {tw.witness}", time.perf_counter() - t0,
    ))
    progress("sensitivity: PrivGCM residual products, random-Fourier-feature ridge")
    t0 = time.perf_counter()
    rff = sens.gcm_rff_audit(profile.sensitivity, seed + 8)
    result.rows.append(Row(
        "statistic", "PrivGCM residual products, RFF ridge (replace-one, L1)", "sensitivity",
        "c_lambda(lam)", rff.max_gap, "search", rff.max_ratio, rff.evaluations, False,
        rff.violated, f"worst: {rff.witness}", time.perf_counter() - t0,
    ))


def _moment_rows(profile: Profile, seed: int, result: SuiteResult,
                 progress: Progress) -> None:
    """cov-pc's moment vectors: the L2 change of the whole released vector."""
    from audits import sensitivity as sens

    for j, route in enumerate(("rank", "pearson", "rank-two-valued")):
        progress(f"sensitivity: cov-pc {route} moment vector (L2)")
        t0 = time.perf_counter()
        r = sens.moment_l2_audit(route, profile.sensitivity, seed + 11 + j)
        result.rows.append(Row(
            "statistic", f"cov-pc {route} moment vector (replace-one, L2)", "sensitivity",
            ("rank_moment_sensitivity(n, q, qb)" if route == "rank-two-valued"
             else f"{route}_moment_sensitivity(n, q)"), r.max_gap, "search", r.max_ratio,
            r.evaluations, False, r.violated, f"worst: {r.witness}",
            time.perf_counter() - t0,
        ))


def _fmt_methods(m: dict[str, float]) -> str:
    return "{" + ", ".join(f"{k}: {v:.3g}" for k, v in m.items()) + "}"


def _accountant_rows(result: SuiteResult, progress: Progress) -> None:
    from audits.accountant import run_all
    from audits.filter_audit import run_all as run_filter

    progress("accountant: metamorphic checks")
    t0 = time.perf_counter()
    for c in [*run_all(), *run_filter()]:
        result.rows.append(Row("accountant", c.name, "metamorphic", "-", math.nan, "-",
                               math.nan, 0, False, not c.passed, c.detail,
                               time.perf_counter() - t0))
        t0 = time.perf_counter()


def run_suite(profile: Profile, seed: int = 20261122,
              progress: Progress | None = None) -> SuiteResult:
    say: Progress = progress if progress is not None else (lambda _m: None)
    t0 = time.perf_counter()
    c0 = time.process_time()
    result = SuiteResult(profile.name, profile.alpha)
    items = (mechanism_items(result.notes) + reference_items() + mutant_items()
             + algorithm_items(result.notes, full=profile.name == "full"))
    _run_empirical(items, profile, seed, result, say)
    _exact_rows(result, say)
    _sensitivity_rows(profile, seed, result, say)
    _moment_rows(profile, seed, result, say)
    _accountant_rows(result, say)
    result.seconds = time.perf_counter() - t0
    result.cpu_seconds = time.process_time() - c0
    return result
