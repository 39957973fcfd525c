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
    NoiseRangeError,
    SessionHaltedError,
)
from accounting.filter import PrivacyFilter
from accounting.mechanisms import (
    Exponential,
    Gaussian,
    GroupTopK,
    Laplace,
    ReportNoisyMax,
    SmoothSensitivityMedian,
    SparseVector,
    SparseVectorRun,
    SubsampledSparseVector,
    TopK,
    mechanism_from_params,
)
from accounting.memory import InMemoryRecorder
from accounting.noise import make_generator
from accounting.relations import Relation
from accounting.session import Guarantee, Session

__all__ = [
    "AccountingError",
    "Budget",
    "BudgetExceededError",
    "Cost",
    "Exponential",
    "Gaussian",
    "GroupTopK",
    "Guarantee",
    "InMemoryRecorder",
    "InvalidParameterError",
    "Laplace",
    "LedgerCorruptError",
    "LedgerError",
    "NoiseRangeError",
    "PrivacyFilter",
    "Relation",
    "ReportNoisyMax",
    "Session",
    "SessionHaltedError",
    "SmoothSensitivityMedian",
    "SparseVector",
    "SparseVectorRun",
    "SubsampledSparseVector",
    "TopK",
    "make_generator",
    "mechanism_from_params",
    "split_epsilon",
]
