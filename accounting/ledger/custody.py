"""Custody separated from analysis: the custodian's signed policy and head signing.

The **custodian** holds the Ed25519 signing key and decides the **policy**: which
dataset ids are governed, the ledger each must be recorded in (its location and
``ledger_id``), its lifetime and relation, the data files that are that dataset, and
whether ``--no-ledger`` runs are allowed at all. The **analyst's process** never reads
the key (nor ``$DPCG_LEDGER_KEY``): it reads the policy, which it cannot forge (it is
signed with the custodian's key, and that key must be the one the governed ledger is
bound to), and records into a PostgreSQL ledger whose database lets its role only call
reserve / charge / close (``accounting/ledger/postgres.py``).

* :func:`write_policy` (custodian): sign a policy file.
* :func:`read_policy`: load one and check its signature.
* :func:`check_policy` (every private run, before anything is reserved): refuse a run
  the policy forbids (:class:`PolicyViolationError`).
* :func:`sign_heads` (custodian, e.g. from cron): verify the chain (every earlier head
  signature with the key, the unsigned entries since by the chain checker), then sign
  the current head.

Where policies are found (:func:`policy_paths`): ``/etc/dpcg/policy.json`` when it
exists (installed by the operator where the analyst cannot write; the analyst cannot
remove it) and every file named in ``$DPCG_POLICY`` (``os.pathsep``-separated; these
can only add restrictions). See ``docs/ledger.md``, "Custody".
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from accounting.errors import (
    InvalidParameterError,
    LedgerCorruptError,
    LedgerError,
    WrongKeyError,
)
from accounting.ledger._format import canonical_json, fraction_str, parse_fraction
from accounting.ledger.backend import LedgerBackend, is_postgres, open_ledger
from accounting.ledger.signing import SigningKey, VerifyKey, load_signing_key, now
from accounting.relations import Relation

POLICY_FORMAT = "dpcg-ledger-policy"
POLICY_VERSION = 1
#: The machine-wide policy (installed by the operator; consulted whenever it exists).
SYSTEM_POLICY = Path("/etc/dpcg/policy.json")
#: More policy files (``os.pathsep``-separated): they add restrictions, never lift them.
POLICY_ENV = "DPCG_POLICY"


class PolicyViolationError(LedgerError):
    """The custodian's policy forbids this run (or a policy file is forged or corrupt).

    Raised before anything is reserved or written."""


@dataclass(frozen=True)
class GovernedDataset:
    """One governed dataset id, as the custodian declared it."""

    dataset_id: str
    #: The ledger it must be recorded in: a ``postgresql://`` URL (no password) or the
    #: absolute path of a SQLite file.
    ledger: str
    #: That ledger's id (a ledger re-created at the same location is another ledger).
    ledger_id: str
    lifetime_epsilon: Fraction
    lifetime_delta: Fraction
    relation: str
    #: Absolute paths of the data files that are this dataset (a run on one of them
    #: must use this id).
    data: tuple[str, ...] = ()
    #: The lifetime rule it is registered with (``basic`` or ``zcdp``; a policy states
    #: it only for ``zcdp``, so earlier policies read and sign unchanged).
    lifetime_rule: str = "basic"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "ledger": self.ledger, "ledger_id": self.ledger_id,
            "lifetime": {"epsilon": fraction_str(self.lifetime_epsilon),
                         "delta": fraction_str(self.lifetime_delta)},
            "relation": self.relation, "data": list(self.data)}
        if self.lifetime_rule != "basic":
            out["lifetime_rule"] = self.lifetime_rule
        return out


@dataclass(frozen=True)
class Policy:
    """A custodian-signed policy (see the module docstring)."""

    datasets: Mapping[str, GovernedDataset]
    allow_no_ledger: bool
    public_key: VerifyKey
    issued_at: str
    source: str


def normalize_location(location: object) -> str:
    """A ledger location as policies compare it: a PostgreSQL URL reduced to
    ``postgresql://host:port/database`` (every role connects to the same ledger; no
    user, password or options), or the absolute resolved path of a SQLite file."""
    if is_postgres(location):
        parts = urlsplit(str(location).strip())
        host = (parts.hostname or "").lower()
        return f"postgresql://{host}:{parts.port or 5432}{parts.path or '/'}"
    if not isinstance(location, str | os.PathLike):
        raise InvalidParameterError("ledger", location, "must be a path or a postgresql:// URL")
    return str(Path(location).expanduser().resolve())


def _normalize_data(path: object) -> str:
    if not isinstance(path, str | os.PathLike):
        raise InvalidParameterError("data", path, "must be a file path")
    return str(Path(path).expanduser().resolve())


def _body(datasets: Sequence[GovernedDataset], allow_no_ledger: bool, key: VerifyKey,
          issued_at: str) -> dict[str, Any]:
    return {"format": POLICY_FORMAT, "format_version": POLICY_VERSION,
            "issued_at": issued_at, "public_key": key.hex,
            "allow_no_ledger": allow_no_ledger,
            "datasets": {d.dataset_id: d.to_dict() for d in datasets}}


def _message(body: Mapping[str, Any]) -> bytes:
    return canonical_json(dict(body)).encode("ascii")


def governed(dataset_id: str, ledger: LedgerBackend, *,
             data: Sequence[str | os.PathLike[str]] = ()) -> GovernedDataset:
    """The policy entry for ``dataset_id`` as it is registered in the open ``ledger``
    (its location, ledger id, lifetime and relation come from the ledger itself)."""
    info = ledger.dataset(dataset_id)
    return GovernedDataset(
        dataset_id=dataset_id, ledger=normalize_location(str(ledger.path)),
        ledger_id=ledger.ledger_id, lifetime_epsilon=info.lifetime_epsilon,
        lifetime_delta=info.lifetime_delta, relation=info.relation.value,
        data=tuple(_normalize_data(p) for p in data), lifetime_rule=info.lifetime_rule)


def write_policy(path: str | os.PathLike[str], signing_key: SigningKey | str | os.PathLike[str],
                 datasets: Sequence[GovernedDataset], *,
                 allow_no_ledger: bool = False) -> Policy:
    """Sign and write (atomically, mode 0644) a policy governing ``datasets``."""
    key = signing_key if isinstance(signing_key, SigningKey) else load_signing_key(signing_key)
    ids = [d.dataset_id for d in datasets]
    if len(set(ids)) != len(ids):
        raise InvalidParameterError("datasets", ids, "each dataset id is governed once")
    if not isinstance(allow_no_ledger, bool):
        raise InvalidParameterError("allow_no_ledger", allow_no_ledger, "must be a bool")
    body = _body(datasets, allow_no_ledger, key.public, now())
    doc = {"policy": body, "signature": key.sign(_message(body))}
    target = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=".policy-", dir=target.parent or Path("."))
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(doc, indent=1, sort_keys=True) + "\n")
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except OSError as exc:
        raise LedgerError(f"cannot write the policy {target}: {exc}") from None
    return _parse(body, str(target))


def read_policy(path: str | os.PathLike[str]) -> Policy:
    """Load a policy file and check its signature (:class:`PolicyViolationError` for a
    malformed, edited or forged one: a policy that does not verify refuses every run)."""
    source = str(path)
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise PolicyViolationError(f"policy {source} cannot be read: {exc}") from None
    if not isinstance(doc, dict) or set(doc) != {"policy", "signature"} \
            or not isinstance(doc["policy"], dict):
        raise PolicyViolationError(f"policy {source} is not a dpcg ledger policy")
    body = doc["policy"]
    try:
        key = VerifyKey.from_hex(str(body.get("public_key")))
        signed = key.verifies(doc["signature"], _message(body))
    except (WrongKeyError, TypeError, ValueError):
        signed = False
    if not signed:
        raise PolicyViolationError(
            f"policy {source}: its signature does not verify: it was edited or forged; "
            "nothing was reserved (ask the custodian for a signed policy)")
    return _parse(body, source)


def _parse(body: Mapping[str, Any], source: str) -> Policy:
    try:
        if body.get("format") != POLICY_FORMAT or body.get("format_version") != POLICY_VERSION:
            raise ValueError("not a dpcg ledger policy of this version")
        if not isinstance(body.get("allow_no_ledger"), bool):
            raise ValueError("allow_no_ledger must be true or false")
        datasets: dict[str, GovernedDataset] = {}
        raw = body.get("datasets")
        if not isinstance(raw, dict):
            raise ValueError("datasets must be an object")
        for ds_id, d in raw.items():
            keys = {"ledger", "ledger_id", "lifetime", "relation", "data"}
            if not isinstance(d, dict) or set(d) - {"lifetime_rule"} != keys \
                    or d.get("lifetime_rule", "zcdp") != "zcdp":
                raise ValueError(f"dataset {ds_id!r} is malformed")
            life = d["lifetime"]
            if not isinstance(life, dict) or not isinstance(d["data"], list):
                raise ValueError(f"dataset {ds_id!r} is malformed")
            datasets[ds_id] = GovernedDataset(
                dataset_id=ds_id, ledger=str(d["ledger"]), ledger_id=str(d["ledger_id"]),
                lifetime_epsilon=parse_fraction(life.get("epsilon"), "epsilon"),
                lifetime_delta=parse_fraction(life.get("delta"), "delta"),
                relation=Relation.parse(d["relation"]).value,
                data=tuple(str(p) for p in d["data"]),
                lifetime_rule=str(d.get("lifetime_rule", "basic")))
        return Policy(datasets=datasets, allow_no_ledger=bool(body["allow_no_ledger"]),
                      public_key=VerifyKey.from_hex(str(body["public_key"])),
                      issued_at=str(body.get("issued_at")), source=source)
    except (ValueError, TypeError, KeyError, WrongKeyError) as exc:
        raise PolicyViolationError(f"policy {source} is malformed: {exc}") from None


def policy_paths(environ: Mapping[str, str] | None = None) -> list[Path]:
    """The policy files in force: the system one (if it exists) and ``$DPCG_POLICY``'s."""
    env = os.environ if environ is None else environ
    paths = [SYSTEM_POLICY] if SYSTEM_POLICY.exists() else []
    paths += [Path(p).expanduser() for p in env.get(POLICY_ENV, "").split(os.pathsep) if p]
    return paths


