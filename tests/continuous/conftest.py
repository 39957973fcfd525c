"""Keep BLAS single-threaded in these tests: many small Cholesky factorisations run
far slower with several OpenBLAS threads on a loaded 2-core machine."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True, scope="session")
def _single_thread_blas() -> Iterator[None]:
    try:
        from threadpoolctl import (  # type: ignore[import-untyped]  # test-only (sklearn)
            threadpool_limits,
        )
    except ImportError:  # pragma: no cover
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield
