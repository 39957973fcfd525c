"""The PostgreSQL ledger: one hash chain per database, append-only for the analyst.

``PostgresLedger.open("postgresql://analyst@host/db")`` implements the same interface
as the SQLite :class:`~accounting.ledger.store.Ledger`
(:class:`accounting.ledger.backend.LedgerBackend`) with the same entries, the same
canonical JSON and hash chain, the same ``verify`` (:class:`ChainChecker`), ``export``
(certificate) and ``export_head``. What differs is who enforces what:

* the analyst's database role has ``SELECT`` on the tables and ``EXECUTE`` on the
  ``SECURITY DEFINER`` functions ``register`` / ``reserve`` / ``charge`` / ``close_run``
  only (``accounting/ledger/_pg_schema.py``): no ``INSERT``, ``UPDATE``, ``DELETE``,
  ``TRUNCATE``; the database refuses every other write;
* each function takes one advisory lock, reads the head, assembles the entry's
  canonical text from this client's segments and the values only the database chooses
  (``seq``, ``prev_hash``, the timestamp), hashes it and checks it against the chain:
  ``reserve`` admits a run on the dataset's charge re-derived from the chain rows
  (exact rationals), so lifetimes hold atomically across processes and machines;
* heads are signed by the custodian (``dpcg ledger sign-heads``,
  :func:`accounting.ledger.custody.sign_heads`), never by the analyst's process: this
  writer takes no signing key.

Needs the optional ``psycopg`` (v3) driver: ``pip install 'dpcg[postgres]'``. The schema
is installed once per database by the administrator (:func:`install_schema`, ``dpcg
ledger pg-install``). See ``docs/ledger.md``, "PostgreSQL".
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from fractions import Fraction
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from accounting.costs import Budget
from accounting.entries import EntryDraft
from accounting.errors import (
    BudgetExceededError,
    DatasetConflictError,
    DuplicateDatasetError,
    ForeignLedgerError,
    InvalidParameterError,
    LedgerCorruptError,
    LedgerError,
    LifetimeRuleError,
    RelationMismatchError,
    UnknownDatasetError,
    UnsignedLedgerError,
    WrongKeyError,
)
from accounting.ledger import _pg_schema as pgs
from accounting.ledger._format import (
    ENTRY_FIELDS,
    FORMAT_NAME,
    FORMAT_VERSION,
    STORED_FIELDS,
    canonical_json,
    fraction_str,
    genesis_hash,
    parse_fraction,
    scalar_json,
    sha256_hex,
)
from accounting.ledger._verify import (
    ChainChecker,
    RunTotals,
    VerificationReport,
    lifetime_rho,
    rho_converted,
    rule_violation,
)
from accounting.ledger.signing import (
    METADATA_KEY,
    SignedHead,
    VerifyKey,
    head_problems,
    now,
    read_head_file,
    signature_problems,
    write_head_file,
)
from accounting.ledger.store import (
    DatasetInfo,
    PublicKeySource,
    RunInfo,
    _check_budget,
    _check_id,
    _check_rule,
    _check_text,
    _json_encoded,
    _load_verify,
    _now,
    _refuse_unless_fits,
    add_entry_costs,
    check_lifetime_rule,
    check_run_units,
    registration_data,
    run_rho_for,
    validate_draft,
)
from accounting.relations import Relation

#: URL schemes that name a PostgreSQL ledger (``--ledger postgresql://...``).
URL_SCHEMES = ("postgresql://", "postgres://")

#: The hashed fields before ``prev_hash`` and between it and ``seq`` (canonical order):
#: the client sends their text; the database fills in prev_hash, seq and timestamp.
_HEAD_FIELDS = ("cost", "data", "dataset_id", "kind", "mechanism", "params")
_MID_FIELDS = ("purpose", "relation", "run_id", "seed_explicit", "sensitivity")
assert tuple(sorted(ENTRY_FIELDS)) == (*_HEAD_FIELDS, "prev_hash", *_MID_FIELDS, "seq",
                                       "timestamp")


def is_postgres_url(location: object) -> bool:
    """Whether ``location`` (a ``--ledger`` value) names a PostgreSQL ledger."""
    return isinstance(location, str) and location.startswith(URL_SCHEMES)


def redact(url: str) -> str:
    """``url`` without its password (what messages and ``ledger.path`` show)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        raise LedgerError(
            "a PostgreSQL ledger needs the optional psycopg driver: "
            "pip install 'dpcg[postgres]'") from None
    return psycopg


