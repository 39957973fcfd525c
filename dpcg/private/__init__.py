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

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dpcg.private.api import discover, nonprivate_pc
    from dpcg.private.contract import PrivateAlgorithm, RunSettings
    from dpcg.private.ledger import LedgerTarget
    from dpcg.private.registry import algorithms, get_algorithm, register_algorithm
    from dpcg.private.run import PrivateResult, discover_private, run_private

__all__ = ["LedgerTarget", "PrivateAlgorithm", "PrivateResult", "RunSettings", "algorithms",
           "discover", "discover_private", "get_algorithm", "nonprivate_pc",
           "register_algorithm", "run_private"]

#: Where each exported name lives: loaded on first use, so that importing one module of
#: the package (e.g. the registry) does not import every algorithm and scipy.stats.
_HOME = {"discover": "api", "nonprivate_pc": "api", "PrivateAlgorithm": "contract",
         "RunSettings": "contract", "LedgerTarget": "ledger", "algorithms": "registry",
         "get_algorithm": "registry", "register_algorithm": "registry",
         "PrivateResult": "run", "discover_private": "run", "run_private": "run"}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'dpcg.private' has no attribute {name!r}")
    return getattr(importlib.import_module(f"dpcg.private.{home}"), name)
