"""The check a writer makes before it admits a reservation or a registration.

Everything admission relies on is re-derived from the hash chain itself
(:mod:`accounting.ledger._state`, under the write lock): every entry is re-hashed and
its link checked, from the genesis to the head, and folded into each dataset's
lifetime, its runs' reservations, rules, statuses and spending, hence what each run
charges to the lifetime. Nothing is looked up by an editable column (no index on
``kind``/``dataset_id``, no ``datasets``/``runs`` row): an entry whose kind, dataset id,
budget or lifetime was edited, or an entry deleted or inserted anywhere, without
re-chaining everything after it, refuses the write. The tables are then compared with
that state (:func:`check_admission_rows`: the ``datasets`` row, every ``runs`` row of
the dataset, the reserved totals), so a ledger whose tables disagree with its chain is
refused too, and admission decides on the chain's values only.

Anything else is :class:`~accounting.errors.LedgerCorruptError` and the transaction is
rolled back: nothing is reserved or written. A chain rewritten consistently from some
entry to the head passes the fold; on a key-bound ledger the writer also requires the
head to carry a valid signature by its own key (``Ledger._require_signed_head``), which
such a rewrite cannot have. See ``docs/ledger.md``, "Checked before every reservation".
"""

from __future__ import annotations

import json
import sqlite3
from fractions import Fraction
from pathlib import Path
from typing import Any

from accounting.errors import LedgerCorruptError
from accounting.ledger._format import (
    STORED_FIELDS,
    canonical_json,
    fraction_str,
    parse_fraction,
)
from accounting.ledger._state import ChainState, DatasetState

#: Columns whose stored text is the canonical JSON of the hashed value.
JSON_COLUMNS = ("params", "cost", "data")
#: Columns stored as SQLite integers 0/1 for a JSON boolean.
BOOL_COLUMNS = ("seed_explicit",)

#: Partial index of registrations and run opens (created in new ledgers; nothing reads
#: it any more: admission folds the whole chain, see the module docstring).
REGISTRY_INDEX = "entries_registry"
_REGISTRY_KINDS = "kind IN ('dataset', 'run-open')"
REGISTRY_INDEX_SQL = (f"CREATE INDEX IF NOT EXISTS {REGISTRY_INDEX} ON entries(dataset_id, kind) "
                      f"WHERE {_REGISTRY_KINDS}")
#: The runs columns a reservation is admitted on, in the order of the expected tuples.
_RUN_KEY_COLUMNS = ("run_id", "dataset_id", "epsilon", "delta", "rule", "relation",
                    "seed_explicit", "description", "opened_seq", "status", "closed_seq",
                    "n_entries", "n_outputs", "spent_epsilon", "spent_delta", "spent_rho")


def row_to_record(row: tuple[Any, ...]) -> tuple[dict[str, Any], str | None]:
    """Decode one stored row into the hashed dict; the second item names a problem."""
    record: dict[str, Any] = dict(zip(STORED_FIELDS, row, strict=True))
    problems = []
    for name in JSON_COLUMNS:
        text = record[name]
        if text is None:
            continue
        if not isinstance(text, str):
            problems.append(f"{name} is not text")
            continue
        try:
            value = json.loads(text)
        except ValueError:
            problems.append(f"{name} is not valid JSON")
            record[name] = text
            continue
        try:
            canonical = canonical_json(value)
        except (TypeError, ValueError):
            canonical = None
        if canonical != text:
            problems.append(f"{name} is not canonical JSON")
        record[name] = value
    for name in BOOL_COLUMNS:
        v = record[name]
        if v is None:
            continue
        if isinstance(v, int) and v in (0, 1):
            record[name] = bool(v)
        else:
            problems.append(f"{name}={v!r} is not 0/1")
    sens = record["sensitivity"]
    if isinstance(sens, int) and not isinstance(sens, bool):
        problems.append("sensitivity is stored as an integer, not a float")
    return record, ("; ".join(problems) if problems else None)


class _MismatchError(Exception):
    """One reason the tables and the chain disagree (becomes LedgerCorruptError)."""


def _corrupt(path: Path, dataset_id: str | None, why: str) -> LedgerCorruptError:
    what = "" if dataset_id is None else f"dataset {dataset_id!r}: "
    return LedgerCorruptError(
        f"{path}: {what}{why}; the ledger's tables or its chain were "
        f"edited or damaged, so nothing was reserved or written (run `dpcg ledger verify "
        f"{path}`)")


