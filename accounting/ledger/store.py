"""The SQLite ledger: one file, WAL journal, one hash chain over every row that matters.

Layout (format version 1)::

    metadata(key, value)       format, format_version, ledger_id, created_at
    datasets(...)              one row per registered dataset + its reservation totals
    runs(...)                  one row per run + its spending totals and status
    entries(seq, ...)          the hash chain (dataset, run-open, mechanism, output,
                               run-close entries)
    entries_registry           partial index of the dataset and run-open entries

The ``datasets`` and ``runs`` tables are convenience totals; the chain in ``entries``
is authoritative and :meth:`Ledger.verify` recomputes the totals from it. Before a
reservation, the rows it is admitted on are tied to their chain entries
(:mod:`accounting.ledger._admission`). Every write
is one ``BEGIN IMMEDIATE`` transaction, so concurrent processes serialise on the
file's write lock and re-read the head of the chain and the totals under it.
See ``docs/ledger.md``.
"""

from __future__ import annotations

import functools
import math
import os
import sqlite3
import threading
import time
import uuid
import weakref
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import quote

from accounting.costs import Budget, Cost, exact, round_down
from accounting.entries import EntryDraft, JSONValue
from accounting.errors import (
    BudgetExceededError,
    DatasetConflictError,
    DuplicateDatasetError,
    ForeignLedgerError,
    InvalidParameterError,
    KeyFileError,
    LedgerCorruptError,
    LedgerError,
    LifetimeRuleError,
    RelationMismatchError,
    UnknownDatasetError,
    UnsignedLedgerError,
    WrongKeyError,
)
from accounting.ledger._admission import BOOL_COLUMNS as _BOOL_COLUMNS
from accounting.ledger._admission import JSON_COLUMNS as _JSON_COLUMNS
from accounting.ledger._admission import (
    REGISTRY_INDEX_SQL,
    chain_state,
    check_admission_rows,
    check_unregistered,
)
from accounting.ledger._admission import row_to_record as _row_to_record
from accounting.ledger._format import (
    ENTRY_FIELDS,
    FORMAT_NAME,
    FORMAT_VERSION,
    RULES,
    RUN_STATUSES,
    STORED_FIELDS,
    canonical_json,
    entry_hash,
    fraction_str,
    genesis_hash,
    hashed_text,
    parse_fraction,
    scalar_json,
    sha256_hex,
)
from accounting.ledger._rederive import rederive
from accounting.ledger._state import ChainState, DatasetState
from accounting.ledger._verify import (
    LIFETIME_RULES,
    ChainChecker,
    DatasetTotals,
    RunTotals,
    VerificationReport,
    lifetime_rho,
    reservation_rho,
    rho_converted,
    rule_violation,
    run_charge,
    unit_rho,
    unit_violation,
)
from accounting.ledger.signing import (
    KEY_ENV,
    METADATA_KEY,
    SIGNATURE_SCHEMA,
    SIGNATURE_TABLE,
    SignedHead,
    SigningKey,
    VerifyKey,
    head_message,
    head_problems,
    load_signing_key,
    load_verify_key,
    now,
    read_head_file,
    signature_problems,
    signing_key_from_env,
    write_head_file,
)
from accounting.relations import Relation

#: What ``signing_key`` arguments accept: a key file path or a loaded key.
KeySource = str | os.PathLike[str] | SigningKey
#: What ``public_key`` arguments accept: a ``.pub`` file path or a loaded key.
PublicKeySource = str | os.PathLike[str] | VerifyKey

SQLITE_MAGIC = b"SQLite format 3\x00"

_SCHEMA = (
    "CREATE TABLE metadata (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE datasets (dataset_id TEXT PRIMARY KEY, epsilon TEXT, delta TEXT, "
    "relation TEXT, description TEXT, registered_seq INTEGER, reserved_epsilon TEXT, "
    "reserved_delta TEXT, n_runs INTEGER)",
    "CREATE TABLE runs (run_id TEXT PRIMARY KEY, dataset_id TEXT, epsilon TEXT, delta TEXT, "
    "rule TEXT, relation TEXT, seed_explicit INTEGER, description TEXT, status TEXT, "
    "opened_seq INTEGER, closed_seq INTEGER, n_entries INTEGER, n_outputs INTEGER, "
    "spent_epsilon TEXT, spent_delta TEXT, spent_rho TEXT)",
    "CREATE TABLE entries (seq INTEGER PRIMARY KEY, kind TEXT, dataset_id TEXT, run_id TEXT, "
    "mechanism TEXT, params TEXT, sensitivity REAL, relation TEXT, cost TEXT, purpose TEXT, "
    "seed_explicit INTEGER, data TEXT, timestamp TEXT, prev_hash TEXT, hash TEXT)",
)
_TABLES = {"metadata", "datasets", "runs", "entries"}
#: Add a batch to a run's totals where the row still holds ``old`` totals and is open.
_CLAIM = ("UPDATE runs SET n_entries=n_entries+?, spent_epsilon=?, spent_delta=?, "
          "spent_rho=? WHERE run_id=? AND status='open' AND spent_epsilon IS ? "
          "AND spent_delta IS ? AND spent_rho IS ?")
_DATASET_COLUMNS = (
    "dataset_id", "epsilon", "delta", "relation", "description", "registered_seq",
    "reserved_epsilon", "reserved_delta", "n_runs",
)
_RUN_COLUMNS = (
    "run_id", "dataset_id", "epsilon", "delta", "rule", "relation", "seed_explicit",
    "description", "status", "opened_seq", "closed_seq", "n_entries", "n_outputs",
    "spent_epsilon", "spent_delta", "spent_rho",
)
_MAX_ID = 200


def _describe(exc: sqlite3.Error) -> str:
    """SQLite's message plus its extended error name (e.g. SQLITE_IOERR_SHMMAP)."""
    name = getattr(exc, "sqlite_errorname", None)
    return f"{exc} ({name})" if name else str(exc)


def _load_signer(source: object) -> SigningKey:
    if isinstance(source, SigningKey):
        return source
    if isinstance(source, str | os.PathLike):
        return load_signing_key(source)
    raise InvalidParameterError("signing_key", source, "must be a key file path or a SigningKey")


def _load_verify(source: object) -> VerifyKey:
    if isinstance(source, VerifyKey):
        return source
    if isinstance(source, str | os.PathLike):
        return load_verify_key(source)
    raise InvalidParameterError("public_key", source, "must be a .pub file path or a VerifyKey")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def _opt_str(q: Fraction | None) -> str | None:
    return None if q is None else fraction_str(q)


def _check_id(name: str, value: object) -> str:
    if not isinstance(value, str) or not value or len(value) > _MAX_ID:
        raise InvalidParameterError(
            name, value, f"must be a non-empty string of <= {_MAX_ID} chars")
    if not value.isprintable() or value != value.strip():
        raise InvalidParameterError(
            name, value, "must be printable, without control characters or surrounding spaces"
        )
    return value


def check_dataset_id(value: object) -> str:
    """``value`` if it is a valid dataset id (what :meth:`Ledger.ensure_dataset` accepts),
    else :class:`InvalidParameterError`: callers check it before creating a ledger file."""
    return _check_id("dataset_id", value)


def _check_text(name: str, value: object) -> str:
    if not isinstance(value, str):
        raise InvalidParameterError(name, value, "must be a string")
    return value


def _check_budget(name: str, budget: object) -> tuple[Fraction, Fraction]:
    """Re-validate a Budget (never trust that its constructor ran)."""
    if not isinstance(budget, Budget):
        raise InvalidParameterError(name, budget, "must be an accounting.costs.Budget")
    eps = exact(budget.epsilon, f"{name}.epsilon", allow_zero=False)
    delta = exact(budget.delta, f"{name}.delta")
    if delta >= 1:
        raise InvalidParameterError(f"{name}.delta", budget.delta, "must be in [0, 1)")
    return eps, delta


def _check_rule(rule: object) -> str:
    if rule not in RULES:
        raise InvalidParameterError("rule", rule, f"expected one of {', '.join(RULES)}")
    assert isinstance(rule, str)
    return rule


def check_lifetime_rule(rule: object, delta: Fraction) -> str:
    """A valid lifetime rule for a lifetime with ``delta`` (``zcdp`` needs delta > 0)."""
    if rule not in LIFETIME_RULES:
        raise InvalidParameterError("lifetime_rule", rule,
                                    f"expected one of {', '.join(LIFETIME_RULES)}")
    assert isinstance(rule, str)
    if rule == "zcdp" and delta == 0:
        raise InvalidParameterError("lifetime.delta", float(delta),
                                    "a zcdp lifetime needs delta > 0 for its conversion")
    return rule


def registration_data(eps: Fraction, delta: Fraction, description: str,
                      lifetime_rule: str) -> dict[str, JSONValue]:
    """The data of a registration entry (a ``basic`` lifetime: the format of every
    earlier ledger, byte for byte; a ``zcdp`` lifetime adds its rule and its rho)."""
    data: dict[str, JSONValue] = {
        "lifetime": {"epsilon": fraction_str(eps), "delta": fraction_str(delta)},
        "description": description}
    if lifetime_rule == "zcdp":
        data["lifetime_rule"] = "zcdp"
        data["lifetime_rho"] = fraction_str(lifetime_rho(eps, delta))
    return data


def run_rho_for(lifetime_rule: str, rule: str, eps: Fraction, delta: Fraction,
                dataset_id: str) -> Fraction | None:
    """A run's reservation in rho under the dataset's lifetime rule (``None`` under a
    basic lifetime); :class:`LifetimeRuleError` for a basic run with delta > 0 under a
    zcdp lifetime (its rule would admit mechanisms that are no zCDP unit)."""
    if lifetime_rule != "zcdp":
        return None
    if rule == "basic" and delta != 0:
        raise LifetimeRuleError(
            f"dataset {dataset_id!r} has a zcdp lifetime: a basic run must reserve "
            "delta = 0 (a mechanism with delta > 0 is not a zCDP unit); use the zcdp rule "
            "or delta = 0; nothing was reserved")
    return reservation_rho(rule, eps, delta)


