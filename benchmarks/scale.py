"""``dpcg bench scale``: peak memory and wall time on hub networks (issue 59).

Every run is a fresh process, ``python -m dpcg discover --dataset NET --rows N ...``,
on a scale-free network of ``dpcg datasets random --shape scale-free`` (preferential
attachment; the issue's family: 1-3 parents, 2-5 states, Dirichlet(0.6) rows), with an
address-space cap (``RLIMIT_AS``, ``--mem-cap-mb``) so that a run that would grow past
it fails with ``MemoryError`` instead of taking the machine down, and a wall-clock
timeout. Peak RSS is the child's own ``ru_maxrss`` (``os.wait4``); the skeleton F1 is
against the network's true DAG. Private runs write to a temporary ledger.

Results go to ``docs/benchmarks/scale.md`` (``--no-write`` prints them).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["ScaleRun", "hub_network", "pc_speed", "register", "run", "run_one"]


def hub_network(nodes: int, *, max_parents: int = 3, card: str = "2-5", seed: int = 1,
                conc: float = 0.6, exponent: float = 1.0) -> str:
    """The dataset name of the scale-free network with these parameters."""
    return (f"random:nodes={nodes},max_parents={max_parents},card={card},seed={seed},"
            f"conc={conc:g},shape=scale-free,exponent={exponent:g}")


@dataclass
class ScaleRun:
    network: str
    rows: int
    algorithm: str
    epsilon: float | None
    status: str
    seconds: float
    max_rss_mb: float
    tests: int | None = None
    edges: int | None = None
    f1: float | None = None
    note: str = ""


def _limit(cap_bytes: int) -> None:  # pragma: no cover - runs in the child
    resource.setrlimit(resource.RLIMIT_AS, (cap_bytes, cap_bytes))


def _f1(doc: dict[str, Any], network: str) -> float:
    from dpcg.datasets import load_network

    truth = {frozenset(e) for e in load_network(network).dag_edges}
    est = {frozenset(e) for kind in ("directed", "undirected") for e in doc["edges"][kind]}
    tp = len(est & truth)
    if tp == 0:
        return 0.0
    precision, recall = tp / len(est), tp / len(truth)
    return 2 * precision * recall / (precision + recall)


def run_one(network: str, rows: int, algorithm: str, epsilon: float | None, *,
            mem_cap_mb: int = 4096, timeout: float = 900.0, extra: tuple[str, ...] = (),
            seed: int = 0) -> ScaleRun:
    """One fresh ``dpcg discover`` process, measured."""
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "result.json"
        argv = [sys.executable, "-m", "dpcg", "discover", "--dataset", network, "--rows",
                str(rows), "--seed", str(seed), "--algorithm", algorithm, "--quiet",
                "--out", str(out), *extra]
        if algorithm == "pc":
            argv += ["--test", "g2"]
        if epsilon is not None:
            argv += ["--epsilon", f"{epsilon:g}", "--noise-seed", "0", "--ledger",
                     str(Path(d) / "ledger.sqlite"), "--dataset-id", "bench-scale"]
        cap = mem_cap_mb * 2**20
        t0 = time.perf_counter()
        errors = Path(d) / "stderr.txt"
        with errors.open("wb") as err_fh:
            proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err_fh,
                                    preexec_fn=lambda: _limit(cap))
        status = "ok"
        while True:
            pid, code, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid != 0:
                break
            if time.perf_counter() - t0 > timeout:
                proc.kill()
                pid, code, usage = os.wait4(proc.pid, 0)
                status = "timeout"
                break
            time.sleep(0.2)
        seconds = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(code)
        err = errors.read_text(errors="replace")
        run = ScaleRun(network, rows, algorithm, epsilon, status, seconds,
                       usage.ru_maxrss / 1024.0)
        if status == "ok" and proc.returncode != 0:
            run.status = "MemoryError" if "MemoryError" in err else f"exit {proc.returncode}"
            run.note = err.strip().splitlines()[-1][:120] if err.strip() else ""
            return run
        if status != "ok":
            return run
        doc = json.loads(out.read_text())
        run.tests = int(doc["tests"]["count"])
        run.edges = len(doc["edges"]["directed"]) + len(doc["edges"]["undirected"])
        run.f1 = _f1(doc, network)
        notes = []
        if doc.get("budget_exhausted"):
            notes.append("budget exhausted")
        if "stopped" in doc:
            notes.append(f"stopped: {doc['stopped'].get('limit')}")
        run.note = "; ".join(notes)
        return run


Query = tuple[int, int, tuple[int, ...]]


def _reference_rates(codes: Any, queries_by_level: dict[int, list[Query]],
                     seconds: float) -> dict[int, tuple[int, float]]:
    """causal-learn's G^2 (``CIT(data, "gsq")``, a fresh cache) on the first queries of
    each level, for at most ``seconds`` of CPU per level: ``{level: (tests, cpu s)}``."""
    import numpy as np
    from causallearn.utils.cit import CIT

    data = np.ascontiguousarray(np.asarray(codes).T.astype(np.int64))
    out: dict[int, tuple[int, float]] = {}
    for level, queries in sorted(queries_by_level.items()):
        cit = CIT(data, "gsq")
        c0 = time.process_time()
        done = 0
        for x, y, S in queries:
            cit(x, y, list(S))
            done += 1
            if time.process_time() - c0 >= seconds:
                break
        out[level] = (done, time.process_time() - c0)
    return out


def pc_speed(network: str, rows: int, *, workers: int = 2, max_seconds: float = 600.0,
             seed: int = 0, reference_seconds: float = 0.0,
             reference_queries: int = 3000, sparse_rule: str | None = None
             ) -> dict[str, Any]:
    """Non-private G^2 PC-stable (``FastG2Test``, blocks of shared counting, ``workers``
    processes) on ``network`` to completion or ``max_seconds``, in this process: wall and
    CPU seconds (the parent's and its workers'), peak RSS (parent, largest worker),
    tests per level, tests per second, the stop message, and the load average before and
    after, and the skeleton's F1, precision and recall against the network's DAG.
    ``sparse_rule`` is the G-test's rule for sparse tables (default: the test's default,
    ``causal-learn``; ``docs/stats.md``). With ``reference_seconds > 0``, causal-learn's
    G^2 on the first ``reference_queries`` of each level of the same run (time-capped per
    level; its rate per level applied to this run's test counts gives its CPU estimate
    for the same test sequence)."""
    from collections import Counter

    from dpcg.citests.nonprivate import FastG2Test
    from dpcg.datasets import load_network
    from dpcg.pc import pc_stable
    from dpcg.pc.limits import RunLimits

    net = load_network(network)
    ds = net.sample(rows, seed)
    load0 = os.getloadavg()
    ch0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0, c0 = time.perf_counter(), time.process_time()
    test = FastG2Test(ds) if sparse_rule is None else FastG2Test(ds, sparse_rule=sparse_rule)
    res = pc_stable(test, ds.names, workers=workers,
                    limits=RunLimits(max_seconds=max_seconds))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    ch = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_children = (ch.ru_utime + ch.ru_stime) - (ch0.ru_utime + ch0.ru_stime)
    levels = dict(sorted(Counter(t.level for t in res.tests).items()))
    out: dict[str, Any] = {
        "network": network, "rows": rows, "workers": workers, "wall": wall,
        "cpu": cpu + cpu_children, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        / 1024.0, "worker_rss_mb": ch.ru_maxrss / 1024.0, "tests": res.n_tests,
        "levels": levels, "edges": sum(len(a) for a in res.adjacency) // 2,
        "stopped": res.info.get("stopped", {}).get("message"),
        "load": (load0, os.getloadavg()), "sparse_rule": sparse_rule or "causal-learn"}
    index = {name: i for i, name in enumerate(ds.names)}
    truth = {frozenset((index[a], index[b])) for a, b in net.dag_edges}
    got = {frozenset((i, j)) for i, adj in enumerate(res.adjacency) for j in adj if i < j}
    tp = len(truth & got)
    prec, rec = tp / max(len(got), 1), tp / max(len(truth), 1)
    out.update(precision=prec, recall=rec,
               f1=2 * prec * rec / (prec + rec) if prec + rec > 0 else 0.0)
    if reference_seconds > 0:
        by_level: dict[int, list[Query]] = {}
        for t in res.tests:
            q = by_level.setdefault(t.level, [])
            if len(q) < reference_queries:
                q.append((t.x, t.y, t.S))
        ref = _reference_rates(ds.codes, by_level, reference_seconds)
        out["reference"] = ref
        out["reference_cpu_estimate"] = sum(
            levels[lv] * cpu_l / max(n, 1) for lv, (n, cpu_l) in ref.items())
    return out


def render_speed(r: dict[str, Any]) -> str:
    """One markdown row of :func:`pc_speed`."""
    nodes = r["network"].split("nodes=")[1].split(",")[0]
    ref = ""
    if "reference" in r:
        est = r["reference_cpu_estimate"]
        ref = f"{r['tests'] / est:,.0f} (est. {est:,.0f} CPU s)"
    status = "stopped: " + r["stopped"] if r["stopped"] else "complete"
    lv = ", ".join(f"{k}: {v:,}" for k, v in r["levels"].items())
    return (f"| hub-{nodes} | {r['rows']:,} | {r['sparse_rule']} | {r['workers']} | {status} "
            f"| {r['wall']:.0f} | "
            f"{r['cpu']:.0f} | {r['rss_mb']:.0f} / {r['worker_rss_mb']:.0f} | {r['tests']:,} | "
            f"{r['tests'] / max(r['cpu'], 1e-9):,.0f} | {ref} | {r['edges']} | "
            f"{r['f1']:.3f} ({r['precision']:.2f} / {r['recall']:.2f}) | {lv} | "
            f"{r['load'][0][0]:.1f} -> {r['load'][1][0]:.1f} |")


SPEED_HEADER = (
    "| network | rows | sparse rule | workers | status | wall s | CPU s "
    "| peak RSS MB (parent / worker) | tests | tests per CPU s "
    "| causal-learn tests per CPU s (same tests) | edges | skeleton F1 (P / R) "
    "| tests per level | load (1 min) |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "scale", help="peak RSS and wall time on scale-free (hub) networks",
        description="Run every algorithm in a fresh, memory-capped process on scale-free "
                    "networks (preferential attachment) and report peak RSS, wall time, "
                    "tests and skeleton F1.")
    p.add_argument("--nodes", default="60,150", help="comma-separated sizes (default 60,150)")
    p.add_argument("--rows", type=int, default=100_000, help="rows (default 1e5)")
    p.add_argument("--algorithms", default="pc,laplace-pc,priv-pc",
                   help="comma-separated (default pc,laplace-pc,priv-pc)")
    p.add_argument("--epsilons", default="1", help="private budgets (default 1)")
    p.add_argument("--max-depth", type=int, default=None, help="passed to discover")
    p.add_argument("--networks", default="",
                   help="comma-separated named networks or BIF files (FILE.bif[.gz]) to run "
                        "instead of the generated hub networks of --nodes (e.g. bnlearn's "
                        "pathfinder: a hub and columns of up to 63 states)")
    p.add_argument("--run-budget", default="",
                   help="SECONDS,MEMORY passed to every run as --max-seconds/--max-memory "
                        "(e.g. 300,2GB; a private run turns them into a public test budget)")
    p.add_argument("--mem-cap-mb", type=int, default=4096,
                   help="address-space cap per run (default 4096)")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per run (default 900)")
    p.add_argument("--no-write", action="store_true",
                   help="print the section instead of writing docs/benchmarks/scale.md")
    p.add_argument("--docs-dir", type=Path, default=None, help=argparse.SUPPRESS)
    p.add_argument("--pc-speed", action="store_true",
                   help="instead: non-private G^2 PC in this process on each --nodes network "
                        "(--workers, --max-seconds), with causal-learn's rate on the same "
                        "tests (--reference-seconds per level); prints markdown rows")
    p.add_argument("--workers", type=int, default=2, help="--pc-speed: processes (default 2)")
    p.add_argument("--max-seconds", type=float, default=600.0,
                   help="--pc-speed: time budget of a run (default 600)")
    p.add_argument("--reference-seconds", type=float, default=0.0,
                   help="--pc-speed: causal-learn CPU seconds per level (default 0: skip)")
    p.add_argument("--sparse-rule", default=None,
                   help="--pc-speed: the G-test's sparse-table rule (default causal-learn; "
                        "e.g. pcalg: pcalg's n < 10 df rule; docs/stats.md)")
    p.set_defaults(func=run)


def render(runs: list[ScaleRun], args: argparse.Namespace) -> str:
    budget = (f" --run-budget {args.run_budget}" if getattr(args, "run_budget", "")
              else "")
    if getattr(args, "networks", ""):
        head = ["## Scale: named networks (peak memory and time)", "",
                f"`dpcg bench scale --networks {args.networks} --rows {args.rows} "
                f"--algorithms {args.algorithms} --epsilons {args.epsilons}{budget}` (each "
                f"run a fresh process capped at {args.mem_cap_mb} MB of address space, "
                f"timeout {args.timeout:g} s)."]
    else:
        head = ["## Scale: hub networks (peak memory and time)", "",
                f"`dpcg bench scale --nodes {args.nodes} --rows {args.rows} --algorithms "
                f"{args.algorithms} --epsilons {args.epsilons}{budget}` (each run a fresh "
                f"process capped at {args.mem_cap_mb} MB of address space, timeout "
                f"{args.timeout:g} s). Networks: `random:...,shape=scale-free` "
                "(preferential attachment, exponent 1; 1-3 parents, 2-5 states, "
                "Dirichlet(0.6) rows)."]
    lines = [
        *head,
        "",
        "| network | rows | algorithm | eps | status | wall s | peak RSS MB | tests | edges "
        "| skeleton F1 | note |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        lines.append(
            f"| {network_label(r.network)} | {r.rows:,} | {r.algorithm} | "
            f"{'' if r.epsilon is None else f'{r.epsilon:g}'} | {r.status} | {r.seconds:.1f} | "
            f"{r.max_rss_mb:.0f} | {'' if r.tests is None else f'{r.tests:,}'} | "
            f"{'' if r.edges is None else r.edges} | "
            f"{'' if r.f1 is None else f'{r.f1:.3f}'} | {r.note} |")
    return "\n".join(lines) + "\n"


def network_label(network: str) -> str:
    """``hub-N`` for a generated scale-free network, a BIF file's stem, else the name."""
    from dpcg.datasets import bif_stem, is_bif_path

    if "shape=scale-free" in network and "nodes=" in network:
        return "hub-" + network.split("nodes=")[1].split(",")[0]
    if is_bif_path(network):
        return bif_stem(Path(network).name)
    return network


