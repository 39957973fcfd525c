"""Ed25519 signatures over ledger heads, key files and exported head files.

A signed ledger is *bound* to one Ed25519 public key (metadata key
``signing_public_key``, the raw key in hex). Every write transaction that appends
entries to a bound ledger also stores, in the same transaction, a signature of the new
head: the canonical JSON of ``{"format": "dpcg-ledger-head", "ledger_id", "seq",
"hash"}`` (:func:`head_message`), signed with the private key. Because each entry's
hash covers its predecessor's, a signature of the head (seq, hash) commits to the whole
history up to it.

An exported head file (:class:`SignedHead`, :func:`write_head_file`) carries one
signed head outside the operator's reach; checking a ledger against it detects a
truncation after it and a rewrite before it (:func:`head_problems`). See
``docs/ledger.md`` (signed heads).

The ``cryptography`` package is an optional extra (``pip install 'dpcg[sign]'``); it is
imported only when a key is generated, loaded or a signature checked, so unsigned
ledgers work without it.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from accounting.errors import (
    HeadFileError,
    KeyFileError,
    LedgerError,
    SigningUnavailableError,
    WrongKeyError,
)
from accounting.ledger._format import canonical_json

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

#: Environment variable naming the private key file a run signs with.
KEY_ENV = "DPCG_LEDGER_KEY"
#: ``format`` of the signed message and of an exported head file.
HEAD_FORMAT = "dpcg-ledger-head"
HEAD_FORMAT_VERSION = 1
#: Metadata key holding the bound public key (64 hex characters, raw Ed25519).
METADATA_KEY = "signing_public_key"
#: The table of head signatures (created when a ledger is bound).
SIGNATURE_TABLE = "head_signatures"
SIGNATURE_SCHEMA = (f"CREATE TABLE IF NOT EXISTS {SIGNATURE_TABLE} "
                    "(seq INTEGER PRIMARY KEY, hash TEXT NOT NULL, signature TEXT NOT NULL)")
_HEAD_KEYS = frozenset({"format", "format_version", "ledger_id", "seq", "hash", "datasets",
                        "key_fingerprint", "public_key", "signature", "exported_at"})
_HEX = frozenset("0123456789abcdef")


def _crypto() -> Any:
    """The ``ed25519`` and ``serialization`` modules, or a clear error without the extra."""
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError:
        raise SigningUnavailableError(
            "signed ledgers need the optional 'cryptography' package: "
            "pip install 'dpcg[sign]'") from None
    return ed25519, serialization


def fingerprint(public_raw: bytes) -> str:
    """SHA-256 (hex) of the raw 32-byte public key: how keys are named in messages."""
    return hashlib.sha256(public_raw).hexdigest()


def head_message(ledger_id: str, seq: int, head_hash: str) -> bytes:
    """The bytes signed for the head ``(seq, head_hash)`` of ledger ``ledger_id``."""
    return canonical_json({"format": HEAD_FORMAT, "ledger_id": ledger_id, "seq": seq,
                           "hash": head_hash}).encode("ascii")


def _is_hex(value: object, length: int) -> bool:
    return isinstance(value, str) and len(value) == length and set(value) <= _HEX


# ---------------------------------------------------------------------------------
# Keys
# ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class VerifyKey:
    """An Ed25519 public key (what a reviewer holds)."""

    raw: bytes

    @property
    def hex(self) -> str:
        return self.raw.hex()

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.raw)

    @classmethod
    def from_hex(cls, text: str, what: str = "public key") -> VerifyKey:
        if not _is_hex(text, 64):
            raise WrongKeyError(f"{what} {text!r} is not 64 hex characters")
        return cls(bytes.fromhex(text))

    def verifies(self, signature_hex: object, message: bytes) -> bool:
        """Whether ``signature_hex`` (128 hex characters) is this key's signature of
        ``message``."""
        if not _is_hex(signature_hex, 128):
            return False
        assert isinstance(signature_hex, str)
        ed25519, _ = _crypto()
        from cryptography.exceptions import InvalidSignature

        try:
            key: Ed25519PublicKey = ed25519.Ed25519PublicKey.from_public_bytes(self.raw)
            key.verify(bytes.fromhex(signature_hex), message)
        except (InvalidSignature, ValueError):
            return False
        return True


class SigningKey:
    """An Ed25519 private key loaded from a key file (what the operator's runs hold)."""

    def __init__(self, key: Ed25519PrivateKey, path: Path | None = None) -> None:
        self._key = key
        self.path = path
        _, serialization = _crypto()
        self.public = VerifyKey(key.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw))

    @property
    def fingerprint(self) -> str:
        return self.public.fingerprint

    def sign(self, message: bytes) -> str:
        return self._key.sign(message).hex()

    def sign_head(self, ledger_id: str, seq: int, head_hash: str) -> str:
        return self.sign(head_message(ledger_id, seq, head_hash))

    def __repr__(self) -> str:  # never the key material
        return f"SigningKey(fingerprint={self.fingerprint[:16]}..., path={self.path})"


