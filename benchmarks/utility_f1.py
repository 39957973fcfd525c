"""``dpcg bench utility --f1-ratio`` (issue 20): skeleton F1 of every private algorithm
divided by the skeleton F1 of non-private G^2 PC-stable on the same sample, over
generated families of networks (never tuned to one network) and the named networks.

A *cell* is (network, rows, data seed); in it, G^2 PC-stable (``alpha`` 0.05) is run once
and every private algorithm once per epsilon with noise seed ``1000 + seed`` (delta
1e-6, the default statistic and plan). The ratio of a run is its F1 over the cell's G^2
F1; a family row is the mean over its networks x seeds. Runs are appended to a JSON-lines
file as they finish, so an interrupted benchmark resumes where it stopped
(``--report-only`` rebuilds the page from the file).

Families: ``random:nodes=P,max_parents=3,card=2-4,seed=NET,conc=1`` for P in
``--sizes`` and NET = 1..``--networks-per-size``; data seeds 1..``--seeds``. The 50-node
family is also run at ``--extra-rows`` (10^4 and 10^6 by default). ``--family`` gives
the generated networks another shape (``max_parents``, ``card``, ``conc``); a family of
another shape is labelled with it (``random 50 nodes, max_parents=5``). The hub family
(issue 59; ``hub P nodes``, P in ``--hubs``, default 50, 100, 200) is the scale-free
shape of ``benchmarks.scale.hub_network`` (preferential attachment, 1-3 parents, 2-5
states, Dirichlet(0.6) rows), NET = 1..``--hub-networks``, the same data seeds; there
non-private PC (the G^2 baseline and the no-noise ceiling) runs with the depth cap
``--hub-depth`` (default 3, the family's largest in-degree: a separating set of at most 3
exists for every non-adjacent pair), since at 100K rows level 0 removes almost nothing
and the unlimited run does not finish on 100 nodes; the page says so beside the baseline.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.report import guarded_results, results_comment
from dpcg.api import discover
from dpcg.datasets import bif_stem, is_bif_path, load_network
from dpcg.errors import DpcgError
from dpcg.metrics import skeleton_scores
from dpcg.pipeline.request import DiscoverRequest
from dpcg.pipeline.run import execute
from dpcg.private.contract import ScoreCache
from dpcg.private.registry import get_algorithm
from dpcg.private.run import discover_private

FAMILY = "random:nodes={p},max_parents=3,card=2-4,seed={net},conc=1"
#: The hub family (``benchmarks.scale.hub_network(p, seed=net)``).
HUB_FAMILY = ("random:nodes={p},max_parents=3,card=2-5,seed={net},conc=0.6,"
              "shape=scale-free,exponent=1")
SIZES = (20, 50, 100, 200)
HUB_SIZES = (50, 100, 200)
#: Networks per hub size (each with ``--seeds`` data seeds), as many as ``--networks-per-size``
#: of the random families (the page's hub row since v17, 2026-12-03; it was 1).
HUB_NETWORKS = 3
#: Depth cap of non-private PC on the hub family (public: its largest in-degree).
HUB_DEPTH = 3
EPSILONS = (0.5, 1.0, 2.0, 5.0)
ALGORITHMS = ("laplace-pc", "svt-pc", "priv-pc", "em-pc", "curate", "hub-pc")
NAMED = ("insurance", "water", "hailfinder", "alarm")
DELTA = 1e-6
ROWS = 100_000
EXTRA_ROWS = (10_000, 1_000_000)
BASELINE = "pc-g2"
#: Non-private PC with the private algorithms' default statistic: their no-noise ceiling.
CEILING = "pc-split"
OUT = Path("docs/benchmarks/utility-f1.md")
RESULTS = Path(".bench/utility/f1.jsonl")
TITLE = "F1 ratio of the private algorithms to G^2 PC (issue 20)"


def cells(sizes: Sequence[int], nets: int, seeds: int, rows: int,
          extra_rows: Sequence[int], named: Sequence[str],
          family: str = FAMILY, hubs: Sequence[int] = (),
          hub_nets: int = HUB_NETWORKS) -> list[tuple[str, int, int]]:
    """Every (network, rows, data seed) of the benchmark, smallest networks first;
    ``family`` is the generated networks' template (``{p}`` nodes, ``{net}`` seed);
    ``hubs`` the hub family's sizes (``hub_nets`` networks each), after the random
    families."""
    out: list[tuple[str, int, int]] = []
    for p in sorted(sizes):
        for net in range(1, nets + 1):
            for s in range(1, seeds + 1):
                out.append((family.format(p=p, net=net), rows, s))
    for p in sorted(hubs):
        for net in range(1, hub_nets + 1):
            for s in range(1, seeds + 1):
                out.append((HUB_FAMILY.format(p=p, net=net), rows, s))
    for name in named:
        for s in range(1, seeds + 1):
            out.append((name, rows, s))
    if 50 in sizes:
        for r in extra_rows:
            for net in range(1, nets + 1):
                for s in range(1, seeds + 1):
                    out.append((family.format(p=50, net=net), r, s))
    return out


def family_of(network: str) -> str:
    """``random:nodes=50,...`` -> ``random 50 nodes``; a BIF file -> its stem
    (``nets/andes.bif.gz`` -> ``andes``); a named network stays itself."""
    if is_bif_path(network):
        return bif_stem(Path(network).name)
    if network.startswith("random:"):
        fields = _fields(network)
        if fields.get("shape") == "scale-free":
            hub = _fields(HUB_FAMILY.format(p=0, net=0))
            other = [f"{k}={v}" for k, v in fields.items()
                     if k not in ("nodes", "seed") and hub.get(k) != v]
            return ", ".join([f"hub {fields['nodes']} nodes", *other])
        shape = _fields(FAMILY.format(p=0, net=0))
        other = [f"{k}={v}" for k, v in fields.items()
                 if k not in ("nodes", "seed") and shape.get(k) != v]
        return ", ".join([f"random {fields['nodes']} nodes", *other])
    return network


def _fields(spec: str) -> dict[str, str]:
    return dict(kv.split("=", 1) for kv in spec[len("random:"):].split(","))


def _random_nodes(family: str) -> int | None:
    """The size of a generated family's label (``random 50 nodes[, shape]`` or ``hub 50
    nodes[, shape]`` -> 50), else ``None`` (a named network)."""
    return int(family.split()[1]) if family.startswith(("random ", "hub ")) else None


def is_hub(family: str) -> bool:
    """Whether a family label is the hub family's (``hub P nodes[, shape]``)."""
    return family.startswith("hub ")


