"""``dpcg bench process``: the WHOLE process of a non-private run vs causal-learn's.

What a user waits for: start-up, imports, reading the table, PC-stable with G^2 and
writing the result, each in a fresh Python process, on the same sample:

* dpcg: ``python -m dpcg discover --data FILE.csv --schema FILE.schema.json --test g2
  --alpha A --quiet --out result.json``;
* causal-learn (the optional ``oracle`` extra): a fresh process that reads the same CSV
  with ``numpy.loadtxt`` and calls ``pc(data, A, "gsq")`` (its defaults: stable PC).

The table is the network's sample as integer codes, rows x columns (the form
causal-learn reads; dpcg reads it with a schema whose categories are the codes).
Median of ``--repeats`` runs each, alternating the two sides.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dpcg.errors import DpcgError

#: causal-learn's whole process: read the CSV, run PC with G^2 (argv: csv, alpha).
CAUSALLEARN_SCRIPT = """\
import sys
import numpy as np
from causallearn.search.ConstraintBased.PC import pc
data = np.loadtxt(sys.argv[1], delimiter=",", skiprows=1, dtype=np.int64)
cg = pc(data, float(sys.argv[2]), "gsq", show_progress=False)
print(int((cg.G.graph != 0).sum()))
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "process",
        help="whole process (start-up to result) of non-private PC vs causal-learn",
        description="Time the whole process of `dpcg discover` (PC-stable + G^2) against "
                    "a fresh causal-learn process running pc(data, alpha, 'gsq') on the "
                    "same CSV; median of --repeats each.",
    )
    p.add_argument("--network", default="alarm", help="bundled network (default alarm)")
    p.add_argument("--rows", type=int, default=100_000, help="rows (default 1e5)")
    p.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    p.add_argument("--alpha", type=float, default=0.05, help="CI test level (default 0.05)")
    p.add_argument("--repeats", type=int, default=3, help="runs per side (default 3)")
    p.add_argument("--no-reference", action="store_true", help="skip causal-learn")
    p.add_argument("--no-write", action="store_true",
                   help="print the section instead of writing docs/benchmarks/process.md")
    p.add_argument("--docs-dir", type=Path, default=None, help=argparse.SUPPRESS)
    p.set_defaults(func=run)


def _timed(argv: list[str]) -> float:
    t0 = time.perf_counter()
    out = subprocess.run(argv, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - t0
    if out.returncode != 0:
        raise DpcgError(f"bench process: {' '.join(argv[:4])} ... failed: "
                        f"{out.stderr.strip()[-500:]}")
    return seconds


def run(args: argparse.Namespace) -> int:
    from benchmarks.report import machine_description, write_section
    from dpcg.datasets import load_network

    if args.rows <= 0 or args.repeats <= 0:
        raise DpcgError("--rows and --repeats must be positive")
    if not 0 < args.alpha < 1:
        raise DpcgError(f"--alpha must be in (0, 1), got {args.alpha}")
    reference = not args.no_reference
    if reference:
        try:
            import causallearn  # noqa: F401
        except ImportError:
            raise DpcgError("causal-learn is not installed (pip install 'dpcg[oracle]'); "
                            "or pass --no-reference") from None
    import numpy as np

    net = load_network(args.network)
    data = net.sample(args.rows, args.seed)
    times: dict[str, list[float]] = {"dpcg": [], "causal-learn": []}
    with tempfile.TemporaryDirectory(prefix="dpcg-bench-") as tmp:
        csv = Path(tmp) / "data.csv"
        np.savetxt(csv, np.asarray(data.codes, dtype=np.int64).T, fmt="%d", delimiter=",",
                   header=",".join(data.names), comments="")
        schema = {"columns": [{"name": n, "type": "categorical",
                               "categories": [str(k) for k in range(int(c or 0))]}
                              for n, c in zip(data.names, data.cardinalities, strict=True)]}
        schema_path = Path(tmp) / "data.schema.json"
        schema_path.write_text(json.dumps(schema))
        script = Path(tmp) / "cl.py"
        script.write_text(CAUSALLEARN_SCRIPT)
        ours = [sys.executable, "-m", "dpcg", "discover", "--data", str(csv), "--schema",
                str(schema_path), "--test", "g2", "--alpha", str(args.alpha), "--quiet",
                "--out", str(Path(tmp) / "result.json")]
        theirs = [sys.executable, str(script), str(csv), str(args.alpha)]
        for i in range(args.repeats):
            times["dpcg"].append(_timed(ours))
            if reference:
                times["causal-learn"].append(_timed(theirs))
            print(f"run {i + 1}: dpcg {times['dpcg'][-1]:.2f} s"
                  + (f", causal-learn {times['causal-learn'][-1]:.2f} s" if reference else ""),
                  file=sys.stderr, flush=True)
        help_times = {cmd: statistics.median(_timed([sys.executable, "-m", "dpcg", *cmd.split()])
                                             for _ in range(5))
                      for cmd in ("--help", "discover --help")}
    text = render(args, net.n_nodes, times, help_times, machine_description())
    if args.no_write:
        print(text)
    else:
        print(f"wrote {write_section('process', text, docs_dir=args.docs_dir)}",
              file=sys.stderr)
    return 0


def render(args: argparse.Namespace, nodes: int, times: dict[str, list[float]],
           help_times: dict[str, float], machine: str) -> str:
    ours = statistics.median(times["dpcg"])
    lines = [
        "## Whole process: non-private PC on a CSV vs causal-learn",
        "",
        f"`dpcg bench process` on {machine}. One fresh Python process per run (start-up, "
        "imports, reading the CSV, PC-stable with G², writing the result): `python -m dpcg "
        "discover --data FILE --schema FILE --test g2 --quiet --out result.json` against a "
        "script that reads the same CSV with `numpy.loadtxt` and calls causal-learn's "
        f"`pc(data, {args.alpha}, \"gsq\")`. {args.network} ({nodes} nodes), {args.rows} "
        f"rows (seed {args.seed}); median of {args.repeats} runs each, alternating.",
        "",
        "| | median s | runs (s) |",
        "|---|---|---|",
        f"| dpcg | {ours:.2f} | {', '.join(f'{t:.2f}' for t in times['dpcg'])} |",
    ]
    if times["causal-learn"]:
        theirs = statistics.median(times["causal-learn"])
        lines.append(f"| causal-learn | {theirs:.2f} | "
                     f"{', '.join(f'{t:.2f}' for t in times['causal-learn'])} |")
        lines += ["", f"Whole-process speed-up: **{theirs / ours:.1f}x**."]
    lines += ["", "Start-up of the CLI (median of 5 fresh processes, `python -m dpcg ...`):",
              "", "| command | median s |", "|---|---|"]
    lines += [f"| `dpcg {cmd}` | {t:.3f} |" for cmd, t in help_times.items()]
    return "\n".join(lines) + "\n"
