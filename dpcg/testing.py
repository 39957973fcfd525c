"""Conformance checks for the three extension points of dpcg, exported like
scikit-learn's ``check_estimator``: whoever adds a private algorithm, a statistic or a
table engine runs one function on it.

* :func:`check_algorithm` -- a registered (or not yet registered) private algorithm:
  bad input is refused with the project's exception types before anything is charged;
  every statistic is computed only after its ledger entry is committed; a run past the
  dataset's lifetime is refused with nothing released; the result has the common shape
  and the ledger verifies; with a huge epsilon an algorithm that declares
  ``reproduces_pc = True`` (its decision rule is the non-private test's on a noisy
  statistic) gives non-private PC's graph.
* :func:`check_statistic` -- a registered statistic (every relation it is registered
  under): its proof note exists with the four sections, the bound is finite and positive
  at typical public parameters, bad public parameters are refused with
  :class:`~dpcg.errors.StatisticInputError`, the statistic is deterministic and leaves
  its input alone, and no pair of neighbouring datasets found by a random search and a
  local adversarial search (:mod:`audits.sensitivity`; with ``quick=False`` also its
  block search and, when Hypothesis is installed, a Hypothesis search) moves it by more
  than the bound.
* :func:`check_engine` -- a table-engine factory (``EngineSpec.from_codes`` or any
  ``(codes, cardinalities, names) -> TableEngine``): malformed codes are refused with a
  project error, the tables equal :func:`~dpcg.stats.contingency.contingency_table`'s
  bit for bit on random schemas and queries (subsets and nested subsets too, and after
  ``warm`` for engines that warm), and a private run on the engine refuses bad input
  before anything is charged and otherwise releases exactly what the in-memory run
  releases with the same noise seed.

Each check raises :class:`AssertionError` with a message naming the check (never a
bare ``assert``: the checks also run under ``python -O``); nothing here needs pytest.
``quick=True`` (the default) uses small data and few search steps (the test suite's
lane); ``quick=False`` searches harder. The data are synthetic and seeded; no privacy
noise is drawn here except through the runs under test (``accounting`` only).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import sqlite3
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from accounting.costs import Budget
from accounting.errors import AccountingError
from accounting.ledger import Ledger
from accounting.mechanisms import Mechanism, SparseVectorRun
from accounting.relations import Relation
from accounting.session import ReleaseRequest, Session
from dpcg.data.dataset import Dataset
from dpcg.data.schema import Categorical, Continuous, Schema
from dpcg.errors import DpcgError, StatisticInputError
from dpcg.pc.engine import PCResult

__all__ = [
    "PRIVATE_KEYS",
    "check_algorithm",
    "check_engine",
    "check_statistic",
    "committed_mechanisms",
    "data_kind",
    "default_data",
    "statistic_specs",
]

#: The keys a private run adds to the PC engine's JSON (the same for every algorithm).
PRIVATE_KEYS = frozenset({"algorithm", "test", "budget_exhausted", "privacy", "guarantee",
                          "ledger", "spent", "plan", "mechanisms", "message",
                          "private_test"})

#: The project's own exception types (rule 4: bad input never raises anything else).
PROJECT_ERRORS: tuple[type[Exception], ...] = (DpcgError, AccountingError)

#: A reference run for the huge-epsilon check: ``(data, max_depth) -> PCResult``.
Reference = Callable[[Dataset, int], PCResult]

#: An engine factory: ``(codes, cardinalities, names) -> TableEngine``.
EngineFactory = Callable[[NDArray[np.integer], Sequence[int], Sequence[str]], Any]


def _fail(check: str, message: str) -> None:
    raise AssertionError(f"{check}: {message}")


def _ensure(ok: object, check: str, message: str) -> None:
    if not ok:
        _fail(check, message)


# ---------------------------------------------------------------------------------
# Data by kind
# ---------------------------------------------------------------------------------


def _proof_note_path(note: str) -> Path:
    """A statistic's proof note: ``proof_note`` is a path in the source checkout
    (``docs/privacy/...``; a toy's may be anywhere, or absolute). The notes are docs,
    not package data: from an installed wheel the check says so."""
    path = Path(note)
    if path.is_absolute():
        return path
    import dpcg

    return Path(dpcg.__file__).resolve().parents[1] / path


def data_kind(algorithm: Any) -> str:
    """The kind of data the algorithm's default test takes: ``discrete``,
    ``continuous`` or ``mixed`` (a test for ``any`` data is given mixed data, the most
    general)."""
    from dpcg.citests.registry import get_test

    kind = get_test(algorithm.resolve_test(algorithm.default_test)).data
    return "mixed" if kind == "any" else str(kind)


def default_data(kind: str, *, quick: bool = True) -> Dataset:
    """Seeded synthetic data of ``kind``: the ``asia`` network (3,000 rows, 8,000 with
    ``quick=False``) for discrete data; a random linear SEM on 4 variables (300 / 800
    rows) for continuous data; for mixed data, the SEM with its first and third
    variables cut at public cut points into 3 ordered categories."""
    from dpcg.datasets import load_network
    from dpcg.datasets.sem import random_sem

    if kind == "discrete":
        return load_network("asia").sample(3000 if quick else 8000, 7)
    if kind not in ("continuous", "mixed"):
        raise StatisticInputError(f"kind: expected discrete, continuous or mixed, got {kind!r}")
    ds = random_sem(4, seed=7).sample(300 if quick else 800, 0)
    if kind == "continuous":
        return ds
    cols: list[Any] = []
    columns: list[NDArray[Any]] = []
    for j, col in enumerate(ds.schema):
        values = np.asarray(ds.values[j], dtype=np.float64)
        if j in (0, 2):
            assert isinstance(col, Continuous)
            width = (col.upper - col.lower) / 3.0
            cuts = np.array([col.lower + width, col.lower + 2 * width])
            cols.append(Categorical(col.name, ["low", "mid", "high"]))
            columns.append(np.searchsorted(cuts, values).astype(np.int64))
        else:
            cols.append(col)
            columns.append(values)
    return Dataset.from_columns(columns, Schema(cols), encoded=True)


# ---------------------------------------------------------------------------------
# Algorithms
# ---------------------------------------------------------------------------------


def committed_mechanisms(path: Path) -> int:
    """Mechanism entries committed to the ledger at ``path`` (0 without the file), read
    by a separate read-only connection."""
    if not path.exists():
        return 0
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return int(con.execute("SELECT COUNT(*) FROM entries WHERE kind = 'mechanism'")
                   .fetchone()[0])
    finally:
        con.close()


def _verifies(path: Path) -> bool:
    led = Ledger.open(path)
    try:
        return bool(led.verify().ok)
    finally:
        led.close()


class _Probe:
    """Wraps every statistic the session hands to a mechanism: when it is computed, the
    ledger must already hold one committed entry per release unit so far (an SVT run is
    one unit however many tests it answers)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.units = 0
        self.computed = 0
        self.early = 0
        self.runs: set[int] = set()

    def wrap(self, compute: Callable[..., Any], new_unit: bool = True) -> Callable[..., Any]:
        def checked(*args: Any) -> Any:
            self.units += new_unit
            self.computed += 1
            if committed_mechanisms(self.path) < self.units:
                self.early += 1
            return compute(*args)
        return checked


@contextlib.contextmanager
def _probing(path: Path) -> Iterator[_Probe]:
    """Every release of every session, probed (restored on exit)."""
    probe = _Probe(path)
    release, release_many, svt_test = Session.release, Session.release_many, SparseVectorRun.test

    def _release(self: Session, mechanism: Mechanism, compute: Callable[[], Any], *,
                 purpose: str) -> Any:
        return release(self, mechanism, probe.wrap(compute), purpose=purpose)

    def _release_many(self: Session, requests: Sequence[ReleaseRequest]) -> list[Any]:
        return release_many(self, [(m, None if c is None else probe.wrap(c), s)
                                   for m, c, s in requests])

    def _svt(self: SparseVectorRun, compute: Callable[..., Any]) -> bool:
        first = id(self) not in probe.runs
        probe.runs.add(id(self))
        return svt_test(self, probe.wrap(compute, new_unit=first))

    Session.release = _release  # type: ignore[method-assign]
    Session.release_many = _release_many  # type: ignore[method-assign]
    SparseVectorRun.test = _svt  # type: ignore[method-assign]
    try:
        yield probe
    finally:
        Session.release = release  # type: ignore[method-assign]
        Session.release_many = release_many  # type: ignore[method-assign]
        SparseVectorRun.test = svt_test  # type: ignore[method-assign]


@dataclass(frozen=True)
class _Runner:
    algorithm: Any
    data: Any
    params: object | None
    test_options: Mapping[str, object] | object | None

    def __call__(self, ledger: Any, epsilon: float = 2.0, *, max_depth: int = 1,
                 noise_seed: int = 3, **overrides: Any) -> Any:
        from dpcg.private.run import discover_private

        kwargs: dict[str, Any] = {"epsilon": epsilon, "noise_seed": noise_seed,
                                  "max_depth": max_depth, "params": self.params,
                                  "test_options": self.test_options, "ledger": ledger}
        kwargs.update(overrides)
        if isinstance(kwargs["params"], _Deferred):
            kwargs["params"] = kwargs["params"].build()
        return discover_private(self.data, self.algorithm, **kwargs)


def _check_bad_input(run: _Runner, work: Path) -> None:
    """Bad input -> a project error, nothing charged, no ledger entry."""
    from dpcg.private.ledger import LedgerTarget

    check = "bad input is refused before anything is charged"
    cases: list[tuple[str, dict[str, Any]]] = [
        ("epsilon=0", {"epsilon": 0.0}),
        ("epsilon=-1", {"epsilon": -1.0}),
        ("epsilon=nan", {"epsilon": math.nan}),
        ("epsilon=inf", {"epsilon": math.inf}),
        ("epsilon='1'", {"epsilon": "1"}),
        ("delta=-0.1", {"delta": -0.1}),
        ("delta=1", {"delta": 1.0}),
        ("delta=nan", {"delta": math.nan}),
        ("alpha=0", {"alpha": 0.0}),
        ("alpha=1.5", {"alpha": 1.5}),
        ("max_depth=-1", {"max_depth": -1}),
        ("params=object()", {"params": object()}),
        ("test='no-such-test'", {"test": "no-such-test"}),
    ]
    cases.extend(_bad_params(run.algorithm))
    for i, (label, overrides) in enumerate(cases):
        path = work / f"bad-{i}.sqlite"
        target = LedgerTarget(path, "bad-input")
        with _probing(path) as probe:
            try:
                run(target, **overrides)
            except PROJECT_ERRORS:
                pass
            except Exception as exc:
                _fail(check, f"{label}: raised {type(exc).__name__} ({exc}), not one of the "
                             "project's exception types (dpcg.errors / accounting.errors)")
            else:
                _fail(check, f"{label}: the run was accepted")
        _ensure(probe.computed == 0, check, f"{label}: a statistic was computed")
        _ensure(committed_mechanisms(path) == 0, check, f"{label}: a mechanism was charged")
        if path.exists():
            _ensure(_verifies(path), check, f"{label}: the ledger no longer verifies")


def _bad_params(algorithm: Any) -> list[tuple[str, dict[str, Any]]]:
    """Runs with one numeric option of the algorithm's ``Params`` set to a value no
    number option takes (its constructor refusing it counts as refused: the check
    runs it inside the run)."""
    params_cls = algorithm.params
    if not dataclasses.is_dataclass(params_cls):
        return []
    out: list[tuple[str, dict[str, Any]]] = []
    for f in dataclasses.fields(params_cls):
        if f.metadata.get("type") not in (int, float):
            continue
        for bad in ("x", math.nan, math.inf):  # None means "unset" for some options
            out.append((f"params {f.name}={bad!r}",
                        {"params": _Deferred(params_cls, {f.name: bad})}))
    return out


@dataclass(frozen=True)
class _Deferred:
    """``Params(**fields)``, built inside the checked call (its error is the run's)."""

    cls: Any
    fields: Mapping[str, object]

    def build(self) -> object:
        return self.cls(**self.fields)


def _check_charges_before_release(run: _Runner, work: Path) -> None:
    from dpcg.private.ledger import LedgerTarget

    check = "charges before it releases"
    path = work / "charges.sqlite"
    with _probing(path) as probe:
        res = run(LedgerTarget(path, "conformance"))
    _ensure(probe.units > 0 and probe.computed > 0, check,
            "no statistic went through an accounting session (a release the ledger "
            "never sees)")
    _ensure(probe.early == 0, check,
            f"{probe.early} statistic(s) computed before their ledger entry was committed")
    committed = committed_mechanisms(path)
    _ensure(committed == sum(res.mechanisms.values()), check,
            f"the ledger holds {committed} mechanism entries, the result reports "
            f"{sum(res.mechanisms.values())}")
    _ensure(committed >= probe.units, check,
            f"{probe.units} release units but only {committed} ledger entries")


def _check_lifetime(run: _Runner, work: Path) -> None:
    from dpcg.private.ledger import LedgerTarget

    check = "refuses past the lifetime with nothing released"
    path = work / "lifetime.sqlite"
    led = Ledger.open(path, create=True)
    try:
        led.register_dataset("small", Budget(1.0, 1e-6), Relation.REPLACE_ONE)
    finally:
        led.close()
    target = LedgerTarget(path, "small")
    with _probing(path) as probe:
        try:
            run(target, epsilon=2.0)
        except AccountingError:
            pass
        else:
            _fail(check, "a run of epsilon 2 on a dataset of lifetime 1 was accepted")
        _ensure(probe.computed == 0 and committed_mechanisms(path) == 0, check,
                "the refused run computed or charged something")
        run(target, epsilon=1.0)  # spends the whole lifetime
        before, computed = committed_mechanisms(path), probe.computed
        try:
            run(target, epsilon=1.0)
        except AccountingError:
            pass
        else:
            _fail(check, "a run past the spent lifetime was accepted")
        _ensure((committed_mechanisms(path), probe.computed) == (before, computed), check,
                "the run refused past the spent lifetime computed or charged something")
    _ensure(_verifies(path), check, "the ledger does not verify")


def _check_shape(run: _Runner, work: Path) -> None:
    from dpcg.private.ledger import LedgerTarget

    check = "the common result shape and a ledger that verifies"
    path = work / "shape.sqlite"
    res = run(LedgerTarget(path, "shape"))
    doc = res.to_json()
    want = (set(res.pc.to_json()) - {"timing"}) | PRIVATE_KEYS
    _ensure(set(doc) == want, check,
            f"result keys differ: missing {sorted(want - set(doc))}, extra "
            f"{sorted(set(doc) - want)}")
    _ensure(set(res.diagnostics()["timing"]) == {"seconds", "test_seconds"}, check,
            "diagnostics()['timing'] must hold seconds and test_seconds only")
    _ensure(doc["privacy"] == doc["guarantee"], check, "privacy != guarantee")
    for key, fields, optional in (
            ("privacy", {"epsilon", "delta", "relation", "rule"}, set()),
            ("spent", {"rule", "exact", "epsilon", "delta", "rho", "stated"}, set()),
            # a run that registered its dataset id also reports the declared lifetime
            ("ledger", {"path", "run_id", "dataset_id", "remaining_lifetime"},
             {"registered_lifetime"})):
        _ensure(isinstance(doc[key], dict) and fields <= set(doc[key]) <= fields | optional,
                check, f"{key}: expected the fields {sorted(fields)} (and optionally "
                f"{sorted(optional)})")
    _ensure(isinstance(doc["plan"], dict) and "rule" in doc["plan"], check,
            "plan: a dict with the composition rule")
    _ensure(_verifies(path), check, "the ledger does not verify")


def _default_reference(algorithm: Any) -> Reference:
    import dpcg

    def reference(data: Dataset, max_depth: int) -> PCResult:
        return dpcg.discover(data, test=algorithm.default_test, max_depth=max_depth).pc
    return reference


def _check_reproduces_pc(run: _Runner, reference: Reference) -> None:
    from dpcg.private.ledger import LedgerTarget

    check = "epsilon = 1e6 reproduces non-private PC"
    res = run(LedgerTarget(), epsilon=1e6, max_depth=2, noise_seed=5)
    ref = reference(run.data, 2)
    _ensure(not res.budget_exhausted, check, "the run ran out of budget (pass params "
            "with a plan large enough for every test)")
    _ensure(res.cpdag == ref.cpdag, check, "the CPDAG differs from the reference's")
    _ensure(res.pc.sepsets == ref.sepsets, check,
            "the separating sets differ from the reference's")


def check_algorithm(algorithm: Any, *, data: Dataset | None = None, quick: bool = True,
                    params: object | None = None,
                    test_options: Mapping[str, object] | object | None = None,
                    reference: Reference | None = None,
                    reproduces_pc: bool | None = None) -> None:
    """Check a private algorithm (a registered name or an object implementing
    :class:`dpcg.private.contract.PrivateAlgorithm`); raises :class:`AssertionError`.

    ``data``: default :func:`default_data` of the kind its default test takes.
    ``params`` / ``test_options``: given to every run (default: the defaults).
    ``reproduces_pc`` (default: the algorithm's ``reproduces_pc`` attribute, else
    ``False``): run the huge-epsilon check against ``reference`` (default: non-private PC
    with the algorithm's default test: ``dpcg.discover(data, test=...)``).
    """
    from dpcg.private.registry import get_algorithm

    algo = get_algorithm(algorithm) if isinstance(algorithm, str) else algorithm
    if data is None:
        data = default_data(data_kind(algo), quick=quick)
    run = _Runner(algo, data, params, test_options)
    with tempfile.TemporaryDirectory(prefix="dpcg-check-") as tmp:
        work = Path(tmp)
        _check_bad_input(run, work)
        _check_charges_before_release(run, work)
        _check_lifetime(run, work)
        _check_shape(run, work)
    if reproduces_pc is None:
        reproduces_pc = bool(getattr(algo, "reproduces_pc", False))
    if reproduces_pc:
        _check_reproduces_pc(run, reference or _default_reference(algo))


# ---------------------------------------------------------------------------------
# Statistics
# ---------------------------------------------------------------------------------


def statistic_specs() -> tuple[Any, ...]:
    """Every registered statistic spec (the modules that register them imported)."""
    import dpcg.citests.continuous_specs
    import dpcg.citests.private
    import dpcg.stats  # noqa: F401
    from dpcg.stats.registry import all_specs

    return all_specs()


#: Typical public parameters (the bound must be finite and positive there).
_TYPICAL = {"n": 1000, "w0": 2250.0, "cx": 4, "cy": 3, "n_configs": 6}
#: ``quick=True`` evaluates the audits' fixed constructions up to this many rows.
QUICK_CONSTRUCTION_ROWS = 2000
#: Values no public parameter accepts.
_BAD_VALUES: tuple[object, ...] = (math.nan, math.inf, -1.0, "1", None)


def _check_note(spec: Any) -> None:
    check = f"statistic {spec.name!r}: proof note"
    note = _proof_note_path(spec.proof_note)
    _ensure(note.is_file(), check, f"missing {spec.proof_note}")
    text = note.read_text(encoding="utf-8")
    for section in ("Claim", "Assumptions", "Proof", "Checked by"):
        _ensure(f"## {section}" in text, check, f"{spec.proof_note} has no '## {section}'")


def _check_validation(spec: Any) -> None:
    check = f"statistic {spec.name!r} ({Relation(spec.relation).value}): input validation"
    typical = {k: _TYPICAL[k] for k in spec.public_params if k in _TYPICAL}
    unknown = [k for k in spec.public_params if k not in _TYPICAL]
    _ensure(not unknown, check, f"no typical value for the public parameter(s) {unknown}")
    bound = spec.bound(**typical)
    _ensure(math.isfinite(bound) and bound > 0, check,
            f"the bound at {typical} is {bound}, not finite and > 0")
    attempts: list[tuple[str, dict[str, object]]] = [("an unexpected parameter",
                                                      {**typical, "zz_unknown": 1})]
    for k in spec.public_params:
        attempts.append((f"{k} missing", {j: v for j, v in typical.items() if j != k}))
        attempts.extend((f"{k}={v!r}", {**typical, k: v}) for v in _BAD_VALUES)
    for label, public in attempts:
        try:
            spec.bound(**public)
        except StatisticInputError:
            continue
        except Exception as exc:
            _fail(check, f"bound({label}) raised {type(exc).__name__}, not "
                         "StatisticInputError")
        _fail(check, f"bound({label}) was accepted")


def _check_determinism(spec: Any, seed: int) -> None:
    check = f"statistic {spec.name!r} ({Relation(spec.relation).value}): determinism"
    rng = np.random.default_rng(seed)
    for n in (5, 17, 40):
        cx, cy, k = 4, 3, 3
        x = rng.integers(0, cx, n).astype(np.int64)
        y = rng.integers(0, cy, n).astype(np.int64)
        s = rng.integers(0, k, n).astype(np.int64)
        public = {"n": n, "w0": 9 * n / 4, "cx": cx, "cy": cy, "n_configs": k}
        pub = {key: public[key] for key in spec.public_params}
        copies = (x.copy(), y.copy(), s.copy())
        a = spec.evaluate(x, y, s, **pub)
        b = spec.evaluate(x, y, s, **pub)
        _ensure(isinstance(a, float) and math.isfinite(a), check,
                f"the statistic is {a!r}, not a finite float")
        _ensure(a == b, check, "two evaluations on the same input differ")
        _ensure(all(np.array_equal(u, v) for u, v in zip((x, y, s), copies, strict=True)),
                check, "the evaluation modified its input")


def _check_sensitivity(spec: Any, quick: bool, seed: int) -> None:
    from audits import sensitivity as sens

    case = sens.CASES.get(spec.name, sens.DiscreteCase())
    result = sens.SensitivityResult(spec.name, Relation(spec.relation).value)
    rng = np.random.default_rng(seed)
    for pair in sens.regression_cases(spec) + sens.constructions(spec):
        if quick and max(pair.d.n, pair.d_prime.n) > QUICK_CONSTRUCTION_ROWS:
            continue  # a model-fitting statistic on 10,000 rows takes minutes
        g, b = sens.gap(spec, pair)
        result.observe("construction", pair, g, b)
    trials, restarts, steps = (150, 2, 60) if quick else (2000, 20, 600)
    sens.random_search(spec, case, result, trials, rng)
    sens.local_search(spec, case, result, restarts, steps, rng)
    if not quick:
        sens.block_search(spec, case, result, 12, 600, rng)
        # Hypothesis-generated neighbours when Hypothesis is installed (imported lazily
        # there; without it this search is skipped and the others stand)
        sens.hypothesis_search(spec, case, result, 300)
    _ensure(not result.violated,
            f"statistic {spec.name!r} ({result.relation}): sensitivity bound",
            f"|f(D) - f(D')| = {result.max_gap:.6g} > declared {result.bound_at_max:.6g} "
            f"(ratio {result.max_ratio:.6g}); neighbours: {result.witness}")


def check_statistic(statistic: Any, relation: Relation | str | None = None, *,
                    quick: bool = True, seed: int = 0, note: bool = True) -> None:
    """Check a registered statistic (a name: every relation it is registered under, or
    only ``relation``; or a :class:`~dpcg.stats.registry.StatisticSpec`); raises
    :class:`AssertionError`. ``note=False`` skips the proof-note file (an installed
    wheel has no ``docs/``)."""
    from dpcg.stats.registry import StatisticSpec, get

    if isinstance(statistic, StatisticSpec):
        specs: tuple[Any, ...] = (statistic,)
    elif relation is not None:
        specs = (get(str(statistic), relation),)
    else:
        specs = tuple(s for s in statistic_specs() if s.name == statistic)
        if not specs:
            get(str(statistic))  # the registry's own error, naming the known ones
    for j, spec in enumerate(specs):
        if note:
            _check_note(spec)
        _check_validation(spec)
        _check_determinism(spec, seed + j)
        _check_sensitivity(spec, quick, seed + 1000 * j)


# ---------------------------------------------------------------------------------
# Engines
# ---------------------------------------------------------------------------------


def _random_codes(rng: np.random.Generator, cards: Sequence[int], n: int
                  ) -> NDArray[np.int64]:
    """Skewed codes with some dependence on the previous column (synthetic)."""
    codes = np.empty((len(cards), n), dtype=np.int64)
    for j, c in enumerate(cards):
        base = rng.choice(c, size=n, p=rng.dirichlet(np.full(c, 0.7)))
        if j > 0:
            base = np.where(rng.random(n) < 0.4, codes[j - 1] % c, base)
        codes[j] = base
    return codes


def _queries(p: int, rng: np.random.Generator) -> list[tuple[int, int, tuple[int, ...]]]:
    """Every pair, S of every size 0..3 in a shuffled order, x and y sometimes swapped,
    some queries repeated."""
    out: list[tuple[int, int, tuple[int, ...]]] = []
    for x, y in combinations(range(p), 2):
        rest = [j for j in range(p) if j not in (x, y)]
        for k in range(min(3, len(rest)) + 1):
            S = tuple(int(j) for j in rng.permutation(rest)[:k])
            out.append((y, x, S) if rng.random() < 0.5 else (x, y, S))
    return out + out[:: max(1, len(out) // 7)]


def _same_tables(check: str, engine: Any, codes: NDArray[np.int64], cards: Sequence[int],
                 queries: Sequence[tuple[int, int, tuple[int, ...]]], what: str) -> None:
    from dpcg.stats.contingency import contingency_table

    got = engine.tables(queries)
    _ensure(len(got) == len(queries), check, f"{what}: {len(got)} tables for "
            f"{len(queries)} queries")
    for q, table in zip(queries, got, strict=True):
        ref = contingency_table(codes, list(cards), *q)
        counts = np.asarray(table.counts)
        same = (counts.dtype == np.int64 and counts.shape == ref.counts.shape
                and np.array_equal(counts, ref.counts)
                and (table.cx, table.cy, table.n_configs) == (ref.cx, ref.cy, ref.n_configs))
        _ensure(same, check, f"{what}: the table of query {q} differs from numpy's")


def _check_engine_input(factory: EngineFactory) -> None:
    check = "malformed codes are refused"
    good = np.zeros((2, 4), dtype=np.int64)
    for label, args in (
        ("1-D codes", (np.zeros(4, dtype=np.int64), [2], ["a"])),
        ("float codes", (good.astype(np.float64), [2, 2], ["a", "b"])),
        ("3 cardinalities for 2 columns", (good, [2, 2, 2], ["a", "b"])),
        ("3 names for 2 columns", (good, [2, 2], ["a", "b", "c"])),
    ):
        try:
            factory(*args)
        except PROJECT_ERRORS:
            continue
        except Exception as exc:
            _fail(check, f"{label}: raised {type(exc).__name__}, not a project error")
        _fail(check, f"{label}: accepted")


def _check_engine_tables(factory: EngineFactory, quick: bool, seed: int) -> None:
    from dpcg.engines.base import WarmsTables

    check = "the same tables as the numpy engine, bit for bit"
    rng = np.random.default_rng(seed)
    shapes = [([2, 2, 2, 2], 300), ([3, 5, 2, 4], 500), ([11, 2, 9, 3], 400)]
    if not quick:
        shapes += [([3, 5, 2, 7, 4, 3], 2500), ([13, 2, 9, 3, 11], 2000)]
    for cards, n in shapes:
        codes = _random_codes(rng, cards, n)
        names = [f"v{j}" for j in range(len(cards))]
        engine = factory(codes, cards, names)
        facts = (int(engine.n), tuple(engine.cardinalities), tuple(engine.names))
        _ensure(facts == (n, tuple(cards), tuple(names)), check,
                f"public facts (n, cardinalities, names) = {facts}")
        queries = _queries(len(cards), rng)
        _same_tables(check, engine, codes, cards, queries, f"cardinalities {cards}")
        rows = np.sort(rng.choice(n, n // 3, replace=False)).astype(np.int64)
        inner = np.sort(rng.choice(rows.size, rows.size // 2, replace=False)).astype(np.int64)
        sub = engine.subset(rows)
        _ensure(int(sub.n) == rows.size, check, "a subset's n is not its number of rows")
        _same_tables(check, sub, codes[:, rows], cards, queries, f"subset of {cards}")
        _same_tables(check, sub.subset(inner), codes[:, rows[inner]], cards, queries[-5:],
                     f"nested subset of {cards}")
        if isinstance(engine, WarmsTables):
            warmed = factory(codes, cards, names)
            warmed.warm(queries)
            for q in queries[:12]:
                _same_tables(check, warmed, codes, cards, [q], f"warmed {cards}")


def _check_engine_runs(factory: EngineFactory, seed: int) -> None:
    """A private run on the engine: bad input refused with nothing charged; a good run
    releases what the same run on the in-memory dataset releases (same noise seed)."""
    from dpcg.private.common import DiscreteAlgorithm
    from dpcg.private.ledger import LedgerTarget
    from dpcg.private.registry import algorithms
    from dpcg.private.run import discover_private

    check = "a private run on the engine"
    discrete = [a for a in algorithms().values() if isinstance(a, DiscreteAlgorithm)]
    _ensure(discrete, check, "no discrete private algorithm is registered")
    algo = discrete[0]
    rng = np.random.default_rng(seed)
    cards = [2, 3, 2, 3]
    codes = _random_codes(rng, cards, 600)
    names = [f"v{j}" for j in range(len(cards))]
    schema = Schema([Categorical(nm, [str(k) for k in range(c)])
                     for nm, c in zip(names, cards, strict=True)])
    dataset = Dataset.from_codes(codes, schema)
    with tempfile.TemporaryDirectory(prefix="dpcg-check-") as tmp:
        work = Path(tmp)
        for i, (label, overrides) in enumerate((("epsilon=0", {"epsilon": 0.0}),
                                                ("epsilon=nan", {"epsilon": math.nan}),
                                                ("delta=1", {"delta": 1.0}))):
            path = work / f"bad-{i}.sqlite"
            kwargs: dict[str, Any] = {"epsilon": 1.0, "noise_seed": 1, "max_depth": 1}
            kwargs.update(overrides)
            try:
                discover_private(factory(codes, cards, names), algo,
                                 ledger=LedgerTarget(path, "engine"), **kwargs)
            except PROJECT_ERRORS:
                pass
            else:
                _fail(check, f"{label}: accepted")
            _ensure(committed_mechanisms(path) == 0, check, f"{label}: a mechanism was charged")
        path = work / "good.sqlite"
        got = discover_private(factory(codes, cards, names), algo, epsilon=2.0,
                               noise_seed=4, max_depth=2, ledger=LedgerTarget(path, "engine"))
        ref = discover_private(dataset, algo, epsilon=2.0, noise_seed=4, max_depth=2,
                               ledger=LedgerTarget())
        _ensure(committed_mechanisms(path) == sum(got.mechanisms.values()) > 0, check,
                "the run's releases are not all in the ledger")
        _ensure(_verifies(path), check, "the ledger does not verify")
    _ensure(got.cpdag == ref.cpdag and got.pc.sepsets == ref.pc.sepsets
            and got.mechanisms == ref.mechanisms and got.spent == ref.spent, check,
            f"{algo.name} on the engine released other results than on the same data in "
            "memory (same noise seed)")


def check_engine(engine_factory: Any, *, quick: bool = True, seed: int = 0) -> None:
    """Check a table engine: ``engine_factory`` is an
    :class:`~dpcg.engines.base.EngineSpec`, a registered engine's name, or a callable
    ``(codes, cardinalities, names) -> TableEngine``; raises :class:`AssertionError`."""
    from dpcg.engines.base import EngineSpec, get_engine

    if isinstance(engine_factory, str):
        engine_factory = get_engine(engine_factory)
    factory: EngineFactory = (engine_factory.from_codes
                              if isinstance(engine_factory, EngineSpec) else engine_factory)
    _check_engine_input(factory)
    _check_engine_tables(factory, quick, seed)
    _check_engine_runs(factory, seed)
