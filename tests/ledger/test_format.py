"""The writer's fast encoding is byte-for-byte the verifier's canonical JSON."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from accounting.ledger._format import (
    ENTRY_FIELDS,
    canonical_json,
    entry_hash,
    hashed_text,
    scalar_json,
    sha256_hex,
)

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.text(max_size=6), inner, max_size=4)),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(scalars)
def test_scalar_json_is_canonical_json(value: object) -> None:
    assert scalar_json(value) == canonical_json(value)


@settings(max_examples=200, deadline=None)
@given(st.fixed_dictionaries({name: values for name in ENTRY_FIELDS}))
def test_hashed_text_is_the_canonical_json_of_the_entry(record: dict[str, Any]) -> None:
    encoded = {name: scalar_json(v) for name, v in record.items()}
    assert hashed_text(encoded) == canonical_json(record)
    assert sha256_hex(hashed_text(encoded)) == entry_hash(record)


def test_scalar_json_refuses_what_json_refuses() -> None:
    for bad in (math.nan, math.inf, -math.inf):
        try:
            scalar_json(bad)
        except ValueError:
            continue
        raise AssertionError(f"{bad!r} was encoded")
