"""Contract test of the public surface (issue 56: "one public function").

* ``dpcg.discover`` is the only discover-like callable that ``dpcg`` and ``dpcg.private``
  export: the former doors ``dpcg.private.discover``, ``nonprivate_pc``,
  ``dpcg.private.cov_pc.cov_pc`` and ``dpcg.private.private_ci_pc.private_pc_continuous``
  are gone, and the engine room (``discover_private``, ``run_private``) is not exported.
* In the product (``dpcg``, ``accounting``, ``audits`` outside its tests) the pipeline
  (``dpcg/pipeline/run.py``) is the only caller of the engine room
  (:mod:`dpcg.private.run`), besides the module itself and :mod:`dpcg.testing` (the
  conformance kit runs algorithm objects that need not be registered). Tests and the
  lab code in ``benchmarks/`` may call it (docs/internals.md, "The engine room").
* The user documentation (README and ``docs/``, outside the generated benchmark pages'
  history) shows only ``dpcg.discover`` / ``dpcg discover``.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

import pytest

import dpcg

ROOT = Path(__file__).resolve().parent.parent

#: The engine room's run functions.
ENGINE_ROOM = {"discover_private", "run_private"}
#: Product files allowed to name them, with the reason.
ENGINE_ROOM_CALLERS = {
    "dpcg/private/run.py": "where they are defined",
    "dpcg/pipeline/run.py": "the pipeline: the one caller",
    "dpcg/testing.py": ("the conformance kit (check_algorithm, check_engine) runs algorithm "
                        "objects that need not be registered, on already-built data"),
}
#: The former doors: no module may define or export them again.
FORMER_DOORS = {
    "dpcg.private": ("discover", "nonprivate_pc", "discover_private", "run_private"),
    "dpcg.private.cov_pc": ("cov_pc",),
    "dpcg.private.private_ci_pc": ("private_pc_continuous",),
}


def _discover_like(module: object, name: str) -> bool:
    """A function (not a class) whose name says it runs a discovery."""
    low = name.lower()
    return inspect.isfunction(getattr(module, name)) and (
        "discover" in low or low.endswith("_pc") or low.startswith("run_"))


def test_dpcg_exports_one_discover() -> None:
    exported = [n for n in dpcg.__all__ if _discover_like(dpcg, n)]
    assert exported == ["discover"]
    assert dpcg.discover.__module__ == "dpcg.api"


def test_dpcg_private_exports_no_door() -> None:
    private = importlib.import_module("dpcg.private")
    doors = [n for n in private.__all__ if _discover_like(private, n)]
    assert doors == [], f"dpcg.private exports a second door: {doors}"
    for name in FORMER_DOORS["dpcg.private"]:
        assert not hasattr(private, name), f"dpcg.private.{name} is back"


@pytest.mark.parametrize("module", ["dpcg.private.cov_pc", "dpcg.private.private_ci_pc",
                                    "dpcg.private.run"])
def test_algorithm_modules_have_no_door(module: str) -> None:
    mod = importlib.import_module(module)
    for name in FORMER_DOORS.get(module, ()):
        assert not hasattr(mod, name), f"{module}.{name} is back"
    public = getattr(mod, "__all__", [])
    assert not [n for n in public if n == "discover" or n.endswith("_pc")
                or n == "private_pc_continuous"]


def test_dpcg_private_has_no_api_module() -> None:
    assert not (ROOT / "dpcg" / "private" / "api.py").exists()


def _names_used(path: Path) -> set[str]:
    """Every identifier ``path`` imports, reads or calls (names and attributes)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.Attribute):
            out.add(node.attr)
        elif isinstance(node, ast.ImportFrom):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            out.add(node.name)
    return out


def _product_files() -> list[Path]:
    files: list[Path] = []
    for top in ("dpcg", "accounting", "audits"):
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel.startswith("audits/tests/") or "/__pycache__/" in rel:
                continue
            files.append(path)
    return files


def test_the_pipeline_is_the_only_caller_of_the_engine_room() -> None:
    files = _product_files()
    assert len(files) > 100  # the walk saw the packages
    offenders = []
    for path in files:
        rel = path.relative_to(ROOT).as_posix()
        used = _names_used(path) & ENGINE_ROOM
        if used and rel not in ENGINE_ROOM_CALLERS:
            offenders.append(f"{rel}: {sorted(used)}")
    assert not offenders, (
        "the engine room (dpcg.private.run) is called outside the pipeline; build a "
        "DiscoverRequest and call dpcg.pipeline.run.execute (or dpcg.discover):\n"
        + "\n".join(offenders))
    pipeline = _names_used(ROOT / "dpcg" / "pipeline" / "run.py")
    assert "discover_private" in pipeline  # the allow-list names a real caller


#: Spellings of the former doors in user documentation.
_DOOR_TEXT = re.compile(
    r"dpcg\.private\.discover\b|from dpcg\.private import [^\n]*\bdiscover\b|"
    r"dpcg\.private\.api\b|\bnonprivate_pc\b|\bprivate_pc_continuous\b|\bcov_pc\(")


def _doc_files() -> list[Path]:
    docs = [p for p in sorted((ROOT / "docs").rglob("*.md"))
            if "benchmarks" not in p.relative_to(ROOT / "docs").parts]
    return [ROOT / "README.md", *docs]


def test_user_docs_show_only_dpcg_discover() -> None:
    offenders = []
    for path in _doc_files():
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _DOOR_TEXT.search(line) and "are gone" not in line:
                offenders.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
    assert not offenders, "a former door in the docs:\n" + "\n".join(offenders)
