"""Shared fixtures: small samples of bundled networks (drawn once per session)."""

from __future__ import annotations

from typing import Any

import pytest

from dpcg.datasets import load_network


@pytest.fixture(scope="session")
def asia() -> Any:
    return load_network("asia").sample(4000, 7)


@pytest.fixture(scope="session")
def survey() -> Any:
    return load_network("survey").sample(4000, 3)
