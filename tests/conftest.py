"""Shared fixtures: quiet logging, small synthetic AnnData."""

from __future__ import annotations

import logging
import re
import sys
import warnings
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import anndata as ad
import numpy as np
import pytest
import scipy.sparse as sp

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


def _lock_mismatches(*packages: str) -> list[str]:
    """How the installed ``packages`` differ from the repository's lock file for this Python (empty: locked)."""
    lock = REPO / f"requirements-py{sys.version_info.major}.{sys.version_info.minor}.txt"
    if not lock.is_file():
        return [f"no lock file {lock.name}"]
    pins = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)$", lock.read_text(), flags=re.MULTILINE))
    mismatches = []
    for name in packages:
        try:
            installed = version(name)
        except PackageNotFoundError:
            installed = "not installed"
        if pins.get(name) != installed:
            mismatches.append(f"{name} {installed} (locked: {pins.get(name, 'not in the lock')})")
    return mismatches


@pytest.fixture
def lock_mismatches():
    """A function: how the named installed packages differ from the lock for this Python (empty: locked)."""
    return _lock_mismatches


@pytest.fixture(autouse=True, scope="session")
def _quiet():
    import torch

    torch.set_num_threads(1)  # the test models are tiny: one thread is faster and avoids contention
    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    logging.getLogger("lightning").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", message=".*does not have many workers.*")
    warnings.filterwarnings("ignore", message=".*smaller than the logging interval.*")
    try:
        import scvi

        scvi.settings.verbosity = logging.ERROR
    except ImportError:  # pragma: no cover
        pass


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
    """Module-scoped variant of :func:`shared_data` for fixtures that load a data set once per module."""
    root = _require_shared()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SCSPARSE_DATA_DIR", str(root))
        mp.setenv("SCSPARSE_OFFLINE", "1")
        yield root


def make_counts(n_obs: int = 200, n_vars: int = 40, n_latent: int = 3, seed: int = 0) -> ad.AnnData:
    """Counts from a sparse factor model: each gene driven by one of ``n_latent`` programmes."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n_obs, n_latent))
    owner = np.arange(n_vars) % n_latent
    rate = np.exp(1.0 + 0.8 * z[:, owner])
    counts = rng.poisson(rate).astype(np.float32)
    counts[:, counts.sum(0) == 0] = 1.0
    adata = ad.AnnData(sp.csr_matrix(counts))
    adata.obs_names = [f"cell{i}" for i in range(n_obs)]
    adata.var_names = [f"gene{j}" for j in range(n_vars)]
    adata.layers["counts"] = adata.X.copy()
    adata.obs["batch"] = np.where(np.arange(n_obs) % 2 == 0, "a", "b")
    adata.var["owner"] = owner
    return adata


@pytest.fixture
def counts_adata() -> ad.AnnData:
    return make_counts()


@pytest.fixture(scope="session")
def counts_factory():
    """The :func:`make_counts` factory, for tests that need several or differently sized AnnData."""
    return make_counts
