"""The check a writer makes before it admits a reservation: the tables it reads agree
with the hash chain.

The writer admits a run against a dataset's ``datasets`` row (lifetime, reserved
totals), which is a convenience copy of the chain. Before trusting it, and under the
same write lock as the reservation, :func:`check_admission_rows` ties that row and
every ``runs`` row of the dataset to their hashed chain entries:

* the dataset's registration entry and all its run-open entries are found through the
  partial index :data:`REGISTRY_INDEX` (``O(runs of the dataset)``, not a scan of the
  chain; without the index, in a ledger written before it existed, SQLite scans);
* each of those entries must re-hash to its stored hash, link to its predecessor's
  stored hash (the genesis for entry 1) and be linked to by its successor (or be the
  head);
* the ``datasets`` row must equal the registration entry (lifetime, relation,
  description, sequence number), the ``runs`` rows of the dataset must be exactly the
  chain's run-open entries of the dataset (none missing, none extra, each equal to its
  entry: budget, rule, relation, seed flag, description, sequence number), and the
  row's reserved totals and run count must be their exact sums.

Anything else is :class:`~accounting.errors.LedgerCorruptError` and the transaction is
rolled back: nothing is reserved or written. What this does not check (mechanism,
output and run-close entries, other datasets, a chain rewritten consistently from some
entry to the head) is left to :meth:`Ledger.verify`; see ``docs/ledger.md``.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections import Counter
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

from accounting.errors import LedgerCorruptError
from accounting.ledger._format import (
    RULES,
    STORED_FIELDS,
    canonical_json,
    entry_hash,
    parse_fraction,
)
from accounting.ledger._verify import _budget_from, _EntryError
from accounting.relations import Relation

#: Columns whose stored text is the canonical JSON of the hashed value.
JSON_COLUMNS = ("params", "cost", "data")
#: Columns stored as SQLite integers 0/1 for a JSON boolean.
BOOL_COLUMNS = ("seed_explicit",)

#: Partial index of the entries that define admission: registrations and run opens.
REGISTRY_INDEX = "entries_registry"
_REGISTRY_KINDS = "kind IN ('dataset', 'run-open')"
REGISTRY_INDEX_SQL = (f"CREATE INDEX IF NOT EXISTS {REGISTRY_INDEX} ON entries(dataset_id, kind) "
                      f"WHERE {_REGISTRY_KINDS}")
#: (the WHERE term must be written exactly as the index's for SQLite to use it)
_REGISTRY_QUERY = (f"SELECT {', '.join(STORED_FIELDS)} FROM entries WHERE dataset_id=? AND "
                   f"{_REGISTRY_KINDS} ORDER BY seq")
_REGISTERED_QUERY = f"SELECT seq FROM entries WHERE dataset_id=? AND {_REGISTRY_KINDS} LIMIT 1"
#: The runs columns a reservation is admitted on, in the order of the expected tuples.
_RUN_KEY_COLUMNS = ("run_id", "dataset_id", "epsilon", "delta", "rule", "relation",
                    "seed_explicit", "description", "opened_seq")
_CHUNK = 500


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


def _corrupt(path: Path, dataset_id: str, why: str) -> LedgerCorruptError:
    return LedgerCorruptError(
        f"{path}: dataset {dataset_id!r}: {why}; the ledger's tables or its chain were "
        f"edited or damaged, so nothing was reserved or written (run `dpcg ledger verify "
        f"{path}`)")


def chain_registers(conn: sqlite3.Connection, dataset_id: str) -> bool:
    """Whether the chain has a registration or run-open entry for ``dataset_id``."""
    return conn.execute(_REGISTERED_QUERY, (dataset_id,)).fetchone() is not None


def check_unregistered(conn: sqlite3.Connection, path: Path, dataset_id: str) -> None:
    """For a dataset with no ``datasets`` row: the chain must not know it either (a
    deleted row would otherwise let the id be registered again with a fresh lifetime)."""
    if chain_registers(conn, dataset_id):
        raise _corrupt(path, dataset_id, "the chain registers it but the datasets table has "
                       "no row for it")


def check_admission_rows(conn: sqlite3.Connection, path: Path, genesis: str,
                         dataset_id: str, row: tuple[Any, ...]) -> None:
    """Inside the write transaction: raise :class:`LedgerCorruptError` unless the
    ``datasets`` row ``row`` of ``dataset_id`` (its columns in table order) and the
    dataset's ``runs`` rows agree with the chain (see the module docstring)."""
    try:
        _check(conn, genesis, dataset_id, row)
    except _MismatchError as exc:
        raise _corrupt(path, dataset_id, str(exc)) from None
    except (ValueError, TypeError, ArithmeticError, KeyError) as exc:
        raise _corrupt(path, dataset_id, f"cannot be checked ({type(exc).__name__}: {exc})") \
            from None


