"""The README's Python and command-line examples run as written (in a scratch directory
holding a copy of docs/examples and a link to the repository's .venv)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _block(section: str, lang: str) -> str:
    """The first ```lang block after the heading ``section``."""
    start = README.index(section)
    match = re.compile(rf"```{lang}\n(.*?)```", re.DOTALL).search(README, start)
    assert match is not None, f"no {lang} block after {section!r}"
    return match.group(1)


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "docs" / "examples", tmp_path / "docs" / "examples")
    venv = ROOT / ".venv"
    if not (venv / "bin").is_dir():  # CI creates <repo>/.venv (.ci/setup)
        pytest.fail(f"{venv} is missing: run `bash .ci/setup --dev` first")
    (tmp_path / ".venv").symlink_to(venv)
    return tmp_path


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}


def test_python_example_runs_as_written(scratch: Path) -> None:
    pytest.importorskip("pandas")
    code = _block("## Python", "python")
    assert len(code.strip().splitlines()) == 5
    out = subprocess.run([sys.executable, "-c", code], cwd=scratch, env=_env(),
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "('" in out.stdout  # edges printed as (tail, head) pairs


def test_cli_example_runs_as_written(scratch: Path) -> None:
    pytest.importorskip("matplotlib")
    lines = [ln for ln in _block("## Command line", "bash").splitlines() if ln.strip()]
    assert len(lines) == 3
    for line in lines:
        out = subprocess.run(["bash", "-c", line], cwd=scratch, env=_env(),
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, f"{line}\n{out.stderr}"
    result = json.loads((scratch / "result.json").read_text())
    assert result["algorithm"] == "pc"
    assert result["edges"]["directed"] or result["edges"]["undirected"]
    assert (scratch / "graph.svg").read_bytes().lstrip().startswith((b"<?xml", b"<svg"))


def test_setup_installs_what_the_readme_examples_import() -> None:
    """README command 1 (`bash .ci/setup`, no --dev) installs the `readme` extra, and that
    extra holds every package the README's examples need beyond the runtime."""
    import tomllib

    setup = (ROOT / ".ci" / "setup").read_text(encoding="utf-8")
    assert 'extras="[readme]"' in setup
    assert README.splitlines()[3].startswith("bash .ci/setup && ")
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]["readme"]
    names = {re.split(r"[<>=\[]", e)[0] for e in extras}
    assert {"pandas", "matplotlib", "tqdm"} <= names
    python = _block("## Python", "python")
    imported = set(re.findall(r"^import (\w+)", python, re.MULTILINE))
    assert imported - {"dpcg"} <= names | {"pd"}, imported


def test_real_survey_example_runs_as_written(scratch: Path) -> None:
    """The real mixed table with blanks, from the raw CSV to the HTML report (a private
    run recorded in a fresh ledger), exactly as the README writes it."""
    lines = [ln for ln in _block("## A real survey", "bash").splitlines() if ln.strip()]
    assert len(lines) == 3
    for line in lines:
        out = subprocess.run(["bash", "-c", line], cwd=scratch, env=_env(),
                             capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, f"{line}\n{out.stderr}"
    assert "_draft" in json.loads((scratch / "draft.json").read_text())
    result = json.loads((scratch / "survey.json").read_text())
    assert result["algorithm"] == "cov-pc"
    assert result["privacy"]["epsilon"] <= 1.0
    page = (scratch / "survey.html").read_text()
    assert "VERIFIED" in page
