"""Privacy primitives, costs, the adaptive filter and the durable ledger.

This is the only package that draws privacy noise. See ``docs/privacy/``.
"""

from accounting.costs import Budget, Cost, split_epsilon
from accounting.errors import (
    AccountingError,
    BudgetExceededError,
    InvalidParameterError,
    LedgerCorruptError,
    LedgerError,
    SessionHaltedError,
)
from accounting.relations import Relation

__all__ = [
    "AccountingError",
    "Budget",
    "BudgetExceededError",
    "Cost",
    "InvalidParameterError",
    "LedgerCorruptError",
    "LedgerError",
    "Relation",
    "SessionHaltedError",
    "split_epsilon",
]