def pc_depth(family: str, hub_depth: int | None = HUB_DEPTH) -> int | None:
    """The depth cap of non-private PC (baseline and ceiling) on a family: ``hub_depth``
    on the hub family, none elsewhere."""
    return hub_depth if is_hub(family) else None


def family_template(spec: str) -> str:
    """``--family``: ``random:`` fields other than ``nodes`` and ``seed`` (which the
    benchmark sets) over the default shape, e.g. ``max_parents=5,card=2-6`` ->
    ``random:nodes={p},max_parents=5,card=2-6,seed={net},conc=1``."""
    fields = _fields(FAMILY)
    for kv in (t.strip() for t in spec.split(",") if t.strip()):
        k, sep, v = kv.partition("=")
        if not sep or k not in fields or k in ("nodes", "seed") or not v:
            raise DpcgError(f"--family: expected KEY=VALUE with KEY one of max_parents, "
                             f"card, conc; got {kv!r}")
        fields[k] = v
    return "random:" + ",".join(f"{k}={v}" for k, v in fields.items())


# ------------------------------------------------------------------------------ worker

#: The last cell a worker process loaded: its sample, true skeleton and score cache
#: (statistics are exact, so every algorithm and epsilon of a cell shares them).
_LAST: dict[str, Any] = {}


def _load(network: str, rows: int, seed: int, test: str) -> tuple[Any, Any, ScoreCache]:
    key = (network, rows, seed)
    if _LAST.get("key") != key:
        net = load_network(network)
        _LAST.clear()
        _LAST.update(key=key, data=net.sample(rows, seed), truth=net.true_cpdag(),
                     caches={})
    caches: dict[str, ScoreCache] = _LAST["caches"]
    return _LAST["data"], _LAST["truth"], caches.setdefault(test, {})


#: The depth cap of non-private PC on the hub family in this process (``--hub-depth``,
#: set by :func:`run` before the workers fork; ``None``: no cap).
_HUB_DEPTH: list[int | None] = [HUB_DEPTH]