def load_policies(environ: Mapping[str, str] | None = None) -> list[Policy]:
    """Every policy in force, each checked (one that does not verify refuses)."""
    return [read_policy(p) for p in policy_paths(environ)]


def check_policy(*, dataset_id: str | None, ledger: object, no_ledger: bool,
                 data_path: str | os.PathLike[str] | None = None,
                 opened: LedgerBackend | None = None,
                 policies: Sequence[Policy] | None = None,
                 environ: Mapping[str, str] | None = None) -> GovernedDataset | None:
    """Refuse (:class:`PolicyViolationError`, before anything is reserved) a private run
    that the custodian's policies forbid; return the governed dataset it runs on (or
    ``None`` when no policy governs it).

    ``dataset_id``, ``ledger`` (location) and ``no_ledger`` are the run's choices;
    ``data_path`` the data file it reads (if any); ``opened`` the ledger once opened
    (then its id, its key binding and the dataset's registration are checked too).
    ``policies`` defaults to :func:`load_policies`. Refused:

    * ``no_ledger`` where a policy in force does not allow ``--no-ledger`` runs;
    * a governed data file under another dataset id (or without a ledger);
    * a governed dataset id recorded in another ledger (location or ledger id), in a
      ledger not bound to the custodian's key, or not registered there by the
      custodian with the policy's lifetime and relation.
    """
    pols = load_policies(environ) if policies is None else list(policies)
    if not pols:
        return None
    data = None if data_path is None else _normalize_data(data_path)
    by_data = [(p, g) for p in pols for g in p.datasets.values() if data is not None
               and data in g.data]
    if no_ledger:
        strict = [p.source for p in pols if not p.allow_no_ledger]
        if strict or by_data:
            where = strict[0] if strict else by_data[0][0].source
            raise PolicyViolationError(
                f"--no-ledger: the custodian's policy {where} requires every private run "
                "to be recorded in its ledger; nothing was run")
        return None
    for p, g in by_data:
        if g.dataset_id != dataset_id:
            raise PolicyViolationError(
                f"--dataset-id: the data file is governed as dataset {g.dataset_id!r} by "
                f"the policy {p.source}; a run on it must use that id and its ledger")
    entries = [(p, p.datasets[dataset_id]) for p in pols
               if dataset_id is not None and dataset_id in p.datasets]
    if not entries:
        return None
    where = normalize_location(ledger)
    for p, g in entries:
        if where != g.ledger:
            raise PolicyViolationError(
                f"--ledger: dataset {dataset_id!r} is governed by the policy {p.source}: "
                f"its runs are recorded in {g.ledger}, not {where}")
        if opened is not None:
            _check_opened(p, g, opened)
    return entries[0][1]


