"""Independent verification of a ledger's hash chain, costs and totals.

:class:`ChainChecker` walks the entries of a ledger (read from SQLite or from an
exported certificate) in sequence order and re-derives everything from them: the
hashes and their linkage, the cost of every mechanism entry from its stored public
parameters, every run's spending under its rule and every dataset's reservations.
It never trusts a stored total or a stored cost; those are compared with the
re-derived values by the callers.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from accounting.costs import Cost, rho_for_budget, round_up, zcdp_to_epsilon
from accounting.entries import JSONValue
from accounting.errors import AccountingError, LedgerCorruptError, LedgerError
from accounting.ledger._format import (
    ENTRY_KINDS,
    RULES,
    RUN_STATUSES,
    STORED_FIELDS,
    budget_dict,
    canonical_json,
    entry_hash,
    parse_fraction,
)
from accounting.ledger._rederive import rederive
from accounting.relations import Relation

_HEX = frozenset("0123456789abcdef")


def is_hash(value: object) -> bool:
    return isinstance(value, str) and len(value) == 64 and set(value) <= _HEX


# ---------------------------------------------------------------------------------
# Rule arithmetic (shared with the writer, so writer and verifier agree exactly)
# ---------------------------------------------------------------------------------
def rule_violation(
    rule: str,
    budget_epsilon: Fraction,
    budget_delta: Fraction,
    spent_epsilon: Fraction | None,
    spent_delta: Fraction,
    spent_rho: Fraction | None,
) -> str | None:
    """Why the spending does not fit the reservation under ``rule`` (``None`` if it fits)."""
    if rule == "basic":
        if spent_epsilon is None:
            return "an entry has no epsilon bound, which the basic rule needs"
        if spent_epsilon > budget_epsilon:
            return f"spent epsilon {float(spent_epsilon)!r} > reserved {float(budget_epsilon)!r}"
        if spent_delta > budget_delta:
            return f"spent delta {float(spent_delta)!r} > reserved {float(budget_delta)!r}"
        return None
    if rule == "zcdp":
        if spent_rho is None:
            return "an entry has no zCDP bound, which the zcdp rule needs"
        if spent_delta >= budget_delta:
            if spent_delta == 0 and spent_rho == 0:
                return None
            return f"spent delta {float(spent_delta)!r} leaves no delta for the zCDP conversion"
        limit = rho_for_budget(budget_epsilon, budget_delta - spent_delta)
        if spent_rho > limit:
            return f"spent rho {float(spent_rho)!r} > budget rho {float(limit)!r}"
        return None
    return f"unknown rule {rule!r}"


def run_charge(rule: str, status: str, entries: int, budget_epsilon: Fraction,
               budget_delta: Fraction, spent_epsilon: Fraction | None,
               spent_delta: Fraction) -> tuple[Fraction, Fraction]:
    """What a run takes from its dataset's lifetime (eps, delta), exactly.

    * an **open** run (never closed: running, or killed) holds its whole reservation;
    * a closed run that admitted **no** mechanism releases nothing: ``(0, 0)``;
    * a closed ``basic`` run: the exact sums of its mechanisms' ``(eps, delta)``, i.e.
      the charges of the individual mechanisms, each of which the lifetime's basic
      composition filter counts (its unspent reservation, and any delta no mechanism
      used, go back to the lifetime);
    * a closed ``zcdp`` run that admitted a mechanism: its whole reservation (a
      zCDP run's realized rho converts to an (eps, delta) bound only through an
      odometer, which is not what the run's filter proves; see
      ``docs/privacy/ledger-composition.md``).

    A basic run whose sums are unknown or above its reservation (a corrupt chain) is
    charged its reservation, never less.
    """
    if status == "open":
        return budget_epsilon, budget_delta
    if entries == 0:
        return Fraction(0), Fraction(0)
    if rule == "basic" and spent_epsilon is not None \
            and spent_epsilon <= budget_epsilon and spent_delta <= budget_delta:
        return spent_epsilon, spent_delta
    return budget_epsilon, budget_delta


# ---------------------------------------------------------------------------------
# The zcdp lifetime rule (docs/privacy/ledger-composition.md, "zCDP lifetime")
# ---------------------------------------------------------------------------------
#: How a dataset's lifetime composes its units: ``basic`` (the default; sums of
#: (eps, delta)) or ``zcdp`` (a sum of rho within the lifetime's rho).
LIFETIME_RULES = ("basic", "zcdp")
#: The keys of a registration entry's data under each lifetime rule (``basic`` is the
#: format every earlier ledger holds, unchanged).
DATASET_KEYS = {"basic": frozenset({"lifetime", "description"}),
                "zcdp": frozenset({"lifetime", "description", "lifetime_rule",
                                   "lifetime_rho"})}
#: The keys of a run-open entry's data under each lifetime rule.
RUN_OPEN_KEYS = {"basic": frozenset({"budget", "rule", "description"}),
                 "zcdp": frozenset({"budget", "rule", "description", "rho"})}


#: ``rho_for_budget`` memoised (a pure function of exact arguments): a writer's fold
#: re-derives the rho of every run-open of a zcdp lifetime before each reservation, and
#: runs repeat a few budgets.
_rho_of_budget = functools.lru_cache(maxsize=4096)(rho_for_budget)


def lifetime_rho(epsilon: Fraction, delta: Fraction) -> Fraction:
    """The rho of a ``zcdp`` lifetime ``(eps_L, delta_L)``: the largest rho (rounded
    down) with ``zcdp_to_epsilon(rho, delta_L) <= eps_L`` (``Budget.rho()``)."""
    if delta <= 0:
        raise ValueError("a zcdp lifetime needs delta > 0 for its conversion")
    return _rho_of_budget(epsilon, delta)


def reservation_rho(rule: str, epsilon: Fraction, delta: Fraction) -> Fraction:
    """A run's reservation under a ``zcdp`` lifetime, in rho.

    * a ``zcdp`` run: ``Budget(eps, delta).rho()`` (its filter keeps the sum of its
      mechanisms' rho within it);
    * a ``basic`` run (pure: ``delta`` must be 0): ``eps^2 / 2`` (its filter keeps
      ``sum eps_m <= eps``, so ``sum eps_m^2/2 <= eps^2/2``).
    """
    if rule == "zcdp":
        return _rho_of_budget(epsilon, delta)
    if rule == "basic":
        if delta != 0:
            raise ValueError("under a zcdp lifetime a basic run must be pure (delta = 0)")
        return epsilon * epsilon / 2
    raise ValueError(f"unknown rule {rule!r}")


def unit_rho(epsilon: Fraction | None, delta: Fraction, rho: Fraction | None
             ) -> Fraction | None:
    """The cost of one mechanism as a unit of a ``zcdp`` lifetime: the smaller of its
    zCDP bound and ``eps^2/2`` (pure ``eps``-DP is ``eps^2/2``-zCDP, Bun and Steinke
    2016, Prop. 1.4); ``None`` when it is not a zCDP mechanism (``delta > 0``)."""
    if delta != 0:
        return None
    half_square = None if epsilon is None else epsilon * epsilon / 2
    if rho is None:
        return half_square
    if half_square is None or rho <= half_square:
        return rho
    return half_square


def unit_violation(reserved_rho: Fraction, units: Fraction | None) -> str | None:
    """Why a run's units do not fit its rho reservation (``None`` if they do)."""
    if units is None:
        return ("a mechanism with delta > 0 that is not zCDP cannot be a unit of a zcdp "
                "lifetime")
    if units > reserved_rho:
        return f"its units rho {float(units)!r} > its reservation rho {float(reserved_rho)!r}"
    return None


def run_charge_rho(status: str, entries: int, reserved_rho: Fraction,
                   units: Fraction | None) -> Fraction:
    """What a run takes from a ``zcdp`` lifetime, in rho, exactly: an open run its
    reservation; a closed run the exact sum of its mechanisms' unit rho (0 without a
    mechanism); its reservation, never less, when the sum is unknown or above it (a
    corrupt chain)."""
    if status == "open":
        return reserved_rho
    if entries == 0:
        return Fraction(0)
    if units is not None and units <= reserved_rho:
        return units
    return reserved_rho


def rho_converted(rho: Fraction, delta: Fraction) -> tuple[Fraction, Fraction]:
    """``rho``-zCDP as (eps, delta) at ``delta`` (``(0, 0)`` for ``rho = 0``)."""
    if rho == 0:
        return Fraction(0), Fraction(0)
    return zcdp_to_epsilon(rho, delta), delta


def _display(q: Fraction) -> float | None:
    """``q`` rounded up to a float, or ``None`` if no finite float is that large."""
    try:
        return round_up(q)
    except OverflowError:
        return None


# ---------------------------------------------------------------------------------
# Totals and report
# ---------------------------------------------------------------------------------
@dataclass
class RunRecord:
    """One run as its entries declare it: identity, budget, status and counts (shared by
    the verifier's :class:`RunTotals` and the writers' fold,
    :class:`accounting.ledger._state.RunState`)."""

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


@dataclass
class RunTotals(RunRecord):
    """What one run reserved and spent, re-derived from the chain."""

    spent_epsilon: Fraction | None = Fraction(0)
    spent_delta: Fraction = Fraction(0)
    spent_rho: Fraction | None = Fraction(0)
    #: Under a ``zcdp`` lifetime: the run's reservation in rho (:func:`reservation_rho`)
    #: and the exact sum of its mechanisms' unit rho (``None`` once a mechanism is not a
    #: unit); ``None`` / unused under a ``basic`` lifetime.
    reserved_rho: Fraction | None = None
    units: Fraction | None = Fraction(0)

    def add(self, cost: Cost) -> None:
        self.entries += 1
        unit = unit_rho(cost.epsilon, cost.delta, cost.rho)
        self.units = None if self.units is None or unit is None else self.units + unit
        self.spent_epsilon = (
            None if self.spent_epsilon is None or cost.epsilon is None
            else self.spent_epsilon + cost.epsilon
        )
        self.spent_delta += cost.delta
        self.spent_rho = (
            None if self.spent_rho is None or cost.rho is None else self.spent_rho + cost.rho
        )

    def charge(self) -> tuple[Fraction, Fraction]:
        """What this run takes from its dataset's lifetime now (:func:`run_charge`)."""
        return run_charge(self.rule, self.status, self.entries, self.budget_epsilon,
                          self.budget_delta, self.spent_epsilon, self.spent_delta)

    def charge_rho(self) -> Fraction:
        """What this run takes from a ``zcdp`` lifetime now (:func:`run_charge_rho`)."""
        assert self.reserved_rho is not None
        return run_charge_rho(self.status, self.entries, self.reserved_rho, self.units)

    def spent_by_rule(self) -> dict[str, JSONValue]:
        """Spending under every rule that applies to all of the run's entries.

        Exact values are ``"p/q"`` strings; the ``*_float`` values are for display only
        (rounded up; ``None`` where a float cannot represent them).
        """
        out: dict[str, JSONValue] = {}
        if self.spent_epsilon is not None:
            out["basic"] = {
                "epsilon": str(self.spent_epsilon),
                "delta": str(self.spent_delta),
                "epsilon_float": _display(self.spent_epsilon),
                "delta_float": _display(self.spent_delta),
            }
        if self.spent_rho is not None:
            zc: dict[str, JSONValue] = {
                "rho": str(self.spent_rho),
                "delta": str(self.spent_delta),
                "rho_float": _display(self.spent_rho),
                "epsilon_float": None,
            }
            slack = self.budget_delta - self.spent_delta
            if slack > 0:
                try:
                    zc["epsilon_float"] = round_up(zcdp_to_epsilon(self.spent_rho, slack))
                except (ArithmeticError, ValueError):
                    zc["epsilon_float"] = None
            out["zcdp"] = zc
        return out

    def to_dict(self) -> dict[str, JSONValue]:
        out: dict[str, JSONValue] = {
            "run_id": self.run_id,
            "dataset_id": self.dataset_id,
            "rule": self.rule,
            "relation": self.relation,
            "budget": budget_dict(self.budget_epsilon, self.budget_delta),
            "seed_explicit": self.seed_explicit,
            "description": self.description,
            "status": self.status,
            "opened_seq": self.opened_seq,
            "closed_seq": self.closed_seq,
            "entries": self.entries,
            "outputs": self.outputs,
            "spent": self.spent_by_rule(),
        }
        if self.reserved_rho is not None:  # a run under a zcdp lifetime
            out["lifetime_units"] = {
                "reserved_rho": str(self.reserved_rho),
                "units_rho": None if self.units is None else str(self.units),
                "charged_rho": str(self.charge_rho()),
            }
        return out


@dataclass
class DatasetTotals:
    """A dataset's lifetime budget and the reservations of its runs."""

    dataset_id: str
    relation: str
    description: str
    lifetime_epsilon: Fraction
    lifetime_delta: Fraction
    registered_seq: int
    reserved_epsilon: Fraction = Fraction(0)
    reserved_delta: Fraction = Fraction(0)
    runs: list[str] = field(default_factory=list)
    #: What the runs take from the lifetime (open runs: reservation; closed runs: their
    #: realized charge, :func:`run_charge`), kept current in chain order.
    charged_epsilon: Fraction = Fraction(0)
    charged_delta: Fraction = Fraction(0)
    #: The lifetime rule (``basic``: the (eps, delta) sums above; ``zcdp``: the rho
    #: below, and ``charged_*`` is then the conversion of ``charged_rho``).
    lifetime_rule: str = "basic"
    lifetime_rho: Fraction | None = None
    charged_rho: Fraction = Fraction(0)

    @property
    def remaining_rho(self) -> Fraction | None:
        return None if self.lifetime_rho is None else self.lifetime_rho - self.charged_rho

    def converted(self) -> None:
        """Under a ``zcdp`` lifetime: set ``charged_*`` to the (eps, delta) conversion
        of ``charged_rho`` at the lifetime's delta (display; admission uses rho)."""
        if self.lifetime_rule == "zcdp":
            self.charged_epsilon, self.charged_delta = rho_converted(
                self.charged_rho, self.lifetime_delta)

    def to_dict(self, legacy: bool = False) -> dict[str, JSONValue]:
        """The certificate's entry. ``legacy``: the form written before refunds (no
        ``charged``; ``remaining`` from the reservations), which old certificates hold.
        Under a ``zcdp`` lifetime ``charged`` is the conversion of the charged rho,
        ``remaining`` the conversion of the remaining rho (what one more ``zcdp`` run
        at the lifetime's delta could reserve, up to rounding) and ``rho`` states the
        exact rho values."""
        used_eps, used_delta = ((self.reserved_epsilon, self.reserved_delta) if legacy
                                else (self.charged_epsilon, self.charged_delta))
        if self.lifetime_rule == "zcdp" and not legacy:
            assert self.lifetime_rho is not None
            left = max(self.lifetime_rho - self.charged_rho, Fraction(0))
            conv = rho_converted(left, self.lifetime_delta)
            zc: dict[str, JSONValue] = {
                "dataset_id": self.dataset_id,
                "relation": self.relation,
                "description": self.description,
                "lifetime": budget_dict(self.lifetime_epsilon, self.lifetime_delta),
                "lifetime_rule": "zcdp",
                "reserved": budget_dict(self.reserved_epsilon, self.reserved_delta),
                "remaining": budget_dict(min(conv[0], self.lifetime_epsilon), conv[1]),
                "registered_seq": self.registered_seq,
                "runs": list(self.runs),
                "charged": budget_dict(*rho_converted(self.charged_rho,
                                                      self.lifetime_delta)),
                "rho": {"lifetime": str(self.lifetime_rho),
                        "charged": str(self.charged_rho),
                        "remaining": str(left)},
            }
            return zc
        out: dict[str, JSONValue] = {
            "dataset_id": self.dataset_id,
            "relation": self.relation,
            "description": self.description,
            "lifetime": budget_dict(self.lifetime_epsilon, self.lifetime_delta),
            "reserved": budget_dict(self.reserved_epsilon, self.reserved_delta),
            "remaining": budget_dict(
                max(self.lifetime_epsilon - used_eps, Fraction(0)),
                max(self.lifetime_delta - used_delta, Fraction(0)),
            ),
            "registered_seq": self.registered_seq,
            "runs": list(self.runs),
        }
        if not legacy:
            out["charged"] = budget_dict(self.charged_epsilon, self.charged_delta)
        return out


@dataclass(frozen=True)
class VerificationReport:
    """Outcome of :meth:`Ledger.verify` or :func:`verify_certificate`.

    ``ok`` is true exactly when ``problems`` is empty. ``datasets`` and ``runs`` are
    the totals re-derived from the chain (not the stored ones).
    """

    ok: bool
    problems: tuple[str, ...]
    source: str
    ledger_id: str | None
    entries: int
    head_hash: str | None
    datasets: tuple[DatasetTotals, ...]
    runs: tuple[RunTotals, ...]

    def raise_if_failed(self) -> None:
        """Raise :class:`LedgerCorruptError` naming the first problem (and the count)."""
        if not self.ok:
            more = f" (and {len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
            raise LedgerCorruptError(f"{self.source} does not verify: {self.problems[0]}{more}")

    def summary(self) -> dict[str, JSONValue]:
        return {
            "ok": self.ok,
            "problems": list(self.problems),
            "source": self.source,
            "ledger_id": self.ledger_id,
            "entries": self.entries,
            "head_hash": self.head_hash,
            "datasets": [d.to_dict() for d in self.datasets],
            "runs": [r.to_dict() for r in self.runs],
        }


# ---------------------------------------------------------------------------------
# The checker
# ---------------------------------------------------------------------------------
class _EntryError(Exception):
    """A semantic problem with one entry (collected, never escapes the checker)."""


def _cost_from(value: object) -> Cost:
    if not isinstance(value, dict) or set(value) != {"epsilon", "delta", "rho"}:
        raise _EntryError(f"cost {value!r} must have exactly epsilon, delta and rho")
    parts: dict[str, Fraction | None] = {}
    for key in ("epsilon", "delta", "rho"):
        v = value[key]
        if v is None and key != "delta":
            parts[key] = None
            continue
        try:
            parts[key] = parse_fraction(v, f"cost.{key}")
        except ValueError as exc:
            raise _EntryError(str(exc)) from None
    delta = parts["delta"]
    assert delta is not None
    try:
        return Cost(parts["epsilon"], delta, parts["rho"])
    except AccountingError as exc:
        raise _EntryError(f"cost {value!r}: {exc}") from None


def _budget_from(value: object, name: str) -> tuple[Fraction, Fraction]:
    if not isinstance(value, dict) or set(value) != {"epsilon", "delta"}:
        raise _EntryError(f"{name} {value!r} must have exactly epsilon and delta")
    try:
        eps = parse_fraction(value["epsilon"], f"{name}.epsilon")
        delta = parse_fraction(value["delta"], f"{name}.delta")
        finite = math.isfinite(float(eps))
    except (ValueError, OverflowError) as exc:
        raise _EntryError(f"{name}: {exc}") from None
    if eps <= 0 or not finite:
        raise _EntryError(f"{name}.epsilon must be finite and > 0")
    if not 0 <= delta < 1:
        raise _EntryError(f"{name}.delta must be in [0, 1)")
    return eps, delta


def _lifetime_rho_of(data: dict[str, object], eps: Fraction, delta: Fraction) -> Fraction:
    """The rho a ``zcdp`` registration states, checked to be the one re-derived from its
    lifetime (:func:`lifetime_rho`)."""
    if data["lifetime_rule"] != "zcdp":
        raise _EntryError(f"unknown lifetime rule {data['lifetime_rule']!r}")
    if delta == 0:
        raise _EntryError("a zcdp lifetime needs delta > 0")
    try:
        stated = parse_fraction(data["lifetime_rho"], "lifetime_rho")
    except ValueError as exc:
        raise _EntryError(str(exc)) from None
    derived = lifetime_rho(eps, delta)
    if stated != derived:
        raise _EntryError(f"lifetime_rho {str(stated)!r} is not the rho of the lifetime "
                          f"({str(derived)!r})")
    return stated


def _run_rho_of(data: dict[str, object], rule: str, eps: Fraction, delta: Fraction
                ) -> Fraction:
    """The rho reservation a run-open entry under a ``zcdp`` lifetime states, checked to
    be the one re-derived from its budget and rule (:func:`reservation_rho`)."""
    if rule == "basic" and delta != 0:
        raise _EntryError("under a zcdp lifetime a basic run must reserve delta = 0")
    try:
        stated = parse_fraction(data["rho"], "rho")
    except ValueError as exc:
        raise _EntryError(str(exc)) from None
    derived = reservation_rho(rule, eps, delta)
    if stated != derived:
        raise _EntryError(f"the run's rho {str(stated)!r} is not the rho of its budget under "
                          f"rule {rule} ({str(derived)!r})")
    return stated


def _keys(data: dict[str, object], expected: set[str], what: str) -> None:
    if set(data) != expected:
        raise _EntryError(f"{what} data has keys {sorted(data)}, expected {sorted(expected)}")


def _str(data: dict[str, object], key: str) -> str:
    v = data[key]
    if not isinstance(v, str):
        raise _EntryError(f"data.{key} must be a string, got {v!r}")
    return v


_TYPES: dict[str, tuple[type, ...]] = {
    "seq": (int,),
    "kind": (str,),
    "dataset_id": (str,),
    "run_id": (str, type(None)),
    "mechanism": (str, type(None)),
    "params": (dict, type(None)),
    "sensitivity": (float, type(None)),
    "relation": (str,),
    "cost": (dict, type(None)),
    "purpose": (str,),
    "seed_explicit": (bool, type(None)),
    "data": (dict,),
    "timestamp": (str,),
    "prev_hash": (str,),
    "hash": (str,),
}


class ChainChecker:
    """Walks entries in order, collecting problems and re-deriving all totals."""

    def __init__(self, genesis: str) -> None:
        self.genesis = genesis
        self.problems: list[str] = []
        self.datasets: dict[str, DatasetTotals] = {}
        self.runs: dict[str, RunTotals] = {}
        self._mechanism_run: dict[int, str] = {}
        self._with_output: set[int] = set()
        self._prev: str = genesis
        self._count = 0
        #: Position of every stored hash seen (to check a published hash is in the chain).
        self.hashes: dict[str, int] = {}

    @property
    def head_hash(self) -> str | None:
        return None if self._count == 0 else self._prev

    def add(self, record: Mapping[str, object]) -> None:
        """Check the next entry (``record`` maps :data:`STORED_FIELDS` to values)."""
        self._count += 1
        position = self._count
        seq = record.get("seq")
        where = f"entry {seq!r}" if seq == position else f"entry #{position} (seq {seq!r})"
        stored_hash = record.get("hash")
        try:
            self._check_record(record, position, where)
        finally:
            self._prev = stored_hash if isinstance(stored_hash, str) else ""
            if isinstance(stored_hash, str):
                self.hashes.setdefault(stored_hash, position)

    def pin_problems(self, expected_head: str | None, contains: str | None) -> list[str]:
        """Problems with hashes published elsewhere: ``expected_head`` must be the head,
        ``contains`` must be the hash of some entry (an earlier head: history kept)."""
        problems = []
        for name, value in (("expected head", expected_head), ("pinned hash", contains)):
            if value is not None and not is_hash(value):
                raise LedgerError(f"{name} {value!r} is not a SHA-256 hex digest")
        if expected_head is not None and self.head_hash != expected_head:
            problems.append(
                f"head hash {self.head_hash!r} differs from the expected {expected_head!r}")
        if contains is not None and contains not in self.hashes:
            problems.append(
                f"pinned hash {contains!r} is not the hash of any entry: the history it "
                "pinned was rewritten, or it belongs to another ledger")
        return problems

    def _problem(self, message: str) -> None:
        self.problems.append(message)

    def _check_record(self, record: Mapping[str, object], position: int, where: str) -> None:
        missing = [k for k in STORED_FIELDS if k not in record]
        extra = [k for k in record if k not in STORED_FIELDS]
        if missing or extra:
            self._problem(f"{where}: fields missing {missing} / unexpected {extra}")
            return
        wrong = [
            k for k, types in _TYPES.items()
            if not isinstance(record[k], types)
            or (isinstance(record[k], bool) and bool not in types)
        ]
        if record["seq"] != position:
            self._problem(f"{where}: sequence number {record['seq']!r}, expected {position}")
        if record["prev_hash"] != self._prev:
            self._problem(f"{where}: prev_hash does not link to the previous entry's hash")
        try:
            recomputed = entry_hash(record)
        except (TypeError, ValueError) as exc:
            self._problem(f"{where}: cannot be canonically encoded ({exc})")
        else:
            if recomputed != record["hash"]:
                self._problem(f"{where}: stored hash does not match its contents")
        if wrong:
            self._problem(f"{where}: malformed field(s) {wrong}")
            return
        try:
            self._semantics(record)
        except _EntryError as exc:
            self._problem(f"{where}: {exc}")
        except (ArithmeticError, ValueError, TypeError, AccountingError) as exc:
            self._problem(f"{where}: cannot be checked ({type(exc).__name__}: {exc})")

    # -- per-kind semantics ------------------------------------------------------------
    def _semantics(self, r: Mapping[str, object]) -> None:
        kind = r["kind"]
        if kind not in ENTRY_KINDS:
            raise _EntryError(f"unknown entry kind {kind!r}")
        if r["relation"] not in {rel.value for rel in Relation}:
            raise _EntryError(f"unknown relation {r['relation']!r}")
        if not is_hash(r["hash"]):
            raise _EntryError("hash is not 64 lowercase hex digits")
        if kind != "mechanism":
            for name in ("mechanism", "params", "sensitivity", "cost", "seed_explicit"):
                if r[name] is not None and not (name == "seed_explicit" and kind == "run-open"):
                    raise _EntryError(f"a {kind} entry must not carry {name}")
        seq = r["seq"]
        assert isinstance(seq, int)
        data = r["data"]
        assert isinstance(data, dict)
        dataset_id = r["dataset_id"]
        assert isinstance(dataset_id, str)
        if kind == "dataset":
            self._dataset(r, seq, data, dataset_id)
            return
        dataset = self.datasets.get(dataset_id)
        if dataset is None:
            raise _EntryError(f"dataset {dataset_id!r} is not registered before this entry")
        run_id = r["run_id"]
        if not isinstance(run_id, str):
            raise _EntryError(f"a {kind} entry needs a run id")
        if kind == "run-open":
            self._run_open(r, seq, data, dataset, run_id)
            return
        run = self.runs.get(run_id)
        if run is None:
            raise _EntryError(f"run {run_id!r} was never opened")
        if run.dataset_id != dataset_id:
            raise _EntryError(f"run {run_id!r} belongs to dataset {run.dataset_id!r}")
        if run.status != "open":
            raise _EntryError(
                f"run {run_id!r} was already closed ({run.status}) at entry {run.closed_seq}")
        if r["relation"] != run.relation:
            raise _EntryError(f"relation {r['relation']!r} differs from the run's {run.relation!r}")
        if kind == "mechanism":
            self._mechanism(r, seq, run)
        elif kind == "output":
            _keys(data, {"of_seq", "output"}, "output")
            of = data["of_seq"]
            if isinstance(of, bool) or not isinstance(of, int):
                raise _EntryError(f"data.of_seq must be an integer, got {of!r}")
            if self._mechanism_run.get(of) != run.run_id:
                raise _EntryError(f"output refers to entry {of}, not a mechanism entry of this run")
            if of in self._with_output:
                raise _EntryError(f"entry {of} already has an output")
            self._with_output.add(of)
            run.outputs += 1
        else:  # run-close
            _keys(data, {"status"}, "run-close")
            status = _str(data, "status")
            if status not in RUN_STATUSES:
                raise _EntryError(f"unknown run status {status!r}")
            # the refund, re-derived from the chain at the point the run closed: the
            # dataset's charge drops from the reservation to the run's realized charge
            if dataset.lifetime_rule == "zcdp":
                held_rho = run.charge_rho()
                run.status = status
                run.closed_seq = seq
                dataset.charged_rho += run.charge_rho() - held_rho
                return
            held = run.charge()
            run.status = status
            run.closed_seq = seq
            final = run.charge()
            dataset.charged_epsilon += final[0] - held[0]
            dataset.charged_delta += final[1] - held[1]

    def _dataset(self, r: Mapping[str, object], seq: int, data: dict[str, object],
                 dataset_id: str) -> None:
        if r["run_id"] is not None:
            raise _EntryError("a dataset entry must not carry a run id")
        rule = "zcdp" if "lifetime_rule" in data else "basic"
        _keys(data, set(DATASET_KEYS[rule]), "dataset")
        if not dataset_id:
            raise _EntryError("empty dataset id")
        if dataset_id in self.datasets:
            raise _EntryError(f"dataset {dataset_id!r} registered twice")
        eps, delta = _budget_from(data["lifetime"], "lifetime")
        relation = r["relation"]
        assert isinstance(relation, str)
        totals = DatasetTotals(dataset_id, relation, _str(data, "description"), eps, delta, seq)
        if rule == "zcdp":
            totals.lifetime_rule = "zcdp"
            totals.lifetime_rho = _lifetime_rho_of(data, eps, delta)
        self.datasets[dataset_id] = totals

    def _run_open(self, r: Mapping[str, object], seq: int, data: dict[str, object],
                  dataset: DatasetTotals, run_id: str) -> None:
        _keys(data, set(RUN_OPEN_KEYS[dataset.lifetime_rule]), "run-open")
        if not run_id or run_id in self.runs:
            raise _EntryError(f"run id {run_id!r} is empty or reused")
        if r["relation"] != dataset.relation:
            raise _EntryError(
                f"relation {r['relation']!r} differs from the dataset's {dataset.relation!r}")
        seed_explicit = r["seed_explicit"]
        if not isinstance(seed_explicit, bool):
            raise _EntryError("a run-open entry must carry the seed_explicit flag")
        eps, delta = _budget_from(data["budget"], "budget")
        rule = _str(data, "rule")
        if rule not in RULES:
            raise _EntryError(f"unknown rule {rule!r}")
        if rule == "zcdp" and delta == 0:
            raise _EntryError("the zcdp rule needs a run budget with delta > 0")
        reserved_rho = None
        if dataset.lifetime_rule == "zcdp":
            assert dataset.lifetime_rho is not None
            reserved_rho = _run_rho_of(data, rule, eps, delta)
            new_rho = dataset.charged_rho + reserved_rho
            if new_rho > dataset.lifetime_rho:
                raise _EntryError(
                    f"run {run_id!r} reservation exceeds dataset {dataset.dataset_id!r}'s "
                    f"zcdp lifetime (charged would be rho={float(new_rho)!r} > "
                    f"{float(dataset.lifetime_rho)!r})")
            dataset.charged_rho = new_rho
        else:
            new_eps = dataset.charged_epsilon + eps
            new_delta = dataset.charged_delta + delta
            if new_eps > dataset.lifetime_epsilon or new_delta > dataset.lifetime_delta:
                raise _EntryError(
                    f"run {run_id!r} reservation exceeds dataset {dataset.dataset_id!r}'s "
                    f"lifetime budget (charged would be eps={float(new_eps)!r}, "
                    f"delta={float(new_delta)!r})")
            dataset.charged_epsilon, dataset.charged_delta = new_eps, new_delta
        dataset.reserved_epsilon += eps
        dataset.reserved_delta += delta
        dataset.runs.append(run_id)
        relation = r["relation"]
        assert isinstance(relation, str)
        self.runs[run_id] = RunTotals(
            run_id, dataset.dataset_id, rule, relation, eps, delta, seed_explicit,
            _str(data, "description"), seq, reserved_rho=reserved_rho,
        )

    def _mechanism(self, r: Mapping[str, object], seq: int, run: RunTotals) -> None:
        kind, params = r["mechanism"], r["params"]
        if not isinstance(kind, str) or not kind or not isinstance(params, dict):
            raise _EntryError("a mechanism entry needs a mechanism kind and its public parameters")
        if not isinstance(r["seed_explicit"], bool):
            raise _EntryError("a mechanism entry must carry the seed_explicit flag")
        sens = r["sensitivity"]
        if sens is not None and (not isinstance(sens, float) or not math.isfinite(sens)
                                 or sens < 0):
            raise _EntryError(f"sensitivity {sens!r} must be finite and >= 0")
        data = r["data"]
        assert isinstance(data, dict)
        _keys(data, {"extra"}, "mechanism")
        if not isinstance(data["extra"], dict):
            raise _EntryError("data.extra must be an object")
        declared = _cost_from(r["cost"])
        relation = Relation(str(r["relation"]))
        try:
            derived, derived_sensitivity = rederive(kind, params, relation)
        except (AccountingError, ArithmeticError, ValueError, TypeError, KeyError) as exc:
            raise _EntryError(
                f"cannot re-derive the cost of {kind!r} from its parameters: {exc}") from None
        self._mechanism_run[seq] = run.run_id
        run.add(derived)
        if sens != derived_sensitivity:
            raise _EntryError(
                f"sensitivity {sens!r} differs from the mechanism's {derived_sensitivity!r}")
        if derived != declared:
            raise _EntryError(
                f"declared cost {canonical_json(declared.as_dict())} differs from the cost "
                f"re-derived from the parameters {canonical_json(derived.as_dict())}"
            )
        why = rule_violation(run.rule, run.budget_epsilon, run.budget_delta,
                             run.spent_epsilon, run.spent_delta, run.spent_rho)
        if why is not None:
            raise _EntryError(
                f"run {run.run_id!r} exceeds its reservation under rule {run.rule}: {why}")
        if run.reserved_rho is not None:
            why = unit_violation(run.reserved_rho, run.units)
            if why is not None:
                raise _EntryError(
                    f"run {run.run_id!r} does not fit its dataset's zcdp lifetime: {why}")

    # -- result -------------------------------------------------------------------------
    def report(self, source: str, ledger_id: str | None,
               extra_problems: Sequence[str] = ()) -> VerificationReport:
        problems = tuple(self.problems) + tuple(extra_problems)
        for dataset in self.datasets.values():
            dataset.converted()  # a zcdp lifetime's charge as (eps, delta), once
        return VerificationReport(
            ok=not problems,
            problems=problems,
            source=source,
            ledger_id=ledger_id,
            entries=self._count,
            head_hash=self.head_hash,
            datasets=tuple(self.datasets.values()),
            runs=tuple(self.runs.values()),
        )