def _check(conn: sqlite3.Connection, genesis: str, dataset_id: str,
           row: tuple[Any, ...]) -> None:
    records = _chain_records(conn, genesis, dataset_id)
    if not records or records[0]["kind"] != "dataset":
        raise _MismatchError(
            "the datasets row has no registration entry in the chain before its runs")
    registration, opens = records[0], records[1:]
    if any(r["kind"] != "run-open" for r in opens):
        again = next(r["seq"] for r in opens if r["kind"] != "run-open")
        raise _MismatchError(
            f"the chain registers it twice (entries {registration['seq']} and {again})")
    relation = _registration(registration, dataset_id, row)
    expected = {}
    budgets: Counter[tuple[str, str]] = Counter()  # runs mostly share a few budgets
    for r in opens:
        key = _run_open(r, dataset_id, relation)
        expected[key[0]] = key
        budgets[key[2], key[3]] += 1
    if len(expected) != len(opens):
        raise _MismatchError("the chain opens one run id twice")
    reserved_eps, reserved_delta = Fraction(0), Fraction(0)
    for (eps_text, delta_text), count in budgets.items():
        eps, delta = _parsed_budget(eps_text, delta_text, "budget")
        reserved_eps += count * eps
        reserved_delta += count * delta
    stored = {
        r[0]: tuple(r) for r in conn.execute(
            f"SELECT {', '.join(_RUN_KEY_COLUMNS)} FROM runs WHERE dataset_id=?",
            (dataset_id,))}
    for run_id, key in expected.items():
        have = stored.get(run_id)
        if have is None:
            raise _MismatchError(
                f"run {run_id!r} (entry {key[-1]}) has no runs row for this dataset")
        if have != key:
            raise _MismatchError(
                f"the runs row of run {run_id!r} differs from its run-open entry "
                f"{key[-1]}: stored {have!r}, chain {key!r}")
    extra = sorted(set(stored) - set(expected), key=str)
    if extra:
        raise _MismatchError(f"runs row {extra[0]!r} has no run-open entry in the chain")
    lifetime_eps = parse_fraction(row[1], "epsilon")
    lifetime_delta = parse_fraction(row[2], "delta")
    if reserved_eps > lifetime_eps or reserved_delta > lifetime_delta:
        raise _MismatchError("the chain's reservations exceed the registered lifetime")
    stored_totals = (parse_fraction(row[6], "reserved_epsilon"),
                     parse_fraction(row[7], "reserved_delta"), row[8])
    if stored_totals != (reserved_eps, reserved_delta, len(opens)):
        raise _MismatchError(
            f"the datasets row's reserved totals (eps={row[6]!r}, delta={row[7]!r}, "
            f"runs={row[8]!r}) differ from the chain's (eps={str(reserved_eps)!r}, "
            f"delta={str(reserved_delta)!r}, runs={len(opens)})")


def _chain_records(conn: sqlite3.Connection, genesis: str,
                   dataset_id: str) -> list[dict[str, Any]]:
    """The dataset's registration and run-open entries, each checked against its hash
    and its links to its neighbours in the chain."""
    records = []
    for raw in conn.execute(_REGISTRY_QUERY, (dataset_id,)).fetchall():
        record, problem = row_to_record(raw)
        where = f"entry {record['seq']!r} ({record['kind']!r})"
        if problem is not None:
            raise _MismatchError(f"{where}: {problem}")
        try:
            recomputed = entry_hash(record)
        except (TypeError, ValueError) as exc:
            raise _MismatchError(f"{where} cannot be canonically encoded ({exc})") from None
        if recomputed != record["hash"]:
            raise _MismatchError(f"{where}: stored hash does not match its contents")
        if isinstance(record["seq"], bool) or not isinstance(record["seq"], int):
            raise _MismatchError(f"{where}: malformed sequence number")
        records.append(record)
    _check_links(conn, genesis, records)
    return records


