"""Custody separated from analysis (real PostgreSQL server, real keys, real CLI).

The custodian holds the key, registers governed datasets, signs heads (``sign-heads``)
and the policy; the analyst's process reads the policy, never the key, and the policy
refuses ``--no-ledger``, another ledger or another dataset id on governed data.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from accounting.costs import Budget
from accounting.errors import LedgerCorruptError, WrongKeyError
from accounting.ledger import Ledger, generate_keypair, load_verify_key, open_ledger
from accounting.ledger.custody import (
    POLICY_ENV,
    PolicyViolationError,
    check_policy,
    governed,
    read_policy,
    sign_heads,
    write_policy,
)
from accounting.ledger.postgres import PostgresLedger
from accounting.mechanisms import Laplace
from accounting.relations import Relation
from dpcg.cli import main
from dpcg.private.ledger import ledger_target, open_session

from .conftest import PgLedger, laplace_draft

psycopg = pytest.importorskip("psycopg")
pytest.importorskip("cryptography")


@pytest.fixture
def keys(tmp_path: Path) -> tuple[Path, Path]:
    private, public, _ = generate_keypair(tmp_path / "custodian.key")
    return private, public


@pytest.fixture
def governed_pg(pg: PgLedger, keys: tuple[Path, Path], tmp_path: Path,
                monkeypatch: pytest.MonkeyPatch) -> tuple[PgLedger, Path]:
    """A PostgreSQL ledger bound to the custodian's key, dataset 'survey' (lifetime 3)
    registered by the custodian and governed by a signed policy in $DPCG_POLICY; the
    analyst's environment has no key (and a poisoned $DPCG_LEDGER_KEY it must not read)."""
    private, _ = keys
    with open_ledger(pg.custodian) as led:
        led.register_dataset("survey", Budget(3.0), Relation.REPLACE_ONE, "governed")
    sign_heads(pg.custodian, private)  # binds the ledger to the key and signs
    data = tmp_path / "survey.csv"
    data.write_text("a,b\n0,1\n")
    with open_ledger(pg.custodian) as led:
        entry = governed("survey", led, data=[data])
    policy = tmp_path / "policy.json"
    write_policy(policy, private, [entry])
    monkeypatch.setenv(POLICY_ENV, str(policy))
    monkeypatch.setenv("DPCG_LEDGER_KEY", str(tmp_path / "no-such-key"))  # never read
    return pg, data


def test_the_analyst_runs_without_the_key_and_the_custodian_signs(
        governed_pg: tuple[PgLedger, Path], keys: tuple[Path, Path], tmp_path: Path) -> None:
    pg, data = governed_pg
    private, public = keys
    target = ledger_target(budget=Budget(1.0), path=Path("unused"), dataset_id="survey",
                           data_path=data)
    assert target.path == Path("unused")  # a path stays a path
    target = ledger_target(budget=Budget(1.0), path=pg.analyst, dataset_id="survey",
                           data_path=data)
    assert target.path == pg.analyst  # a URL stays a URL
    handle = open_session(Budget(1.0), "basic", target)
    handle.session.release(Laplace(sensitivity=1.0, epsilon=0.25), lambda: 3.0, purpose="count")
    handle.close("completed")
    assert handle.remaining == (2.75, 0.0)
    with PostgresLedger.open(pg.analyst) as led:
        # the analyst's entries are not signed until the custodian signs the head
        assert not led.verify(public_key=public).ok
    seq, head = sign_heads(pg.custodian, private) or (0, "")
    with PostgresLedger.open(pg.analyst) as led:
        report = led.verify(public_key=public)
        assert report.ok, report.problems
        assert report.head_hash == head
        led.export_head(tmp_path / "head.json")
        assert led.verify(public_key=public, head=tmp_path / "head.json").ok
    assert main(["ledger", "verify", pg.analyst, "--public-key", str(public), "--head",
                 str(tmp_path / "head.json")]) == 0
    assert seq == 4  # registration, run-open, mechanism, run-close


@pytest.mark.parametrize("case", ["no-ledger", "another-ledger", "another-id",
                                  "another-sqlite-ledger"])
def test_the_policy_refuses_runs_off_the_governed_ledger(
        governed_pg: tuple[PgLedger, Path], tmp_path: Path, case: str) -> None:
    pg, data = governed_pg
    with PostgresLedger.open(pg.analyst) as led:
        before = led.entry_count()
    if case == "no-ledger":
        target = ledger_target(budget=Budget(1.0), no_ledger=True, data_path=data)
    elif case == "another-ledger":  # another database URL for the governed id
        target = ledger_target(budget=Budget(1.0), path=pg.analyst + "x",
                               dataset_id="survey", data_path=data)
    elif case == "another-sqlite-ledger":
        target = ledger_target(budget=Budget(1.0), path=tmp_path / "mine.db",
                               dataset_id="survey")
    else:  # the governed data file under a fresh id
        target = ledger_target(budget=Budget(1.0), path=pg.analyst,
                               dataset_id="survey-copy", data_path=data)
    with pytest.raises(PolicyViolationError):
        open_session(Budget(1.0), "basic", target)
    assert not (tmp_path / "mine.db").exists()
    with PostgresLedger.open(pg.analyst) as led:
        assert led.entry_count() == before  # nothing reserved anywhere