def connect(url: str, timeout: float = 60.0) -> Any:
    """An autocommit psycopg connection to ``url`` (:class:`LedgerError` if it fails;
    the message never shows the password)."""
    psycopg = _psycopg()
    try:
        return psycopg.connect(url, autocommit=True, connect_timeout=max(1, int(timeout)))
    except psycopg.Error as exc:
        raise LedgerError(f"cannot connect to the ledger database {redact(url)}: "
                          f"{_first_line(exc)}") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _segments(text: dict[str, str]) -> tuple[str, str]:
    """The canonical text of an entry without prev_hash, seq and timestamp, as the two
    segments the database functions assemble (``dpcg._build``)."""
    head = "{" + ",".join(f"{json.dumps(k)}:{text[k]}" for k in _HEAD_FIELDS) \
        + ',"prev_hash":'
    mid = "," + ",".join(f"{json.dumps(k)}:{text[k]}" for k in _MID_FIELDS) + ',"seq":'
    return head, mid


def _encode(fields: dict[str, Any], encoded: dict[str, str] | None = None) -> tuple[str, str]:
    """Segments of an entry given its fields (defaults as the SQLite writer's)."""
    record: dict[str, Any] = {
        "run_id": None, "mechanism": None, "params": None, "sensitivity": None,
        "cost": None, "purpose": "", "seed_explicit": None, **fields}
    text = {} if encoded is None else dict(encoded)
    for name in (*_HEAD_FIELDS, *_MID_FIELDS):
        if name not in text:
            text[name] = scalar_json(record[name])
    return _segments(text)


def install_schema(admin_url: str, *, owner: str = "dpcg_owner",
                   analysts: Sequence[str] = ("dpcg_analyst",),
                   custodians: Sequence[str] = ("dpcg_custodian",),
                   create_roles: bool = True, public_key: VerifyKey | None = None,
                   analysts_register: bool = False) -> str:
    """Install the ledger in the database of ``admin_url`` (a role that may create
    schemas and roles, e.g. the database's owner or a superuser); returns its ledger id.

    Creates (with ``create_roles``, when missing) the ``NOLOGIN`` owner role that owns
    the schema ``dpcg`` and its ``SECURITY DEFINER`` functions, and the analyst and
    custodian login roles (no password: the administrator sets one or a ``pg_hba.conf``
    rule); grants analysts ``SELECT`` and ``reserve``/``charge``/``close_run`` (and
    ``register`` with ``analysts_register``: a team without a custodian, where the
    first run of a new id registers it), custodians ``SELECT``, ``register``,
    ``sign_head`` and ``bind_key``.
    ``public_key`` binds the ledger to the custodian's key at creation. Refuses a
    database that already has a ``dpcg`` schema (:class:`LedgerError`)."""
    psycopg = _psycopg()
    from psycopg import sql

    for name, value in (("owner", owner), *((f"analyst {a}", a) for a in analysts),
                        *((f"custodian {c}", c) for c in custodians)):
        _check_id(name, value)
    conn = connect(admin_url)
    try:
        def ident(name: str) -> str:
            return str(sql.Identifier(name).as_string(conn))

        with conn.transaction():
            if conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = 'dpcg'").fetchone():
                raise LedgerError(f"{redact(admin_url)} already has a dpcg ledger schema")
            if create_roles:
                for role, login in ((owner, False), *((a, True) for a in analysts),
                                    *((c, True) for c in custodians)):
                    if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s",
                                    (role,)).fetchone() is None:
                        conn.execute(f"CREATE ROLE {ident(role)} "
                                     f"{'LOGIN' if login else 'NOLOGIN'}")
            for stmt in pgs.schema_sql(ident(owner)):
                conn.execute(stmt)
            ledger_id, created_at = uuid.uuid4().hex, _now()
            meta = [("format", FORMAT_NAME), ("format_version", str(FORMAT_VERSION)),
                    ("ledger_id", ledger_id), ("created_at", created_at),
                    ("genesis_hash", genesis_hash(ledger_id, created_at))]
            if public_key is not None:
                meta.append((METADATA_KEY, public_key.hex))
            for k, v in meta:
                conn.execute("INSERT INTO dpcg.metadata (key, value) VALUES (%s, %s)", (k, v))
            for stmt in pgs.grant_sql(ident(owner), [ident(a) for a in analysts],
                                      [ident(c) for c in custodians], analysts_register):
                conn.execute(stmt)
    except psycopg.Error as exc:
        raise LedgerError(f"cannot install the ledger in {redact(admin_url)}: "
                          f"{_first_line(exc)}") from None
    finally:
        conn.close()
    return ledger_id


