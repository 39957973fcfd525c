"""Continuous CI tests in the registry: PrivGCM / PrivCRT (private; built with the run's
session by :mod:`dpcg.private.private_ci_pc`) and the non-private GCM.

``build_private_test`` builds the private tester of one run on a continuous dataset;
``load_model_x`` reads PrivCRT's public model-X law (``--model-x law.json`` with keys
``mean`` and ``cov``; e.g. estimated from public data, never from the private dataset).
The options of each test (``--bandwidth``, ``--lam``, ``--regression krr|rff``,
``--features``, ``--feature-seed``, ``--model-x``, ``--crt-resamples``,
``--residual-bound``) are typed dataclasses registered with the test
(:mod:`dpcg.citests.registry`); the CLI derives its flags from them.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from accounting.session import Session
from dpcg.citests.base import CITest
from dpcg.citests.crt import (
    DEFAULT_CRT_LAMBDA,
    DEFAULT_LAW_SHARE,
    RELEASES,
    Y_FITS,
    GaussianModelX,
    PrivateModelX,
    PrivCRTTest,
)
from dpcg.citests.gcm import (
    DEFAULT_BANDWIDTH,
    DEFAULT_GROUPS,
    TWICE_RESIDUAL_CLIP,
    GCMTest,
    PrivGCMTest,
    check_fit,
    check_residual_clip,
    default_groups,
)
from dpcg.citests.registry import TestContext, TestSpec, option, register_test
from dpcg.data.dataset import Dataset
from dpcg.data.schema import Continuous
from dpcg.errors import CITestError
from dpcg.regression import (
    DEFAULT_FEATURE_SEED,
    DEFAULT_FEATURES,
    check_feature_seed,
    check_features,
    check_regression,
)

TESTS = ("privgcm", "privcrt")
#: ``--model-x private``: the law is released from the data by the run.
PRIVATE_LAW = "private"


def _check_dataset(dataset: Dataset) -> None:
    if not dataset.is_continuous:
        raise CITestError("PrivGCM / PrivCRT need an all-continuous schema with public bounds")


def _bounds(dataset: Dataset) -> list[tuple[float, float]]:
    out = []
    for c in dataset.schema.columns:
        if not isinstance(c, Continuous):
            raise CITestError(f"column {c.name!r}: PrivGCM / PrivCRT need continuous "
                              "columns with public bounds")
        out.append((float(c.lower), float(c.upper)))
    return out


def load_model_x(path: str | Path) -> GaussianModelX:
    """A public Gaussian law from JSON ``{"mean": [...], "cov": [[...], ...]}``."""
    try:
        doc = json.loads(Path(path).read_text())
        return GaussianModelX.from_arrays(np.asarray(doc["mean"], dtype=np.float64),
                                          np.asarray(doc["cov"], dtype=np.float64))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CITestError(f"--model-x {path}: expected JSON with 'mean' and 'cov' ({exc})"
                          ) from None


def default_y_fit(model: object) -> str:
    """PrivCRT's default residualisation of Y: ``"law"`` with a privately released law
    (the level then rests on two fits of the same noisy law, whose errors multiply;
    docs/privacy/privcrt-released-law.md), ``"ridge"`` otherwise (unchanged)."""
    return "law" if isinstance(model, PrivateModelX) else "ridge"


def build_private_test(
    dataset: Dataset,
    test: str,
    session: Session | None,
    test_epsilon: float,
    *,
    alpha: float = 0.05,
    bandwidth: float | None = None,
    lam: float | None = None,
    model: GaussianModelX | PrivateModelX | None = None,
    m: int | None = None,
    residual_bound: float = 1.0,
    regression: str = "krr",
    features: int | None = None,
    feature_seed: int | None = None,
    groups: int | None = None,
    fit: str | None = None,
    residual_clip: float | None = None,
    release: str | None = None,
    y_fit: str | None = None,
) -> PrivGCMTest | PrivCRTTest:
    """The CI tester ``test`` on ``dataset`` charging ``test_epsilon`` per test.

    PrivCRT's ``release`` is ``"threshold"`` (default: exact level ``k/(m+1)``) or
    ``"rank"`` (Kalemaj et al.'s Report-Noisy-Max rank; docs/privacy/privcrt.md).
    PrivCRT's ``model`` is a public law, or :class:`PrivateModelX` (the run releases the
    law first, :mod:`dpcg.citests.crt_law`; the tester then holds the placeholder until
    :mod:`dpcg.private.private_ci_pc` replaces it by the released law).

    PrivGCM releases ``groups`` group sums (default ``default_groups(n)``, i.e.
    ``min(20, n // 2)``; ``0``: the paper's release of all ``n`` products), from the
    twice-fitted residuals by default (``fit="single"``: one ridge fit; ``residual_clip``:
    the public clip of the twice-fitted residuals, docs/privacy/privgcm.md);
    ``bandwidth=None`` is the test's default (PrivGCM: its public rule; PrivCRT:
    ``DEFAULT_BANDWIDTH``)."""
    _check_dataset(dataset)
    if test == "privgcm":
        return PrivGCMTest(dataset.values, _bounds(dataset), session, test_epsilon,
                           bandwidth=bandwidth, lam=lam,
                           alpha=alpha, names=dataset.names, regression=regression,
                           features=features, feature_seed=feature_seed,
                           groups=(default_groups(dataset.n) if groups is None
                                   else None if groups == 0 else groups),
                           fit=fit, residual_clip=residual_clip)
    if test == "privcrt":
        if model is None:
            raise CITestError(
                "privcrt needs the public model-X law of the variables (model= / --model-x "
                "law.json), or --model-x private to release one from the data with a share "
                "of the budget"
            )
        return PrivCRTTest(dataset.values, _bounds(dataset), session, test_epsilon, model,
                           m=m, residual_bound=residual_bound,
                           bandwidth=DEFAULT_BANDWIDTH if bandwidth is None else bandwidth,
                           lam=DEFAULT_CRT_LAMBDA if lam is None else lam, alpha=alpha,
                           names=dataset.names, regression=regression, features=features,
                           feature_seed=feature_seed,
                           release="threshold" if release is None else release,
                           y_fit=default_y_fit(model) if y_fit is None else y_fit)
    raise CITestError(f"test={test!r}: choose one of {TESTS}")


# ---------------------------------------------------------------------------------
# registry hook: --test privgcm | privcrt (private) | gcm (non-private)
# ---------------------------------------------------------------------------------


def _check_positive(name: str, value: float | int | None, *, integer: bool = False) -> None:
    if value is None:
        return
    kind = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kind) or not (
        math.isfinite(value) and value > 0
    ):
        what = "a positive integer" if integer else "a finite number > 0"
        raise CITestError(f"{name}: expected {what}, got {value!r}")


@dataclass(frozen=True)
class KernelOptions:
    """The ridge-regression options of ``gcm``, ``privgcm`` and ``privcrt``."""

    bandwidth: float | None = option(
        None, type=float,
        help=f"public Gaussian kernel bandwidth on the [-1, 1] scale of Z "
             f"(default: privgcm 0.1 sqrt(|S|) with --groups, else {DEFAULT_BANDWIDTH}; "
             f"privcrt {DEFAULT_BANDWIDTH}; gcm chosen per regression by GCV)")
    lam: float | None = option(
        None, type=float,
        help="public KRR ridge lam >= 1e-3 (default: gcm chosen per regression by GCV "
             "on a grid from 1e-7 to 1; privgcm 0.03 (1e4/n)^0.2 in [1e-3, 0.1] with "
             "--groups (twice-fitted; --fit single: 0.03 min(1, (1e4/n)^0.7)), "
             "privgcm_lambda(n, eps) with --groups 0; privcrt 10)")
    regression: str | None = option(
        None, type=str, metavar="krr|rff",
        help="krr: exact kernel ridge, O(n^3) (default); rff: ridge on random Fourier "
             "features with public frequencies, O(n D^2), same sensitivity")
    features: int | None = option(
        None, type=int, metavar="D",
        help=f"rff only: number D of random Fourier features (even; default "
             f"{DEFAULT_FEATURES})")
    feature_seed: int | None = option(
        None, type=int,
        help=f"rff only: public seed of the Fourier frequencies (a hyper-parameter, "
             f"never from the data; default {DEFAULT_FEATURE_SEED})")
    groups: int | None = option(
        None, type=int, metavar="G",
        help=f"privgcm only: release the sums of the residual products over G public row "
             f"groups (default min({DEFAULT_GROUPS}, n // 2)); 0: the paper's release of "
             f"all n products")
    fit: str | None = option(
        None, type=str, metavar="twice|single",
        help="privgcm with --groups only: twice-fitted residuals (default: the ridge refit "
             "to its own residuals, which removes its shrinkage bias from the statistic) "
             "or the single fit")
    residual_clip: float | None = option(
        None, type=float, metavar="C",
        help=f"privgcm, twice-fitted only: public clip of the residuals, in (0, 1] "
             f"(default {TWICE_RESIDUAL_CLIP})")

    def __post_init__(self) -> None:
        _check_positive("bandwidth", self.bandwidth)
        _check_positive("lam", self.lam)
        check_regression(self.regression_or_default)
        if self.regression_or_default == "krr" and (
            self.features is not None or self.feature_seed is not None
        ):
            raise CITestError("features / feature_seed: these options apply to "
                              "--regression rff only")
        if self.features is not None:
            check_features(self.features)
        if self.feature_seed is not None:
            check_feature_seed(self.feature_seed)
        if self.groups is not None and (
                isinstance(self.groups, bool) or not isinstance(self.groups, int)
                or self.groups < 0 or self.groups == 1):
            raise CITestError(f"groups: expected 0 or an integer >= 2, got {self.groups!r}")
        if self.fit is not None:
            check_fit(self.fit)
        if self.residual_clip is not None:
            check_residual_clip(self.residual_clip)


    @property
    def regression_or_default(self) -> str:
        return "krr" if self.regression is None else self.regression


    @property
    def bandwidth_or_default(self) -> float:
        return DEFAULT_BANDWIDTH if self.bandwidth is None else self.bandwidth


@dataclass(frozen=True)
class PrivCRTOptions(KernelOptions):
    """PrivCRT's options: the kernel's plus the public model-X law and resampling."""

    model_x: Path | None = option(  # noqa: RUF009 - option() is a dataclass field
        None, type=Path, metavar="JSON|private",
        help="public Gaussian law {'mean': [...], 'cov': [[...]]} of the variables, or "
             "'private': release a Gaussian law from the data first (one Laplace release "
             "of the bounded moment vector with --model-x-share of epsilon; EXPERIMENTAL: "
             "the CRT's level is then not guaranteed (measured in band only for linear "
             "dependence from n = 1e4 at eps 1), docs/privacy/privcrt-released-law.md); "
             "required")
    model_x_share: float | None = option(
        None, type=float, metavar="F",
        help=f"--model-x private only: public share of epsilon spent on the law's release, "
             f"in (0, 1) (default {DEFAULT_LAW_SHARE})")
    crt_y_fit: str | None = option(
        None, type=str, metavar="ridge|law",
        help="how PrivCRT residualises Y on Z: 'ridge' (the kernel / RFF ridge of "
             "--bandwidth/--lam; default with a law file) or 'law' (the conditional mean "
             "of Y under the Gaussian law, residual clipped to --residual-bound; default "
             "with --model-x private)")
    crt_resamples: int | None = option(
        None, type=int, help="number m of model-X resamples (default ceil(1/alpha)-1)")
    residual_bound: float | None = option(
        None, type=float, help="public clip B_r of the X residuals (default 1)")
    crt_release: str | None = option(
        None, type=str, metavar="threshold|rank",
        help="PrivCRT's release: 'threshold' (default; one Laplace release of the margin "
             "against the k-th largest noisy resample, type-I error exactly k/(m+1)) or "
             "'rank' (Kalemaj et al.'s Report-Noisy-Max rank, level at most alpha)")
    #: The public law as an object (Python API; the CLI gives ``model_x``, a JSON file),
    #: or ``PrivateModelX(share)`` for a privately released law.
    model: GaussianModelX | PrivateModelX | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_positive("crt_resamples", self.crt_resamples, integer=True)
        _check_positive("residual_bound", self.residual_bound)
        if self.crt_y_fit is not None and self.crt_y_fit not in Y_FITS:
            raise CITestError(f"crt_y_fit: choose one of {Y_FITS}, got {self.crt_y_fit!r}")
        if self.crt_release is not None and self.crt_release not in RELEASES:
            raise CITestError(f"crt_release: choose one of {RELEASES}, got "
                              f"{self.crt_release!r}")
        if self.model is not None and self.model_x is not None:
            raise CITestError("model_x: give the model-X law once (model or model_x)")
        if self.model_x_share is not None:
            if not self.private_law:
                raise CITestError("model_x_share: applies to --model-x private only")
            PrivateModelX(self.model_x_share)  # validates the share
        for name in ("groups", "fit", "residual_clip"):
            if getattr(self, name) is not None:
                raise CITestError(f"{name}: applies to --test privgcm only")


    @property
    def private_law(self) -> bool:
        """The law is released by the run (``--model-x private`` / ``PrivateModelX``)."""
        return (isinstance(self.model, PrivateModelX)
                or (self.model_x is not None and str(self.model_x) == PRIVATE_LAW))

    def law(self) -> GaussianModelX | PrivateModelX | None:
        """The model-X source: the public law (read from ``model_x`` when given), or the
        private-release placeholder."""
        if isinstance(self.model, PrivateModelX):
            return self.model
        if self.private_law:
            return PrivateModelX(DEFAULT_LAW_SHARE if self.model_x_share is None
                                 else self.model_x_share)
        if self.model_x is not None:
            return load_model_x(self.model_x)
        return self.model


def private_test_for(dataset: Dataset, test: str, options: KernelOptions,
                     session: Session | None, test_epsilon: float, alpha: float
                     ) -> PrivGCMTest | PrivCRTTest:
    """``build_private_test`` from a registered test's typed options."""
    if isinstance(options, PrivCRTOptions):
        return build_private_test(
            dataset, test, session, test_epsilon, alpha=alpha, model=options.law(),
            m=options.crt_resamples,
            residual_bound=1.0 if options.residual_bound is None else options.residual_bound,
            bandwidth=options.bandwidth_or_default, lam=options.lam,
            regression=options.regression_or_default, features=options.features,
            feature_seed=options.feature_seed, release=options.crt_release,
            y_fit=options.crt_y_fit)
    return build_private_test(dataset, test, session, test_epsilon, alpha=alpha,
                              bandwidth=options.bandwidth, lam=options.lam,
                              regression=options.regression_or_default,
                              features=options.features, feature_seed=options.feature_seed,
                              groups=options.groups, fit=options.fit,
                              residual_clip=options.residual_clip)


def _build_gcm(ctx: TestContext[KernelOptions]) -> CITest:
    _check_dataset(ctx.dataset)
    for name in ("groups", "fit", "residual_clip"):
        if getattr(ctx.options, name) is not None:
            raise CITestError(f"{name}: applies to --test privgcm only")
    return GCMTest(ctx.dataset.values, _bounds(ctx.dataset), alpha=ctx.alpha,
                   names=ctx.dataset.names, bandwidth=ctx.options.bandwidth,
                   lam=ctx.options.lam, regression=ctx.options.regression_or_default,
                   features=ctx.options.features, feature_seed=ctx.options.feature_seed)


register_test(TestSpec(
    name="privgcm", options=KernelOptions, private=True, data="continuous",
    description="PrivGCM (Kalemaj et al.): KRR residual products (G group sums by "
                "default) + vector Laplace"))
register_test(TestSpec(
    name="privcrt", options=PrivCRTOptions, private=True, data="continuous",
    description="PrivCRT (Kalemaj et al.): model-X CRT, threshold (default) or "
                "Report-Noisy-Max rank release; needs --model-x law.json or private"))
register_test(TestSpec(
    name="gcm", options=KernelOptions, build=_build_gcm, data="continuous",
    description="generalised covariance measure with KRR (non-private; "
                "bandwidth and lam tuned by GCV unless given)"))
