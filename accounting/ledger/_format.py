"""The ledger's on-disk vocabulary: field names, canonical JSON and hashing.

Everything here is shared by the SQLite store and the offline certificate verifier,
so that both hash exactly the same bytes. See ``docs/ledger.md`` for the format.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from fractions import Fraction
from json.encoder import encode_basestring_ascii as _encode_str  # json.dumps' (ensure_ascii)

from accounting.entries import JSONValue

#: Value of the ``format`` metadata key; anything else is a foreign file.
FORMAT_NAME = "dpcg-ledger"
#: Version of the SQLite layout and of the entry encoding.
FORMAT_VERSION = 1
#: ``format`` field of an exported certificate.
CERTIFICATE_FORMAT = "dpcg-ledger-certificate"

#: Kinds of chained entries, in the order they typically appear.
ENTRY_KINDS = ("dataset", "run-open", "mechanism", "output", "run-close")
#: Composition rules a run may enforce.
RULES = ("basic", "zcdp")
#: Final statuses of a run (a run that never closed stays ``"open"``).
RUN_STATUSES = ("completed", "budget-exhausted", "error")

#: The hashed fields of an entry, in storage order (the hash covers all of them).
ENTRY_FIELDS = (
    "seq",
    "kind",
    "dataset_id",
    "run_id",
    "mechanism",
    "params",
    "sensitivity",
    "relation",
    "cost",
    "purpose",
    "seed_explicit",
    "data",
    "timestamp",
    "prev_hash",
)
#: Every stored field of an entry.
STORED_FIELDS = (*ENTRY_FIELDS, "hash")


def canonical_json(value: object) -> str:
    """The canonical encoding: sorted keys, no whitespace, ASCII only, no NaN/inf.

    Raises ``TypeError``/``ValueError`` for values JSON cannot represent.
    """
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    )


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def entry_hash(record: Mapping[str, object]) -> str:
    """SHA-256 of the canonical JSON of all hashed fields (``prev_hash`` included)."""
    return sha256_hex(canonical_json({name: record[name] for name in ENTRY_FIELDS}))


#: The hashed fields in canonical (sorted) key order, with their encoded keys.
_SORTED_KEYS = tuple((name, json.dumps(name) + ":") for name in sorted(ENTRY_FIELDS))


def scalar_json(value: object) -> str:
    """``canonical_json(value)`` for ``None``, ``bool``, ``int``, ``str`` and finite
    ``float`` (the writer's fast path; anything else goes through :func:`canonical_json`)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _encode_str(value)
    if isinstance(value, int):  # json.dumps writes int.__repr__ (bool handled above)
        return int.__repr__(value)
    if isinstance(value, float) and math.isfinite(value):
        return float.__repr__(value)
    return canonical_json(value)  # containers; raises ValueError for NaN/inf


def hashed_text(encoded: Mapping[str, str]) -> str:
    """The canonical JSON of an entry's hashed fields, assembled from the canonical JSON
    of each field (``encoded[name]``). Byte-for-byte ``canonical_json`` of the decoded
    entry (sorted keys, no whitespace): the writer encodes each value once and hashes
    this; :func:`entry_hash` (the verifier's path) must give the same digest, which
    ``tests/ledger/test_format.py`` checks."""
    return "{" + ",".join(key + encoded[name] for name, key in _SORTED_KEYS) + "}"


def genesis_hash(ledger_id: str, created_at: str) -> str:
    """The ``prev_hash`` of entry 1: binds the chain to the ledger's identity."""
    return sha256_hex(
        canonical_json(
            {
                "format": FORMAT_NAME,
                "format_version": FORMAT_VERSION,
                "ledger_id": ledger_id,
                "created_at": created_at,
            }
        )
    )


def fraction_str(q: Fraction) -> str:
    """Exact text form of a rational (``"p/q"`` or ``"p"``)."""
    return str(q)


def parse_fraction(value: object, name: str) -> Fraction:
    """Parse an exact rational written by :func:`fraction_str` (canonical form only)."""
    if not isinstance(value, str):
        raise ValueError(f"{name} must be an exact fraction string, got {value!r}")
    try:
        q = Fraction(value)
    except (ValueError, ZeroDivisionError):
        raise ValueError(f"{name}={value!r} is not an exact fraction") from None
    if str(q) != value:
        raise ValueError(f"{name}={value!r} is not in canonical fraction form")
    return q


def budget_dict(epsilon: Fraction, delta: Fraction) -> dict[str, JSONValue]:
    return {"epsilon": fraction_str(epsilon), "delta": fraction_str(delta)}
