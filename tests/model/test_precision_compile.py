"""Mixed precision and torch.compile pass through train() without touching the EM state's precision."""

import numpy as np
import pytest
import torch

import scsparse


def _fit(adata, **train_kwargs):
    scsparse.model.SparseVAE.setup_anndata(adata, layer="counts")
    model = scsparse.model.SparseVAE(adata, n_latent=4, n_hidden=16, seed=0)
    w0 = model.module.decoder.W.detach().clone()
    model.train(max_epochs=3, batch_size=64, enable_progress_bar=False, **train_kwargs)
    return model, w0


def _check_trained(model, w0):
    prior = model.module.prior
    assert prior.p_star.dtype == torch.float32 and prior.eta.dtype == torch.float32
    assert model.module.decoder.W.dtype == torch.float32
    assert torch.isfinite(prior.p_star).all() and torch.isfinite(prior.eta).all()
    assert not torch.equal(model.module.decoder.W.detach(), w0)  # it trained
    # The E-step is consistent with the final W (run after the last optimiser step, in full precision).
    expected = prior.e_step(model.module.decoder.masked_W())
    assert not torch.equal(expected, torch.full_like(expected, 0.5))
    assert np.isfinite([float(v) for v in model.history["elbo_train"].iloc[:, 0]]).all()


def test_bf16_mixed_precision_trains_with_float32_em_state(counts_adata):
    model, w0 = _fit(counts_adata.copy(), precision="bf16-mixed")
    _check_trained(model, w0)


@pytest.mark.slow
def test_compiled_module_trains_like_the_eager_one(counts_adata):
    eager, _ = _fit(counts_adata.copy())
    compiled, w0 = _fit(counts_adata.copy(), plan_kwargs={"compile": True})
    _check_trained(compiled, w0)
    # Compiled kernels draw dropout masks from another RNG stream, so trajectories differ; the fit must not.
    elbo = [float(m.history["elbo_train"].iloc[-1, 0]) for m in (eager, compiled)]
    assert abs(elbo[1] - elbo[0]) < 0.05 * abs(elbo[0])