def chain_state(conn: sqlite3.Connection, path: Path, genesis: str) -> ChainState:
    """Inside the write transaction: the whole chain folded (:mod:`._state`), or
    :class:`LedgerCorruptError` naming its first problem (nothing is written)."""
    state = ChainState.read(conn, genesis)
    if not state.problems:
        state.finish()
    if state.problems:
        raise _corrupt(path, None, f"the chain does not verify ({state.problems[0]})")
    return state


def check_unregistered(state: ChainState, path: Path, dataset_id: str) -> None:
    """For a dataset with no ``datasets`` row: the chain must not know it either (a
    deleted row would otherwise let the id be registered again with a fresh lifetime)."""
    if dataset_id in state.datasets:
        raise _corrupt(path, dataset_id, "the chain registers it but the datasets table has "
                       "no row for it")


def check_admission_rows(conn: sqlite3.Connection, path: Path, state: ChainState,
                         dataset_id: str, row: tuple[Any, ...]) -> DatasetState:
    """Inside the write transaction: the dataset's state as the chain defines it, after
    checking that its ``datasets`` row ``row`` and its ``runs`` rows agree with it
    (:class:`LedgerCorruptError` otherwise). Admission uses the returned state only."""
    try:
        return _check(conn, state, dataset_id, row)
    except _MismatchError as exc:
        raise _corrupt(path, dataset_id, str(exc)) from None
    except (ValueError, TypeError, ArithmeticError, KeyError) as exc:
        raise _corrupt(path, dataset_id, f"cannot be checked ({type(exc).__name__}: {exc})") \
            from None


def _spent_texts(spent: tuple[Fraction | None, Fraction, Fraction | None]
                 ) -> tuple[str | None, str, str | None]:
    eps, delta, rho = spent
    return (None if eps is None else fraction_str(eps), fraction_str(delta),
            None if rho is None else fraction_str(rho))


def _check(conn: sqlite3.Connection, state: ChainState, dataset_id: str,
           row: tuple[Any, ...]) -> DatasetState:
    dataset = state.datasets.get(dataset_id)
    if dataset is None:
        raise _MismatchError(
            "the datasets row has no registration entry in the chain before its runs")
    expected = (dataset_id, fraction_str(dataset.lifetime_epsilon),
                fraction_str(dataset.lifetime_delta), dataset.relation, dataset.description,
                dataset.registered_seq)
    if tuple(row[:6]) != expected:
        raise _MismatchError(
            f"the datasets row differs from its registration entry {dataset.registered_seq}: "
            f"stored {tuple(row[:6])!r}, chain {expected!r}")
    keys = {
        r.run_id: (r.run_id, dataset_id, fraction_str(r.budget_epsilon),
                   fraction_str(r.budget_delta), r.rule, r.relation, int(r.seed_explicit),
                   r.description, r.opened_seq, r.status, r.closed_seq, r.entries, r.outputs,
                   *_spent_texts(r.spent))
        for r in dataset.runs.values()}
    stored = {
        r[0]: tuple(r) for r in conn.execute(
            f"SELECT {', '.join(_RUN_KEY_COLUMNS)} FROM runs WHERE dataset_id=?",
            (dataset_id,))}
    for run_id, key in keys.items():
        have = stored.get(run_id)
        if have is None:
            raise _MismatchError(
                f"run {run_id!r} (entry {key[8]}) has no runs row for this dataset")
        if have != key:
            raise _MismatchError(
                f"the runs row of run {run_id!r} differs from its entries in the chain: "
                f"stored {have!r}, chain {key!r}")
    extra = sorted(set(stored) - set(keys), key=str)
    if extra:
        raise _MismatchError(f"runs row {extra[0]!r} has no run-open entry in the chain")
    reserved_eps, reserved_delta = dataset.reserved
    stored_totals = (parse_fraction(row[6], "reserved_epsilon"),
                     parse_fraction(row[7], "reserved_delta"), row[8])
    if stored_totals != (reserved_eps, reserved_delta, len(keys)):
        raise _MismatchError(
            f"the datasets row's reserved totals (eps={row[6]!r}, delta={row[7]!r}, "
            f"runs={row[8]!r}) differ from the chain's (eps={str(reserved_eps)!r}, "
            f"delta={str(reserved_delta)!r}, runs={len(keys)})")
    return dataset
