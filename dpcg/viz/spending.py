"""A ledger's spending per dataset over time, against its lifetime (``dpcg ledger plot``).

The ledger is read through :mod:`accounting.ledger`'s public API and **verified first**
(hash chain, every cost re-derived from its parameters, totals): a ledger that does not
verify is refused with :class:`~accounting.errors.LedgerCorruptError`, and the picture
says that it was verified (entries and head hash).

What is drawn per dataset is what counts against its lifetime: the cumulative budget
*reserved* by its runs (a run reserves its whole budget when it opens; see
``docs/privacy/ledger-composition.md``), as a step line over the runs' opening times,
with the lifetime epsilon as a horizontal line. Each run is a marker; a run whose
actual spending was below its reservation still counts in full.
"""

from __future__ import annotations

import io
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from fractions import Fraction
from pathlib import Path
from typing import Any

from accounting.errors import LedgerError
from accounting.ledger import Ledger, VerificationReport
from dpcg.errors import DpcgError
from dpcg.viz import require_matplotlib

__all__ = ["DatasetSpending", "LedgerSpending", "plot_spending", "read_spending"]


@dataclass(frozen=True)
class DatasetSpending:
    """One dataset: lifetime, and each run's (opening time, reserved epsilon, run id)."""

    dataset_id: str
    lifetime_epsilon: Fraction
    lifetime_delta: Fraction
    registered: datetime
    runs: tuple[tuple[datetime, Fraction, str], ...]
    run_deltas: tuple[Fraction, ...] = ()

    @property
    def reserved_epsilon(self) -> Fraction:
        return sum((eps for _, eps, _ in self.runs), Fraction(0))

    @property
    def reserved_delta(self) -> Fraction:
        return sum(self.run_deltas, Fraction(0))


@dataclass(frozen=True)
class LedgerSpending:
    path: str
    report: VerificationReport
    datasets: tuple[DatasetSpending, ...]
    #: the last entry's time, the step lines run up to it: the start of the newest run
    #: (every entry of a run carries its open time) or the newest registration
    last: datetime | None


def _fraction(value: object, what: str) -> Fraction:
    try:
        return Fraction(str(value))
    except (ValueError, ZeroDivisionError):
        raise DpcgError(f"ledger: {what} is not a number") from None


def _when(entry: Mapping[str, Any]) -> datetime:
    try:
        return datetime.fromisoformat(str(entry["timestamp"]))
    except (KeyError, ValueError):
        raise DpcgError(f"ledger: entry {entry.get('seq')!r} has no readable timestamp") \
            from None


def read_spending(path: str | os.PathLike[str]) -> LedgerSpending:
    """Verify the ledger at ``path`` and collect each dataset's reservations over time.

    Raises :class:`~accounting.errors.LedgerError` for a missing or foreign file and
    :class:`~accounting.errors.LedgerCorruptError` for a ledger that does not verify.
    """
    p = Path(path)
    if not p.is_file():
        raise LedgerError(f"{p} does not exist or is not a file; give a ledger (SQLite) file")
    with Ledger.open(p) as ledger:
        report = ledger.verify()
        report.raise_if_failed()
        entries = ledger.entries()
    registered: dict[str, tuple[datetime, Fraction, Fraction]] = {}
    runs: dict[str, list[tuple[datetime, Fraction, str]]] = {}
    deltas: dict[str, list[Fraction]] = {}
    for entry in entries:
        kind = entry.get("kind")
        data = entry.get("data") or {}
        dataset = str(entry.get("dataset_id"))
        if kind == "dataset":
            lifetime = data.get("lifetime", {})
            registered[dataset] = (_when(entry),
                                   _fraction(lifetime.get("epsilon"), "a lifetime epsilon"),
                                   _fraction(lifetime.get("delta", "0"), "a lifetime delta"))
            runs.setdefault(dataset, [])
        elif kind == "run-open":
            budget = data.get("budget", {})
            runs.setdefault(dataset, []).append(
                (_when(entry), _fraction(budget.get("epsilon"), "a run budget"),
                 str(entry.get("run_id"))))
            deltas.setdefault(dataset, []).append(
                _fraction(budget.get("delta", "0"), "a run budget"))
    datasets = tuple(
        DatasetSpending(dataset_id=d, lifetime_epsilon=eps, lifetime_delta=delta,
                        registered=when, runs=tuple(runs.get(d, [])),
                        run_deltas=tuple(deltas.get(d, [])))
        for d, (when, eps, delta) in registered.items()
    )
    last = _when(entries[-1]) if entries else None
    return LedgerSpending(path=str(p), report=report, datasets=datasets, last=last)


