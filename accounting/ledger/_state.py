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
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from hashlib import sha256 as _sha256
from json.encoder import encode_basestring_ascii as _encode_str
from typing import Any

from accounting.ledger._format import (
    ENTRY_FIELDS,
    ENTRY_KINDS,
    RULES,
    RUN_STATUSES,
    STORED_FIELDS,
    scalar_json,
)
from accounting.ledger._verify import (
    DATASET_KEYS,
    RUN_OPEN_KEYS,
    RunRecord,
    _budget_from,
    _cost_from,
    _EntryError,
    _lifetime_rho_of,
    _run_rho_of,
    run_charge,
    run_charge_rho,
    unit_rho,
    unit_violation,
)
from accounting.relations import Relation

_INDEX = {name: i for i, name in enumerate(STORED_FIELDS)}
#: (key prefix, column index, how the column is encoded) in canonical (sorted) key order
_ORDER = tuple(
    (("{" if i == 0 else ",") + json.dumps(name) + ":", _INDEX[name],
     "json" if name in ("params", "cost", "data") else
     "bool" if name == "seed_explicit" else "scalar")
    for i, name in enumerate(sorted(ENTRY_FIELDS)))


def entry_text(row: tuple[Any, ...]) -> str:
    """The canonical text an entry's hash covers, assembled from its stored row (see
    :func:`entry_text_generic`); this is its fast path for rows of the types the writer
    stores, the same text."""
    (seq, kind, ds, run, mech, params, sens, rel, cost, purpose, seed, data, ts,
     prev) = row[:14]
    if type(seq) is int and type(kind) is str and type(ds) is str and type(rel) is str \
            and type(purpose) is str and type(ts) is str and type(prev) is str \
            and type(data) is str and (run is None or type(run) is str) \
            and (mech is None or type(mech) is str) \
            and (params is None or type(params) is str) \
            and (cost is None or type(cost) is str) \
            and (sens is None or type(sens) is float) \
            and (seed is None or (type(seed) is int and 0 <= seed <= 1)):
        return (
            '{"cost":' + ("null" if cost is None else cost)
            + ',"data":' + data
            + ',"dataset_id":' + _encode_str(ds)
            + ',"kind":' + _encode_str(kind)
            + ',"mechanism":' + ("null" if mech is None else _encode_str(mech))
            + ',"params":' + ("null" if params is None else params)
            + ',"prev_hash":' + _encode_str(prev)
            + ',"purpose":' + _encode_str(purpose)
            + ',"relation":' + _encode_str(rel)
            + ',"run_id":' + ("null" if run is None else _encode_str(run))
            + ',"seed_explicit":' + ("null" if seed is None else "true" if seed else "false")
            + ',"sensitivity":' + ("null" if sens is None else scalar_json(sens))
            + ',"seq":' + int.__repr__(seq)
            + ',"timestamp":' + _encode_str(ts) + "}")
    return entry_text_generic(row)


def entry_text_generic(row: tuple[Any, ...]) -> str:
    """The canonical text an entry's hash covers, assembled from its stored row (the JSON
    columns as stored, the others encoded as the writer encodes them): equal to
    ``hashed_text`` of the writer's encodings for every row the writer stored, and for
    any other row a text whose hash cannot match. Raises :class:`_EntryError` for a
    value of a type no writer stores."""
    parts = []
    for prefix, i, how in _ORDER:
        v = row[i]
        if v is None:
            parts.append(prefix + "null")
        elif how == "json":
            if type(v) is not str:
                raise _EntryError("a JSON column is not text")
            parts.append(prefix + v)
        elif how == "bool":
            if type(v) is not int or v not in (0, 1):
                raise _EntryError(f"seed_explicit={v!r} is not 0/1")
            parts.append(prefix + ("true" if v else "false"))
        else:
            t = type(v)
            if t is str:
                parts.append(prefix + _encode_str(v))
            elif t is int:
                parts.append(prefix + int.__repr__(v))
            elif t is float:
                parts.append(prefix + scalar_json(v))
            else:
                raise _EntryError(f"a column holds a {t.__name__}")
    return "".join(parts) + "}"


