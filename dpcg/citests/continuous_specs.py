"""Registry specs of the PrivCRT statistic and the PrivGCM residual-product sum, on the
audits' discrete canonical input (``dpcg.stats.registry``).

They are registered when this module is imported (the CLI's plugin loader and
``audits.sensitivity.audit_all`` import it); ``audits.sensitivity.CASES`` holds their
data generators, so the sensitivity audit searches both.

Canonical input -> continuous data (a fixed, public map):

* ``x`` codes in ``[0, cx)`` -> ``2 x / (cx - 1) - 1`` in ``[-1, 1]`` (CRT: the exact
  X residual, clipped at ``B_r = 0.5``; GCM: the rescaled X);
* ``y`` codes in ``[0, cy)`` -> ``2 y / (cy - 1) - 1``;
* ``strata`` codes ``s`` -> the one-dimensional point ``z = 0.3 s`` (Gaussian kernel,
  bandwidth 0.5), so rows of one stratum share ``z`` and distinct strata are close.

Audited configuration: ``lam = 1`` (and ``B_r = 0.5`` for the CRT). Declared bounds
(replace-one, public parameters ``n``, ``cx``, ``cy``):

* ``crt-statistic`` ``T_0 = (1/n) sum clip(r_X, 0.5) r_Y``: ``crt_sensitivity(0.5, 1, n)``
  (docs/privacy/privcrt.md, Lemma 2);
* ``gcm-residual-product-sum`` ``sum_i R_i``: ``c_lambda(1) = 12``, because
  ``|sum_i (R_i - R'_i)| <= ||R - R'||_1`` (docs/privacy/privgcm.md, Theorem 1). This is a
  scalar projection of the vector bound; the full L1 bound is property-tested in
  ``tests/continuous/test_sensitivity.py``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from accounting.relations import Relation
from dpcg.citests.crt import crt_sensitivity, crt_statistics
from dpcg.citests.gcm import c_lambda
from dpcg.regression import KernelRidge
from dpcg.stats.registry import StatisticSpec, _int_param, get, register

AUDIT_LAM = 1.0
AUDIT_BANDWIDTH = 0.5
AUDIT_RESIDUAL_BOUND = 0.5
Z_STEP = 0.3


def _unit(codes: NDArray[np.integer], card: float) -> NDArray[np.float64]:
    c = max(int(card), 2)
    out: NDArray[np.float64] = 2.0 * np.asarray(codes, dtype=np.float64) / (c - 1) - 1.0
    return np.clip(out, -1.0, 1.0)


def _fit(strata: NDArray[np.integer]) -> KernelRidge:
    return KernelRidge(AUDIT_BANDWIDTH, AUDIT_LAM)


def _crt_stat(x: NDArray[np.integer], y: NDArray[np.integer], strata: NDArray[np.integer],
              *, n: float, cx: float, cy: float) -> float:
    z = Z_STEP * np.asarray(strata, dtype=np.float64)[:, None]
    ry = _fit(strata).factor(z).residuals(_unit(y, cy))
    return float(crt_statistics(_unit(x, cx)[None, :], ry, AUDIT_RESIDUAL_BOUND)[0])


def _public(n: float, cx: float, cy: float) -> int:
    """``n`` as an int after checking the public parameters (StatisticInputError)."""
    _int_param("cx", cx, 1)
    _int_param("cy", cy, 1)
    return _int_param("n", n, 1)


def _crt_sens(*, n: float, cx: float, cy: float) -> float:
    return crt_sensitivity(AUDIT_RESIDUAL_BOUND, AUDIT_LAM, _public(n, cx, cy))


def _gcm_stat(x: NDArray[np.integer], y: NDArray[np.integer], strata: NDArray[np.integer],
              *, n: float, cx: float, cy: float) -> float:
    z = Z_STEP * np.asarray(strata, dtype=np.float64)[:, None]
    r = _fit(strata).factor(z).residuals(np.column_stack([_unit(x, cx), _unit(y, cy)]))
    return float(np.sum(r[:, 0] * r[:, 1]))


def _gcm_sens(*, n: float, cx: float, cy: float) -> float:
    _public(n, cx, cy)
    return c_lambda(AUDIT_LAM)


CRT_STATISTIC_SPEC = StatisticSpec(
    name="crt-statistic",
    relation=Relation.REPLACE_ONE,
    sensitivity=_crt_sens,
    assumptions="PrivCRT statistic T_0 on [-1,1]-scaled data, exact X residuals clipped at "
    "B_r = 0.5, KRR of Y on Z with lam = 1, Gaussian kernel (k(z,z) = 1), public bandwidth 0.5; "
    "bound B_r a min(2(1+1/lam), 2+lam^-1/2)/n, a = 1+lam^-1/2.",
    proof_note="docs/privacy/privcrt.md",
    statistic=_crt_stat,
    public_params=("n", "cx", "cy"),
)

GCM_SUM_SPEC = StatisticSpec(
    name="gcm-residual-product-sum",
    relation=Relation.REPLACE_ONE,
    sensitivity=_gcm_sens,
    assumptions="Sum of the PrivGCM residual products (X, Y in [-1,1], KRR on Z with lam = 1, "
    "Gaussian kernel, public bandwidth 0.5); bounded by the L1 sensitivity c_lambda(1) = 12 of "
    "the whole product vector.",
    proof_note="docs/privacy/privgcm.md",
    statistic=_gcm_stat,
    public_params=("n", "cx", "cy"),
)


def register_continuous_specs() -> None:
    """Register both specs (idempotent). See the module docstring before calling it."""
    from dpcg.errors import StatisticInputError

    for spec in (CRT_STATISTIC_SPEC, GCM_SUM_SPEC):
        try:
            get(spec.name, spec.relation)
        except StatisticInputError:
            register(spec)


register_continuous_specs()
