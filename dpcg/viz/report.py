"""One self-contained HTML page about a run, for a privacy reviewer (``dpcg report``).

The page holds the graph (an inline SVG), the privacy guarantee, the plan, every ledger
entry of the run (found by the run id in ``result.json``), the ledger's verification
status, accuracy metrics when the truth is known, and relative links to the proof notes
in ``docs/privacy/`` of every mechanism the run used and of its algorithm.

It loads nothing: inline CSS, no script, no external font, image or style sheet, and a
Content-Security-Policy that forbids fetching anything. Every piece of text from the
result or the ledger is escaped with :func:`html.escape`; the SVG comes from matplotlib,
which escapes its text as XML.
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from accounting.errors import AccountingError
from accounting.ledger import Ledger, VerificationReport
from dpcg.errors import DpcgError
from dpcg.viz.result import Result, classify_edges, load_result

__all__ = ["LedgerSection", "proof_notes", "read_ledger_section", "render_report",
           "write_report"]

#: Proof notes every private run relies on, besides those of its mechanisms.
GENERAL_NOTES = ("costs-and-filter", "ledger-composition", "relations", "floating-point")

CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
       "base-uri 'none'; form-action 'none'")

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0;
       color: #1d1d1d; background: #fafaf7; line-height: 1.45; }
main { max-width: 1100px; margin: 0 auto; padding: 1.2rem 1.5rem 3rem; }
h1 { font-size: 1.45rem; margin: 0.2rem 0 0.3rem; }
h2 { font-size: 1.15rem; margin: 1.8rem 0 0.5rem; border-bottom: 1px solid #ddd; }
.sub { color: #555; margin: 0 0 1rem; }
.card { background: #fff; border: 1px solid #ddd; border-radius: 6px; padding: 0.8rem 1rem; }
.guarantee { font-size: 1.05rem; border-left: 5px solid #3b6ea5; }
.ok { color: #17692b; font-weight: 600; }
.bad { color: #b3261e; font-weight: 600; }
.warn { border-left: 5px solid #b3261e; }
table { border-collapse: collapse; width: 100%; font-size: 0.86rem; background: #fff; }
th, td { border: 1px solid #ddd; padding: 0.25rem 0.45rem; text-align: left;
         vertical-align: top; }
th { background: #f0f0ea; }
table.kv { width: auto; min-width: 22rem; }
.grid { display: flex; flex-wrap: wrap; gap: 0 2rem; align-items: flex-start; }
td.num { font-variant-numeric: tabular-nums; text-align: right; }
code, .mono { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 0.82rem;
              word-break: break-all; }
figure { margin: 0; }
figure svg { width: 100%; height: auto; background: #fff; border: 1px solid #ddd; }
figcaption { color: #555; font-size: 0.85rem; margin-top: 0.3rem; }
.scroll { max-height: 32rem; overflow: auto; }
"""


@dataclass(frozen=True)
class LedgerSection:
    """What the report shows of a ledger: verification and the run's entries."""

    path: str
    report: VerificationReport | None
    error: str | None
    entries: tuple[Mapping[str, Any], ...]


def read_ledger_section(path: str | os.PathLike[str], run_id: str | None,
                        dataset_id: str | None) -> LedgerSection:
    """Verify the ledger and collect the run's entries (and its dataset's registration).

    A ledger that does not verify is still reported (loudly): the reviewer must see it.
    A file that is not a ledger raises :class:`~accounting.errors.LedgerError`.
    """
    p = Path(path)
    if not p.is_file():
        from accounting.errors import LedgerError

        raise LedgerError(f"ledger {p} does not exist or is not a file")
    with Ledger.open(p) as ledger:
        report = ledger.verify()
        try:
            entries = ledger.entries()
            error = None
        except AccountingError as exc:
            entries = []
            error = str(exc)
    if run_id is not None:
        wanted = [e for e in entries
                  if e.get("run_id") == run_id
                  or (e.get("kind") == "dataset" and dataset_id is not None
                      and e.get("dataset_id") == dataset_id)]
    else:
        wanted = []
    return LedgerSection(path=str(p), report=report, error=error, entries=tuple(wanted))


