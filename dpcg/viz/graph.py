"""Drawing a CPDAG (``dpcg plot``): networkx layout, matplotlib rendering, SVG or PNG.

Directed edges carry an arrowhead, undirected edges none. Without a truth, undirected
edges are also drawn in a different colour. With a truth (a bundled network), colour and
line style say how each edge compares with the true CPDAG:

============  ===================  ============================================
class         style                meaning
============  ===================  ============================================
correct       black, solid         same adjacency and marks as the truth
reversed      orange, solid, bold  directed the other way round
misoriented   purple, dash-dot     directed in one graph, undirected in the other
extra         red, dashed          not in the truth
missing       grey, dotted         in the truth, not found (drawn as the truth has it)
============  ===================  ============================================

Text stays text in SVG (``svg.fonttype = none``), so node names are searchable and the
HTML report can show them; node names are drawn literally (no mathtext).
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpcg.errors import DpcgError
from dpcg.graph import CPDAG
from dpcg.viz import require_matplotlib
from dpcg.viz.result import EdgeClass, EdgeView, classify_edges

__all__ = ["EDGE_STYLES", "EdgeStyle", "draw_cpdag", "layout", "svg_for_html"]


@dataclass(frozen=True)
class EdgeStyle:
    color: str
    linestyle: str
    width: float
    label: str


EDGE_STYLES: dict[EdgeClass, EdgeStyle] = {
    EdgeClass.DIRECTED: EdgeStyle("#222222", "solid", 1.4, "directed"),
    EdgeClass.UNDIRECTED: EdgeStyle("#3b6ea5", "solid", 1.4, "undirected"),
    EdgeClass.CORRECT: EdgeStyle("#222222", "solid", 1.4, "correct (as in the true CPDAG)"),
    EdgeClass.REVERSED: EdgeStyle("#e07b00", "solid", 2.6, "reversed"),
    EdgeClass.MISORIENTED: EdgeStyle("#8e44ad", "dashdot", 1.8,
                                     "orientation differs (directed vs undirected)"),
    EdgeClass.EXTRA: EdgeStyle("#d62728", "dashed", 1.8, "extra (not in the truth)"),
    EdgeClass.MISSING: EdgeStyle("#9a9a9a", "dotted", 1.8, "missing (in the truth)"),
}


def layout(nodes: Sequence[str],
           edges: Sequence[tuple[str, str]]) -> dict[str, tuple[float, float]]:
    """Deterministic positions: Kamada-Kawai on the undirected union of the edges."""
    import networkx as nx

    g = nx.Graph()
    g.add_nodes_from(nodes)
    g.add_edges_from(edges)
    if len(nodes) == 1:
        return {nodes[0]: (0.0, 0.0)}
    pos = nx.kamada_kawai_layout(g)
    return {str(n): (float(p[0]), float(p[1])) for n, p in pos.items()}


def _figure_size(n: int) -> tuple[float, float]:
    side = min(16.0, max(5.0, 1.15 * n**0.5 * 1.6))
    return side * 1.25, side


def draw_cpdag(
    cpdag: CPDAG,
    truth: CPDAG | None = None,
    *,
    title: str | None = None,
    fmt: str = "svg",
    dpi: int = 110,
    scale: float = 1.0,
) -> bytes:
    """The picture as ``fmt`` (``"svg"`` or ``"png"``) bytes.

    ``scale`` multiplies the figure size (text keeps its size: below 1, text is larger
    relative to the graph, as in the HTML report where the SVG is fitted to the page).
    """
    if fmt not in {"svg", "png"}:
        raise DpcgError(f"cannot draw to format {fmt!r}: use .svg or .png")
    mpl = require_matplotlib()
    import networkx as nx

    figure_mod = __import__("matplotlib.figure", fromlist=["Figure"])
    lines_mod = __import__("matplotlib.lines", fromlist=["Line2D"])
    views = classify_edges(cpdag, truth)
    pos = layout(cpdag.nodes, [(v.a, v.b) for v in views])
    n = len(cpdag.nodes)
    fontsize = 9.0 if n <= 12 else 7.5
    with mpl.rc_context({"svg.fonttype": "none", "svg.hashsalt": "dpcg",
                         "font.family": "DejaVu Sans"}):
        width, height = _figure_size(n)
        fig = figure_mod.Figure(figsize=(width * scale, height * scale), dpi=dpi)
        top = 0.93 if title else 0.99
        ax = fig.add_axes((0.01, 0.09, 0.98, top - 0.09))
        ax.set_axis_off()
        xs = [p[0] for p in pos.values()]
        ys = [p[1] for p in pos.values()]
        padx = 0.06 * (max(xs) - min(xs) or 1.0) + 0.05
        pady = 0.06 * (max(ys) - min(ys) or 1.0) + 0.05
        ax.set_xlim(min(xs) - padx, max(xs) + padx)
        ax.set_ylim(min(ys) - pady, max(ys) + pady)
        g = nx.DiGraph()
        g.add_nodes_from(cpdag.nodes)
        half = {name: (0.31 * fontsize * len(name) + 5.0, 0.62 * fontsize + 4.0)
                for name in cpdag.nodes}
        to_points = 72.0 / fig.dpi

        def margin(node: str, other: str) -> float:
            """Points from ``node``'s centre to its label box edge towards ``other``."""
            (x0, y0), (x1, y1) = ax.transData.transform([pos[node], pos[other]])
            dx, dy = abs(x1 - x0) * to_points, abs(y1 - y0) * to_points
            w, h = half[node]
            if dx == 0.0 and dy == 0.0:
                return h
            along_x = w / dx if dx else float("inf")
            along_y = h / dy if dy else float("inf")
            t = min(along_x, along_y)
            return float(t * (dx * dx + dy * dy) ** 0.5) + 2.0

        used: list[EdgeClass] = []
        for kind, style in EDGE_STYLES.items():
            group = [v for v in views if v.kind is kind]
            if group:
                used.append(kind)
            for v in group:
                nx.draw_networkx_edges(
                    g, pos, edgelist=[(v.a, v.b)], ax=ax, arrows=True,
                    arrowstyle="-|>" if v.directed else "-", arrowsize=13,
                    edge_color=style.color, style=style.linestyle, width=style.width,
                    node_size=0, min_source_margin=margin(v.a, v.b),
                    min_target_margin=margin(v.b, v.a),
                )
        for name in cpdag.nodes:
            x, y = pos[name]
            ax.text(x, y, name, ha="center", va="center", fontsize=fontsize,
                    parse_math=False, zorder=5,
                    bbox={"boxstyle": "round,pad=0.35", "facecolor": "#fdfdf3",
                          "edgecolor": "#555555", "linewidth": 0.9})
        handles = [
            lines_mod.Line2D([0], [0], color=EDGE_STYLES[k].color,
                             linestyle=EDGE_STYLES[k].linestyle,
                             linewidth=EDGE_STYLES[k].width, label=EDGE_STYLES[k].label)
            for k in used
        ]
        handles.append(lines_mod.Line2D([0], [0], color="#222222", marker=">",
                                        linestyle="solid", markersize=6,
                                        label="arrowhead: directed edge"))
        legend_title = ("edges compared with the true CPDAG" if truth is not None
                        else "edges (no true graph known)")
        fig.legend(handles=handles, loc="lower center", ncol=3, fontsize=8, frameon=False,
                   title=legend_title, title_fontsize=8)
        if title:
            fig.suptitle(title, fontsize=11, y=0.985)
        buffer = io.BytesIO()
        metadata: dict[str, Any] = ({"Date": None} if fmt == "svg"
                                    else {"Software": "dpcg / matplotlib"})
        fig.savefig(buffer, format=fmt, metadata=metadata)
    return buffer.getvalue()


def write_picture(cpdag: CPDAG, out: str | os.PathLike[str], truth: CPDAG | None = None, *,
                  title: str | None = None) -> str:
    """Draw to ``out`` (format from its suffix, ``.svg`` or ``.png``); returns the format."""
    suffix = Path(out).suffix.lower().lstrip(".")
    if suffix not in {"svg", "png"}:
        raise DpcgError(f"--out {out}: use a .svg or .png file name")
    data = draw_cpdag(cpdag, truth, title=title, fmt=suffix)
    try:
        Path(out).write_bytes(data)
    except OSError as exc:
        raise DpcgError(f"cannot write {out}: {exc.strerror or exc}") from None
    return suffix


_PROLOG = re.compile(r"\A.*?(?=<svg\b)", re.DOTALL)


def svg_for_html(svg: bytes) -> str:
    """An SVG document as an element to inline in HTML (XML prolog and DOCTYPE dropped)."""
    text = svg.decode("utf-8")
    return _PROLOG.sub("", text, count=1)


def edge_summary(views: Sequence[EdgeView]) -> dict[str, int]:
    """How many edges of each class (for captions)."""
    out: dict[str, int] = {}
    for v in views:
        out[v.kind.value] = out.get(v.kind.value, 0) + 1
    return out