def _check_opened(p: Policy, g: GovernedDataset, led: LedgerBackend) -> None:
    if led.ledger_id != g.ledger_id:
        raise PolicyViolationError(
            f"ledger {led.path} has id {led.ledger_id}, not the governed ledger "
            f"{g.ledger_id} of the policy {p.source} (re-created or replaced)")
    bound = led.signing_public_key
    if bound is None or bound.hex != p.public_key.hex:
        raise PolicyViolationError(
            f"ledger {led.path} is not bound to the custodian's key (fingerprint "
            f"{p.public_key.fingerprint[:16]}...) named by the policy {p.source}")
    if not led.has_dataset(g.dataset_id):
        raise PolicyViolationError(
            f"dataset {g.dataset_id!r} is governed by the policy {p.source} but not "
            f"registered in {led.path}: the custodian registers it")
    info = led.dataset(g.dataset_id)
    if (info.lifetime_epsilon, info.lifetime_delta, info.relation.value,
            info.lifetime_rule) != (g.lifetime_epsilon, g.lifetime_delta, g.relation,
                                    g.lifetime_rule):
        raise PolicyViolationError(
            f"dataset {g.dataset_id!r} is registered in {led.path} with another lifetime, "
            f"lifetime rule or relation than the policy {p.source} governs it with")


