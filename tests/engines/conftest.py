"""Engine suites need the optional extras; skipped cleanly without them."""

from __future__ import annotations

import pytest

pytest.importorskip("pyarrow")