_RELATIONS = frozenset(rel.value for rel in Relation)
_PREV = _INDEX["prev_hash"]
SELECT_ALL = f"SELECT {', '.join(STORED_FIELDS)} FROM entries ORDER BY seq"


@dataclass
class RunState(RunRecord):
    """One run as the chain defines it."""

    #: how many mechanism entries carry each cost (eps, delta, rho): a run repeats a few
    #: costs thousands of times, so the sums are formed once, not per entry
    costs: Counter[str] = field(default_factory=Counter)

    @property
    def spent(self) -> tuple[Fraction | None, Fraction, Fraction | None]:
        """The exact sums of the declared costs of the run's mechanism entries."""
        eps: Fraction | None = Fraction(0)
        delta = Fraction(0)
        rho_sum: Fraction | None = Fraction(0)
        for text, count in self.costs.items():
            e, d, r = _parsed_cost(text)
            eps = None if eps is None or e is None else eps + count * e
            delta += count * d
            rho_sum = None if rho_sum is None or r is None else rho_sum + count * r
        return eps, delta, rho_sum

    def charge(self) -> tuple[Fraction, Fraction]:
        """What this run takes from its dataset's lifetime now (:func:`run_charge`)."""
        if self.status == "open":  # (the sums are not needed)
            return self.budget_epsilon, self.budget_delta
        eps, delta, _ = self.spent
        return run_charge(self.rule, self.status, self.entries, self.budget_epsilon,
                          self.budget_delta, eps, delta)

    #: under a zcdp lifetime, the run's reservation in rho (None under a basic one)
    reserved_rho: Fraction | None = None

    @property
    def units(self) -> Fraction | None:
        """The exact sum of the unit rho of the run's mechanism entries (``None`` if one
        is not a unit of a zcdp lifetime)."""
        total = Fraction(0)
        for text, count in self.costs.items():
            unit = unit_rho(*_parsed_cost(text))
            if unit is None:
                return None
            total += count * unit
        return total

    def charge_rho(self) -> Fraction:
        """What this run takes from a zcdp lifetime now (:func:`run_charge_rho`)."""
        assert self.reserved_rho is not None
        if self.status == "open":
            return self.reserved_rho
        return run_charge_rho(self.status, self.entries, self.reserved_rho, self.units)


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
    #: the lifetime rule; under ``zcdp`` the lifetime's rho and the runs' charge in rho
    lifetime_rule: str = "basic"
    lifetime_rho: Fraction | None = None
    charged_rho: Fraction = Fraction(0)

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


_COSTS: dict[str, tuple[Fraction | None, Fraction, Fraction | None]] = {}


def _parsed_cost(text: object) -> tuple[Fraction | None, Fraction, Fraction | None]:
    """The exact (eps, delta, rho) of a mechanism entry's stored cost text (a pure
    function of the text, memoised)."""
    if not isinstance(text, str):
        raise _EntryError("a mechanism entry without a cost")
    hit = _COSTS.get(text)
    if hit is None:
        cost = _cost_from(json.loads(text))
        if len(_COSTS) > 4096:
            _COSTS.clear()
        hit = _COSTS[text] = (cost.epsilon, cost.delta, cost.rho)
    return hit


