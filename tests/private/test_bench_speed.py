"""``dpcg bench private``'s speed measurement on a small sample (smoke test of the code
path and of the table; the timings themselves are benchmarks, never asserted)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.private import SPEED_SCORES, _speed_here, _speed_table
from dpcg.citests.private import DEFAULT_SCORE


def test_speed_rows_cover_every_score_and_side(tmp_path: Path) -> None:
    rows = _speed_here(1500, tmp_path, repeats=2)
    assert SPEED_SCORES[0] == DEFAULT_SCORE
    assert [(r["score"], r["algorithm"]) for r in rows] == [
        (score, alg) for score in SPEED_SCORES for alg in (
            "pc (non-private, same test)",
            "laplace-pc (in-memory recorder)", "laplace-pc + SQLite ledger",
            "priv-pc (in-memory recorder)", "priv-pc + SQLite ledger")]
    for r in rows:
        assert len(r["all_seconds"]) == 2
        assert r["seconds"] == min(r["all_seconds"])
        assert r["n_tests"] > 0
        if r["algorithm"].endswith("ledger"):
            assert r["entries"] > 0
            assert "ledger_ms_per_entry_median" in r
    # one durable ledger per (algorithm, score), every entry verifiable
    from accounting.ledger import Ledger

    paths = sorted(tmp_path.glob("speed-*.sqlite"))
    assert len(paths) == 2 * len(SPEED_SCORES)
    for p in paths:
        led = Ledger.open(p)
        try:
            assert led.verify().ok
        finally:
            led.close()
    table = _speed_table(rows)
    body = [line for line in table if line.startswith("| ") and "---" not in line][1:]
    assert len(body) == len(rows)
    assert all(line.startswith(f"| {r['score']} | {r['algorithm']} |")
               for line, r in zip(body, rows, strict=True))


def test_speed_rows_without_a_score_are_the_old_default() -> None:
    old = {"algorithm": "laplace-pc (in-memory recorder)", "seconds": 1.0, "n_tests": 10,
           "per_test_ms": 0.1, "ratio": 2.0}
    assert any(line.startswith("| kendall-z | laplace-pc") for line in _speed_table([old]))