def _budget_of(eps: Fraction, delta: Fraction) -> Budget:
    """A Budget no larger than the exact (eps, delta) (exact when they are floats)."""
    return Budget(round_down(eps), round_down(delta))


def _json_value(value: object, name: str) -> JSONValue:
    """``value`` as plain JSON (NumPy scalars and arrays converted), validated finite."""
    return _json_encoded(value, name)[0]


def _json_encoded(value: object, name: str) -> tuple[JSONValue, str]:
    """:func:`_json_value` and its canonical JSON text."""
    plain = _to_plain(value, name)
    try:
        text = canonical_json(plain)
    except (TypeError, ValueError) as exc:
        raise InvalidParameterError(name, value, f"must be JSON-serialisable and finite ({exc})") \
            from None
    return plain, text


#: Flat mappings of JSON scalars (entry ``params`` and ``extra``: a run repeats a few
#: parameter sets thousands of times) -> (plain copy, canonical JSON), as validated by
#: :func:`_json_encoded`. Keys are type-exact (:func:`_flat_key`), so values that compare
#: equal but encode differently (``1``/``1.0``/``True``, ``0.0``/``-0.0``) never share an
#: entry; only successfully validated values are stored.
_FLAT_CACHE: dict[tuple[tuple[str, type, object], ...], tuple[dict[str, JSONValue], str]] = {}
_FLAT_CACHE_SIZE = 4096
_SCALAR_TYPES = frozenset({str, int, float, bool, type(None)})


def _flat_key(value: object) -> tuple[tuple[str, type, object], ...] | None:
    """A type-exact key for a ``dict`` of ``str`` keys to JSON scalars; ``None`` for
    anything else (nested values, NumPy scalars, mappings of other types)."""
    if type(value) is not dict:
        return None
    key = []
    for k, v in value.items():
        t = type(v)
        if type(k) is not str or t not in _SCALAR_TYPES:
            return None
        key.append((k, t, float.hex(v) if t is float else v))
    return tuple(key)


def _flat_encoded(value: object, name: str) -> tuple[JSONValue, str]:
    """:func:`_json_encoded`, memoised for flat mappings of scalars (same results)."""
    key = _flat_key(value)
    if key is None:
        return _json_encoded(value, name)
    hit = _FLAT_CACHE.get(key)
    if hit is None:
        plain, text = _json_encoded(value, name)  # raises for NaN/inf: nothing stored
        assert isinstance(plain, dict)
        if len(_FLAT_CACHE) >= _FLAT_CACHE_SIZE:
            _FLAT_CACHE.clear()
        hit = _FLAT_CACHE[key] = (plain, text)
    return dict(hit[0]), hit[1]


@functools.lru_cache(maxsize=1024)
def _cost_json(cost: Cost) -> str:
    """Canonical JSON of ``cost.as_dict()`` (a pure function of the exact cost)."""
    return canonical_json(cost.as_dict())


def _to_plain(value: object, name: str) -> JSONValue:
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value
    if isinstance(value, Mapping):
        out: dict[str, JSONValue] = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise InvalidParameterError(name, value, "object keys must be strings")
            out[k] = _to_plain(v, name)
        return out
    if isinstance(value, list | tuple):
        return [_to_plain(v, name) for v in value]
    tolist = getattr(value, "tolist", None)  # NumPy arrays and scalars
    if callable(tolist):
        return _to_plain(tolist(), name)
    raise InvalidParameterError(name, value, "must be JSON-compatible")


# ---------------------------------------------------------------------------------
# Public value types
# ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class DatasetInfo:
    """A registered dataset, as stored (see :meth:`Ledger.verify` for re-derived totals)."""

    dataset_id: str
    lifetime_epsilon: Fraction
    lifetime_delta: Fraction
    relation: Relation
    description: str
    reserved_epsilon: Fraction
    reserved_delta: Fraction
    n_runs: int
    #: What the runs take from the lifetime: open runs their reservation, closed runs
    #: their realized charge (docs/privacy/ledger-composition.md). Re-derived from the
    #: chain where the ledger admits (``ensure_dataset``); from the ``runs`` rows, for
    #: display, in :meth:`Ledger.dataset`.
    charged_epsilon: Fraction = Fraction(0)
    charged_delta: Fraction = Fraction(0)
    #: ``basic`` (the default) or ``zcdp``. Under ``zcdp`` the lifetime is
    #: ``lifetime_rho``, the runs' charge ``charged_rho`` (what admission uses), and
    #: ``charged_*`` / ``remaining_*`` are their (eps, delta) conversions at the
    #: lifetime's delta (display).
    lifetime_rule: str = "basic"
    lifetime_rho: Fraction | None = None
    charged_rho: Fraction = Fraction(0)

    @property
    def lifetime(self) -> Budget:
        return _budget_of(self.lifetime_epsilon, self.lifetime_delta)

    @property
    def remaining_rho(self) -> Fraction | None:
        """Under a zcdp lifetime, the rho not charged yet (``None`` under basic)."""
        return None if self.lifetime_rho is None else self.lifetime_rho - self.charged_rho

    @property
    def remaining_epsilon(self) -> Fraction:
        left = self.remaining_rho
        if left is None:
            return self.lifetime_epsilon - self.charged_epsilon
        return min(rho_converted(left, self.lifetime_delta)[0], self.lifetime_epsilon)

    @property
    def remaining_delta(self) -> Fraction:
        left = self.remaining_rho
        if left is None:
            return self.lifetime_delta - self.charged_delta
        return rho_converted(left, self.lifetime_delta)[1]

    def fits(self, budget: tuple[Fraction, Fraction], rule: str | None) -> bool:
        """Whether a run reserving ``budget`` under ``rule`` fits the remaining lifetime
        (``rule=None``: under a zcdp lifetime, the cheaper of the rules the budget allows;
        advisory, :meth:`Ledger.open_run` decides)."""
        eps, delta = budget
        left = self.remaining_rho
        if left is None:
            return eps <= self.remaining_epsilon and delta <= self.remaining_delta
        rules = [rule] if rule is not None else ["zcdp", "basic"]
        for r in rules:
            if (r == "basic" and delta != 0) or (r == "zcdp" and delta == 0):
                continue
            if reservation_rho(r, eps, delta) <= left:
                return True
        return False


@dataclass(frozen=True)
class RunInfo:
    """A run's stored row: its reservation, rule, status and spending."""

    run_id: str
    dataset_id: str
    budget_epsilon: Fraction
    budget_delta: Fraction
    rule: str
    relation: Relation
    seed_explicit: bool
    description: str
    status: str
    n_entries: int
    n_outputs: int
    spent_epsilon: Fraction | None
    spent_delta: Fraction
    spent_rho: Fraction | None


# ---------------------------------------------------------------------------------
# The ledger
# ---------------------------------------------------------------------------------
#: Ledger files this process has an open connection to: (pid, st_dev, st_ino) -> count.
#: POSIX advisory locks belong to the process and closing *any* descriptor of a file
#: drops all of them (SQLite's documentation: "How To Corrupt An SQLite Database File",
#: section 2.2). Reading a ledger's header with a Python file object while a connection of
#: this process is open would therefore release that connection's SHARED lock; another
#: process closing its connection would then take itself for the last one and delete the
#: WAL under ours (what we write lands in the unlinked file; the next read fails with
#: "disk I/O error"). :meth:`Ledger.open` skips the header read for a file listed here:
#: the open connection already proved it is SQLite.
_OPEN_FILES: dict[tuple[int, int, int], int] = {}
_OPEN_FILES_LOCK = threading.Lock()


def _file_key(p: Path) -> tuple[int, int, int] | None:
    try:
        st = p.stat()
    except OSError:
        return None
    return (os.getpid(), st.st_dev, st.st_ino)


def _open_in_this_process(key: tuple[int, int, int] | None) -> bool:
    with _OPEN_FILES_LOCK:
        return key is not None and _OPEN_FILES.get(key, 0) > 0


def _note_open(key: tuple[int, int, int]) -> None:
    with _OPEN_FILES_LOCK:
        _OPEN_FILES[key] = _OPEN_FILES.get(key, 0) + 1


def _note_closed(key: tuple[int, int, int]) -> None:
    with _OPEN_FILES_LOCK:
        left = _OPEN_FILES.get(key, 0) - 1
        if left > 0:
            _OPEN_FILES[key] = left
        else:
            _OPEN_FILES.pop(key, None)


def looks_like_sqlite(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` starts with the SQLite header, read without ever dropping this
    process's locks: a file this process has a ledger connection to is SQLite already and
    is not read again (see ``_OPEN_FILES``)."""
    p = Path(path)
    if _open_in_this_process(_file_key(p)):
        return True
    with p.open("rb") as fh:
        return fh.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC


class Ledger:
    """A durable, append-only, hash-chained privacy ledger in one SQLite file.

    Open with :meth:`open`. Safe to use from several processes at once (each opens its
    own :class:`Ledger`); one instance must not be shared between threads.
    """

    def __init__(self, path: Path, conn: sqlite3.Connection, meta: dict[str, str]) -> None:
        self.path = path
        self._connection: sqlite3.Connection | None = conn
        self._pid = os.getpid()
        self.ledger_id = meta["ledger_id"]
        self.created_at = meta["created_at"]
        self.format_version = int(meta["format_version"])
        self._genesis = genesis_hash(self.ledger_id, self.created_at)
        self._synchronous: str | None = None
        #: The last row this instance appended: a head equal to it needs no re-hashing.
        self._last_row: tuple[Any, ...] | None = None
        #: Hex public key this ledger is bound to (``None``: an unsigned ledger).
        self._bound_key: str | None = meta.get(METADATA_KEY)
        #: The private key this instance signs new heads with (loaded when needed).
        self._signer: SigningKey | None = None
        #: Whether the current write transaction appended an entry (its head is signed).
        self._tx_appended = False
        #: (seq, hash) of heads known to be the key holder's: checked to carry a valid
        #: signature by the writer's key, or signed by this instance (an entry's content
        #: is authentic once its hash is; a signature deleted later changes nothing).
        self._trusted_heads: set[tuple[int, str]] = set()
        key = _file_key(path)
        self._release: weakref.finalize[Any, Any] | None = None
        if key is not None:
            _note_open(key)
            # runs once: on close(), or when an unclosed instance is collected
            self._release = weakref.finalize(self, _note_closed, key)

    # -- opening ----------------------------------------------------------------------
    @classmethod
    def open(cls, path: str | os.PathLike[str], create: bool = False, *,
             timeout: float = 60.0, signing_key: KeySource | None = None) -> Ledger:
        """Open the ledger at ``path``; with ``create=True`` make a new one if missing.

        Raises :class:`ForeignLedgerError` for a file that is not a dpcg ledger (not
        SQLite, or SQLite without the ledger schema or with another format version),
        :class:`LedgerCorruptError` for a damaged one and :class:`LedgerError` when the
        file does not exist and ``create`` is false. A foreign file is never modified.
        ``timeout`` is how long a write waits for another process's transaction.

        ``signing_key`` (a private key file or a :class:`SigningKey`): sign every new head
        with it. A ledger created by this call is bound to its public key at creation;
        an existing ledger must already be bound to that key (:class:`WrongKeyError`
        otherwise; an unbound one raises :class:`UnsignedLedgerError`: bind it with
        :meth:`bind_signing_key`). Without it, writes to a bound ledger sign with the key
        file named by ``$DPCG_LEDGER_KEY`` and fail (writing nothing) when there is none.
        """
        p = Path(path)
        if not isinstance(timeout, int | float) or not timeout > 0:
            raise InvalidParameterError("timeout", timeout, "must be > 0 seconds")
        signer = None if signing_key is None else _load_signer(signing_key)
        if not p.exists() and not create:
            raise LedgerError(f"no ledger at {p}; create one with `dpcg ledger init`")
        if p.exists():
            if not p.is_file():
                raise ForeignLedgerError(f"{p} is not a file")
            if (p.stat().st_size > 0 or not create) and not looks_like_sqlite(p):
                raise ForeignLedgerError(f"{p} is not a dpcg ledger: not an SQLite database")
        mode = "rwc" if create else "rw"
        try:
            conn = sqlite3.connect(
                f"file:{quote(p.resolve().as_posix())}?mode={mode}", uri=True, timeout=timeout,
                isolation_level=None,
            )
        except sqlite3.Error as exc:
            raise LedgerError(f"cannot open ledger {p}: {exc}") from None
        try:
            # A blank database (new, or another process is creating it right now) is
            # initialised under the write lock; a database with other tables is foreign.
            if create and cls._is_blank(conn, p):
                env = signing_key_from_env() if signer is None else None
                # a key configured in the environment binds every ledger it creates
                cls._initialise(conn, timeout,
                                signer if env is None else load_signing_key(env))
            meta = cls._read_metadata(conn, p)
        except BaseException:
            conn.close()
            raise
        ledger = cls(p, conn, meta)
        if signer is not None:
            try:
                ledger._adopt_signer(signer)
            except BaseException:
                ledger.close()
                raise
        return ledger

    @staticmethod
    def _is_blank(conn: sqlite3.Connection, p: Path) -> bool:
        try:
            row = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.DatabaseError as exc:
            raise LedgerCorruptError(f"{p}: SQLite cannot read the file: {exc}") from None
        return int(row[0]) == 0

    @staticmethod
    def _initialise(conn: sqlite3.Connection, timeout: float,
                    signer: SigningKey | None = None) -> None:
        """Switch to WAL and create the schema, unless another process already did.

        Several processes creating the same file at once can make SQLite report
        "database is locked" without waiting (two readers upgrading their locks to
        change the journal mode); that is retried until ``timeout``.
        """
        deadline = time.monotonic() + timeout
        while True:
            try:
                Ledger._initialise_once(conn, signer)
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise LedgerError(f"cannot create the ledger: {exc}") from None
                time.sleep(0.01)
            except sqlite3.Error as exc:
                raise LedgerError(f"cannot create the ledger: {exc}") from None

    @staticmethod
    def _initialise_once(conn: sqlite3.Connection, signer: SigningKey | None = None) -> None:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("BEGIN IMMEDIATE")
        try:
            have = {r[0] for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type='table'")}
            if not have:  # another process may have initialised it meanwhile
                for stmt in _SCHEMA:
                    conn.execute(stmt)
                conn.execute(REGISTRY_INDEX_SQL)
                conn.executemany(
                    "INSERT INTO metadata(key, value) VALUES (?, ?)",
                    [("format", FORMAT_NAME), ("format_version", str(FORMAT_VERSION)),
                     ("ledger_id", uuid.uuid4().hex), ("created_at", _now())],
                )
                if signer is not None:  # bound at creation
                    conn.execute(SIGNATURE_SCHEMA)
                    conn.execute("INSERT INTO metadata(key, value) VALUES (?, ?)",
                                 (METADATA_KEY, signer.public.hex))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    @staticmethod
    def _read_metadata(conn: sqlite3.Connection, p: Path) -> dict[str, str]:
        try:
            tables = {r[0] for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type='table'")}
            if "metadata" not in tables:
                raise ForeignLedgerError(
                    f"{p} is an SQLite database but not a dpcg ledger (no metadata table)")
            rows = conn.execute("SELECT key, value FROM metadata").fetchall()
        except sqlite3.DatabaseError as exc:
            raise LedgerCorruptError(f"{p}: SQLite cannot read the file: {exc}") from None
        meta = {str(k): v for k, v in rows}
        if meta.get("format") != FORMAT_NAME:
            raise ForeignLedgerError(
                f"{p} is an SQLite database but not a dpcg ledger "
                f"(format={meta.get('format')!r})")
        if meta.get("format_version") != str(FORMAT_VERSION):
            raise ForeignLedgerError(
                f"{p}: unsupported ledger format version {meta.get('format_version')!r} "
                f"(this dpcg reads version {FORMAT_VERSION})")
        for key in ("ledger_id", "created_at"):
            if not isinstance(meta.get(key), str):
                raise LedgerCorruptError(f"{p}: metadata {key!r} is missing or not text")
        if not tables >= _TABLES:
            raise LedgerCorruptError(f"{p}: tables missing: {sorted(_TABLES - tables)}")
        return {k: v for k, v in meta.items() if isinstance(v, str)}

    @property
    def _conn(self) -> sqlite3.Connection:
        if self._connection is None:
            raise LedgerError(f"the ledger {self.path} is closed; open it again")
        if os.getpid() != self._pid:
            raise LedgerError(
                f"the ledger {self.path} was opened in process {self._pid}; SQLite connections "
                "cannot cross fork(): open the ledger again in this process")
        return self._connection

    def close(self) -> None:
        """Close the connection (idempotent); later calls raise :class:`LedgerError`."""
        if self._connection is not None and os.getpid() == self._pid:
            self._connection.close()
            self._connection = None
            if self._release is not None:
                self._release()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # -- transactions -----------------------------------------------------------------
    @contextmanager
    def _transaction(self, synchronous: str) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction; any error rolls it back completely.

        SQLite errors become :class:`LedgerError` naming SQLite's extended error code.
        """
        conn = self._conn
        if self._bound_key is not None and self._signer is None:
            self._signing_key()  # load (and check) the key before taking the write lock
        try:
            if synchronous != self._synchronous:
                conn.execute(f"PRAGMA synchronous={synchronous}")
                self._synchronous = synchronous
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise LedgerError(
                f"cannot start a ledger transaction on {self.path}: {_describe(exc)}") from None
        self._tx_appended = False
        try:
            yield conn
            if self._tx_appended:
                self._sign_new_head(conn)
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:
                with suppress(sqlite3.Error):  # SQLite may have rolled back already
                    conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise LedgerError(
                    f"ledger {self.path}: write failed and was rolled back: {_describe(exc)}"
                ) from None
            raise

    def _append(self, conn: sqlite3.Connection, fields: dict[str, Any],
                encoded: Mapping[str, str] | None = None, *, chained: bool = False,
                timestamp: str | None = None) -> int:
        """Append one chained entry inside the current transaction; returns its seq.

        ``encoded`` may give the canonical JSON of some of ``fields`` (the caller already
        computed it); every other field is encoded here, each value exactly once.
        ``chained=True``: this instance already appended in the SAME transaction (which
        holds the write lock), so the head is the row it wrote last and is not re-read.
        ``timestamp``: the entry's time (default now: a dataset registration; every
        entry of a run passes the run's open time, see :class:`LedgerRun`).
        """
        if chained and self._last_row is not None:
            row = self._last_row
            seq, prev = int(row[0]) + 1, str(row[-1])
        else:
            row = conn.execute(
                f"SELECT {', '.join(STORED_FIELDS)} FROM entries ORDER BY seq DESC LIMIT 1"
            ).fetchone()
            if row is None:
                seq, prev = 1, self._genesis
            elif row == self._last_row:  # unchanged since this instance wrote and hashed it
                seq, prev = int(row[0]) + 1, str(row[-1])
            else:
                head, problem = _row_to_record(row)
                if problem is not None or entry_hash(head) != head["hash"]:
                    raise LedgerCorruptError(
                        f"{self.path}: the last entry does not verify "
                        f"({problem or 'hash mismatch'}); refusing to extend a corrupt chain "
                        "(run `dpcg ledger verify`)")
                seq, prev = int(head["seq"]) + 1, str(head["hash"])
                self._require_signed_head(conn, (seq - 1, prev))
        record: dict[str, Any] = {
            "seq": seq, "run_id": None, "mechanism": None, "params": None,
            "sensitivity": None, "cost": None, "purpose": "", "seed_explicit": None,
            "timestamp": _now() if timestamp is None else timestamp, "prev_hash": prev,
            **fields,
        }
        text = {} if encoded is None else dict(encoded)
        for name in ENTRY_FIELDS:
            if name not in text:
                text[name] = scalar_json(record[name])
        record["hash"] = sha256_hex(hashed_text(text))  # == entry_hash(record)
        values = [
            (text[k] if k in _JSON_COLUMNS and record[k] is not None
             else (int(record[k]) if k in _BOOL_COLUMNS and record[k] is not None
                   else record[k]))
            for k in STORED_FIELDS
        ]
        conn.execute(
            f"INSERT INTO entries({', '.join(STORED_FIELDS)}) "
            f"VALUES ({', '.join('?' * len(STORED_FIELDS))})", values)
        self._last_row = tuple(values)
        self._tx_appended = True
        return seq

    # -- signing ----------------------------------------------------------------------
    @property
    def signing_public_key(self) -> VerifyKey | None:
        """The public key this ledger is bound to (``None`` for an unsigned ledger)."""
        return None if self._bound_key is None else VerifyKey.from_hex(
            self._bound_key, f"{self.path}: bound public key")

    def _adopt_signer(self, signer: SigningKey) -> None:
        """Use ``signer`` for this instance's writes; it must be the bound key."""
        if self._bound_key is None:
            raise UnsignedLedgerError(
                f"ledger {self.path} is not bound to a signing key; bind it first with "
                f"`dpcg ledger sign-init {self.path} --key KEY` (Ledger.bind_signing_key)")
        self._check_signer(signer)
        self._signer = signer

    def _check_signer(self, signer: SigningKey) -> None:
        if signer.public.hex != self._bound_key:
            bound = VerifyKey.from_hex(str(self._bound_key)).fingerprint
            raise WrongKeyError(
                f"ledger {self.path} is bound to the key with fingerprint {bound[:16]}..., "
                f"but the private key {signer.path or ''} has fingerprint "
                f"{signer.fingerprint[:16]}...; nothing was written")

    def _signing_key(self) -> SigningKey:
        """The key new heads of this (bound) ledger are signed with: the one given to
        :meth:`open`, else the file named by ``$DPCG_LEDGER_KEY``."""
        if self._bound_key is None:
            raise UnsignedLedgerError(f"ledger {self.path} is not bound to a signing key")
        if self._signer is None:
            env = signing_key_from_env()
            if env is None:
                bound = VerifyKey.from_hex(self._bound_key).fingerprint
                raise KeyFileError(
                    f"ledger {self.path} is signed (key fingerprint {bound[:16]}...): every "
                    "write must sign the new head, but no private key was given; set "
                    "$DPCG_LEDGER_KEY to its key file (or pass signing_key); nothing was "
                    "written")
            self._signer = load_signing_key(env)
        self._check_signer(self._signer)
        return self._signer

    def check_signing(self) -> str | None:
        """Pre-flight for writers: load and check the signing key a write would need.

        Returns the key's fingerprint (``None`` for an unsigned ledger: nothing to sign).
        Raises :class:`KeyFileError` (missing, unreadable or unsafe key file),
        :class:`WrongKeyError` or :class:`SigningUnavailableError` without writing."""
        row = self._conn.execute("SELECT value FROM metadata WHERE key=?",
                                 (METADATA_KEY,)).fetchone()
        self._bound_key = None if row is None else str(row[0])
        if self._bound_key is None:
            if self._signer is not None or signing_key_from_env() is not None:
                raise UnsignedLedgerError(self._unbound_with_key_message())
            return None
        return self._signing_key().fingerprint

    def _read_binding(self, conn: sqlite3.Connection) -> str | None:
        """Inside a write transaction: the bound public key (hex), re-read under the
        write lock. A ledger with a signature table but no binding had its binding
        removed (a bound ledger stays bound): :class:`LedgerCorruptError`."""
        row = conn.execute("SELECT value FROM metadata WHERE key=?",
                           (METADATA_KEY,)).fetchone()
        bound = None if row is None else str(row[0])
        if bound is None and (self._signer is not None or signing_key_from_env() is not None):
            raise UnsignedLedgerError(self._unbound_with_key_message())
        if bound is None and conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?",
                (SIGNATURE_TABLE,)).fetchone() is not None:
            raise LedgerCorruptError(
                f"{self.path}: the ledger has head signatures but no bound key: its binding "
                "was removed (a signed ledger stays signed); nothing was written (run `dpcg "
                "ledger verify --public-key`)")
        self._bound_key = bound  # bound by another process since we opened: now signed
        return bound

    def _unbound_with_key_message(self) -> str:
        return (f"a signing key is configured (${KEY_ENV} or signing_key) but the ledger "
                f"{self.path} is not bound to a key: a signed ledger whose binding and "
                "signatures were removed looks exactly like this, so nothing was written; "
                f"bind it (`dpcg ledger sign-init {self.path} --key KEY`) or, for a ledger "
                f"that is meant to be unsigned, unset ${KEY_ENV}")

    def _require_signed_head(self, conn: sqlite3.Connection,
                             head: tuple[int, str] | None) -> None:
        """Inside a write transaction, before appending to ``head`` (its seq and stored
        hash, already checked to match its contents): on a key-bound ledger, the head
        must carry a valid signature by the writer's own key, else
        :class:`LedgerCorruptError` and nothing is written. A head without one was
        written without the key: a hand-written entry, or a history rewritten and
        re-chained by someone who could edit the file (docs/ledger.md, "Writers verify
        before they append")."""
        bound = self._read_binding(conn)
        if bound is None or head is None or head in self._trusted_heads:
            return
        signer = self._signing_key()  # the writer's key; checked to be the bound one
        seq, h = head
        try:
            row = conn.execute(f"SELECT hash, signature FROM {SIGNATURE_TABLE} WHERE seq=?",
                               (seq,)).fetchone()
        except sqlite3.OperationalError:  # the signature table was dropped
            row = None
        if row is None or row[0] != h or not signer.public.verifies(
                row[1], head_message(self.ledger_id, seq, h)):
            raise LedgerCorruptError(
                f"{self.path}: the head entry {seq} carries no valid signature by the "
                f"ledger's key (fingerprint {signer.fingerprint[:16]}...): it was not "
                "written by the key holder, so the history it closes may have been "
                "rewritten; refusing to extend it, nothing was reserved or written (run "
                "`dpcg ledger verify --public-key`)")
        self._trusted_heads.add(head)

    def _sign_new_head(self, conn: sqlite3.Connection) -> None:
        """Inside the write transaction that appended entries: store a signature of the
        new head if the ledger is bound (re-read under the write lock)."""
        bound = self._read_binding(conn)
        if bound is None:
            return
        signer = self._signing_key()
        last = self._last_row
        assert last is not None
        seq, head = int(last[0]), str(last[-1])
        conn.execute(f"INSERT INTO {SIGNATURE_TABLE}(seq, hash, signature) VALUES (?, ?, ?)",
                     (seq, head, signer.sign_head(self.ledger_id, seq, head)))
        self._trusted_heads.add((seq, head))

    def bind_signing_key(self, signing_key: KeySource) -> str:
        """Bind this ledger to ``signing_key``'s public key and sign the current head.

        From then on every transaction that appends entries signs the new head (see
        :meth:`open`). The ledger must verify first (:class:`LedgerCorruptError`
        otherwise). Binding again with the same key does nothing; with another key raises
        :class:`WrongKeyError` (a bound ledger stays bound to its key). Returns the key's
        fingerprint."""
        signer = _load_signer(signing_key)
        if self._bound_key is not None:
            self._adopt_signer(signer)
            return signer.fingerprint
        self.verify().raise_if_failed()
        with self._transaction("FULL") as conn:
            row = conn.execute("SELECT value FROM metadata WHERE key=?",
                               (METADATA_KEY,)).fetchone()
            if row is None:
                conn.execute(SIGNATURE_SCHEMA)
                conn.execute("INSERT INTO metadata(key, value) VALUES (?, ?)",
                             (METADATA_KEY, signer.public.hex))
                head = conn.execute(
                    "SELECT seq, hash FROM entries ORDER BY seq DESC LIMIT 1").fetchone()
                if head is not None:
                    seq, h = int(head[0]), str(head[1])
                    conn.execute(
                        f"INSERT INTO {SIGNATURE_TABLE}(seq, hash, signature) VALUES (?, ?, ?)",
                        (seq, h, signer.sign_head(self.ledger_id, seq, h)))
            self._bound_key = signer.public.hex if row is None else str(row[0])
        self._adopt_signer(signer)
        return signer.fingerprint

    def export_head(self, path: str | os.PathLike[str]) -> SignedHead:
        """Write the current signed head to ``path`` (JSON, atomically) for a reviewer.

        The ledger must verify, including every head signature checked with the bound
        public key; raises :class:`UnsignedLedgerError` for an unsigned or empty ledger.
        No private key is needed: the head's stored signature is exported."""
        key = self.signing_public_key
        if key is None:
            raise UnsignedLedgerError(
                f"ledger {self.path} is not signed; bind it to a key first "
                f"(`dpcg ledger sign-init {self.path} --key KEY`)")
        report = self.verify(public_key=key)
        report.raise_if_failed()
        if report.head_hash is None:
            raise UnsignedLedgerError(f"ledger {self.path} is empty: no head to export")
        row = self._conn.execute(
            f"SELECT signature FROM {SIGNATURE_TABLE} WHERE seq=? AND hash=?",
            (report.entries, report.head_hash)).fetchone()
        if row is None:  # verify() just saw it signed; signatures are never removed
            raise LedgerCorruptError(f"{self.path}: the head signature disappeared")
        head = SignedHead(
            ledger_id=self.ledger_id, seq=report.entries, hash=report.head_hash,
            datasets=tuple(d.dataset_id for d in report.datasets), public_key=key,
            signature=str(row[0]), exported_at=now())
        write_head_file(head, path)
        return head

    # -- datasets ---------------------------------------------------------------------
    def register_dataset(self, dataset_id: str, lifetime: Budget,
                         relation: Relation | str = Relation.REPLACE_ONE,
                         description: str = "", *, lifetime_rule: str = "basic") -> None:
        """Register ``dataset_id`` with its lifetime (eps, delta) budget and relation.

        The id is declared by the caller (never derived from the rows). Raises
        :class:`DuplicateDatasetError` if it is already registered. ``lifetime_rule``:
        ``basic`` (sums of (eps, delta)) or ``zcdp`` (the lifetime kept in rho, every
        admitted mechanism charged its zCDP cost; docs/privacy/ledger-composition.md).
        """
        dataset_id = _check_id("dataset_id", dataset_id)
        eps, delta = _check_budget("lifetime", lifetime)
        rel = Relation.parse(relation)
        description = _check_text("description", description)
        lifetime_rule = check_lifetime_rule(lifetime_rule, delta)
        with self._transaction("FULL") as conn:
            state = self._admission_state(conn)
            if conn.execute("SELECT 1 FROM datasets WHERE dataset_id=?",
                            (dataset_id,)).fetchone():
                raise DuplicateDatasetError(
                    f"dataset {dataset_id!r} is already registered in {self.path}")
            self._insert_dataset(conn, state, dataset_id, eps, delta, rel, description,
                                 lifetime_rule)

    def _admission_state(self, conn: sqlite3.Connection) -> ChainState:
        """Inside the write transaction, before a registration or a reservation: the
        whole chain re-hashed and folded (``accounting/ledger/_state.py``) and, on a
        key-bound ledger, its head's signature checked with the writer's key. Raises
        :class:`LedgerCorruptError` (nothing written) when either fails."""
        state = chain_state(conn, self.path, self._genesis)
        self._require_signed_head(conn, state.head)
        return state

    def _insert_dataset(self, conn: sqlite3.Connection, state: ChainState, dataset_id: str,
                        eps: Fraction, delta: Fraction, rel: Relation,
                        description: str, lifetime_rule: str = "basic") -> None:
        """Inside the write transaction: the registration entry and the dataset's row
        (arguments already validated, the id checked to have no row under the write lock;
        the chain must not register it either: a deleted row is not a new id)."""
        check_unregistered(state, self.path, dataset_id)
        seq = self._append(conn, {
            "kind": "dataset", "dataset_id": dataset_id, "relation": rel.value,
            "data": registration_data(eps, delta, description, lifetime_rule),
        })
        conn.execute(
            f"INSERT INTO datasets({', '.join(_DATASET_COLUMNS)}) VALUES "
            f"({', '.join('?' * len(_DATASET_COLUMNS))})",
            (dataset_id, fraction_str(eps), fraction_str(delta), rel.value, description,
             seq, "0", "0", 0))

    def ensure_dataset(self, dataset_id: str, lifetime: Budget,
                       relation: Relation | str = Relation.REPLACE_ONE,
                       description: str = "", *,
                       for_run: Budget | None = None, for_rule: str | None = None,
                       lifetime_rule: str = "basic") -> tuple[DatasetInfo, bool]:
        """Register ``dataset_id`` unless it is registered; returns (its info, whether this
        call registered it).

        Check and insert happen in ONE ``BEGIN IMMEDIATE`` transaction, so concurrent
        first runs on a new id never fail spuriously: exactly one registers it, the
        others get the existing registration. An existing registration is returned as
        stored: its lifetime and description are never changed (``lifetime`` and
        ``description`` are then ignored; compare ``info.lifetime`` to warn). An existing
        id registered under another relation raises :class:`DatasetConflictError`.

        ``for_run`` (pre-flight, writes nothing when it refuses): raise
        :class:`BudgetExceededError` if a run reserving that budget cannot fit, i.e. the
        new lifetime is smaller than it, or the existing dataset's remaining budget is.
        (For an existing dataset this is advisory: :meth:`open_run` re-checks under the
        write lock.) ``for_rule`` is the run's rule (under a zcdp lifetime its reservation
        in rho depends on it; ``None``: the cheaper rule the budget allows). Arguments are
        validated as by :meth:`register_dataset`; ``lifetime_rule`` applies to a new id
        only (an existing id keeps its rule: compare ``info.lifetime_rule``).
        """
        dataset_id = _check_id("dataset_id", dataset_id)
        eps, delta = _check_budget("lifetime", lifetime)
        rel = Relation.parse(relation)
        description = _check_text("description", description)
        lifetime_rule = check_lifetime_rule(lifetime_rule, delta)
        if for_rule is not None:
            for_rule = _check_rule(for_rule)
        need = None if for_run is None else _check_budget("for_run", for_run)
        with self._transaction("FULL") as conn:
            state = self._admission_state(conn)
            row = conn.execute(
                f"SELECT {', '.join(_DATASET_COLUMNS)} FROM datasets WHERE dataset_id=?",
                (dataset_id,)).fetchone()
            if row is not None:
                info = _info_of(check_admission_rows(conn, self.path, state, dataset_id, row))
                if info.relation is not rel:
                    raise DatasetConflictError(
                        f"dataset {dataset_id!r} is registered in {self.path} under the "
                        f"{info.relation.value} relation, not {rel.value}; a dataset id "
                        "keeps its relation (use another id)")
                if need is not None:
                    _refuse_unless_fits(dataset_id, need, info, for_rule, "remaining lifetime")
                return info, False
            new = DatasetInfo(
                dataset_id=dataset_id, lifetime_epsilon=eps, lifetime_delta=delta,
                relation=rel, description=description, reserved_epsilon=Fraction(0),
                reserved_delta=Fraction(0), n_runs=0, lifetime_rule=lifetime_rule,
                lifetime_rho=lifetime_rho(eps, delta) if lifetime_rule == "zcdp" else None)
            if need is not None:
                _refuse_unless_fits(dataset_id, need, new, for_rule, "lifetime")
            self._insert_dataset(conn, state, dataset_id, eps, delta, rel, description,
                                 lifetime_rule)
        return new, True

    def dataset(self, dataset_id: str) -> DatasetInfo:
        """The stored row of ``dataset_id`` (raises :class:`UnknownDatasetError`)."""
        row = self._conn.execute(
            f"SELECT {', '.join(_DATASET_COLUMNS)} FROM datasets WHERE dataset_id=?",
            (dataset_id,)).fetchone()
        if row is None:
            raise UnknownDatasetError(
                f"dataset {dataset_id!r} is not registered in {self.path} "
                f"(known: {', '.join(repr(d.dataset_id) for d in self.datasets()) or 'none'})")
        return self._dataset_info(row)

    def _charged_from_rows(self, dataset_id: str) -> tuple[Fraction, Fraction]:
        """The dataset's charge computed from its ``runs`` rows (display only; admission
        re-derives it from the chain)."""
        eps, delta = Fraction(0), Fraction(0)
        for r in self.runs(dataset_id):
            e, d = run_charge(r.rule, r.status, r.n_entries, r.budget_epsilon, r.budget_delta,
                              r.spent_epsilon, r.spent_delta)
            eps += e
            delta += d
        return eps, delta

    def has_dataset(self, dataset_id: str) -> bool:
        return self._conn.execute("SELECT 1 FROM datasets WHERE dataset_id=?",
                                  (dataset_id,)).fetchone() is not None

    def datasets(self) -> list[DatasetInfo]:
        rows = self._conn.execute(
            f"SELECT {', '.join(_DATASET_COLUMNS)} FROM datasets ORDER BY registered_seq")
        return [self._dataset_info(r) for r in rows]

    def _dataset_info(self, row: tuple[Any, ...]) -> DatasetInfo:
        reg = self._conn.execute("SELECT data FROM entries WHERE seq=? AND kind='dataset'",
                                 (row[5],)).fetchone()
        if reg is not None and isinstance(reg[0], str) and '"lifetime_rule"' in reg[0]:
            # a zcdp lifetime: its charge in rho, re-derived from the chain (display)
            state = ChainState.read(self._conn, self._genesis)
            dataset = state.datasets.get(row[0])
            if state.problems or dataset is None:
                raise LedgerCorruptError(
                    f"{self.path}: dataset {row[0]!r}: the chain does not verify "
                    f"({state.problems[0] if state.problems else 'no registration'})")
            return _info_of(dataset)
        try:
            charged = self._charged_from_rows(row[0])
            return DatasetInfo(
                dataset_id=row[0], lifetime_epsilon=parse_fraction(row[1], "epsilon"),
                lifetime_delta=parse_fraction(row[2], "delta"), relation=Relation(row[3]),
                description=row[4], reserved_epsilon=parse_fraction(row[6], "reserved_epsilon"),
                reserved_delta=parse_fraction(row[7], "reserved_delta"), n_runs=int(row[8]),
                charged_epsilon=charged[0], charged_delta=charged[1])
        except (ValueError, TypeError) as exc:
            raise LedgerCorruptError(f"{self.path}: dataset row {row[0]!r} is corrupt: {exc}") \
                from None

    # -- runs -------------------------------------------------------------------------
    def open_run(self, dataset_id: str, budget: Budget, rule: str, seed_explicit: bool,
                 description: str = "") -> LedgerRun:
        """Reserve ``budget`` for a new run against ``dataset_id``'s lifetime budget.

        One ``BEGIN IMMEDIATE`` transaction with ``synchronous=FULL``: the reservation
        is durable before this returns. Runs compose by basic composition of their
        reservations; if all reservations including this one would exceed the lifetime
        budget, raises :class:`BudgetExceededError` and writes nothing. A run that is
        never closed (killed process) keeps its reservation: there are no refunds.

        The open time is taken once, here: every entry of the run (run-open, mechanism,
        output, run-close) carries it as its ``timestamp``, so the ledger records when
        the run started and nothing about how long its releases took.
        """
        dataset_id = _check_id("dataset_id", dataset_id)
        eps, delta = _check_budget("budget", budget)
        rule = _check_rule(rule)
        if not isinstance(seed_explicit, bool):
            raise InvalidParameterError("seed_explicit", seed_explicit, "must be a bool")
        description = _check_text("description", description)
        if rule == "zcdp" and delta == 0:
            raise InvalidParameterError(
                "budget.delta", budget.delta,
                "the zcdp rule needs delta > 0 to convert to (eps, delta)")
        run_id = uuid.uuid4().hex
        with self._transaction("FULL") as conn:
            # under the write lock (run-open entries are in time order); every entry of
            # the run carries this time, never a later one
            opened_at = _now()
            # the reservation is admitted on the state re-derived from the whole chain
            # (its head signed by our key on a bound ledger), never on the tables; the
            # tables must agree with it too (docs/ledger.md)
            state = self._admission_state(conn)
            row = conn.execute(
                f"SELECT {', '.join(_DATASET_COLUMNS)} FROM datasets WHERE dataset_id=?",
                (dataset_id,)).fetchone()
            if row is None:
                check_unregistered(state, self.path, dataset_id)
                self.dataset(dataset_id)  # raises UnknownDatasetError naming the known ids
                raise UnknownDatasetError(f"dataset {dataset_id!r} is not registered")
            info = _info_of(check_admission_rows(conn, self.path, state, dataset_id, row))
            run_rho = run_rho_for(info.lifetime_rule, rule, eps, delta, dataset_id)
            new_eps = info.charged_epsilon + eps
            new_delta = info.charged_delta + delta
            if run_rho is not None:
                assert info.lifetime_rho is not None
                if info.charged_rho + run_rho > info.lifetime_rho:
                    raise BudgetExceededError(
                        f"dataset {dataset_id!r}: reserving eps={budget.epsilon!r}, "
                        f"delta={budget.delta!r} under rule {rule} (rho="
                        f"{float(run_rho)!r}) would exceed its zcdp lifetime (rho="
                        f"{float(info.lifetime_rho)!r}; already charged rho="
                        f"{float(info.charged_rho)!r})")
            elif new_eps > info.lifetime_epsilon or new_delta > info.lifetime_delta:
                which = " and ".join(
                    name for name, over in (("epsilon", new_eps > info.lifetime_epsilon),
                                            ("delta", new_delta > info.lifetime_delta))
                    if over)
                raise BudgetExceededError(
                    f"dataset {dataset_id!r}: reserving eps={budget.epsilon!r}, "
                    f"delta={budget.delta!r} would exceed its lifetime {which} budget "
                    f"(eps={float(info.lifetime_epsilon)!r}, delta={float(info.lifetime_delta)!r}; "
                    f"already charged eps={float(info.charged_epsilon)!r}, "
                    f"delta={float(info.charged_delta)!r})")
            data: dict[str, JSONValue] = {
                "budget": {"epsilon": fraction_str(eps), "delta": fraction_str(delta)},
                "rule": rule, "description": description}
            if run_rho is not None:
                data["rho"] = fraction_str(run_rho)
            seq = self._append(conn, {
                "kind": "run-open", "dataset_id": dataset_id, "run_id": run_id,
                "relation": info.relation.value, "seed_explicit": seed_explicit,
                "data": data,
            }, timestamp=opened_at)
            conn.execute(
                f"INSERT INTO runs({', '.join(_RUN_COLUMNS)}) VALUES "
                f"({', '.join('?' * len(_RUN_COLUMNS))})",
                (run_id, dataset_id, fraction_str(eps), fraction_str(delta), rule,
                 info.relation.value, int(seed_explicit), description, "open", seq, None,
                 0, 0, "0", "0", "0"))
            conn.execute(
                "UPDATE datasets SET reserved_epsilon=?, reserved_delta=?, n_runs=n_runs+1 "
                "WHERE dataset_id=?", (fraction_str(info.reserved_epsilon + eps),
                                       fraction_str(info.reserved_delta + delta), dataset_id))
        return LedgerRun(self, run_id, dataset_id, budget, eps, delta, info.relation, rule,
                         seed_explicit, opened_at, reserved_rho=run_rho)

    def runs(self, dataset_id: str | None = None) -> list[RunInfo]:
        sql = f"SELECT {', '.join(_RUN_COLUMNS)} FROM runs"
        args: tuple[str, ...] = ()
        if dataset_id is not None:
            sql += " WHERE dataset_id=?"
            args = (dataset_id,)
        rows = self._conn.execute(sql + " ORDER BY opened_seq", args).fetchall()
        return [self._run_info(r) for r in rows]

    def run(self, run_id: str) -> RunInfo:
        row = self._conn.execute(
            f"SELECT {', '.join(_RUN_COLUMNS)} FROM runs WHERE run_id=?", (run_id,)).fetchone()
        if row is None:
            raise LedgerError(f"no run {run_id!r} in {self.path}")
        return self._run_info(row)

    def _run_info(self, row: tuple[Any, ...]) -> RunInfo:
        def opt(v: object, name: str) -> Fraction | None:
            return None if v is None else parse_fraction(v, name)
        try:
            return RunInfo(
                run_id=row[0], dataset_id=row[1], budget_epsilon=parse_fraction(row[2], "epsilon"),
                budget_delta=parse_fraction(row[3], "delta"), rule=row[4],
                relation=Relation(row[5]), seed_explicit=bool(row[6]), description=row[7],
                status=row[8], n_entries=int(row[11]), n_outputs=int(row[12]),
                spent_epsilon=opt(row[13], "spent_epsilon"),
                spent_delta=parse_fraction(row[14], "spent_delta"),
                spent_rho=opt(row[15], "spent_rho"))
        except (ValueError, TypeError) as exc:
            raise LedgerCorruptError(f"{self.path}: run row {row[0]!r} is corrupt: {exc}") \
                from None

    # -- reading the chain ------------------------------------------------------------
    def entry_count(self) -> int:
        row = self._conn.execute("SELECT COUNT(*) FROM entries").fetchone()
        return int(row[0])

    def head_hash(self) -> str | None:
        row = self._conn.execute("SELECT hash FROM entries ORDER BY seq DESC LIMIT 1").fetchone()
        return None if row is None else str(row[0])

    def entries(self) -> list[dict[str, Any]]:
        """All entries in sequence order, as the dicts that are hashed (plus ``hash``)."""
        out = []
        for row in self._raw_rows():
            record, problem = _row_to_record(row)
            if problem is not None:
                raise LedgerCorruptError(f"{self.path}: {problem}")
            out.append(record)
        return out

    def _raw_rows(self) -> list[tuple[Any, ...]]:
        try:
            return self._conn.execute(
                f"SELECT {', '.join(STORED_FIELDS)} FROM entries ORDER BY seq").fetchall()
        except sqlite3.DatabaseError as exc:
            raise LedgerCorruptError(f"{self.path}: SQLite cannot read the entries: {exc}") \
                from None

    # -- verification -----------------------------------------------------------------
    def verify(self, expected_head: str | None = None,
               contains: str | None = None, *, public_key: PublicKeySource | None = None,
               head: str | os.PathLike[str] | SignedHead | None = None) -> VerificationReport:
        """Recompute the chain, every cost and every total; compare with what is stored.

        Returns a :class:`VerificationReport`; ``report.ok`` is false and
        ``report.problems`` says why when anything does not match. If given, the head
        must equal ``expected_head`` and some entry's hash must equal ``contains`` (a
        head hash published earlier: the history up to it is unchanged).

        ``public_key`` (a ``.pub`` file or :class:`VerifyKey`, held by the reviewer): also
        require every stored head signature to match the chain and verify with it, and
        the current head to be signed. Raises :class:`UnsignedLedgerError` for a ledger
        without any signature, :class:`WrongKeyError` for a ledger bound to another key.
        ``head`` (an exported head file or :class:`SignedHead`; needs ``public_key``):
        require its signature to verify and the chain to still hold that head with the
        same datasets (a truncation after it or a rewrite before it is a problem); a
        malformed or forged head file raises :class:`HeadFileError`.
        """
        key = None if public_key is None else _load_verify(public_key)
        signed_head: SignedHead | None = None
        if head is not None:
            if key is None:
                raise InvalidParameterError(
                    "public_key", None, "an exported head is checked with the public key")
            signed_head = head if isinstance(head, SignedHead) else read_head_file(head)
            signed_head.check_signature(key)
        try:
            self._conn.execute("BEGIN")  # one consistent snapshot for all reads
            try:
                meta = self._read_metadata(self._conn, self.path)
                rows = self._raw_rows()
                datasets = self._conn.execute(
                    f"SELECT {', '.join(_DATASET_COLUMNS)} FROM datasets").fetchall()
                runs = self._conn.execute(f"SELECT {', '.join(_RUN_COLUMNS)} FROM runs").fetchall()
                signatures = self._signature_rows() if key is not None else []
            finally:
                self._conn.execute("ROLLBACK")
        except sqlite3.DatabaseError as exc:
            raise LedgerCorruptError(f"{self.path}: SQLite cannot read the file: {exc}") from None
        checker = ChainChecker(genesis_hash(meta["ledger_id"], meta["created_at"]))
        for row in rows:
            record, problem = _row_to_record(row)
            if problem is not None:
                checker.problems.append(f"entry {row[0]!r}: {problem}")
            checker.add(record)
        extra = _compare_tables(checker, datasets, runs)
        extra.extend(checker.pin_problems(expected_head, contains))
        hashes_by_seq, datasets_by_seq = _chain_index(rows)
        if key is not None:
            bound = meta.get(METADATA_KEY)
            if bound is None and not signatures:
                raise UnsignedLedgerError(
                    f"ledger {self.path} is not signed (no key bound, no head signatures): "
                    "there is nothing to check with a public key")
            if bound is not None and bound != key.hex:
                raise WrongKeyError(
                    f"ledger {self.path} is bound to the key with fingerprint "
                    f"{VerifyKey.from_hex(bound).fingerprint[:16]}..., not to the public key "
                    f"given ({key.fingerprint[:16]}...)")
            if bound is None:  # signatures without a binding: the binding was removed
                extra.append("the ledger has head signatures but no bound key: its binding "
                             "was removed (writers would then append unsigned entries)")
            head_seq = max(hashes_by_seq) if hashes_by_seq else None
            extra.extend(signature_problems(key, meta["ledger_id"], hashes_by_seq, head_seq,
                                            signatures))
        if signed_head is not None:
            extra.extend(head_problems(signed_head, meta["ledger_id"], hashes_by_seq,
                                       datasets_by_seq))
        return checker.report(f"ledger {self.path}", meta["ledger_id"], extra)

    def _signature_rows(self) -> list[tuple[Any, ...]]:
        have = self._conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?",
                                  (SIGNATURE_TABLE,)).fetchone()
        if have is None:
            return []
        return self._conn.execute(
            f"SELECT seq, hash, signature FROM {SIGNATURE_TABLE} ORDER BY seq").fetchall()

    def export(self, path: str | os.PathLike[str]) -> VerificationReport:
        """Verify, then write a JSON certificate to ``path`` (see ``verify_certificate``).

        Raises :class:`LedgerCorruptError` (writing nothing) if the ledger does not verify.
        """
        from accounting.ledger.certificate import write_certificate

        return write_certificate(self, path)


def _chain_index(rows: list[tuple[Any, ...]]) -> tuple[dict[int, str], dict[str, int]]:
    """seq -> stored hash of every entry, and dataset id -> seq of its registration."""
    hashes: dict[int, str] = {}
    datasets: dict[str, int] = {}
    i_seq, i_kind, i_ds = (STORED_FIELDS.index(k) for k in ("seq", "kind", "dataset_id"))
    for row in rows:
        seq, h = row[i_seq], row[-1]
        if isinstance(seq, int) and not isinstance(seq, bool) and isinstance(h, str):
            hashes[seq] = h
            if row[i_kind] == "dataset" and isinstance(row[i_ds], str):
                datasets.setdefault(row[i_ds], seq)
    return hashes, datasets


def _info_of(d: DatasetState) -> DatasetInfo:
    """A dataset's info as the chain defines it (what admission decides on)."""
    reserved = d.reserved
    charged = (d.charged_epsilon, d.charged_delta) if d.lifetime_rule != "zcdp" else \
        rho_converted(d.charged_rho, d.lifetime_delta)
    return DatasetInfo(
        dataset_id=d.dataset_id, lifetime_epsilon=d.lifetime_epsilon,
        lifetime_delta=d.lifetime_delta, relation=Relation(d.relation),
        description=d.description, reserved_epsilon=reserved[0], reserved_delta=reserved[1],
        n_runs=len(d.runs), charged_epsilon=charged[0], charged_delta=charged[1],
        lifetime_rule=d.lifetime_rule, lifetime_rho=d.lifetime_rho, charged_rho=d.charged_rho)


def _refuse_unless_fits(dataset_id: str, need: tuple[Fraction, Fraction], info: DatasetInfo,
                        rule: str | None, what: str) -> None:
    if info.lifetime_rule == "zcdp" and rule == "basic" and need[1] != 0:
        run_rho_for("zcdp", "basic", need[0], need[1], dataset_id)  # raises
    if not info.fits(need, rule):
        rho = "" if info.remaining_rho is None else f", rho={float(info.remaining_rho)!r}"
        raise BudgetExceededError(
            f"dataset {dataset_id!r}: a run reserving eps={float(need[0])!r}, "
            f"delta={float(need[1])!r} cannot fit its {what} "
            f"(eps={float(info.remaining_epsilon)!r}, "
            f"delta={float(info.remaining_delta)!r}{rho}); nothing was registered or reserved")


def _compare_tables(checker: ChainChecker, datasets: list[tuple[Any, ...]],
                    runs: list[tuple[Any, ...]]) -> list[str]:
    """Compare the stored totals tables with the totals re-derived from the chain."""
    problems: list[str] = []
    expected_d = {d.dataset_id: _dataset_row(d) for d in checker.datasets.values()}
    stored_d = {r[0]: tuple(r) for r in datasets}
    for key in sorted(set(expected_d) | set(stored_d), key=str):
        if expected_d.get(key) != stored_d.get(key):
            problems.append(
                f"datasets table row {key!r} does not match the chain: stored "
                f"{stored_d.get(key)!r}, re-derived {expected_d.get(key)!r}")
    expected_r = {r.run_id: _run_row(r) for r in checker.runs.values()}
    stored_r = {r[0]: tuple(r) for r in runs}
    for key in sorted(set(expected_r) | set(stored_r), key=str):
        if expected_r.get(key) != stored_r.get(key):
            problems.append(
                f"runs table row {key!r} does not match the chain: stored "
                f"{stored_r.get(key)!r}, re-derived {expected_r.get(key)!r}")
    return problems


