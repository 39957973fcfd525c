"""Markdown (+ PNG plots) report of an audit suite run.

matplotlib is the optional ``report`` extra: it is imported lazily and the plots are
skipped, with a note in the report, when it is missing.
"""

from __future__ import annotations

import math
import platform
from pathlib import Path

from audits.suite import Row, SuiteResult

SECTIONS = (
    ("mechanism", "Mechanisms (must pass: empirical lower bound <= declared eps)"),
    ("algorithm", "Algorithms (must pass)"),
    ("statistic", "Statistics: sensitivity audits (must find no violation)"),
    ("mutant", "Mutants (must be flagged)"),
    ("accountant", "Accounting backend: metamorphic checks"),
)


def _num(x: float, digits: int = 4) -> str:
    if isinstance(x, float) and math.isnan(x):
        return "-"
    if math.isinf(x):
        return "inf"
    return f"{x:.{digits}g}"


def _verdict(r: Row) -> str:
    if r.expect_flag:
        return "FLAGGED" if r.flagged else "**MISSED**"
    return "pass" if not r.flagged else "**FAIL**"


def _table(rows: list[Row]) -> list[str]:
    out = [
        "| item | check | declared | measured | confidence | tightness | samples | result |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        measured = _num(r.measured)
        if r.kind == "empirical":
            measured = f"eps_lb = {measured}"
        elif r.kind == "exact":
            measured = f"eps = {measured}"
        elif r.kind == "sensitivity":
            measured = f"max gap = {measured}"
        out.append(
            f"| {r.name} | {r.kind} | {r.declared} | {measured} | {r.confidence} | "
            f"{_num(r.tightness, 3)} | {r.samples:,} | {_verdict(r)} |"
        )
    return out


def _plots(result: SuiteResult, out_dir: Path, stem: str) -> tuple[list[str], str | None]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return [], "matplotlib is not installed (optional 'report' extra): plots skipped."
    plot_dir = out_dir / stem
    plot_dir.mkdir(parents=True, exist_ok=True)
    files: list[str] = []

    emp = [r for r in result.rows if r.kind in ("empirical", "exact")
           and r.section in ("mechanism", "mutant", "algorithm")]
    if emp:
        fig, ax = plt.subplots(figsize=(9, 0.32 * len(emp) + 1.5))
        names = [f"{r.name} [{r.kind}]" for r in emp]
        vals = [min(r.tightness, 4.0) for r in emp]
        colours = ["tab:red" if r.expect_flag else "tab:blue" for r in emp]
        ax.barh(range(len(emp)), vals, color=colours)
        ax.axvline(1.0, color="black", linestyle="--", linewidth=1)
        ax.set_yticks(range(len(emp)))
        ax.set_yticklabels(names, fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel("eps lower bound / declared eps (capped at 4; red = mutant)")
        ax.set_title("Empirical and exact privacy loss relative to the declared eps")
        fig.tight_layout()
        path = plot_dir / "privacy-loss.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        files.append(f"{stem}/privacy-loss.png")

    sens = [r for r in result.rows if r.kind == "sensitivity"]
    if sens:
        fig, ax = plt.subplots(figsize=(8, 0.35 * len(sens) + 1.5))
        vals = [min(r.tightness, 4.0) if not math.isnan(r.tightness) else 0.0 for r in sens]
        colours = ["tab:red" if r.expect_flag else "tab:green" for r in sens]
        ax.barh(range(len(sens)), vals, color=colours)
        ax.axvline(1.0, color="black", linestyle="--", linewidth=1)
        ax.set_yticks(range(len(sens)))
        ax.set_yticklabels([r.name for r in sens], fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("max observed |f(D)-f(D')| / declared bound (capped at 4; red = mutant)")
        ax.set_title("Sensitivity tightness")
        fig.tight_layout()
        path = plot_dir / "sensitivity.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        files.append(f"{stem}/sensitivity.png")
    return files, None


REAL_CODE = (
    "Which checks run against the REAL code: every *Mechanisms* row samples the real "
    "primitives of `accounting.mechanisms` (declared eps = the epsilon their `cost()` "
    "charges; the Gaussian rows: the smaller of the plan's eps and the zCDP conversion of "
    "the charged rho), except the rows named *reference ...* (correct counterparts inside "
    "`audits.mutants`); the *Algorithms* rows run `dpcg.discover` (the one public function)"
    " and the private CI tests end to end; every *Statistics* row evaluates the registered "
    "statistic and bound of `dpcg.stats.registry` (and PrivGCM's `dpcg.citests.gcm`); the "
    "*Accounting backend* rows check dp-accounting, `accounting.planning`, "
    "`accounting.costs` and the real `PrivacyFilter`/`Session` (`audits/filter_audit.py`). "
    "The *Mutants* section audits deliberately broken COPIES (`audits/mutants.py`, the "
    "Priv-PC and scikit-learn mutants): it shows that the auditors can see each defect. "
    "Mutation testing of the real source (below) shows that the checks catch the same "
    "defects in the code that runs."
)


def _real_code_section(plot_dir: Path) -> list[str]:
    """The mutation-testing table of the real code (``dpcg audit --mutate --out
    <plot_dir>`` writes ``mutation-table.md`` there; an offline run)."""
    lines = ["## Real code vs copies; mutation testing of the real code", "", REAL_CODE, ""]
    table = plot_dir / "mutation-table.md"
    if table.exists():
        lines += [
            f"Mutation table (`dpcg audit --mutate --out <out>/{plot_dir.name}`, i.e. "
            "`python -m audits.mutate`): each mutant is one line of the real source "
            "changed in a temporary copy of the tree; the checks of its file run against "
            "the copy in order (audit sections first, then property tests, fail fast); "
            "*killed by* is the first check that failed. Catalogue: "
            "`audits/mutate/catalogue.py`; method: `docs/audits.md`.",
            "", table.read_text().strip(), ""]
    else:
        lines += ["_No mutation table: run `dpcg audit --mutate --out "
                  f"<out>/{plot_dir.name}` (offline, tens of minutes)._", ""]
    return lines


def write_report(result: SuiteResult, out_dir: Path, name: str = "audit-report") -> Path:
    """Write ``out_dir/<name>.md`` and its plots under ``out_dir/<name>/``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    plots, plot_note = _plots(result, out_dir, name)
    n_bad = sum(not r.ok for r in result.rows)
    lines = [
        f"# Privacy audit report ({result.profile} profile)",
        "",
        f"Overall: **{'PASS' if result.ok else 'FAIL'}** ({len(result.rows)} checks, "
        f"{n_bad} unexpected). Run time {result.seconds:.0f} s wall clock, "
        f"{result.cpu_seconds:.0f} s CPU, on {platform.machine()} "
        f"(Python {platform.python_version()}). Family-wise level alpha = {result.alpha:g} "
        f"over {len(result.empirical)} empirical audits (Bonferroni: each at "
        f"{result.alpha / max(len(result.empirical), 1):.2g}).",
        "",
        "How to read it: an *empirical* row reports `eps_lb = ln((p_lo(D) - delta) / "
        "p_hi(D'))` from one-sided Clopper-Pearson bounds on a fresh split, for the event "
        "chosen on a separate selection split; it is a valid lower bound on the true "
        "privacy loss with the stated confidence, so `eps_lb > declared eps` refutes the "
        "declared guarantee. *Tightness* is `eps_lb / eps` (empirical, exact) or "
        "`max gap / bound` (sensitivity). An *exact* row is the max log-ratio of the "
        "output pmf computed by quadrature. A mutant is FLAGGED when its declared "
        "guarantee is refuted. Method: `docs/privacy/audits-method.md`; catalogue: "
        "`docs/audits.md`.",
        "",
    ]
    if plot_note:
        lines += [f"_Note: {plot_note}_", ""]
    for p in plots:
        lines += [f"![{p}]({p})", ""]
    for key, title in SECTIONS:
        rows = [r for r in result.rows if r.section == key]
        if not rows:
            continue
        lines += [f"## {title}", ""]
        lines += _table(rows)
        lines += ["", "<details><summary>details</summary>", ""]
        for r in rows:
            lines.append(f"* **{r.name}** ({r.kind}, {r.seconds:.1f} s): {r.detail}")
        lines += ["", "</details>", ""]
    lines += _real_code_section(out_dir / name)
    if result.notes:
        lines += ["## Notes", ""] + [f"* {n}" for n in result.notes] + [""]
    path = out_dir / f"{name}.md"
    path.write_text("\n".join(lines))
    return path
