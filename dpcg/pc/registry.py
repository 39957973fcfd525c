"""Registry of discovery algorithms and CI tests, by the names the CLI uses.

``dpcg discover --algorithm NAME --test NAME`` looks both names up here. Plugging in a
new algorithm or test takes one call at import time of a module anywhere under
``dpcg.pc`` or ``dpcg.citests`` (:func:`load_plugins` imports every module of those
packages, so nothing else has to be edited)::

    from dpcg.pc.registry import AlgorithmSpec, Argument, register_algorithm

    register_algorithm(AlgorithmSpec(
        name="laplace-pc",
        run=run_laplace_pc,                  # (RunContext) -> AlgorithmRun
        description="PC with a Laplace release per test",
        private=True,
        arguments=(Argument.of("--epsilon", type=float, help="total budget"),),
    ))

Arguments are added to the ``discover`` parser once per flag (the first declaration of
a flag wins, so two private algorithms can share ``--epsilon``); the runner reads them
from ``ctx.args`` and must validate them itself (they default to ``None`` unless the
declaration gives a default). A CI test is registered the same way with
:class:`TestSpec`; its ``build`` gets a :class:`TestContext` and returns an
:class:`~dpcg.pc.engine.EdgeTester`. Private tests receive the run's
``accounting`` session in ``TestContext.session`` (``None`` for non-private runs; a
private test must refuse to run without one).
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dpcg.errors import AlgorithmError, CITestError
from dpcg.graph import CPDAG
from dpcg.pc.background import BackgroundKnowledge
from dpcg.pc.engine import EdgeTester, PCResult, pc_stable

__all__ = [
    "PLUGIN_PACKAGES",
    "AlgorithmRun",
    "AlgorithmSpec",
    "Argument",
    "RunContext",
    "TestContext",
    "TestSpec",
    "algorithms",
    "get_algorithm",
    "get_test",
    "load_plugins",
    "register_algorithm",
    "register_test",
    "tests",
]

#: Packages whose modules are imported by :func:`load_plugins`.
PLUGIN_PACKAGES = ("dpcg.pc", "dpcg.citests")


@dataclass(frozen=True)
class Argument:
    """One argparse argument: ``parser.add_argument(*flags, **kwargs)``."""

    flags: tuple[str, ...]
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, *flags: str, **kwargs: Any) -> Argument:
        return cls(tuple(flags), dict(kwargs))


@dataclass(frozen=True)
class TestContext:
    """What a CI test is built from."""

    __test__ = False  # not a pytest test class

    dataset: Any  # dpcg.data.Dataset
    args: argparse.Namespace
    alpha: float
    session: Any | None = None  # accounting.session.Session for private tests
    #: The true DAG ``(nodes, edges)`` when known (bundled networks), else ``None``.
    truth_dag: tuple[tuple[str, ...], tuple[tuple[str, str], ...]] | None = None


@dataclass(frozen=True)
class RunContext:
    """Everything an algorithm runner gets from ``dpcg discover``."""

    args: argparse.Namespace
    dataset: Any  # dpcg.data.Dataset
    names: tuple[str, ...]
    test_name: str
    alpha: float
    max_depth: int | None
    background: BackgroundKnowledge | None
    progress: Callable[[int, int], None] | None
    truth_dag: tuple[tuple[str, ...], tuple[tuple[str, str], ...]] | None = None

    def make_test(self, session: Any | None = None) -> EdgeTester:
        """Build the ``--test`` CI test on the dataset (passing ``session`` if private)."""
        spec = get_test(self.test_name)
        if spec.private and session is None:
            raise CITestError(
                f"--test {spec.name} is a private test; use it with a private --algorithm"
            )
        return spec.build(TestContext(self.dataset, self.args, self.alpha, session,
                                      self.truth_dag))


@dataclass
class AlgorithmRun:
    """A runner's output: the PC result plus extra JSON merged into ``result.json``
    (e.g. ``{"privacy": {...guarantee...}, "ledger": {"run_id": ...}}``)."""

    result: PCResult
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AlgorithmSpec:
    name: str
    run: Callable[[RunContext], AlgorithmRun]
    description: str
    arguments: tuple[Argument, ...] = ()
    private: bool = False
    #: the CI test ``dpcg discover`` uses when ``--test`` is not given (None: ``g2``)
    default_test: str | None = None


@dataclass(frozen=True)
class TestSpec:
    __test__ = False  # not a pytest test class

    name: str
    build: Callable[[TestContext], EdgeTester]
    description: str
    arguments: tuple[Argument, ...] = ()
    private: bool = False
    #: "discrete", "continuous" or "any": the data the test accepts.
    data: str = "any"


_ALGORITHMS: dict[str, AlgorithmSpec] = {}
_TESTS: dict[str, TestSpec] = {}
_loaded = False


def register_algorithm(spec: AlgorithmSpec) -> AlgorithmSpec:
    """Add an algorithm; a different spec under an existing name is an error."""
    old = _ALGORITHMS.get(spec.name)
    if old is not None and old != spec:
        raise AlgorithmError(f"algorithm {spec.name!r} is already registered")
    _ALGORITHMS[spec.name] = spec
    return spec


def register_test(spec: TestSpec) -> TestSpec:
    """Add a CI test; a different spec under an existing name is an error."""
    old = _TESTS.get(spec.name)
    if old is not None and old != spec:
        raise CITestError(f"CI test {spec.name!r} is already registered")
    _TESTS[spec.name] = spec
    return spec


def load_plugins() -> None:
    """Import every module under :data:`PLUGIN_PACKAGES` (once) so they can register."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for package_name in PLUGIN_PACKAGES:
        try:
            package = importlib.import_module(package_name)
        except ModuleNotFoundError as exc:
            if exc.name != package_name:
                raise
            continue
        for info in pkgutil.walk_packages(package.__path__, prefix=package_name + "."):
            importlib.import_module(info.name)


