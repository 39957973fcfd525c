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
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from dpcg.citests.registry import NoOptions, TestContext, TestSpec, register_test, tests
from dpcg.cli.discover_args import DEFAULT_ROWS, DEFAULT_TEST, NONPRIVATE
from dpcg.data.dataset import DataClippingWarning
from dpcg.data.readers import unsafe_debug_errors
from dpcg.errors import AlgorithmError, CITestError, DataValidationError, DpcgError
from dpcg.pc.background import BackgroundKnowledge
from dpcg.pc.oracle import DSeparationOracle
from dpcg.pipeline.request import DEFAULT, DiscoverRequest, NetworkSpec
from dpcg.pipeline.run import execute
from dpcg.private.registry import algorithms
from dpcg.private.run import diagnostics_json


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


def _data(args: argparse.Namespace) -> object:
    """What ``--dataset``/``--data`` name (flag combinations are checked here; the data
    are read by the pipeline)."""
    if (args.dataset is None) == (args.data is None):
        raise DataValidationError("give exactly one of --dataset NAME or --data FILE")
    if args.dataset is not None:
        if args.schema is not None:
            raise DataValidationError("--schema only applies to --data")
        rows = DEFAULT_ROWS if args.rows is None else args.rows
        if rows <= 0:
            raise DataValidationError(f"--rows must be a positive integer, got {rows}")
        return NetworkSpec(args.dataset, rows, 0 if args.seed is None else args.seed)
    if args.schema is None:
        raise DataValidationError("--data needs --schema FILE (the declared schema JSON)")
    if args.rows is not None:
        raise DataValidationError("--rows only applies to --dataset (the file is used whole)")
    if args.seed is not None:
        raise DataValidationError("--seed only applies to --dataset (it seeds the sample); "
                                  "the privacy noise is seeded with --noise-seed")
    return args.data


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


def _options(args: argparse.Namespace) -> dict[str, object]:
    """The derived flags given on the command line (the algorithm's ``Params`` fields and
    the test's option fields), by field name: every derived flag the parser itself added
    (``derived_dests``, from the manifest or, when the command line names a derived
    flag, live), so a field the manifest does not list yet (a stale
    ``discover_flags.json``) reaches the request instead of being dropped while the run
    goes on with its default (found by a privacy review, 2026-12-03)."""
    dests = getattr(args, "derived_dests", ())
    return {d: getattr(args, d) for d in dests if hasattr(args, d)}


def request_for(args: argparse.Namespace) -> DiscoverRequest:
    """THE request of ``dpcg discover`` (validated: nothing read, nothing charged)."""
    if args.no_ledger and args.ledger is not None:
        raise AlgorithmError("--no-ledger: --ledger only apply to a run recorded in a ledger")
    if args.no_ledger and args.algorithm == NONPRIVATE:
        raise AlgorithmError("--no-ledger: only apply to a private algorithm, not to pc")
    return DiscoverRequest.create(
        _data(args), schema=args.schema, algorithm=args.algorithm, test=args.test,
        alpha=args.alpha, max_depth=args.max_depth, background=_background(args.background),
        epsilon=args.epsilon, delta=args.delta, noise_seed=args.noise_seed,
        ledger=None if args.no_ledger else (DEFAULT if args.ledger is None else args.ledger),
        dataset_id=args.dataset_id, lifetime_epsilon=args.lifetime_epsilon,
        lifetime_delta=args.lifetime_delta, lifetime_rule=args.lifetime_rule,
        signing_key=args.ledger_key, clip=args.clip,
        engine=args.engine, table=args.duckdb_table, spark_master=args.spark_master,
        memory_limit=args.memory_limit, max_seconds=args.max_seconds,
        max_memory=args.max_memory, workers=args.workers, options=_options(args),
        spelling="cli")


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
    rho = (f"rho={rem['rho']:g} of {rem['lifetime_rho']:g} (zcdp lifetime; as "
           if "rho" in rem else "")
    return (f"ledger: {info['path']}; dataset {info['dataset_id']!r}: remaining lifetime "
            f"{rho}epsilon={rem.get('epsilon', float('nan')):g}, "
            f"delta={rem.get('delta', float('nan')):g}{')' if rho else ''} (after this run; "
            "the lifetime is per ledger file and dataset id)")


