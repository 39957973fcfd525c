"""Shared pieces of the private PC family: settings, the run's session, results.

Every private algorithm is a *strategy* over the one engine
(:func:`dpcg.pc.engine.pc_stable`): an :class:`~dpcg.pc.engine.EdgeTester` (Laplace-PC,
SVT-PC, Priv-PC, CURATE) or a :class:`~dpcg.pc.engine.LevelStrategy` (EM-PC). The
strategy holds an ``accounting`` session; every release goes through
``session.release`` / ``session.start`` (filter admission and ledger entry first). When
the filter refuses a mechanism the engine stops and returns the graph so far with
``budget_exhausted=True``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from accounting.costs import Budget
from accounting.relations import Relation
from dpcg.errors import AlgorithmError
from dpcg.pc.engine import PCResult

ALGORITHMS: tuple[str, ...] = ("laplace-pc", "svt-pc", "priv-pc", "em-pc", "curate")


@dataclass(frozen=True)
class PrivateSettings:
    """The user's choices for one private run (all public).

    * ``epsilon``, ``delta``: the TOTAL budget of the run.
    * ``test``: the score (``kendall-split``, the default, ``kendall-z``, ``kendall-p``, ``cmi``).
    * ``plan_size``: Laplace-PC's public plan size K (tests); SVT-PC's and Priv-PC's
      number of instances / rounds. ``None`` = the algorithm's default.
    * ``test_epsilon``: alternatively, the budget of one test (Laplace-PC), one SVT
      instance (SVT-PC) or one sieve-and-examine round (Priv-PC); the plan size is then
      ``floor(epsilon / test_epsilon)`` (0 means nothing can run).
    * ``threshold``: public decision threshold on the score scale (default from
      ``alpha``).
    """

    epsilon: float
    delta: float = 0.0
    test: str = "kendall-split"
    alpha: float = 0.05
    threshold: float | None = None
    plan_size: int | None = None
    test_epsilon: float | None = None
    rule: str | None = None
    seed: int | None = None
    max_depth: int | None = None
    relation: Relation = Relation.REPLACE_ONE
    options: dict[str, Any] = field(default_factory=dict)

    def budget(self) -> Budget:
        """The validated total budget (raises ``InvalidParameterError`` naming the field)."""
        return Budget(self.epsilon, self.delta)


def validate_settings(s: PrivateSettings) -> None:
    """Reject bad settings before anything is charged (errors name the parameter)."""
    from dpcg.citests.private import SCORES

    for name in ("epsilon", "delta"):
        v = getattr(s, name)
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            raise AlgorithmError(f"{name}: expected a finite number, got {v!r}")
    if s.epsilon <= 0:
        raise AlgorithmError(f"epsilon: must be > 0, got {s.epsilon!r}")
    if not 0 <= s.delta < 1:
        raise AlgorithmError(f"delta: must be in [0, 1), got {s.delta!r}")
    if s.test not in SCORES:
        raise AlgorithmError(f"test: unknown private test {s.test!r}; choose from {SCORES}")
    if isinstance(s.alpha, bool) or not isinstance(s.alpha, int | float) or not 0 < s.alpha < 1:
        raise AlgorithmError(f"alpha: expected a number in (0, 1), got {s.alpha!r}")
    if s.plan_size is not None and (
        isinstance(s.plan_size, bool) or not isinstance(s.plan_size, int) or s.plan_size < 1
    ):
        raise AlgorithmError(f"plan_size: expected a positive integer, got {s.plan_size!r}")
    if s.test_epsilon is not None:
        te = s.test_epsilon
        if isinstance(te, bool) or not isinstance(te, int | float) or not (
            math.isfinite(te) and te > 0
        ):
            raise AlgorithmError(f"test_epsilon: expected a finite number > 0, got {te!r}")
        if s.plan_size is not None:
            raise AlgorithmError("give at most one of plan_size and test_epsilon")
    if s.rule is not None and s.rule not in ("basic", "zcdp"):
        raise AlgorithmError(f"rule: expected 'basic', 'zcdp' or None, got {s.rule!r}")
    if s.rule == "zcdp" and s.delta <= 0:
        raise AlgorithmError("rule: 'zcdp' needs delta > 0 to convert to (epsilon, delta)")
    if s.seed is not None and (isinstance(s.seed, bool) or not isinstance(s.seed, int)):
        raise AlgorithmError(f"seed: expected an integer or None, got {s.seed!r}")
    if s.max_depth is not None and (
        isinstance(s.max_depth, bool) or not isinstance(s.max_depth, int) or s.max_depth < 0
    ):
        raise AlgorithmError(f"max_depth: expected an integer >= 0 or None, got {s.max_depth!r}")
    if s.threshold is not None and (
        isinstance(s.threshold, bool) or not isinstance(s.threshold, int | float)
        or not math.isfinite(s.threshold)
    ):
        raise AlgorithmError(f"threshold: expected a finite number, got {s.threshold!r}")


def plan_count(s: PrivateSettings, default: int) -> int:
    """Plan size from ``plan_size`` / ``test_epsilon`` / the default (may be 0)."""
    if s.plan_size is not None:
        return int(s.plan_size)
    if s.test_epsilon is not None:
        from fractions import Fraction

        return int(Fraction(s.epsilon) // Fraction(s.test_epsilon))
    return default


# --------------------------------------------------------------------------- session


class CountingRecorder:
    """A :class:`~accounting.entries.RunRecorder` that forwards every call to ``inner``
    (the ledger run or an in-memory recorder) and counts the entries that ``inner``
    accepted, by mechanism kind (``result.mechanisms``)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.counts: dict[str, int] = {}

    @property
    def run_id(self) -> str:
        return str(self.inner.run_id)

    @property
    def budget(self) -> Budget:
        b: Budget = self.inner.budget
        return b

    @property
    def relation(self) -> Relation:
        r: Relation = self.inner.relation
        return r

    @property
    def rule(self) -> str:
        return str(self.inner.rule)

    def record(self, entry: Any) -> int:
        seq = int(self.inner.record(entry))  # raises (and counts nothing) on failure
        self._count(entry)
        return seq

    def _count(self, entry: Any) -> None:
        self.counts[entry.mechanism] = self.counts.get(entry.mechanism, 0) + 1

    def record_many(self, entries: list[Any]) -> list[int]:
        """``inner.record_many`` (atomic) when it has one, else ``record`` per entry."""
        many = getattr(self.inner, "record_many", None)
        if many is None:
            return [self.record(entry) for entry in entries]
        seqs = [int(s) for s in many(entries)]  # raises (and counts nothing) on failure
        for entry in entries:
            self._count(entry)
        return seqs

    def record_output(self, sequence: int, output: Any) -> None:
        self.inner.record_output(sequence, output)

    def close(self, status: str) -> None:
        self.inner.close(status)