def sign_heads(location: object, signing_key: SigningKey | str | os.PathLike[str]) \
        -> tuple[int, str] | None:
    """The custodian's signer for a PostgreSQL ledger: bind the ledger to the key if it
    is not bound yet, verify the whole chain (every stored head signature with the key,
    every cost re-derived, the entries since the last signed head by the chain checker),
    then sign the current head. Returns the signed ``(seq, hash)`` (``None`` for an
    empty ledger). Raises :class:`LedgerCorruptError` (signing nothing) when the chain
    does not verify, :class:`WrongKeyError` for a ledger bound to another key."""
    from accounting.ledger.postgres import PostgresLedger

    key = signing_key if isinstance(signing_key, SigningKey) else load_signing_key(signing_key)
    if not is_postgres(location):
        raise InvalidParameterError(
            "ledger", str(location), "sign-heads serves PostgreSQL ledgers; a SQLite "
            "ledger's heads are signed by its writer (DPCG_LEDGER_KEY)")
    with open_ledger(str(location)) as led:
        assert isinstance(led, PostgresLedger)
        bound = led.signing_public_key
        if bound is None:
            led.bind_public_key(key.public)
        elif bound.hex != key.public.hex:
            raise WrongKeyError(
                f"ledger {led.path} is bound to the key {bound.fingerprint[:16]}..., not to "
                f"{key.fingerprint[:16]}...")
        report = led.verify(public_key=key.public, allow_unsigned_head=True)
        if not report.ok:
            raise LedgerCorruptError(
                f"ledger {led.path} does not verify, so its head was not signed: "
                f"{report.problems[0]}")
        if report.head_hash is None:
            return None
        led.store_head_signature(report.entries, report.head_hash,
                                 key.sign_head(led.ledger_id, report.entries,
                                               report.head_hash))
        return report.entries, report.head_hash


__all__ = ["POLICY_ENV", "SYSTEM_POLICY", "GovernedDataset", "Policy", "PolicyViolationError",
           "check_policy", "governed", "load_policies", "normalize_location", "policy_paths",
           "read_policy", "sign_heads", "write_policy"]
