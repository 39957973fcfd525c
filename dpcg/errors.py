"""Exception hierarchy of the ``dpcg`` package.

Errors on bad input say what was wrong and how to fix it, and are raised before any
privacy budget is spent.
"""

from __future__ import annotations


class DpcgError(Exception):
    """Base class of every error raised by ``dpcg``."""


class SchemaError(DpcgError, ValueError):
    """The schema is malformed (duplicate names, empty categories, bad bounds, ...)."""


class DataValidationError(DpcgError, ValueError):
    """A table does not conform to its declared schema.

    The message names the column and the offending value or row.
    """


class DatasetNotFoundError(DpcgError, KeyError):
    """No bundled dataset / network of that name."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable.
        return str(self.args[0]) if self.args else "dataset not found"


class BifParseError(DpcgError, ValueError):
    """A BIF network file could not be parsed."""


class StatisticInputError(DpcgError, ValueError):
    """A statistic was asked for on variables or data it is not defined for."""


class CITestError(DpcgError, ValueError):
    """A CI test was configured with invalid parameters."""


class AlgorithmError(DpcgError, ValueError):
    """A discovery algorithm was configured with invalid parameters."""


class GraphError(DpcgError, ValueError):
    """A graph was built from inconsistent nodes or edges (unknown node, self-loop, cycle, ...)."""


class MissingDependencyError(DpcgError, ImportError):
    """An optional dependency (pandas, pyarrow) is needed for this call; the message says
    what to install."""