def test_the_policy_pins_the_ledger_id_and_the_key(governed_pg: tuple[PgLedger, Path],
                                                   pg_cluster: Any, tmp_path: Path) -> None:
    pg, data = governed_pg
    policy = read_policy(tmp_path / "policy.json")
    with PostgresLedger.open(pg.analyst) as led:
        assert check_policy(dataset_id="survey", ledger=pg.analyst, no_ledger=False,
                            data_path=data, opened=led, policies=[policy]) is not None
    # ungoverned data and ids are not the policy's business (but --no-ledger is)
    assert check_policy(dataset_id="other", ledger=tmp_path / "x.db", no_ledger=False,
                        policies=[policy]) is None
    # the same URL, but another (re-created) ledger behind it, or one bound to no key
    other_db = pg_cluster.new_database()
    from accounting.ledger.postgres import install_schema

    install_schema(pg_cluster.url(other_db))
    with open_ledger(pg_cluster.url(other_db, "dpcg_custodian")) as led:
        led.register_dataset("survey", Budget(3.0))
        with pytest.raises(PolicyViolationError, match="not the governed ledger"):
            check_policy(dataset_id="survey", ledger=pg.analyst, no_ledger=False,
                         opened=led, policies=[policy])


def test_a_forged_or_edited_policy_refuses_every_run(governed_pg: tuple[PgLedger, Path],
                                                     tmp_path: Path) -> None:
    pg, data = governed_pg
    path = tmp_path / "policy.json"
    doc = json.loads(path.read_text())
    doc["policy"]["allow_no_ledger"] = True  # the analyst edits the policy
    path.write_text(json.dumps(doc))
    with pytest.raises(PolicyViolationError, match="signature does not verify"):
        open_session(Budget(1.0), "basic", ledger_target(budget=Budget(1.0), no_ledger=True))
    # re-signed with the analyst's own key: verifies as a policy, but the governed
    # ledger is bound to the custodian's key, so the run is refused
    own, _, _ = generate_keypair(tmp_path / "analyst.key")
    with PostgresLedger.open(pg.analyst) as led:
        entry = governed("survey", led, data=[data])
    write_policy(path, own, [entry], allow_no_ledger=True)
    target = ledger_target(budget=Budget(1.0), path=pg.analyst,
                           dataset_id="survey", data_path=data)
    with pytest.raises(PolicyViolationError, match="not bound to the custodian's key"):
        open_session(Budget(1.0), "basic", target)


def test_sign_heads_refuses_a_chain_that_does_not_verify(pg: PgLedger,
                                                         keys: tuple[Path, Path]) -> None:
    private, public = keys
    with open_ledger(pg.analyst) as led:
        led.register_dataset("d", Budget(1.0))
        run = led.open_run("d", Budget(1.0), "basic", seed_explicit=False)
        run.record(laplace_draft(0.5))
    assert sign_heads(pg.custodian, private) is not None
    # even the database's superuser, switching the append-only triggers off, cannot
    # edit history without the custodian noticing before it signs again
    with psycopg.connect(pg.admin, autocommit=True) as conn:
        conn.execute("ALTER TABLE dpcg.entries DISABLE TRIGGER USER")
        conn.execute("UPDATE dpcg.entries SET body = replace(body, '\"epsilon\":\"1/2\"', "
                     "'\"epsilon\":\"1/4\"') WHERE kind = 'mechanism'")
    with pytest.raises(LedgerCorruptError, match="not signed"):
        sign_heads(pg.custodian, private)
    with open_ledger(pg.analyst) as led:
        assert not led.verify(public_key=public).ok
    other, _, _ = generate_keypair(pg_key_dir(private) / "other.key")
    with pytest.raises(WrongKeyError):
        sign_heads(pg.custodian, other)


def pg_key_dir(private: Path) -> Path:
    return private.parent


