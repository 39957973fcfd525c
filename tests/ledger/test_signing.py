"""Signed, anchorable ledger heads: keys, signing on every write, verification with the
public key, exported heads, and attackers who can write the file but lack the key."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from accounting.costs import Budget
from accounting.errors import (
    HeadFileError,
    InvalidParameterError,
    KeyFileError,
    LedgerCorruptError,
    UnsignedLedgerError,
    WrongKeyError,
)
from accounting.ledger import (
    KEY_ENV,
    Ledger,
    LedgerRun,
    generate_keypair,
    load_signing_key,
    load_verify_key,
    read_head_file,
    verify_certificate,
)
from dpcg.cli import main

from .conftest import PYTHON, ROOT, laplace_draft, populate, state

pytest.importorskip("cryptography")

ATTACKER = Path(__file__).with_name("attacker.py")


@pytest.fixture(autouse=True)
def _no_ambient_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)


@pytest.fixture
def keys(tmp_path: Path) -> tuple[Path, Path]:
    private, public, _ = generate_keypair(tmp_path / "ops.key")
    return private, public


@pytest.fixture
def other_keys(tmp_path: Path) -> tuple[Path, Path]:
    private, public, _ = generate_keypair(tmp_path / "attacker.key")
    return private, public


@pytest.fixture
def signed(ledger_path: Path, keys: tuple[Path, Path]) -> Iterator[Ledger]:
    """A ledger bound to ``keys`` at creation, with a dataset and two closed runs."""
    with Ledger.open(ledger_path, create=True, signing_key=keys[0]) as led:
        led.register_dataset("survey-2024", Budget(2.0, 1e-6))
        populate(led)
        yield led


def signature_rows(path: Path) -> list[tuple[int, str, str]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT seq, hash, signature FROM head_signatures "
                            "ORDER BY seq").fetchall()
    finally:
        conn.close()


def attack(*args: str) -> None:
    proc = subprocess.run([str(PYTHON), str(ATTACKER), *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def cli(*args: str | Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


# ---------------------------------------------------------------------------------
# Key files
# ---------------------------------------------------------------------------------
def test_keygen_writes_0600_and_0644_and_never_overwrites(tmp_path: Path) -> None:
    private, public, fp = generate_keypair(tmp_path / "k")
    assert public == tmp_path / "k.pub"
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    assert stat.S_IMODE(public.stat().st_mode) == 0o644
    assert load_signing_key(private).fingerprint == fp == load_verify_key(public).fingerprint
    assert private.read_text().startswith("-----BEGIN PRIVATE KEY-----")
    before = private.read_bytes(), public.read_bytes()
    with pytest.raises(KeyFileError, match="refusing to overwrite"):
        generate_keypair(tmp_path / "k")
    assert (private.read_bytes(), public.read_bytes()) == before
    (tmp_path / "only.pub").write_text("x")  # a stray .pub also blocks, nothing written
    with pytest.raises(KeyFileError, match="refusing to overwrite"):
        generate_keypair(tmp_path / "only")
    assert not (tmp_path / "only").exists()


def test_keygen_ignores_a_permissive_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        private, _, _ = generate_keypair(tmp_path / "k")
    finally:
        os.umask(old)
    assert stat.S_IMODE(private.stat().st_mode) == 0o600


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o660, 0o644, 0o700 | 0o004])
def test_a_private_key_readable_by_others_is_refused(keys: tuple[Path, Path],
                                                     mode: int) -> None:
    os.chmod(keys[0], mode)
    with pytest.raises(KeyFileError, match=r"accessible by group or others.*chmod 600"):
        load_signing_key(keys[0])


def test_bad_key_files(tmp_path: Path, keys: tuple[Path, Path]) -> None:
    with pytest.raises(KeyFileError, match="does not exist"):
        load_signing_key(tmp_path / "missing.key")
    with pytest.raises(KeyFileError, match="not a regular file"):
        load_signing_key(tmp_path)
    garbage = tmp_path / "garbage.key"
    garbage.write_bytes(b"not a key")
    os.chmod(garbage, 0o600)
    with pytest.raises(KeyFileError, match="not an unencrypted PEM private key"):
        load_signing_key(garbage)
    pub_as_private = tmp_path / "pub-copy"
    pub_as_private.write_bytes(keys[1].read_bytes())
    os.chmod(pub_as_private, 0o600)
    with pytest.raises(KeyFileError, match=r"is this the \.pub file"):
        load_signing_key(pub_as_private)
    with pytest.raises(KeyFileError, match="holds a private key"):
        load_verify_key(keys[0])
    with pytest.raises(KeyFileError, match="not a PEM public key"):
        load_verify_key(garbage)
    with pytest.raises(KeyFileError, match="does not exist"):
        load_verify_key(tmp_path / "missing.pub")


def test_key_material_is_never_printed(keys: tuple[Path, Path]) -> None:
    key = load_signing_key(keys[0])
    body = "".join(keys[0].read_text().splitlines()[1:-1])
    assert body not in repr(key)


# ---------------------------------------------------------------------------------
# Signing every new head
# ---------------------------------------------------------------------------------
def test_every_appending_transaction_signs_its_head(ledger_path: Path,
                                                    keys: tuple[Path, Path]) -> None:
    with Ledger.open(ledger_path, create=True, signing_key=keys[0]) as led:
        assert led.signing_public_key == load_verify_key(keys[1])
        assert signature_rows(ledger_path) == []  # empty: nothing to sign yet
        steps: list[Callable[[], object]] = [
            lambda: led.register_dataset("a", Budget(2.0)),
            lambda: led.ensure_dataset("b", Budget(1.0)),
            lambda: runs.append(led.open_run("a", Budget(1.0), "basic", seed_explicit=False)),
            lambda: seqs.append(runs[0].record(laplace_draft(0.25))),
            lambda: runs[0].record_many([laplace_draft(0.125), laplace_draft(0.125)]),
            lambda: runs[0].record_output(seqs[0], 3.5),
            lambda: runs[0].close(),
        ]
        runs: list[LedgerRun] = []
        seqs: list[int] = []
        for n, step in enumerate(steps, start=1):
            step()
            rows = signature_rows(ledger_path)
            assert len(rows) == n  # one signature per transaction, of its last entry
            assert rows[-1][0] == led.entry_count()
            assert rows[-1][1] == led.head_hash()
        led.ensure_dataset("a", Budget(5.0))  # nothing appended: nothing signed
        assert len(signature_rows(ledger_path)) == len(steps)
        report = led.verify(public_key=keys[1])
        assert report.ok, report.problems


def test_refused_writes_leave_no_signature(signed: Ledger, ledger_path: Path) -> None:
    before = state(ledger_path), signature_rows(ledger_path)
    with pytest.raises(Exception, match="exceed"):
        signed.open_run("survey-2024", Budget(5.0), "basic", seed_explicit=False)
    assert (state(ledger_path), signature_rows(ledger_path)) == before


def test_writes_without_the_key_write_nothing(signed: Ledger, ledger_path: Path,
                                              keys: tuple[Path, Path],
                                              other_keys: tuple[Path, Path],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    signed.close()
    before = state(ledger_path)
    with Ledger.open(ledger_path) as led:  # reading needs no key
        assert led.verify(public_key=keys[1]).ok
        with pytest.raises(KeyFileError, match="DPCG_LEDGER_KEY"):
            led.open_run("survey-2024", Budget(0.1), "basic", seed_explicit=False)
        monkeypatch.setenv(KEY_ENV, str(other_keys[0]))
    assert state(ledger_path) == before
    with Ledger.open(ledger_path) as led:
        with pytest.raises(WrongKeyError, match="bound to the key"):
            led.check_signing()
        with pytest.raises(WrongKeyError):
            led.register_dataset("x", Budget(1.0))
    assert state(ledger_path) == before
    with pytest.raises(WrongKeyError):
        Ledger.open(ledger_path, signing_key=other_keys[0])
    os.chmod(keys[0], 0o640)
    monkeypatch.setenv(KEY_ENV, str(keys[0]))
    with Ledger.open(ledger_path) as led, pytest.raises(KeyFileError, match="chmod 600"):
        led.open_run("survey-2024", Budget(0.1), "basic", seed_explicit=False)
    assert state(ledger_path) == before
    os.chmod(keys[0], 0o600)
    with Ledger.open(ledger_path) as led:  # the right key from the environment
        assert led.check_signing() == load_verify_key(keys[1]).fingerprint
        led.open_run("survey-2024", Budget(0.1), "basic", seed_explicit=False).close()
        assert led.verify(public_key=keys[1]).ok


def test_missing_key_check_before_any_write(signed: Ledger, ledger_path: Path) -> None:
    signed.close()
    with Ledger.open(ledger_path) as led, pytest.raises(KeyFileError):
        led.check_signing()  # the pre-flight a run sequence calls before reserving


def test_an_explicit_key_on_an_unbound_ledger_is_refused(ledger: Ledger, ledger_path: Path,
                                                         keys: tuple[Path, Path]) -> None:
    with pytest.raises(UnsignedLedgerError, match="sign-init"):
        Ledger.open(ledger_path, signing_key=keys[0])
    assert ledger.check_signing() is None


def test_bind_an_existing_ledger(ledger: Ledger, ledger_path: Path, keys: tuple[Path, Path],
                                 other_keys: tuple[Path, Path]) -> None:
    populate(ledger)
    head = ledger.head_hash()
    fp = ledger.bind_signing_key(keys[0])
    assert fp == load_verify_key(keys[1]).fingerprint
    assert signature_rows(ledger_path)[-1][:2] == (ledger.entry_count(), head)
    assert ledger.head_hash() == head  # binding appends no entry
    assert ledger.verify(public_key=keys[1]).ok
    assert ledger.bind_signing_key(keys[0]) == fp  # again: nothing changes
    assert len(signature_rows(ledger_path)) == 1
    with pytest.raises(WrongKeyError):
        ledger.bind_signing_key(other_keys[0])
    ledger.open_run("survey-2024", Budget(0.25), "basic", seed_explicit=False).close()
    assert len(signature_rows(ledger_path)) == 3
    assert ledger.verify(public_key=keys[1]).ok


def test_binding_a_corrupt_ledger_is_refused(ledger: Ledger, ledger_path: Path,
                                             keys: tuple[Path, Path]) -> None:
    populate(ledger)
    raw = sqlite3.connect(ledger_path)
    raw.execute("UPDATE entries SET purpose='x' WHERE seq=3")
    raw.commit()
    raw.close()
    with pytest.raises(LedgerCorruptError):
        ledger.bind_signing_key(keys[0])


def test_unsigned_ledgers_are_unchanged(ledger: Ledger, ledger_path: Path,
                                        keys: tuple[Path, Path]) -> None:
    populate(ledger)
    assert ledger.verify().ok
    assert ledger.signing_public_key is None
    conn = sqlite3.connect(ledger_path)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    conn.close()
    assert tables == {"metadata", "datasets", "runs", "entries"}  # same schema as before
    with pytest.raises(UnsignedLedgerError, match="not signed"):
        ledger.verify(public_key=keys[1])
    with pytest.raises(UnsignedLedgerError):
        ledger.export_head(ledger_path.with_name("head.json"))


def test_verify_with_a_wrong_public_key(signed: Ledger, other_keys: tuple[Path, Path]) -> None:
    with pytest.raises(WrongKeyError, match="not to the public key given"):
        signed.verify(public_key=other_keys[1])


# ---------------------------------------------------------------------------------
# Attackers with write access but without the key
# ---------------------------------------------------------------------------------
@pytest.mark.parametrize("signatures", ["keep", "rehash"])
def test_a_rewritten_chain_is_rejected_with_the_public_key(
        signed: Ledger, ledger_path: Path, keys: tuple[Path, Path], signatures: str) -> None:
    """One released output falsified, every later hash recomputed: the chain alone still
    verifies, the head signatures do not."""
    output_seq = next(e["seq"] for e in signed.entries() if e["kind"] == "output")
    old_head = signed.head_hash()
    attack("rewrite", str(ledger_path), "--seq", str(output_seq), "--signatures", signatures)
    plain = signed.verify()
    assert plain.ok  # a consistent rewrite: the hash chain alone cannot tell
    assert plain.head_hash != old_head
    report = signed.verify(public_key=keys[1])
    assert not report.ok
    text = " ".join(report.problems)
    if signatures == "keep":
        assert "entries were rewritten or removed" in text
    else:
        assert "does not verify with the public key" in text


def test_a_stripped_signature_table_is_rejected(signed: Ledger, ledger_path: Path,
                                                keys: tuple[Path, Path]) -> None:
    attack("rewrite", str(ledger_path), "--seq", "3", "--signatures", "strip")
    assert signed.verify().ok
    with pytest.raises(UnsignedLedgerError):
        signed.verify(public_key=keys[1])


def test_re_signing_with_the_attackers_own_key_is_rejected(
        signed: Ledger, ledger_path: Path, keys: tuple[Path, Path],
        other_keys: tuple[Path, Path]) -> None:
    attack("rewrite", str(ledger_path), "--seq", "3", "--signatures", "own-key",
           "--own-key", str(other_keys[0]))
    assert signed.verify().ok
    assert signed.verify(public_key=other_keys[1]).ok  # consistent under HIS key ...
    with pytest.raises(WrongKeyError):  # ... not under the reviewer's
        signed.verify(public_key=keys[1])


def test_appending_without_the_key_leaves_the_head_unsigned(
        signed: Ledger, ledger_path: Path, keys: tuple[Path, Path]) -> None:
    """An old dpcg (or a hand-written INSERT) appending to a signed ledger."""
    rec = signed.entries()[-1]
    from accounting.ledger._format import entry_hash

    conn = sqlite3.connect(ledger_path)
    new = {**rec, "seq": rec["seq"] + 1, "kind": "dataset", "dataset_id": "extra",
           "run_id": None, "relation": "replace-one", "seed_explicit": None,
           "data": {"lifetime": {"epsilon": "1", "delta": "0"}, "description": ""},
           "prev_hash": rec["hash"]}
    new["hash"] = entry_hash(new)
    conn.execute("INSERT INTO entries VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                 tuple(json.dumps(new[k], sort_keys=True, separators=(",", ":"))
                       if k == "data" else new[k] for k in (
                           "seq", "kind", "dataset_id", "run_id", "mechanism", "params",
                           "sensitivity", "relation", "cost", "purpose", "seed_explicit",
                           "data", "timestamp", "prev_hash", "hash")))
    conn.execute("INSERT INTO datasets VALUES ('extra','1','0','replace-one','',?, '0','0',0)",
                 (new["seq"],))
    conn.commit()
    conn.close()
    assert signed.verify().ok
    report = signed.verify(public_key=keys[1])
    assert not report.ok
    assert "carries no signature" in report.problems[0]


def test_a_cut_tail_is_rejected_with_the_exported_head(signed: Ledger, ledger_path: Path,
                                                       keys: tuple[Path, Path],
                                                       tmp_path: Path) -> None:
    """The operator cuts the last run off (back to a head it signed earlier) and fixes the
    totals: everything left verifies, signatures included; the head the reviewer kept
    does not."""
    head_file = tmp_path / "head.json"
    exported = signed.export_head(head_file)
    assert exported.seq == signed.entry_count()
    first_run_close = next(e["seq"] for e in signed.entries() if e["kind"] == "run-close")
    attack("truncate", str(ledger_path), "--to", str(first_run_close))
    assert signed.entry_count() == first_run_close
    assert signed.verify().ok
    assert signed.verify(public_key=keys[1]).ok  # a signature alone cannot see a cut
    report = signed.verify(public_key=keys[1], head=head_file)
    assert not report.ok
    assert "truncated" in report.problems[0]


def test_a_rewrite_before_the_exported_head_is_rejected(signed: Ledger, ledger_path: Path,
                                                        keys: tuple[Path, Path],
                                                        tmp_path: Path) -> None:
    head_file = tmp_path / "head.json"
    signed.export_head(head_file)
    attack("rewrite", str(ledger_path), "--seq", "2", "--signatures", "rehash")
    report = signed.verify(public_key=keys[1], head=head_file)
    assert not report.ok
    assert any("history up to the exported head was rewritten" in p for p in report.problems)


def test_appends_after_the_exported_head_are_fine(signed: Ledger, keys: tuple[Path, Path],
                                                  tmp_path: Path) -> None:
    head_file = tmp_path / "head.json"
    signed.export_head(head_file)
    signed.open_run("survey-2024", Budget(0.25), "basic", seed_explicit=False).close()
    report = signed.verify(public_key=keys[1], head=head_file)
    assert report.ok, report.problems


# ---------------------------------------------------------------------------------
# Head files
# ---------------------------------------------------------------------------------
def test_head_file_contents(signed: Ledger, keys: tuple[Path, Path], tmp_path: Path) -> None:
    head_file = tmp_path / "head.json"
    head = signed.export_head(head_file)
    doc = json.loads(head_file.read_text())
    assert doc["format"] == "dpcg-ledger-head"
    assert doc["seq"] == signed.entry_count()
    assert doc["hash"] == signed.head_hash()
    assert doc["datasets"] == ["survey-2024"]
    assert doc["key_fingerprint"] == load_verify_key(keys[1]).fingerprint
    assert doc["ledger_id"] == signed.ledger_id
    assert read_head_file(head_file) == head


def _mutate(doc: dict[str, object], key: str, value: object) -> dict[str, object]:
    return {**doc, key: value}


@pytest.mark.parametrize(("change", "error", "match"), [
    (lambda d: "not json", HeadFileError, "not JSON"),
    (lambda d: _mutate(d, "format", "other"), HeadFileError, "not a dpcg ledger head file"),
    (lambda d: _mutate(d, "format_version", 2), HeadFileError, "unsupported"),
    (lambda d: {k: v for k, v in d.items() if k != "seq"}, HeadFileError, "keys missing"),
    (lambda d: _mutate(d, "seq", "7"), HeadFileError, "seq must be"),
    (lambda d: _mutate(d, "hash", "zz"), HeadFileError, "hash must be"),
    (lambda d: _mutate(d, "signature", "00" * 64), HeadFileError, "does not verify"),
    (lambda d: _mutate(d, "seq", int(str(d["seq"])) - 1), HeadFileError, "does not verify"),
    (lambda d: _mutate(d, "key_fingerprint", "0" * 64), HeadFileError, "fingerprint"),
    (lambda d: _mutate(d, "datasets", "survey-2024"), HeadFileError, "datasets must be"),
])
def test_corrupt_head_files(signed: Ledger, keys: tuple[Path, Path], tmp_path: Path,
                            change: object, error: type[Exception], match: str) -> None:
    head_file = tmp_path / "head.json"
    signed.export_head(head_file)
    doc = json.loads(head_file.read_text())
    changed = change(doc)  # type: ignore[operator]
    head_file.write_text(changed if isinstance(changed, str) else json.dumps(changed))
    with pytest.raises(error, match=match):
        signed.verify(public_key=keys[1], head=head_file)


def test_a_head_of_another_key_or_ledger(signed: Ledger, keys: tuple[Path, Path],
                                         other_keys: tuple[Path, Path],
                                         tmp_path: Path) -> None:
    head_file = tmp_path / "head.json"
    signed.export_head(head_file)
    with pytest.raises(WrongKeyError):
        signed.verify(public_key=other_keys[1], head=head_file)
    with Ledger.open(tmp_path / "second.db", create=True, signing_key=keys[0]) as second:
        second.register_dataset("survey-2024", Budget(1.0))
        report = second.verify(public_key=keys[1], head=head_file)
        assert not report.ok
        assert "belongs to ledger" in report.problems[0]


def test_a_head_needs_the_public_key(signed: Ledger, tmp_path: Path) -> None:
    head_file = tmp_path / "head.json"
    signed.export_head(head_file)
    with pytest.raises(InvalidParameterError):
        signed.verify(head=head_file)


def test_an_empty_signed_ledger_has_no_head_to_export(ledger_path: Path,
                                                      keys: tuple[Path, Path]) -> None:
    with Ledger.open(ledger_path, create=True, signing_key=keys[0]) as led:
        assert led.verify(public_key=keys[1]).ok
        with pytest.raises(UnsignedLedgerError, match="empty"):
            led.export_head(ledger_path.with_name("head.json"))


def test_certificates_against_an_exported_head(signed: Ledger, ledger_path: Path,
                                               keys: tuple[Path, Path],
                                               tmp_path: Path) -> None:
    head_file = tmp_path / "head.json"
    signed.export_head(head_file)
    cert = tmp_path / "cert.json"
    signed.export(cert)
    assert verify_certificate(cert, public_key=keys[1], head=head_file).ok
    with pytest.raises(UnsignedLedgerError, match="certificate carries no head signatures"):
        verify_certificate(cert, public_key=keys[1])
    first_run_close = next(e["seq"] for e in signed.entries() if e["kind"] == "run-close")
    attack("truncate", str(ledger_path), "--to", str(first_run_close))
    signed.export(cert)  # the operator's certificate of the cut ledger verifies alone ...
    assert verify_certificate(cert).ok
    report = verify_certificate(cert, public_key=keys[1], head=head_file)
    assert not report.ok  # ... but not against the head the reviewer kept
    assert "truncated" in report.problems[0]


# ---------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------
def test_cli_flow_and_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    key, pub, db = tmp_path / "ops.key", tmp_path / "ops.key.pub", tmp_path / "runs.db"
    code, out, _ = cli("ledger", "keygen", "--out", key, capsys=capsys)
    assert code == 0
    assert "fingerprint" in out
    code, _, err = cli("ledger", "keygen", "--out", key, capsys=capsys)
    assert code == 2
    assert "refusing to overwrite" in err
    code, out, _ = cli("ledger", "init", db, "--dataset-id", "d", "--epsilon", "3", capsys=capsys)
    assert code == 0
    code, _, err = cli("ledger", "verify", db, "--public-key", pub, capsys=capsys)
    assert code == 2
    assert "not signed" in err
    code, out, _ = cli("ledger", "sign-init", db, "--key", key, capsys=capsys)
    assert code == 0
    assert "bound to key" in out
    code, _, err = cli("ledger", "demo", "--ledger", db, capsys=capsys)
    assert code == 2  # a write to a signed ledger without the key
    assert "DPCG_LEDGER_KEY" in err
    monkeypatch.setenv(KEY_ENV, str(key))
    code, _, _ = cli("ledger", "demo", "--ledger", db, capsys=capsys)
    assert code == 0
    head = tmp_path / "head.json"
    code, out, _ = cli("ledger", "export-head", db, "--out", head, capsys=capsys)
    assert code == 0
    assert "wrote signed head" in out
    code, out, _ = cli("ledger", "verify", db, "--public-key", pub, "--head", head,
                       capsys=capsys)
    assert code == 0
    assert "still holds the exported head" in out
    code, _, err = cli("ledger", "verify", db, "--head", head, capsys=capsys)
    assert code == 2
    assert "--public-key" in err
    code, _, err = cli("ledger", "verify", db, "--public-key", key, capsys=capsys)
    assert code == 2
    assert "holds a private key" in err
    code, out, _ = cli("ledger", "show", db, capsys=capsys)
    assert "signed heads, key fingerprint" in out
    with Ledger.open(db) as led:  # cut the demo's run off: back to its dataset
        before_run = next(e["seq"] for e in led.entries() if e["kind"] == "run-open") - 1
    attack("truncate", str(db), "--to", str(before_run))
    code, _, _ = cli("ledger", "verify", db, "--public-key", pub, capsys=capsys)
    assert code == 0  # signatures alone cannot see the cut
    code, _, err = cli("ledger", "verify", db, "--public-key", pub, "--head", head,
                       capsys=capsys)
    assert code == 1
    assert "truncated" in err
    head.write_text("{")
    code, _, err = cli("ledger", "verify", db, "--public-key", pub, "--head", head,
                       capsys=capsys)
    assert code == 2
    assert "not a head file" in err


def test_cli_rejects_a_rewritten_chain(signed: Ledger, ledger_path: Path,
                                       keys: tuple[Path, Path],
                                       capsys: pytest.CaptureFixture[str]) -> None:
    signed.close()
    attack("rewrite", str(ledger_path), "--seq", "4", "--signatures", "rehash")
    code, out, _ = cli("ledger", "verify", ledger_path, capsys=capsys)
    assert code == 0  # the chain alone is consistent ...
    assert "head signatures were NOT checked" in out  # ... and says what it did not check
    code, _, err = cli("ledger", "verify", ledger_path, "--public-key", keys[1], capsys=capsys)
    assert code == 1
    assert "does not verify with the public key" in err


def test_init_binds_a_new_ledger_and_refuses_an_unbound_one(
        tmp_path: Path, keys: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "new.db"
    code, out, _ = cli("ledger", "init", db, "--dataset-id", "d", "--epsilon", "1",
                       "--signing-key", keys[0], capsys=capsys)
    assert code == 0
    assert "signed with key" in out
    assert len(signature_rows(db)) == 1
    old = tmp_path / "old.db"
    cli("ledger", "init", old, "--dataset-id", "d", "--epsilon", "1", capsys=capsys)
    code, _, err = cli("ledger", "init", old, "--dataset-id", "e", "--epsilon", "1",
                       "--signing-key", keys[0], capsys=capsys)
    assert code == 2
    assert "sign-init" in err
    with Ledger.open(old) as led:
        assert [d.dataset_id for d in led.datasets()] == ["d"]


# ---------------------------------------------------------------------------------
# Processes
# ---------------------------------------------------------------------------------
_SIGNED_WORKER = """
import os, sys, time
from accounting.costs import Budget
from accounting.entries import EntryDraft
from accounting.ledger import Ledger
from accounting.mechanisms import Laplace
from accounting.relations import Relation
path, go = sys.argv[1], sys.argv[2]
while not os.path.exists(go):
    time.sleep(0.002)
