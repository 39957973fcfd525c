"""The private PC family: Laplace-PC, SVT-PC, Priv-PC (sieve-and-examine), EM-PC, CURATE
and private-CI PC, each one module implementing the
:class:`~dpcg.private.contract.PrivateAlgorithm` contract over the one PC-stable engine
(:mod:`dpcg.pc.engine`).

The one public function is :func:`dpcg.discover` (``dpcg discover``): it builds a
request for the one pipeline (:mod:`dpcg.pipeline`), which runs a private algorithm through
:func:`dpcg.private.run.discover_private`. This package has no front door of its own.

* :mod:`dpcg.private.contract`: ``RunSettings``, ``Plan`` and ``PrivateAlgorithm``.
* :mod:`dpcg.private.registry`: the one registry (``algorithms()``, ``get_algorithm``).
* :mod:`dpcg.private.run`: the engine room, called by the pipeline only:
  ``discover_private`` (source -> ``run_private``, the one run sequence) on inputs the
  pipeline has already validated; :class:`PrivateResult`.
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
    from dpcg.private.contract import PrivateAlgorithm, RunSettings
    from dpcg.private.ledger import LedgerTarget
    from dpcg.private.registry import algorithms, get_algorithm, register_algorithm
    from dpcg.private.run import PrivateResult

__all__ = ["LedgerTarget", "PrivateAlgorithm", "PrivateResult", "RunSettings", "algorithms",
           "get_algorithm", "register_algorithm"]

#: Where each exported name lives: loaded on first use, so that importing one module of
#: the package (e.g. the registry) does not import every algorithm and scipy.stats.
_HOME = {"PrivateAlgorithm": "contract",
         "RunSettings": "contract", "LedgerTarget": "ledger", "algorithms": "registry",
         "get_algorithm": "registry", "register_algorithm": "registry",
         "PrivateResult": "run"}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'dpcg.private' has no attribute {name!r}")
    return getattr(importlib.import_module(f"dpcg.private.{home}"), name)
