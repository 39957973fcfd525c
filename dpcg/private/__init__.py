"""The private PC family: Laplace-PC, SVT-PC, Priv-PC (sieve-and-examine), EM-PC and
CURATE, as strategies over the one PC-stable engine (:mod:`dpcg.pc.engine`).

* :func:`discover`: the Python API (returns a :class:`PrivateResult` whose
  :meth:`~PrivateResult.to_json` mirrors ``result.json``).
* :mod:`dpcg.private.planning`: public plan sizes, budgets, subsample rates, CURATE's
  SLSQP budgets.
* One module per algorithm: :mod:`~dpcg.private.laplace_pc`, :mod:`~dpcg.private.svt_pc`,
  :mod:`~dpcg.private.priv_pc`, :mod:`~dpcg.private.em_pc`, :mod:`~dpcg.private.curate`.

Proof notes: ``docs/privacy/algorithm-*.md``; user guide: ``docs/choosing.md``.
"""

from __future__ import annotations

from dpcg.private.api import discover, nonprivate_pc, run_private
from dpcg.private.common import ALGORITHMS, PrivateResult, PrivateSettings

__all__ = ["ALGORITHMS", "PrivateResult", "PrivateSettings", "discover", "nonprivate_pc",
           "run_private"]
