"""The contract between a :class:`~accounting.session.Session` and a ledger.

A session hands every admitted mechanism to a :class:`RunRecorder` *before* the
data is touched; the recorder makes the entry durable (or raises, in which case the
session releases nothing). Only public information travels through here: the
mechanism's kind and public parameters, its sensitivity, relation, declared cost
and a purpose text. The only data-dependent field is the released output, and only
when the caller asked for it to be stored (it is recorded after release).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from accounting.costs import Budget, Cost
from accounting.relations import Relation

#: The statuses a run can be closed with.
RUN_STATUSES = ("completed", "budget-exhausted", "error")

#: JSON-compatible scalar or container, used for public parameters.
JSONValue = str | int | float | bool | None | list["JSONValue"] | dict[str, "JSONValue"]


@dataclass(frozen=True)
class EntryDraft:
    """One admitted mechanism, as the session describes it to the ledger."""

    mechanism: str
    params: Mapping[str, JSONValue]
    sensitivity: float | None
    relation: Relation
    cost: Cost
    purpose: str
    seed_explicit: bool
    extra: Mapping[str, JSONValue] = field(default_factory=dict)


@runtime_checkable
class RunRecorder(Protocol):
    """Durable, append-only record of one run (one session) against a dataset budget."""

    @property
    def run_id(self) -> str: ...

    @property
    def budget(self) -> Budget:
        """The (eps, delta) reserved for this run in the dataset's lifetime budget."""
        ...

    @property
    def relation(self) -> Relation: ...

    @property
    def rule(self) -> str:
        """The run's composition rule: ``"basic"`` or ``"zcdp"``."""
        ...

    def record(self, entry: EntryDraft) -> int:
        """Append ``entry`` durably and return its sequence number.

        Must raise :class:`~accounting.errors.LedgerError` (and leave the ledger intact)
        if the entry cannot be written; the session then releases nothing.
        """
        ...

    # Optional: ``record_many(entries: Sequence[EntryDraft]) -> list[int]`` appends
    # several entries durably and ATOMICALLY (all or none; e.g. one transaction). A
    # session uses it for batched admission (:meth:`accounting.session.Session.
    # release_many`) when present, and calls :meth:`record` once per entry otherwise.

    def record_output(self, sequence: int, output: JSONValue) -> None:
        """Attach a released (noisy) output to entry ``sequence`` (opt-in by the caller)."""
        ...

    def close(self, status: str) -> None:
        """Mark the run finished with one of :data:`RUN_STATUSES`."""
        ...
