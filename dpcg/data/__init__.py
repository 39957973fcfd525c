"""Declared schemas and validated, encoded datasets.

See ``docs/data.md`` for the schema JSON format and the loaders' error behaviour.
"""

from dpcg.data.dataset import MISSING_TOKENS, DataClippingWarning, Dataset, code_dtype
from dpcg.data.loaders import load_table, read_csv, read_pandas, read_parquet
from dpcg.data.schema import Categorical, Column, Continuous, Ordinal, Schema

__all__ = [
    "MISSING_TOKENS",
    "Categorical",
    "Column",
    "Continuous",
    "DataClippingWarning",
    "Dataset",
    "Ordinal",
    "Schema",
    "code_dtype",
    "load_table",
    "read_csv",
    "read_pandas",
    "read_parquet",
]
