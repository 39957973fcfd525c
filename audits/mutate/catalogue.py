"""The mutants of the real code and how a mutant is located and applied.

Every entry names the file, the exact original line (``anchor``; leading/trailing
whitespace ignored, the mutated line keeps the original indentation), optionally a
unique ``after`` line that must precede it (the first match after it is taken), the
replacement, what the mutation breaks, and the checks that should kill it (default:
:data:`FILE_CHECKS` of the file). Check names are interpreted by
:mod:`audits.mutate.checks` (``audit:...``) or run as pytest paths (``pytest:...``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


class AnchorError(LookupError):
    """A mutant's anchor is missing or ambiguous in the tree (fails loudly)."""


_ACCOUNTING_TESTS = (
    "pytest:tests/accounting/test_filter.py tests/accounting/test_session.py "
    "tests/accounting/test_batch.py tests/accounting/test_conversion.py "
    "tests/accounting/test_planning.py tests/accounting/test_mechanisms.py"
)

#: Checks run, in order, for a mutant of each file (first failure kills it).
FILE_CHECKS: dict[str, tuple[str, ...]] = {
    "accounting/mechanisms.py": (
        "audit:mechanisms",
        "pytest:tests/accounting/test_mechanisms.py tests/accounting/test_samplers.py",
    ),
    "accounting/noise.py": (
        "audit:mechanisms",
        "pytest:tests/accounting/test_samplers.py tests/accounting/test_mechanisms.py",
    ),
    "accounting/filter.py": ("audit:accountant", "audit:filter", _ACCOUNTING_TESTS),
    "accounting/costs.py": ("audit:accountant", "audit:filter", "audit:mechanisms",
                            _ACCOUNTING_TESTS),
    "accounting/session.py": ("audit:filter", _ACCOUNTING_TESTS,
                              "pytest:tests/ledger/test_session.py"),
    "accounting/planning.py": ("audit:accountant", "audit:mechanisms", _ACCOUNTING_TESTS),
    "accounting/relations.py": ("audit:accountant", "audit:filter", _ACCOUNTING_TESTS),
    "accounting/gumbel.py": ("pytest:tests/accounting/test_exact_gumbel.py",),
    "accounting/flip.py": ("pytest:tests/accounting/test_exact_flip.py",),
    "dpcg/stats/registry.py": (
        "audit:sensitivity",
        "pytest:tests/stats/test_sensitivity_quick.py tests/stats/test_registry.py",
    ),
    "dpcg/private/laplace_pc.py": ("pytest:tests/private/test_laplace_pair.py",),
    "dpcg/private/priv_pc.py": ("pytest:tests/private/test_priv_pc_pair.py",
                                "pytest:tests/private/test_priv_pc_hub.py"),
    "dpcg/private/marginal_pc.py": ("pytest:tests/private/test_marginal_pc_select.py",),
    "dpcg/stats/marginals.py": ("pytest:tests/stats/test_marginals.py",),
    "dpcg/stats/suffstat.py": (
        "pytest:tests/continuous/test_cov_pc.py::test_rank_moment_sensitivity_holds "
        "tests/continuous/test_cov_pc.py::test_rank_moment_sensitivity_two_valued_holds "
        "tests/continuous/test_cov_pc.py::test_pearson_moment_sensitivity_holds",
    ),
    "dpcg/citests/crt_law.py": ("pytest:tests/continuous/test_crt_law.py",),
}


@dataclass(frozen=True)
class Mutant:
    id: str
    file: str
    anchor: str
    replacement: str
    breaks: str
    after: str | None = None
    #: for registry mutants: the statistic whose sensitivity audit is relevant
    statistic: str | None = None

    def checks(self) -> tuple[str, ...]:
        out = []
        for c in FILE_CHECKS[self.file]:
            if c == "audit:sensitivity" and self.statistic is not None:
                c = f"audit:sensitivity:{self.statistic}"
            out.append(c)
        return tuple(out)