def proof_notes(mechanisms: Iterable[str], algorithm: str | None,
                docs: Path | None) -> list[tuple[str, str, bool]]:
    """``(name, relative file name, exists)`` for the run's proof notes."""
    names: list[str] = []
    if algorithm:
        names.append(f"algorithm-{algorithm}")
    names.extend(sorted(set(mechanisms)))
    names.extend(GENERAL_NOTES)
    out: list[tuple[str, str, bool]] = []
    seen: set[str] = set()
    for name in names:
        if name in seen or not name.replace("-", "").replace("_", "").isalnum():
            continue
        seen.add(name)
        exists = docs is not None and (docs / f"{name}.md").is_file()
        out.append((name, f"{name}.md", exists))
    return out


def _docs_dir() -> Path | None:
    """``docs/privacy`` of this checkout (beside the ``dpcg`` package), if present."""
    import dpcg

    candidate = Path(dpcg.__file__).resolve().parent.parent / "docs" / "privacy"
    return candidate if candidate.is_dir() else None


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _fmt(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, str) and "/" in value:
        try:
            return f"{float(Fraction(value)):.6g}"
        except (ValueError, ZeroDivisionError):
            return value
    if isinstance(value, list):
        return ", ".join(_fmt(v) for v in value) or "—"
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    return "—" if value is None else str(value)


def _cell(value: object) -> str:
    """A table cell's HTML: a nested mapping as a nested table, never raw JSON."""
    if isinstance(value, Mapping):
        return _kv_table(value)
    return _e(_fmt(value))


def _kv_table(data: Mapping[str, Any]) -> str:
    rows = "".join(f"<tr><th>{_e(k)}</th><td>{_cell(v)}</td></tr>" for k, v in data.items())
    return f'<table class="kv">{rows}</table>'


