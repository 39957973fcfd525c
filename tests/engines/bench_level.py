"""Measure one engine on alarm Parquet data: load/open, then PC level 0 and level 1 as
batches (level 1 from the level-0 skeleton at alpha 0.05, G^2). Run one engine per
process so peak RSS is that engine's:

    python -m tests.engines.bench_level ENGINE PATH   # ENGINE: numpy | bitset | duckdb
    python -m tests.engines.bench_level count PATH    # one DuckDB count pass (2GB limit)

Prints one JSON line: wall and CPU seconds per phase, peak RSS (MB), scans. Not a test
(speed lives in benchmarks, not in timed unit tests).
"""

from __future__ import annotations

import json
import resource
import sys
import time
from itertools import combinations
from typing import Any

from dpcg.datasets import load_network
from dpcg.stats.contingency import StrataTable, contingency_table
from dpcg.stats.discrete import g2_test

Batch = list[tuple[int, int, tuple[int, ...]]]


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _level1(p: int, tables: list[StrataTable], pairs: Batch) -> Batch:
    adj = {j: set(range(p)) - {j} for j in range(p)}
    for (x, y, _), t in zip(pairs, tables, strict=True):
        if g2_test(t).pvalue > 0.05:
            adj[x].discard(y)
            adj[y].discard(x)
    return [(x, y, (z,)) for x in range(p) for y in sorted(adj[x]) for z in sorted(adj[x] - {y})]


def main() -> None:
    engine_name, path = sys.argv[1], sys.argv[2]
    net = load_network("alarm")
    schema = net.schema()
    cards = net.cardinalities
    p = len(cards)
    level0: Batch = [(x, y, ()) for x, y in combinations(range(p), 2)]
    out: dict[str, Any] = {"engine": engine_name, "path": path}
    t, c = time.perf_counter(), time.process_time()
    if engine_name == "count":
        from dpcg.engines.duckdb_engine import DuckDBEngine

        eng = DuckDBEngine.from_parquet(path, schema, memory_limit="1GB", threads=2)
        out["open"] = [time.perf_counter() - t, time.process_time() - c]
        t, c = time.perf_counter(), time.process_time()
        eng.tables(level0)  # the joint of all 37 columns, one pass
        out["count_pass"] = [time.perf_counter() - t, time.process_time() - c]
        out["n"] = eng.n
        out["scans"] = eng.scans
        out["peak_rss_mb"] = _rss_mb()
        print(json.dumps(out))
        return
    answer: Any
    if engine_name in ("numpy", "bitset"):
        from dpcg.data import Dataset

        codes = Dataset.from_parquet(path, schema).codes
        if engine_name == "bitset":
            from dpcg.stats.bitset import BitsetTables

            bt = BitsetTables(codes, cards)

            def answer(batch: Batch) -> list[StrataTable]:
                return [bt.table(*q) for q in batch]
        else:

            def answer(batch: Batch) -> list[StrataTable]:
                return [contingency_table(codes, cards, *q, check=False) for q in batch]
        scans = None
    else:
        from dpcg.engines.duckdb_engine import DuckDBEngine

        eng = DuckDBEngine.from_parquet(path, schema, memory_limit="2GB", threads=2)
        answer = eng.tables
    out["load"] = [time.perf_counter() - t, time.process_time() - c]
    t, c = time.perf_counter(), time.process_time()
    t0 = answer(level0)
    out["level0"] = [time.perf_counter() - t, time.process_time() - c, len(level0)]
    level1 = _level1(p, t0, level0)
    t, c = time.perf_counter(), time.process_time()
    answer(level1)
    out["level1"] = [time.perf_counter() - t, time.process_time() - c, len(level1)]
    if engine_name == "duckdb":
        scans = eng.scans
        joint = eng._joint
        out["joint_rows"] = None if joint is None else int(joint.counts.shape[0])
    out["scans"] = scans
    out["peak_rss_mb"] = _rss_mb()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
