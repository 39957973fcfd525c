"""Checks of a loaded :class:`~dpcg.data.Dataset` that a run makes before it starts.

Two kinds, with different privacy status (docs/privacy/missing-values.md,
docs/privacy/threat-model.md):

* :func:`require_public_n` looks at **public** facts only (how the dataset was loaded:
  whether a ``drop_rows`` missing policy deleted rows). A private run calls it before
  its session opens; refusing releases nothing.
* :func:`degenerate_columns` / :func:`refuse_degenerate` look at the **data** (is a
  column constant? is a discrete column an identifier, one category per row? is a
  continuous column a row number?). Whether a column is constant changes when one row
  changes, so refusing on it is an uncharged release of one bit about the rows: only
  **non-private** runs call them (nothing is protected there). A private run never
  refuses on them: its statistics are defined on constant columns (a constant column is
  independent of everything, and the released decisions say so up to the noise).
"""

from __future__ import annotations

import numpy as np

from dpcg.data.dataset import Dataset
from dpcg.data.schema import Continuous
from dpcg.errors import DataValidationError

__all__ = ["IDENTIFIER_MIN_ROWS", "degenerate_columns", "refuse_degenerate",
           "require_public_n"]

#: A discrete column is called an identifier (one category per row) from this many rows
#: on; with fewer rows, all-distinct values are ordinary.
IDENTIFIER_MIN_ROWS = 10


def require_public_n(dataset: Dataset, *, where: str = "a private run") -> None:
    """Raise unless ``dataset.n`` is public (no ``drop_rows`` policy deleted rows).

    Decided from how the dataset was loaded, never from its values. The message names
    the rule only (never how many rows were deleted).
    """
    if not isinstance(dataset, Dataset):
        raise DataValidationError(f"expected a dpcg.data.Dataset, got {type(dataset).__name__}")
    if not dataset.n_public:
        raise DataValidationError(
            f"{where} needs a public n, but this dataset was loaded with the missing policy "
            "'drop_rows' (listwise deletion: the number of rows left depends on the data; "
            "rule: n is public, docs/privacy/missing-values.md); declare 'impute' (with an "
            "'indicator') or 'category' for private runs")


def degenerate_columns(dataset: Dataset) -> list[tuple[str, str]]:
    """``(column, rule)`` for every column that cannot carry a dependence: ``constant``
    (one value in every row), ``identifier`` (a discrete column with a different category
    in every row, from :data:`IDENTIFIER_MIN_ROWS` rows), ``row_number`` (a continuous
    column holding exactly the consecutive integers ``k .. k + n - 1``).

    DATA-DEPENDENT: for non-private runs only (module docstring). One vectorised pass per
    column.
    """
    out: list[tuple[str, str]] = []
    n = dataset.n
    for j, col in enumerate(dataset.schema):
        values = dataset.column(j)
        lo = values.min()
        hi = values.max()
        if lo == hi:
            out.append((col.name, "constant"))
            continue
        if isinstance(col, Continuous):
            if float(hi) - float(lo) == n - 1 and bool(np.all(values == np.floor(values))) \
                    and np.unique(values).size == n:
                out.append((col.name, "row_number"))
        elif n >= IDENTIFIER_MIN_ROWS and np.unique(values).size == n:
            out.append((col.name, "identifier"))
    return out


_RULES = {
    "constant": "the column has one value in every row (rule: a column must vary to be "
                "tested; drop it from the table and the schema)",
    "identifier": "every row has its own category (rule: an identifier carries no "
                  "dependence; drop it from the table and the schema)",
    "row_number": "the column holds the row numbers (rule: an identifier carries no "
                  "dependence; drop it from the table and the schema)",
}


def refuse_degenerate(dataset: Dataset) -> None:
    """Raise :class:`~dpcg.errors.DataValidationError` naming every degenerate column and
    its rule (:func:`degenerate_columns`). NON-PRIVATE runs only: the refusal is computed
    from the data and charged to no budget."""
    found = degenerate_columns(dataset)
    if found:
        raise DataValidationError(
            "degenerate column(s) (checked for a non-private run only): "
            + "; ".join(f"column {name!r}: {_RULES[rule]}" for name, rule in found))