def generate_keypair(out: str | os.PathLike[str]) -> tuple[Path, Path, str]:
    """Write a new private key to ``out`` (PEM PKCS#8, mode 0600) and its public key to
    ``out.pub`` (PEM SubjectPublicKeyInfo, mode 0644). Refuses (:class:`KeyFileError`,
    writing nothing) if either file exists. Returns (private path, public path,
    fingerprint)."""
    ed25519, serialization = _crypto()
    priv_path = Path(out)
    pub_path = priv_path.with_name(priv_path.name + ".pub")
    for p in (priv_path, pub_path):
        if p.exists() or p.is_symlink():
            raise KeyFileError(f"{p} already exists; refusing to overwrite a key file")
    key: Ed25519PrivateKey = ed25519.Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    pub = key.public_key()
    pub_pem = pub.public_bytes(serialization.Encoding.PEM,
                               serialization.PublicFormat.SubjectPublicKeyInfo)
    raw = pub.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    _write_new(priv_path, pem, 0o600)
    try:
        _write_new(pub_path, pub_pem, 0o644)
    except KeyFileError:
        priv_path.unlink()
        raise
    return priv_path, pub_path, fingerprint(raw)


def _write_new(path: Path, data: bytes, mode: int) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    except FileExistsError:
        raise KeyFileError(f"{path} already exists; refusing to overwrite a key file") \
            from None
    except OSError as exc:
        raise KeyFileError(f"cannot create the key file {path}: {exc}") from None
    try:
        os.fchmod(fd, mode)  # exactly this mode, whatever the umask
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
    except OSError as exc:
        raise KeyFileError(f"cannot write the key file {path}: {exc}") from None


def _read_key_file(path: Path, private: bool) -> bytes:
    what = "private key" if private else "public key"
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO never blocks
    except FileNotFoundError:
        raise KeyFileError(f"{what} file {path} does not exist") from None
    except OSError as exc:
        raise KeyFileError(f"cannot open the {what} file {path}: {exc}") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise KeyFileError(f"{what} file {path} is not a regular file")
    with os.fdopen(fd, "rb") as fh:
        if private:
            if st.st_mode & 0o077:
                raise KeyFileError(
                    f"private key file {path} is accessible by group or others (mode "
                    f"{stat.S_IMODE(st.st_mode):04o}); refusing to use it: run "
                    f"`chmod 600 {path}`")
            if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
                raise KeyFileError(
                    f"private key file {path} is owned by another user (uid {st.st_uid}); "
                    "refusing to use it")
        if st.st_size > 64 * 1024:
            raise KeyFileError(f"{what} file {path} is too large to be a key")
        try:
            return fh.read()
        except OSError as exc:
            raise KeyFileError(f"cannot read the {what} file {path}: {exc}") from None


def load_signing_key(path: str | os.PathLike[str]) -> SigningKey:
    """Load an Ed25519 private key file written by :func:`generate_keypair`.

    Raises :class:`KeyFileError` if it is missing, not a regular file, readable or
    writable by group/others, owned by another user, or not an unencrypted Ed25519
    private key in PEM."""
    ed25519, serialization = _crypto()
    p = Path(path)
    data = _read_key_file(p, private=True)
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        hint = " (is this the .pub file?)" if b"PUBLIC KEY" in data else ""
        raise KeyFileError(
            f"{p} is not an unencrypted PEM private key{hint}: {exc}") from None
    if not isinstance(key, ed25519.Ed25519PrivateKey):
        raise KeyFileError(f"{p} is a {type(key).__name__}, not an Ed25519 private key")
    return SigningKey(key, p)


