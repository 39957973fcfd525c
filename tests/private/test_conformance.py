"""Conformance suite over the private-algorithm registry (issue 17, item 4).

Every registered algorithm, and the toy seventh one of :mod:`tests.private.toy_algorithm`,
must: charge before it releases (the ledger entry is committed before the statistic is
computed), refuse past the dataset's lifetime with nothing released, give the same
result shape, leave a ledger that ``dpcg ledger verify`` accepts, and follow the one CLI
ledger policy (durable by default). With epsilon = 1e6, the algorithms whose decision
rule is the non-private test's with noise reproduce non-private PC with that test.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from accounting.costs import Budget
from accounting.errors import AccountingError
from accounting.ledger import Ledger
from accounting.mechanisms import Mechanism, SparseVectorRun
from accounting.relations import Relation
from accounting.session import ReleaseRequest, Session
from dpcg.citests.continuous_pc import KernelOptions
from dpcg.citests.gcm import DEFAULT_BANDWIDTH
from dpcg.citests.private import source_for_dataset
from dpcg.citests.registry import TestContext, get_test
from dpcg.cli import main
from dpcg.data.dataset import Dataset
from dpcg.datasets import load_network
from dpcg.datasets.sem import random_sem
from dpcg.pc.engine import pc_stable
from dpcg.private import nonprivate_pc
from dpcg.private.ledger import LedgerTarget
from dpcg.private.registry import AnyAlgorithm, algorithms, get_algorithm
from dpcg.private.run import PrivateResult, discover_private
from tests.private.toy_algorithm import TOY, ToyParams, registered

ALL = [*algorithms(), TOY.name]

#: Algorithms whose decision is the non-private test's rule on a noisy statistic: with
#: epsilon = 1e6 the noise is far below every margin and the graph is non-private PC's.
#: private-ci-pc with privgcm is compared with PC and the non-private ``gcm`` test (same
#: kernel, same statistic on the noisy residual products). Not so for priv-pc (its sieve
#: reads a subsample), em-pc (it decides whole levels by the exponential mechanism, not
#: test by test) and curate (a coin decides the band around the threshold).
REPRODUCES_PC = ("laplace-pc", "svt-pc", "private-ci-pc", TOY.name)

#: The default ledger of these tests ($DPCG_LEDGER, relative to the test directory).
DEFAULT_LEDGER = "dpcg-ledger.sqlite"


@pytest.fixture(autouse=True)
def toy() -> Iterator[None]:
    with registered():
        yield


_DISCRETE: list[Dataset] = []
_CONTINUOUS: list[tuple[Dataset, Path, Path]] = []


def _discrete() -> Dataset:
    if not _DISCRETE:
        _DISCRETE.append(load_network("asia").sample(3000, 7))
    return _DISCRETE[0]


def _continuous(tmp: Path) -> tuple[Dataset, Path, Path]:
    if not _CONTINUOUS:
        ds = random_sem(4, seed=7).sample(300, 0)
        tmp.mkdir(parents=True, exist_ok=True)
        data, schema = tmp / "sem4.csv", tmp / "sem4.schema.json"
        ds.to_csv(data)
        schema.write_text(ds.schema.to_json())
        _CONTINUOUS.append((ds, data, schema))
    return _CONTINUOUS[0]


def _is_continuous(algo: AnyAlgorithm) -> bool:
    return get_test(algo.resolve_test(algo.default_test)).data == "continuous"


def _data(algo: AnyAlgorithm, tmp: Path) -> Dataset:
    return _continuous(tmp.parent / "shared")[0] if _is_continuous(algo) else _discrete()


def _run(name: str, tmp: Path, ledger: LedgerTarget, epsilon: float = 2.0) -> PrivateResult:
    algo = get_algorithm(name)
    return discover_private(_data(algo, tmp), algo, epsilon=epsilon, noise_seed=3,
                            max_depth=1, ledger=ledger)


def _committed(path: Path) -> int:
    """Mechanism entries committed to the ledger, read by a separate connection."""
    if not path.exists():
        return 0
    con = sqlite3.connect(path)
    try:
        return int(con.execute("SELECT COUNT(*) FROM entries WHERE kind = 'mechanism'")
                   .fetchone()[0])
    finally:
        con.close()


class _Probe:
    """Wraps every statistic the session hands to a mechanism: when it is computed, the
    ledger must already hold one committed entry per release unit so far."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.units = 0
        self.computed = 0
        self.runs: set[int] = set()

    def check(self, new_unit: bool) -> None:
        self.units += new_unit
        self.computed += 1
        assert _committed(self.path) >= self.units, "statistic computed before its entry"

    def wrap(self, compute: Callable[..., Any], new_unit: bool = True) -> Callable[..., Any]:
        def checked(*args: Any) -> Any:
            self.check(new_unit)
            return compute(*args)
        return checked


