"""torch_threads keeps torch's thread count through third-party code that changes it behind torch's back."""

import subprocess
import sys

import pytest

from scsparse._threads import torch_threads

# numba raises the OpenMP runtime it shares with torch when its thread pool starts, so the check needs an
# interpreter where no numba-parallel code has run yet
_FRESH = """
import numpy as np, scipy.sparse as sp, torch
torch.set_num_threads(1)
import anndata as ad, numba, scanpy as sc
from scsparse._threads import torch_threads
adata = ad.AnnData(sp.random(300, 50, density=0.3, format="csr", dtype=np.float32, random_state=0))
with torch_threads(1):
    sc.pp.normalize_total(adata, target_sum=1e4)  # starts numba's pool on its OpenMP layer
    sc.pp.log1p(adata)
    inside = torch.get_num_threads()
print(numba.config.NUMBA_NUM_THREADS, inside, torch.get_num_threads())
"""


def test_scanpy_preprocessing_inside_the_block_keeps_one_torch_thread():
    done = subprocess.run([sys.executable, "-c", _FRESH], capture_output=True, text=True, timeout=300, check=True)
    numba_threads, inside, after = map(int, done.stdout.split()[-3:])
    if numba_threads < 2:
        pytest.skip("numba has one thread on this machine: nothing could raise torch's count")
    assert inside == 1
    assert after == 1  # the count torch had on entry


def test_none_leaves_the_setting_and_bad_counts_are_refused():
    import torch

    before = torch.get_num_threads()
    with torch_threads(None):
        assert torch.get_num_threads() == before
    with pytest.raises(ValueError, match="positive integer"):
        with torch_threads(0):
            pass