def _dataset_row(d: DatasetTotals) -> tuple[Any, ...]:
    return (d.dataset_id, fraction_str(d.lifetime_epsilon), fraction_str(d.lifetime_delta),
            d.relation, d.description, d.registered_seq, fraction_str(d.reserved_epsilon),
            fraction_str(d.reserved_delta), len(d.runs))


def _run_row(r: RunTotals) -> tuple[Any, ...]:
    return (r.run_id, r.dataset_id, fraction_str(r.budget_epsilon), fraction_str(r.budget_delta),
            r.rule, r.relation, int(r.seed_explicit), r.description, r.status, r.opened_seq,
            r.closed_seq, r.entries, r.outputs, _opt_str(r.spent_epsilon),
            fraction_str(r.spent_delta), _opt_str(r.spent_rho))


# ---------------------------------------------------------------------------------
# A run
# ---------------------------------------------------------------------------------
class LedgerRun:
    """One run's :class:`~accounting.entries.RunRecorder`: append-only, durable entries.

    Created by :meth:`Ledger.open_run`. Every :meth:`record` is its own ``BEGIN
    IMMEDIATE`` transaction committed before it returns (``synchronous=NORMAL`` under
    WAL: durable against a crash of the process; on power loss the newest entries may
    roll back, but the run's whole reservation was already committed with
    ``synchronous=FULL``, so the dataset's lifetime accounting stays conservative).
    """

    def __init__(self, ledger: Ledger, run_id: str, dataset_id: str, budget: Budget,
                 budget_epsilon: Fraction, budget_delta: Fraction, relation: Relation,
                 rule: str, seed_explicit: bool, opened_at: str, *,
                 reserved_rho: Fraction | None = None) -> None:
        self._ledger = ledger
        #: under a zcdp lifetime: the run's reservation in rho and the exact sum of the
        #: unit rho of the entries this instance committed (docs/ledger.md)
        self._reserved_rho = reserved_rho
        self._units = Fraction(0)
        self._run_id = run_id
        #: The run's open time (UTC ISO 8601), the timestamp of EVERY entry of the run:
        #: per-entry commit times would leak the data-dependent compute time between
        #: releases (docs/privacy/threat-model.md).
        self._opened_at = opened_at
        self.dataset_id = dataset_id
        self._budget = budget
        self._eps = budget_epsilon
        self._delta = budget_delta
        self._relation = relation
        self._rule = rule
        self.seed_explicit = seed_explicit
        self._with_output: set[int] = set()
        #: set once this instance closed the run: later writes are refused first
        self._closed = False
        #: (stored texts, values) of the run's totals: this instance writes every entry
        #: of its run, so these (not the editable ``runs`` row) are what its reservation
        #: is checked against; open_run stored them as "0", "0", "0"
        self._spent_cache: tuple[tuple[str | None, str, str | None],
                                 tuple[Fraction | None, Fraction, Fraction | None]] = (
            ("0", "0", "0"), (Fraction(0), Fraction(0), Fraction(0)))

    @property
    def run_id(self) -> str:
        return self._run_id

    @property
    def budget(self) -> Budget:
        return self._budget

    @property
    def opened_at(self) -> str:
        """When the run was opened (UTC ISO 8601): the timestamp of all its entries."""
        return self._opened_at

    @property
    def relation(self) -> Relation:
        return self._relation

    @property
    def rule(self) -> str:
        return self._rule

    @property
    def ledger(self) -> Ledger:
        return self._ledger

    def info(self) -> RunInfo:
        return self._ledger.run(self._run_id)

    def record(self, entry: EntryDraft) -> int:
        """Append ``entry`` durably; returns its sequence number.

        Refuses (writing nothing) with :class:`InvalidParameterError` for a malformed
        draft or one whose declared cost is not the cost of its parameters,
        :class:`RelationMismatchError` when its relation is not the run's, and
        :class:`BudgetExceededError` when the run's entries would no longer fit its
        reservation under the run's rule.
        """
        return self.record_many([entry])[0]

    def record_many(self, entries: Sequence[EntryDraft]) -> list[int]:
        """Append ``entries`` durably in ONE transaction, all or none; returns their
        sequence numbers (consecutive, in order).

        Each entry is validated as by :meth:`record`; any refusal (including the run's
        reservation being exceeded by the batch's total) writes none of them. Costs are
        non-negative, so the total fits exactly when every prefix does.
        """
        if isinstance(entries, EntryDraft) or not isinstance(entries, Sequence):
            raise InvalidParameterError("entries", entries, "must be a sequence of EntryDraft")
        if not entries:
            return []
        self._refuse_if_closed()
        checked = [self._validate(entry) for entry in entries]
        units = self._check_units(entries)
        with self._ledger._transaction("NORMAL") as conn:
            totals = self._claim_totals(conn, entries)
            seqs = [self._ledger._append(conn, fields, encoded, chained=i > 0,
                                         timestamp=self._opened_at)
                    for i, (fields, encoded) in enumerate(checked)]
        # committed: the stored totals are now exactly these texts and values
        self._spent_cache = totals
        self._units = units
        return seqs

    def _check_units(self, entries: Sequence[EntryDraft]) -> Fraction:
        """Under a zcdp lifetime: the run's unit rho after ``entries``, or a refusal
        (:func:`check_run_units`)."""
        return check_run_units(self._run_id, self.dataset_id, self._reserved_rho,
                               self._units, entries)

    def _refuse_if_closed(self) -> None:
        if self._closed:
            raise LedgerError(f"run {self._run_id!r} is closed; open a new run")

    def _add_costs(self, eps: Fraction | None, delta: Fraction, rho: Fraction | None,
                   entries: Sequence[EntryDraft]
                   ) -> tuple[tuple[str | None, str, str | None],
                              tuple[Fraction | None, Fraction, Fraction | None], str | None]:
        """The run's totals after ``entries`` (texts and values) and the rule violation
        they would cause (``None`` when they fit the reservation)."""
        eps, delta, rho = add_entry_costs((eps, delta, rho), entries)
        why = rule_violation(self._rule, self._eps, self._delta, eps, delta, rho)
        return (_opt_str(eps), fraction_str(delta), _opt_str(rho)), (eps, delta, rho), why

    def _claim_totals(self, conn: sqlite3.Connection, entries: Sequence[EntryDraft]
                      ) -> tuple[tuple[str | None, str, str | None],
                                 tuple[Fraction | None, Fraction, Fraction | None]]:
        """Inside the write transaction: add ``entries`` to the run's totals, or raise
        (they would exceed its reservation; the run is closed or its row missing or
        edited). Returns the new totals (texts, values).

        The totals are this instance's own (it writes every entry of its run), never
        re-read from the ``runs`` row: one ``UPDATE`` guarded by the texts it committed
        last and ``status = 'open'`` writes the new ones, and when it matches no row
        the row was closed, deleted or edited behind the writer's back and nothing is
        written.
        """
        n = len(entries)
        old_texts, (eps0, delta0, rho0) = self._spent_cache
        texts, values, why = self._add_costs(eps0, delta0, rho0, entries)
        if why is not None:
            what = repr(entries[0].mechanism) if n == 1 else f"{n} entries"
            raise BudgetExceededError(
                f"run {self._run_id!r}: recording {what} would exceed the run's "
                f"reservation under rule {self._rule}: {why}")
        if conn.execute(_CLAIM, (n, *texts, self._run_id, *old_texts)).rowcount == 1:
            return texts, values
        row = conn.execute("SELECT status FROM runs WHERE run_id=?",
                           (self._run_id,)).fetchone()
        if row is None:
            raise LedgerCorruptError(f"run {self._run_id!r} has no row in {self._ledger.path}")
        if row[0] != "open":
            raise LedgerError(f"run {self._run_id!r} is closed ({row[0]}); open a new run")
        raise LedgerCorruptError(
            f"{self._ledger.path}: the runs row of run {self._run_id!r} no longer holds the "
            "totals this run wrote: it was edited behind the writer's back; nothing was "
            "written (run `dpcg ledger verify`)")

    def _validate(self, entry: EntryDraft) -> tuple[dict[str, Any], dict[str, str]]:
        return validate_draft(entry, self._relation, self._run_id, self.dataset_id)

    def record_output(self, sequence: int, output: object) -> None:
        """Append the released output of mechanism entry ``sequence`` as its own entry.

        The mechanism entry itself is never modified (append-only). ``output`` must be
        JSON-compatible and finite; NumPy arrays and scalars are converted to lists/numbers.
        """
        if isinstance(sequence, bool) or not isinstance(sequence, int):
            raise InvalidParameterError("sequence", sequence, "must be an entry sequence number")
        value = _json_value(output, "output")
        if sequence in self._with_output:
            raise InvalidParameterError("sequence", sequence, "that entry already has an output")
        with self._ledger._transaction("NORMAL") as conn:
            row = conn.execute("SELECT kind, run_id FROM entries WHERE seq=?",
                               (sequence,)).fetchone()
            if row is None or row[0] != "mechanism" or row[1] != self._run_id:
                raise InvalidParameterError(
                    "sequence", sequence, f"is not a mechanism entry of run {self._run_id!r}")
            status = conn.execute("SELECT status FROM runs WHERE run_id=?",
                                  (self._run_id,)).fetchone()
            if status is None or status[0] != "open":
                raise LedgerError(f"run {self._run_id!r} is closed; cannot attach an output")
            self._ledger._append(conn, {
                "kind": "output", "dataset_id": self.dataset_id, "run_id": self._run_id,
                "relation": self._relation.value, "data": {"of_seq": sequence, "output": value},
            }, timestamp=self._opened_at)
            conn.execute("UPDATE runs SET n_outputs=n_outputs+1 WHERE run_id=?", (self._run_id,))
        self._with_output.add(sequence)

    def close(self, status: str = "completed") -> None:
        """Mark the run finished. Closing an already closed run does nothing."""
        if status not in RUN_STATUSES:
            raise InvalidParameterError("status", status, f"expected one of {RUN_STATUSES}")
        with self._ledger._transaction("FULL") as conn:
            row = conn.execute("SELECT status FROM runs WHERE run_id=?",
                               (self._run_id,)).fetchone()
            if row is None:
                raise LedgerCorruptError(f"run {self._run_id!r} has no row in {self._ledger.path}")
            if row[0] != "open":
                return
            seq = self._ledger._append(conn, {
                "kind": "run-close", "dataset_id": self.dataset_id, "run_id": self._run_id,
                "relation": self._relation.value, "data": {"status": status},
            }, timestamp=self._opened_at)
            conn.execute("UPDATE runs SET status=?, closed_seq=? WHERE run_id=?",
                         (status, seq, self._run_id))
        self._closed = True


