"""The lanes' contract (``.ci/run``, docs/internals.md "Test lanes").

* Every module that uses a server fixture (the Spark standalone cluster ``spark``, the
  PostgreSQL ``pg_cluster``/``pg``) is in :data:`tests.servers.SERVER_MODULES`, which
  ``.ci/run`` runs in one process after the parallel pass, and every listed module exists.
* No test asserts a wall time (the machine is shared; issue 56).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.servers import SERVER_MODULES

ROOT = Path(__file__).resolve().parent.parent
SERVER_FIXTURES = {"spark", "pg_cluster", "pg"}


def _fixtures_used(path: Path) -> set[str]:
    """The argument names of the module's test functions and fixtures."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            out.update(a.arg for a in node.args.args)
    return out


def _test_modules() -> list[Path]:
    return [p for top in ("tests", "audits") for p in sorted((ROOT / top).rglob("test_*.py"))]


def test_every_server_module_is_in_the_serial_pass() -> None:
    missing = [p.relative_to(ROOT).as_posix() for p in _test_modules()
               if _fixtures_used(p) & SERVER_FIXTURES
               and p.relative_to(ROOT).as_posix() not in SERVER_MODULES]
    assert not missing, f"add to tests/servers.py SERVER_MODULES: {missing}"
    for rel in SERVER_MODULES:
        assert (ROOT / rel).is_file(), rel


def test_ci_run_uses_the_list() -> None:
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "python -m tests.servers" in script
    assert re.search(r"-n \"\$workers\"", script)


#: A comparison of a measured duration with a number (``elapsed < 2``, ``seconds <= 5.0``).
_WALL = re.compile(r"assert[^\n#]*\b(elapsed|wall|seconds|duration|took)\w*\s*[<>]=?\s*\d")


def test_no_test_asserts_a_wall_time() -> None:
    offenders = []
    for path in _test_modules():
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _WALL.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
    assert not offenders, "a test asserts a wall time:\n" + "\n".join(offenders)


def test_every_full_lane_only_entry_names_an_existing_test() -> None:
    """A renamed test must not silently fall back into the fast lane's list as a stale
    name: every entry of ``FULL_LANE_ONLY`` names a file and a test function in it."""
    from tests.conftest import FULL_LANE_ONLY

    root = Path(__file__).resolve().parents[1]
    for entry in FULL_LANE_ONLY:
        path, _, func = entry.partition("::")
        text = (root / path).read_text()
        assert f"def {func}" in text, entry
