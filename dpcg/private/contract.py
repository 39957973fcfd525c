"""The contract every private algorithm implements (:class:`PrivateAlgorithm`).

An algorithm is one module of :mod:`dpcg.private` that declares

* a frozen ``Params`` dataclass: its own options, each a field made with
  :func:`dpcg.citests.registry.option` (default, help text, argparse type), validated in
  ``__post_init__`` (errors are :class:`dpcg.errors.AlgorithmError` naming the field).
  The CLI derives one ``dpcg discover`` flag per field;
* an object implementing :class:`PrivateAlgorithm`: ``source`` (the exact statistics
  the tests read, built from the dataset and the test's typed options; public
  information only), ``plan`` (the public plan from ``Params``, the common
  :class:`RunSettings` and the source; it validates everything, so bad input is refused
  before anything is charged) and ``tester`` (the strategy over the PC engine, releasing
  only through the :class:`accounting.session.Session` it is given);

and registers that object with :func:`dpcg.private.registry.register_algorithm`.
:func:`dpcg.private.run.run_private` does the rest (ledger, session, engine, result),
the same way for every algorithm.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol, TypeVar

from accounting.costs import Budget
from accounting.relations import Relation
from accounting.session import Session
from dpcg.data.dataset import Dataset
from dpcg.errors import AlgorithmError
from dpcg.pc.engine import BatchEdgeTester, EdgeTester, LevelStrategy

__all__ = ["Plan", "PrivateAlgorithm", "RunSettings", "Tester"]

#: What ``tester`` returns: the PC engine accepts all three.
Tester = EdgeTester | BatchEdgeTester | LevelStrategy

#: The statistic cache a caller may share between runs of the same source (benchmarks).
ScoreCache = dict[tuple[int, int, tuple[int, ...]], float]


def _number(name: str, value: object) -> float:
    """``value`` as a finite float; an ``int`` beyond the float range (``10**400``) is
    refused like an infinite one (never an ``OverflowError``)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise AlgorithmError(f"{name}: expected a finite number, got {_show(value)}")
    try:
        out = float(value)
    except OverflowError:
        raise AlgorithmError(f"{name}: expected a finite number, got an integer beyond "
                             "the float range") from None
    if not math.isfinite(out):
        raise AlgorithmError(f"{name}: expected a finite number, got {value!r}")
    return out


def _show(value: object) -> str:
    """``repr(value)``, shortened (a huge object never floods an error message)."""
    try:
        text = repr(value)
    except ValueError:  # e.g. an int too long for str()
        return f"a {type(value).__name__}"
    return text if len(text) <= 80 else text[:77] + "..."


@dataclass(frozen=True)
class RunSettings:
    """What every private run is given besides its algorithm's ``Params`` (all public).

    * ``epsilon``, ``delta``: the TOTAL budget of the run.
    * ``test``: the CI test (for the discrete family, a score of
      :data:`dpcg.citests.private.SCORES`).
    * ``alpha``: significance level (the public threshold's default).
    * ``noise_seed``: seeds the privacy noise (marked as seeded in the ledger).
    * ``max_depth``: the largest conditioning set (``None``: no limit / the algorithm's).
    """

    epsilon: float
    delta: float
    test: str
    alpha: float = 0.05
    noise_seed: int | None = None
    max_depth: int | None = None
    relation: Relation = Relation.REPLACE_ONE

    def __post_init__(self) -> None:
        eps = _number("epsilon", self.epsilon)
        delta = _number("delta", self.delta)
        if eps <= 0:
            raise AlgorithmError(f"epsilon: must be > 0, got {self.epsilon!r}")
        if not 0 <= delta < 1:
            raise AlgorithmError(f"delta: must be in [0, 1), got {self.delta!r}")
        if isinstance(self.alpha, bool) or not isinstance(self.alpha, int | float) or not (
            0 < self.alpha < 1
        ):
            raise AlgorithmError(f"alpha: expected a number in (0, 1), got "
                                 f"{_show(self.alpha)}")
        if self.noise_seed is not None and (
            isinstance(self.noise_seed, bool) or not isinstance(self.noise_seed, int)
        ):
            raise AlgorithmError(f"noise_seed: expected an integer or None, got "
                                 f"{_show(self.noise_seed)}")
        if self.max_depth is not None and (
            isinstance(self.max_depth, bool) or not isinstance(self.max_depth, int)
            or self.max_depth < 0
        ):
            raise AlgorithmError(f"max_depth: expected an integer >= 0 or None, got "
                                 f"{_show(self.max_depth)}")
        if not isinstance(self.test, str):
            raise AlgorithmError(f"test: expected a test name, got {_show(self.test)}")

    def budget(self) -> Budget:
        """The run's total budget."""
        return Budget(self.epsilon, self.delta)


class Plan(Protocol):
    """A public plan: its composition rule, the engine's depth limit and a JSON view."""

    @property
    def rule(self) -> str: ...

    @property
    def max_depth(self) -> int | None: ...

    def describe(self) -> dict[str, object]: ...


ParamsT = TypeVar("ParamsT")
SourceT = TypeVar("SourceT")
PlanT = TypeVar("PlanT", bound=Plan)
TesterT = TypeVar("TesterT", bound=Tester)


class PrivateAlgorithm(Protocol[ParamsT, SourceT, PlanT, TesterT]):
    """One private PC variant (see the module docstring)."""

    #: ``dpcg discover --algorithm NAME``.
    name: str
    #: One line for ``dpcg discover --list``.
    description: str
    #: The frozen options dataclass (one CLI flag per field).
    params: type[ParamsT]
    #: The ``--test`` names it runs (before :meth:`resolve_test`) and its default.
    tests: tuple[str, ...]
    default_test: str
    #: ``delta`` of the run when the user gives none (0: a pure epsilon-DP algorithm).
    default_delta: float
    #: ``docs/privacy/algorithm-*.md``: the proof note of the whole algorithm.
    proof_note: str

    def resolve_test(self, test: str) -> str:
        """The test the algorithm actually releases for ``--test test`` (e.g. the private
        G-test ``g2`` is ``cmi``); raises :class:`AlgorithmError` for a test it cannot run."""
        ...

    def source(self, dataset: Dataset, settings: RunSettings, test_options: object,
               cache: ScoreCache | None = None) -> SourceT:
        """The exact statistics of the run's test on ``dataset`` (nothing released)."""
        ...

    def plan(self, params: ParamsT, settings: RunSettings, source: SourceT) -> PlanT:
        """The public plan; validates everything (bad input is refused here, uncharged)."""
        ...

    def tester(self, plan: PlanT, source: SourceT, session: Session) -> TesterT:
        """The strategy over the PC engine; every release goes through ``session``."""
        ...

    def usage(self, tester: TesterT) -> Mapping[str, object]:
        """What the run used (rounds, instances, ...), merged into ``result.plan``."""
        ...
