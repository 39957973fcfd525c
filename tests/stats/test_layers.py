"""The lower layers point one way (data -> stats -> citests -> pc -> private -> cli):
``dpcg.data`` and ``dpcg.stats`` import nothing above them, ``dpcg.graph`` imports no
sub-package, and no module of these layers is in an import circle (every import counts,
at module top or inside a function)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Sub-packages (and root modules) a layer may import from ``dpcg``.
ALLOWED: dict[str, frozenset[str]] = {
    "dpcg/data": frozenset({"data", "errors"}),
    "dpcg/stats": frozenset({"data", "stats", "errors"}),
    "dpcg/graph.py": frozenset({"errors"}),
}


def _module(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """``dpcg`` modules imported anywhere in ``path`` (absolute and relative)."""
    pkg = _module(path) if path.name == "__init__.py" else _module(path).rsplit(".", 1)[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("dpcg."))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod.startswith("dpcg."):
                out.add(mod)
                out.update(f"{mod}.{a.name}" for a in node.names)
    return out


def _files(layer: str) -> list[Path]:
    p = ROOT / layer
    return [p] if p.is_file() else sorted(p.rglob("*.py"))


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_no_arrow_upwards(layer: str) -> None:
    bad = sorted(
        f"{f.relative_to(ROOT)} -> {m}"
        for f in _files(layer)
        for m in _imports(f)
        if m.split(".")[1] not in ALLOWED[layer]
    )
    assert not bad, bad


def test_no_module_circles_in_the_lower_layers() -> None:
    files = [f for layer in ("dpcg/data", "dpcg/stats", "dpcg/graph.py",
                             "dpcg/pc/orientation.py") for f in _files(layer)]
    known = {_module(f): f for f in files}
    edges = {m: {t for t in _imports(f) if t in known and t != m} for m, f in known.items()}
    # a package imports its own modules from __init__; that is not a circle
    for m in edges:
        edges[m] = {t for t in edges[m] if not (known[t].name == "__init__.py"
                                                and m.startswith(t + "."))}
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(v: str) -> None:
        state[v] = 1
        path.append(v)
        for w in sorted(edges[v]):
            if state.get(w) == 1:
                raise AssertionError(f"import circle: {[*path[path.index(w):], w]}")
            if w not in state:
                visit(w)
        path.pop()
        state[v] = 2

    for v in sorted(edges):
        if v not in state:
            visit(v)
