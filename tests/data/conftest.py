"""Fixtures for the data tests: the offline copy of the registry files lies in ../shared/data (repo root)."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"


def _require_shared() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"offline data copy not found at {SHARED_DATA} (expected ../shared/data beside the repo)")
    return SHARED_DATA


@pytest.fixture
def shared_data(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point SCSPARSE_DATA_DIR at the offline data copy (skip if absent); downloads disabled."""
    root = _require_shared()
    monkeypatch.setenv("SCSPARSE_DATA_DIR", str(root))
    monkeypatch.setenv("SCSPARSE_OFFLINE", "1")
    return root


@pytest.fixture(scope="module")
def shared_data_module() -> Path:
    """Module-scoped variant of :func:`shared_data` for fixtures that load a dataset once per module."""
    root = _require_shared()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SCSPARSE_DATA_DIR", str(root))
        mp.setenv("SCSPARSE_OFFLINE", "1")
        yield root
