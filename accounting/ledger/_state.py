"""The accounting state a writer admits on, re-derived from the hash chain itself.

Before a reservation (and a registration), the writer reads EVERY entry of the chain
under the write lock, in sequence order, and

* re-hashes each one from its stored text and checks that it links to its
  predecessor (the genesis hash for entry 1): an entry edited without re-chaining
  everything after it (a changed ``kind``, ``dataset_id``, budget, lifetime or cost, a
  deleted or inserted entry) is found wherever it is in the chain;
* folds the entries into the per-dataset state admission needs: the lifetime, every
  run's reservation, rule and status, and the declared costs of its mechanism
  entries, hence every run's **charge** to the lifetime (:func:`run_charge`);
* collects any semantic problem (an unknown kind, a run opened twice or on an
  unregistered dataset, an entry of a closed or unknown run, a run over its
  reservation): any problem refuses the write.

Nothing is read from the ``datasets``/``runs`` tables or the ``entries_registry``
index: those are editable side copies (they are compared with this state afterwards,
so a ledger whose tables disagree with its chain is refused too). The costs used are
the declared ones; the writer checked each against its mechanism's parameters when it
wrote it, and an edit of one without re-chaining is a hash mismatch. A chain rewritten
consistently from some entry to the head passes this fold; on a key-bound ledger the
writer also requires the head to carry a valid signature by its key
(:meth:`Ledger._check_head_signature`), which such a rewrite cannot produce.

Cost: one pass over the chain (microseconds per entry, no cost re-derivation); see
``docs/ledger.md``, "Checked before every reservation".
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from accounting.ledger._format import (
    ENTRY_FIELDS,
    ENTRY_KINDS,
    RULES,
    RUN_STATUSES,
    STORED_FIELDS,
    hashed_text,
    scalar_json,
    sha256_hex,
)
from accounting.ledger._verify import _budget_from, _cost_from, _EntryError, run_charge
from accounting.relations import Relation

_JSON = frozenset({"params", "cost", "data"})
_BOOL = frozenset({"seed_explicit"})
_INDEX = {name: i for i, name in enumerate(STORED_FIELDS)}
_RELATIONS = frozenset(rel.value for rel in Relation)
SELECT_ALL = f"SELECT {', '.join(STORED_FIELDS)} FROM entries ORDER BY seq"


@dataclass
class RunState:
    """One run as the chain defines it."""

    run_id: str
    dataset_id: str
    rule: str
    relation: str
    budget_epsilon: Fraction
    budget_delta: Fraction
    seed_explicit: bool
    description: str
    opened_seq: int
    status: str = "open"
    closed_seq: int | None = None
    entries: int = 0
    outputs: int = 0
    spent_epsilon: Fraction | None = Fraction(0)
    spent_delta: Fraction = Fraction(0)
    spent_rho: Fraction | None = Fraction(0)

    def charge(self) -> tuple[Fraction, Fraction]:
        """What this run takes from its dataset's lifetime now (:func:`run_charge`)."""
        return run_charge(self.rule, self.status, self.entries, self.budget_epsilon,
                          self.budget_delta, self.spent_epsilon, self.spent_delta)


@dataclass
class DatasetState:
    """One dataset as the chain defines it: its registration and its runs."""

    dataset_id: str
    relation: str
    description: str
    lifetime_epsilon: Fraction
    lifetime_delta: Fraction
    registered_seq: int
    runs: dict[str, RunState] = field(default_factory=dict)
    #: running totals, kept current in chain order (refunds applied at each close)
    charged_epsilon: Fraction = Fraction(0)
    charged_delta: Fraction = Fraction(0)

    @property
    def reserved(self) -> tuple[Fraction, Fraction]:
        """The sum of every reservation ever made (what the ``datasets`` row stores)."""
        return (sum((r.budget_epsilon for r in self.runs.values()), Fraction(0)),
                sum((r.budget_delta for r in self.runs.values()), Fraction(0)))

    @property
    def charged(self) -> tuple[Fraction, Fraction]:
        """What the runs take from the lifetime now: open runs their reservation, closed
        runs their realized charge (docs/privacy/ledger-composition.md)."""
        return self.charged_epsilon, self.charged_delta


