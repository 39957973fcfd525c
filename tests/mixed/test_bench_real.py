"""``dpcg bench real`` on a small stand-in wheel: the Sachs reader, parity with
causal-learn, the private rows drawn from the registry, the markdown."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import pytest

from benchmarks.real import (
    SACHS_DATA,
    SACHS_TARGET,
    Config,
    _fits,
    find_wheel,
    load_sachs,
    markdown,
    private_candidates,
    run_suite,
)
from dpcg.data import Categorical, Continuous, Schema
from dpcg.errors import DpcgError

NAMES = ["praf", "pmek", "p44/42", "PKA"]


def _wheel(tmp_path: Path, n: int = 400) -> Path:
    """A zip laid out like the cdt wheel, with a small positive chain praf -> pmek ->
    p44/42 and PKA -> pmek (not the real data)."""
    g = np.random.default_rng(0)
    a = g.standard_normal(n)
    d = g.standard_normal(n)
    b = 0.8 * a + 0.6 * d + 0.5 * g.standard_normal(n)
    c = 0.9 * b + 0.5 * g.standard_normal(n)
    values = np.exp(np.column_stack([a, b, c, d]) + 3.0)
    body = "\n".join(",".join(f"{v:.4g}" for v in row) for row in values)
    path = tmp_path / "cdt-0.6.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(SACHS_DATA, ",".join(NAMES) + "\n" + body + "\n")
        zf.writestr(SACHS_TARGET, '"Cause","Effect"\n"praf","pmek"\n"pmek","p44/42"\n'
                                  '"PKA","pmek"\n')
    return path


def test_reader(tmp_path: Path) -> None:
    t = load_sachs(_wheel(tmp_path))
    assert t.dataset.names == tuple(NAMES)
    assert t.dataset.n == 400
    assert len(t.truth.skeleton()) == 3
    assert all(isinstance(c, Continuous) and (c.lower, c.upper) == (0.0, 1e4)
               for c in t.dataset.schema)
    assert len(t.sha256) == 64


def test_bad_wheels(tmp_path: Path) -> None:
    with pytest.raises(DpcgError, match="no such file"):
        find_wheel(tmp_path / "missing.whl", tmp_path)
    bad = tmp_path / "bad.whl"
    bad.write_bytes(b"not a zip")
    with pytest.raises(DpcgError, match="not a cdt wheel"):
        load_sachs(bad)
    (tmp_path / "cdt-0.6.0-py3-none-any.whl").write_bytes(b"x")
    assert find_wheel(None, tmp_path) == tmp_path / "cdt-0.6.0-py3-none-any.whl"


def test_private_candidates_follow_the_registry() -> None:
    cont = Schema([Continuous("a", 0, 1), Continuous("b", 0, 1)])
    disc = Schema([Categorical("a", ["0", "1"]), Categorical("b", ["0", "1"])])
    mixed = Schema([Continuous("a", 0, 1), Categorical("b", ["0", "1"])])
    c = private_candidates(cont)
    assert ("private-ci-pc", "privgcm") in c
    assert ("private-ci-pc", "privcrt") in c
    assert not any(algo == "laplace-pc" for algo, _ in c)
    d = private_candidates(disc)
    assert any(algo == "laplace-pc" for algo, _ in d)
    assert not any(algo == "private-ci-pc" for algo, _ in d)
    # one row per resolved test: laplace-pc's g2 and cmi are the same release
    assert len([t for a, t in d if a == "laplace-pc"]) == len(
        {t for a, t in d if a == "laplace-pc"})
    m = private_candidates(mixed)
    assert all(algo not in ("laplace-pc", "private-ci-pc") for algo, _ in m)
    assert _fits("any", mixed)
    assert _fits("mixed", mixed)  # a kind this suite does not know: tried, not hidden
    assert not _fits("continuous", mixed)


def test_suite_end_to_end(tmp_path: Path) -> None:
    cfg = Config(wheel=_wheel(tmp_path), workdir=tmp_path, epsilons=(1.0,), seeds=1,
                 nodes=(6,), rows=2000, timeout=20.0, null_ns=(500,), null_reps=20)
    res = run_suite(cfg)
    methods = [(r.table, r.method) for r in res.rows]
    assert ("sachs", "pc / fisherz (non-private)") in methods
    assert ("sachs", "pc / dg-lrt (non-private)") in methods
    assert ("sachs", "private-ci-pc / privgcm") in methods
    assert ("mixed-6", "pc / dg-lrt (non-private)") in methods
    fz = next(r for r in res.rows if r.method == "pc / fisherz (non-private)")
    assert fz.f1 == [1.0]
    cl = next(r for r in res.rows if r.method.startswith("causal-learn"))
    if cl.status == "ok":
        assert res.parity is True
    # no public model-X law: the row releases one (--model-x private) and runs
    crt = next(r for r in res.rows
               if r.method == "private-ci-pc / privcrt --model-x private")
    assert crt.status == "ok" or "exhausted" in crt.status, crt.status
    assert len(crt.f1) == 1
    gcm = next(r for r in res.rows if r.method == "private-ci-pc / privgcm")
    assert gcm.status == "ok" or "stopped" in gcm.status or "exhausted" in gcm.status
    assert len(res.null) == 1
    assert 0.0 <= res.null[0]["rate"] <= 1.0
    md = markdown(cfg, res, "dpcg bench real --test")
    assert "| sachs | pc / fisherz (non-private) | - | 1.000 | 1.00 |" in md
    assert "Skeleton parity" in md


def test_methods_filter_and_crt_fit_study() -> None:
    from benchmarks.real import CrtFitConfig, crt_fit_rep, crt_fit_table, run_crt_fit

    cfg = Config(wheel=None, workdir=Path("."), methods="privcrt")
    assert cfg.wanted("private-ci-pc", "privcrt")
    assert not cfg.wanted("private-ci-pc", "privgcm")
    for model in ("gauss", "skew", "nonlinear"):
        values, bounds = crt_fit_table(model, 300, 1)
        assert values.shape == (3, 300)
        assert all(lo <= float(v.min()) and float(v.max()) <= hi
                   for v, (lo, hi) in zip(values, bounds, strict=True))
    with pytest.raises(DpcgError):
        crt_fit_table("other", 300, 1)
    cc = CrtFitConfig(ns=(300,), models=("gauss",), reps=4, reps_large=4)
    out = crt_fit_rep("gauss", 300, 0, cc)
    assert set(out) == {"priv@1", "priv@5", "point@1", "crt-exact"}
    md = run_crt_fit(cc)
    assert "| gauss | 300 | 4 |" in md
