"""The interface every ledger backend implements, and the one place that picks one.

Two backends hold the same hash chain (``docs/ledger.md``, "Format"):

* :class:`accounting.ledger.store.Ledger` - one SQLite file (the embedded default);
* :class:`accounting.ledger.postgres.PostgresLedger` - a PostgreSQL database for teams
  (optional ``psycopg`` driver), append-only for the analyst's role.

:class:`LedgerBackend` is what callers (``session_for_run``, the CLI, the pipeline)
rely on; :func:`open_ledger` opens a location: ``postgresql://...`` /
``postgres://...`` is a PostgreSQL ledger, anything else a SQLite file path.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from accounting.costs import Budget
from accounting.entries import EntryDraft, JSONValue
from accounting.relations import Relation

if TYPE_CHECKING:
    from accounting.ledger._verify import VerificationReport
    from accounting.ledger.signing import SignedHead, VerifyKey
    from accounting.ledger.store import DatasetInfo, RunInfo

#: A ledger location: a SQLite file path, or a ``postgresql://`` URL (a string).
Location = str | os.PathLike[str]


@runtime_checkable
class RunHandle(Protocol):
    """One reserved run (what ``open_run`` returns): a
    :class:`~accounting.entries.RunRecorder` with an atomic ``record_many``."""

    dataset_id: str
    seed_explicit: bool

    @property
    def run_id(self) -> str: ...

    @property
    def budget(self) -> Budget: ...

    @property
    def relation(self) -> Relation: ...

    @property
    def rule(self) -> str: ...

    @property
    def opened_at(self) -> str: ...

    def record(self, entry: EntryDraft) -> int: ...

    def record_many(self, entries: Sequence[EntryDraft]) -> list[int]: ...

    def record_output(self, sequence: int, output: JSONValue) -> None: ...

    def close(self, status: str = "completed") -> None: ...


@runtime_checkable
class LedgerBackend(Protocol):
    """What a ledger offers, whatever stores it (SQLite file or PostgreSQL database)."""

    #: Where it is, as shown to users (a file path; a URL without its password).
    path: Any
    ledger_id: str
    created_at: str
    format_version: int

    def close(self) -> None: ...

    def __enter__(self) -> LedgerBackend: ...

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None: ...

    # datasets
    def register_dataset(self, dataset_id: str, lifetime: Budget,
                         relation: Relation | str = ..., description: str = ..., *,
                         lifetime_rule: str = ...) -> None: ...

    def ensure_dataset(self, dataset_id: str, lifetime: Budget,
                       relation: Relation | str = ..., description: str = ..., *,
                       for_run: Budget | None = ..., for_rule: str | None = ...,
                       lifetime_rule: str = ...) -> tuple[DatasetInfo, bool]: ...

    def dataset(self, dataset_id: str) -> DatasetInfo: ...

    def has_dataset(self, dataset_id: str) -> bool: ...

    def datasets(self) -> list[DatasetInfo]: ...

    # runs
    def open_run(self, dataset_id: str, budget: Budget, rule: str, seed_explicit: bool,
                 description: str = ...) -> Any: ...

    def runs(self, dataset_id: str | None = ...) -> list[RunInfo]: ...

    def run(self, run_id: str) -> RunInfo: ...

    # the chain
    def entry_count(self) -> int: ...

    def head_hash(self) -> str | None: ...

    def entries(self) -> list[dict[str, Any]]: ...

    def verify(self, expected_head: str | None = ..., contains: str | None = ..., *,
               public_key: Any = ..., head: Any = ...) -> VerificationReport: ...

    def export(self, path: str | os.PathLike[str]) -> VerificationReport: ...

    def export_head(self, path: str | os.PathLike[str]) -> SignedHead: ...

    # signing
    @property
    def signing_public_key(self) -> VerifyKey | None: ...

    def check_signing(self) -> str | None: ...


def is_postgres(location: object) -> bool:
    """Whether ``location`` names a PostgreSQL ledger (``postgresql://``/``postgres://``)."""
    from accounting.ledger.postgres import is_postgres_url

    return is_postgres_url(location if not isinstance(location, os.PathLike)
                           else os.fspath(location))


def open_ledger(location: Location, create: bool = False, *, timeout: float = 60.0,
                signing_key: Any = None) -> LedgerBackend:
    """Open the ledger at ``location``: a PostgreSQL URL or a SQLite file path (with
    ``create`` a missing SQLite file is created; a PostgreSQL ledger is installed once
    by its administrator, ``dpcg ledger pg-install``)."""
    if is_postgres(location):
        from accounting.ledger.postgres import PostgresLedger

        return PostgresLedger.open(str(location), create, timeout=timeout,
                                   signing_key=signing_key)
    from accounting.ledger.store import Ledger

    return Ledger.open(Path(location), create, timeout=timeout, signing_key=signing_key)
