"""``dpcg discover``: learn a CPDAG from a bundled network sample or a user's table.

Examples::

    dpcg discover --dataset alarm --rows 100000 --algorithm pc --test g2 --alpha 0.05 \\
        --seed 1 --out result.json
    dpcg discover --data table.csv --schema schema.json --test g2 --out result.json

Algorithms and CI tests are looked up in :mod:`dpcg.pc.registry`; their own options
(e.g. ``--epsilon`` for private algorithms) are added to this parser from there.
``result.json`` holds the graph (``nodes``, ``edges.directed``, ``edges.undirected``),
``tests.count``, ``timing.seconds`` and, when the true graph is known, ``metrics``
(``skeleton_f1``, ``shd``, ...) against the true CPDAG.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from dpcg.errors import AlgorithmError, CITestError, DataValidationError, DpcgError
from dpcg.pc import registry
from dpcg.pc.background import BackgroundKnowledge

DEFAULT_ROWS = 10_000
#: ``--test`` when neither the user nor the algorithm names one
DEFAULT_TEST = "g2"


class Progress:
    """A dependency-free progress line on stderr, shown only once a run passes ``delay``.

    On a terminal the line is rewritten in place (at most every 0.2 s); otherwise a
    line is printed at most every 5 s.
    """

    def __init__(self, stream: TextIO | None = None, *, delay: float = 1.0,
                 label: str = "discover") -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.delay = delay
        self.label = label
        self.start = time.monotonic()
        self.last = 0.0
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.interval = 0.2 if self.tty else 5.0
        self.shown = False

    def __call__(self, level: int, tests: int) -> None:
        now = time.monotonic()
        elapsed = now - self.start
        if elapsed < self.delay or now - self.last < self.interval:
            return
        self.last = now
        msg = f"{self.label}: level {level}, {tests} tests, {elapsed:.1f} s"
        if self.tty:
            self.stream.write("\r" + msg.ljust(60))
        else:
            self.stream.write(msg + "\n")
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown and self.tty:
            self.stream.write("\n")
            self.stream.flush()


def _add_plugin_arguments(parser: argparse.ArgumentParser) -> None:
    seen: set[str] = {a for action in parser._actions for a in action.option_strings}
    groups: list[tuple[str, tuple[registry.Argument, ...]]] = []
    groups += [(f"--algorithm {s.name}", s.arguments) for s in registry.algorithms().values()]
    groups += [(f"--test {s.name}", s.arguments) for s in registry.tests().values()]
    for title, arguments in groups:
        fresh = [a for a in arguments if not seen.intersection(a.flags)]
        if not fresh:
            continue
        group = parser.add_argument_group(f"options of {title}")
        for arg in fresh:
            kwargs = dict(arg.kwargs)
            kwargs.setdefault("default", None)
            group.add_argument(*arg.flags, **kwargs)
            seen.update(arg.flags)


def register(subparsers: Any) -> None:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "discover",
        help="learn a causal graph (CPDAG) from data",
        description="Learn a CPDAG with PC-stable or a private variant.",
    )
    src = p.add_argument_group("data (one of)")
    src.add_argument("--dataset", metavar="NAME",
                     help="bundled network to sample from (see `dpcg datasets`)")
    src.add_argument("--data", metavar="FILE", type=Path,
                     help="your table (.csv/.tsv/.parquet/.npy); needs --schema")
    src.add_argument("--schema", metavar="FILE", type=Path, help="schema JSON for --data")
    src.add_argument("--rows", type=int, default=None,
                     help=f"rows to sample from --dataset (default {DEFAULT_ROWS})")
    src.add_argument("--seed", type=int, default=None,
                     help="seed for sampling --dataset (default 0) and for private runs")
    src.add_argument("--clip", action="store_true",
                     help="clip out-of-bounds continuous values to the schema bounds")
    algo = p.add_argument_group("algorithm")
    algo.add_argument("--algorithm", default="pc", metavar="NAME",
                      help="discovery algorithm (default pc); see --list")
    algo.add_argument("--test", default=None, metavar="NAME",
                      help="conditional-independence test (default: the algorithm's own, g2 "
                           "for pc, kendall-split for the private discrete family); see "
                           "--list")
    algo.add_argument("--alpha", type=float, default=0.05,
                      help="significance level of the CI tests (default 0.05)")
    algo.add_argument("--max-depth", type=int, default=None,
                      help="largest conditioning-set size (default: no limit)")
    algo.add_argument("--background", type=Path, metavar="FILE",
                      help="background knowledge JSON: required_edges, forbidden_edges, "
                           "required_orientations, forbidden_orientations (lists of pairs)")
    out = p.add_argument_group("output")
    out.add_argument("--out", type=Path, metavar="FILE",
                     help="write result JSON here (default: print it to stdout)")
    out.add_argument("--dot", type=Path, metavar="FILE", help="also write Graphviz DOT")
    out.add_argument("--graphml", type=Path, metavar="FILE", help="also write GraphML")
    out.add_argument("--include-tests", action="store_true",
                     help="list every CI test (x, y, S, statistic, p-value) in the JSON")
    out.add_argument("--quiet", action="store_true", help="no progress or summary on stderr")
    p.add_argument("--list", action="store_true",
                   help="list the registered algorithms and CI tests, then exit")
    _add_plugin_arguments(p)
    p.set_defaults(func=run)


def _list() -> int:
    algos, tests = registry.algorithms(), registry.tests()
    width = max(len(name) for name in [*algos, *tests]) + 2
    print("algorithms:")
    for spec in algos.values():
        tag = " [private]" if spec.private else ""
        default = f" (default --test {spec.default_test})" if spec.default_test else ""
        print(f"  {spec.name:<{width}}{spec.description}{default}{tag}")
    print("CI tests:")
    for t in tests.values():
        tag = " [private]" if t.private else ""
        print(f"  {t.name:<{width}}{t.description}{tag}")
    return 0


Truth = tuple[tuple[str, ...], tuple[tuple[str, str], ...]]


def _load(args: argparse.Namespace) -> tuple[Any, dict[str, Any], Truth | None]:
    if (args.dataset is None) == (args.data is None):
        raise DataValidationError("give exactly one of --dataset NAME or --data FILE")
    if args.dataset is not None:
        if args.schema is not None:
            raise DataValidationError("--schema only applies to --data")
        rows = DEFAULT_ROWS if args.rows is None else args.rows
        if rows <= 0:
            raise DataValidationError(f"--rows must be a positive integer, got {rows}")
        seed = 0 if args.seed is None else args.seed
        from dpcg.datasets import load_network

        net = load_network(args.dataset)
        dataset = net.sample(rows, seed)
        truth: Truth = (tuple(net.nodes), tuple((str(a), str(b)) for a, b in net.dag_edges))
        info = {"source": "bundled", "dataset": args.dataset, "rows": rows, "seed": seed}
        return dataset, info, truth
    if args.schema is None:
        raise DataValidationError("--data needs --schema FILE (the declared schema JSON)")
    if args.rows is not None:
        raise DataValidationError("--rows only applies to --dataset (the file is used whole)")
    from dpcg.data import Schema, load_table

    schema = Schema.from_json(args.schema)
    dataset = load_table(args.data, schema, clip=args.clip)
    info = {"source": "file", "path": str(args.data), "schema": str(args.schema),
            "rows": int(dataset.n)}
    return dataset, info, None


def _background(path: Path | None) -> BackgroundKnowledge | None:
    if path is None:
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise AlgorithmError(f"--background {path}: cannot read JSON ({exc})") from None
    keys = {"required_edges", "forbidden_edges", "required_orientations",
            "forbidden_orientations"}
    if not isinstance(data, dict) or not set(data) <= keys:
        raise AlgorithmError(f"--background {path}: expected an object with keys {sorted(keys)}")
    return BackgroundKnowledge.build(**data)


def _validate(args: argparse.Namespace) -> None:
    if not 0.0 < args.alpha < 1.0:
        raise CITestError(f"--alpha must be in (0, 1), got {args.alpha}")
    if args.max_depth is not None and args.max_depth < 0:
        raise AlgorithmError(f"--max-depth must be >= 0, got {args.max_depth}")
    algo = registry.get_algorithm(args.algorithm)
    if args.test is None:
        args.test = algo.default_test or DEFAULT_TEST
    registry.get_test(args.test)


def run(args: argparse.Namespace) -> int:
    if args.list:
        return _list()
    _validate(args)
    algo = registry.get_algorithm(args.algorithm)
    test_spec = registry.get_test(args.test)
    background = _background(args.background)
    t0 = time.perf_counter()
    dataset, data_info, truth = _load(args)
    load_seconds = time.perf_counter() - t0
    if test_spec.data == "discrete" and not dataset.is_discrete:
        raise CITestError(f"--test {test_spec.name} needs discrete data; the schema has "
                          "continuous columns")
    if test_spec.data == "continuous" and not dataset.is_continuous:
        raise CITestError(f"--test {test_spec.name} needs continuous data; the schema has "
                          "discrete columns")
    progress = None if args.quiet else Progress(label=f"discover {algo.name}/{test_spec.name}")
    ctx = registry.RunContext(
        args=args, dataset=dataset, names=tuple(dataset.names), test_name=test_spec.name,
        alpha=args.alpha, max_depth=args.max_depth, background=background,
        progress=progress, truth_dag=truth,
    )
    try:
        outcome = algo.run(ctx)
    finally:
        if progress is not None:
            progress.close()
    res = outcome.result
    doc: dict[str, Any] = {
        "algorithm": algo.name,
        "test": test_spec.name,
        "alpha": args.alpha,
        "max_depth": args.max_depth,
        "data": data_info,
    }
    doc.update(res.to_json(include_tests=args.include_tests))
    doc["timing"]["load_seconds"] = load_seconds
    true_cpdag = registry.truth_cpdag(truth)
    if true_cpdag is not None:
        from dpcg.metrics import compare

        doc["metrics"] = compare(res.cpdag, true_cpdag)
    for key, value in outcome.extra.items():
        doc[key] = value
    text = json.dumps(doc, indent=2, default=_json_default)
    try:
        if args.out is None:
            print(text)
        else:
            args.out.write_text(text + "\n")
        if args.dot is not None:
            args.dot.write_text(res.cpdag.to_dot())
        if args.graphml is not None:
            args.graphml.write_text(res.cpdag.to_graphml())
    except OSError as exc:
        raise DpcgError(f"cannot write output: {exc}") from None
    if not args.quiet:
        print(_summary(doc), file=sys.stderr)
    return 0


def _json_default(obj: object) -> Any:
    if hasattr(obj, "item"):  # numpy scalar
        return obj.item()
    if isinstance(obj, set | frozenset | tuple):
        return list(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def _summary(doc: dict[str, Any]) -> str:
    e = doc["edges"]
    src = doc["data"].get("dataset") or doc["data"].get("path")
    line = (f"{doc['algorithm']}/{doc['test']} on {src} ({doc['data']['rows']} rows): "
            f"{len(e['directed']) + len(e['undirected'])} edges ({len(e['directed'])} directed, "
            f"{len(e['undirected'])} undirected), {doc['tests']['count']} tests in "
            f"{doc['timing']['seconds']:.2f} s")
    if "metrics" in doc:
        line += f"; skeleton F1 {doc['metrics']['skeleton_f1']:.3f}, SHD {doc['metrics']['shd']}"
    if doc.get("budget_exhausted"):
        line += "; budget exhausted (graph so far)"
    return line
