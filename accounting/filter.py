"""Privacy filters: budget enforcement valid under fully adaptive composition.

A filter sees the declared cost of each mechanism *before* it runs (a function of
public parameters only) and admits it iff the running total stays within the budget
under the run's rule:

* ``"basic"``: ``sum eps_i <= eps_B`` and ``sum delta_i <= delta_B`` (exact Fraction
  sums). Valid for adaptively chosen (eps_i, delta_i) by Rogers, Roth, Ullman &
  Vadhan 2016 (privacy filters for basic composition).
* ``"zcdp"``: ``sum rho_i <= Budget.rho()``, the largest rho whose conversion
  (:func:`accounting.costs.zcdp_to_epsilon`: the smaller of the Bun-Steinke and the
  Canonne-Kamath-Steinke Renyi bounds) fits (eps_B, delta_B). Valid for adaptively chosen
  rho_i by Feldman & Zrnic 2021 (Rényi filters) and Whitehouse et al. 2023.

A mechanism without a bound of the rule's kind (Gaussian under ``basic``; the smooth
median under ``zcdp``) is refused with :class:`InvalidParameterError` (a usage error:
nothing is charged and the filter is not halted). A refusal for lack of budget raises
:class:`BudgetExceededError` and halts the filter: afterwards it admits nothing
(:class:`SessionHaltedError`). Proof note: ``docs/privacy/costs-and-filter.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from accounting.costs import Budget, Cost
from accounting.errors import BudgetExceededError, InvalidParameterError, SessionHaltedError

RULES = ("basic", "zcdp")


def check_rule(rule: object) -> str:
    if rule not in RULES:
        raise InvalidParameterError("rule", rule, f"expected one of {RULES}")
    return str(rule)


@dataclass
class PrivacyFilter:
    """Running total of admitted declared costs against one budget under one rule."""

    budget: Budget
    rule: str = "basic"
    _spent: Cost = field(default_factory=Cost.zero, init=False)
    _halted: bool = field(default=False, init=False)
    _rho_budget: Fraction | None = field(default=None, init=False)
    _admitted: int = field(default=0, init=False)
    #: ``(cost, spent + cost)`` of the last successful :meth:`check` (reused by commit)
    _checked: tuple[Cost, Cost] | None = field(default=None, init=False, repr=False)
    #: ``(costs, total)`` of the last :meth:`fitting_prefix` (reused by commit_prefix)
    _checked_prefix: tuple[list[Cost], Cost] | None = field(default=None, init=False,
                                                            repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.budget, Budget):
            raise InvalidParameterError("budget", self.budget, "must be an accounting.Budget")
        self.rule = check_rule(self.rule)
        if self.rule == "zcdp":
            if self.budget.delta <= 0:
                raise InvalidParameterError(
                    "delta", self.budget.delta, "the zcdp rule needs a budget with delta > 0"
                )
            self._rho_budget = self.budget.rho()

    # -- state ----------------------------------------------------------------------
    @property
    def halted(self) -> bool:
        return self._halted

    @property
    def admitted(self) -> int:
        """Number of admitted mechanisms."""
        return self._admitted

    @property
    def rho_budget(self) -> Fraction | None:
        """``Budget.rho()`` under the zcdp rule, ``None`` under basic."""
        return self._rho_budget

    def spent(self) -> Cost:
        """Exact sum of the declared costs admitted so far."""
        return self._spent

    def remaining(self) -> Cost:
        """What is left under the rule (exact).

        ``basic``: ``Cost(eps_B - sum eps, delta_B - sum delta, rho=None)``;
        ``zcdp``: ``Cost(None, 0, rho_B - sum rho)``.
        """
        if self.rule == "basic":
            assert self._spent.epsilon is not None
            return Cost(
                self.budget.epsilon_exact - self._spent.epsilon,
                self.budget.delta_exact - self._spent.delta,
                None,
            )
        assert self._rho_budget is not None
        assert self._spent.rho is not None
        return Cost(None, Fraction(0), self._rho_budget - self._spent.rho)

    # -- admission ------------------------------------------------------------------
    def check_applicable(self, cost: Cost, what: str = "mechanism") -> None:
        """Raise :class:`InvalidParameterError` if ``cost`` has no bound of the rule's kind."""
        if not isinstance(cost, Cost):
            raise InvalidParameterError("cost", cost, "must be an accounting.Cost")
        if self.rule == "basic" and cost.epsilon is None:
            raise InvalidParameterError(
                "rule",
                self.rule,
                f"{what} has no (eps, delta) bound (e.g. Gaussian): run it under rule='zcdp'",
            )
        if self.rule == "zcdp" and cost.rho is None:
            raise InvalidParameterError(
                "rule",
                self.rule,
                f"{what} has no zCDP bound (e.g. the smooth-sensitivity median): run it "
                "under rule='basic'",
            )

    def fits(self, cost: Cost) -> bool:
        """Would ``cost`` be admitted now? (No state change; False when halted.)"""
        if self._halted:
            return False
        self.check_applicable(cost)
        return self._within(self._spent + cost)

    def _within(self, total: Cost) -> bool:
        """Whether a running total ``total`` is within the budget under the rule."""
        if self.rule == "basic":
            assert total.epsilon is not None
            return (
                total.epsilon <= self.budget.epsilon_exact
                and total.delta <= self.budget.delta_exact
            )
        assert total.rho is not None
        assert self._rho_budget is not None
        return total.rho <= self._rho_budget

    def fitting_prefix(self, costs: Sequence[Cost]) -> int:
        """How many of ``costs``, admitted one after another in order, would fit now
        (0 when halted). No state change other than remembering the totals for
        :meth:`commit_prefix`.

        Costs are non-negative, so the running total only grows: the admitted ones are
        exactly the longest prefix whose total is within the budget, as with
        :meth:`check` called on each in turn up to the first refusal.
        """
        if self._halted:
            return 0
        total = self._spent
        fitted: list[Cost] = []
        for cost in costs:
            self.check_applicable(cost)
            nxt = total + cost
            if not self._within(nxt):
                break
            fitted.append(cost)
            total = nxt
        self._checked_prefix = (fitted, total)
        return len(fitted)

    def commit_prefix(self, costs: Sequence[Cost]) -> None:
        """Add the admitted ``costs`` (a prefix :meth:`fitting_prefix` admitted, with no
        admission in between) to the running total at once."""
        if self._halted:
            raise SessionHaltedError("the privacy filter is halted; it admits nothing more")
        checked, self._checked_prefix = self._checked_prefix, None
        self._checked = None
        if checked is not None and len(checked[0]) == len(costs) and all(
                a is b for a, b in zip(checked[0], costs, strict=True)):
            total = checked[1]
        else:
            total = self._spent
            for cost in costs:
                self.check_applicable(cost)
                total = total + cost
        if not self._within(total):  # defensive: commit only what fits
            raise BudgetExceededError("commit of costs that do not fit")
        self._spent = total
        self._admitted += len(costs)

    def check(self, cost: Cost, what: str = "mechanism") -> None:
        """Raise unless ``cost`` is admissible; a budget refusal halts the filter."""
        if self._halted:
            raise SessionHaltedError("the privacy filter is halted; it admits nothing more")
        self.check_applicable(cost, what)
        total = self._spent + cost
        if not self._within(total):
            self._halted = True
            raise BudgetExceededError(
                f"{what} refused: its cost {cost.summary()} exceeds the remaining budget "
                f"{self.remaining().summary()} under rule {self.rule!r}; the run is halted"
            )
        self._checked = (cost, total)

    def commit(self, cost: Cost) -> None:
        """Add an admitted ``cost`` to the running total (after :meth:`check`)."""
        if self._halted:
            raise SessionHaltedError("the privacy filter is halted; it admits nothing more")
        self.check_applicable(cost)
        checked, self._checked = self._checked, None
        # check() just computed the total from the same running total
        total = checked[1] if checked is not None and checked[0] is cost else self._spent + cost
        if not self._within(total):  # defensive: commit only what check admitted
            raise BudgetExceededError("commit of a cost that does not fit")
        self._spent = total
        self._admitted += 1

    def admit(self, cost: Cost, what: str = "mechanism") -> None:
        """:meth:`check` then :meth:`commit`."""
        self.check(cost, what)
        self.commit(cost)

    def halt(self) -> None:
        self._halted = True