@dataclass
class SessionHandle:
    """The run's session and where it is recorded."""

    session: Any
    ledger_path: str | None
    run_id: str | None
    recorder: Any
    #: The open ledger (``None`` in memory); :meth:`close` closes it once the run is over.
    ledger: Any = None

    def close(self, status: str) -> None:
        """Close the session's run with ``status``, then the ledger connection (never
        left to the garbage collector: see ``accounting.ledger.store._OPEN_FILES``)."""
        try:
            self.session.close(status=status)
        finally:
            if self.ledger is not None:
                self.ledger.close()


def open_session(
    budget: Budget,
    rule: str,
    *,
    relation: Relation = Relation.REPLACE_ONE,
    seed: int | None = None,
    ledger: str | Path | None = None,
    dataset_id: str | None = None,
    description: str = "",
    lifetime: Budget | None = None,
) -> SessionHandle:
    """A session for one run: in memory, or recorded in the ledger at ``ledger``.

    With a ledger, ``dataset_id`` names the dataset; if the ledger does not know it yet
    it is registered with the lifetime budget ``lifetime`` (default: this run's budget;
    register it beforehand with ``dpcg ledger init`` to declare it explicitly). The
    lifetime of an already registered dataset is never changed here.
    """
    if ledger is None:
        from accounting.memory import InMemoryRecorder
        from accounting.session import Session

        recorder = CountingRecorder(InMemoryRecorder(budget=budget, rule=rule,
                                                     relation=relation))
        session = Session(budget, rule=rule, relation=relation, recorder=recorder, seed=seed)
        return SessionHandle(session, None, recorder.run_id, recorder)
    if dataset_id is None or not isinstance(dataset_id, str) or not dataset_id.strip():
        raise AlgorithmError("dataset_id: a ledger run needs a declared dataset id")
    from accounting.errors import AccountingError
    from accounting.ledger import Ledger
    from accounting.session import Session

    led = Ledger.open(Path(ledger), create=True)
    try:
        if not _has_dataset(led, dataset_id):
            led.register_dataset(dataset_id, budget if lifetime is None else lifetime,
                                 relation, description=description)
        # As accounting.ledger.session_for_run, with a counting wrapper around the run.
        run_relation = led.dataset(dataset_id).relation
        Session(budget, rule=rule, relation=run_relation, seed=seed)  # validation only
        run = led.open_run(dataset_id, budget, rule, seed_explicit=seed is not None,
                           description=description)
        recorder = CountingRecorder(run)
        try:
            session = Session(budget, rule=rule, relation=run_relation, recorder=recorder,
                              seed=seed)
        except AccountingError:
            run.close("error")
            raise
    except BaseException:
        led.close()
        raise
    return SessionHandle(session, str(ledger), recorder.run_id, recorder, led)


def _has_dataset(ledger: Any, dataset_id: str) -> bool:
    for name in ("has_dataset", "dataset_exists"):
        fn = getattr(ledger, name, None)
        if fn is not None:
            return bool(fn(dataset_id))
    datasets = getattr(ledger, "datasets", None)
    if callable(datasets):
        found = datasets()
        ids = {getattr(d, "dataset_id", d) for d in found}
        return dataset_id in ids
    return False


# --------------------------------------------------------------------------- results


@dataclass
class PrivateResult:
    """A private run: the engine's result plus the guarantee, the ledger reference and
    the public plan. :meth:`to_json` gives the fields of ``result.json``."""

    algorithm: str
    test: str
    pc: PCResult
    guarantee: dict[str, Any]
    ledger: dict[str, Any] | None
    budget_exhausted: bool
    spent: dict[str, Any]
    plan: dict[str, Any]
    mechanisms: dict[str, int]
    message: str | None = None

    @property
    def cpdag(self) -> Any:
        return self.pc.cpdag

    @property
    def n_tests(self) -> int:
        return self.pc.n_tests

    def extra(self) -> dict[str, Any]:
        """The fields a private run adds to the engine's JSON."""
        return {
            "guarantee": self.guarantee,
            "privacy": self.guarantee,
            "ledger": self.ledger,
            "budget_exhausted": self.budget_exhausted,
            "spent": self.spent,
            "plan": self.plan,
            "mechanisms": self.mechanisms,
            "message": self.message,
        }

    def to_json(self, *, include_tests: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"algorithm": self.algorithm, "test": self.test}
        out.update(self.pc.to_json(include_tests=include_tests))
        out.update(self.extra())
        return out