@pytest.fixture
def probe(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> _Probe:
    p = _Probe(tmp_path / "ledger.sqlite")
    release, release_many, svt_test = Session.release, Session.release_many, SparseVectorRun.test

    def _release(self: Session, mechanism: Mechanism, compute: Callable[[], Any], *,
                 purpose: str) -> Any:
        return release(self, mechanism, p.wrap(compute), purpose=purpose)

    def _release_many(self: Session, requests: list[ReleaseRequest]) -> list[Any]:
        return release_many(self, [(m, None if c is None else p.wrap(c), s)
                                   for m, c, s in requests])

    def _svt(self: SparseVectorRun, compute: Callable[..., Any]) -> bool:
        first = id(self) not in p.runs
        p.runs.add(id(self))
        return svt_test(self, p.wrap(compute, new_unit=first))

    monkeypatch.setattr(Session, "release", _release)
    monkeypatch.setattr(Session, "release_many", _release_many)
    monkeypatch.setattr(SparseVectorRun, "test", _svt)
    return p


@pytest.mark.parametrize("name", ALL)
def test_charges_before_release(name: str, probe: _Probe, tmp_path: Path) -> None:
    res = _run(name, tmp_path, LedgerTarget(probe.path, "conformance"))
    assert probe.computed > 0
    assert probe.units > 0
    assert _committed(probe.path) == sum(res.mechanisms.values()) >= probe.units


@pytest.mark.parametrize("name", ALL)
def test_refuses_past_the_lifetime_with_nothing_released(name: str, probe: _Probe,
                                                         tmp_path: Path) -> None:
    led = Ledger.open(probe.path, create=True)
    try:
        led.register_dataset("small", Budget(1.0, 1e-6), Relation.REPLACE_ONE)
    finally:
        led.close()
    with pytest.raises(AccountingError):
        _run(name, tmp_path, LedgerTarget(probe.path, "small"), epsilon=2.0)
    assert probe.computed == 0
    assert _committed(probe.path) == 0
    # and after a run that spends the whole lifetime, the next is refused the same way
    _run(name, tmp_path, LedgerTarget(probe.path, "small"), epsilon=1.0)
    before, computed = _committed(probe.path), probe.computed
    with pytest.raises(AccountingError):
        _run(name, tmp_path, LedgerTarget(probe.path, "small"), epsilon=1.0)
    assert (_committed(probe.path), probe.computed) == (before, computed)
    led = Ledger.open(probe.path)
    try:
        assert led.verify().ok
    finally:
        led.close()


#: The keys a private run adds to the engine's JSON (the same for every algorithm).
PRIVATE_KEYS = {"algorithm", "test", "budget_exhausted", "privacy", "guarantee", "ledger",
                "spent", "plan", "mechanisms", "message", "private_test"}


@pytest.mark.parametrize("name", ALL)
def test_same_result_shape_and_the_ledger_verifies(name: str, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "ledger.sqlite"
    res = _run(name, tmp_path, LedgerTarget(path, "shape"))
    doc = res.to_json()
    # no wall-clock timing in a private result (a side channel: res.diagnostics())
    assert set(doc) == (set(res.pc.to_json()) - {"timing"}) | PRIVATE_KEYS
    assert set(res.diagnostics()["timing"]) == {"seconds", "test_seconds"}
    assert doc["privacy"] == doc["guarantee"]
    assert set(doc["privacy"]) == {"epsilon", "delta", "relation", "rule"}
    assert set(doc["spent"]) == {"exact", "epsilon", "delta", "rho"}
    assert set(doc["ledger"]) == {"path", "run_id", "dataset_id", "remaining_lifetime"}
    assert isinstance(doc["plan"], dict)
    assert "rule" in doc["plan"]
    assert main(["ledger", "verify", str(path)]) == 0


@pytest.mark.parametrize("name", ALL)
def test_cli_records_in_the_durable_ledger_by_default(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    algo = get_algorithm(name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DPCG_LEDGER", DEFAULT_LEDGER)  # the per-user default, here
    if _is_continuous(algo):
        _, data, schema = _continuous(tmp_path.parent / "shared")
        source = ["--data", str(data), "--schema", str(schema), "--dataset-id", "sem4"]
    else:
        source = ["--dataset", "asia", "--rows", "2000"]
    argv = ["discover", *source, "--algorithm", name, "--epsilon", "1", "--max-depth", "1",
            "--noise-seed", "1", "--quiet", "--out", "r.json"]
    assert main(argv) == 0
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["ledger"]["path"] == DEFAULT_LEDGER
    n = _committed(tmp_path / DEFAULT_LEDGER)
    assert n == sum(doc["mechanisms"].values()) > 0
    assert main(["ledger", "verify", DEFAULT_LEDGER]) == 0
    # the dataset's lifetime defaulted to this run's budget: a second run is refused
    assert main(argv) == 2
    assert _committed(tmp_path / DEFAULT_LEDGER) == n
    # ... and a lifetime flag for the registered id is an error, not silently ignored
    assert main([*argv, "--lifetime-epsilon", "5"]) == 2


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


@pytest.mark.parametrize("name", ALL)
def test_huge_epsilon_reproduces_nonprivate_pc(name: str, tmp_path: Path) -> None:
    if name not in REPRODUCES_PC:
        pytest.skip(f"{name}: not the non-private test's decision rule (see REPRODUCES_PC)")
    algo = get_algorithm(name)
    data = _data(algo, tmp_path)
    params = ToyParams(tests=5000) if name == TOY.name else None  # enough tests
    # PrivGCM's default lam falls with n * eps (privgcm_lambda): the same explicit lam
    # for both sides makes them the same statistic
    opts = {"lam": 1.0} if _is_continuous(algo) else None
    res = discover_private(data, algo, epsilon=1e6, noise_seed=5, max_depth=2,
                           params=params, test_options=opts, ledger=LedgerTarget())
    if _is_continuous(algo):
        # the non-private gcm tunes what it is not given: fix PrivGCM's lam and bandwidth
        gcm = get_test("gcm").make(TestContext(
            data, 0.05, KernelOptions(lam=1.0, bandwidth=DEFAULT_BANDWIDTH)))
        ref = pc_stable(gcm, tuple(data.names), max_depth=2)
    elif name == "laplace-pc":  # per-pair releases: the smallest score - T decides
        ref = pc_stable(_MinStrategy(source_for_dataset(data, algo.default_test)),
                        tuple(data.names), max_depth=2)
        assert ref.cpdag.skeleton() == nonprivate_pc(data, algo.default_test,
                                                     max_depth=2).cpdag.skeleton()
    else:
        ref = nonprivate_pc(data, algo.default_test, max_depth=2)
    assert not res.budget_exhausted
    assert res.cpdag == ref.cpdag
    assert res.pc.sepsets == ref.sepsets
