"""Worst-case neighbouring inputs for each primitive.

Each fixture is a pair ``(D, D')`` of mechanism inputs that a replace-one change of
one record can produce for a statistic of the declared sensitivity ``Delta``, chosen
so that the privacy loss of the correct mechanism comes close to its declared
``eps`` (so that the audit is tight) and a broken variant visibly exceeds it.

* Laplace: ``f(D) = 0``, ``f(D') = Delta``.
* SVT (cutoff 1): ``k - 1`` answers below the threshold then one above, shifted by
  ``Delta`` in opposite directions: ``D = (0, ..., 0, Delta)``,
  ``D' = (Delta, ..., Delta, 0)``. The event "first positive at the last query" has
  loss approaching ``eps`` for Alg. 1 (``k = 10``, ``T = 0``: exact loss 0.989 at
  ``eps = 1``; see ``audits.exact.svt_pmf``).
* SVT without a cutoff (Alg. 6): every answer above, ``D = (Delta, ...)``,
  ``D' = (0, ...)``.
* RNM / exponential: candidate 0 gains ``Delta`` while ``m`` others lose ``Delta``:
  ``D = (0, Delta, ..., Delta)``, ``D' = (Delta, 0, ..., 0)``; the loss of outcome 0
  tends to ``eps`` as ``m`` grows (``m = 20``: 0.95 for the exponential mechanism,
  0.99 for exponential/Laplace noise).
* Top-k: the ``k`` candidates that gain ``Delta`` while ``m`` others lose it:
  ``D = (0, ..., 0, Delta, ..., Delta)``, ``D' = (Delta, ..., Delta, 0, ..., 0)`` (``k``
  then ``m`` entries; utilities move in both directions, the worst case for an
  exponential-type mechanism). Each of the ``k`` peeling rounds that picks one of the
  gainers loses close to ``eps``, so the loss of the output ``(0, 1, ..., k-1)`` tends to
  ``k eps`` as ``m`` grows (``k = 2``, ``m = 20``: 1.857 of 2 at ``eps = 1``; see
  ``audits.exact.top_k_pmf``).
* SmoothMedian: block values in ``[0, 1]`` half at each end, so that one replaced
  block moves the median from one end of the range to the other (local sensitivity
  equal to the whole range).
* Subsampled SVT: ``n`` rows of ``k`` 0/1 columns, all zero in ``D``; in ``D'`` one
  row is ``(1, ..., 1, 0)`` and in ``D`` that row is ``(0, ..., 0, 1)`` (the SVT
  pattern above, carried by a single row that the subsample includes with
  probability ``m/n``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class Neighbours:
    """A pair of neighbouring mechanism inputs and what they represent."""

    d: Any
    d_prime: Any
    description: str


def laplace_pair(sensitivity: float = 1.0) -> Neighbours:
    return Neighbours(0.0, float(sensitivity), f"f(D)=0, f(D')={sensitivity:g}")


def svt_pair(k: int = 10, sensitivity: float = 1.0) -> Neighbours:
    d = np.zeros(k)
    d[-1] = sensitivity
    dp = np.full(k, sensitivity)
    dp[-1] = 0.0
    return Neighbours(d, dp, f"{k - 1} answers below then one above, opposite shifts of "
                             f"{sensitivity:g}")


def svt_all_above_pair(k: int = 10, sensitivity: float = 1.0) -> Neighbours:
    return Neighbours(np.full(k, float(sensitivity)), np.zeros(k),
                      f"{k} answers, all shifted by {sensitivity:g}")


def rnm_pair(m: int = 20, sensitivity: float = 1.0) -> Neighbours:
    d = np.full(m + 1, float(sensitivity))
    d[0] = 0.0
    dp = np.zeros(m + 1)
    dp[0] = float(sensitivity)
    return Neighbours(d, dp, f"candidate 0 gains {sensitivity:g}, {m} others lose it")


def top_k_pair(k: int = 2, m: int = 20, sensitivity: float = 1.0) -> Neighbours:
    d = np.r_[np.zeros(k), np.full(m, float(sensitivity))]
    dp = np.r_[np.full(k, float(sensitivity)), np.zeros(m)]
    return Neighbours(d, dp, f"candidates 0..{k - 1} gain {sensitivity:g}, {m} others lose it")


def median_pair(blocks: int = 21) -> Neighbours:
    """``blocks`` (odd) values in [0, 1]: ``(blocks+1)/2`` ones vs ``(blocks-1)/2``."""
    half = blocks // 2
    d = np.concatenate([np.zeros(half), np.ones(half + 1)])
    dp = np.concatenate([np.zeros(half + 1), np.ones(half)])
    return Neighbours(d, dp, f"{blocks} block values split at the median (0 vs 1)")


def subsampled_svt_pair(n_rows: int = 20, k: int = 10) -> Neighbours:
    d = np.zeros((n_rows, k))
    dp = np.zeros((n_rows, k))
    d[0, -1] = 1.0
    dp[0, :-1] = 1.0
    return Neighbours(d, dp, f"{n_rows} rows x {k} 0/1 columns differing in row 0 "
                             "((0,..,0,1) vs (1,..,1,0))")
