"""Large samples of a bundled network streamed to Parquet in chunks.

``write_sample_parquet("alarm", 10**8, "alarm.parquet")`` never holds more than one chunk
(``chunk_rows`` rows) in memory: chunk ``k`` is ``network.sample(m_k, rng_k)`` with
``rng_k`` the ``k``-th child of ``numpy.random.SeedSequence(seed)``, and is written as
one row group by :func:`dpcg.data.parquet_write.write_parquet_chunks`.

The chunked stream is a *different* sample than ``network.sample(rows, seed)`` drawn in
one piece (the uniforms are drawn per chunk from independent child streams), but it is a
fixed one: the same ``(network, rows, seed, chunk_rows)`` always gives the same file,
and its rows are i.i.d. draws from the network just the same. Changing ``chunk_rows``
changes the sample.

The randomness here generates synthetic benchmark data, not privacy noise
(``NON_PRIVACY_RANDOMNESS`` in tests/test_layering.py covers ``dpcg/datasets``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import numpy as np
from numpy.typing import NDArray

from dpcg.data.parquet_write import write_parquet_chunks
from dpcg.datasets import load_network
from dpcg.errors import DataValidationError

__all__ = ["CHUNK_ROWS", "write_sample_parquet"]

#: Rows per chunk (one Parquet row group): about 40 MB of codes for alarm.
CHUNK_ROWS = 1_000_000


def write_sample_parquet(
    network_name: str,
    rows: int,
    path: str | os.PathLike[str],
    seed: int = 0,
    chunk_rows: int = CHUNK_ROWS,
) -> int:
    """Sample ``rows`` rows of the bundled network ``network_name`` to a Parquet file at
    ``path`` in chunks of ``chunk_rows``; returns the number of rows written."""
    for name, value in (("rows", rows), ("chunk_rows", chunk_rows)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
            raise DataValidationError(f"{name} must be a positive integer, got {value!r}")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise DataValidationError(f"seed must be a non-negative integer, got {seed!r}")
    network = load_network(network_name)
    rows, chunk_rows = int(rows), int(chunk_rows)
    sizes = [chunk_rows] * (rows // chunk_rows)
    if rows % chunk_rows:
        sizes.append(rows % chunk_rows)
    children = np.random.SeedSequence(int(seed)).spawn(len(sizes))

    def chunks() -> Iterator[NDArray[np.unsignedinteger]]:
        for size, child in zip(sizes, children, strict=True):
            yield network.sample(size, np.random.default_rng(child)).codes

    return write_parquet_chunks(network.schema(), chunks(), path)