class PostgresLedger:
    """A privacy ledger in a PostgreSQL database (see the module docstring).

    Open with :meth:`open`. One instance per process and thread (a connection is not
    shared across ``fork()``).
    """

    backend = "postgresql"

    def __init__(self, url: str, conn: Any, meta: dict[str, str]) -> None:
        self._url = url
        #: Where the ledger is, as shown to users (the URL without its password).
        self.path = redact(url)
        self._connection: Any = conn
        self._pid = os.getpid()
        self.ledger_id = meta["ledger_id"]
        self.created_at = meta["created_at"]
        self.format_version = int(meta["format_version"])
        self._genesis = genesis_hash(self.ledger_id, self.created_at)

    @classmethod
    def open(cls, url: str, create: bool = False, *, timeout: float = 60.0,
             signing_key: object = None) -> PostgresLedger:
        """Connect to the ledger at ``url`` (``postgresql://role@host:port/db``).

        The schema must have been installed (:func:`install_schema`): ``create`` only
        matters for SQLite files and is accepted for the same call sites. A database
        without the schema raises :class:`ForeignLedgerError`. ``signing_key`` must be
        ``None``: a PostgreSQL ledger's heads are signed by the custodian, never by
        the process that runs analyses (:class:`InvalidParameterError`)."""
        del create
        if signing_key is not None:
            raise InvalidParameterError(
                "signing_key", "<key>", "a PostgreSQL ledger's heads are signed by its "
                "custodian (`dpcg ledger sign-heads`), not by the analysis process")
        if not is_postgres_url(url):
            raise InvalidParameterError("url", redact(str(url)),
                                        "must start with postgresql:// or postgres://")
        if not isinstance(timeout, int | float) or not timeout > 0:
            raise InvalidParameterError("timeout", timeout, "must be > 0 seconds")
        psycopg = _psycopg()
        conn = connect(url, timeout)
        try:
            conn.execute(f"SET lock_timeout = {int(timeout * 1000)}")
            try:
                rows = conn.execute("SELECT key, value FROM dpcg.metadata").fetchall()
            except psycopg.errors.UndefinedTable:
                raise ForeignLedgerError(
                    f"{redact(url)} has no dpcg ledger (install it with `dpcg ledger "
                    "pg-install`)") from None
            except psycopg.errors.InsufficientPrivilege:
                raise LedgerError(
                    f"{redact(url)}: this role may not read the ledger (ask the "
                    "administrator for the analyst or custodian role)") from None
            meta = {str(k): str(v) for k, v in rows}
            if meta.get("format") != FORMAT_NAME or \
                    meta.get("format_version") != str(FORMAT_VERSION):
                raise ForeignLedgerError(f"{redact(url)}: not a dpcg ledger of format version "
                                         f"{FORMAT_VERSION}")
            for key in ("ledger_id", "created_at"):
                if key not in meta:
                    raise LedgerCorruptError(f"{redact(url)}: metadata {key!r} is missing")
        except BaseException:
            conn.close()
            raise
        return cls(url, conn, meta)

    # -- connection -------------------------------------------------------------------
    @property
    def _conn(self) -> Any:
        if self._connection is None:
            raise LedgerError(f"the ledger {self.path} is closed; open it again")
        if os.getpid() != self._pid:
            raise LedgerError(f"the ledger {self.path} was opened in process {self._pid}; "
                              "open it again in this process")
        return self._connection

    def close(self) -> None:
        if self._connection is not None and os.getpid() == self._pid:
            self._connection.close()
            self._connection = None

    def __enter__(self) -> PostgresLedger:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def _call(self, sql: str, args: Sequence[object]) -> list[tuple[Any, ...]]:
        """Call a ledger function; its refusals become the accounting errors."""
        psycopg = _psycopg()
        try:
            return list(self._conn.execute(sql, args).fetchall())
        except psycopg.Error as exc:
            raise _translate(exc, self.path) from None

    @contextmanager
    def _snapshot(self) -> Iterator[Any]:
        """One consistent read-only snapshot for several reads."""
        conn = self._conn
        psycopg = _psycopg()
        try:
            with conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                yield conn
        except psycopg.Error as exc:
            raise _translate(exc, self.path) from None

    # -- signing (the custodian's) ------------------------------------------------------
    @property
    def signing_public_key(self) -> VerifyKey | None:
        row = self._conn.execute("SELECT value FROM dpcg.metadata WHERE key = %s",
                                 (METADATA_KEY,)).fetchone()
        return None if row is None else VerifyKey.from_hex(str(row[0]))

    def check_signing(self) -> str | None:
        """Nothing to check: the analyst's process never signs a PostgreSQL ledger (its
        heads are signed by the custodian); returns ``None``."""
        self._conn  # noqa: B018 - raises when closed
        return None

    # -- datasets ---------------------------------------------------------------------
    def _register(self, dataset_id: str, eps: Fraction, delta: Fraction, rel: Relation,
                  description: str, lifetime_rule: str = "basic") -> tuple[int, bool]:
        head, mid = _encode({
            "kind": "dataset", "dataset_id": dataset_id, "relation": rel.value,
            "data": registration_data(eps, delta, description, lifetime_rule)})
        try:
            (seq, _h, created), = self._call(
                "SELECT o_seq, o_hash, o_created FROM dpcg.register(%s, %s)", (head, mid))
        except LedgerError as exc:
            if "permission denied" not in str(exc):
                raise
            raise UnknownDatasetError(
                f"dataset {dataset_id!r} is not registered in {self.path} and this role may "
                "not register datasets: the custodian registers it (`dpcg ledger init "
                f"URL --dataset-id {dataset_id} ...` as the custodian role); nothing was "
                "reserved") from None
        return int(seq), bool(created)

    def register_dataset(self, dataset_id: str, lifetime: Budget,
                         relation: Relation | str = Relation.REPLACE_ONE,
                         description: str = "", *, lifetime_rule: str = "basic") -> None:
        """Register ``dataset_id`` (:class:`DuplicateDatasetError` if it is registered);
        ``lifetime_rule`` as for :meth:`Ledger.register_dataset`."""
        dataset_id = _check_id("dataset_id", dataset_id)
        eps, delta = _check_budget("lifetime", lifetime)
        rel = Relation.parse(relation)
        description = _check_text("description", description)
        lifetime_rule = check_lifetime_rule(lifetime_rule, delta)
        _seq, created = self._register(dataset_id, eps, delta, rel, description,
                                       lifetime_rule)
        if not created:
            raise DuplicateDatasetError(
                f"dataset {dataset_id!r} is already registered in {self.path}")

    def ensure_dataset(self, dataset_id: str, lifetime: Budget,
                       relation: Relation | str = Relation.REPLACE_ONE,
                       description: str = "", *,
                       for_run: Budget | None = None, for_rule: str | None = None,
                       lifetime_rule: str = "basic") -> tuple[DatasetInfo, bool]:
        """As :meth:`Ledger.ensure_dataset`: register unless registered (one locked
        database call, so concurrent first runs get one registration)."""
        dataset_id = _check_id("dataset_id", dataset_id)
        eps, delta = _check_budget("lifetime", lifetime)
        rel = Relation.parse(relation)
        description = _check_text("description", description)
        lifetime_rule = check_lifetime_rule(lifetime_rule, delta)
        if for_rule is not None:
            for_rule = _check_rule(for_rule)
        need = None if for_run is None else _check_budget("for_run", for_run)
        if self.has_dataset(dataset_id):
            info = self.dataset(dataset_id)
            if info.relation is not rel:
                raise DatasetConflictError(
                    f"dataset {dataset_id!r} is registered in {self.path} under the "
                    f"{info.relation.value} relation, not {rel.value}; a dataset id keeps "
                    "its relation (use another id)")
            if need is not None:
                _refuse_unless_fits(dataset_id, need, info, for_rule, "remaining lifetime")
            return info, False
        if need is not None:
            _refuse_unless_fits(dataset_id, need, DatasetInfo(
                dataset_id=dataset_id, lifetime_epsilon=eps, lifetime_delta=delta,
                relation=rel, description=description, reserved_epsilon=Fraction(0),
                reserved_delta=Fraction(0), n_runs=0, lifetime_rule=lifetime_rule,
                lifetime_rho=lifetime_rho(eps, delta) if lifetime_rule == "zcdp" else None),
                for_rule, "lifetime")
        _seq, created = self._register(dataset_id, eps, delta, rel, description,
                                       lifetime_rule)
        info = self.dataset(dataset_id)
        if not created and need is not None:
            _refuse_unless_fits(dataset_id, need, info, for_rule, "remaining lifetime")
        return info, created

    def dataset(self, dataset_id: str) -> DatasetInfo:
        """The dataset's lifetime and charge, re-derived from the chain by the database."""
        (row,), = self._call("SELECT dpcg.dataset_info(%s)", (dataset_id,))
        if row is None:
            known = ", ".join(repr(d) for d in self._dataset_ids()) or "none"
            raise UnknownDatasetError(
                f"dataset {dataset_id!r} is not registered in {self.path} (known: {known})")
        try:
            lifetime_delta = parse_fraction(row[1], "delta")
            charged = (parse_fraction(row[7], "charged_epsilon"),
                       parse_fraction(row[8], "charged_delta"))
            zcdp = row[9] is not None
            if zcdp:  # a zcdp lifetime: admission is on rho; (eps, delta) its conversion
                charged = rho_converted(parse_fraction(row[11], "charged_rho"),
                                        lifetime_delta)
            return DatasetInfo(
                dataset_id=dataset_id, lifetime_epsilon=parse_fraction(row[0], "epsilon"),
                lifetime_delta=lifetime_delta, relation=Relation(row[2]),
                description=str(row[3]),
                reserved_epsilon=parse_fraction(row[4], "reserved_epsilon"),
                reserved_delta=parse_fraction(row[5], "reserved_delta"), n_runs=int(row[6]),
                charged_epsilon=charged[0], charged_delta=charged[1],
                lifetime_rule="zcdp" if zcdp else "basic",
                lifetime_rho=parse_fraction(row[10], "lifetime_rho") if zcdp else None,
                charged_rho=parse_fraction(row[11], "charged_rho") if zcdp else Fraction(0))
        except (ValueError, TypeError) as exc:
            raise LedgerCorruptError(f"{self.path}: dataset {dataset_id!r}: {exc}") from None

    def _dataset_ids(self) -> list[str]:
        rows = self._call("SELECT dataset_id FROM dpcg.entries WHERE kind = 'dataset' "
                          "ORDER BY seq", ())
        return [str(r[0]) for r in rows]

    def has_dataset(self, dataset_id: str) -> bool:
        return bool(self._call("SELECT 1 FROM dpcg.entries WHERE kind = 'dataset' AND "
                               "dataset_id = %s", (dataset_id,)))

    def datasets(self) -> list[DatasetInfo]:
        return [self.dataset(d) for d in self._dataset_ids()]

    # -- runs -------------------------------------------------------------------------
    def open_run(self, dataset_id: str, budget: Budget, rule: str, seed_explicit: bool,
                 description: str = "") -> PostgresRun:
        """Reserve ``budget`` (the database admits it on the charge it re-derives from the
        chain, under its append lock; :class:`BudgetExceededError` and nothing written
        when it does not fit the lifetime)."""
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
        # UnknownDatasetError naming the known ids
        relation, lifetime_rule = self._registration(dataset_id)
        run_rho = run_rho_for(lifetime_rule, rule, eps, delta, dataset_id)
        run_id = uuid.uuid4().hex
        data: dict[str, Any] = {
            "budget": {"epsilon": fraction_str(eps), "delta": fraction_str(delta)},
            "rule": rule, "description": description}
        if run_rho is not None:
            data["rho"] = fraction_str(run_rho)
        head, mid = _encode({
            "kind": "run-open", "dataset_id": dataset_id, "run_id": run_id,
            "relation": relation.value, "seed_explicit": seed_explicit, "data": data})
        (_seq, _h, opened_at), = self._call(
            "SELECT o_seq, o_hash, o_timestamp FROM dpcg.reserve(%s, %s)", (head, mid))
        return PostgresRun(self, run_id, dataset_id, budget, eps, delta, relation, rule,
                           seed_explicit, str(opened_at), reserved_rho=run_rho)

    def _registration(self, dataset_id: str) -> tuple[Relation, str]:
        """The registered relation and lifetime rule of ``dataset_id`` (read from its
        registration entry; the database re-checks both when it admits)."""
        rows = self._call("SELECT body FROM dpcg.entries WHERE kind = 'dataset' AND "
                          "dataset_id = %s", (dataset_id,))
        if not rows:
            self.dataset(dataset_id)  # raises UnknownDatasetError naming the known ids
        try:
            body = json.loads(rows[0][0])
            return (Relation(body["relation"]),
                    "zcdp" if "lifetime_rule" in body["data"] else "basic")
        except (ValueError, KeyError, TypeError) as exc:
            raise LedgerCorruptError(f"{self.path}: dataset {dataset_id!r}: {exc}") from None

    def _checker(self) -> tuple[ChainChecker, dict[str, str], list[tuple[Any, ...]],
                                list[tuple[Any, ...]]]:
        """The whole chain folded (and checked) in one snapshot: the checker, the
        metadata, the raw rows and the signature rows."""
        with self._snapshot() as conn:
            meta = {str(k): str(v) for k, v in
                    conn.execute("SELECT key, value FROM dpcg.metadata").fetchall()}
            rows = conn.execute(
                "SELECT seq, body, hash FROM dpcg.entries ORDER BY seq").fetchall()
            signatures = conn.execute(
                "SELECT seq, hash, signature FROM dpcg.head_signatures ORDER BY seq"
            ).fetchall()
        checker = ChainChecker(genesis_hash(meta.get("ledger_id", ""),
                                            meta.get("created_at", "")))
        for row in rows:
            record, problem = _row_to_record(row)
            if problem is not None:
                checker.problems.append(f"entry {row[0]!r}: {problem}")
            checker.add(record)
        return checker, meta, rows, signatures

    def runs(self, dataset_id: str | None = None) -> list[RunInfo]:
        checker = self._checker()[0]
        return [_run_info(r) for r in checker.runs.values()
                if dataset_id is None or r.dataset_id == dataset_id]

    def run(self, run_id: str) -> RunInfo:
        checker = self._checker()[0]
        if run_id not in checker.runs:
            raise LedgerError(f"no run {run_id!r} in {self.path}")
        return _run_info(checker.runs[run_id])

    # -- reading the chain ------------------------------------------------------------
    def entry_count(self) -> int:
        (n,), = self._call("SELECT count(*) FROM dpcg.entries", ())
        return int(n)

    def head_hash(self) -> str | None:
        rows = self._call("SELECT hash FROM dpcg.entries ORDER BY seq DESC LIMIT 1", ())
        return None if not rows else str(rows[0][0])

    def entries(self) -> list[dict[str, Any]]:
        out = []
        for row in self._call("SELECT seq, body, hash FROM dpcg.entries ORDER BY seq", ()):
            record, problem = _row_to_record(row)
            if problem is not None:
                raise LedgerCorruptError(f"{self.path}: entry {row[0]!r}: {problem}")
            out.append(record)
        return out

    # -- verification -----------------------------------------------------------------
    def verify(self, expected_head: str | None = None, contains: str | None = None, *,
               public_key: PublicKeySource | None = None,
               head: str | os.PathLike[str] | SignedHead | None = None,
               allow_unsigned_head: bool = False) -> VerificationReport:
        """As :meth:`Ledger.verify` (the same checker; there are no total tables to
        compare). ``allow_unsigned_head``: with ``public_key``, entries appended after
        the last signed head are allowed (what the custodian checks before it signs)."""
        key = None if public_key is None else _load_verify(public_key)
        signed_head: SignedHead | None = None
        if head is not None:
            if key is None:
                raise InvalidParameterError(
                    "public_key", None, "an exported head is checked with the public key")
            signed_head = head if isinstance(head, SignedHead) else read_head_file(head)
            signed_head.check_signature(key)
        checker, meta, rows, signatures = self._checker()
        extra = checker.pin_problems(expected_head, contains)
        hashes_by_seq = {int(r[0]): str(r[2]) for r in rows}
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
            head_seq = max(hashes_by_seq) if hashes_by_seq else None
            extra.extend(signature_problems(
                key, self.ledger_id, hashes_by_seq,
                None if allow_unsigned_head else head_seq, [tuple(s) for s in signatures]))
        if signed_head is not None:
            datasets_by_seq: dict[str, int] = {}
            for ds in checker.datasets.values():
                datasets_by_seq.setdefault(ds.dataset_id, ds.registered_seq)
            extra.extend(head_problems(signed_head, self.ledger_id, hashes_by_seq,
                                       datasets_by_seq))
        return checker.report(f"ledger {self.path}", meta.get("ledger_id"), extra)

    def export(self, path: str | os.PathLike[str]) -> VerificationReport:
        """Verify, then write a JSON certificate (the same format as SQLite's)."""
        from accounting.ledger.certificate import write_certificate

        return write_certificate(self, path)

    def export_head(self, path: str | os.PathLike[str]) -> SignedHead:
        """Write the current signed head (the custodian must have signed it)."""
        key = self.signing_public_key
        if key is None:
            raise UnsignedLedgerError(
                f"ledger {self.path} is not signed; the custodian binds it to a key")
        report = self.verify(public_key=key)
        report.raise_if_failed()
        if report.head_hash is None:
            raise UnsignedLedgerError(f"ledger {self.path} is empty: no head to export")
        rows = self._call("SELECT signature FROM dpcg.head_signatures WHERE seq = %s AND "
                          "hash = %s", (report.entries, report.head_hash))
        if not rows:
            raise LedgerCorruptError(f"{self.path}: the head signature disappeared")
        signed = SignedHead(
            ledger_id=self.ledger_id, seq=report.entries, hash=report.head_hash,
            datasets=tuple(d.dataset_id for d in report.datasets), public_key=key,
            signature=str(rows[0][0]), exported_at=now())
        write_head_file(signed, path)
        return signed

    def signature_rows(self) -> list[tuple[int, str, str]]:
        rows = self._call("SELECT seq, hash, signature FROM dpcg.head_signatures "
                          "ORDER BY seq", ())
        return [(int(r[0]), str(r[1]), str(r[2])) for r in rows]

    def store_head_signature(self, seq: int, head: str, signature: str) -> bool:
        """The custodian's call (``dpcg.sign_head``); ``False`` when seq was signed."""
        (ok,), = self._call("SELECT dpcg.sign_head(%s, %s, %s)", (seq, head, signature))
        return bool(ok)

    def bind_public_key(self, key: VerifyKey) -> None:
        """The custodian's call (``dpcg.bind_key``): bind the ledger to ``key``."""
        self._call("SELECT dpcg.bind_key(%s)", (key.hex,))