def locate(text: str, mutant: Mutant) -> int:
    """0-based index of the line ``mutant`` replaces; :class:`AnchorError` if the
    anchor (or its ``after`` line) is missing or ambiguous."""
    lines = text.splitlines()
    start = 0
    if mutant.after is not None:
        hits = [i for i, ln in enumerate(lines) if ln.strip() == mutant.after.strip()]
        if len(hits) != 1:
            raise AnchorError(f"mutant {mutant.id}: 'after' line {mutant.after!r} found "
                              f"{len(hits)} times in {mutant.file} (need exactly 1)")
        start = hits[0] + 1
        for i in range(start, len(lines)):
            if lines[i].strip() == mutant.anchor.strip():
                return i
        raise AnchorError(f"mutant {mutant.id}: anchor {mutant.anchor!r} not found after "
                          f"{mutant.after!r} in {mutant.file}")
    hits = [i for i, ln in enumerate(lines) if ln.strip() == mutant.anchor.strip()]
    if len(hits) != 1:
        raise AnchorError(f"mutant {mutant.id}: anchor {mutant.anchor!r} found {len(hits)} "
                          f"times in {mutant.file} (need exactly 1)")
    return hits[0]


def apply(root: Path, mutant: Mutant) -> tuple[int, str]:
    """Write ``mutant`` into the tree at ``root`` (a COPY); returns ``(line number
    (1-based), original text)`` so the caller can restore the file."""
    path = root / mutant.file
    original = path.read_text()
    i = locate(original, mutant)
    lines = original.splitlines(keepends=True)
    line = lines[i]
    indent = line[: len(line) - len(line.lstrip())]
    ending = "\n" if line.endswith("\n") else ""
    if mutant.replacement.strip() == line.strip():
        raise AnchorError(f"mutant {mutant.id}: the replacement equals the original line")
    lines[i] = indent + mutant.replacement.strip() + ending
    path.write_text("".join(lines))
    return i + 1, original


M = Mutant
MECH = "accounting/mechanisms.py"
REG = "dpcg/stats/registry.py"

