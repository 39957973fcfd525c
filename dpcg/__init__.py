"""dpcg: differentially private causal graph discovery on audited primitives.

The one entry point is :func:`dpcg.discover` (:mod:`dpcg.api`)::

    import dpcg
    res = dpcg.discover(df)                      # non-private PC on a pandas DataFrame
    res.graph, res.cpdag, res.guarantee, res.ledger, res.to_json(), res.plot("g.svg")

``import dpcg`` stays light: :mod:`dpcg.api` (and numpy with it) loads on first use of
``dpcg.discover`` and the other names below.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = ["DEFAULT", "NO_LEDGER", "DiscoveryResult", "__version__", "discover"]

if TYPE_CHECKING:
    from dpcg.api import DEFAULT, NO_LEDGER, DiscoveryResult, discover

_LAZY = {"discover", "DiscoveryResult", "NO_LEDGER", "DEFAULT"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from dpcg import api

        return getattr(api, name)
    raise AttributeError(f"module 'dpcg' has no attribute {name!r}")