class ChainState:
    """The fold of a whole chain (see the module docstring)."""

    def __init__(self, genesis: str) -> None:
        self.problems: list[str] = []
        self.datasets: dict[str, DatasetState] = {}
        self.runs: dict[str, RunState] = {}
        self.head: tuple[int, str] | None = None
        self._prev = genesis
        self._count = 0
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
            if row[_PREV] != self._prev:
                raise _EntryError("does not link to the entry before it (prev_hash)")
            stored = row[-1]
            if _sha256(entry_text(row).encode("ascii")).hexdigest() != stored:
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
            lrule = "zcdp" if "lifetime_rule" in data else "basic"
            if set(data) != DATASET_KEYS[lrule] or dataset_id in self.datasets \
                    or row[_INDEX["run_id"]] is not None or not dataset_id \
                    or not isinstance(data["description"], str):
                raise _EntryError(f"malformed or repeated registration of {dataset_id!r}")
            eps, delta = _budget_from(data["lifetime"], "lifetime")
            state = DatasetState(dataset_id, relation, data["description"], eps, delta, seq)
            if lrule == "zcdp":
                state.lifetime_rule = "zcdp"
                state.lifetime_rho = _lifetime_rho_of(data, eps, delta)
            self.datasets[dataset_id] = state
            return
        dataset = self.datasets.get(dataset_id)
        if dataset is None:
            raise _EntryError(f"dataset {dataset_id!r} is not registered before this entry")
        run_id = row[_INDEX["run_id"]]
        if kind == "run-open":
            data = self._data(row)
            seed = row[_INDEX["seed_explicit"]]
            if not isinstance(run_id, str) or not run_id or run_id in self.runs \
                    or set(data) != RUN_OPEN_KEYS[dataset.lifetime_rule] \
                    or data["rule"] not in RULES or relation != dataset.relation \
                    or seed not in (0, 1) or not isinstance(data["description"], str):
                raise _EntryError(f"malformed or repeated run-open of {run_id!r}")
            eps, delta = _budget_from(data["budget"], "budget")
            if data["rule"] == "zcdp" and delta == 0:
                raise _EntryError("the zcdp rule needs a run budget with delta > 0")
            run = RunState(run_id, dataset_id, data["rule"], relation, eps, delta, bool(seed),
                           data["description"], seq)
            if dataset.lifetime_rule == "zcdp":
                assert dataset.lifetime_rho is not None
                run.reserved_rho = _run_rho_of(data, data["rule"], eps, delta)
                if dataset.charged_rho + run.reserved_rho > dataset.lifetime_rho:
                    raise _EntryError(f"run {run_id!r} was admitted beyond the zcdp lifetime "
                                      f"of dataset {dataset_id!r}")
                dataset.charged_rho += run.reserved_rho
            else:
                held_eps, held_delta = dataset.charged
                if held_eps + eps > dataset.lifetime_epsilon \
                        or held_delta + delta > dataset.lifetime_delta:
                    raise _EntryError(f"run {run_id!r} was admitted beyond the lifetime of "
                                      f"dataset {dataset_id!r}")
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
            cost_text = row[_INDEX["cost"]]
            _parsed_cost(cost_text)  # validated when first seen
            run.costs[cost_text] += 1
            run.entries += 1
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
            if run.reserved_rho is not None:
                held_rho = run.charge_rho()
                run.status = str(status)
                run.closed_seq = seq
                dataset.charged_rho += run.charge_rho() - held_rho
                return
            held = run.charge()
            run.status = str(status)
            run.closed_seq = seq
            final = run.charge()
            dataset.charged_epsilon += final[0] - held[0]
            dataset.charged_delta += final[1] - held[1]

    def finish(self) -> None:
        """Problems only visible at the end: a run over its reservation."""
        from accounting.ledger._verify import rule_violation

        for run in self.runs.values():
            eps, delta, rho = run.spent
            why = rule_violation(run.rule, run.budget_epsilon, run.budget_delta,
                                 eps, delta, rho)
            if why is not None:
                self.problems.append(f"run {run.run_id!r} exceeds its reservation: {why}")
                return
            if run.reserved_rho is not None:
                why = unit_violation(run.reserved_rho, run.units)
                if why is not None:
                    self.problems.append(
                        f"run {run.run_id!r} does not fit its dataset's zcdp lifetime: {why}")
                    return

