"""Helpers for the statistics tests."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray


def make_codes(
    seed: int, n: int, cards: list[int], *, dependent: bool = True
) -> NDArray[np.uint8]:
    """Random (p, n) uint8 codes; with ``dependent`` column 1 depends on 0 and 2."""
    rng = np.random.default_rng(seed)
    codes = np.stack([rng.integers(0, c, n) for c in cards]).astype(np.uint8)
    if dependent and len(cards) > 2:
        noise = rng.integers(0, 2, n)
        codes[1] = ((codes[0].astype(int) + codes[2] + noise) % cards[1]).astype(np.uint8)
    return codes
