"""``dpcg plot``: the CPDAG picture, edge classes against a truth, errors."""

from __future__ import annotations

import builtins
import json
import re
from pathlib import Path
from typing import Any

import pytest

from dpcg.cli import main
from dpcg.errors import DpcgError, MissingDependencyError
from dpcg.graph import CPDAG
from dpcg.viz import ResultFileError
from dpcg.viz.graph import EDGE_STYLES, draw_cpdag, svg_for_html
from dpcg.viz.result import EdgeClass, classify_edges, load_result
from tests.viz.conftest import MALICIOUS, result_doc

pytest.importorskip("matplotlib")

TRUTH = CPDAG(["a", "b", "c", "d", "e"], directed=[("a", "b"), ("c", "b")],
              undirected=[("d", "e"), ("a", "d")])


def test_classify_against_truth() -> None:
    est = CPDAG(["a", "b", "c", "d", "e"],
                directed=[("a", "b"), ("b", "c"), ("a", "e")],  # b-c reversed, a-e extra
                undirected=[("a", "d")])  # correct; d-e missing
    kinds = {(v.a, v.b): v.kind for v in classify_edges(est, TRUTH)}
    assert kinds == {("a", "b"): EdgeClass.CORRECT, ("b", "c"): EdgeClass.REVERSED,
                     ("a", "e"): EdgeClass.EXTRA, ("a", "d"): EdgeClass.CORRECT,
                     ("d", "e"): EdgeClass.MISSING}
    est2 = CPDAG(["a", "b", "c", "d", "e"], undirected=[("a", "b")], directed=[("d", "e")])
    kinds2 = {(v.a, v.b): v.kind for v in classify_edges(est2, TRUTH)}
    assert kinds2[("a", "b")] is EdgeClass.MISORIENTED
    assert kinds2[("d", "e")] is EdgeClass.MISORIENTED


def test_classify_without_truth() -> None:
    kinds = {v.kind for v in classify_edges(TRUTH)}
    assert kinds == {EdgeClass.DIRECTED, EdgeClass.UNDIRECTED}


def _svg_colours(svg: str) -> set[str]:
    return {c.lower() for c in re.findall(r"stroke:\s*(#[0-9a-fA-F]{6})", svg)}


def test_svg_styles_for_every_edge_class() -> None:
    est = CPDAG(["a", "b", "c", "d", "e"],
                directed=[("a", "b"), ("b", "c"), ("a", "e")], undirected=[("d", "a")])
    est_mis = CPDAG(["a", "b", "c", "d", "e"], undirected=[("a", "b")])
    svg = draw_cpdag(est, TRUTH, fmt="svg", title="t").decode()
    svg_mis = draw_cpdag(est_mis, TRUTH, fmt="svg").decode()
    colours = _svg_colours(svg) | _svg_colours(svg_mis)
    for kind in (EdgeClass.CORRECT, EdgeClass.REVERSED, EdgeClass.EXTRA, EdgeClass.MISSING,
                 EdgeClass.MISORIENTED):
        assert EDGE_STYLES[kind].color.lower() in colours, kind
        assert EDGE_STYLES[kind].label in svg + svg_mis  # the legend names it
    assert "stroke-dasharray" in svg  # dashed / dotted styles are really dashed
    for name in "abcde":
        assert f">{name}<" in svg  # node labels stay text
    # directed and undirected are visibly different without a truth, too
    plain = draw_cpdag(TRUTH, None, fmt="svg").decode()
    assert {EDGE_STYLES[EdgeClass.DIRECTED].color.lower(),
            EDGE_STYLES[EdgeClass.UNDIRECTED].color.lower()} <= _svg_colours(plain)


def test_png_written_and_nontrivial(tmp_path: Path) -> None:
    res = tmp_path / "r.json"
    res.write_text(json.dumps(result_doc()), encoding="utf-8")
    out = tmp_path / "g.png"
    assert main(["plot", str(res), "--out", str(out)]) == 0
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 10_000
    svg_out = tmp_path / "g.svg"
    assert main(["plot", str(res), "--out", str(svg_out)]) == 0
    text = svg_out.read_text()
    assert text.count("<path") > 5
    assert ">a<" in text


def test_bundled_network_compared_with_truth(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    from dpcg.datasets import load_network

    truth = load_network("asia").true_cpdag()
    # the truth minus one edge plus one extra: missing and extra styles appear
    skel = sorted(truth.sorted_directed() + truth.sorted_undirected())
    dropped = [list(e) for e in truth.sorted_directed()[1:]]
    doc = result_doc(nodes=list(truth.nodes), directed=[*dropped, ["asia", "dysp"]],
                     undirected=[list(e) for e in truth.sorted_undirected()], dataset="asia")
    assert skel
    res = tmp_path / "asia.json"
    res.write_text(json.dumps(doc), encoding="utf-8")
    out = tmp_path / "asia.svg"
    assert main(["plot", str(res), "--out", str(out)]) == 0
    assert "compared with the true CPDAG" in capsys.readouterr().out
    colours = _svg_colours(out.read_text())
    assert EDGE_STYLES[EdgeClass.MISSING].color.lower() in colours
    assert EDGE_STYLES[EdgeClass.EXTRA].color.lower() in colours
    assert load_result(res).truth() == truth


def test_malicious_node_name_is_text_not_markup() -> None:
    cpdag = CPDAG([MALICIOUS, "b"], directed=[(MALICIOUS, "b")])
    svg = svg_for_html(draw_cpdag(cpdag, fmt="svg"))
    assert svg.startswith("<svg")
    assert "<script" not in svg
    assert "&lt;script&gt;" in svg
    assert "$x^2$" in svg  # drawn literally, not as mathtext


def test_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ResultFileError, match="does not exist"):
        load_result(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(ResultFileError, match="not valid JSON"):
        load_result(bad)
    bad.write_text('{"a": 1}', encoding="utf-8")
    with pytest.raises(ResultFileError, match="not a `dpcg discover` result"):
        load_result(bad)
    bad.write_text('{"nodes": ["a"], "edges": {"directed": [["a", "z"]]}}', encoding="utf-8")
    with pytest.raises(ResultFileError, match="malformed"):
        load_result(bad)
    assert main(["plot", str(tmp_path / "missing.json"), "--out", str(tmp_path / "x.svg")]) == 2
    assert "does not exist" in capsys.readouterr().err
    good = tmp_path / "good.json"
    good.write_text(json.dumps(result_doc()), encoding="utf-8")
    assert main(["plot", str(good), "--out", str(tmp_path / "x.gif")]) == 2
    assert ".svg or .png" in capsys.readouterr().err
    assert not (tmp_path / "x.gif").exists()
    with pytest.raises(DpcgError, match="format"):
        draw_cpdag(TRUTH, fmt="gif")


def test_matplotlib_missing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    real_import = builtins.__import__

    def fake_import(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    import importlib

    real_module = importlib.import_module

    def fake_module(name: str, package: str | None = None) -> Any:
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError(f"No module named {name!r}")
        return real_module(name, package)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    monkeypatch.setattr(importlib, "import_module", fake_module)
    with pytest.raises(MissingDependencyError, match=r"dpcg\[plot\]"):
        draw_cpdag(TRUTH, fmt="svg")
    good = tmp_path / "good.json"
    good.write_text(json.dumps(result_doc()), encoding="utf-8")
    assert main(["plot", str(good), "--out", str(tmp_path / "x.svg")]) == 2
    assert not (tmp_path / "x.svg").exists()
    assert main(["report", str(good), "--out", str(tmp_path / "r.html")]) == 2
    assert not (tmp_path / "r.html").exists()
