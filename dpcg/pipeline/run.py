"""``execute``: THE pipeline of every discovery run (CLI and Python API alike).

request (validated once) -> the algorithm and test (``auto`` and the schema's default
test resolved from public facts) -> their typed options -> the data, resolved once to a
Dataset or a table engine -> non-private PC, or the private run sequence
(:func:`dpcg.private.run.discover_private`, the engine room: it takes inputs this
pipeline has already validated and is called from nowhere else in the product) under the
one ledger policy (:func:`dpcg.private.ledger.ledger_target`) -> :class:`DiscoveryResult`.

:func:`dpcg.discover` (and ``dpcg discover``) is the one public function; it builds a
:class:`~dpcg.pipeline.request.DiscoverRequest` and calls :func:`execute`. The only
thing :func:`execute` takes beyond the request is internal: ``scores``, a score cache
shared by many runs on ONE dataset (the advisor, the benchmarks' references;
docs/internals.md, "The score-cache seam").
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpcg.errors import AlgorithmError, CITestError
from dpcg.pipeline.data import Resolved, check_test_data, resolve
from dpcg.pipeline.request import AUTO, DEFAULT, NONPRIVATE, DiscoverRequest
from dpcg.pipeline.result import DiscoveryResult, result_document

__all__ = ["Choice", "choose", "execute"]

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Choice:
    """The validated algorithm and test of a run, with their typed options."""

    algorithm: Any  # a registered PrivateAlgorithm; None for non-private pc
    test: Any  # the TestSpec the run uses (after the algorithm's aliases)
    requested_test: str
    params: object | None
    test_options: object
    #: Why ``auto`` chose this (None when the user chose).
    auto: str | None = None


def _owners(option: str) -> tuple[list[str], list[str]]:
    """The registered algorithms and tests that have the option field ``option``."""
    from dpcg.citests.registry import option_infos, tests
    from dpcg.private.registry import algorithms

    algos = [a.name for a in algorithms().values()
             if option in {i.name for i in option_infos(a.params)}]
    specs = [t.name for t in tests().values()
             if option in {i.name for i in option_infos(t.options)}]
    return algos, specs


def _split(req: DiscoverRequest, params_cls: type | None, test_cls: type,
           where: str) -> tuple[dict[str, object], dict[str, object]]:
    from dpcg.citests.registry import option_infos

    pfields = {i.name for i in option_infos(params_cls)} if params_cls is not None else set()
    tfields = {i.name for i in option_infos(test_cls)}
    options = dict(req.options)
    unknown = sorted(set(options) - pfields - tfields)
    if unknown:
        algos, specs = _owners(unknown[0])
        owners = "; ".join(part for part in (
            "algorithm " + ", ".join(algos) if algos else "",
            "test " + ", ".join(specs) if specs else "") if part)
        error = AlgorithmError if algos or not specs else CITestError
        raise error(
            f"{', '.join(req.name(u) for u in unknown)}: not an option of {where} (its "
            f"options: {sorted(req.name(f) for f in pfields | tfields) or 'none'}"
            + (f"; {req.name(unknown[0])} belongs to {owners}" if owners else "")
            + "; `dpcg discover --help` lists them)")
    return ({k: v for k, v in options.items() if k in pfields},
            {k: v for k, v in options.items() if k in tfields and k not in pfields})


def choose(req: DiscoverRequest, kind: str | None = None, n: int | None = None) -> Choice:
    """The algorithm, the test and their options (nothing is read or charged). A
    non-private run without a test, and ``auto``, need the (public) schema ``kind``
    (:func:`dpcg.pipeline.choose.schema_kind`)."""
    from dpcg.citests.registry import get_test, make_options
    from dpcg.private.registry import algorithms, get_algorithm

    auto_why = None
    name, requested = req.algorithm, req.test
    if name == AUTO:
        from dpcg.pipeline.choose import choose_auto

        if kind is None or n is None or req.epsilon is None:
            raise AlgorithmError("algorithm 'auto' needs the declared schema, n and epsilon")
        picked = choose_auto(kind, n, float(req.epsilon))
        name, auto_why = picked.algorithm, picked.why
        if requested is None:
            requested = picked.test
    if name == NONPRIVATE:
        if requested is None:
            from dpcg.pipeline.choose import default_test

            requested = default_test("discrete" if kind is None else kind)
        spec = get_test(requested)
        _, topts = _split(req, None, spec.options, f"pc with test {requested!r}")
        return Choice(None, spec, requested, None, make_options(spec.options, topts))
    if name not in algorithms():
        raise AlgorithmError(f"unknown {req.name('algorithm')} {name!r}; choose from "
                             f"{[NONPRIVATE, AUTO, *sorted(algorithms())]}")
    algo = get_algorithm(name)
    requested = algo.default_test if requested is None else requested
    get_test(requested)
    spec = get_test(algo.resolve_test(requested))
    popts, topts = _split(req, algo.params, spec.options,
                          f"algorithm {algo.name!r} with test {requested!r}")
    params = make_options(algo.params, popts, AlgorithmError)
    return Choice(algo, spec, requested, params, make_options(spec.options, topts), auto_why)


def _is_discrete_algorithm(algo: object) -> bool:
    if algo is None:  # non-private pc: no private module is imported
        return False
    from dpcg.private.common import DiscreteAlgorithm

    return isinstance(algo, DiscreteAlgorithm)


def _kind_of(source: object) -> str:
    from dpcg.data.dataset import Dataset
    from dpcg.pipeline.choose import schema_kind

    return schema_kind(source.schema) if isinstance(source, Dataset) else "discrete"


def _declared_kind(req: DiscoverRequest) -> tuple[str | None, int | None]:
    """The public schema kind and n of ``req`` when they are known before the data are
    read (a Dataset, an engine, a declared schema; a network sample is discrete)."""
    from dpcg.data.dataset import Dataset
    from dpcg.engines.base import TableEngine
    from dpcg.pipeline.choose import schema_kind
    from dpcg.pipeline.data import load_schema
    from dpcg.pipeline.request import NetworkSpec

    data = req.data
    if isinstance(data, Dataset | TableEngine):
        return _kind_of(data), int(data.n)
    if isinstance(data, NetworkSpec):
        from dpcg.datasets.mixed_network import MIXED_PREFIX

        if data.name.startswith(MIXED_PREFIX):
            return None, data.rows  # its kind is known once its schema is built
        return "discrete", data.rows
    if req.schema is not None:
        return schema_kind(load_schema(req.schema, private=req.private)), None
    return None, None


def _default_dataset_id(info: Mapping[str, Any]) -> str | None:
    """The public recipe of a network sample (``None`` for a user's table)."""
    if info.get("source") == "bundled":
        return f"bundled:{info['dataset']}:rows={info['rows']}:seed={info['seed']}"
    if info.get("source") == "bif":  # by the file's content, not its path
        return f"{info['id']}:rows={info['rows']}:seed={info['seed']}"
    return None


def _ledger_target(req: DiscoverRequest, algo: Any, delta: float,
                   resolved: Resolved) -> Any:
    from accounting.costs import Budget
    from accounting.ledger.backend import is_postgres
    from dpcg.private.ledger import ledger_target

    assert req.epsilon is not None
    # the data file, for the custodian's policy (accounting.ledger.custody.check_policy,
    # called by open_session): a governed file run under another id is refused
    data_path = (Path(str(resolved.info["path"]))
                 if resolved.info.get("source") == "file" and "path" in resolved.info else None)
    if req.ledger is None:
        return ledger_target(budget=Budget(req.epsilon, delta), no_ledger=True,
                             data_path=data_path)
    default_id = _default_dataset_id(resolved.info)
    if req.dataset_id is None and default_id is None:
        if req.spelling == "cli":
            raise AlgorithmError(
                "--dataset-id: a private run on --data is recorded in the ledger under the "
                "dataset's declared id; pass --dataset-id ID (or --no-ledger for a "
                "throw-away experiment)")
        raise AlgorithmError(
            "dataset_id: a private run is recorded in the ledger under the dataset's "
            "declared id; pass dataset_id=\"...\" (or ledger=dpcg.NO_LEDGER for a "
            "throw-away experiment)")
    path: Path | str | None = None
    if req.ledger is not DEFAULT:
        text = str(req.ledger)
        path = text if is_postgres(text) else Path(text)
    key = None if req.signing_key is None else Path(str(req.signing_key))
    return ledger_target(budget=Budget(req.epsilon, delta), path=path,
                         dataset_id=req.dataset_id, default_dataset_id=default_id,
                         lifetime_epsilon=req.lifetime_epsilon,
                         lifetime_delta=req.lifetime_delta, signing_key=key,
                         data_path=data_path, lifetime_rule=req.lifetime_rule)


def _limits(req: DiscoverRequest, private: bool, n: int, p: int) -> Any:
    """The run's time and memory budget (docs/memory.md): the given limits, else the
    documented defaults. A private run decides from public facts only (a budget of tests
    through the public cost model: the clock and the memory are never read); its default
    is the memory budget only, since a time model of public facts alone would cut short
    a slow but valid run on a very large table."""
    from dpcg.pc.limits import RunLimits, default_limits
    from dpcg.pipeline.request import parse_size

    base = default_limits(public_only=private, rows=n, columns=p)
    seconds = req.max_seconds if req.max_seconds is not None else (
        None if private else base.max_seconds)
    memory = parse_size(req.max_memory) if req.max_memory is not None else base.max_memory
    return RunLimits(max_seconds=None if seconds is None else float(seconds),
                     max_memory=memory, public_only=private, rows=n, columns=p)


#: Without ``workers``, a non-private run forks only for levels that may ask at least
#: this many tests (issue 59: a fork costs ~0.1 s, a test ~0.1-0.3 ms at 100K rows).
AUTO_PARALLEL_TESTS = 5_000


def auto_workers(tester: object) -> int:
    """The default processes of a non-private run: every core this process may use, for
    a tester that runs on several (``parallel_safe``: non-private, side-effect free);
    1 otherwise (the same results either way), also for a batch tester or a level
    strategy, which run in one process whatever they declare (``pc_stable``)."""
    from dpcg.pc.engine import BatchEdgeTester, LevelStrategy

    if getattr(tester, "parallel_safe", False) is not True or not hasattr(tester, "test") \
            or isinstance(tester, (BatchEdgeTester, LevelStrategy)):
        return 1
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return max(1, cores)


def _run_delta(req: DiscoverRequest, choice: Choice) -> float:
    """The private run's delta (the algorithm's default unless given), with the run's
    numbers validated by :class:`~dpcg.private.contract.RunSettings`."""
    from dpcg.private.contract import RunSettings

    delta = float(choice.algorithm.default_delta if req.delta is None else req.delta)
    RunSettings(epsilon=req.epsilon, delta=delta,  # type: ignore[arg-type]
                test=choice.requested_test, alpha=req.alpha, noise_seed=req.noise_seed,
                max_depth=req.max_depth)
    return delta


def _shared_score_tester(choice: Choice, dataset: Any, alpha: float,
                         scores: dict[tuple[int, int, tuple[int, ...]], float] | None) -> Any:
    """Non-private PC with a score test reading the shared ``scores`` (the registered
    build of the score tests, plus the cache); ``None`` when there is no cache or the
    test is not a score test."""
    if scores is None:
        return None
    from dpcg.citests.private import SCORES, ScoreOptions, ThresholdCITest, source_for_dataset

    if choice.test.name not in SCORES or not isinstance(choice.test_options, ScoreOptions):
        return None
    return ThresholdCITest(source_for_dataset(dataset, choice.test.name, alpha=alpha,
                                              threshold=choice.test_options.threshold,
                                              cache=scores))


def execute(req: DiscoverRequest, *, progress: Progress | None = None,
            include_tests: bool = False,
            scores: dict[tuple[int, int, tuple[int, ...]], float] | None = None,
            ) -> DiscoveryResult:
    """Run ``req`` (module docstring). Bad input raises the project's errors before
    anything is charged.

    ``scores`` is the pipeline's one internal seam (not a keyword of :func:`dpcg.discover`):
    a :data:`~dpcg.private.contract.ScoreCache` of EXACT score statistics keyed by
    ``(x, y, S)`` that several runs on the same dataset share (a private discrete run and a
    non-private run with a score test fill and read it; nothing in it is released, the
    noise is drawn per run). The caller owns it and must never share one across datasets
    (the key does not name the data). Results are those of the run without it."""
    from dpcg.citests.registry import TestContext
    from dpcg.graph import CPDAG
    from dpcg.pc.background import BackgroundKnowledge
    from dpcg.pc.engine import pc_stable

    background = req.background
    if background is not None and not isinstance(background, BackgroundKnowledge):
        raise AlgorithmError(f"background: expected BackgroundKnowledge, got "
                             f"{type(background).__name__}")
    kind, n = _declared_kind(req)
    needs_kind = req.algorithm == AUTO or (req.algorithm == NONPRIVATE and req.test is None)
    early = choose(req, kind, n) if not needs_kind or (
        kind is not None and n is not None) else None
    delta = None
    if early is not None and early.algorithm is not None:
        # the run's numbers, validated before any data is read or a ledger is touched
        delta = _run_delta(req, early)
    t0 = time.perf_counter()
    discrete = early is not None and _is_discrete_algorithm(early.algorithm)
    if early is None and req.algorithm == AUTO and kind is not None:
        discrete = kind == "discrete"
    resolved = resolve(req, private_discrete=discrete)
    load_seconds = time.perf_counter() - t0
    choice = early if early is not None else choose(req, _kind_of(resolved.source),
                                                    int(resolved.source.n))
    private = choice.algorithm is not None
    check_test_data(choice.test.name, choice.test.data, resolved, private, req.spelling)
    if not private:
        tester: Any
        from dpcg.data.dataset import Dataset

        if isinstance(resolved.source, Dataset):
            if not resolved.source.is_discrete:
                # a constant or identifier column breaks a continuous test; refused by
                # name. Computed from the data: non-private runs only (threat model).
                from dpcg.data.checks import refuse_degenerate

                refuse_degenerate(resolved.source)
            tester = _shared_score_tester(choice, resolved.source, float(req.alpha), scores)
            if tester is None:
                tester = choice.test.make(TestContext(resolved.source, float(req.alpha),
                                                      choice.test_options, resolved.truth))
        else:  # a table engine: counted where the data live
            from dpcg.citests.on_engine import engine_tester

            tester = engine_tester(resolved.source, choice.test.name, float(req.alpha),
                                   choice.test_options)
        n, p = int(resolved.source.n), len(resolved.source.names)
        workers, min_tests = ((req.workers, 0) if req.workers is not None
                              else (auto_workers(tester), AUTO_PARALLEL_TESTS))
        res = pc_stable(tester, tuple(resolved.source.names), max_depth=req.max_depth,
                        background=background, progress=progress,
                        limits=_limits(req, False, n, p), workers=workers,
                        parallel_min_tests=min_tests)
        extra: dict[str, Any] = {"privacy": None}
        guarantee = ledger_info = None
    else:
        algo = choice.algorithm
        if delta is None:  # auto, or a schema read with the data: checked now
            delta = _run_delta(req, choice)
        target = _ledger_target(req, algo, float(delta), resolved)
        from dpcg.private.run import discover_private  # the engine room: private runs only

        private_res = discover_private(
            resolved.source, algo, epsilon=float(req.epsilon),  # type: ignore[arg-type]
            delta=float(delta), test=choice.requested_test, alpha=float(req.alpha),
            noise_seed=req.noise_seed, max_depth=req.max_depth, params=choice.params,
            test_options=choice.test_options, ledger=target, background=background,
            progress=progress, cache=scores,
            limits=_limits(req, True, int(resolved.source.n), len(resolved.source.names)))
        res = private_res.pc
        extra = private_res.extra()
        if choice.auto is not None:
            extra["auto"] = {"algorithm": algo.name, "test": choice.requested_test,
                             "why": choice.auto}
        guarantee, ledger_info = private_res.guarantee, private_res.ledger
    name = NONPRIVATE if choice.algorithm is None else choice.algorithm.name
    truth = None if resolved.truth is None else CPDAG.from_dag(*resolved.truth)
    doc = result_document(algorithm=name, test=choice.requested_test, alpha=float(req.alpha),
                          max_depth=req.max_depth, data=resolved.info, pc=res, extra=extra,
                          truth=truth, include_tests=include_tests, load_seconds=load_seconds)
    return DiscoveryResult(res.cpdag, guarantee, ledger_info, res, doc, load_seconds)

