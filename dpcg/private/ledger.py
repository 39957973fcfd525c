"""The ledger policy of every private run, in one place.

* :func:`default_ledger_path`: where a run is recorded when no ``--ledger`` is given
  (the ONLY place that knows the default location).
* :func:`ledger_target`: the policy the CLI applies to every private algorithm: a durable
  ledger by default, ``--no-ledger`` for a throw-away in-memory run, ``--dataset-id``
  (required for ``--data``; a bundled sample defaults to its public recipe), and the
  lifetime budget ``--lifetime-epsilon/--lifetime-delta`` of a dataset id the ledger does
  not know yet (default: this run's budget).
* :func:`register_dataset_if_new`: the ONLY function that registers a dataset id.
* :func:`open_session`: the run's :class:`~accounting.session.Session`, recorded in the
  ledger (or in memory), wrapped in a recorder that counts entries by mechanism.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from accounting.costs import Budget
from accounting.entries import EntryDraft, JSONValue, RunRecorder
from accounting.errors import AccountingError
from accounting.ledger import Ledger
from accounting.memory import InMemoryRecorder
from accounting.relations import Relation
from accounting.session import Session
from dpcg.errors import AlgorithmError

__all__ = ["DEFAULT_LEDGER", "CountingRecorder", "LedgerTarget", "SessionHandle",
           "default_ledger_path", "ledger_target", "open_session", "register_dataset_if_new"]

#: File name of the default ledger (see :func:`default_ledger_path`).
DEFAULT_LEDGER = "dpcg-ledger.sqlite"


def default_ledger_path() -> Path:
    """The ledger a private run writes when the user names none: ``./dpcg-ledger.sqlite``."""
    return Path(DEFAULT_LEDGER)


@dataclass(frozen=True)
class LedgerTarget:
    """Where a run is recorded: ``path=None`` keeps the entries in memory only."""

    path: Path | None = None
    dataset_id: str | None = None
    #: Lifetime budget of a dataset id the ledger does not know yet (None: the run's).
    lifetime: Budget | None = None
    #: The user declared ``lifetime`` (then a registered id with another lifetime is an
    #: error instead of the lifetime being ignored).
    lifetime_explicit: bool = False

    def __post_init__(self) -> None:
        if self.path is not None and (
            not isinstance(self.dataset_id, str) or not self.dataset_id.strip()
        ):
            raise AlgorithmError("dataset_id: a ledger run needs a declared dataset id")

    @property
    def durable(self) -> bool:
        return self.path is not None


#: A run kept in memory (experiments, audits).
IN_MEMORY = LedgerTarget()


def ledger_target(*, budget: Budget, no_ledger: bool = False, path: Path | None = None,
                  dataset_id: str | None = None, default_dataset_id: str | None = None,
                  lifetime_epsilon: float | None = None,
                  lifetime_delta: float | None = None) -> LedgerTarget:
    """THE ledger policy of a private run (the same for every algorithm).

    ``default_dataset_id`` is the public recipe of a bundled sample (``None`` for a
    user's table, which must then be named with ``dataset_id``).
    """
    if no_ledger:
        given = [flag for flag, v in (("--ledger", path), ("--dataset-id", dataset_id),
                                      ("--lifetime-epsilon", lifetime_epsilon),
                                      ("--lifetime-delta", lifetime_delta)) if v is not None]
        if given:
            raise AlgorithmError(f"--no-ledger: {', '.join(given)} only apply to a run "
                                 "recorded in a ledger")
        return IN_MEMORY
    dataset_id = dataset_id if dataset_id is not None else default_dataset_id
    if dataset_id is None:
        raise AlgorithmError(
            "--dataset-id: a private run on --data is recorded in the ledger under the "
            "dataset's declared id; pass --dataset-id ID (or --no-ledger for a "
            "throw-away experiment)"
        )
    lifetime = Budget(budget.epsilon if lifetime_epsilon is None else lifetime_epsilon,
                      budget.delta if lifetime_delta is None else lifetime_delta)
    explicit = lifetime_epsilon is not None or lifetime_delta is not None
    return LedgerTarget(default_ledger_path() if path is None else Path(path), dataset_id,
                        lifetime, explicit)


def register_dataset_if_new(ledger: Ledger, dataset_id: str, lifetime: Budget,
                            relation: Relation, description: str = "", *,
                            explicit: bool = False) -> None:
    """Register ``dataset_id`` with ``lifetime`` unless the ledger knows it already (the
    lifetime of a registered dataset is never changed: an ``explicit`` lifetime that
    differs from the registered one is an error, not silently ignored)."""
    if not ledger.has_dataset(dataset_id):
        ledger.register_dataset(dataset_id, lifetime, relation, description=description)
        return
    if explicit:
        known = ledger.dataset(dataset_id).lifetime
        if (known.epsilon_exact, known.delta_exact) != (lifetime.epsilon_exact,
                                                        lifetime.delta_exact):
            raise AlgorithmError(
                f"--lifetime-epsilon/--lifetime-delta: dataset {dataset_id!r} is already "
                f"registered with lifetime (epsilon={float(known.epsilon):g}, "
                f"delta={float(known.delta):g}); a registered lifetime never changes "
                "(drop the lifetime flags)")


class CountingRecorder:
    """A :class:`~accounting.entries.RunRecorder` forwarding every call to ``inner`` (the
    ledger run or an in-memory recorder) and counting the entries ``inner`` accepted, by
    mechanism kind (``result.mechanisms``)."""

    def __init__(self, inner: RunRecorder) -> None:
        self.inner = inner
        self.counts: dict[str, int] = {}
        #: ``inner.record_many`` when it has one (checked once: a protocol check is slow)
        self._many = inner if isinstance(inner, _BatchRecorder) else None

    @property
    def run_id(self) -> str:
        return str(self.inner.run_id)

    @property
    def budget(self) -> Budget:
        return self.inner.budget

    @property
    def relation(self) -> Relation:
        return self.inner.relation

    @property
    def rule(self) -> str:
        return str(self.inner.rule)

    def record(self, entry: EntryDraft) -> int:
        seq = int(self.inner.record(entry))  # raises (and counts nothing) on failure
        self._count(entry)
        return seq

    def _count(self, entry: EntryDraft) -> None:
        self.counts[entry.mechanism] = self.counts.get(entry.mechanism, 0) + 1

    def record_many(self, entries: Sequence[EntryDraft]) -> list[int]:
        """``inner.record_many`` (atomic) when it has one, else ``record`` per entry."""
        if self._many is None:
            return [self.record(entry) for entry in entries]
        seqs = [int(s) for s in self._many.record_many(list(entries))]  # raises on failure
        for entry in entries:
            self._count(entry)
        return seqs

    def record_output(self, sequence: int, output: JSONValue) -> None:
        self.inner.record_output(sequence, output)

    def close(self, status: str) -> None:
        self.inner.close(status)


@runtime_checkable
class _BatchRecorder(RunRecorder, Protocol):
    """A recorder with an atomic ``record_many`` (the ledger's run)."""

    def record_many(self, entries: list[EntryDraft]) -> list[int]: ...


@dataclass
class SessionHandle:
    """The run's session and where it is recorded."""

    session: Session
    recorder: CountingRecorder
    target: LedgerTarget = field(default=IN_MEMORY)
    #: The open ledger (``None`` in memory); :meth:`close` closes it once the run is over.
    ledger: Ledger | None = None

    @property
    def run_id(self) -> str:
        return self.recorder.run_id

    def close(self, status: str) -> None:
        """Close the session's run with ``status``, then the ledger connection (never
        left to the garbage collector: see ``accounting.ledger.store._OPEN_FILES``)."""
        try:
            self.session.close(status=status)
        finally:
            if self.ledger is not None:
                self.ledger.close()


def open_session(budget: Budget, rule: str, target: LedgerTarget = IN_MEMORY, *,
                 relation: Relation = Relation.REPLACE_ONE, seed: int | None = None,
                 description: str = "") -> SessionHandle:
    """A session for one run: in memory, or recorded in the ledger of ``target``.

    With a ledger, a dataset id the ledger does not know yet is registered with
    ``target.lifetime`` (default: this run's budget; register it beforehand with
    ``dpcg ledger init`` to declare it explicitly).
    """
    if target.path is None:
        recorder = CountingRecorder(InMemoryRecorder(budget=budget, rule=rule,
                                                     relation=relation))
        session = Session(budget, rule=rule, relation=relation, recorder=recorder, seed=seed)
        return SessionHandle(session, recorder)
    assert target.dataset_id is not None  # LedgerTarget checks it
    led = Ledger.open(target.path, create=True)
    try:
        register_dataset_if_new(led, target.dataset_id,
                                budget if target.lifetime is None else target.lifetime,
                                relation, description, explicit=target.lifetime_explicit)
        # As accounting.ledger.session_for_run, with a counting wrapper around the run.
        run_relation = led.dataset(target.dataset_id).relation
        Session(budget, rule=rule, relation=run_relation, seed=seed)  # validation only
        run = led.open_run(target.dataset_id, budget, rule, seed_explicit=seed is not None,
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
    return SessionHandle(session, recorder, target, led)