def run_job(job: tuple[str, int, int, str, tuple[float, ...]]) -> list[dict[str, Any]]:
    """One algorithm (or the G^2 baseline) on one cell, every epsilon."""
    network, rows, seed, algorithm, epsilons = job
    depth = pc_depth(family_of(network), _HUB_DEPTH[0])
    test = ("g2" if algorithm == BASELINE else
            get_algorithm("laplace-pc" if algorithm == CEILING else algorithm).default_test)
    data, truth, cache = _load(network, rows, seed, test)
    base = {"network": network, "family": family_of(network), "rows": rows, "seed": seed,
            "nodes": len(data.names), "true_edges": truth.n_edges, "test": test}
    out: list[dict[str, Any]] = []
    if algorithm == BASELINE:
        t0 = time.process_time()
        # one worker: the job runs in a pool worker (daemonic, no children), and its CPU
        # is this process's
        res = discover(data, algorithm="pc", test="g2", ledger=None, max_depth=depth,
                       workers=1)
        sec = time.process_time() - t0
        s = skeleton_scores(res.cpdag, truth)
        return [{**base, "algorithm": BASELINE, "epsilon": None, "f1": s.f1,
                 "edges": res.cpdag.n_edges, "cpu_s": sec, "max_depth": depth}]
    if algorithm == CEILING:
        t0 = time.process_time()
        # non-private PC with the same score, sharing the score cache (the pipeline's
        # internal seam, docs/internals.md)
        ref = execute(DiscoverRequest.create(data, test=test, max_depth=depth, workers=1),
                      scores=cache).pc
        sec = time.process_time() - t0
        s = skeleton_scores(ref.cpdag, truth)
        return [{**base, "algorithm": CEILING, "epsilon": None, "f1": s.f1,
                 "edges": ref.cpdag.n_edges, "cpu_s": sec, "max_depth": depth}]
    for eps in epsilons:
        t0 = time.process_time()
        r = discover_private(data, algorithm, epsilon=eps, delta=DELTA,
                             test=test, noise_seed=1000 + seed, cache=cache)
        sec = time.process_time() - t0
        s = skeleton_scores(r.cpdag, truth)
        plan = r.plan
        out.append({**base, "algorithm": algorithm, "epsilon": eps, "f1": s.f1,
                    "precision": s.precision, "recall": s.recall,
                    "edges": r.cpdag.n_edges, "cpu_s": sec,
                    "exhausted": bool(r.budget_exhausted),
                    "levels_completed": plan.get("used_levels"),
                    "unspent": plan.get("used_unspent"), "rule": plan.get("rule"),
                    "tests": r.n_tests, "releases": plan.get("used_releases")})
    return out


# ------------------------------------------------------------------------------ driver


def _key(row: dict[str, Any]) -> tuple[str, int, int, str, float | None]:
    return (row["network"], row["rows"], row["seed"], row["algorithm"], row["epsilon"])


def load_results(path: Path) -> list[dict[str, Any]]:
    """The results in ``path``, one per (network, rows, seed, algorithm, eps): a run
    written twice (two benchmark processes on one file) counts once."""
    if not path.exists():
        return []
    rows: dict[tuple[str, int, int, str, float | None], dict[str, Any]] = {}
    for line in path.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            rows.setdefault(_key(row), row)
    return list(rows.values())


def jobs_to_run(all_cells: Iterable[tuple[str, int, int]], algorithms: Sequence[str],
                epsilons: Sequence[float], done: set[tuple[str, int, int, str, float | None]],
                skip: Sequence[str]) -> list[tuple[str, int, int, str, tuple[float, ...]]]:
    jobs: list[tuple[str, int, int, str, tuple[float, ...]]] = []
    for network, rows, seed in all_cells:
        fam = family_of(network)
        for algo in (BASELINE, CEILING, *algorithms):
            if any(_skipped(s, fam, rows, algo) for s in skip):
                continue
            if algo in (BASELINE, CEILING):
                if (network, rows, seed, algo, None) not in done:
                    jobs.append((network, rows, seed, algo, ()))
                continue
            todo = tuple(e for e in epsilons if (network, rows, seed, algo, e) not in done)
            if todo:
                jobs.append((network, rows, seed, algo, todo))
    return jobs


