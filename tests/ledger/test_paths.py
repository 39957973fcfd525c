"""The per-user default ledger location (``default_ledger_path``)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from accounting.costs import Budget
from accounting.errors import LedgerError
from accounting.ledger import Ledger, default_ledger_path, resolve_ledger_path

from .conftest import laplace_draft


def test_dpcg_ledger_wins(tmp_path: Path) -> None:
    target = tmp_path / "somewhere" / "mine.sqlite"
    env = {"DPCG_LEDGER": str(target), "XDG_DATA_HOME": str(tmp_path / "xdg"),
           "HOME": str(tmp_path / "home")}
    assert default_ledger_path(env) == target
    assert not (tmp_path / "somewhere").exists()  # an explicit path is used as given
    assert not (tmp_path / "xdg").exists()


def test_tilde_in_dpcg_ledger_is_expanded(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_ledger_path({"DPCG_LEDGER": "~/l.sqlite"}) == tmp_path / "l.sqlite"


def test_xdg_data_home(tmp_path: Path) -> None:
    env = {"XDG_DATA_HOME": str(tmp_path / "xdg"), "HOME": str(tmp_path / "home")}
    path = default_ledger_path(env)
    assert path == tmp_path / "xdg" / "dpcg" / "ledger.sqlite"
    mode = stat.S_IMODE(path.parent.stat().st_mode)
    assert mode == 0o700
    assert not path.exists()  # the file is created by Ledger.open(create=True)


def test_home_fallback_and_relative_xdg_is_ignored(tmp_path: Path) -> None:
    for env in ({"HOME": str(tmp_path)}, {"HOME": str(tmp_path), "XDG_DATA_HOME": "rel/dir"},
                {"HOME": str(tmp_path), "DPCG_LEDGER": ""}):
        assert default_ledger_path(env) == tmp_path / ".local" / "share" / "dpcg" / \
            "ledger.sqlite"
    assert stat.S_IMODE((tmp_path / ".local" / "share" / "dpcg").stat().st_mode) == 0o700


def test_directory_is_0700_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        path = default_ledger_path({"XDG_DATA_HOME": str(tmp_path)})
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_existing_directory_is_left_alone(tmp_path: Path) -> None:
    (tmp_path / "dpcg").mkdir(mode=0o750)
    os.chmod(tmp_path / "dpcg", 0o750)
    default_ledger_path({"XDG_DATA_HOME": str(tmp_path)})
    assert stat.S_IMODE((tmp_path / "dpcg").stat().st_mode) == 0o750


def test_create_dir_false_creates_nothing(tmp_path: Path) -> None:
    path = default_ledger_path({"XDG_DATA_HOME": str(tmp_path / "x")}, create_dir=False)
    assert path == tmp_path / "x" / "dpcg" / "ledger.sqlite"
    assert not (tmp_path / "x").exists()


def test_stable_across_working_directories(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The point of item 4: the lifetime no longer resets when run from elsewhere."""
    env = {"XDG_DATA_HOME": str(tmp_path / "data")}
    seen = set()
    for cwd in ("a", "b"):
        (tmp_path / cwd).mkdir()
        monkeypatch.chdir(tmp_path / cwd)
        path = default_ledger_path(env)
        seen.add(path)
        with Ledger.open(path, create=True) as led:
            led.ensure_dataset("survey", Budget(1.0))
            run = led.open_run("survey", Budget(0.5), "basic", seed_explicit=False)
            run.record(laplace_draft(0.5))  # spent in full: no refund at close
            run.close()
    (path,) = seen
    with Ledger.open(path) as led:
        assert led.dataset("survey").remaining_epsilon == 0  # one lifetime, two directories


def test_unwritable_parent_is_a_ledger_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(LedgerError, match="cannot create the ledger directory"):
        default_ledger_path({"XDG_DATA_HOME": str(blocker)})


def test_resolve_prefers_the_explicit_path(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DPCG_LEDGER", str(tmp_path / "env.sqlite"))
    assert resolve_ledger_path(tmp_path / "flag.sqlite") == tmp_path / "flag.sqlite"
    assert resolve_ledger_path(None) == tmp_path / "env.sqlite"
    assert default_ledger_path() == tmp_path / "env.sqlite"  # os.environ by default
