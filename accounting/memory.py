"""An in-memory :class:`~accounting.entries.RunRecorder` (tests, notebooks, dry runs).

It keeps entries in a list; nothing is durable. ``fail_on`` makes :meth:`record` raise
:class:`~accounting.errors.LedgerError` for chosen sequence numbers, to test that a
session releases nothing when its recorder fails.
"""

from __future__ import annotations

import uuid
from collections.abc import Container
from dataclasses import dataclass, field

from accounting.costs import Budget
from accounting.entries import EntryDraft, JSONValue
from accounting.errors import LedgerError
from accounting.relations import Relation


@dataclass
class InMemoryRecorder:
    """A non-durable run recorder holding its entries in memory."""

    budget: Budget
    rule: str = "basic"
    relation: Relation = Relation.REPLACE_ONE
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    fail_on: Container[int] = ()
    entries: list[EntryDraft] = field(default_factory=list)
    outputs: dict[int, JSONValue] = field(default_factory=dict)
    status: str | None = None

    def record(self, entry: EntryDraft) -> int:
        if self.status is not None:
            raise LedgerError(f"run {self.run_id} is closed ({self.status})")
        if not isinstance(entry, EntryDraft):
            raise LedgerError(f"not an EntryDraft: {entry!r}")
        sequence = len(self.entries)
        if sequence in self.fail_on:
            raise LedgerError(f"simulated write failure at entry {sequence}")
        self.entries.append(entry)
        return sequence

    def record_many(self, entries: list[EntryDraft]) -> list[int]:
        """:meth:`record` for several entries, all or none (a simulated failure on any of
        their sequence numbers writes none of them)."""
        if self.status is not None:
            raise LedgerError(f"run {self.run_id} is closed ({self.status})")
        first = len(self.entries)
        for i, entry in enumerate(entries):
            if not isinstance(entry, EntryDraft):
                raise LedgerError(f"not an EntryDraft: {entry!r}")
            if first + i in self.fail_on:
                raise LedgerError(f"simulated write failure at entry {first + i}")
        self.entries.extend(entries)
        return list(range(first, first + len(entries)))

    def record_output(self, sequence: int, output: JSONValue) -> None:
        if not 0 <= sequence < len(self.entries):
            raise LedgerError(f"no entry {sequence}")
        if sequence in self.outputs:
            raise LedgerError(f"entry {sequence} already has an output")
        self.outputs[sequence] = output

    def close(self, status: str) -> None:
        if self.status is not None:
            raise LedgerError(f"run {self.run_id} already closed ({self.status})")
        self.status = status
