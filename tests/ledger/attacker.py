"""An operator who can write the ledger file but does not hold the signing key.

Used by ``tests/ledger/test_signing.py`` as a separate process. It deliberately does not
import ``accounting``: it works on the SQLite file with the standard library, from the
format documented in ``docs/ledger.md`` (canonical JSON, SHA-256, genesis hash), as an
outsider would.

    python attacker.py rewrite LEDGER --seq N [--signatures keep|rehash|strip|own-key
                                              --own-key KEY]
        Replace entry N's released output (an ``output`` entry) or its purpose, then
        recompute every hash from N on so that the chain verifies. What happens to the
        stored head signatures: ``keep`` them (their hashes no longer match), ``rehash``
        (point them at the new hashes; the signatures cannot be redone without the key),
        ``strip`` (delete them and the binding: pass the ledger off as unsigned), or
        ``own-key`` (re-sign every head with the attacker's own key and bind to it).
    python attacker.py truncate LEDGER --to N
        Cut the chain after entry N (every run opened before N must be closed by N),
        delete the later signatures, runs and datasets and fix the totals, so that
        everything left, including its signatures, is consistent.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sqlite3
from fractions import Fraction
from typing import Any

FIELDS = ("seq", "kind", "dataset_id", "run_id", "mechanism", "params", "sensitivity",
          "relation", "cost", "purpose", "seed_explicit", "data", "timestamp", "prev_hash")
JSON_COLUMNS = ("params", "cost", "data")


def canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def genesis(conn: sqlite3.Connection) -> tuple[str, str]:
    meta = dict(conn.execute("SELECT key, value FROM metadata").fetchall())
    return meta["ledger_id"], sha(canonical({
        "format": "dpcg-ledger", "format_version": 1, "ledger_id": meta["ledger_id"],
        "created_at": meta["created_at"]}))


def decoded(row: tuple[Any, ...]) -> dict[str, Any]:
    rec = dict(zip((*FIELDS, "hash"), row, strict=True))
    for name in JSON_COLUMNS:
        if rec[name] is not None:
            rec[name] = json.loads(rec[name])
    if rec["seed_explicit"] is not None:
        rec["seed_explicit"] = bool(rec["seed_explicit"])
    return rec


def rechain(conn: sqlite3.Connection, start: int) -> None:
    """Recompute prev_hash and hash of every entry from ``start`` on (stored back)."""
    _, prev = genesis(conn)
    rows = conn.execute(f"SELECT {', '.join(FIELDS)}, hash FROM entries ORDER BY seq")
    for row in rows.fetchall():
        rec = decoded(row)
        if rec["seq"] >= start:
            rec["prev_hash"] = prev
            rec["hash"] = sha(canonical({k: rec[k] for k in FIELDS}))
            conn.execute(
                "UPDATE entries SET params=?, cost=?, data=?, purpose=?, prev_hash=?, hash=? "
                "WHERE seq=?",
                (*(None if rec[k] is None else canonical(rec[k]) for k in JSON_COLUMNS),
                 rec["purpose"], rec["prev_hash"], rec["hash"], rec["seq"]))
        prev = rec["hash"]


def has_signatures(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name='head_signatures'").fetchone() \
        is not None


def rewrite(conn: sqlite3.Connection, seq: int, signatures: str, own_key: str | None) -> None:
    row = conn.execute(f"SELECT {', '.join(FIELDS)}, hash FROM entries WHERE seq=?",
                       (seq,)).fetchone()
    rec = decoded(row)
    if rec["kind"] == "output":  # falsify a released value
        data = rec["data"]
        data["output"] = 0.0 if data["output"] != 0.0 else 1.0
        conn.execute("UPDATE entries SET data=? WHERE seq=?", (canonical(data), seq))
    else:
        conn.execute("UPDATE entries SET purpose=? WHERE seq=?", ("rewritten", seq))
    rechain(conn, seq)
    hashes = dict(conn.execute("SELECT seq, hash FROM entries").fetchall())
    if not has_signatures(conn):
        return
    if signatures == "rehash":
        for s, h in hashes.items():
            conn.execute("UPDATE head_signatures SET hash=? WHERE seq=?", (h, s))
    elif signatures == "strip":
        conn.execute("DROP TABLE head_signatures")
        conn.execute("DELETE FROM metadata WHERE key='signing_public_key'")
    elif signatures == "own-key":
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ed25519

        assert own_key is not None
        with open(own_key, "rb") as fh:
            key = serialization.load_pem_private_key(fh.read(), password=None)
        assert isinstance(key, ed25519.Ed25519PrivateKey)
        ledger_id, _ = genesis(conn)
        for (s,) in conn.execute("SELECT seq FROM head_signatures").fetchall():
            message = canonical({"format": "dpcg-ledger-head", "ledger_id": ledger_id,
                                 "seq": s, "hash": hashes[s]}).encode("ascii")
            conn.execute("UPDATE head_signatures SET hash=?, signature=? WHERE seq=?",
                         (hashes[s], key.sign(message).hex(), s))
        raw = key.public_key().public_bytes(serialization.Encoding.Raw,
                                            serialization.PublicFormat.Raw)
        conn.execute("UPDATE metadata SET value=? WHERE key='signing_public_key'", (raw.hex(),))


def truncate(conn: sqlite3.Connection, to: int) -> None:
    conn.execute("DELETE FROM entries WHERE seq > ?", (to,))
    if has_signatures(conn):
        conn.execute("DELETE FROM head_signatures WHERE seq > ?", (to,))
    conn.execute("DELETE FROM runs WHERE opened_seq > ?", (to,))
    conn.execute("DELETE FROM datasets WHERE registered_seq > ?", (to,))
    left = conn.execute("SELECT run_id FROM runs WHERE closed_seq IS NULL OR closed_seq > ?",
                        (to,)).fetchall()
    assert not left, "cut where every remaining run is closed"
    for (dataset_id,) in conn.execute("SELECT dataset_id FROM datasets").fetchall():
        budgets = conn.execute("SELECT epsilon, delta FROM runs WHERE dataset_id=?",
                               (dataset_id,)).fetchall()
        eps = sum((Fraction(e) for e, _ in budgets), Fraction(0))
        delta = sum((Fraction(d) for _, d in budgets), Fraction(0))
        conn.execute("UPDATE datasets SET reserved_epsilon=?, reserved_delta=?, n_runs=? "
                     "WHERE dataset_id=?", (str(eps), str(delta), len(budgets), dataset_id))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("action", choices=["rewrite", "truncate"])
    parser.add_argument("ledger")
    parser.add_argument("--seq", type=int)
    parser.add_argument("--to", type=int)
    parser.add_argument("--signatures", default="keep",
                        choices=["keep", "rehash", "strip", "own-key"])
    parser.add_argument("--own-key")
    args = parser.parse_args()
    conn = sqlite3.connect(args.ledger, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    if args.action == "rewrite":
        rewrite(conn, args.seq, args.signatures, args.own_key)
    else:
        truncate(conn, args.to)
    conn.execute("COMMIT")
    conn.close()
    print("done")


if __name__ == "__main__":
    main()
