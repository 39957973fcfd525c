"""Shared checks of the bad-input tests (review 2, defects A-G): a refused run raises the
project's own exception, its message quotes no data value, and the ledger's rows are
exactly those it had before (nothing reserved, registered or recorded)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from accounting.errors import AccountingError
from dpcg.errors import DpcgError
from tests.hardening.helpers import cli, raw, row_counts

#: A cheap private run that puts rows in every table of a fresh ledger.
SEED_RUN = ["discover", "--dataset", "asia", "--rows", "2000", "--algorithm", "laplace-pc",
            "--epsilon", "1", "--max-depth", "1", "--noise-seed", "1", "--quiet"]


def used_ledger(tmp: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A ledger holding one completed run (so "rows unchanged" compares non-empty
    tables)."""
    led = tmp / "used.sqlite"
    assert cli([*SEED_RUN, "--ledger", str(led)], capsys).code == 0
    counts = row_counts(led)
    assert counts["runs"] == 1
    assert counts["datasets"] == 1
    assert counts["entries"] > 0
    return led


def _clean(message: str, absent: Iterable[str]) -> None:
    assert "Traceback" not in message
    for text in absent:
        assert text not in message, (text, message)


def refused_cli(argv: list[str], ledger: Path, error: type[Exception],
                capsys: pytest.CaptureFixture[str], *, fragment: str = "",
                absent: Iterable[str] = ()) -> str:
    """``dpcg ARGV`` exits 2 with one ``dpcg discover: error:`` line containing
    ``fragment`` and none of ``absent``; its handler raises ``error`` (a project type);
    the ledger's rows are unchanged by both attempts and it still verifies."""
    absent = list(absent)
    assert issubclass(error, DpcgError | AccountingError)
    before = row_counts(ledger)
    got = cli(argv, capsys)
    assert got.code == 2, got.err
    assert got.err.startswith("dpcg discover: error: "), got.err
    assert fragment in got.err
    _clean(got.err, absent)
    with pytest.raises(error) as info:
        raw(argv)
    _clean(str(info.value), absent)
    assert row_counts(ledger) == before
    if ledger.exists():
        assert cli(["ledger", "verify", str(ledger)], capsys).code == 0
    return got.err.strip()


def refused_api(call: Callable[[], object], ledger: Path, error: type[Exception], *,
                fragment: str = "", absent: Iterable[str] = ()) -> str:
    """``call()`` raises ``error`` (a project type) with ``fragment`` and none of
    ``absent`` in its message, and leaves the ledger's rows unchanged."""
    assert issubclass(error, DpcgError | AccountingError)
    before = row_counts(ledger)
    with pytest.raises(error) as info:
        call()
    message = str(info.value)
    assert fragment in message
    _clean(message, absent)
    assert row_counts(ledger) == before
    return message
