"""Benchmark report writer: sections, images and the combined page."""

from __future__ import annotations

from pathlib import Path

import pytest

from dpcg.bench.report import INTRO, write_section
from dpcg.errors import DpcgError


def test_sections_in_suite_order_and_image_links_rewritten(tmp_path: Path) -> None:
    write_section("private", "## Private\n\n![x](img/p.png)\n", {"p.png": b"\x89PNG"},
                  docs_dir=tmp_path)
    out = write_section("pc", "## PC\n\ntext\n", docs_dir=tmp_path)
    text = out.read_text()
    assert text.startswith(INTRO)
    assert text.index("## PC") < text.index("## Private")
    assert "](benchmarks/img/p.png)" in text
    assert (tmp_path / "benchmarks" / "img" / "p.png").read_bytes() == b"\x89PNG"
    assert (tmp_path / "benchmarks" / "private.md").read_text() == (
        "## Private\n\n![x](img/p.png)\n")
    # rewriting a section replaces it
    write_section("pc", "## PC v2\n", docs_dir=tmp_path)
    text = out.read_text()
    assert "## PC v2" in text
    assert "text" not in text.split("## PC v2")[1].split("## Private")[0]


def test_rejects_bad_names(tmp_path: Path) -> None:
    with pytest.raises(DpcgError):
        write_section("../x", "", docs_dir=tmp_path)
    with pytest.raises(DpcgError):
        write_section("pc", "", {"../a.png": b""}, docs_dir=tmp_path)
