"""Metamorphic checks of the accounting backend all hold."""

from __future__ import annotations

import pytest

from audits.accountant import ALL_CHECKS


@pytest.mark.parametrize("check", ALL_CHECKS, ids=lambda c: c.__name__)
def test_metamorphic(check: object) -> None:
    assert callable(check)
    r = check()
    assert r.passed, r.detail
