"""JSON certificates: a ledger's whole chain plus its re-derived totals, in one file.

A certificate can be verified offline, without SQLite, by :func:`verify_certificate`:
it recomputes every hash and the linkage from the ledger's genesis, re-derives each
mechanism's cost from its public parameters, recomputes the per-run and per-dataset
totals, and compares them with the totals the certificate states. The format is
documented in ``docs/ledger.md`` so that a reviewer can re-implement the check.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from accounting.entries import JSONValue
from accounting.errors import (
    ForeignLedgerError,
    InvalidParameterError,
    LedgerCorruptError,
    LedgerError,
    UnsignedLedgerError,
)
from accounting.ledger._format import (
    CERTIFICATE_FORMAT,
    FORMAT_VERSION,
    genesis_hash,
)
from accounting.ledger._verify import ChainChecker, VerificationReport
from accounting.ledger.signing import (
    SignedHead,
    VerifyKey,
    head_problems,
    load_verify_key,
    read_head_file,
)

if TYPE_CHECKING:
    from accounting.ledger.backend import LedgerBackend as Ledger

_TOP_KEYS = frozenset({
    "format", "format_version", "ledger_id", "created_at", "genesis_hash",
    "datasets", "runs", "entries", "head_hash",
})


def certificate_dict(ledger: Ledger) -> tuple[dict[str, JSONValue], VerificationReport]:
    """The certificate of ``ledger`` (raises :class:`LedgerCorruptError` if it does not verify)."""
    report = ledger.verify()
    report.raise_if_failed()
    entries: list[JSONValue] = list(ledger.entries())
    if len(entries) != report.entries:  # a writer appended between the two reads
        raise LedgerError("the ledger changed during export; retry")
    last = entries[-1] if entries else None
    head = last["hash"] if isinstance(last, dict) else None
    if head != report.head_hash:
        raise LedgerError("the ledger changed during export; retry")
    cert: dict[str, JSONValue] = {
        "format": CERTIFICATE_FORMAT,
        "format_version": FORMAT_VERSION,
        "ledger_id": ledger.ledger_id,
        "created_at": ledger.created_at,
        "genesis_hash": genesis_hash(ledger.ledger_id, ledger.created_at),
        "datasets": [d.to_dict() for d in report.datasets],
        "runs": [r.to_dict() for r in report.runs],
        "entries": entries,
        "head_hash": report.head_hash,
    }
    return cert, report


def write_certificate(ledger: Ledger, path: str | os.PathLike[str]) -> VerificationReport:
    """Verify ``ledger`` and write its certificate to ``path`` atomically."""
    cert, report = certificate_dict(ledger)
    target = Path(path)
    text = json.dumps(cert, indent=1, sort_keys=True, allow_nan=False) + "\n"
    try:
        fd, tmp = tempfile.mkstemp(prefix=".cert-", dir=target.parent or Path("."))
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, target)
    except OSError as exc:
        raise LedgerError(f"cannot write the certificate {target}: {exc}") from None
    return report


def verify_certificate(path: str | os.PathLike[str], expected_head: str | None = None,
                       contains: str | None = None, *,
                       public_key: str | os.PathLike[str] | VerifyKey | None = None,
                       head: str | os.PathLike[str] | SignedHead | None = None
                       ) -> VerificationReport:
    """Re-verify an exported certificate offline (no SQLite involved).

    Checks the chain from the genesis hash (derived from the ledger id and creation
    time), every entry's hash, contiguous sequence numbers, each mechanism's cost
    re-derived from its parameters, each run's spending against its reservation, each
    dataset's reservations against its lifetime budget, the stated totals and the head
    hash. If given, the head must equal ``expected_head`` and some entry's hash must
    equal ``contains`` (a head published earlier: the history up to it is unchanged).
    Raises :class:`ForeignLedgerError` for a file that is not a certificate.

    ``head`` and ``public_key`` (both or neither): check the certificate against an
    exported signed head (see :meth:`Ledger.verify`). A certificate stores no head
    signatures itself, so ``public_key`` alone raises :class:`UnsignedLedgerError`.
    """
    signed_head = _signed_head(public_key, head)
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise LedgerError(f"cannot read {p}: {exc}") from None
    try:
        cert = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        raise ForeignLedgerError(f"{p} is not a dpcg ledger certificate: not JSON ({exc})") \
            from None
    return check_certificate(cert, f"certificate {p}", expected_head, contains,
                             signed_head=signed_head)


def _signed_head(public_key: object, head: object) -> SignedHead | None:
    if public_key is None and head is None:
        return None
    if head is None:
        raise UnsignedLedgerError(
            "a certificate carries no head signatures; check it against an exported head "
            "(--head HEAD.json --public-key PUB)")
    if public_key is None:
        raise InvalidParameterError("public_key", None,
                                    "an exported head is checked with the public key")
    if isinstance(public_key, VerifyKey):
        key = public_key
    elif isinstance(public_key, str | os.PathLike):
        key = load_verify_key(public_key)
    else:
        raise InvalidParameterError("public_key", public_key, "must be a .pub file path")
    if isinstance(head, SignedHead):
        signed = head
    elif isinstance(head, str | os.PathLike):
        signed = read_head_file(head)
    else:
        raise InvalidParameterError("head", head, "must be a head file path")
    signed.check_signature(key)
    return signed


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-finite number {name} is not allowed")


def check_certificate(cert: object, source: str = "certificate",
                      expected_head: str | None = None,
                      contains: str | None = None, *,
                      signed_head: SignedHead | None = None) -> VerificationReport:
    """Verify an already parsed certificate (see :func:`verify_certificate`);
    ``signed_head`` is an exported head whose signature the caller already checked."""
    if not isinstance(cert, dict) or cert.get("format") != CERTIFICATE_FORMAT:
        raise ForeignLedgerError(f"{source} is not a dpcg ledger certificate")
    if cert.get("format_version") != FORMAT_VERSION:
        raise ForeignLedgerError(
            f"{source}: unsupported certificate format version {cert.get('format_version')!r} "
            f"(this dpcg reads version {FORMAT_VERSION})")
    problems: list[str] = []
    keys = set(cert)
    if keys != _TOP_KEYS:
        problems.append(f"top-level keys missing {sorted(_TOP_KEYS - keys)} / "
                        f"unexpected {sorted(keys - _TOP_KEYS)}")
    ledger_id, created_at = cert.get("ledger_id"), cert.get("created_at")
    if not isinstance(ledger_id, str) or not isinstance(created_at, str):
        raise LedgerCorruptError(f"{source}: ledger_id and created_at must be strings")
    genesis = genesis_hash(ledger_id, created_at)
    if cert.get("genesis_hash") != genesis:
        problems.append("genesis_hash does not match the ledger id and creation time")
    entries = cert.get("entries")
    if not isinstance(entries, list):
        raise LedgerCorruptError(f"{source}: entries must be a list")
    checker = ChainChecker(genesis)
    for i, entry in enumerate(entries, start=1):
        if not isinstance(entry, dict):
            checker.problems.append(f"entry #{i} is not an object")
            checker.add({})
            continue
        checker.add(entry)
    head = cert.get("head_hash")
    if head != checker.head_hash:
        problems.append(
            f"head_hash {head!r} is not the hash of the last entry ({checker.head_hash!r})")
    problems.extend(checker.pin_problems(expected_head, contains))
    if signed_head is not None:
        hashes: dict[int, str] = {}
        registered: dict[str, int] = {}
        for entry in entries:
            if not isinstance(entry, dict):
                continue
            seq, h = entry.get("seq"), entry.get("hash")
            if isinstance(seq, int) and not isinstance(seq, bool) and isinstance(h, str):
                hashes[seq] = h
                ds = entry.get("dataset_id")
                if entry.get("kind") == "dataset" and isinstance(ds, str):
                    registered.setdefault(ds, seq)
        problems.extend(head_problems(signed_head, ledger_id, hashes, registered))
    stated = cert.get("datasets")
    if stated != [d.to_dict() for d in checker.datasets.values()] and stated != [
            d.to_dict(legacy=True) for d in checker.datasets.values()]:
        # (a certificate written before refunds states no "charged": the legacy form)
        problems.append("the stated per-dataset totals do not match the totals re-derived "
                        "from the entries")
    if cert.get("runs") != [r.to_dict() for r in checker.runs.values()]:
        problems.append("the stated per-run budgets and spending do not match the totals "
                        "re-derived from the entries")
    return checker.report(source, ledger_id, problems)
