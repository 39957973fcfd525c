"""Conformance suite over the private-algorithm registry (issue 17, item 4; issue 56).

Every registered algorithm passes :func:`dpcg.testing.check_algorithm` (charges before
it releases, refuses past the dataset's lifetime with nothing released, the common
result shape, a ledger that verifies, bad input refused before anything is charged, and
-- for an algorithm declaring ``reproduces_pc`` -- epsilon = 1e6 reproducing non-private
PC) and follows the one CLI ledger policy (durable by default). The parameters are the
registry's at collection time: a new algorithm is covered with no edit here. The toy
algorithm and its broken variant are checked in ``tests/testing``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import dpcg
from dpcg.citests.continuous_pc import KernelOptions
from dpcg.citests.gcm import DEFAULT_BANDWIDTH
from dpcg.citests.private import source_for_dataset
from dpcg.citests.registry import TestContext, get_test
from dpcg.cli import main
from dpcg.data.dataset import Dataset
from dpcg.pc.engine import PCResult, pc_stable
from dpcg.private.registry import algorithms, get_algorithm
from dpcg.testing import check_algorithm, committed_mechanisms, data_kind, default_data

ALL = list(algorithms())

#: The default ledger of these tests ($DPCG_LEDGER, relative to the test directory).
DEFAULT_LEDGER = "dpcg-ledger.sqlite"


_FILES: dict[str, tuple[Path, Path]] = {}


def _files(kind: str, tmp: Path) -> tuple[Path, Path]:
    """The default data of ``kind`` (:func:`dpcg.testing.default_data`) as a CSV file and
    its schema (written once per session)."""
    if kind not in _FILES:
        ds = default_data(kind)
        tmp.mkdir(parents=True, exist_ok=True)
        data, schema = tmp / f"{kind}.csv", tmp / f"{kind}.schema.json"
        ds.to_csv(data)
        schema.write_text(ds.schema.to_json())
        _FILES[kind] = (data, schema)
    return _FILES[kind]


class _MinStrategy:
    """Non-private PC-stable deciding each pair at each level by its smallest
    ``score - T`` over the candidate sets, the separating set being the smallest's (the
    largest p-value, as PC-Max): what Laplace-PC's per-pair releases become as the noise
    vanishes. Its skeleton is PC-stable's (a pair is removed iff some set tests
    independent)."""

    def __init__(self, source: Any) -> None:
        self.source = source

    def decide_level(self, level: int, candidates: Any) -> dict[Any, Any]:
        src = self.source
        out = {}
        for (x, y) in candidates:
            sets = candidates[(x, y)]
            margins = [src.score(x, y, S) - src.threshold(x, y, S) for S in sets]
            if margins and min(margins) <= 0:
                out[(x, y)] = sets[margins.index(min(margins))]
        return out


def _laplace_reference(data: Dataset, max_depth: int) -> PCResult:
    """Laplace-PC's per-pair releases: the smallest ``score - T`` decides."""
    test = get_algorithm("laplace-pc").default_test
    ref = pc_stable(_MinStrategy(source_for_dataset(data, test)), tuple(data.names),
                    max_depth=max_depth)
    assert ref.cpdag.skeleton() == dpcg.discover(data, test=test,
                                                 max_depth=max_depth).pc.cpdag.skeleton()
    return ref


def _gcm_reference(data: Dataset, max_depth: int) -> PCResult:
    """PrivGCM's rule without noise: the non-private gcm with the same lam and bandwidth
    (the non-private gcm tunes what it is not given)."""
    gcm = get_test("gcm").make(TestContext(
        data, 0.05, KernelOptions(lam=1.0, bandwidth=DEFAULT_BANDWIDTH)))
    return pc_stable(gcm, tuple(data.names), max_depth=max_depth)


#: Algorithms whose huge-epsilon limit is not plain non-private PC with their default
#: test (the others declaring ``reproduces_pc`` use that default reference), with the
#: run options that make both sides the same statistic (PrivGCM's default lam falls
#: with n * eps: the same explicit lam on both sides).
REFERENCES: dict[str, tuple[Any, dict[str, object] | None]] = {
    "laplace-pc": (_laplace_reference, None),
    "private-ci-pc": (_gcm_reference, {"lam": 1.0}),
}


@pytest.mark.parametrize("name", ALL)
def test_check_algorithm(name: str) -> None:
    reference, options = REFERENCES.get(name, (None, None))
    check_algorithm(name, reference=reference, test_options=options)


@pytest.mark.parametrize("name", ALL)
def test_cli_records_in_the_durable_ledger_by_default(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    algo = get_algorithm(name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DPCG_LEDGER", DEFAULT_LEDGER)  # the per-user default, here
    kind = data_kind(algo)
    if kind == "discrete":
        source = ["--dataset", "asia", "--rows", "2000"]
    else:
        data, schema = _files(kind, tmp_path.parent / "shared")
        source = ["--data", str(data), "--schema", str(schema), "--dataset-id", kind]
    argv = ["discover", *source, "--algorithm", name, "--epsilon", "1", "--max-depth", "1",
            "--noise-seed", "1", "--quiet", "--out", "r.json"]
    assert main(argv) == 0
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["ledger"]["path"] == DEFAULT_LEDGER
    n = committed_mechanisms(tmp_path / DEFAULT_LEDGER)
    assert n == sum(doc["mechanisms"].values()) > 0
    assert main(["ledger", "verify", DEFAULT_LEDGER]) == 0
    # the dataset's lifetime defaulted to this run's budget: a second run is refused
    assert main(argv) == 2
    assert committed_mechanisms(tmp_path / DEFAULT_LEDGER) == n
    # ... and a lifetime flag for the registered id is an error, not silently ignored
    assert main([*argv, "--lifetime-epsilon", "5"]) == 2

