"""Exact statistics on stratified contingency tables and continuous data.

* :mod:`dpcg.stats.contingency`: one-pass ``(n_strata, cx, cy)`` tables.
* :mod:`dpcg.stats.discrete`: G^2, chi^2, conditional mutual information.
* :mod:`dpcg.stats.kendall`: Kendall tau-a, conditional Kendall z (public
  normaliser / public floor), tie-corrected conditional Kendall.
* :mod:`dpcg.stats.spearman`: Spearman rho from midranks of table margins.
* :mod:`dpcg.stats.fisherz`: Fisher-z partial correlation.
* :mod:`dpcg.stats.registry`: statistics with proven sensitivity bounds.
* :mod:`dpcg.stats.bitset`: bitset tables (the ``numpy`` engine's hot path).
* :mod:`dpcg.stats.scores`: the registered dependence scores of the private family
  (not imported here: it loads ``scipy.stats``, which ``import dpcg.stats`` avoids).

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
from dpcg.stats.fisherz import FisherZResult, fisher_z, partial_correlation
from dpcg.stats.kendall import (
    concordance,
    conditional_kendall_z,
    conditional_kendall_z_unfloored,
    kendall_numerator,
    public_floor,
    tau_a,
    tau_a_blocks,
    tie_corrected_kendall_z,
)
from dpcg.stats.spearman import (
    conditional_spearman_numerator,
    conditional_spearman_z,
    conditional_spearman_z_public,
    spearman_rho_a,
    spearman_rho_blocks,
)

__all__ = [
    "ChiSquareResult",
    "FisherZResult",
    "StrataTable",
    "chi2_statistic",
    "chi2_test",
    "cmi",
    "concordance",
    "conditional_kendall_z",
    "conditional_kendall_z_unfloored",
    "conditional_spearman_numerator",
    "conditional_spearman_z",
    "conditional_spearman_z_public",
    "contingency_table",
    "degrees_of_freedom",
    "fisher_z",
    "g2_statistic",
    "g2_test",
    "kendall_numerator",
    "n_cmi",
    "partial_correlation",
    "public_floor",
    "spearman_rho_a",
    "spearman_rho_blocks",
    "table_from_codes",
    "tau_a",
    "tau_a_blocks",
    "tie_corrected_kendall_z",
]
