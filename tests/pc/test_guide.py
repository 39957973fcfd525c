"""The Python example in docs/guide.md runs and gives what it says."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guide.md"


def test_guide_python_example_runs() -> None:
    blocks = re.findall(r"```python\n(.*?)```", GUIDE.read_text(), flags=re.S)
    assert blocks
    namespace: dict[str, object] = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        # the expert-layer example (the dpcg.discover one is run by tests/test_readme.py)
        block = next(b for b in blocks if "pc_stable(" in b)
        exec(compile(block, str(GUIDE), "exec"), namespace)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("CPDAG(nodes=8")
    assert lines[2] in ("directed", "undirected")
    assert str(namespace["text"]).startswith("digraph")
