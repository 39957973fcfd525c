"""A privacy session: one run's filter, generator and ledger recorder.

Every release follows the same order (``docs/internals.md``)::

    validate -> filter admits (declared cost, public information only)
             -> recorder.record(entry) (durable)
             -> compute() (the only place the data is touched)
             -> add noise -> return

* A refusal for lack of budget raises :class:`BudgetExceededError` and halts the
  session: any later call raises :class:`SessionHaltedError`. ``compute`` is never
  called for a refused mechanism.
* A recorder failure (e.g. :class:`LedgerError`) releases nothing and charges nothing
  in the session; the session halts, because the ledger can no longer be trusted to
  hold every release.
* If ``compute()`` raises (or returns a non-finite / mis-shaped statistic, which raises
  :class:`~accounting.errors.StatisticError`), the mechanism stays charged: its entry
  was already durable. Nothing is released.
* Stateful mechanisms (:class:`SparseVector`, :class:`SubsampledSparseVector`) are
  charged in full when :meth:`Session.start` admits them, and return a
  :class:`~accounting.mechanisms.SparseVectorRun`.

Proof note of the filter rules: ``docs/privacy/costs-and-filter.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, cast

import numpy as np

from accounting.costs import Budget, Cost, round_up, zcdp_to_epsilon
from accounting.entries import RUN_STATUSES, EntryDraft, JSONValue, RunRecorder
from accounting.errors import InvalidParameterError, LedgerError, SessionHaltedError
from accounting.filter import PrivacyFilter, check_rule
from accounting.mechanisms import (
    MECHANISMS,
    Mechanism,
    OneShotMechanism,
    SparseVector,
    SparseVectorRun,
    SubsampledSparseVector,
)
from accounting.noise import make_generator
from accounting.relations import Relation

STATEFUL = (SparseVector, SubsampledSparseVector)

#: One request of :meth:`Session.release_many`: ``(mechanism, compute, purpose)``, with
#: ``compute=None`` for a stateful mechanism (started).
ReleaseRequest = tuple[Mechanism, Callable[[], Any] | None, str]


@dataclass(frozen=True)
class Guarantee:
    """The end-to-end guarantee of a run: ``(epsilon, delta)``-DP under ``relation``,
    enforced by ``rule`` under fully adaptive composition. Equal to the budget."""

    epsilon: float
    delta: float
    relation: Relation
    rule: str

    def as_dict(self) -> dict[str, JSONValue]:
        return {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "relation": self.relation.value,
            "rule": self.rule,
        }


def _float_up(q: Fraction) -> float | None:
    try:
        return round_up(q)
    except OverflowError:
        return None


def spent_summary(rule: str, budget_epsilon: Fraction, budget_delta: Fraction,
                  spent: Cost) -> dict[str, JSONValue]:
    """A run's spent budget stated the way its rule accounts for it (one function for
    ``result.json``, ``dpcg ledger show`` and the ledger's reports).

    * ``basic``: ``epsilon`` and ``delta`` are the exact sums of the admitted
      mechanisms' ``(eps, delta)``, the quantities the basic filter bounds.
    * ``zcdp``: ``rho`` is the exact sum of the admitted mechanisms' rho (plus
      ``mechanism_delta``, the sum of their own deltas, usually 0); ``epsilon`` is its
      conversion :func:`~accounting.costs.zcdp_to_epsilon` at ``delta`` = the run's delta
      less ``mechanism_delta`` (rounded up; ``None`` when no delta is left or the bound
      overflows). Never the plain sum of the mechanisms' pure epsilons: under zCDP that
      sum is not a bound the run is accounted by (svt-pc at eps 1 has pure costs summing
      to 4.4 while it spends rho within ``Budget.rho()``, i.e. at most eps 1).

    ``guarantee`` is the run's stated guarantee: its budget ``(eps, delta)`` under the
    rule, which the filter enforces under full adaptivity. The spent figures are what was
    used of it (realized amounts, not a separate guarantee: a run that stops early is
    still ``guarantee``-DP). Exact values are ``"p/q"`` strings; ``*_float`` are rounded
    up for display.
    """
    check_rule(rule)
    out: dict[str, JSONValue] = {
        "rule": rule,
        "guarantee": {"epsilon": _float_up(budget_epsilon), "delta": _float_up(budget_delta)},
    }
    if rule == "basic":
        eps = spent.epsilon
        out.update({
            "epsilon": None if eps is None else str(eps),
            "delta": str(spent.delta),
            "epsilon_float": None if eps is None else _float_up(eps),
            "delta_float": _float_up(spent.delta),
        })
        return out
    rho = spent.rho
    slack = budget_delta - spent.delta
    converted: float | None = None
    if rho is not None and slack > 0:
        try:
            converted = _float_up(zcdp_to_epsilon(rho, slack))
        except (ArithmeticError, ValueError, InvalidParameterError):
            converted = None
    out.update({
        "rho": None if rho is None else str(rho),
        "rho_float": None if rho is None else _float_up(rho),
        "mechanism_delta": str(spent.delta),
        "epsilon": None if converted is None else str(Fraction(converted)),
        "epsilon_float": converted,
        "delta": str(budget_delta),
        "delta_float": _float_up(budget_delta),
    })
    return out


def _jsonable(output: Any) -> JSONValue:
    if isinstance(output, bool | int | float | str) or output is None:
        return output
    if isinstance(output, np.generic):
        return _jsonable(output.item())
    if isinstance(output, np.ndarray):
        return _jsonable(output.tolist())
    if isinstance(output, list | tuple):
        return [_jsonable(v) for v in output]
    return repr(output)


class Session:
    """One private run: budget, rule, relation, generator and (optional) recorder."""

    def __init__(
        self,
        budget: Budget,
        rule: str = "basic",
        relation: Relation = Relation.REPLACE_ONE,
        recorder: RunRecorder | None = None,
        seed: int | None = None,
        store_outputs: bool = False,
    ) -> None:
        if not isinstance(budget, Budget):
            raise InvalidParameterError("budget", budget, "must be an accounting.Budget")
        rule = check_rule(rule)
        relation = Relation.parse(relation)
        if recorder is not None:
            if not isinstance(recorder, RunRecorder):
                raise InvalidParameterError("recorder", recorder, "must implement RunRecorder")
            if recorder.relation is not relation:
                raise InvalidParameterError(
                    "relation", relation.value, f"the recorder's run uses {recorder.relation.value}"
                )
            if recorder.budget != budget:
                raise InvalidParameterError(
                    "budget", budget, f"the recorder's run reserved {recorder.budget}"
                )
            if recorder.rule != rule:
                raise InvalidParameterError(
                    "rule", rule, f"the recorder's run uses {recorder.rule!r}"
                )
        if not isinstance(store_outputs, bool):
            raise InvalidParameterError("store_outputs", store_outputs, "must be a bool")
        self._filter = PrivacyFilter(budget, rule)
        self.budget = budget
        self.rule = rule
        self.relation = relation
        self.recorder = recorder
        self.store_outputs = store_outputs
        self._rng, self.seed_explicit = make_generator(seed)
        self._closed: str | None = None
        self._runs: list[SparseVectorRun] = []
        self._stored_runs: set[int] = set()
        #: Declared costs by mechanism: mechanisms are frozen dataclasses, equal ones have
        #: equal public parameters and hence the same cost (a pure function of them).
        self._costs: dict[Mechanism, Cost] = {}

    # -- state ----------------------------------------------------------------------
    @property
    def halted(self) -> bool:
        """True after a refusal, a recorder failure or :meth:`close`."""
        return self._filter.halted or self._closed is not None

    @property
    def releases(self) -> int:
        """Number of admitted mechanisms (releases and started runs)."""
        return self._filter.admitted

    def spent(self) -> Cost:
        """Exact sum of the declared costs admitted so far (under the session's relation)."""
        return self._filter.spent()

    def remaining(self) -> Cost:
        """What is left: ``basic``: ``(eps_B - eps, delta_B - delta)``; ``zcdp``: rho."""
        return self._filter.remaining()

    @property
    def rho_budget(self) -> Fraction | None:
        """``Budget.rho()`` under the zcdp rule (a Fraction), ``None`` under basic."""
        return self._filter.rho_budget

    def spent_summary(self) -> dict[str, JSONValue]:
        """What this run spent, stated under its rule (:func:`spent_summary`): under
        ``zcdp`` spent rho and its (eps, delta) conversion, never a sum of pure costs."""
        return spent_summary(self.rule, self.budget.epsilon_exact, self.budget.delta_exact,
                             self.spent())

    def guarantee(self) -> Guarantee:
        """The run's guarantee: the budget, under the session's relation and rule."""
        return Guarantee(self.budget.epsilon, self.budget.delta, self.relation, self.rule)

    def cost_of(self, mechanism: Mechanism) -> Cost:
        """The declared cost of ``mechanism`` under the session's relation (validated)."""
        self._check_mechanism(mechanism)
        try:
            cost = self._costs.get(mechanism)
            cacheable = True
        except TypeError:  # an unhashable parameter: compute every time
            cost, cacheable = None, False
        if cost is None:
            cost = mechanism.cost(self.relation)
            if cacheable and isinstance(cost, Cost) and len(self._costs) < 4096:
                self._costs[mechanism] = cost
        self._filter.check_applicable(cost, mechanism.kind)
        return cost

    def can_afford(self, mechanism: Mechanism) -> bool:
        """Whether the filter would admit ``mechanism`` now (no state change).

        False when halted; raises :class:`InvalidParameterError` for a mechanism the
        rule cannot account (e.g. Gaussian under ``basic``).
        """
        if self.halted:
            return False
        return self._filter.fits(self.cost_of(mechanism))

    def auxiliary_generator(self) -> np.random.Generator:
        """A fresh generator for NON-privacy randomness (e.g. model-X resampling).

        Spawned from the session generator's seed sequence (independent of the noise
        stream, and seeded or not exactly as the session is). Never use it for noise.
        """
        return self._rng.spawn(1)[0]

    # -- releases -------------------------------------------------------------------
    def release(self, mechanism: Mechanism, compute: Callable[[], Any], *,
                purpose: str) -> Any:
        """Admit, record, compute and release a one-shot mechanism."""
        if isinstance(mechanism, STATEFUL):
            raise InvalidParameterError(
                "mechanism", mechanism.kind, "stateful mechanisms are started with start()"
            )
        self._check_callable(compute)
        sequence, _ = self._admit(mechanism, purpose)
        exact = compute()
        output = cast(OneShotMechanism, mechanism).release(exact, self._rng)
        if self.store_outputs and self.recorder is not None and sequence is not None:
            self.recorder.record_output(sequence, _jsonable(output))
        return output

    def release_many(self, requests: Sequence[ReleaseRequest]) -> list[Any]:
        """Release a batch of mechanisms chosen together: a list (or tuple) of
        ``(mechanism, compute, purpose)`` triples. A stateful mechanism (SVT) comes with
        ``compute=None`` and is *started* (its output is the run handle, as from
        :meth:`start`).

        The same as :meth:`release` on each in order, for mechanisms that were all chosen
        before any of their outputs is seen (e.g. one round of tests of different pairs):

        * the longest prefix whose costs fit is admitted, and all its entries are
          recorded **before** any ``compute`` runs, with one ``record_many`` call when
          the recorder has it (atomic: one ledger transaction), else one ``record`` each;
        * then each admitted mechanism is computed and released (or started) in order;
        * if not all fit, the first that does not fit is refused as :meth:`release`
          would refuse it: the session halts and the admitted prefix's outputs are
          returned (a shorter list); if none fits, :class:`BudgetExceededError` is raised.

        Admitting the batch at once is sequential admission with no release in between,
        so the filter's guarantee under fully adaptive composition is unchanged (proof
        note ``docs/privacy/costs-and-filter.md``). A recorder failure charges what was
        recorded, releases nothing and halts the session; a ``compute`` that raises leaves
        the whole admitted batch charged and releases nothing from the batch.
        """
        if not isinstance(requests, list | tuple):
            raise InvalidParameterError("requests", requests,
                                        "must be a sequence of (mechanism, compute, purpose)")
        items: list[ReleaseRequest] = []
        for req in requests:
            if not isinstance(req, tuple) or len(req) != 3:
                raise InvalidParameterError("requests", req,
                                            "each must be a (mechanism, compute, purpose) tuple")
            mechanism, compute, purpose = req
            if isinstance(mechanism, STATEFUL):
                if compute is not None:
                    raise InvalidParameterError(
                        "compute", compute, "a stateful mechanism is started: pass None")
            else:
                self._check_callable(compute)
            if not isinstance(purpose, str):
                raise InvalidParameterError("purpose", purpose, "must be a string")
            items.append((mechanism, compute, purpose))
        if not items:
            return []
        self._check_open()
        costs = [self.cost_of(m) for m, _, _ in items]
        admitted = self._filter.fitting_prefix(costs)
        if admitted == 0:
            self._filter.check(costs[0], items[0][0].kind)  # raises BudgetExceededError
        costs = costs[:admitted]
        items = items[:admitted]
        sequences = self._record_batch(items, costs)
        self._filter.commit_prefix(costs)
        if admitted < len(requests):
            self._filter.halt()  # the next one was refused, as release() would refuse it
        outputs: list[Any] = []
        for (mechanism, compute, _), sequence in zip(items, sequences, strict=True):
            if isinstance(mechanism, STATEFUL):  # started, as start() would (compute None)
                run = SparseVectorRun(mechanism, self._rng, sequence, self._on_answer)
                self._runs.append(run)
                outputs.append(run)
                continue
            assert compute is not None  # checked above: one-shot mechanisms come with one
            output = cast(OneShotMechanism, mechanism).release(compute(), self._rng)
            if self.store_outputs and self.recorder is not None and sequence is not None:
                self.recorder.record_output(sequence, _jsonable(output))
            outputs.append(output)
        return outputs

    def start(
        self, mechanism: SparseVector | SubsampledSparseVector, *, purpose: str
    ) -> SparseVectorRun:
        """Admit and record a stateful SVT instance (charged in full now) and start it."""
        if not isinstance(mechanism, STATEFUL):
            raise InvalidParameterError(
                "mechanism", getattr(mechanism, "kind", mechanism),
                "start() takes SparseVector or SubsampledSparseVector; use release()",
            )
        sequence, _ = self._admit(mechanism, purpose)
        run = SparseVectorRun(mechanism, self._rng, sequence, self._on_answer)
        self._runs.append(run)
        return run

    def close(self, status: str = "completed") -> None:
        """Finish the session (and the recorder's run); later calls raise."""
        if self._closed is not None:
            raise SessionHaltedError(f"session already closed ({self._closed})")
        if status not in RUN_STATUSES:
            raise InvalidParameterError("status", status, f"must be one of {RUN_STATUSES}")
        for run in self._runs:
            self._store_run(run)
        self._closed = status
        if self.recorder is not None:
            self.recorder.close(status)

    # -- internals ------------------------------------------------------------------
    def _check_mechanism(self, mechanism: object) -> None:
        kind = getattr(mechanism, "kind", None)
        if not isinstance(kind, str) or MECHANISMS.get(kind) is not type(mechanism):
            raise InvalidParameterError(
                "mechanism", mechanism, "must be one of the accounting.mechanisms primitives"
            )

    @staticmethod
    def _check_callable(compute: object) -> None:
        if not callable(compute):
            raise InvalidParameterError("compute", compute, "must be a callable")

    def _check_open(self) -> None:
        if self._closed is not None:
            raise SessionHaltedError(f"session closed ({self._closed}); it admits nothing")
        if self._filter.halted:
            raise SessionHaltedError("session halted after a refusal; it admits nothing more")

    def _draft(self, mechanism: Mechanism, cost: Cost, purpose: str) -> EntryDraft:
        return EntryDraft(
            mechanism=mechanism.kind,
            params=mechanism.public_params(),
            sensitivity=mechanism.sensitivity,
            relation=self.relation,
            cost=cost,
            purpose=purpose,
            seed_explicit=self.seed_explicit,
            extra={"rule": self.rule},
        )

    def _admit(self, mechanism: Mechanism, purpose: object) -> tuple[int | None, Cost]:
        self._check_open()
        if not isinstance(purpose, str):
            raise InvalidParameterError("purpose", purpose, "must be a string")
        cost = self.cost_of(mechanism)
        self._filter.check(cost, mechanism.kind)  # raises BudgetExceededError (halts)
        sequence: int | None = None
        if self.recorder is not None:
            try:
                sequence = self.recorder.record(self._draft(mechanism, cost, purpose))
            except BaseException:
                self._filter.halt()
                raise
        self._filter.commit(cost)
        return sequence, cost

    def _record_batch(self, items: list[ReleaseRequest],
                      costs: list[Cost]) -> list[int | None]:
        """Record the admitted batch (see :meth:`release_many`); on a recorder failure
        commit the costs of what was recorded, halt and re-raise."""
        if self.recorder is None:
            return [None] * len(items)
        drafts = [self._draft(m, c, p) for (m, _, p), c in zip(items, costs, strict=True)]
        many = getattr(self.recorder, "record_many", None)
        if many is not None:
            try:
                sequences = [int(s) for s in many(drafts)]
            except BaseException:
                self._filter.halt()  # atomic: nothing was recorded, nothing is charged
                raise
            if len(sequences) != len(drafts):
                self._filter.commit_prefix(costs)  # unknown which were kept: charge all
                self._filter.halt()
                raise LedgerError(f"record_many returned {len(sequences)} sequence numbers "
                                  f"for {len(drafts)} entries")
            return list(sequences)
        done: list[int | None] = []
        try:
            for draft in drafts:
                done.append(self.recorder.record(draft))
        except BaseException:
            self._filter.commit_prefix(costs[: len(done)])  # recorded = charged
            self._filter.halt()
            raise
        return done

    def _on_answer(self, run: SparseVectorRun, above: bool) -> None:
        if run.halted:
            self._store_run(run)

    def _store_run(self, run: SparseVectorRun) -> None:
        if (
            self.store_outputs
            and self.recorder is not None
            and run.sequence is not None
            and run.sequence not in self._stored_runs
        ):
            self._stored_runs.add(run.sequence)
            self.recorder.record_output(run.sequence, [bool(a) for a in run.answers])
