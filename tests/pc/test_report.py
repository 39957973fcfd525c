"""Benchmark report writer: sections, images and the combined page."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.report import INTRO, write_section
from dpcg.errors import DpcgError


def test_index_lists_the_pages_in_suite_order_and_repeats_none(tmp_path: Path) -> None:
    write_section("private", "## Private\n\n![x](img/p.png)\n", {"p.png": b"\x89PNG"},
                  docs_dir=tmp_path)
    out = write_section("pc", "## PC\n\ntext\n", docs_dir=tmp_path)
    text = out.read_text()
    assert text.startswith(INTRO)
    assert text.index("(benchmarks/pc.md)") < text.index("(benchmarks/private.md)")
    assert "| [pc](benchmarks/pc.md) | PC |" in text
    assert "text" not in text.split("| PC |")[1]  # the index copies no page
    assert (tmp_path / "benchmarks" / "img" / "p.png").read_bytes() == b"\x89PNG"
    assert (tmp_path / "benchmarks" / "private.md").read_text() == (
        "## Private\n\n![x](img/p.png)\n")
    # rewriting a page replaces it; the index follows its title
    write_section("pc", "## PC v2\n", docs_dir=tmp_path)
    assert "| [pc](benchmarks/pc.md) | PC v2 |" in out.read_text()
    assert (tmp_path / "benchmarks" / "pc.md").read_text() == "## PC v2\n"


def test_rejects_bad_names(tmp_path: Path) -> None:
    with pytest.raises(DpcgError):
        write_section("../x", "", docs_dir=tmp_path)
    with pytest.raises(DpcgError):
        write_section("pc", "", {"../a.png": b""}, docs_dir=tmp_path)
