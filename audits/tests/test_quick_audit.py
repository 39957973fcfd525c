"""``dpcg audit --quick`` is part of the test suite: every correct item passes and
every mutant is flagged, with fixed seeds."""

from __future__ import annotations

from pathlib import Path

import pytest

from dpcg.cli import main


@pytest.mark.slow
def test_quick_audit_cli(tmp_path: Path) -> None:
    code = main(["audit", "--quick", "--out", str(tmp_path), "--seed", "20261122"])
    text = (tmp_path / "audit-report.md").read_text()
    assert "**MISSED**" not in text, text
    assert "**FAIL**" not in text, text
    assert "Overall: **PASS**" in text
    assert code == 0
    # every section is present, and mutants were caught
    for heading in ("## Mechanisms", "## Mutants", "## Statistics", "## Accounting backend"):
        assert heading in text
    assert text.count("FLAGGED") >= 10
