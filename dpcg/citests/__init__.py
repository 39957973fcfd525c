"""Conditional-independence tests.

* :mod:`dpcg.citests.base`: :class:`CIResult` and the :class:`CITest` protocol.
* :mod:`dpcg.citests.nonprivate`: exact (non-private) tests on discrete and continuous
  data: G^2, chi^2, conditional Kendall, conditional Spearman, Fisher-z.

Private tests live in their own modules and release statistics only through
``accounting`` primitives.
"""

from __future__ import annotations

from dpcg.citests.base import CIResult, CITest

__all__ = ["CIResult", "CITest"]
