"""Pictures and reports: the CPDAG picture, a ledger's spending, the HTML run report.

* :mod:`dpcg.viz.result` -- read a ``result.json`` written by ``dpcg discover`` and, for a
  bundled network, its true CPDAG; classify edges against the truth.
* :mod:`dpcg.viz.graph` -- draw a CPDAG (SVG or PNG) with networkx layouts and matplotlib.
* :mod:`dpcg.viz.spending` -- plot a verified ledger's reservations per dataset over time.
* :mod:`dpcg.viz.report` -- one self-contained HTML page for a privacy reviewer.

matplotlib is an optional extra (``pip install 'dpcg[plot]'``), imported lazily: the
HTML report's text parts and :mod:`dpcg.viz.result` work without it, and drawing raises
:class:`~dpcg.errors.MissingDependencyError` saying what to install.

This package only *reads* results and ledgers; it computes nothing from private data.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from dpcg.errors import DpcgError, MissingDependencyError

__all__ = ["ResultFileError", "require_matplotlib"]


class ResultFileError(DpcgError, ValueError):
    """A ``result.json`` is missing, unreadable or not a ``dpcg discover`` result."""


def require_matplotlib() -> ModuleType:
    """Import matplotlib with the non-interactive Agg backend, or say what to install."""
    try:
        mpl = importlib.import_module("matplotlib")
    except ImportError:
        raise MissingDependencyError(
            "drawing needs the optional package 'matplotlib'; install it with "
            "`pip install 'dpcg[plot]'` (or `pip install matplotlib`)"
        ) from None
    return mpl