def load_verify_key(path: str | os.PathLike[str]) -> VerifyKey:
    """Load an Ed25519 public key file (PEM SubjectPublicKeyInfo, the ``.pub`` file)."""
    ed25519, serialization = _crypto()
    p = Path(path)
    data = _read_key_file(p, private=False)
    if b"PRIVATE KEY" in data:
        raise KeyFileError(f"{p} holds a private key; give the public key (the .pub file)")
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError) as exc:
        raise KeyFileError(f"{p} is not a PEM public key: {exc}") from None
    if not isinstance(key, ed25519.Ed25519PublicKey):
        raise KeyFileError(f"{p} is a {type(key).__name__}, not an Ed25519 public key")
    return VerifyKey(key.public_bytes(serialization.Encoding.Raw,
                                      serialization.PublicFormat.Raw))


def signing_key_from_env() -> Path | None:
    """The private key file named by ``$DPCG_LEDGER_KEY`` (``None`` when unset/empty)."""
    value = os.environ.get(KEY_ENV, "")
    return Path(value).expanduser() if value else None


# ---------------------------------------------------------------------------------
# Signature rows of a ledger
# ---------------------------------------------------------------------------------
def signature_problems(key: VerifyKey, ledger_id: str, hashes_by_seq: Mapping[int, str],
                       head_seq: int | None, rows: list[tuple[Any, ...]]) -> list[str]:
    """Problems with a ledger's stored head signatures checked with ``key``.

    Every stored signature must name an entry of the chain with the same hash and verify
    with ``key``; the current head (``head_seq``) must be signed."""
    problems: list[str] = []
    seen: set[int] = set()
    for row in rows:
        seq, h, sig = (*tuple(row), None, None, None)[:3]
        if isinstance(seq, bool) or not isinstance(seq, int):
            problems.append(f"head signature row {seq!r}: seq is not an integer")
            continue
        seen.add(seq)
        if hashes_by_seq.get(seq) != h:
            problems.append(
                f"head signature of seq {seq} is for hash {h!r}, but the chain has "
                f"{hashes_by_seq.get(seq)!r} there: entries were rewritten or removed")
            continue
        if not key.verifies(sig, head_message(ledger_id, seq, str(h))):
            problems.append(
                f"head signature of seq {seq} does not verify with the public key "
                f"{key.fingerprint[:16]}...: the chain was rewritten by someone without "
                "the private key, or the signature was forged")
            continue
    if head_seq is not None and head_seq not in seen:
        problems.append(
            f"the head (seq {head_seq}) carries no signature: entries were appended or "
            "rewritten without the private key")
    return problems


# ---------------------------------------------------------------------------------
# Exported head files
# ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class SignedHead:
    """One signed head as exported to a reviewer."""

    ledger_id: str
    seq: int
    hash: str
    datasets: tuple[str, ...]
    public_key: VerifyKey
    signature: str
    exported_at: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": HEAD_FORMAT, "format_version": HEAD_FORMAT_VERSION,
            "ledger_id": self.ledger_id, "seq": self.seq, "hash": self.hash,
            "datasets": list(self.datasets), "key_fingerprint": self.public_key.fingerprint,
            "public_key": self.public_key.hex, "signature": self.signature,
            "exported_at": self.exported_at,
        }

    def check_signature(self, key: VerifyKey) -> None:
        """Raise unless this head is signed by ``key`` (:class:`WrongKeyError` for a head
        of another key, :class:`HeadFileError` for a signature that does not verify)."""
        if self.public_key.raw != key.raw:
            raise WrongKeyError(
                f"the exported head was signed by key {self.public_key.fingerprint[:16]}..., "
                f"not by the public key given ({key.fingerprint[:16]}...)")
        if not key.verifies(self.signature, head_message(self.ledger_id, self.seq,
                                                         self.hash)):
            raise HeadFileError(
                "the exported head's signature does not verify with the public key: the "
                "head file was altered or forged")


