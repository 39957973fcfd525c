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


#: A stored row as the writer stores it: JSON columns as canonical text, the flag as 0/1.
_rows = st.fixed_dictionaries({
    "seq": st.integers(min_value=1, max_value=2**62),
    "kind": st.text(max_size=10), "dataset_id": st.text(max_size=10),
    "run_id": st.one_of(st.none(), st.text(max_size=10)),
    "mechanism": st.one_of(st.none(), st.text(max_size=10)),
    "params": st.one_of(st.none(), st.dictionaries(st.text(max_size=5), scalars, max_size=3)),
    "sensitivity": st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False)),
    "relation": st.text(max_size=10),
    "cost": st.one_of(st.none(), st.dictionaries(st.text(max_size=5), scalars, max_size=3)),
    "purpose": st.text(max_size=10), "seed_explicit": st.one_of(st.none(), st.booleans()),
    "data": st.dictionaries(st.text(max_size=5), values, max_size=3),
    "timestamp": st.text(max_size=10), "prev_hash": st.text(max_size=10),
})


@settings(max_examples=300, deadline=None)
@given(_rows)
def test_the_admission_fold_hashes_what_verify_hashes(record: dict[str, Any]) -> None:
    """``accounting/ledger/_state.py`` re-hashes stored rows (fast and generic paths);
    both give the canonical JSON of the decoded entry, i.e. the verifier's hash."""
    from accounting.ledger._state import entry_text, entry_text_generic

    row = (*(
        canonical_json(record[k]) if k in ("params", "cost", "data") and record[k] is not None
        else int(record[k]) if k == "seed_explicit" and record[k] is not None
        else record[k] for k in ENTRY_FIELDS), "hash")
    assert entry_text(row) == entry_text_generic(row) == canonical_json(record)
