"""``dpcg discover``: learn a CPDAG from a bundled network sample or a user's table.

Examples::

    dpcg discover --dataset alarm --rows 100000 --algorithm pc --test g2 --alpha 0.05 \\
        --seed 1 --out result.json
    dpcg discover --data table.csv --schema schema.json --test g2 --out result.json
    dpcg discover --dataset asia --algorithm laplace-pc --epsilon 1 --noise-seed 3

``--algorithm`` is ``pc`` (non-private) or a private algorithm of
:mod:`dpcg.private.registry`; ``--test`` a CI test of :mod:`dpcg.citests.registry`. The
flags of each algorithm's ``Params`` and of each test's options are derived from those
dataclasses; a flag that does not belong to the chosen algorithm or test is an error
(exit 2), never silently ignored. Every private run follows the one ledger policy of
:mod:`dpcg.private.ledger` (durable ledger by default). ``result.json`` holds the graph
(``nodes``, ``edges.directed``, ``edges.undirected``), ``tests.count``,
``timing.seconds``, ``privacy`` (the guarantee, ``null`` for ``pc``; the other private
keys are listed in :mod:`dpcg.private.run`) and, when the true graph is known,
``metrics`` (``skeleton_f1``, ``shd``, ...) against the true CPDAG.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from accounting.costs import Budget
from dpcg.citests.registry import (
    NoOptions,
    TestContext,
    TestSpec,
    Truth,
    get_test,
    make_options,
    option_infos,
    register_test,
    tests,
)
from dpcg.cli.engines import add_engine_arguments, load_with_engine
from dpcg.data import Schema, load_table
from dpcg.data.dataset import Dataset
from dpcg.datasets import load_network
from dpcg.errors import AlgorithmError, CITestError, DataValidationError, DpcgError
from dpcg.graph import CPDAG
from dpcg.metrics import compare
from dpcg.pc.background import BackgroundKnowledge
from dpcg.pc.engine import pc_stable
from dpcg.pc.oracle import DSeparationOracle
from dpcg.private.ledger import default_ledger_path, ledger_target
from dpcg.private.registry import AnyAlgorithm, algorithms, get_algorithm
from dpcg.private.run import discover_private

DEFAULT_ROWS = 10_000
#: ``--test`` of ``--algorithm pc`` when none is given
DEFAULT_TEST = "g2"
#: The non-private algorithm.
NONPRIVATE = "pc"
#: ``delta`` of the discrete private family when ``--delta`` is not given (shown in help).
DEFAULT_DELTA_HELP = "1e-6 for the discrete family, 0 for private-ci-pc"


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



# ------------------------------------------------------------------ dsep (CLI-only test)


def _build_dsep(ctx: TestContext[NoOptions]) -> DSeparationOracle:
    if ctx.truth_dag is None:
        raise CITestError("--test dsep needs the true DAG: use it with a bundled --dataset")
    nodes, edges = ctx.truth_dag
    return DSeparationOracle(nodes, edges)


register_test(TestSpec(
    name="dsep", options=NoOptions, build=_build_dsep,
    description="d-separation oracle on the true DAG (bundled networks only; no data used)"))


# ------------------------------------------------------------------ derived flags


@dataclass(frozen=True)
class DerivedFlag:
    """One flag derived from option fields: who declares it, and how to parse it."""

    flag: str
    dest: str
    help: str
    type: Callable[[str], object] | None
    metavar: str | None
    algorithms: tuple[str, ...]
    tests: tuple[str, ...]

    @property
    def owners(self) -> str:
        parts = []
        if self.algorithms:
            parts.append("--algorithm " + ", ".join(self.algorithms))
        if self.tests:
            parts.append("--test " + ", ".join(self.tests))
        return "; ".join(parts)


def derived_flags() -> dict[str, DerivedFlag]:
    """Every option field of every registered private algorithm's ``Params`` and every
    registered test's options, as one flag each (a flag shared by several owners must
    have the same field name and type everywhere)."""
    found: dict[str, DerivedFlag] = {}

    def add(owner_kind: str, owner: str, cls: type) -> None:
        for info in option_infos(cls):
            old = found.get(info.flag)
            if old is None:
                old = DerivedFlag(info.flag, info.name, info.help, info.type, info.metavar,
                                  (), ())
            elif old.dest != info.name or old.type != info.type:
                raise DpcgError(f"{info.flag}: declared as {old.dest} and as {info.name} "
                                f"(by {owner}) with different meanings")
            if owner_kind == "algorithm":
                old = DerivedFlag(old.flag, old.dest, old.help, old.type, old.metavar,
                                  tuple(sorted((*old.algorithms, owner))), old.tests)
            else:
                old = DerivedFlag(old.flag, old.dest, old.help, old.type, old.metavar,
                                  old.algorithms, tuple(sorted((*old.tests, owner))))
            found[info.flag] = old

    for algo in algorithms().values():
        add("algorithm", algo.name, algo.params)
    for spec in tests().values():
        add("test", spec.name, spec.options)
    return found


#: Flags of the privacy budget and the ledger: private algorithms only.
PRIVATE_FLAGS = {"epsilon": "--epsilon", "delta": "--delta", "noise_seed": "--noise-seed",
                 "ledger": "--ledger", "no_ledger": "--no-ledger",
                 "dataset_id": "--dataset-id", "lifetime_epsilon": "--lifetime-epsilon",
                 "lifetime_delta": "--lifetime-delta"}


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "discover",
        help="learn a causal graph (CPDAG) from data",
        description="Learn a CPDAG with PC-stable or a private variant. Options of an "
                    "algorithm or test other than the chosen ones are errors.",
    )
    src = p.add_argument_group("data (one of --dataset or --data)")
    src.add_argument("--dataset", metavar="NAME",
                     help="bundled network to sample from (see `dpcg datasets`)")
    src.add_argument("--data", metavar="FILE", type=Path,
                     help="your table (.csv/.tsv/.parquet/.npy); needs --schema")
    src.add_argument("--schema", metavar="FILE", type=Path, help="schema JSON for --data")
    add_engine_arguments(src)  # --engine, --spark-master, --memory-limit (dpcg.cli.engines)
    src.add_argument("--rows", type=int, default=None,
                     help=f"rows to sample from --dataset (default {DEFAULT_ROWS})")
    src.add_argument("--seed", type=int, default=None,
                     help="seed for sampling --dataset (default 0); the privacy noise is "
                          "seeded with --noise-seed")
    src.add_argument("--clip", action="store_true",
                     help="clip out-of-bounds continuous values to the schema bounds")
    algo = p.add_argument_group("algorithm and CI test")
    names = ", ".join([NONPRIVATE, *algorithms()])
    algo.add_argument("--algorithm", default=NONPRIVATE, metavar="NAME",
                      help=f"discovery algorithm: {names} (default pc); see --list")
    algo.add_argument("--test", default=None, metavar="NAME",
                      help="conditional-independence test (default: the algorithm's own, g2 "
                           "for pc, kendall-split for the private discrete family, privgcm "
                           "for private-ci-pc); see --list")
    algo.add_argument("--alpha", type=float, default=0.05,
                      help="significance level of the CI tests (default 0.05)")
    algo.add_argument("--max-depth", type=int, default=None,
                      help="largest conditioning-set size (default: no limit)")
    algo.add_argument("--background", type=Path, metavar="FILE",
                      help="background knowledge JSON: required_edges, forbidden_edges, "
                           "required_orientations, forbidden_orientations (lists of pairs)")
    algo.add_argument("--list", action="store_true",
                      help="list the registered algorithms and CI tests, then exit")
    budget = p.add_argument_group("privacy budget (private algorithms only)")
    budget.add_argument("--epsilon", type=float, default=None,
                        help="TOTAL privacy budget epsilon of the run (required)")
    budget.add_argument("--delta", type=float, default=None,
                        help=f"TOTAL privacy budget delta (default {DEFAULT_DELTA_HELP}; "
                             "0 forces pure DP)")
    budget.add_argument("--noise-seed", type=int, dest="noise_seed", metavar="S",
                        default=None,
                        help="seed the privacy noise (reproducible runs; marked as seeded in "
                             "the ledger). Default: a secure random seed")
    led = p.add_argument_group("ledger (private algorithms only)")
    led.add_argument("--ledger", metavar="PATH", type=Path, default=None,
                     help=f"record the run in this ledger file (default: "
                          f"./{default_ledger_path()})")
    led.add_argument("--no-ledger", action="store_true", dest="no_ledger",
                     help="keep the run's entries in memory only (experiments; nothing "
                          "durable)")
    led.add_argument("--dataset-id", metavar="ID", dest="dataset_id", default=None,
                     help="declared id of the dataset in the ledger (required for --data; "
                          "bundled data defaults to bundled:NAME:rows=N:seed=S)")
    led.add_argument("--lifetime-epsilon", type=float, dest="lifetime_epsilon", metavar="E",
                     default=None,
                     help="lifetime epsilon of a dataset id the ledger does not know yet "
                          "(default: this run's epsilon); an error for a registered id")
    led.add_argument("--lifetime-delta", type=float, dest="lifetime_delta", metavar="D",
                     default=None,
                     help="lifetime delta for a new dataset id (default: this run's delta)")
    groups: dict[str, argparse._ArgumentGroup] = {}
    core = {a.dest for a in p._actions}
    for d in derived_flags().values():
        if d.dest in core:
            raise DpcgError(f"{d.flag}: the option field {d.dest!r} of {d.owners} clashes "
                            "with a dpcg discover option; rename the field")
        kind = "algorithm" if d.algorithms else "test"
        title = f"{kind} options (apply to {d.owners})"
        if title not in groups:
            groups[title] = p.add_argument_group(title)
        kwargs: dict[str, Any] = {"dest": d.dest, "default": argparse.SUPPRESS,
                                  "help": d.help}
        if d.type is None:
            kwargs["action"] = "store_true"
        else:
            kwargs["type"] = d.type
            if d.metavar is not None:
                kwargs["metavar"] = d.metavar
        groups[title].add_argument(d.flag, **kwargs)
    out = p.add_argument_group("output")
    out.add_argument("--out", type=Path, metavar="FILE",
                     help="write result JSON here (default: print it to stdout)")
    out.add_argument("--dot", type=Path, metavar="FILE", help="also write Graphviz DOT")
    out.add_argument("--graphml", type=Path, metavar="FILE", help="also write GraphML")
    out.add_argument("--include-tests", action="store_true",
                     help="list every CI test (x, y, S, statistic, p-value) in the JSON")
    out.add_argument("--quiet", action="store_true", help="no progress or summary on stderr")
    p.set_defaults(func=run)


def _list() -> int:
    algos, specs = algorithms(), tests()
    width = max(len(name) for name in [NONPRIVATE, *algos, *specs]) + 2
    print("algorithms:")
    print(f"  {NONPRIVATE:<{width}}non-private PC-stable (Colombo & Maathuis 2014) with the "
          f"--test CI test (default --test {DEFAULT_TEST})")
    for a in algos.values():
        print(f"  {a.name:<{width}}{a.description} (default --test {a.default_test}) "
              "[private]")
    print("CI tests:")
    for t in specs.values():
        tag = " [private]" if t.private else ""
        print(f"  {t.name:<{width}}{t.description}{tag}")
    return 0


def _load(args: argparse.Namespace) -> tuple[Dataset, dict[str, Any], Truth | None]:
    if (args.dataset is None) == (args.data is None):
        raise DataValidationError("give exactly one of --dataset NAME or --data FILE")
    if args.dataset is not None:
        if args.schema is not None:
            raise DataValidationError("--schema only applies to --data")
        rows = DEFAULT_ROWS if args.rows is None else args.rows
        if rows <= 0:
            raise DataValidationError(f"--rows must be a positive integer, got {rows}")
        seed = 0 if args.seed is None else args.seed
        net = load_network(args.dataset)
        dataset = net.sample(rows, seed)
        truth: Truth = (tuple(net.nodes), tuple((str(a), str(b)) for a, b in net.dag_edges))
        info = {"source": "bundled", "dataset": args.dataset, "rows": rows, "seed": seed}
        return dataset, info, truth
    if args.schema is None:
        raise DataValidationError("--data needs --schema FILE (the declared schema JSON)")
    if args.rows is not None:
        raise DataValidationError("--rows only applies to --dataset (the file is used whole)")
    if args.seed is not None:
        raise DataValidationError("--seed only applies to --dataset (it seeds the sample); "
                                  "the privacy noise is seeded with --noise-seed")
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


@dataclass(frozen=True)
class Choice:
    """The validated choice of algorithm and test, with their typed options."""

    algorithm: AnyAlgorithm | None  # None: non-private pc
    test: TestSpec[Any]  # the test the run uses (after the algorithm's aliases)
    requested_test: str
    params: object | None
    test_options: object


def _choose(args: argparse.Namespace) -> Choice:
    """Validate the algorithm, the test and every given option (nothing else runs)."""
    if not 0.0 < args.alpha < 1.0:
        raise CITestError(f"--alpha must be in (0, 1), got {args.alpha}")
    if args.max_depth is not None and args.max_depth < 0:
        raise AlgorithmError(f"--max-depth must be >= 0, got {args.max_depth}")
    flags = derived_flags()
    given = {d.dest: getattr(args, d.dest) for d in flags.values() if hasattr(args, d.dest)}
    flag_of = {d.dest: d for d in flags.values()}
    if args.algorithm != NONPRIVATE and args.algorithm not in algorithms():
        raise AlgorithmError(f"unknown --algorithm {args.algorithm!r}; choose from "
                             f"{[NONPRIVATE, *sorted(algorithms())]}")
    algo = None if args.algorithm == NONPRIVATE else get_algorithm(args.algorithm)
    if algo is None:
        private_given = [flag for dest, flag in PRIVATE_FLAGS.items()
                         if getattr(args, dest) not in (None, False)]
        if private_given:
            raise AlgorithmError(f"{', '.join(private_given)}: only apply to a private "
                                 f"--algorithm ({', '.join(algorithms())}), not to pc")
        requested = DEFAULT_TEST if args.test is None else args.test
        spec = get_test(requested)
        params_fields: set[str] = set()
    else:
        if args.epsilon is None:
            raise AlgorithmError(f"--algorithm {algo.name} needs --epsilon (the total budget)")
        requested = algo.default_test if args.test is None else args.test
        get_test(requested)
        spec = get_test(algo.resolve_test(requested))
        params_fields = {i.name for i in option_infos(algo.params)}
    test_fields = {i.name for i in option_infos(spec.options)}
    for dest in given:
        if dest not in params_fields and dest not in test_fields:
            d = flag_of[dest]
            chosen = f"--algorithm {args.algorithm} --test {spec.name}"
            raise (AlgorithmError if d.algorithms else CITestError)(
                f"{d.flag}: does not apply to {chosen} (it applies to {d.owners})")
    params = None
    if algo is not None:
        params = make_options(algo.params, {k: v for k, v in given.items()
                                            if k in params_fields}, AlgorithmError)
    test_options = make_options(spec.options, {k: v for k, v in given.items()
                                               if k in test_fields and k not in params_fields})
    return Choice(algo, spec, requested, params, test_options)


def _check_data(spec: TestSpec[Any], dataset: Dataset) -> None:
    if spec.data == "discrete" and not dataset.is_discrete:
        raise CITestError(f"--test {spec.name} needs discrete data; the schema has "
                          "continuous columns")
    if spec.data == "continuous" and not dataset.is_continuous:
        raise CITestError(f"--test {spec.name} needs continuous data; the schema has "
                          "discrete columns")


def run(args: argparse.Namespace) -> int:
    if args.list:
        return _list()
    choice = _choose(args)
    background = _background(args.background)
    t0 = time.perf_counter()
    dataset, data_info, truth = load_with_engine(args, choice.algorithm, _load)  # engines
    load_seconds = time.perf_counter() - t0
    if isinstance(dataset, Dataset):  # a table engine: the private source checks its columns
        _check_data(choice.test, dataset)
    name = NONPRIVATE if choice.algorithm is None else choice.algorithm.name
    progress = None if args.quiet else Progress(label=f"discover {name}/{choice.requested_test}")
    extra: dict[str, Any]
    try:
        if choice.algorithm is None:
            tester = choice.test.make(TestContext(dataset, args.alpha, choice.test_options,
                                                  truth))
            res = pc_stable(tester, tuple(dataset.names), max_depth=args.max_depth,
                            background=background, progress=progress)
            extra = {"privacy": None}
        else:
            algo = choice.algorithm
            delta = algo.default_delta if args.delta is None else args.delta
            default_id = None
            if data_info["source"] == "bundled":
                default_id = (f"bundled:{data_info['dataset']}:rows={data_info['rows']}:"
                              f"seed={data_info['seed']}")
            target = ledger_target(
                budget=Budget(args.epsilon, delta), no_ledger=args.no_ledger,
                path=args.ledger, dataset_id=args.dataset_id, default_dataset_id=default_id,
                lifetime_epsilon=args.lifetime_epsilon, lifetime_delta=args.lifetime_delta)
            private = discover_private(
                dataset, algo, epsilon=args.epsilon, delta=delta, test=choice.requested_test,
                alpha=args.alpha, noise_seed=args.noise_seed, max_depth=args.max_depth,
                params=choice.params, test_options=choice.test_options, ledger=target,
                background=background, progress=progress)
            res = private.pc
            extra = private.extra()
    finally:
        if progress is not None:
            progress.close()
    doc: dict[str, Any] = {
        "algorithm": name,
        "test": choice.requested_test,
        "alpha": args.alpha,
        "max_depth": args.max_depth,
        "data": data_info,
    }
    doc.update(res.to_json(include_tests=args.include_tests))
    doc["timing"]["load_seconds"] = load_seconds
    if truth is not None:
        doc["metrics"] = compare(res.cpdag, CPDAG.from_dag(*truth))
    doc.update(extra)
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