def add_entry_costs(totals: tuple[Fraction | None, Fraction, Fraction | None],
                    entries: Sequence[EntryDraft]
                    ) -> tuple[Fraction | None, Fraction, Fraction | None]:
    """A run's ``(eps, delta, rho)`` totals after ``entries`` (exact; ``None`` stays
    ``None``: a total the run's rule does not track)."""
    eps, delta, rho = totals
    for entry in entries:
        cost = entry.cost
        eps = None if eps is None or cost.epsilon is None else eps + cost.epsilon
        delta = delta + cost.delta
        rho = None if rho is None or cost.rho is None else rho + cost.rho
    return eps, delta, rho


def check_run_units(run_id: str, dataset_id: str, reserved_rho: Fraction | None,
                    units: Fraction, entries: Sequence[EntryDraft]) -> Fraction:
    """Under a zcdp lifetime (``reserved_rho`` given): a run's unit rho after
    ``entries``, or a refusal (nothing written): :class:`LifetimeRuleError` for a
    mechanism that is no zCDP unit, :class:`BudgetExceededError` past the run's rho
    reservation. Without one, ``units`` unchanged. Shared by the SQLite and PostgreSQL
    writers."""
    if reserved_rho is None:
        return units
    total: Fraction | None = units
    for entry in entries:
        cost = entry.cost
        unit = unit_rho(cost.epsilon, cost.delta, cost.rho)
        total = None if total is None or unit is None else total + unit
    why = unit_violation(reserved_rho, total)
    if total is None:
        raise LifetimeRuleError(
            f"run {run_id!r}: dataset {dataset_id!r} has a zcdp lifetime and "
            f"{why}; nothing was written")
    if why is not None:
        raise BudgetExceededError(
            f"run {run_id!r}: the entries would exceed the run's reservation "
            f"under its dataset's zcdp lifetime: {why}")
    return total


