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
``timing.seconds`` (non-private runs only: a private run's timings are a side channel,
written only to ``--diagnostics FILE``), ``privacy`` (the guarantee, ``null`` for
``pc``; the other private keys are listed in :mod:`dpcg.private.run`) and, when the true
graph is known,
``metrics`` (``skeleton_f1``, ``shd``, ...) against the true CPDAG.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from accounting.costs import Budget
from dpcg.api import load_schema, result_document
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
from dpcg.cli.discover_args import (
    DEFAULT_ROWS,
    DEFAULT_TEST,
    NONPRIVATE,
    PRIVATE_FLAGS,
    derived_flags,
)
from dpcg.cli.engines import load_with_engine
from dpcg.data import load_table
from dpcg.data.dataset import DataClippingWarning, Dataset
from dpcg.data.readers import unsafe_debug_errors
from dpcg.datasets import is_bif_path, load_bif_file, load_network
from dpcg.errors import AlgorithmError, CITestError, DataValidationError, DpcgError
from dpcg.graph import CPDAG
from dpcg.pc.background import BackgroundKnowledge
from dpcg.pc.engine import pc_stable
from dpcg.pc.oracle import DSeparationOracle
from dpcg.private.ledger import ledger_target
from dpcg.private.registry import AnyAlgorithm, algorithms, get_algorithm
from dpcg.private.run import diagnostics_json, discover_private


class Progress:
    """The progress line on stderr, drawn by tqdm (the optional ``progress`` extra; no
    progress line without it), shown only once a run passes ``delay`` seconds and
    redrawn at most every ``interval`` seconds (default 0.2 s on a terminal, 5 s
    otherwise). ``show_time=False`` (private runs) leaves the elapsed time off the
    screen: it is a side channel (docs/privacy/threat-model.md)."""

    def __init__(self, stream: TextIO | None = None, *, delay: float = 1.0,
                 label: str = "discover", show_time: bool = True,
                 interval: float | None = None) -> None:
        self._bar: Any = None
        try:
            # Deferred on purpose: an optional extra, and `dpcg --help` must stay fast.
            from tqdm import tqdm
        except ImportError:
            return
        out = stream if stream is not None else sys.stderr
        tty = bool(getattr(out, "isatty", lambda: False)())
        every = (0.2 if tty else 5.0) if interval is None else interval
        fmt = "{desc}: {postfix}" + (" [{elapsed}]" if show_time else "")
        self._bar = tqdm(file=out, desc=label, postfix="starting", bar_format=fmt,
                         delay=delay, mininterval=every, miniters=1, leave=False,
                         dynamic_ncols=tty)

    def __call__(self, level: int, tests: int) -> None:
        bar = self._bar
        if bar is None:
            return
        bar.set_postfix_str(f"level {level}, {tests} tests", refresh=False)
        bar.update(max(tests - bar.n, 0))

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


# ------------------------------------------------------------------ dsep (CLI-only test)


def _build_dsep(ctx: TestContext[NoOptions]) -> DSeparationOracle:
    if ctx.truth_dag is None:
        raise CITestError("--test dsep needs the true DAG: use it with a bundled --dataset")
    nodes, edges = ctx.truth_dag
    return DSeparationOracle(nodes, edges)


register_test(TestSpec(
    name="dsep", options=NoOptions, build=_build_dsep,
    description="d-separation oracle on the true DAG (bundled networks only; no data used)"))


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
        info: dict[str, Any]
        if is_bif_path(args.dataset):
            net, file_id = load_bif_file(args.dataset)
            info = {"source": "bif", "dataset": args.dataset, "id": file_id, "rows": rows,
                    "seed": seed}
        else:
            net = load_network(args.dataset)
            info = {"source": "bundled", "dataset": args.dataset, "rows": rows, "seed": seed}
        dataset = net.sample(rows, seed)
        truth: Truth = (tuple(net.nodes), tuple((str(a), str(b)) for a, b in net.dag_edges))
        return dataset, info, truth
    if args.schema is None:
        raise DataValidationError("--data needs --schema FILE (the declared schema JSON)")
    if args.rows is not None:
        raise DataValidationError("--rows only applies to --dataset (the file is used whole)")
    if args.seed is not None:
        raise DataValidationError("--seed only applies to --dataset (it seeds the sample); "
                                  "the privacy noise is seeded with --noise-seed")
    schema = load_schema(args.schema, private=args.algorithm != NONPRIVATE)
    dataset = load_table(args.data, schema, clip=args.clip)
    info = {"source": "file", "path": str(args.data), "schema": str(args.schema),
            "rows": int(dataset.n)}
    return dataset, info, None


def _background(path: Path | None) -> BackgroundKnowledge | None:
    if path is None:
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise AlgorithmError(f"--background {path}: cannot read JSON ({exc})") from None
    except UnicodeDecodeError:
        raise AlgorithmError(f"--background {path}: not UTF-8 text (rule: the background "
                             "knowledge is a JSON file in UTF-8)") from None
    except (ValueError, RecursionError):
        raise AlgorithmError(f"--background {path}: cannot read JSON (rule: numbers of at "
                             "most 4300 digits, nesting of reasonable depth)") from None
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


def _outputs(args: argparse.Namespace) -> list[tuple[str, Path]]:
    """The files this run writes, by flag."""
    return [(flag, path) for flag, path in (("--out", args.out), ("--dot", args.dot),
                                            ("--graphml", args.graphml),
                                            ("--diagnostics", args.diagnostics))
            if path is not None]