#: The mutants (ids are stable; the table in docs/audit-report.md refers to them).
MUTANTS: tuple[Mutant, ...] = (
    # -- mechanisms: noise scales --------------------------------------------------
    M("laplace-grid-half-noise", MECH,
      "return LaplaceGrid.build(self.sensitivity, self.epsilon, dimension)",
      "return LaplaceGrid.build(self.sensitivity, 2.0 * self.epsilon, dimension)",
      "Laplace (default grid sampler) draws noise of half the scale: 2 eps-DP"),
    M("laplace-float-half-scale", MECH,
      "return self.sensitivity / self.epsilon",
      "return self.sensitivity / (2.0 * self.epsilon)",
      "Laplace.scale halved (float sampler): 2 eps-DP", after="class Laplace:"),
    M("laplace-half-charge", MECH,
      "return Cost.pure(self.epsilon_under(relation))",
      "return Cost.pure(self.epsilon_under(relation) / 2)",
      "Laplace charges half its epsilon", after="class Laplace:"),
    M("gaussian-half-sigma", MECH,
      "return GaussianGrid.build(self.l2_sensitivity, self.sigma, dimension)",
      "return GaussianGrid.build(self.l2_sensitivity, self.sigma / 2, dimension)",
      "Gaussian (default discrete sampler) draws noise of half its sigma (4 x its rho)"),
    M("gaussian-half-rho-charge", MECH,
      "return d2 * d2 / (2 * s * s)",
      "return d2 * d2 / (4 * s * s)",
      "Gaussian charges rho = Delta^2/(4 sigma^2), half its zCDP cost"),
    M("rnm-half-scale", MECH,
      "return 2.0 * self.sensitivity / self.epsilon",
      "return self.sensitivity / self.epsilon",
      "report-noisy-max noise Expo/Gumbel(Delta/eps) instead of 2 Delta/eps: 2 eps-DP"),
    M("exponential-double-logits", MECH,
      "logits = self.epsilon * u / (2.0 * self.sensitivity)",
      "logits = self.epsilon * u / self.sensitivity",
      "exponential mechanism samples with eps u / Delta (forgets the 2): 2 eps-DP",
      after="def _noisy(self, u: FloatArray, rng: np.random.Generator, size: int | None) "
            "-> Keys:"),
    M("topk-double-logits", MECH,
      "logits = self.epsilon * u / (2.0 * self.sensitivity)",
      "logits = self.epsilon * u / self.sensitivity",
      "top-k keys eps u / Delta + Gumbel (Gumbel scale Delta/eps; monotone utilities "
      "only): 2 k eps-DP",
      after="def _keys(self, u: FloatArray, rng: np.random.Generator, size: int | None) "
            "-> Keys:"),
    M("topk-charges-one-selection", MECH,
      "return Cost.pure(self.epsilon_under(relation), bounded_range=True).times(self.k)",
      "return Cost.pure(self.epsilon_under(relation), bounded_range=True)",
      "top-k charges eps (one selection) instead of k eps"),
    M("svt-unnoised-threshold", MECH,
      "return base + self.grid_threshold.noise(rng, size).astype(np.float64)",
      "return base + np.zeros(size)",
      "sparse vector compares with the exact threshold (no threshold noise)"),
    M("svt-query-noise-forgets-2c", MECH,
      "mult = self.cutoff if self.monotone else 2 * self.cutoff",
      "mult = self.cutoff",
      "SVT query noise Lap(c Delta/eps2) for non-monotone queries (needs 2c)"),
    M("subsampled-svt-rate-halved", MECH,
      "amplified = math.log1p((self.m / self.n) * math.expm1(base_eps))",
      "amplified = math.log1p((self.m / (2 * self.n)) * math.expm1(base_eps))",
      "subsampled SVT amplifies with the rate m/(2n) instead of m/n"),
    M("smooth-median-half-noise", MECH,
      "return self.median(v) + (2.0 * s / self.epsilon) * rng.laplace(0.0, 1.0, _size(size))",
      "return self.median(v) + (s / self.epsilon) * rng.laplace(0.0, 1.0, _size(size))",
      "smooth-sensitivity median noise scale S/eps instead of 2 S/eps"),
    # -- noise: the exact discrete samplers ----------------------------------------
    M("laplace-grid-uncharged-step", "accounting/noise.py",
      "grid_sens = multiplier * (math.floor(delta_q / g) + dimension)",
      "grid_sens = multiplier * math.floor(delta_q / g) // 2",
      "discrete Laplace grid scale computed from half the sensitivity in grid steps"),
    # -- filter ----------------------------------------------------------------------
    M("filter-flipped-epsilon", "accounting/filter.py",
      "total.epsilon <= self.budget.epsilon_exact",
      "total.epsilon >= self.budget.epsilon_exact",
      "basic rule admits a total epsilon ABOVE the budget (comparison flipped)"),
    M("filter-forgets-delta", "accounting/filter.py",
      "and total.delta <= self.budget.delta_exact",
      "and True",
      "basic rule never checks the delta total"),
    M("filter-zcdp-double-rho", "accounting/filter.py",
      "return total.rho <= self._rho_budget",
      "return total.rho <= 2 * self._rho_budget",
      "zcdp rule admits twice the rho budget"),
    M("filter-commit-skipped", "accounting/filter.py",
      "self._spent = total",
      "self._spent = self._spent",
      "PrivacyFilter.commit never adds the admitted cost (a skipped charge)",
      after="def commit(self, cost: Cost) -> None:"),
    M("filter-refusal-does-not-halt", "accounting/filter.py",
      "self._halted = True",
      "pass",
      "a budget refusal does not halt the filter (later, cheaper releases still admitted)",
      after="def check(self, cost: Cost, what: str = \"mechanism\") -> None:"),
    # -- costs -------------------------------------------------------------------------
    M("cost-pure-to-zcdp-wrong", "accounting/costs.py",
      "rho = e * e / (8 if bounded_range else 2)",
      "rho = e * e / (8 if bounded_range else 4)",
      "pure eps-DP converted to rho = eps^2/4 (Bun-Steinke: eps^2/2)"),
    M("cost-add-forgets-delta", "accounting/costs.py",
      "delta = _opt_add(self.delta, other.delta)",
      "delta = self.delta",
      "composition (Cost + Cost) forgets the second delta"),
    M("cost-times-forgets-delta", "accounting/costs.py",
      "self.delta * k,",
      "self.delta,",
      "k-fold composition charges delta once"),
    M("zcdp-conversion-bun-steinke-wrong", "accounting/costs.py",
      "bun_steinke = (r + 2.0 * root) * (1.0 + CONVERSION_SLACK)",
      "bun_steinke = (r + root) * (1.0 + CONVERSION_SLACK)",
      "zCDP -> (eps, delta) conversion rho + sqrt(rho ln 1/delta) (drops the 2)"),
    M("zcdp-conversion-renyi-wrong", "accounting/costs.py",
      "t1 = alpha * rho",
      "t1 = rho",
      "Renyi conversion uses tau = rho instead of alpha rho"),
    # -- session -----------------------------------------------------------------------
    M("session-release-uncharged", "accounting/session.py",
      "self._filter.commit(cost)",
      "pass",
      "Session._admit records the entry but never charges the filter"),
    M("session-batch-half-charged", "accounting/session.py",
      "self._filter.commit_prefix(costs)",
      "self._filter.commit_prefix(costs[: len(costs) // 2])",
      "release_many charges only the first half of an admitted batch",
      after="sequences = self._record_batch(items, costs)"),
    # -- planning / relations ------------------------------------------------------------
    M("planning-gaussian-rho-doubled", "accounting/planning.py",
      "return Gaussian.for_rho(l2_sensitivity, split_rho(b.rho(), _k(k)), relation=relation)",
      "return Gaussian.for_rho(l2_sensitivity, split_rho(2 * b.rho(), _k(k)), "
      "relation=relation)",
      "the zcdp plan gives each test twice its share of rho"),
    M("relation-factor-forgotten", "accounting/relations.py",
      "return 2.0 * sensitivity_ar",
      "return sensitivity_ar",
      "add/remove -> replace-one conversion keeps the sensitivity (needs 2x)"),
    # -- registered bounds of the private statistics --------------------------------------
    M("n-cmi-r1-halved", REG,
      "return 2.0 * g_increment(_int_param(\"n\", n, 1) - 1)",
      "return g_increment(_int_param(\"n\", n, 1) - 1)",
      "n-CMI replace-one sensitivity halved", statistic="n-cmi"),
    M("tau-a-r1-priv-pc", REG,
      "return 4.0 / _int_param(\"n\", n, 2)",
      "return 2.0 / _int_param(\"n\", n, 2)",
      "Kendall tau_a replace-one sensitivity 2/n (half the proven 4/n)",
      statistic="kendall-tau-a"),
    M("ckz-r1-halved", REG,
      "return 2.0 * c_u / math.sqrt(w)",
      "return c_u / math.sqrt(w)",
      "conditional Kendall z replace-one sensitivity halved (public normaliser case)",
      statistic="conditional-kendall-z"),
    M("ckz-cu-binary-halved", REG,
      "return 9.0 / 4.0 * (3.0 - 1.0 / (c - 1))",
      "return 9.0 / 8.0 * (3.0 - 1.0 / (c - 1))",
      "c_U(c) of the categorical/split Kendall z halved",
      statistic="conditional-kendall-z-categorical"),
    M("skz-marginal-halved", REG,
      "return SPLIT_U_WITHIN_STRATUM / math.sqrt(_pos_param(\"w0\", w0))",
      "return SPLIT_U_WITHIN_STRATUM / 2.0 / math.sqrt(_pos_param(\"w0\", w0))",
      "split Kendall z given the empty set: replace-one sensitivity halved (1.5/sqrt(n))",
      statistic="split-kendall-z-marginal"),
    M("spearman-z-halved", REG,
      "return 2.0 * SPEARMAN_U_ADD_REMOVE / math.sqrt(_int_param(\"n\", n, 1))",
      "return SPEARMAN_U_ADD_REMOVE / math.sqrt(_int_param(\"n\", n, 1))",
      "conditional Spearman z replace-one sensitivity halved",
      statistic="conditional-spearman-z"),
    # -- per-pair releases of the private PC variants ----------------------------------
    M("laplace-pc-pair-min-doubled", "dpcg/private/laplace_pc.py",
      "return min(src.score(x, y, S) - src.threshold(x, y, S) for S in sets[(x, y)])",
      "return 2.0 * min(src.score(x, y, S) - src.threshold(x, y, S) for S in sets[(x, y)])",
      "Laplace-PC's per-pair release is twice the minimum margin at the pair's bound "
      "(2 x its sensitivity, charged as 1 x)"),
    M("priv-pc-pair-pick-half-sensitivity", "dpcg/private/priv_pc.py",
      "Exponential(sens, e_p),",
      "Exponential(sens / 2.0, e_p),",
      "Priv-PC's separating-set pick declares half the pair's bound (2 x its epsilon)"),
    M("priv-pc-hub-check-half-sensitivity", "dpcg/private/priv_pc.py",
      "Laplace(1.0 / clip, plan.check_epsilon), density,",
      "Laplace(0.5 / clip, plan.check_epsilon), density,",
      "Priv-PC's hub check declares half the clipped mean's sensitivity 1/clip "
      "(2 x its epsilon)"),
    # -- shared releases (Marginal-PC's tables, cov-pc's moments, PrivCRT's law) -------
    M("marginal-joint-l2-halved", "dpcg/stats/marginals.py",
      "return d", "return d / 2.0",
      "Marginal-PC's joint release of T count tables declares L2 sensitivity "
      "sqrt(2T)/2 (the proven bound is sqrt(2T), attained)",
      after="def joint_table_l2(tables: int) -> float:"),
    M("marginal-select-steps-per-node-once", "dpcg/private/marginal_pc.py",
      'steps = p * select_k + (global_k if params.select_by == "both" else 0)',
      'steps = select_k + (global_k if params.select_by == "both" else 0)',
      "Marginal-PC's per-node level-0 selection plans its step epsilon as if one node "
      "released (p releases of k steps each are made): the selection spends about p "
      "times its share"),
    M("cov-rank-moment-l2-halved", "dpcg/stats/suffstat.py",
      "return math.sqrt(off * off + diag2) / (n * half2)",
      "return math.sqrt(off * off + diag2) / (2.0 * n * half2)",
      "cov-pc's rank-route moment vector: replace-one L2 bound halved"),
    M("cov-pearson-moment-l2-halved", "dpcg/stats/suffstat.py",
      "return math.sqrt((q + 1.0) ** 2 + q / 2.0) / n",
      "return math.sqrt((q + 1.0) ** 2 + q / 2.0) / (2.0 * n)",
      "cov-pc's Pearson-route moment vector: replace-one L2 bound halved"),
    M("crt-law-l1-halved", "dpcg/citests/crt_law.py",
      "return float(q) * (float(q) + 2.0) / float(n)",
      "return float(q) * (float(q) + 2.0) / (2.0 * float(n))",
      "PrivCRT's released model-X law: the moment vector's replace-one L1 bound "
      "q(q+2)/n halved"),
    M("exact-gumbel-keeps-float-order", "accounting/gumbel.py",
      "return sorted(members, key=lambda r: bounds[r][0], reverse=True)",
      "return members",
      "an undecided cluster of Gumbel keys keeps its float order instead of the exact "
      "one: the exponential mechanism's law is not exact where the float keys decide "
      "wrongly"),
    M("exact-flip-first-order-coin", "accounting/flip.py",
      "return k % 2 == 1",
      "return k == 1",
      "permute-and-flip's Bernoulli(exp(-x)) coin stops after its first draw: heads with "
      "probability 1 - x, a first-order approximation of exp(-x), so report-noisy-max "
      "with exponential noise (PrivCRT's selection) no longer has the permute-and-flip law"),
)