def plot_spending(path: str | os.PathLike[str], out: str | os.PathLike[str] | None = None,
                  *, fmt: str | None = None, dpi: int = 110) -> bytes:
    """Draw the spending of the ledger at ``path``; write it to ``out`` if given.

    The format is ``fmt`` or ``out``'s suffix (``png`` or ``svg``).
    """
    if fmt is None:
        fmt = Path(out).suffix.lower().lstrip(".") if out is not None else "png"
    if fmt not in {"png", "svg"}:
        raise DpcgError(f"cannot draw to format {fmt!r}: use a .png or .svg file name")
    spending = read_spending(path)  # verify before importing anything heavy
    mpl = require_matplotlib()
    figure_mod = __import__("matplotlib.figure", fromlist=["Figure"])
    dates_mod = __import__("matplotlib.dates", fromlist=["AutoDateLocator"])
    shown = spending.datasets or ()
    rows = max(1, len(shown))
    with mpl.rc_context({"svg.fonttype": "none", "svg.hashsalt": "dpcg"}):
        fig = figure_mod.Figure(figsize=(9.0, 1.2 + 2.6 * rows), dpi=dpi, layout="constrained")
        report = spending.report
        head = (report.head_hash or "(empty)")[:16]
        fig.suptitle(
            f"Privacy ledger {Path(spending.path).name}: VERIFIED ({report.entries} entries, "
            f"hash chain intact, costs re-derived; head {head}...)", fontsize=9.5)
        axes = fig.subplots(rows, 1, squeeze=False, sharex=True)[:, 0]
        if not shown:
            axes[0].text(0.5, 0.5, "no datasets registered in this ledger", ha="center",
                         va="center", transform=axes[0].transAxes)
            axes[0].set_axis_off()
        for ax, d in zip(axes, shown, strict=False):
            lifetime = float(d.lifetime_epsilon)
            times = [d.registered] + [t for t, _, _ in d.runs]
            totals = [0.0]
            running = Fraction(0)
            for _, eps, _ in d.runs:
                running += eps
                totals.append(float(running))
            marks = (times[1:], totals[1:])
            if spending.last is not None and spending.last > times[-1]:
                times.append(spending.last)
                totals.append(totals[-1])
            ax.step(times, totals, where="post", color="#3b6ea5", linewidth=1.8,
                    label="epsilon reserved by runs (cumulative)")
            ax.plot(*marks, "o", color="#3b6ea5", markersize=4, label="a run opens")
            ax.axhline(lifetime, color="#d62728", linestyle="--", linewidth=1.4,
                       label=f"lifetime epsilon {lifetime:g}")
            ax.set_ylim(0.0, max(lifetime, totals[-1]) * 1.15)
            ax.set_ylabel("epsilon")
            used = float(d.reserved_epsilon / d.lifetime_epsilon) if d.lifetime_epsilon else 0.0
            used_delta = (f"{float(d.reserved_delta / d.lifetime_delta):.0%}"
                          if d.lifetime_delta else "n/a")
            ax.set_title(
                f"dataset {d.dataset_id}: {len(d.runs)} run(s); reserved {used:.0%} of the "
                f"lifetime epsilon, {used_delta} of the lifetime delta "
                f"{float(d.lifetime_delta):.3g}", fontsize=9, loc="left")
            locator = dates_mod.AutoDateLocator()
            ax.xaxis.set_major_locator(locator)
            ax.xaxis.set_major_formatter(dates_mod.ConciseDateFormatter(locator))
            ax.grid(alpha=0.3)
        if shown:
            handles, labels = axes[0].get_legend_handles_labels()
            labels = ["epsilon reserved by runs (cumulative)", "a run opens",
                      "the dataset's lifetime epsilon"]
            fig.legend(handles, labels, loc="outside lower center", ncol=3, fontsize=8,
                       frameon=False)
        buffer = io.BytesIO()
        metadata: dict[str, Any] = {"Date": None} if fmt == "svg" else {}
        fig.savefig(buffer, format=fmt, metadata=metadata)
    data = buffer.getvalue()
    if out is not None:
        try:
            Path(out).write_bytes(data)
        except OSError as exc:
            raise DpcgError(f"cannot write {out}: {exc.strerror or exc}") from None
    return data