def _row_to_record(row: tuple[Any, ...]) -> tuple[dict[str, Any], str | None]:
    """A stored (seq, body, hash) row as the hashed dict plus ``hash``; the second item
    names a problem (not JSON, not canonical, another seq than the row's)."""
    seq, body, h = row
    try:
        value = json.loads(body)
    except (TypeError, ValueError):
        return {"seq": seq, "hash": h}, "the entry is not valid JSON"
    if not isinstance(value, dict):
        return {"seq": seq, "hash": h}, "the entry is not a JSON object"
    record: dict[str, Any] = dict(value)
    record["hash"] = h
    problem = None
    try:
        canonical = canonical_json(value)
    except (TypeError, ValueError):
        canonical = None
    if canonical != body:
        problem = "the entry is not canonical JSON"
    elif sha256_hex(body) != h:
        problem = "the stored hash is not the hash of the entry"
    elif value.get("seq") != seq:
        problem = "the row's seq differs from the entry's"
    elif set(record) != set(STORED_FIELDS):
        problem = "the entry does not have the ledger's fields"
    return record, problem


def _run_info(r: RunTotals) -> RunInfo:
    return RunInfo(
        run_id=r.run_id, dataset_id=r.dataset_id, budget_epsilon=r.budget_epsilon,
        budget_delta=r.budget_delta, rule=r.rule, relation=Relation(r.relation),
        seed_explicit=r.seed_explicit, description=r.description, status=r.status,
        n_entries=r.entries, n_outputs=r.outputs, spent_epsilon=r.spent_epsilon,
        spent_delta=r.spent_delta, spent_rho=r.spent_rho)


