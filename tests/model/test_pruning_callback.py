import pytest
import torch

from scsparse.model import SparseVAE
from scsparse.train import SpikePruning


def test_spike_pruning_prunes_once_and_keeps_pruned_entries_at_zero(counts_adata):
    SparseVAE.setup_anndata(counts_adata, layer="counts")
    model = SparseVAE(counts_adata, n_latent=4, n_hidden=8, seed=0)
    cb = SpikePruning(start_epoch=2)
    model.train(max_epochs=4, batch_size=32, callbacks=[cb], enable_progress_bar=False, logger=False)
    dec = model.module.decoder
    assert len(cb.n_pruned) == 1 and cb.n_pruned[0] > 0  # once, at the end of epoch 2
    assert dec.is_pruned
    assert torch.all(dec.W[~dec.prune_mask] == 0)  # Adam's momentum did not move them afterwards
    loadings = model.get_loadings().to_numpy()
    assert (loadings[~dec.prune_mask.cpu().numpy()] == 0).all()
    with pytest.raises(ValueError, match="start_epoch"):
        SpikePruning(start_epoch=-1)
    with pytest.raises(ValueError, match="pip_threshold"):
        SpikePruning(start_epoch=1, pip_threshold=1.0)
