"""What every discovery run returns: :class:`DiscoveryResult`, and THE shape of
``result.json`` (:func:`result_document`)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import networkx as nx

    from dpcg.graph import CPDAG
    from dpcg.pc.engine import PCResult

__all__ = ["DiscoveryResult", "result_document"]


def _json_default(obj: object) -> Any:
    if hasattr(obj, "item"):  # numpy scalar
        return obj.item()
    if isinstance(obj, set | frozenset | tuple):
        return list(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def result_document(*, algorithm: str, test: str, alpha: float, max_depth: int | None,
                    data: Mapping[str, Any], pc: PCResult, extra: Mapping[str, Any],
                    truth: CPDAG | None = None, include_tests: bool = False,
                    load_seconds: float | None = None) -> dict[str, Any]:
    """THE shape of ``result.json`` (``dpcg discover --out``) and of
    :meth:`DiscoveryResult.to_json`: run description, graph, tests, timing, metrics
    against ``truth`` when known, and the private keys (``extra``; ``privacy: null`` for
    non-private PC)."""
    from dpcg.metrics import compare

    doc: dict[str, Any] = {"algorithm": algorithm, "test": test, "alpha": alpha,
                           "max_depth": max_depth, "data": dict(data)}
    doc.update(pc.to_json(include_tests=include_tests))
    if extra.get("privacy") is not None:
        # Wall-clock timings vary with the data: a side channel, never in the result of
        # a private run (only in ``dpcg discover --diagnostics FILE``, marked as not
        # protected; docs/privacy/threat-model.md).
        doc.pop("timing", None)
    elif load_seconds is not None:
        doc["timing"]["load_seconds"] = load_seconds
    if truth is not None:
        doc["metrics"] = compare(pc.cpdag, truth)
    doc.update(extra)
    # One JSON round trip: numpy scalars and tuples become plain JSON values.
    out: dict[str, Any] = json.loads(json.dumps(doc, default=_json_default))
    return out


@dataclass(frozen=True)
class DiscoveryResult:
    """What :func:`discover` returns, for every algorithm."""

    #: The learned CPDAG.
    cpdag: CPDAG
    #: The privacy guarantee of the run (``None`` for non-private ``pc``).
    guarantee: dict[str, Any] | None
    #: Where the run is recorded: ``{"path", "run_id", "dataset_id", ...}``, or ``None``
    #: (non-private, or ``ledger=NO_LEDGER``).
    ledger: dict[str, Any] | None
    #: The engine's result (tests, sepsets, timing).
    pc: PCResult
    document: dict[str, Any]
    #: Seconds spent reading the data (a side channel for a private run: never in its
    #: document; ``dpcg discover --diagnostics`` only).
    load_seconds: float = 0.0

    @property
    def graph(self) -> nx.DiGraph:
        """The CPDAG as a ``networkx.DiGraph`` (an undirected edge is both arcs; each arc's
        ``kind`` is ``"directed"`` or ``"undirected"``)."""
        return self.cpdag.to_networkx()

    @property
    def edges(self) -> list[tuple[str, str, str]]:
        """Every edge once: ``(a, b, "directed")`` for ``a -> b``, ``(a, b,
        "undirected")`` for ``a - b`` (``graph.edges`` lists an undirected edge as both
        arcs)."""
        doc = self.document["edges"]
        return ([(str(a), str(b), "directed") for a, b in doc["directed"]]
                + [(str(a), str(b), "undirected") for a, b in doc["undirected"]])

    @property
    def algorithm(self) -> str:
        return str(self.document["algorithm"])

    def to_json(self) -> dict[str, Any]:
        """The document ``dpcg discover`` writes to ``result.json`` (a fresh copy)."""
        out: dict[str, Any] = json.loads(json.dumps(self.document))
        return out

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write :meth:`to_json` to ``path`` (readable by ``dpcg plot``/``dpcg report``)."""
        target = Path(path)
        target.write_text(json.dumps(self.document, indent=2) + "\n")
        return target

    def plot(self, path: str | os.PathLike[str] | None = None, *,
             truth: CPDAG | None = None) -> bytes:
        """Draw the CPDAG (needs the ``plot`` extra: matplotlib). With ``path`` (``.svg``
        or ``.png``) the picture is written there; the SVG/PNG bytes are returned."""
        from dpcg.viz.graph import draw_cpdag, write_picture

        if path is None:
            return draw_cpdag(self.cpdag, truth, title=self.algorithm)
        write_picture(self.cpdag, path, truth, title=self.algorithm)
        return Path(path).read_bytes()
