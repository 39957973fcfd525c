"""The pipeline's one internal seam: ``execute(request, scores=cache)`` (docs/internals.md,
"The score-cache seam"). Runs that share a score cache give exactly the results of the
same runs without one, and the cache is filled once and then read."""

from __future__ import annotations

from typing import Any

import pytest

import dpcg
from dpcg.datasets import load_network
from dpcg.errors import DpcgError
from dpcg.pipeline.request import NO_LEDGER, DiscoverRequest
from dpcg.pipeline.run import execute


@pytest.fixture(scope="module")
def asia() -> Any:
    return load_network("asia").sample(2000, 7)


def _released(res: dpcg.DiscoveryResult) -> dict[str, Any]:
    doc = dict(res.to_json())
    doc.pop("timing", None)  # wall-clock (non-private runs): not a result
    return doc


@pytest.mark.parametrize("algorithm", ["laplace-pc", "svt-pc"])
def test_a_shared_cache_changes_no_private_result(asia: Any, algorithm: str) -> None:
    cache: dict[tuple[int, int, tuple[int, ...]], float] = {}
    for eps, seed in ((0.5, 1), (2.0, 2)):
        request = DiscoverRequest.create(asia, algorithm=algorithm, epsilon=eps,
                                         noise_seed=seed, ledger=NO_LEDGER)
        shared = execute(request, scores=cache)
        alone = dpcg.discover(asia, algorithm=algorithm, epsilon=eps, noise_seed=seed,
                              ledger=NO_LEDGER)
        assert shared.cpdag == alone.cpdag
        assert _released(shared) == _released(alone)
        assert cache  # the exact statistics went into the caller's cache


def test_non_private_score_pc_reads_the_cache(asia: Any) -> None:
    cache: dict[tuple[int, int, tuple[int, ...]], float] = {}
    request = DiscoverRequest.create(asia, test="kendall-split")
    first = execute(request, scores=cache)
    filled = dict(cache)
    assert filled
    again = execute(request, scores=cache)
    assert cache == filled  # every statistic of the second run came from the cache
    alone = dpcg.discover(asia, test="kendall-split")
    assert first.cpdag == again.cpdag == alone.cpdag
    assert first.pc.sepsets == alone.pc.sepsets


def test_a_test_that_is_not_a_score_ignores_the_cache(asia: Any) -> None:
    cache: dict[tuple[int, int, tuple[int, ...]], float] = {}
    res = execute(DiscoverRequest.create(asia, test="g2"), scores=cache)
    assert cache == {}
    assert res.cpdag == dpcg.discover(asia, test="g2").cpdag


def test_dpcg_discover_has_no_cache_keyword(asia: Any) -> None:
    with pytest.raises(DpcgError, match="cache"):
        dpcg.discover(asia, test="kendall-split", cache={})
