"""The tests' way into the engine room of the private algorithms.

The one public function is :func:`dpcg.discover`; tests of what a user sees call it.
Tests that inspect a run's internals (``res.plan``, ``res.mechanisms``, the exact
``res.spent``, the engine's :class:`~dpcg.pc.engine.PCResult`) call the function the
pipeline itself calls, :func:`dpcg.private.run.discover_private`, through
:func:`private_run`: it only turns the keywords a test writes (``seed=``, a ledger path,
option fields) into the engine room's typed inputs. It has no defaults of its own
(``epsilon`` is required; ``delta`` and every option default to the algorithm's, as in
the pipeline); beyond naming an option that belongs to neither the algorithm nor the
test, the validation is the engine room's.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

from accounting.costs import Budget
from dpcg.citests.registry import get_test, make_options
from dpcg.errors import AlgorithmError
from dpcg.pc.background import BackgroundKnowledge
from dpcg.private.contract import ScoreCache
from dpcg.private.ledger import IN_MEMORY, LedgerTarget
from dpcg.private.registry import get_algorithm
from dpcg.private.run import PrivateResult, Progress, discover_private

__all__ = ["private_run"]


def private_run(
    data: object,
    algorithm: str,
    test: str | None = None,
    *,
    epsilon: float,
    delta: float | None = None,
    seed: int | None = None,
    ledger: str | Path | LedgerTarget | None = None,
    dataset_id: str | None = None,
    lifetime: Budget | None = None,
    alpha: float = 0.05,
    max_depth: int | None = None,
    background: BackgroundKnowledge | None = None,
    progress: Progress | None = None,
    cache: ScoreCache | None = None,
    **options: object,
) -> PrivateResult:
    """One private run of the registered ``algorithm`` on a Dataset or table engine.

    ``options``: the algorithm's ``Params`` fields and the test's option fields (an option
    of neither is an :class:`AlgorithmError`). ``ledger``: a path (with ``dataset_id`` and
    optionally the new id's ``lifetime``), a :class:`LedgerTarget`, or ``None`` (in memory).
    """
    algo = get_algorithm(algorithm)
    spec = get_test(algo.resolve_test(algo.default_test if test is None else test))
    pfields = {f.name for f in fields(algo.params)}
    tfields = {f.name for f in fields(spec.options)}
    unknown = sorted(set(options) - pfields - tfields)
    if unknown:
        raise AlgorithmError(f"{', '.join(unknown)}: not an option of {algo.name} with "
                             f"test {spec.name}")
    params = make_options(algo.params, {k: v for k, v in options.items() if k in pfields},
                          AlgorithmError)
    test_options = {k: v for k, v in options.items() if k in tfields and k not in pfields}
    target: LedgerTarget
    if isinstance(ledger, LedgerTarget):
        target = ledger
    elif ledger is None:
        target = IN_MEMORY
    else:
        if dataset_id is None:
            raise AlgorithmError("dataset_id: a ledger run needs a declared dataset id")
        target = LedgerTarget(Path(ledger), dataset_id, lifetime)
    return discover_private(
        data, algo, epsilon=epsilon, delta=delta, test=test, alpha=alpha,  # type: ignore[arg-type]
        noise_seed=seed, max_depth=max_depth, params=params, test_options=test_options,
        ledger=target, background=background, progress=progress, cache=cache)
