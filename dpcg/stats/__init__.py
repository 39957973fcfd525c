"""Exact statistics on stratified contingency tables and continuous data.

* :mod:`dpcg.stats.contingency`: one-pass ``(n_strata, cx, cy)`` tables.
* :mod:`dpcg.stats.discrete`: G^2, chi^2, conditional mutual information.
* :mod:`dpcg.stats.kendall`: Kendall tau-a, conditional Kendall z (public
  normaliser / public floor), tie-corrected conditional Kendall.
* :mod:`dpcg.stats.spearman`: Spearman rho from midranks of table margins.
* :mod:`dpcg.stats.fisherz`: Fisher-z partial correlation.
* :mod:`dpcg.stats.registry`: statistics with proven sensitivity bounds.

See ``docs/stats.md``.
"""

from __future__ import annotations

from dpcg.stats.contingency import StrataTable, contingency_table, table_from_codes
from dpcg.stats.discrete import (
    ChiSquareResult,
    chi2_statistic,
    chi2_test,
    cmi,
    degrees_of_freedom,
    g2_statistic,
    g2_test,
    n_cmi,
)

__all__ = [
    "ChiSquareResult",
    "StrataTable",
    "chi2_statistic",
    "chi2_test",
    "cmi",
    "contingency_table",
    "degrees_of_freedom",
    "g2_statistic",
    "g2_test",
    "n_cmi",
    "table_from_codes",
]