def write_head_file(head: SignedHead, path: str | os.PathLike[str]) -> None:
    """Write ``head`` as JSON to ``path`` atomically (temp file + rename)."""
    target = Path(path)
    text = json.dumps(head.to_dict(), indent=1, sort_keys=True) + "\n"
    try:
        fd, tmp = tempfile.mkstemp(prefix=".head-", dir=target.parent or Path("."))
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, target)
    except OSError as exc:
        raise LedgerError(f"cannot write the head file {target}: {exc}") from None


def read_head_file(path: str | os.PathLike[str]) -> SignedHead:
    """Parse an exported head file; :class:`HeadFileError` for anything malformed (the
    signature is checked by :meth:`SignedHead.check_signature`)."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise HeadFileError(f"cannot read the head file {p}: {exc}") from None
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise HeadFileError(f"{p} is not a head file: not JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != HEAD_FORMAT:
        raise HeadFileError(f"{p} is not a dpcg ledger head file (format {HEAD_FORMAT!r})")
    if doc.get("format_version") != HEAD_FORMAT_VERSION:
        raise HeadFileError(f"{p}: unsupported head format version "
                            f"{doc.get('format_version')!r}")
    if set(doc) != _HEAD_KEYS:
        raise HeadFileError(f"{p}: keys missing {sorted(_HEAD_KEYS - set(doc))} / "
                            f"unexpected {sorted(set(doc) - _HEAD_KEYS)}")
    seq, datasets = doc["seq"], doc["datasets"]
    checks = (
        (isinstance(doc["ledger_id"], str), "ledger_id must be a string"),
        (isinstance(seq, int) and not isinstance(seq, bool) and seq >= 1,
         "seq must be an integer >= 1"),
        (_is_hex(doc["hash"], 64), "hash must be 64 hex characters"),
        (isinstance(datasets, list) and all(isinstance(d, str) for d in datasets),
         "datasets must be a list of strings"),
        (_is_hex(doc["public_key"], 64), "public_key must be 64 hex characters"),
        (_is_hex(doc["signature"], 128), "signature must be 128 hex characters"),
        (isinstance(doc["exported_at"], str), "exported_at must be a string"),
    )
    for ok, why in checks:
        if not ok:
            raise HeadFileError(f"{p}: {why}")
    key = VerifyKey.from_hex(doc["public_key"])
    if doc["key_fingerprint"] != key.fingerprint:
        raise HeadFileError(f"{p}: key_fingerprint is not the fingerprint of public_key")
    return SignedHead(ledger_id=doc["ledger_id"], seq=seq, hash=doc["hash"],
                      datasets=tuple(datasets), public_key=key, signature=doc["signature"],
                      exported_at=doc["exported_at"])


def head_problems(head: SignedHead, ledger_id: str | None, hashes_by_seq: Mapping[int, str],
                  datasets_by_seq: Mapping[str, int]) -> list[str]:
    """Problems of a chain against an exported (already signature-checked) head: the
    entry ``head.seq`` must exist with ``head.hash`` (else the ledger was truncated or
    rewritten before it) and the datasets registered up to it must be the head's."""
    if ledger_id != head.ledger_id:
        return [f"the exported head belongs to ledger {head.ledger_id!r}, not to this one "
                f"({ledger_id!r})"]
    last = max(hashes_by_seq, default=0)
    have = hashes_by_seq.get(head.seq)
    if have is None:
        return [f"the exported head (seq {head.seq}) is not in the ledger, which ends at seq "
                f"{last}: the ledger was truncated after the exported head was taken"]
    if have != head.hash:
        return [f"entry {head.seq} has hash {have!r}, the exported head says {head.hash!r}: "
                "the history up to the exported head was rewritten"]
    registered = tuple(d for d, s in sorted(datasets_by_seq.items(), key=lambda kv: kv[1])
                       if s <= head.seq)
    if registered != head.datasets:
        return [f"the datasets registered up to seq {head.seq} are {list(registered)}, the "
                f"exported head lists {list(head.datasets)}"]
    return []


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
