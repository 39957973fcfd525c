"""What a run uses when the user leaves it to the schema: non-private PC's test without
``--test``, and the algorithm and test of ``--algorithm auto``.

The rule reads public facts only (the declared schema's column kinds, ``n``, the
budget), never data values, and is documented with its measurements in
``docs/choosing.md`` ("--algorithm auto").
"""

from __future__ import annotations

from dataclasses import dataclass

from dpcg.data.schema import Schema
from dpcg.errors import AlgorithmError, CITestError

__all__ = ["DISCRETE_AUTO", "AutoChoice", "choose_auto", "default_test", "schema_kind"]

#: ``--algorithm auto`` on an all-discrete schema (docs/choosing.md: the best or within
#: one sd of the best in every cell of docs/benchmarks/private.md).
DISCRETE_AUTO: tuple[str, str | None] = ("laplace-pc", "kendall-split")
#: ``--algorithm auto`` on a schema with continuous columns: one private release of a
#: rank-correlation matrix, every test post-processing (docs/privacy/algorithm-cov-pc.md);
#: used when registered.
CONTINUOUS_AUTO: tuple[str, str | None] = ("cov-pc", None)
#: Non-private PC's default test by schema kind (``dg-lrt``: the degenerate-Gaussian
#: likelihood-ratio test, docs/continuous.md).
NONPRIVATE_TESTS = {"discrete": "g2", "continuous": "fisherz", "mixed": "dg-lrt"}


def schema_kind(schema: Schema) -> str:
    """``discrete``, ``continuous`` or ``mixed`` (public: the declared column kinds, as
    loaded: a binned continuous column is ordinal)."""
    schema = schema.loaded()
    if schema.is_discrete:
        return "discrete"
    if schema.is_continuous:
        return "continuous"
    return "mixed"


def default_test(kind: str) -> str:
    """Non-private PC's test when the user names none: G^2 on discrete schemas, Fisher-z
    on continuous ones, the registered mixed test on mixed ones."""
    from dpcg.citests.registry import get_test

    try:
        return get_test(NONPRIVATE_TESTS[kind]).name
    except (KeyError, CITestError):
        pass
    raise AlgorithmError("test: the schema has discrete and continuous columns and no "
                         "registered test takes mixed data; discretise the continuous "
                         "columns (`dpcg schema draft --bins K`) or choose --test")


@dataclass(frozen=True)
class AutoChoice:
    algorithm: str
    test: str | None
    why: str


def choose_auto(kind: str, n: int, epsilon: float) -> AutoChoice:
    """``--algorithm auto``: the private algorithm and test for this schema, ``n`` and
    budget (public facts only)."""
    from dpcg.private.registry import algorithms

    if kind == "discrete":
        algo, test = DISCRETE_AUTO
        return AutoChoice(algo, test, f"discrete schema: {algo} with {test}")
    algo, test = CONTINUOUS_AUTO
    if algo in algorithms():
        return AutoChoice(algo, test, f"{kind} schema: {algo} (one release of a rank "
                                      "correlation matrix; every test is post-processing)")
    algo = "private-ci-pc"
    if kind == "continuous":
        return AutoChoice(algo, None, f"{kind} schema: {algo}")
    raise AlgorithmError("algorithm 'auto': the schema has discrete and continuous columns "
                         "and no registered private algorithm takes mixed data; discretise "
                         "the continuous columns (`dpcg schema draft --bins K`)")
