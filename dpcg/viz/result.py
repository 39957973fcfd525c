"""Reading a ``dpcg discover`` result and comparing its CPDAG with a known truth.

A result file is the JSON ``dpcg discover --out`` writes: ``nodes`` and
``edges.directed`` / ``edges.undirected`` at the top level, plus (when present)
``algorithm``, ``test``, ``data``, ``metrics``, ``guarantee``, ``plan``, ``ledger``,
``spent``. Only the graph is required; everything else is shown when present.

The truth is known for a bundled network (``data.source == "bundled"``) and for a BIF
file whose content is unchanged (``"bif"``, checked by its recorded id): its true CPDAG
comes from :func:`dpcg.datasets.load_network`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from dpcg.errors import BifParseError, DatasetNotFoundError, GraphError
from dpcg.graph import CPDAG
from dpcg.viz import ResultFileError

__all__ = ["EdgeClass", "EdgeView", "Result", "classify_edges", "load_result"]


@dataclass(frozen=True)
class Result:
    """A parsed result file: the estimated CPDAG and the raw document."""

    path: str
    cpdag: CPDAG
    doc: Mapping[str, Any]

    @property
    def algorithm(self) -> str:
        return str(self.doc.get("algorithm", "unknown algorithm"))

    @property
    def dataset_name(self) -> str | None:
        data = self.doc.get("data")
        if isinstance(data, Mapping) and data.get("source") in ("bundled", "bif"):
            name = data.get("dataset")
            return name if isinstance(name, str) else None
        return None

    @property
    def run_id(self) -> str | None:
        ledger = self.doc.get("ledger")
        if isinstance(ledger, Mapping) and isinstance(ledger.get("run_id"), str):
            return str(ledger["run_id"])
        return None

    @property
    def ledger_path(self) -> str | None:
        ledger = self.doc.get("ledger")
        if isinstance(ledger, Mapping) and isinstance(ledger.get("path"), str):
            return str(ledger["path"])
        return None

    @property
    def guarantee(self) -> Mapping[str, Any] | None:
        g = self.doc.get("guarantee")
        return g if isinstance(g, Mapping) else None

    def title(self) -> str:
        data = self.doc.get("data")
        source = "data"
        if isinstance(data, Mapping):
            source = str(data.get("dataset") or data.get("path") or "data")
            if "rows" in data:
                source += f" ({data['rows']} rows)"
        test = self.doc.get("test")
        what = self.algorithm + (f"/{test}" if test else "")
        return f"{what} on {source}"

    def truth(self) -> CPDAG | None:
        """The true CPDAG of a bundled network (or of a BIF file that still has the
        content the run recorded) whose nodes match, else ``None``."""
        name = self.dataset_name
        if name is None:
            return None
        from dpcg.datasets import load_bif_file, load_network

        data = self.doc.get("data")
        try:
            if isinstance(data, Mapping) and data.get("source") == "bif":
                net, file_id = load_bif_file(name)
                if file_id != data.get("id"):
                    return None  # the file was edited since the run
            else:
                net = load_network(name)
        except (DatasetNotFoundError, BifParseError):
            return None
        truth: CPDAG = net.true_cpdag()
        if set(truth.nodes) != set(self.cpdag.nodes):
            return None
        return truth


def load_result(path: str | os.PathLike[str]) -> Result:
    """Read ``path``; :class:`~dpcg.viz.ResultFileError` if it is missing or malformed."""
    where = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ResultFileError(
            f"result file {where} does not exist; write one with "
            "`dpcg discover ... --out result.json`"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultFileError(f"cannot read result file {where}: {exc}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultFileError(f"result file {where} is not valid JSON: {exc}") from None
    if not isinstance(doc, dict) or "nodes" not in doc or "edges" not in doc:
        raise ResultFileError(
            f"result file {where} is not a `dpcg discover` result (no 'nodes' and 'edges')"
        )
    try:
        cpdag = CPDAG.from_json(doc)
    except (GraphError, TypeError, ValueError) as exc:
        raise ResultFileError(f"result file {where}: the graph is malformed: {exc}") from None
    return Result(path=where, cpdag=cpdag, doc=doc)


class EdgeClass(Enum):
    """How an edge of the estimate relates to the true CPDAG."""

    DIRECTED = "directed"  # no truth known
    UNDIRECTED = "undirected"  # no truth known
    CORRECT = "correct"  # same adjacency and same marks as the truth
    REVERSED = "reversed"  # directed both ways round
    MISORIENTED = "misoriented"  # directed in one, undirected in the other
    EXTRA = "extra"  # in the estimate, not in the truth
    MISSING = "missing"  # in the truth, not in the estimate


@dataclass(frozen=True)
class EdgeView:
    """One edge to draw: ``(a, b)`` (an arc ``a -> b`` when ``directed``) and its class."""

    a: str
    b: str
    directed: bool
    kind: EdgeClass


def classify_edges(est: CPDAG, truth: CPDAG | None = None) -> list[EdgeView]:
    """Every edge to draw, in a stable order; missing edges come from the truth."""
    pos = {n: i for i, n in enumerate(est.nodes)}

    def key(pair: frozenset[str]) -> tuple[int, int]:
        a, b = sorted(pair, key=pos.__getitem__)
        return pos[a], pos[b]

    est_marks = est.edge_marks()
    views: list[EdgeView] = []

    def view(pair: frozenset[str], arc: tuple[str, str] | None, kind: EdgeClass) -> EdgeView:
        if arc is not None:
            return EdgeView(arc[0], arc[1], True, kind)
        a, b = sorted(pair, key=pos.__getitem__)
        return EdgeView(a, b, False, kind)

    if truth is None:
        for pair in sorted(est_marks, key=key):
            arc = est_marks[pair]
            kind = EdgeClass.DIRECTED if arc is not None else EdgeClass.UNDIRECTED
            views.append(view(pair, arc, kind))
        return views
    true_marks = truth.edge_marks()
    for pair in sorted(set(est_marks) | set(true_marks), key=key):
        if pair not in true_marks:
            views.append(view(pair, est_marks[pair], EdgeClass.EXTRA))
            continue
        if pair not in est_marks:
            views.append(view(pair, true_marks[pair], EdgeClass.MISSING))
            continue
        mine, theirs = est_marks[pair], true_marks[pair]
        if mine == theirs:
            kind = EdgeClass.CORRECT
        elif mine is not None and theirs is not None:
            kind = EdgeClass.REVERSED
        else:
            kind = EdgeClass.MISORIENTED
        views.append(view(pair, mine, kind))
    return views
