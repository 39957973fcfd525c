"""Run the mutants against a temporary copy of the repository tree.

The copy is made once (sources, tests, docs needed by tests; no ``.git``, caches or
ledgers); each mutant is written into it, its checks run in subprocesses with
``PYTHONPATH`` = the copy and ``PYTHONDONTWRITEBYTECODE=1`` (no stale bytecode can
hide a mutation), and the original file is restored before the next mutant. The
working tree is never written.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from audits.mutate.catalogue import MUTANTS, Mutant, apply, locate

REPO = Path(__file__).resolve().parents[2]
#: per-check time limit (a mutant that makes a check hang is killed by the timeout)
CHECK_TIMEOUT = 300.0

_IGNORE = shutil.ignore_patterns(
    ".git", ".venv", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache",
    "*.sqlite", "*.sqlite-*", "*.pyc", ".bench", ".hypothesis", "audit-report",
    "node_modules",
)
# ``benchmarks/`` is copied: test modules import its designs (tests/continuous imports
# benchmarks.cov_pc), and a check that cannot import is a false kill.


@dataclass
class Outcome:
    mutant: Mutant
    line: int
    killed: bool
    killed_by: str
    check: str
    seconds: float
    checks_run: int


def copy_tree(dest: Path, src: Path = REPO) -> Path:
    """Copy the repository's sources to ``dest/repo`` (no VCS data or caches)."""
    root = dest / "repo"
    shutil.copytree(src, root, ignore=_IGNORE, symlinks=True)
    return root


def check_anchors(root: Path = REPO, mutants: Iterable[Mutant] = MUTANTS) -> dict[str, int]:
    """1-based line of every mutant in the tree at ``root``; raises AnchorError."""
    return {m.id: locate((root / m.file).read_text(), m) + 1 for m in mutants}


def _env(root: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(PYTHONPATH=str(root), PYTHONDONTWRITEBYTECODE="1", OPENBLAS_NUM_THREADS="1",
               OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONHASHSEED="0")
    return env


def _command(check: str) -> list[str]:
    kind, _, arg = check.partition(":")
    if kind == "audit":
        return [sys.executable, "-m", "audits.mutate.checks", arg]
    if kind == "pytest":
        return [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                "--no-header", *shlex.split(arg)]
    raise ValueError(f"unknown check {check!r}")


_FAILED = re.compile(r"^(FAILED|ERROR) (\S+)", re.MULTILINE)


def run_check(root: Path, check: str, timeout: float = CHECK_TIMEOUT) -> tuple[bool, str]:
    """``(passed, what failed)`` for one check against the tree at ``root``."""
    try:
        proc = subprocess.run(_command(check), cwd=root, env=_env(root), capture_output=True,
                              text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return False, f"{check} (timed out after {timeout:.0f} s)"
    if proc.returncode == 0:
        return True, ""
    out = proc.stdout + "\n" + proc.stderr
    m = re.search(r"^KILLED-BY: (.*)$", out, re.MULTILINE)
    if m:
        return False, m.group(1).strip()
    f = _FAILED.search(out)
    if f:
        return False, f"pytest {f.group(2)}"
    tail = [ln for ln in out.strip().splitlines() if ln.strip()][-1:] or ["no output"]
    return False, f"{check} (exit {proc.returncode}: {tail[0][:160]})"


def run_mutant(root: Path, mutant: Mutant, checks: Sequence[str] | None = None) -> Outcome:
    """Apply ``mutant`` to the copy at ``root``, run its checks until one fails, restore."""
    t0 = time.perf_counter()
    line, original = apply(root, mutant)
    path = root / mutant.file
    try:
        run = 0
        for check in checks if checks is not None else mutant.checks():
            run += 1
            ok, what = run_check(root, check)
            if not ok:
                return Outcome(mutant, line, True, what, check, time.perf_counter() - t0, run)
        return Outcome(mutant, line, False, "SURVIVED", "", time.perf_counter() - t0, run)
    finally:
        path.write_text(original)


def baseline(root: Path, mutants: Sequence[Mutant]) -> list[str]:
    """Run every distinct check once on the unmutated copy; returns the failures (a
    check that fails without a mutation cannot be credited with a kill)."""
    failures = []
    for check in dict.fromkeys(c for m in mutants for c in m.checks()):
        ok, what = run_check(root, check)
        if not ok:
            failures.append(f"{check}: {what}")
    return failures


def run_all(mutants: Sequence[Mutant] = MUTANTS, *, with_baseline: bool = True,
            progress: Callable[[str], None] | None = None,
            workdir: Path | None = None) -> tuple[list[Outcome], list[str], float]:
    """Run ``mutants``; returns ``(outcomes, baseline failures, baseline seconds)``."""
    say = progress if progress is not None else (lambda _m: None)
    check_anchors(REPO, mutants)  # fail loudly before any work
    with tempfile.TemporaryDirectory(prefix="dpcg-mutate-", dir=workdir) as tmp:
        root = copy_tree(Path(tmp))
        base_fail: list[str] = []
        t0 = time.perf_counter()
        if with_baseline:
            say("baseline: every check on the unmutated copy")
            base_fail = baseline(root, mutants)
            if base_fail:
                return [], base_fail, time.perf_counter() - t0
        base_s = time.perf_counter() - t0
        out = []
        for j, m in enumerate(mutants):
            o = run_mutant(root, m)
            say(f"[{j + 1}/{len(mutants)}] {m.id}: "
                f"{'killed by ' + o.killed_by if o.killed else 'SURVIVED'} ({o.seconds:.1f} s)")
            out.append(o)
        return out, base_fail, base_s


def table(outcomes: Sequence[Outcome]) -> str:
    """The Markdown mutation table."""
    rows = ["| # | mutant | file:line | what it breaks | killed by | check | s |",
            "|---|---|---|---|---|---|---|"]
    for j, o in enumerate(outcomes, 1):
        verdict = o.killed_by if o.killed else "**SURVIVED**"
        rows.append(f"| {j} | `{o.mutant.id}` | `{o.mutant.file}:{o.line}` | {o.mutant.breaks} "
                    f"| {verdict} | `{o.check or '-'}` | {o.seconds:.1f} |")
    return "\n".join(rows)