@contextlib.contextmanager
def _quiet_data_notes(args: argparse.Namespace) -> Iterator[None]:
    """The data layer's warnings (``--clip``) printed as one clean line each; values, rows
    and counts only under ``--unsafe-debug-errors``. Other warnings are re-emitted once
    the recording has stopped."""
    caught: list[warnings.WarningMessage] = []
    try:
        with unsafe_debug_errors(bool(getattr(args, "unsafe_debug_errors", False))), \
                warnings.catch_warnings(record=True) as recorded:
            warnings.simplefilter("always", DataClippingWarning)
            try:
                yield
            finally:
                caught = list(recorded)
    finally:
        for w in caught:
            if issubclass(w.category, DataClippingWarning):
                print(f"dpcg discover: note: {w.message}", file=sys.stderr)
            else:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def run(args: argparse.Namespace) -> int:
    if args.list:
        return _list()
    request = request_for(args)
    for flag, path in _outputs(args):  # pre-flight: before any data is read or budget spent
        _check_writable(flag, path)
    progress: Any = None
    # A private run's progress line is drawn on a terminal only: redrawn into a
    # redirected log it would record the run's pace per level (a timing side channel;
    # docs/privacy/threat-model.md). A non-private run on a terminal gets the engine's
    # line with the pre-flight estimate after level 0, tests pending and an ETA.
    if not args.quiet and not request.private and sys.stderr.isatty():
        from dpcg.pc.progress import ProgressLine

        progress = ProgressLine(max_depth=args.max_depth)
    elif not args.quiet and (not request.private or sys.stderr.isatty()):
        progress = Progress(label=_label(request), show_time=not request.private)
    try:
        with _quiet_data_notes(args):
            result = execute(request, progress=progress, include_tests=args.include_tests)
    finally:
        if progress is not None and hasattr(progress, "close"):
            progress.close()
    doc = result.document
    diagnostics = diagnostics_json(result.pc, load_seconds=result.load_seconds)
    text = json.dumps(doc, indent=2, default=_json_default)
    try:
        if args.out is None:
            print(text)
        else:
            _write_atomic(args.out, text + "\n")
        if args.dot is not None:
            _write_atomic(args.dot, result.cpdag.to_dot())
        if args.graphml is not None:
            _write_atomic(args.graphml, result.cpdag.to_graphml())
        if args.diagnostics is not None:
            _write_atomic(args.diagnostics, json.dumps(diagnostics, indent=2) + "\n")
    except OSError as exc:
        raise DpcgError(f"cannot write output: {exc}") from None
    if request.private and not args.quiet:
        print(_ledger_line(doc), file=sys.stderr)
        note = _lifetime_note(doc)
        if note:
            print(note, file=sys.stderr)
    if not args.quiet:
        print(_summary(doc), file=sys.stderr)
    return 0


def _label(request: DiscoverRequest) -> str:
    """``discover ALGORITHM/TEST`` (the test the user named, else the default: the
    algorithm's own, or the schema's for pc and auto)."""
    test = request.test
    if test is None and request.private and request.algorithm != "auto":
        from dpcg.private.registry import get_algorithm

        test = get_algorithm(request.algorithm).default_test
    return f"discover {request.algorithm}/{test or 'auto'}"


def _lifetime_note(doc: dict[str, Any]) -> str | None:
    """A note when this run registered a new dataset id whose lifetime defaulted to the
    run's own budget (so the id may have little or nothing left for later runs)."""
    info = doc.get("ledger") or {}
    reg = info.get("registered_lifetime")
    if not reg or reg.get("declared"):
        return None
    return (f"note: dataset {info['dataset_id']!r} was new and is registered with lifetime "
            f"epsilon={reg['epsilon']:g}, delta={reg['delta']:g}: this run's budget, "
            "because no --lifetime-epsilon/--lifetime-delta was given. A registered "
            "lifetime never changes; declare it on the first run (or with `dpcg ledger "
            "init`) to leave room for later runs")


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
    stopped = doc.get("stopped")
    if isinstance(stopped, dict):
        line += f"; stopped: {stopped.get('message', stopped.get('limit'))} (graph so far)"
    return line