def _skipped(pattern: str, family: str, rows: int, algo: str) -> bool:
    """``NODES/ALGO`` (e.g. ``200/em-pc``) or ``NODES@ROWS/ALGO`` or ``NAME/ALGO``."""
    where, _, what = pattern.partition("/")
    if what and what != algo:
        return False
    size, _, r = where.partition("@")
    if r and int(float(r)) != rows:
        return False
    return family == size or (size.isdigit() and _random_nodes(family) == int(size))


def run_all(jobs: list[tuple[str, int, int, str, tuple[float, ...]]], results: Path,
            processes: int, deadline: float | None) -> int:
    results.parent.mkdir(parents=True, exist_ok=True)
    finished = 0
    ctx = mp.get_context("fork")
    with ctx.Pool(processes, maxtasksperchild=None) as pool, results.open("a") as fh:
        for rows in pool.imap_unordered(run_job, jobs, chunksize=1):
            for row in rows:
                fh.write(json.dumps(row, sort_keys=True) + "\n")
            fh.flush()
            finished += 1
            r = rows[0]
            print(f"[{finished}/{len(jobs)}] {r['network']} rows={r['rows']} seed={r['seed']} "
                  f"{r['algorithm']}: " + " ".join(
                      f"{x['epsilon']}:{x['f1']:.3f}({x['cpu_s']:.0f}s)" for x in rows),
                  file=sys.stderr, flush=True)
            if deadline is not None and time.time() > deadline:
                print("time limit reached: stopping (the results so far are kept)",
                      file=sys.stderr)
                pool.terminate()
                break
    return finished


# ------------------------------------------------------------------------------ report


def ratios(results: list[dict[str, Any]]
           ) -> dict[tuple[str, int, str, float | None], list[float]]:
    """(family, rows, algorithm, eps) -> the ratio of each run with a G^2 baseline (the
    ceiling's eps is ``None``)."""
    g2 = {(r["network"], r["rows"], r["seed"]): r["f1"] for r in results
          if r["algorithm"] == BASELINE}
    out: dict[tuple[str, int, str, float | None], list[float]] = defaultdict(list)
    for r in results:
        if r["algorithm"] == BASELINE:
            continue
        ref = g2.get((r["network"], r["rows"], r["seed"]))
        if ref is None or ref <= 0:
            continue
        out[(r["family"], r["rows"], r["algorithm"], r["epsilon"])].append(r["f1"] / ref)
    return out


def target(family: str, eps: float, nodes: int | None = None) -> float | None:
    """The issue's target for the best algorithm (``None``: no target at this eps): at
    eps 1, 0.85 up to 100 nodes and 0.75 above (the 200-node family, and a named network
    of more than 100 nodes, ``nodes`` being its size), 0.85 on the hub family at every
    size (issue 59: 50-200 nodes); at eps 5, 0.9."""
    if eps == 5.0:
        return 0.9
    if eps == 1.0 and is_hub(family):
        return 0.85
    if eps == 1.0:
        size = _random_nodes(family) or nodes
        large = size is not None and size > 100
        return 0.75 if large else 0.85
    return None


def _order(families: Iterable[tuple[str, int]]) -> list[tuple[str, int]]:
    def k(fr: tuple[str, int]) -> tuple[int, int, str, int]:
        fam, rows = fr
        size = _random_nodes(fam)
        if size is None:
            return (2, 0, fam, rows)
        return (1 if is_hub(fam) else 0, size, fam, rows)
    return sorted(set(families), key=k)