def validate_draft(entry: EntryDraft, relation: Relation, run_id: str,
                   dataset_id: str) -> tuple[dict[str, Any], dict[str, str]]:
    """A mechanism entry of run ``run_id`` (of ``dataset_id``, under ``relation``) checked
    and encoded: its fields and the canonical JSON of ``params``, ``cost`` and ``data``.

    Raises (writing nothing) for a malformed draft, another relation, or a declared cost
    or sensitivity that differs from the one re-derived from its parameters. Shared by
    every backend's writer (SQLite, PostgreSQL)."""
    if not isinstance(entry, EntryDraft):
        raise InvalidParameterError("entry", entry, "must be an accounting.entries.EntryDraft")
    if not isinstance(entry.relation, Relation):
        raise InvalidParameterError("entry.relation", entry.relation, "must be a Relation")
    if entry.relation is not relation:
        raise RelationMismatchError(
            f"entry {entry.mechanism!r} is declared under {entry.relation.value} but run "
            f"{run_id!r} (dataset {dataset_id!r}) uses {relation.value}")
    if not isinstance(entry.cost, Cost):
        raise InvalidParameterError("entry.cost", entry.cost, "must be an accounting Cost")
    mechanism = _check_id("entry.mechanism", entry.mechanism)
    params, params_json = _flat_encoded(entry.params, "entry.params")
    if not isinstance(params, dict):
        raise InvalidParameterError("entry.params", entry.params, "must be a mapping")
    extra, extra_json = _flat_encoded(entry.extra, "entry.extra")
    if not isinstance(extra, dict):
        raise InvalidParameterError("entry.extra", entry.extra, "must be a mapping")
    sens = entry.sensitivity
    if sens is not None:
        if isinstance(sens, bool) or not isinstance(sens, int | float) \
                or not math.isfinite(sens) or sens < 0:
            raise InvalidParameterError("entry.sensitivity", sens, "must be finite and >= 0")
        sens = float(sens)
    purpose = _check_text("entry.purpose", entry.purpose)
    if not isinstance(entry.seed_explicit, bool):
        raise InvalidParameterError("entry.seed_explicit", entry.seed_explicit,
                                    "must be a bool")
    try:
        derived, derived_sensitivity = rederive(mechanism, params, relation,
                                                params_json=params_json)
    except (ValueError, TypeError, KeyError, ArithmeticError) as exc:
        raise InvalidParameterError(
            "entry.params", entry.params,
            f"the cost of {mechanism!r} cannot be re-derived from them ({exc})") from None
    if derived != entry.cost:
        raise InvalidParameterError(
            "entry.cost", entry.cost.as_dict(),
            f"must equal the cost re-derived from the parameters, {derived.as_dict()}")
    if sens != derived_sensitivity:
        raise InvalidParameterError(
            "entry.sensitivity", entry.sensitivity,
            f"must equal the mechanism's declared sensitivity {derived_sensitivity!r}")
    cost = entry.cost.as_dict()
    fields = {
        "kind": "mechanism", "dataset_id": dataset_id, "run_id": run_id,
        "mechanism": mechanism, "params": params, "sensitivity": sens,
        "relation": relation.value, "cost": cost, "purpose": purpose,
        "seed_explicit": entry.seed_explicit, "data": {"extra": extra},
    }
    # the canonical JSON of the structured fields, encoded once (keys sorted)
    encoded = {"params": params_json, "cost": _cost_json(entry.cost),
               "data": '{"extra":' + extra_json + "}"}
    return fields, encoded
