"""The private PC family: Laplace-PC, SVT-PC, Priv-PC (sieve-and-examine), EM-PC, CURATE
and private-CI PC, each one module implementing the
:class:`~dpcg.private.contract.PrivateAlgorithm` contract over the one PC-stable engine
(:mod:`dpcg.pc.engine`).

* :func:`discover`: the Python API (returns a :class:`PrivateResult` whose
  :meth:`~PrivateResult.to_json` mirrors ``result.json``).
* :mod:`dpcg.private.contract`: ``RunSettings``, ``Plan`` and ``PrivateAlgorithm``.
* :mod:`dpcg.private.registry`: the one registry (``algorithms()``, ``get_algorithm``).
* :mod:`dpcg.private.run`: ``run_private``, the one run sequence; ``discover_private``.
* :mod:`dpcg.private.ledger`: the one ledger policy (default location, dataset
  registration, the run's session).
* :mod:`dpcg.private.planning`: public plan sizes, budgets, subsample rates, CURATE's
  SLSQP budgets.
* One module per algorithm: :mod:`~dpcg.private.laplace_pc`, :mod:`~dpcg.private.svt_pc`,
  :mod:`~dpcg.private.priv_pc`, :mod:`~dpcg.private.em_pc`, :mod:`~dpcg.private.curate`,
  :mod:`~dpcg.private.private_ci_pc`.

Proof notes: ``docs/privacy/algorithm-*.md``; user guide: ``docs/choosing.md``.
"""

from __future__ import annotations

from dpcg.private.api import discover, nonprivate_pc
from dpcg.private.contract import PrivateAlgorithm, RunSettings
from dpcg.private.ledger import LedgerTarget
from dpcg.private.registry import algorithms, get_algorithm, register_algorithm
from dpcg.private.run import PrivateResult, discover_private, run_private

__all__ = ["LedgerTarget", "PrivateAlgorithm", "PrivateResult", "RunSettings", "algorithms",
           "discover", "discover_private", "get_algorithm", "nonprivate_pc",
           "register_algorithm", "run_private"]