def _check_writable(flag: str, path: Path) -> None:
    """Pre-flight: ``path`` can be written atomically (a temp file created and removed in
    its directory; an existing target must be a writable file). Raises before any budget
    is reserved, so an unwritable output never costs a run."""
    if path.is_dir():
        raise DpcgError(f"{flag} {path}: is a directory (rule: outputs are files); "
                        "nothing was run or charged")
    if path.exists() and not os.access(path, os.W_OK):
        raise DpcgError(f"{flag} {path}: not writable; nothing was run or charged")
    directory = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise DpcgError(f"{flag} {path}: cannot create a file in {directory} "
                        f"({exc.strerror or exc}); nothing was run or charged") from None
    os.close(fd)
    os.unlink(tmp)


def _write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically: a temp file in the same directory, flushed,
    then ``os.replace`` (a reader never sees a half-written result)."""
    directory = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _ledger_line(extra: dict[str, Any]) -> str:
    """One stderr line: where the run is recorded and the dataset's remaining lifetime
    (public: a function of declared budgets only)."""
    info = extra.get("ledger")
    if not info:
        return "ledger: none (--no-ledger: nothing durable, no lifetime enforced)"
    rem = info.get("remaining_lifetime") or {}
    return (f"ledger: {info['path']}; dataset {info['dataset_id']!r}: remaining lifetime "
            f"epsilon={rem.get('epsilon', float('nan')):g}, "
            f"delta={rem.get('delta', float('nan')):g} (after this run; the lifetime is per "
            "ledger file and dataset id)")


def _load_quietly(args: argparse.Namespace) -> tuple[Dataset, dict[str, Any], Truth | None]:
    """:func:`_load` with the data layer's warnings (``--clip``) printed as one clean line
    each; values, rows and counts only under ``--unsafe-debug-errors``."""
    with unsafe_debug_errors(bool(getattr(args, "unsafe_debug_errors", False))), \
            warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DataClippingWarning)
        loaded = _load(args)
    for w in caught:
        if issubclass(w.category, DataClippingWarning):
            print(f"dpcg discover: note: {w.message}", file=sys.stderr)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return loaded


def run(args: argparse.Namespace) -> int:
    if args.list:
        return _list()
    choice = _choose(args)
    private_run = choice.algorithm is not None
    for flag, path in _outputs(args):  # pre-flight: before any data is read or budget spent
        _check_writable(flag, path)
    background = _background(args.background)
    t0 = time.perf_counter()
    dataset, data_info, truth = load_with_engine(args, choice.algorithm, _load_quietly)
    load_seconds = time.perf_counter() - t0
    if isinstance(dataset, Dataset):  # a table engine: the private source checks its columns
        _check_data(choice.test, dataset)
    name = NONPRIVATE if choice.algorithm is None else choice.algorithm.name
    progress = None if args.quiet else Progress(label=f"discover {name}/{choice.requested_test}",
                                                show_time=not private_run)
    extra: dict[str, Any]
    try:
        if choice.algorithm is None:
            if isinstance(dataset, Dataset):
                tester = choice.test.make(TestContext(dataset, args.alpha,
                                                      choice.test_options, truth))
            else:  # a table engine (dpcg/cli/engines.py): counted where the data live
                from dpcg.private.engines import engine_tester

                tester = engine_tester(dataset, choice.test.name, args.alpha,
                                       choice.test_options)
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
            elif data_info["source"] == "bif":
                # by the file's content, not its path
                default_id = (f"{data_info['id']}:rows={data_info['rows']}:"
                              f"seed={data_info['seed']}")
            target = ledger_target(
                budget=Budget(args.epsilon, delta), no_ledger=args.no_ledger,
                path=args.ledger, dataset_id=args.dataset_id, default_dataset_id=default_id,
                lifetime_epsilon=args.lifetime_epsilon, lifetime_delta=args.lifetime_delta,
                signing_key=args.ledger_key)
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
    doc = result_document(algorithm=name, test=choice.requested_test, alpha=args.alpha,
                          max_depth=args.max_depth, data=data_info, pc=res, extra=extra,
                          truth=None if truth is None else CPDAG.from_dag(*truth),
                          include_tests=args.include_tests, load_seconds=load_seconds)
    diagnostics = diagnostics_json(res, load_seconds=load_seconds)
    text = json.dumps(doc, indent=2, default=_json_default)
    try:
        if args.out is None:
            print(text)
        else:
            _write_atomic(args.out, text + "\n")
        if args.dot is not None:
            _write_atomic(args.dot, res.cpdag.to_dot())
        if args.graphml is not None:
            _write_atomic(args.graphml, res.cpdag.to_graphml())
        if args.diagnostics is not None:
            _write_atomic(args.diagnostics, json.dumps(diagnostics, indent=2) + "\n")
    except OSError as exc:
        raise DpcgError(f"cannot write output: {exc}") from None
    if private_run:
        print(_ledger_line(extra), file=sys.stderr)
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
            f"{len(e['undirected'])} undirected), {doc['tests']['count']} tests")
    if "timing" in doc:  # non-private runs only (a private run's timing is a side channel)
        line += f" in {doc['timing']['seconds']:.2f} s"
    if "metrics" in doc:
        line += f"; skeleton F1 {doc['metrics']['skeleton_f1']:.3f}, SHD {doc['metrics']['shd']}"
    if doc.get("budget_exhausted"):
        line += "; budget exhausted (graph so far)"
    return line
