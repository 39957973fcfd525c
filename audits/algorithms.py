"""End-to-end audits of whole private algorithms (filled in below)."""

from __future__ import annotations

from typing import Any


def items(notes: list[str]) -> list[Any]:
    notes.append("algorithm-level audits of the private PC variants: not yet hooked in")
    return []
