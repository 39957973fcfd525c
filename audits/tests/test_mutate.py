"""Mutation testing of the real code (``python -m audits.mutate``): every mutant's
anchor exists in the current tree, anchors fail loudly, and a small sample of mutants
is applied to a copy of the tree and killed (the full run is offline; its table is in
docs/audit-report.md)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from audits.mutate import MUTANTS, AnchorError, apply, locate
from audits.mutate.catalogue import FILE_CHECKS
from audits.mutate.runner import REPO, check_anchors, copy_tree, run_mutant

SENSITIVITY_FILES = ("dpcg/stats/registry.py", "dpcg/stats/marginals.py",
                     "dpcg/stats/suffstat.py", "dpcg/citests/crt_law.py")


def test_every_anchor_is_found_once_in_the_current_tree() -> None:
    lines = check_anchors(REPO, MUTANTS)
    assert len(lines) == len(MUTANTS) >= 20
    assert len({m.id for m in MUTANTS}) == len(MUTANTS)
    for m in MUTANTS:
        assert m.file in FILE_CHECKS
        # only code that draws noise, charges, or declares a sensitivity is mutated
        assert (m.file.startswith(("accounting/", "dpcg/private/"))
                or m.file in SENSITIVITY_FILES)
        original = (REPO / m.file).read_text().splitlines()[lines[m.id] - 1]
        assert original.strip() == m.anchor.strip()
        assert m.replacement.strip() != m.anchor.strip()


def test_missing_or_ambiguous_anchor_fails_loudly() -> None:
    m = MUTANTS[0]
    with pytest.raises(AnchorError, match="found 0 times"):
        locate("nothing here\n", m)
    with pytest.raises(AnchorError, match="found 2 times"):
        locate(f"{m.anchor}\n{m.anchor}\n", m)
    with pytest.raises(AnchorError, match="not found after"):
        locate("x = 1\n", replace(m, after="x = 1"))


def test_apply_writes_only_the_copy(tmp_path: Path) -> None:
    root = copy_tree(tmp_path)
    m = next(m for m in MUTANTS if m.id == "filter-flipped-epsilon")
    before = (REPO / m.file).read_text()
    line, original = apply(root, m)
    mutated = (root / m.file).read_text()
    assert (REPO / m.file).read_text() == before == original
    assert mutated.splitlines()[line - 1].strip() == m.replacement.strip()
    assert not (root / ".git").exists()


@pytest.mark.slow
def test_sample_of_mutants_is_killed(tmp_path: Path) -> None:
    """Three mutants through the real runner (their configured checks, fail fast)."""
    root = copy_tree(tmp_path)
    sample = ("laplace-grid-half-noise", "filter-commit-skipped", "tau-a-r1-priv-pc")
    for mid in sample:
        m = next(x for x in MUTANTS if x.id == mid)
        outcome = run_mutant(root, m)
        assert outcome.killed, f"{mid} survived its checks {m.checks()}"
        assert outcome.killed_by
        # the copy is restored after each mutant
        assert (root / m.file).read_text() == (REPO / m.file).read_text()