def algorithms() -> dict[str, AlgorithmSpec]:
    load_plugins()
    return dict(sorted(_ALGORITHMS.items()))


def tests() -> dict[str, TestSpec]:
    load_plugins()
    return dict(sorted(_TESTS.items()))


def get_algorithm(name: str) -> AlgorithmSpec:
    specs = algorithms()
    if name not in specs:
        raise AlgorithmError(f"unknown --algorithm {name!r}; choose from {sorted(specs)}")
    return specs[name]


def get_test(name: str) -> TestSpec:
    specs = tests()
    if name not in specs:
        raise CITestError(f"unknown --test {name!r}; choose from {sorted(specs)}")
    return specs[name]


# ---------------------------------------------------------------------- built-ins
def _run_pc(ctx: RunContext) -> AlgorithmRun:
    tester = ctx.make_test(None)
    result = pc_stable(tester, ctx.names, max_depth=ctx.max_depth, background=ctx.background,
                       progress=ctx.progress)
    return AlgorithmRun(result, {"privacy": None})


def _build_dsep(ctx: TestContext) -> EdgeTester:
    from dpcg.pc.oracle import DSeparationOracle

    if ctx.truth_dag is None:
        raise CITestError("--test dsep needs the true DAG: use it with a bundled --dataset")
    nodes, edges = ctx.truth_dag
    return DSeparationOracle(nodes, edges)


def _nonprivate(class_name: str) -> Callable[[TestContext], EdgeTester]:
    """Build ``dpcg.pc.fast_tables.<class_name>`` (bitset tables, same results as the
    ``dpcg.citests.nonprivate`` class it extends)."""

    def build(ctx: TestContext) -> EdgeTester:
        module = importlib.import_module("dpcg.pc.fast_tables")
        cls = getattr(module, class_name)
        tester: EdgeTester = cls(ctx.dataset, alpha=ctx.alpha)
        return tester

    return build


register_algorithm(AlgorithmSpec(
    name="pc",
    run=_run_pc,
    description="non-private PC-stable (Colombo & Maathuis 2014) with the --test CI test",
))
register_test(TestSpec(
    name="dsep",
    build=_build_dsep,
    description="d-separation oracle on the true DAG (bundled networks only; no data used)",
))
register_test(TestSpec(
    name="g2",
    build=_nonprivate("FastG2Test"),
    description="G^2 likelihood-ratio test on discrete data (non-private)",
    data="discrete",
))
register_test(TestSpec(
    name="chi2",
    build=_nonprivate("FastChi2Test"),
    description="Pearson chi^2 test on discrete data (non-private)",
    data="discrete",
))


def truth_cpdag(truth_dag: tuple[tuple[str, ...], tuple[tuple[str, str], ...]] | None
                ) -> CPDAG | None:
    """The true CPDAG from ``(nodes, edges)``, or ``None``."""
    return None if truth_dag is None else CPDAG.from_dag(*truth_dag)