def run(args: argparse.Namespace) -> int:
    if getattr(args, "pc_speed", False):
        print(SPEED_HEADER, flush=True)
        for nodes in (int(v) for v in str(args.nodes).split(",")):
            speed = pc_speed(hub_network(nodes), args.rows, workers=args.workers,
                             max_seconds=args.max_seconds,
                             reference_seconds=args.reference_seconds,
                             sparse_rule=args.sparse_rule)
            print(render_speed(speed), flush=True)
        return 0
    runs: list[ScaleRun] = []
    extra: tuple[str, ...] = () if args.max_depth is None else ("--max-depth",
                                                                 str(args.max_depth))
    if args.run_budget:
        seconds, memory = str(args.run_budget).split(",")
        extra += ("--max-seconds", seconds, "--max-memory", memory)
    nets = ([v for v in str(args.networks).split(",") if v] if args.networks else
            [hub_network(int(v)) for v in str(args.nodes).split(",")])
    for net in nets:
        for algo in str(args.algorithms).split(","):
            epsilons: list[float | None] = (
                [None] if algo == "pc" else [float(e) for e in str(args.epsilons).split(",")])
            for eps in epsilons:
                r = run_one(net, args.rows, algo, eps, mem_cap_mb=args.mem_cap_mb,
                            timeout=args.timeout, extra=extra)
                runs.append(r)
                print(render([r], args).splitlines()[-1], file=sys.stderr, flush=True)
    text = render(runs, args)
    if args.no_write:
        print(text)
        return 0
    from benchmarks.report import write_section

    write_section("scale-networks" if args.networks else "scale", text,
                  docs_dir=args.docs_dir)
    return 0