def test_cli_pg_install_show_verify_sign_heads_policy(pg_cluster: Any, keys: tuple[Path, Path],
                                                      tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    private, public = keys
    db = pg_cluster.new_database()
    assert main(["ledger", "pg-install", pg_cluster.url(db), "--public-key", str(public)]) == 0
    custodian = pg_cluster.url(db, "dpcg_custodian")
    analyst = pg_cluster.url(db, "dpcg_analyst")
    assert main(["ledger", "init", custodian, "--dataset-id", "survey", "--epsilon", "2"]) == 0
    with pytest.raises(LedgerCorruptError, match="no signature"), open_ledger(analyst) as led:
        led.export_head(tmp_path / "h.json")  # head not signed yet: nothing to export
    assert main(["ledger", "sign-heads", custodian, "--key", str(private)]) == 0
    assert main(["ledger", "policy", "--key", str(private), "--out",
                 str(tmp_path / "p.json"), "--govern", f"survey={analyst}"]) == 0
    assert set(read_policy(tmp_path / "p.json").datasets) == {"survey"}
    capsys.readouterr()
    assert main(["ledger", "show", analyst, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["datasets"][0]["dataset_id"] == "survey"
    assert shown["signing_key_fingerprint"] == load_verify_key(public).fingerprint
    assert main(["ledger", "verify", analyst, "--public-key", str(public)]) == 0
    assert main(["ledger", "export", analyst, "--out", str(tmp_path / "c.json")]) == 0
    assert main(["ledger", "verify", str(tmp_path / "c.json")]) == 0
    # an analyst cannot sign heads: the database refuses the custodian's function
    assert main(["ledger", "sign-heads", analyst, "--key", str(private)]) == 2


def test_a_sqlite_ledger_is_unaffected_without_a_policy(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(POLICY_ENV, raising=False)
    target = ledger_target(budget=Budget(1.0), path=tmp_path / "l.db", dataset_id="x")
    handle = open_session(Budget(1.0), "basic", target)
    handle.close("completed")
    with Ledger.open(tmp_path / "l.db") as led:
        assert led.verify().ok


def test_dpcg_discover_records_in_postgres_under_the_policy(
        governed_pg: tuple[PgLedger, Path], keys: tuple[Path, Path],
        capsys: pytest.CaptureFixture[str]) -> None:
    """`dpcg discover --ledger postgresql://...` end to end: a governed id on its ledger
    runs (no key in the analyst's environment), another id's run on the governed ledger
    is not the policy's business, --no-ledger is refused."""
    pg, _ = governed_pg
    private, public = keys

    def discover(*extra: str) -> int:
        return main(["discover", "--dataset", "asia", "--rows", "500", "--algorithm",
                     "laplace-pc", "--epsilon", "1", "--delta", "0", "--quiet", *extra])

    assert discover("--dataset-id", "survey", "--ledger", pg.analyst) == 0
    with PostgresLedger.open(pg.analyst) as led:
        (run,) = led.runs("survey")
        assert run.status == "completed"
        assert run.n_entries > 0
        assert led.verify().ok
    capsys.readouterr()
    assert discover("--no-ledger") == 2
    assert "--no-ledger" in capsys.readouterr().err
    assert discover("--dataset-id", "survey", "--ledger", pg.analyst + "-other") == 2
    assert sign_heads(pg.custodian, private) is not None
    assert main(["ledger", "verify", pg.analyst, "--public-key", str(public)]) == 0


def test_a_url_folded_into_a_path_is_restored(tmp_path: Path) -> None:
    """Callers that build LedgerTarget(Path(ledger)) (the private API) fold a URL's //."""
    from dpcg.private.ledger import LedgerTarget

    url = "postgresql://dpcg_analyst@127.0.0.1:5432/db"
    assert LedgerTarget(Path(url), "x").path == url
    assert LedgerTarget(Path("postgres://h/db"), "x").path == "postgres://h/db"
    assert LedgerTarget(tmp_path / "l.db", "x").path == tmp_path / "l.db"
    assert ledger_target(budget=Budget(1.0), path=Path(url), dataset_id="x").path == url


def test_dpcg_discover_refuses_a_governed_file_under_another_id(
        pg: PgLedger, keys: tuple[Path, Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The front door passes the data file to the policy: `dpcg discover --data FILE`
    on a governed file under a fresh dataset id (a way round its lifetime) is refused
    before anything is reserved; under its governed id it runs."""
    private, _ = keys
    data, schema = tmp_path / "asia.csv", tmp_path / "asia.schema.json"
    assert main(["datasets", "sample", "asia", "--rows", "2000", "--seed", "1",
                 "--out", str(data), "--schema-out", str(schema)]) == 0
    with open_ledger(pg.custodian) as led:
        led.register_dataset("asia-governed", Budget(3.0, 1e-5), Relation.REPLACE_ONE, "governed")
    sign_heads(pg.custodian, private)
    with open_ledger(pg.custodian) as led:
        entry = governed("asia-governed", led, data=[data])
    policy = tmp_path / "policy.json"
    write_policy(policy, private, [entry])
    monkeypatch.setenv(POLICY_ENV, str(policy))
    monkeypatch.delenv("DPCG_LEDGER_KEY", raising=False)

    def discover(dataset_id: str) -> int:
        return main(["discover", "--data", str(data), "--schema", str(schema),
                     "--algorithm", "laplace-pc", "--epsilon", "1", "--quiet",
                     "--dataset-id", dataset_id, "--ledger", pg.analyst,
                     "--out", str(tmp_path / f"{dataset_id}.json")])

    with PostgresLedger.open(pg.analyst) as led:
        before = led.entry_count()
    capsys.readouterr()
    assert discover("asia-copy") == 2
    assert "policy" in capsys.readouterr().err.lower()
    with PostgresLedger.open(pg.analyst) as led:
        assert led.entry_count() == before  # nothing reserved
    assert discover("asia-governed") == 0
    with PostgresLedger.open(pg.analyst) as led:
        assert len(led.runs("asia-governed")) == 1
