"""Subsample-and-aggregate G-test (Priv-PC App. F, corrected per PRIVACY.md section 5).

For discrete data. The rows are split into ``k`` **fixed, public** blocks of consecutive
rows (block ``b`` holds rows ``[floor(b n / k), floor((b+1) n / k))``; no shuffle, so
the partition does not depend on the data). On every block the non-private G-test of
``X _||_ Y | S`` gives a p-value ``p_b``, clipped to ``[0, 1]``. The median of the
``p_b`` is released with ``accounting``'s ``SmoothSensitivityMedian(eps, delta, 0, 1)``
(Nissim-Raskhodnikova-Smith smooth sensitivity with ``beta = eps / (2 ln(2/delta))``;
the corrected constants live in the primitive and its proof note), and the test
rejects when the released median is ``<= alpha``.

Privacy: under replace-one a neighbour changes one row, hence the contents of exactly
one block, hence at most one of the ``k`` values ``p_b`` (arbitrarily inside
``[0, 1]``). That is exactly the neighbouring relation of the block values that the
smooth-sensitivity median is proven for, so the release is ``(eps, delta)``-DP
(``docs/privacy/subsample-aggregate-g-test.md``).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray
from scipy.stats import chi2 as _chi2

from accounting.mechanisms import SmoothSensitivityMedian
from dpcg.citests.base import CIResult, validate_query
from dpcg.citests.gcm import check_alpha, check_epsilon
from dpcg.data.dataset import Dataset
from dpcg.errors import CITestError
from dpcg.stats.contingency import stratum_index, table_from_codes
from dpcg.stats.discrete import degrees_of_freedom, g2_statistic

if TYPE_CHECKING:
    from accounting.session import Session

FloatArray = NDArray[np.float64]


def block_bounds(n: int, k: int) -> NDArray[np.int64]:
    """Row boundaries ``floor(b n / k)``, ``b = 0..k`` of the fixed public partition."""
    return (np.arange(k + 1, dtype=np.int64) * n) // k


def block_pvalues(
    codes: NDArray[np.integer],
    cardinalities: tuple[int | None, ...],
    x: int,
    y: int,
    S: tuple[int, ...],
    k: int,
) -> FloatArray:
    """G-test p-value of ``x _||_ y | S`` on each of the ``k`` blocks, clipped to [0, 1].

    One table per block (``k`` small) and one vectorised ``chi2.sf`` over all blocks.
    """
    n = int(codes.shape[1])
    cx, cy = cardinalities[x], cardinalities[y]
    if cx is None or cy is None:
        raise CITestError("the G-test needs discrete x and y")
    strata, n_configs = stratum_index(codes, cardinalities, S)
    cuts = block_bounds(n, k)
    stats = np.empty(k)
    dfs = np.empty(k)
    for b in range(k):
        sl = slice(int(cuts[b]), int(cuts[b + 1]))
        t = table_from_codes(codes[x, sl], codes[y, sl], strata[sl], cx, cy, n_configs,
                             check=False)
        stats[b] = g2_statistic(t)
        dfs[b] = degrees_of_freedom(t)
    p = np.ones(k)
    pos = dfs > 0
    p[pos] = _chi2.sf(stats[pos], dfs[pos])
    out: FloatArray = np.clip(np.nan_to_num(p, nan=1.0), 0.0, 1.0)
    return out


class SubsampleAggregateGTest:
    """Private G-test by subsample-and-aggregate (see the module docstring).

    ``epsilon``, ``delta`` per test; ``blocks`` = ``k`` (public; each block should still
    hold enough rows for a meaningful G-test). ``CIResult.pvalue`` is the released
    (noisy) median p-value; ``statistic`` is ``None``.
    """

    def __init__(
        self,
        dataset: Dataset,
        session: Session,
        epsilon: float,
        delta: float,
        *,
        blocks: int = 20,
        alpha: float = 0.05,
    ) -> None:
        self.alpha = check_alpha(alpha)
        self.epsilon = check_epsilon(epsilon)
        if isinstance(delta, bool) or not isinstance(delta, int | float) or not (
            0.0 < float(delta) < 1.0
        ):
            raise CITestError(f"delta={delta!r} must be in (0, 1)")
        self.delta = float(delta)
        if isinstance(blocks, bool) or not isinstance(blocks, int) or blocks < 1:
            raise CITestError(f"blocks must be a positive int, got {blocks!r}")
        try:
            codes = dataset.codes
            cards = tuple(dataset.cardinalities)
        except AttributeError as exc:
            raise CITestError(f"dataset: expected a discrete dpcg Dataset ({exc})") from None
        if blocks > int(codes.shape[1]):
            raise CITestError(f"blocks={blocks} exceeds the number of rows n={codes.shape[1]}")
        self.codes = codes
        self.cardinalities = cards
        self.blocks = blocks
        self.names = tuple(getattr(dataset, "names", ())) or tuple(
            f"X{j}" for j in range(codes.shape[0])
        )
        self.session = session

    def mechanism(self) -> SmoothSensitivityMedian:
        return SmoothSensitivityMedian(epsilon=self.epsilon, delta=self.delta, lower=0.0,
                                       upper=1.0)

    def test(self, x: int, y: int, S: tuple[int, ...]) -> CIResult:
        xi, yi, Si = validate_query(x, y, S, int(self.codes.shape[0]))
        mech = self.mechanism()
        nm = self.names

        def compute() -> FloatArray:
            return block_pvalues(self.codes, self.cardinalities, xi, yi, Si, self.blocks)

        purpose = (
            f"subsample-aggregate G-test median p {nm[xi]} _||_ {nm[yi]} | "
            f"{{{', '.join(nm[s] for s in Si)}}} (k={self.blocks})"
        )
        p = float(self.session.release(mech, compute, purpose=purpose))
        p = min(1.0, max(0.0, p)) if math.isfinite(p) else 1.0
        return CIResult(p > self.alpha, None, p)