class ChainState:
    """The fold of a whole chain (see the module docstring)."""

    def __init__(self, genesis: str) -> None:
        self.problems: list[str] = []
        self.datasets: dict[str, DatasetState] = {}
        self.runs: dict[str, RunState] = {}
        self.head: tuple[int, str] | None = None
        self._prev = genesis
        self._count = 0
        self._costs: dict[str, tuple[Fraction | None, Fraction, Fraction | None]] = {}
        self._mechanisms: dict[int, str] = {}

    @classmethod
    def read(cls, conn: sqlite3.Connection, genesis: str) -> ChainState:
        """Fold every entry of the ledger on ``conn`` (inside the caller's transaction)."""
        state = cls(genesis)
        state.fold(conn.execute(SELECT_ALL))
        return state

    def fold(self, rows: Iterable[tuple[Any, ...]]) -> None:
        for row in rows:
            self._add(row)
            if len(self.problems) >= 1:
                return  # the first problem refuses; no need to read on

    def _add(self, row: tuple[Any, ...]) -> None:
        self._count += 1
        seq = row[0]
        where = f"entry {seq!r}"
        if seq != self._count or isinstance(seq, bool):
            self.problems.append(f"{where}: sequence number out of order "
                                 f"(expected {self._count}): an entry was deleted or inserted")
            return
        try:
            text = {}
            for name in ENTRY_FIELDS:
                v = row[_INDEX[name]]
                if name in _JSON and v is not None:
                    if not isinstance(v, str):
                        raise _EntryError(f"{name} is not text")
                    text[name] = v
                elif name in _BOOL and v is not None:
                    if v not in (0, 1) or isinstance(v, float):
                        raise _EntryError(f"{name}={v!r} is not 0/1")
                    text[name] = "true" if v else "false"
                else:
                    if isinstance(v, bytes):
                        raise _EntryError(f"{name} is a blob")
                    text[name] = scalar_json(v)
            if row[_INDEX["prev_hash"]] != self._prev:
                raise _EntryError("does not link to the entry before it (prev_hash)")
            stored = row[-1]
            if sha256_hex(hashed_text(text)) != stored:
                raise _EntryError("stored hash does not match its contents")
            self._prev = str(stored)
            self.head = (seq, str(stored))
            self._semantics(row, seq)
        except _EntryError as exc:
            self.problems.append(f"{where}: {exc}")
        except (ValueError, TypeError, ArithmeticError, KeyError, UnicodeError) as exc:
            self.problems.append(f"{where}: cannot be checked ({type(exc).__name__}: {exc})")

    def _data(self, row: tuple[Any, ...]) -> dict[str, Any]:
        data = json.loads(row[_INDEX["data"]])
        if not isinstance(data, dict):
            raise _EntryError("data is not an object")
        return data

    def _semantics(self, row: tuple[Any, ...], seq: int) -> None:
        kind = row[_INDEX["kind"]]
        dataset_id = row[_INDEX["dataset_id"]]
        relation = row[_INDEX["relation"]]
        if kind not in ENTRY_KINDS:
            raise _EntryError(f"unknown entry kind {kind!r}")
        if not isinstance(dataset_id, str) or relation not in _RELATIONS:
            raise _EntryError("malformed dataset id or relation")
        if kind == "dataset":
            data = self._data(row)
            if set(data) != {"lifetime", "description"} or dataset_id in self.datasets \
                    or row[_INDEX["run_id"]] is not None or not dataset_id \
                    or not isinstance(data["description"], str):
                raise _EntryError(f"malformed or repeated registration of {dataset_id!r}")
            eps, delta = _budget_from(data["lifetime"], "lifetime")
            self.datasets[dataset_id] = DatasetState(
                dataset_id, relation, data["description"], eps, delta, seq)
            return
        dataset = self.datasets.get(dataset_id)
        if dataset is None:
            raise _EntryError(f"dataset {dataset_id!r} is not registered before this entry")
        run_id = row[_INDEX["run_id"]]
        if kind == "run-open":
            data = self._data(row)
            seed = row[_INDEX["seed_explicit"]]
            if not isinstance(run_id, str) or not run_id or run_id in self.runs \
                    or set(data) != {"budget", "rule", "description"} \
                    or data["rule"] not in RULES or relation != dataset.relation \
                    or seed not in (0, 1) or not isinstance(data["description"], str):
                raise _EntryError(f"malformed or repeated run-open of {run_id!r}")
            eps, delta = _budget_from(data["budget"], "budget")
            if data["rule"] == "zcdp" and delta == 0:
                raise _EntryError("the zcdp rule needs a run budget with delta > 0")
            held_eps, held_delta = dataset.charged
            if held_eps + eps > dataset.lifetime_epsilon \
                    or held_delta + delta > dataset.lifetime_delta:
                raise _EntryError(f"run {run_id!r} was admitted beyond the lifetime of "
                                  f"dataset {dataset_id!r}")
            run = RunState(run_id, dataset_id, data["rule"], relation, eps, delta, bool(seed),
                           data["description"], seq)
            dataset.charged_epsilon += eps
            dataset.charged_delta += delta
            self.runs[run_id] = dataset.runs[run_id] = run
            return
        found = self.runs.get(run_id) if isinstance(run_id, str) else None
        if found is None or found.dataset_id != dataset_id or found.status != "open":
            raise _EntryError(f"a {kind} entry of a run that is unknown, closed or of "
                              "another dataset")
        run = found
        if kind == "mechanism":
            c_eps, c_delta, c_rho = self._cost(row[_INDEX["cost"]])
            run.entries += 1
            run.spent_epsilon = None if run.spent_epsilon is None or c_eps is None \
                else run.spent_epsilon + c_eps
            run.spent_delta += c_delta
            run.spent_rho = None if run.spent_rho is None or c_rho is None \
                else run.spent_rho + c_rho
            self._mechanisms[seq] = run.run_id
        elif kind == "output":
            of = self._data(row).get("of_seq")
            if self._mechanisms.get(of) != run.run_id:  # type: ignore[arg-type]
                raise _EntryError("output of an entry that is not a mechanism of its run")
            run.outputs += 1
        else:  # run-close
            status = self._data(row).get("status")
            if status not in RUN_STATUSES:
                raise _EntryError(f"unknown run status {status!r}")
            held = run.charge()
            run.status = str(status)
            run.closed_seq = seq
            final = run.charge()
            dataset.charged_epsilon += final[0] - held[0]
            dataset.charged_delta += final[1] - held[1]

    def _cost(self, text: object) -> tuple[Fraction | None, Fraction, Fraction | None]:
        if not isinstance(text, str):
            raise _EntryError("a mechanism entry without a cost")
        hit = self._costs.get(text)
        if hit is None:
            cost = _cost_from(json.loads(text))
            hit = self._costs[text] = (cost.epsilon, cost.delta, cost.rho)
        return hit

    def finish(self) -> None:
        """Problems only visible at the end: a run over its reservation."""
        from accounting.ledger._verify import rule_violation

        for run in self.runs.values():
            why = rule_violation(run.rule, run.budget_epsilon, run.budget_delta,
                                 run.spent_epsilon, run.spent_delta, run.spent_rho)
            if why is not None:
                self.problems.append(f"run {run.run_id!r} exceeds its reservation: {why}")
                return

