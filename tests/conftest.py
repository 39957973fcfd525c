"""Suite-wide isolation: no test ever writes the real per-user ledger.

A private CLI run without ``--ledger`` records in the per-user default ledger
(``accounting.ledger.default_ledger_path``: ``$DPCG_LEDGER``, else the XDG data
directory). Every test gets ``$DPCG_LEDGER`` pointing into its own temporary directory
(inherited by the CLI subprocesses a test starts); a test about the default location
itself overrides or removes it with ``monkeypatch``.
"""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _isolated_default_ledger(tmp_path_factory: pytest.TempPathFactory,
                             monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path_factory.mktemp("default-ledger") / "ledger.sqlite"
    monkeypatch.setenv("DPCG_LEDGER", str(path))
    return path