def _check_links(conn: sqlite3.Connection, genesis: str,
                 records: Sequence[dict[str, Any]]) -> None:
    """Each entry's ``prev_hash`` is its predecessor's stored hash (the genesis for
    entry 1) and its successor's ``prev_hash`` is its hash (or it is the head)."""
    if not records:
        return
    wanted = sorted({s for r in records for s in (r["seq"] - 1, r["seq"] + 1) if s >= 1})
    found: dict[int, tuple[str, str]] = {}
    for i in range(0, len(wanted), _CHUNK):
        part = wanted[i:i + _CHUNK]
        for seq, prev, h in conn.execute(
                f"SELECT seq, prev_hash, hash FROM entries WHERE seq IN "
                f"({', '.join('?' * len(part))})", part):
            found[seq] = (prev, h)
    head = conn.execute("SELECT max(seq) FROM entries").fetchone()[0]
    for r in records:
        seq = r["seq"]
        before = genesis if seq == 1 else found.get(seq - 1, (None, None))[1]
        if r["prev_hash"] != before:
            raise _MismatchError(f"entry {seq} does not link to the entry before it")
        after = found.get(seq + 1)
        if after is None and seq != head:
            raise _MismatchError(f"entry {seq + 1} is missing from the chain")
        if after is not None and after[0] != r["hash"]:
            raise _MismatchError(f"entry {seq + 1} does not link to entry {seq}")


def _registration(r: dict[str, Any], dataset_id: str, row: tuple[Any, ...]) -> str:
    """Compare the registration entry with the ``datasets`` row; returns the relation."""
    data = r["data"]
    seq = r["seq"]
    if r["run_id"] is not None or not isinstance(data, dict) \
            or set(data) != {"lifetime", "description"}:
        raise _MismatchError(f"registration entry {seq} is malformed")
    lifetime = data["lifetime"]
    if not isinstance(lifetime, dict) or set(lifetime) != {"epsilon", "delta"}:
        raise _MismatchError(f"registration entry {seq}: malformed lifetime")
    _parsed_budget(lifetime["epsilon"], lifetime["delta"], f"registration entry {seq}")
    relation = r["relation"]
    if relation not in {rel.value for rel in Relation}:
        raise _MismatchError(f"registration entry {seq}: unknown relation {relation!r}")
    expected = (dataset_id, lifetime["epsilon"], lifetime["delta"], relation,
                data["description"], seq)
    if tuple(row[:6]) != expected:
        raise _MismatchError(
            f"the datasets row differs from its registration entry {seq}: stored "
            f"{tuple(row[:6])!r}, chain {expected!r}")
    return str(relation)


def _run_open(r: dict[str, Any], dataset_id: str, relation: str) -> tuple[Any, ...]:
    """The runs-row key a run-open entry implies (its budget texts are items 2 and 3,
    checked to be a valid budget)."""
    data = r["data"]
    seq = r["seq"]
    run_id = r["run_id"]
    if not isinstance(run_id, str) or not run_id or not isinstance(data, dict) \
            or set(data) != {"budget", "rule", "description"} \
            or not isinstance(data["budget"], dict) \
            or set(data["budget"]) != {"epsilon", "delta"} \
            or not isinstance(r["seed_explicit"], bool):
        raise _MismatchError(f"run-open entry {seq} is malformed")
    budget = data["budget"]
    _parsed_budget(budget["epsilon"], budget["delta"], f"run-open entry {seq}")
    if data["rule"] not in RULES or r["relation"] != relation:
        raise _MismatchError(f"run-open entry {seq}: unknown rule or a relation other than "
                             "the dataset's")
    return (run_id, dataset_id, budget["epsilon"], budget["delta"], data["rule"], relation,
            int(r["seed_explicit"]), data["description"], seq)


def _parsed_budget(epsilon: object, delta: object, where: str) -> tuple[Fraction, Fraction]:
    """The exact (eps, delta) of a budget's stored texts, validated as ``verify`` does."""
    if not isinstance(epsilon, str) or not isinstance(delta, str):
        raise _MismatchError(f"{where}: the budget is not exact fraction text")
    try:
        return _budget_of_texts(epsilon, delta)
    except _EntryError as exc:
        raise _MismatchError(f"{where}: {exc}") from None


@functools.lru_cache(maxsize=256)
def _budget_of_texts(epsilon: str, delta: str) -> tuple[Fraction, Fraction]:
    """A pure function of the two texts, cached: a dataset's runs share a few budgets."""
    return _budget_from({"epsilon": epsilon, "delta": delta}, "budget")
