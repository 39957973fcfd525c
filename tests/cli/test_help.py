"""The CLI answers at once: help builds without the plugins, and says the same."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dpcg.cli import main
from dpcg.cli.discover_args import MANIFEST, manifest_data

ROOT = Path(__file__).resolve().parents[2]


def _run(code: str) -> str:
    env = {**os.environ, "COLUMNS": "100", "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, env=env, cwd=ROOT).stdout


HELP = """
import contextlib, io, sys
from dpcg.cli import main
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    try:
        main({argv!r})
    except SystemExit:
        pass
heavy = sorted(m for m in ("numpy", "scipy", "scipy.stats", "matplotlib", "networkx",
                           "dpcg.private.registry", "dpcg.citests.registry") if m in sys.modules)
print(repr(heavy))
print(buf.getvalue(), end="")
"""


def test_manifest_is_current() -> None:
    """The committed help manifest matches the registries (regenerate it with
    `python -m dpcg.cli.discover_args` after editing a plugin)."""
    import json

    assert json.loads(MANIFEST.read_text()) == manifest_data(), (
        "dpcg/cli/discover_flags.json is stale (a plugin under dpcg/private or dpcg/citests "
        "changed): regenerate it with `python -m dpcg.cli.discover_args` and commit it")


@pytest.mark.parametrize("argv", [["--help"], ["discover", "--help"], ["datasets", "--help"]])
def test_help_imports_nothing_heavy(argv: list[str]) -> None:
    first, _, text = _run(HELP.format(argv=argv)).partition("\n")
    assert first == "[]"
    assert "usage: dpcg" in text


def test_help_from_manifest_equals_live_help(monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    _, _, fast = _run(HELP.format(argv=["discover", "--help"])).partition("\n")
    from dpcg.private.registry import algorithms

    algorithms()  # registries loaded: the in-process help is derived live
    monkeypatch.setenv("COLUMNS", "100")
    with pytest.raises(SystemExit):
        main(["discover", "--help"])
    assert capsys.readouterr().out == fast
    assert "options of --algorithm curate" in fast


def test_top_level_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for name in ("discover", "datasets", "ledger", "audit", "bench", "schema", "plot",
                 "report"):
        assert name in out
    assert "dpcg schema draft" in out


def test_nonprivate_run_loads_no_other_plugin(tmp_path: Path) -> None:
    """A pc/g2 run imports the non-private tests only (lazy discovery): neither
    scipy.stats nor the private algorithms."""
    code = f"""
import sys
from dpcg.cli import main
assert main(["discover", "--dataset", "asia", "--rows", "200", "--quiet",
             "--out", {str(tmp_path / 'r.json')!r}]) == 0
print(sorted(m for m in ("scipy.stats", "dpcg.citests.gcm", "dpcg.private.laplace_pc",
                         "dpcg.private.common") if m in sys.modules))
"""
    assert _run(code).strip() == "[]"
    assert (tmp_path / "r.json").exists()