def _note_claim(path: Path) -> str:
    """The opening of a proof note (its title and first paragraphs, up to the second
    heading), so that the report says what each note claims even where the link cannot
    be followed."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[str] = []
    for i, line in enumerate(lines):
        if line.startswith("#") and i > 0:
            break
        out.append(line)
    return "\n".join(out).strip()


def _note_item(name: str, file: str, exists: bool, base: str, docs: Path | None) -> str:
    """One proof note: a relative link and its claim, embedded, when the note is in this
    checkout; its place in the source distribution otherwise (never a dead link)."""
    if docs is None or not exists:
        return (f"<li>{_e(name)}: <code>docs/privacy/{_e(file)}</code> of the dpcg source "
                "distribution</li>")
    claim = _note_claim(docs / file)
    return (f'<li><a href="{_e(base + "/" + file)}">{_e(name)}</a>'
            f"<details><summary>what it claims</summary><pre>{_e(claim)}</pre></details>"
            "</li>")


def _guarantee_html(result: Result) -> str:
    g = result.guarantee
    if g is None:
        return ('<div class="card guarantee" id="guarantee"><strong>No privacy guarantee.'
                "</strong> This was a non-private run: the graph was computed from the exact "
                "data and must not be released from private data.</div>")
    eps, delta = g.get("epsilon"), g.get("delta")
    relation, rule = g.get("relation", "?"), g.get("rule", "?")
    text = (f"({_fmt(eps)}, {_fmt(delta)})-differential privacy under the "
            f"{relation} neighbouring relation, composed with the {rule} rule")
    return (f'<div class="card guarantee" id="guarantee"><strong>Guarantee:</strong> '
            f"{_e(text)}.</div>")


def _ledger_html(section: LedgerSection | None, run_id: str | None) -> str:
    if section is None:
        if run_id is None:
            return '<p class="card">This run was not recorded in a ledger.</p>'
        return (f'<p class="card warn">This run was recorded as run <code>{_e(run_id)}</code>'
                " but no ledger file was given or found: pass <code>--ledger FILE</code>."
                "</p>")
    parts: list[str] = []
    report = section.report
    if report is not None and report.ok:
        parts.append(
            f'<p class="card" id="verify"><span class="ok">VERIFIED</span>: ledger '
            f"<code>{_e(section.path)}</code>, {report.entries} entries; hash chain intact, "
            "every cost re-derived from its parameters, totals and budgets consistent. Head "
            f"hash <code>{_e(report.head_hash or '(empty)')}</code>.</p>")
    else:
        problems = "" if report is None else "".join(
            f"<li>{_e(p)}</li>" for p in report.problems[:20])
        parts.append(
            f'<div class="card warn" id="verify"><span class="bad">DOES NOT VERIFY</span>: '
            f"ledger <code>{_e(section.path)}</code>. Do not trust its totals."
            f"<ul>{problems}</ul></div>")
    if section.error:
        parts.append(f'<p class="card warn">Entries unreadable: {_e(section.error)}</p>')
    if run_id is None:
        parts.append("<p>The result names no run id.</p>")
        return "".join(parts)
    if not section.entries:
        parts.append(f'<p class="card warn">No entry of run <code>{_e(run_id)}</code> in '
                     "this ledger.</p>")
        return "".join(parts)
    head = ("<tr><th>seq</th><th>kind</th><th>mechanism</th><th>parameters</th>"
            "<th>cost</th><th>purpose</th><th title='every entry of a run carries the time the "
            "run started; the ledger records no duration'>time (run start)</th>"
            "<th>hash</th></tr>")
    rows = []
    for entry in section.entries:
        cost = entry.get("cost")
        cost_text = "" if not isinstance(cost, Mapping) else ", ".join(
            f"{k}={_fmt(v)}" for k, v in sorted(cost.items()) if v is not None)
        params = entry.get("params")
        if params is None and entry.get("kind") != "mechanism":
            params = entry.get("data")
        rows.append(
            f"<tr><td class='num'>{_e(entry.get('seq'))}</td><td>{_e(entry.get('kind'))}</td>"
            f"<td>{_e(_fmt(entry.get('mechanism')))}</td>"
            f"<td class='mono'>{_e(_fmt(params))}</td><td class='mono'>{_e(cost_text)}</td>"
            f"<td>{_e(entry.get('purpose') or '')}</td><td>{_e(entry.get('timestamp'))}</td>"
            f"<td class='mono'>{_e(str(entry.get('hash', ''))[:12])}</td></tr>")
    parts.append(f"<p>{len(section.entries)} entries of run <code>{_e(run_id)}</code> "
                 "(and its dataset's registration), in ledger order:</p>"
                 f'<div class="scroll"><table id="entries">{head}{"".join(rows)}</table></div>')
    return "".join(parts)


def render_report(result: Result, section: LedgerSection | None = None, *,
                  svg: str | None = None, docs_href: str = "docs/privacy",
                  docs: Path | None = None) -> str:
    """The report page as HTML text."""
    truth = result.truth()
    views = classify_edges(result.cpdag, truth)
    if svg is None:
        from dpcg.viz.graph import draw_cpdag, svg_for_html

        svg = svg_for_html(draw_cpdag(result.cpdag, truth, fmt="svg",
                                      scale=0.75 if len(result.cpdag.nodes) > 12 else 1.0))
    counts: dict[str, int] = {}
    for v in views:
        counts[v.kind.value] = counts.get(v.kind.value, 0) + 1
    caption = ", ".join(f"{n} {k}" for k, n in counts.items()) or "no edges"
    title = result.title()
    doc = result.doc
    mechanisms = [str(e.get("mechanism")) for e in (section.entries if section else ())
                  if e.get("kind") == "mechanism" and e.get("mechanism")]
    if not mechanisms and isinstance(doc.get("mechanisms"), Mapping):
        mechanisms = [str(k) for k in doc["mechanisms"]]
    notes = proof_notes(mechanisms, result.algorithm if result.guarantee else None, docs)
    base = docs_href.rstrip("/")
    note_items = "".join(_note_item(name, f, exists, base, docs) for name, f, exists in notes)
    sections = [
        f"<h1>Run report: {_e(title)}</h1>",
        f'<p class="sub">Result file <code>{_e(result.path)}</code>'
        + (f", ledger run <code>{_e(result.run_id)}</code>" if result.run_id else "")
        + "</p>",
        _guarantee_html(result),
        "<h2>Graph</h2>",
        f'<figure id="graph">{svg}<figcaption>{_e(caption)}. Arrowheads mark directed edges'
        + ("; colours and line styles compare with the true CPDAG of the bundled network."
           if truth is not None else ".") + "</figcaption></figure>",
    ]
    facts: list[str] = []
    if isinstance(doc.get("metrics"), Mapping):
        facts.append("<section><h2>Accuracy against the true CPDAG</h2>"
                     f"{_kv_table(doc['metrics'])}</section>")
    if isinstance(doc.get("plan"), Mapping):
        facts.append(f'<section id="plan"><h2>Plan (public)</h2>{_kv_table(doc["plan"])}'
                     "</section>")
    spent = doc.get("spent")
    if isinstance(spent, Mapping):
        shown = {k: v for k, v in spent.items() if k != "exact"}
        facts.append(f"<section><h2>Spent by the run</h2>{_kv_table(shown)}</section>")
    run_info = {k: doc[k] for k in ("algorithm", "test", "alpha", "max_depth") if k in doc}
    if isinstance(doc.get("data"), Mapping):
        run_info.update({f"data.{k}": v for k, v in doc["data"].items()})
    if run_info:
        facts.append(f"<section><h2>Run</h2>{_kv_table(run_info)}</section>")
    if facts:
        sections.append(f'<div class="grid">{"".join(facts)}</div>')
    sections += ["<h2>Ledger</h2>", _ledger_html(section, result.run_id)]
    if result.guarantee is not None or mechanisms:
        sections += ["<h2>Proof notes</h2>",
                     f'<ul id="proofs">{note_items}</ul>']
    body = "\n".join(sections)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f'<meta http-equiv="Content-Security-Policy" content="{_e(CSP)}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>dpcg report: {_e(title)}</title>\n<style>{CSS}</style>\n</head>\n"
        f"<body>\n<main>\n{body}\n</main>\n</body>\n</html>\n"
    )


def write_report(result_path: str | os.PathLike[str], out: str | os.PathLike[str],
                 ledger: str | os.PathLike[str] | None = None) -> str:
    """Build the report of ``result_path`` and write it to ``out``; returns the HTML.

    ``ledger`` defaults to the ledger path recorded in the result (if it exists).
    """
    result = load_result(result_path)
    ledger_path: str | os.PathLike[str] | None = ledger
    if ledger_path is None and result.ledger_path and Path(result.ledger_path).is_file():
        ledger_path = result.ledger_path
    dataset_id = None
    info = result.doc.get("ledger")
    if isinstance(info, Mapping) and isinstance(info.get("dataset_id"), str):
        dataset_id = str(info["dataset_id"])
    section = (read_ledger_section(ledger_path, result.run_id, dataset_id)
               if ledger_path is not None else None)
    docs = _docs_dir()
    out_dir = Path(out).resolve().parent
    href = os.path.relpath(docs, out_dir) if docs is not None else "docs/privacy"
    page = render_report(result, section, docs_href=Path(href).as_posix(), docs=docs)
    try:
        Path(out).write_text(page, encoding="utf-8")
    except OSError as exc:
        raise DpcgError(f"cannot write {out}: {exc.strerror or exc}") from None
    return page