def render(results: list[dict[str, Any]], algorithms: Sequence[str],
           epsilons: Sequence[float], command: str, title: str = TITLE,
           results_path: Path | None = None) -> str:
    rat = ratios(results)
    g2 = defaultdict(list)
    for r in results:
        if r["algorithm"] == BASELINE:
            g2[(r["family"], r["rows"])].append(r)
    fams = _order(g2)
    lines = [
        f"# {title}",
        "",
        (f"<!-- generated by {command} -->" if results_path is None
         else results_comment(command, results_path)),
        "",
        (__doc__ or "").split("\n\n")[1].replace("\n", " ").strip(),
        "",
        "Targets (issue 20): at eps 1 the best algorithm >= 0.85 up to 100 nodes and >= 0.75 "
        "at 200 nodes (and on a named network of more than 100 nodes), Priv-PC within 0.10 "
        "of the best; at eps 5 >= 0.9 everywhere (every row count included); on the hub "
        "family (issue 59) >= 0.85 at eps 1 at every size, the ratio being to G^2 PC with "
        "the depth cap of the baseline table. "
        "A cell is `mean ratio (runs)`; **bold** marks the best algorithm of a row; "
        "`target` says whether the best reaches it (`-`: no target at this eps). `-` in an "
        "algorithm's cell = not run. The last column is "
        "non-private PC with the private algorithms' statistic (`kendall-split`, no "
        "noise) over G^2 PC: the ratio the private runs tend to as eps grows without "
        "bound. At a finite eps they can be above it where most pairs are independent "
        "(sparse networks): their level-0 selections drop most of the pairs that this "
        "PC keeps on a chance dependence given the empty set "
        "(`docs/benchmarks/utility-f1-analysis.md`, \"Generated networks of other "
        "shapes\").",
        "",
        "## G^2 PC baseline",
        "",
        "| family | rows | cells | mean G^2 F1 | mean true edges | mean G^2 edges | "
        "mean CPU s | depth cap |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for fam, rows in fams:
        rs = g2[(fam, rows)]
        caps = sorted({str(r.get("max_depth") or "none") for r in rs})
        lines.append(
            f"| {fam} | {rows:,} | {len(rs)} | {statistics.mean(r['f1'] for r in rs):.3f} | "
            f"{statistics.mean(r['true_edges'] for r in rs):.0f} | "
            f"{statistics.mean(r['edges'] for r in rs):.0f} | "
            f"{statistics.mean(r['cpu_s'] for r in rs):.1f} | {', '.join(caps)} |")
    for eps in epsilons:
        lines += ["", f"## eps = {eps:g}", "",
                  "| family | rows | " + " | ".join(algorithms)
                  + " | best | target | Priv-PC gap | no-noise ceiling |",
                  "|---|---|" + "---|" * (len(algorithms) + 4)]
        for fam, rows in fams:
            means = {a: statistics.mean(v) for a in algorithms
                     if (v := rat.get((fam, rows, a, eps)))}
            if not means:
                continue
            best = max(means, key=lambda a: means[a])
            cells_ = []
            for a in algorithms:
                v = rat.get((fam, rows, a, eps))
                if not v:
                    cells_.append("-")
                    continue
                txt = f"{statistics.mean(v):.2f} ({len(v)})"
                cells_.append(f"**{txt}**" if a == best else txt)
            # Every row count: "everywhere" at eps 5, and the 10^4- and 10^6-row cells of
            # the 50-node family are "up to 100 nodes" at eps 1.
            t = target(fam, eps, g2[(fam, rows)][0].get("nodes"))
            tgt = "-" if t is None else (f"met (>= {t})" if means[best] >= t
                                         else f"**not met** (< {t})")
            gap = (f"{means[best] - means['priv-pc']:+.2f}".replace("+", "")
                   if "priv-pc" in means else "-")
            if "priv-pc" in means and eps == 1.0 and means[best] - means["priv-pc"] > 0.10:
                gap += " (> 0.10)"
            ceil = rat.get((fam, rows, CEILING, None))
            ceil_txt = f"{statistics.mean(ceil):.2f} ({len(ceil)})" if ceil else "-"
            lines.append(f"| {fam} | {rows:,} | " + " | ".join(cells_)
                         + f" | {best} {means[best]:.2f} | {tgt} | {gap} | {ceil_txt} |")
    lines += ["", "## Failure shapes at eps 1", "",
              "Mean over runs: edges returned (true edges), precision, recall, runs that "
              "stopped on a used-up plan, CPU seconds per run.", "",
              "| family | rows | algorithm | edges (true) | precision | recall | exhausted | "
              "CPU s |", "|---|---|---|---|---|---|---|---|"]
    by = defaultdict(list)
    for r in results:
        if r["algorithm"] not in (BASELINE, CEILING) and r["epsilon"] == 1.0:
            by[(r["family"], r["rows"], r["algorithm"])].append(r)
    for fam, rows in fams:
        for a in algorithms:
            if not (rs := by.get((fam, rows, a), [])):
                continue
            lines.append(
                f"| {fam} | {rows:,} | {a} | {statistics.mean(r['edges'] for r in rs):.0f} "
                f"({statistics.mean(r['true_edges'] for r in rs):.0f}) | "
                f"{statistics.mean(r['precision'] for r in rs):.2f} | "
                f"{statistics.mean(r['recall'] for r in rs):.2f} | "
                f"{sum(r['exhausted'] for r in rs)}/{len(rs)} | "
                f"{statistics.mean(r['cpu_s'] for r in rs):.1f} |")
    return "\n".join(lines) + "\n"


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("F1 ratio (--f1-ratio)")
    g.add_argument("--f1-ratio", action="store_true",
                   help="run the private algorithms over generated families and write "
                        f"{OUT}")
    g.add_argument("--sizes", default=",".join(map(str, SIZES)),
                   help="family sizes in nodes (comma-separated)")
    g.add_argument("--networks-per-size", type=int, default=3)
    g.add_argument("--seeds", type=int, default=3, help="data seeds per network")
    g.add_argument("--family", default="",
                   help="shape of the generated networks: KEY=VALUE,... over "
                        "max_parents=3,card=2-4,conc=1 (e.g. 'max_parents=5,card=2-6')")
    g.add_argument("--hubs", default=",".join(map(str, HUB_SIZES)),
                   help="sizes of the hub (scale-free) family in nodes, comma-separated "
                        "('' for none)")
    g.add_argument("--hub-networks", type=int, default=HUB_NETWORKS,
                   help="networks per hub size (each with --seeds data seeds)")
    g.add_argument("--hub-depth", type=int, default=HUB_DEPTH,
                   help="depth cap of non-private PC (G^2 baseline and ceiling) on the hub "
                        "family (0 or less: none)")
    g.add_argument("--extra-rows", default=",".join(str(r) for r in EXTRA_ROWS),
                   help="extra sample sizes for the 50-node family ('' for none)")
    g.add_argument("--named", default=",".join(NAMED),
                   help="named networks in the same table: bundled names or BIF files "
                        "(FILE.bif[.gz], shown by their stem); '' for none")
    g.add_argument("--algorithms", default=",".join(ALGORITHMS))
    g.add_argument("--epsilons", default=",".join(f"{e:g}" for e in EPSILONS))
    g.add_argument("--skip", default="",
                   help="comma-separated NODES[@ROWS][/ALGO] or NAME[/ALGO] to leave out")
    g.add_argument("--processes", type=int, default=2)
    g.add_argument("--time-limit", type=float, default=None,
                   help="stop starting new results after this many seconds")
    g.add_argument("--results", type=Path, default=None,
                   help=f"the results file (JSON lines; default {RESULTS}); without it, a "
                        f"page --f1-out built from another file is not overwritten")
    g.add_argument("--report-only", action="store_true")
    g.add_argument("--f1-out", type=Path, default=OUT)
    g.add_argument("--f1-title", default=TITLE, help="the page's title")


def _split(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def results_file(args: argparse.Namespace) -> Path:
    """``--results``, or the default file when none was given, unless ``--f1-out`` is a
    page built from another file (:func:`benchmarks.report.guarded_results`)."""
    return guarded_results(args.results, RESULTS, Path(args.f1_out), "--f1-out")


def run(args: argparse.Namespace) -> int:
    args.results = results_file(args)
    algorithms = _split(args.algorithms)
    epsilons = [float(e) for e in _split(args.epsilons)]
    _HUB_DEPTH[0] = args.hub_depth if args.hub_depth > 0 else None
    if not args.report_only:
        all_cells = cells([int(s) for s in _split(args.sizes)], args.networks_per_size,
                          args.seeds, args.rows, [int(float(r)) for r in
                                                   _split(args.extra_rows)],
                          _split(args.named), family_template(args.family),
                          [int(s) for s in _split(args.hubs)], args.hub_networks)
        done = {_key(r) for r in load_results(args.results)}
        jobs = jobs_to_run(all_cells, algorithms, epsilons, done, _split(args.skip))
        deadline = None if args.time_limit is None else time.time() + args.time_limit
        print(f"{len(jobs)} jobs to run ({len(done)} results already in {args.results})",
              file=sys.stderr)
        if jobs:
            run_all(jobs, args.results, args.processes, deadline)
    results = load_results(args.results)
    text = render(results, algorithms, epsilons, "dpcg bench utility --f1-ratio",
                  args.f1_title, args.results)
    args.f1_out.parent.mkdir(parents=True, exist_ok=True)
    args.f1_out.write_text(text)
    print(f"wrote {args.f1_out}", file=sys.stderr)
    return 0
