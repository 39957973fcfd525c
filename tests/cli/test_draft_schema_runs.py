"""A drafted schema runs non-private PC as is; a private run needs it declared."""

from __future__ import annotations

from pathlib import Path

import pytest

from dpcg.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "asia.csv"


def test_draft_schema_pc_yes_private_no(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    schema = tmp_path / "s.json"
    assert main(["schema", "draft", str(EXAMPLE), "--out", str(schema)]) == 0
    assert main(["discover", "--data", str(EXAMPLE), "--schema", str(schema), "--quiet",
                 "--out", str(tmp_path / "r.json")]) == 0
    capsys.readouterr()
    assert main(["discover", "--data", str(EXAMPLE), "--schema", str(schema), "--quiet",
                 "--algorithm", "laplace-pc", "--epsilon", "1", "--no-ledger",
                 "--out", str(tmp_path / "p.json")]) == 2
    assert '"_draft"' in capsys.readouterr().err
    assert not (tmp_path / "p.json").exists()
