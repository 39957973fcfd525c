"""Declared schemas and validated, encoded datasets.

See ``docs/data.md`` for the schema JSON format and the loaders' error behaviour.
"""

from dpcg.data.checks import degenerate_columns, refuse_degenerate, require_public_n
from dpcg.data.dataset import (
    MIN_ROWS,
    MISSING_TOKENS,
    DataClippingWarning,
    Dataset,
    code_dtype,
)
from dpcg.data.loaders import load_table, read_csv, read_pandas, read_parquet
from dpcg.data.schema import Categorical, Column, Continuous, MissingPolicy, Ordinal, Schema

__all__ = [
    "MIN_ROWS",
    "MISSING_TOKENS",
    "Categorical",
    "Column",
    "Continuous",
    "DataClippingWarning",
    "Dataset",
    "MissingPolicy",
    "Ordinal",
    "Schema",
    "code_dtype",
    "degenerate_columns",
    "load_table",
    "read_csv",
    "read_pandas",
    "read_parquet",
    "refuse_degenerate",
    "require_public_n",
]
