"""Pre-flight test estimates and the progress line of non-private PC (issue 59)."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest

from dpcg.citests.nonprivate import G2Test
from dpcg.datasets import load_network
from dpcg.pc.engine import candidate_sets, pc_stable
from dpcg.pc.progress import ProgressLine, level_test_bounds


@pytest.fixture(scope="module")
def data() -> Any:
    return load_network("random:nodes=14,max_parents=3,card=2-3,seed=4,conc=0.5,"
                        "shape=scale-free,exponent=1").sample(4_000, 2)


def test_bounds_hold_and_the_next_level_is_exact(data: Any) -> None:
    names = tuple(data.schema.names)
    level0 = pc_stable(G2Test(data), names, max_depth=0)
    bounds = level_test_bounds(level0.adjacency, 1)
    full = pc_stable(G2Test(data), names)
    by_level = full.tests_by_level()
    assert by_level.get(1, 0) <= bounds[1]
    for lv, n in by_level.items():
        if lv >= 1:
            assert n <= bounds[lv]
    # the bound of level 1 counts every candidate set of every adjacent pair
    adj = level0.adjacency
    exact = sum(len(list(candidate_sets(x, y, 1, adj)))
                for x in range(len(adj)) for y in adj[x] if x < y)
    assert bounds[1] == exact
    assert level_test_bounds(adj, 1, max_depth=1) == {1: exact}
    assert level_test_bounds(adj, 1, cap=0) == {1: exact}  # stops past the cap


def test_progress_line_reports_and_changes_nothing(data: Any) -> None:
    names = tuple(data.schema.names)
    plain = pc_stable(G2Test(data), names)
    out = io.StringIO()
    line = ProgressLine(out, every=0.0)
    shown = pc_stable(G2Test(data), names, progress=line)
    assert [(t.level, t.x, t.y, t.S) for t in shown.tests] == \
        [(t.level, t.x, t.y, t.S) for t in plain.tests]
    text = out.getvalue()
    assert "pre-flight: after level 0, at most" in text
    assert line.estimates
    last = [ln for ln in text.splitlines() if ln.startswith("level ")][-1]
    m = re.match(r"level (\d+): ([\d,]+) tests done \(run ([\d,]+)\), <= ([\d,]+) pending", last)
    assert m is not None
    assert int(m.group(3).replace(",", "")) == plain.n_tests
    assert "ETA" in last


def test_progress_line_is_throttled(data: Any) -> None:
    out = io.StringIO()
    pc_stable(G2Test(data), tuple(data.schema.names), progress=ProgressLine(out, every=1e9))
    lines = [ln for ln in out.getvalue().splitlines() if ln.startswith("level ")]
    assert len(lines) == 1  # the first call only


def test_no_eta_from_the_first_tests_of_a_level(monkeypatch: Any) -> None:
    import dpcg.pc.progress as progress

    adj = [frozenset({1, 2}), frozenset({0, 2}), frozenset({0, 1})]
    out = io.StringIO()
    line = ProgressLine(out, every=0.0)
    line.start_level(1, adj, [(0, 1), (0, 2), (1, 2)])
    line(1, 1)  # one test, a few microseconds into the level: no rate yet
    assert out.getvalue().splitlines()[-1].endswith("ETA <= ?")
    monkeypatch.setattr(progress, "MIN_RATE_SECONDS", 0.0)
    line(1, 2)  # two tests: still too few for a rate
    assert out.getvalue().splitlines()[-1].endswith("ETA <= ?")
    monkeypatch.setattr(progress, "MIN_RATE_TESTS", 2)
    line(1, 2)
    last = out.getvalue().splitlines()[-1]
    assert re.search(r"ETA <= \d+s$", last), last
    assert "<= 1 pending" in last  # 3 candidate sets at level 1, 2 done