led = Ledger.open(path, timeout=120)  # the key comes from $DPCG_LEDGER_KEY
mech = Laplace(sensitivity=1.0, epsilon=0.125)
for _ in range(2):
    run = led.open_run("workers", Budget(0.125), "basic", seed_explicit=False)
    run.record(EntryDraft(mech.kind, mech.public_params(), mech.sensitivity,
                          Relation.REPLACE_ONE, mech.cost(Relation.REPLACE_ONE), "q", False))
    run.close()
print("ok")
"""


def test_concurrent_signed_writers(signed: Ledger, ledger_path: Path, keys: tuple[Path, Path],
                                   tmp_path: Path) -> None:
    signed.register_dataset("workers", Budget(1.0))
    go = tmp_path / "go"
    env = {**os.environ, KEY_ENV: str(keys[0])}
    procs = [subprocess.Popen([str(PYTHON), "-c", _SIGNED_WORKER, str(ledger_path), str(go)],
                              cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(4)]
    time.sleep(0.3)
    go.touch()
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    report = signed.verify(public_key=keys[1])
    assert report.ok, report.problems
    assert len(report.runs) == 2 + 8


_WITHOUT_CRYPTOGRAPHY = """
import sys
sys.modules["cryptography"] = None  # as if the optional extra were not installed
from accounting.costs import Budget
from accounting.errors import SigningUnavailableError
from accounting.ledger import Ledger, generate_keypair
from dpcg.cli import main
path = sys.argv[1]
with Ledger.open(path + ".plain.db", create=True) as led:  # unsigned ledgers need nothing
    led.register_dataset("d", Budget(1.0))
    assert led.verify().ok
try:
    generate_keypair(path + ".key")
except SigningUnavailableError as exc:
    print("unavailable:", exc)
print("exit", main(["ledger", "verify", path, "--public-key", path + ".pub"]))
"""


def test_without_the_optional_extra(signed: Ledger, ledger_path: Path, keys: tuple[Path, Path],
                                    tmp_path: Path) -> None:
    import shutil

    shutil.copy(keys[1], str(ledger_path) + ".pub")
    proc = subprocess.run([str(PYTHON), "-c", _WITHOUT_CRYPTOGRAPHY, str(ledger_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "unavailable: signed ledgers need the optional 'cryptography' package" in proc.stdout
    assert "exit 2" in proc.stdout
    assert "pip install 'dpcg[sign]'" in proc.stderr