def _translate(exc: Exception, where: str) -> Exception:
    """A database error as the accounting error it stands for."""
    state = getattr(exc, "sqlstate", None)
    diag = getattr(exc, "diag", None)
    msg = getattr(diag, "message_primary", None) or _first_line(exc)
    text = f"{where}: {msg}"
    if state == pgs.SQLSTATE_BUDGET:
        return BudgetExceededError(text)
    if state == pgs.SQLSTATE_UNKNOWN_DATASET:
        return UnknownDatasetError(text)
    if state == pgs.SQLSTATE_CONFLICT:
        return DatasetConflictError(text)
    if state == pgs.SQLSTATE_RELATION:
        return RelationMismatchError(text)
    if state == pgs.SQLSTATE_CLOSED:
        return LedgerError(text)
    if state == pgs.SQLSTATE_LIFETIME_RULE:
        return LifetimeRuleError(text)
    if state == pgs.SQLSTATE_INVALID:
        return InvalidParameterError("entry", None, text)
    if state == "42501":
        return LedgerError(f"{where}: permission denied: {msg} (this role may only read the "
                           "ledger and call its functions)")
    return LedgerError(f"{where}: the database refused or failed: {msg}")


class PostgresRun:
    """One run's recorder on a :class:`PostgresLedger` (``record``, ``record_many``,
    ``record_output``, ``close``), each one database call and one transaction."""

    def __init__(self, ledger: PostgresLedger, run_id: str, dataset_id: str, budget: Budget,
                 budget_epsilon: Fraction, budget_delta: Fraction, relation: Relation,
                 rule: str, seed_explicit: bool, opened_at: str, *,
                 reserved_rho: Fraction | None = None) -> None:
        self._ledger = ledger
        #: under a zcdp lifetime: the run's reservation in rho and its units so far
        self._reserved_rho = reserved_rho
        self._units = Fraction(0)
        self._run_id = run_id
        self._opened_at = opened_at
        self.dataset_id = dataset_id
        self._budget = budget
        self._eps = budget_epsilon
        self._delta = budget_delta
        self._relation = relation
        self._rule = rule
        self.seed_explicit = seed_explicit
        self._with_output: set[int] = set()
        self._closed = False
        self._spent: tuple[Fraction | None, Fraction, Fraction | None] = (
            Fraction(0), Fraction(0), Fraction(0))

    @property
    def run_id(self) -> str:
        return self._run_id

    @property
    def budget(self) -> Budget:
        return self._budget

    @property
    def opened_at(self) -> str:
        return self._opened_at

    @property
    def relation(self) -> Relation:
        return self._relation

    @property
    def rule(self) -> str:
        return self._rule

    @property
    def ledger(self) -> PostgresLedger:
        return self._ledger

    def info(self) -> RunInfo:
        return self._ledger.run(self._run_id)

    def record(self, entry: EntryDraft) -> int:
        return self.record_many([entry])[0]

    def record_many(self, entries: Sequence[EntryDraft]) -> list[int]:
        """Append ``entries`` in one database call, all or none (the database re-checks
        the run's reservation from its chain rows; this writer checks the rule first,
        including the zCDP conversion the database does not compute)."""
        if isinstance(entries, EntryDraft) or not isinstance(entries, Sequence):
            raise InvalidParameterError("entries", entries, "must be a sequence of EntryDraft")
        if not entries:
            return []
        if self._closed:
            raise LedgerError(f"run {self._run_id!r} is closed; open a new run")
        checked = [validate_draft(e, self._relation, self._run_id, self.dataset_id)
                   for e in entries]
        eps, delta, rho = add_entry_costs(self._spent, entries)
        # under a zcdp lifetime: checked again by the database
        units = check_run_units(self._run_id, self.dataset_id, self._reserved_rho,
                                self._units, entries)
        why = rule_violation(self._rule, self._eps, self._delta, eps, delta, rho)
        if why is not None:
            n = len(entries)
            what = repr(entries[0].mechanism) if n == 1 else f"{n} entries"
            raise BudgetExceededError(
                f"run {self._run_id!r}: recording {what} would exceed the run's "
                f"reservation under rule {self._rule}: {why}")
        segments = [_encode(fields, encoded) for fields, encoded in checked]
        rows = self._ledger._call(
            "SELECT o_seq, o_hash FROM dpcg.charge(%s, %s, %s)",
            (self._run_id, [s[0] for s in segments], [s[1] for s in segments]))
        self._spent = (eps, delta, rho)
        self._units = units
        return [int(r[0]) for r in rows]

    def record_output(self, sequence: int, output: object) -> None:
        if isinstance(sequence, bool) or not isinstance(sequence, int):
            raise InvalidParameterError("sequence", sequence, "must be an entry sequence number")
        value, value_json = _json_encoded(output, "output")
        if sequence in self._with_output:
            raise InvalidParameterError("sequence", sequence, "that entry already has an output")
        data_json = '{"of_seq":' + str(sequence) + ',"output":' + value_json + "}"
        head, mid = _encode({
            "kind": "output", "dataset_id": self.dataset_id, "run_id": self._run_id,
            "relation": self._relation.value, "data": {"of_seq": sequence, "output": value}},
            {"data": data_json})
        try:
            self._ledger._call("SELECT o_seq FROM dpcg.charge(%s, %s, %s)",
                               (self._run_id, [head], [mid]))
        except InvalidParameterError:
            raise InvalidParameterError(
                "sequence", sequence,
                f"is not a mechanism entry of run {self._run_id!r} without an output") \
                from None
        self._with_output.add(sequence)

    def close(self, status: str = "completed") -> None:
        """Mark the run finished (closing a closed run does nothing)."""
        from accounting.ledger._format import RUN_STATUSES

        if status not in RUN_STATUSES:
            raise InvalidParameterError("status", status, f"expected one of {RUN_STATUSES}")
        head, mid = _encode({
            "kind": "run-close", "dataset_id": self.dataset_id, "run_id": self._run_id,
            "relation": self._relation.value, "data": {"status": status}})
        self._ledger._call("SELECT o_seq FROM dpcg.close_run(%s, %s, %s)",
                           (self._run_id, head, mid))
        self._closed = True


__all__ = ["URL_SCHEMES", "PostgresLedger", "PostgresRun", "install_schema",
           "is_postgres_url", "redact"]
