"""Audits of the REAL accounting path: the filter, the session and the charged costs.

The empirical audits measure what a mechanism leaks; these checks measure what the
accounting *charges* and *admits* against facts that do not come from the code under
test:

* **budget exhaustion** (basic rule): a session at budget ``eps`` admits exactly ``k``
  releases of ``split_epsilon(eps, k)``, refuses the next with
  :class:`BudgetExceededError`, then admits nothing (halted), and ``spent`` is the
  exact sum; the same through ``release_many`` (batched admission);
* **delta totals**: approximate-DP releases whose deltas exceed the budget's delta are
  refused even when their epsilons fit;
* **zcdp rule**: ``k`` Gaussian releases of ``gaussian_plan(budget, k)`` are admitted,
  the next refused, and the admitted total, converted back with the Gaussian's exact
  privacy-loss distribution (dp-accounting PLD of ``k`` compositions at sigma), is at
  most the budget's epsilon at its delta;
* **charged rho vs Renyi divergence**: the rho charged for a Gaussian and for a pure
  ``eps``-DP Laplace release is at least ``sup_alpha D_alpha(P||Q)/alpha`` of the
  mechanism's output distributions on neighbouring inputs (closed forms: Gaussian
  ``alpha Delta^2/(2 sigma^2)``; Laplace, Mironov 2017, Prop. 6);
* **relation conversion**: a Laplace release declared under add/remove and charged
  under replace-one costs at least the group-privacy epsilon ``2 eps`` (a replacement
  moves an add/remove-``Delta`` statistic by up to ``2 Delta``: empirical loss
  ``2 eps`` at the fixture ``f(D) = 0``, ``f(D') = 2 Delta``).

Each check returns :class:`audits.accountant.CheckResult`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np

from audits.accountant import CheckResult


def _session(eps: float, delta: float = 0.0, rule: str = "basic") -> object:
    from accounting import Budget
    from accounting.session import Session

    return Session(Budget(eps, delta), rule=rule, seed=1)


def check_basic_exhaustion() -> CheckResult:
    from accounting.costs import split_epsilon
    from accounting.errors import BudgetExceededError, SessionHaltedError
    from accounting.mechanisms import Laplace

    name = "filter: basic rule admits exactly k releases of eps/k, then halts"
    problems: list[str] = []
    for eps, k in ((1.0, 10), (0.3, 7), (2.0, 3)):
        for batched in (False, True):
            s = _session(eps)
            mech = Laplace(1.0, split_epsilon(eps, k))
            admitted = 0
            if batched:
                out = s.release_many([(mech, lambda: 0.0, "t")] * (k + 1))  # type: ignore[attr-defined]
                admitted = len(out)
            else:
                for _ in range(k):
                    s.release(mech, lambda: 0.0, purpose="t")  # type: ignore[attr-defined]
                    admitted += 1
                try:
                    s.release(mech, lambda: 0.0, purpose="t")  # type: ignore[attr-defined]
                    problems.append(f"eps={eps}, k={k}: release k+1 admitted")
                except BudgetExceededError:
                    pass
            spent = s.spent().epsilon  # type: ignore[attr-defined]
            want = Fraction(mech.epsilon) * k
            if admitted != k:
                problems.append(f"eps={eps}, k={k}, batched={batched}: {admitted} admitted")
            if spent != want:
                problems.append(f"eps={eps}, k={k}, batched={batched}: spent {spent} != {want}")
            if spent is None or spent > Fraction(eps):
                problems.append(f"eps={eps}, k={k}: spent {spent} above the budget")
            try:
                s.release(Laplace(1.0, 1e-9), lambda: 0.0, purpose="t")  # type: ignore[attr-defined]
                problems.append(f"eps={eps}, k={k}, batched={batched}: admitted after a refusal")
            except (BudgetExceededError, SessionHaltedError):
                pass
    # a refusal halts the run even when a cheaper release would still fit
    s = _session(1.0)
    s.release(Laplace(1.0, 0.6), lambda: 0.0, purpose="t")  # type: ignore[attr-defined]
    for what, eps_next in (("refused", 0.6), ("after the refusal", 0.1)):
        try:
            s.release(Laplace(1.0, eps_next), lambda: 0.0, purpose="t")  # type: ignore[attr-defined]
            problems.append(f"budget 1, spent 0.6: release of {eps_next} {what} was admitted")
        except (BudgetExceededError, SessionHaltedError):
            pass
    return CheckResult(name, not problems, "; ".join(problems) or
                       "(1, 10), (0.3, 7), (2, 3), one at a time and batched: exactly k admitted, "
                       "spent = k x eps/k exactly; after a refusal of 0.6 at spent 0.6 of 1, a "
                       "0.1 release is refused too (halted)")


def check_delta_total() -> CheckResult:
    from accounting.errors import BudgetExceededError
    from accounting.mechanisms import SmoothSensitivityMedian

    name = "filter: deltas add up and are enforced"
    s = _session(1.0, 1.5e-3)
    m = SmoothSensitivityMedian(0.1, 1e-3, 0.0, 1.0)
    s.release(m, lambda: np.array([0.0, 1.0, 0.5]), purpose="t")  # type: ignore[attr-defined]
    spent = s.spent()  # type: ignore[attr-defined]
    problems = []
    if spent.delta != Fraction(1e-3):
        problems.append(f"delta spent {spent.delta} != 1e-3")
    try:
        s.release(m, lambda: np.array([0.0, 1.0, 0.5]), purpose="t")  # type: ignore[attr-defined]
        problems.append("second release admitted: delta total 2e-3 > 1.5e-3")
    except BudgetExceededError:
        pass
    from accounting.costs import Cost

    c = Cost.approximate(0.1, 1e-3)
    if (c + c).delta != Fraction(1e-3) * 2 or c.times(3).delta != Fraction(1e-3) * 3:
        problems.append("Cost composition does not add deltas")
    return CheckResult(name, not problems, "; ".join(problems) or
                       "two (0.1, 1e-3) releases against (1, 1.5e-3): the second is refused; "
                       "Cost + and times add deltas")


def check_zcdp_exhaustion() -> CheckResult:
    from dp_accounting.pld import privacy_loss_distribution as pld

    from accounting import Budget
    from accounting.errors import BudgetExceededError
    from accounting.planning import gaussian_plan

    name = "filter: zcdp rule admits k Gaussians whose exact PLD loss fits the budget"
    problems = []
    details = []
    for eps, delta, k in ((1.0, 1e-6, 8), (0.5, 1e-3, 3)):
        s = _session(eps, delta, "zcdp")
        mech = gaussian_plan(Budget(eps, delta), k, 1.0)
        for _ in range(k):
            s.release(mech, lambda: 0.0, purpose="t")  # type: ignore[attr-defined]
        try:
            s.release(mech, lambda: 0.0, purpose="t")  # type: ignore[attr-defined]
            problems.append(f"({eps}, {delta}, k={k}): release k+1 admitted")
        except BudgetExceededError:
            pass
        # exact loss of k Gaussian releases at sigma (Delta = 1), pessimistic PLD
        p = pld.from_gaussian_mechanism(mech.sigma, sensitivity=1.0,
                                        value_discretization_interval=1e-4).self_compose(k)
        true_eps = float(p.get_epsilon_for_delta(delta))
        details.append(f"({eps:g}, {delta:g}) k={k}: PLD eps {true_eps:.4f}")
        if true_eps > eps:
            problems.append(f"({eps}, {delta}, k={k}): {k} admitted Gaussians have PLD eps "
                            f"{true_eps:.4f} > {eps}")
    return CheckResult(name, not problems, "; ".join(problems) or "; ".join(details))


def _laplace_renyi(alpha: float, eps: float) -> float:
    """Renyi divergence of order alpha between Lap(0, 1/eps) and Lap(1, 1/eps)
    (Mironov 2017, Prop. 6), for alpha > 1."""
    a = alpha
    return float(np.logaddexp(math.log(a / (2 * a - 1)) + (a - 1) * eps,
                              math.log((a - 1) / (2 * a - 1)) - a * eps) / (a - 1))


def check_charged_rho() -> CheckResult:
    from accounting.mechanisms import Gaussian, Laplace
    from accounting.relations import Relation

    name = "costs: charged rho >= sup_alpha D_alpha / alpha (Gaussian, Laplace)"
    problems = []
    alphas = np.r_[1.0 + np.logspace(-4, 3, 400)]
    for sigma in (0.5, 1.0, 3.0):
        rho = Gaussian(1.0, sigma).cost(Relation.REPLACE_ONE).rho
        need = 1.0 / (2 * sigma * sigma)  # D_alpha / alpha for the Gaussian
        if rho is None or float(rho) < need * (1 - 1e-12):
            problems.append(f"Gaussian sigma={sigma}: charged rho {rho} < {need:.6g}")
    for eps in (0.1, 1.0, 3.0):
        rho = Laplace(1.0, eps).cost(Relation.REPLACE_ONE).rho
        need = max(_laplace_renyi(float(a), eps) / float(a) for a in alphas)
        if rho is None or float(rho) < need * (1 - 1e-9):
            problems.append(f"Laplace eps={eps}: charged rho {float(rho or 0):.6g} < "
                            f"sup D_alpha/alpha {need:.6g}")
    return CheckResult(name, not problems, "; ".join(problems) or
                       "Gaussian sigma in (0.5, 1, 3); Laplace eps in (0.1, 1, 3)")


def check_relation_charge() -> CheckResult:
    from accounting.mechanisms import Laplace
    from accounting.relations import Relation

    name = "relations: add/remove Laplace charged under replace-one pays group privacy"
    problems = []
    for eps in (0.25, 1.0):
        m = Laplace(1.0, eps, relation=Relation.ADD_REMOVE)
        charged = m.cost(Relation.REPLACE_ONE).epsilon
        # a replacement moves the add/remove-sensitivity-1 statistic by up to 2: the
        # Laplace(1/eps) release then has loss exactly 2 eps
        if charged is None or float(charged) < 2 * eps * (1 - 1e-12):
            problems.append(f"eps={eps}: charged {charged} under replace-one < loss {2 * eps}")
        rho = m.cost(Relation.REPLACE_ONE).rho
        if rho is None or float(rho) < 2 * eps * eps * (1 - 1e-12):
            problems.append(f"eps={eps}: rho {rho} under replace-one < (2 eps)^2/2")
    return CheckResult(name, not problems, "; ".join(problems) or
                       "eps in (0.25, 1): charged 2 eps (rho 2 eps^2) under replace-one")


ALL_CHECKS: tuple[Callable[[], CheckResult], ...] = (
    check_basic_exhaustion,
    check_delta_total,
    check_zcdp_exhaustion,
    check_charged_rho,
    check_relation_charge,
)


def run_all() -> list[CheckResult]:
    out = []
    for c in ALL_CHECKS:
        try:
            out.append(c())
        except Exception as exc:  # a crash of the accounting path is a failed check
            out.append(CheckResult(c.__name__, False, f"raised {type(exc).__name__}: {exc}"))
    return out
