import warnings

import pytest

from scsparse.model import SparseVAE
from scsparse.train import FitNotSettledWarning, SettledStopping


def test_training_stops_once_the_fit_settled_and_history_says_why(counts_factory):
    adata = counts_factory(n_obs=600, n_vars=60, n_latent=3, seed=1)
    SparseVAE.setup_anndata(adata, layer="counts")
    model = SparseVAE(adata, n_latent=6, n_hidden=16, seed=0, decoder_kwargs={"w_init": 1.0})  # all in the slab
    with warnings.catch_warnings():
        warnings.simplefilter("error", FitNotSettledWarning)
        model.train(max_epochs=300, kl_warmup_fraction=0.05, stop_when_settled=SettledStopping(window=10))
    n_epochs = len(model.history["elbo_train"])
    assert n_epochs < 300
    assert model.history["stopping"]["stopping"].tolist() == ["settled"]
    assert model.history["stopping"].index.tolist() == [n_epochs - 1]
    assert len(model.history["elbo_validation"]) == n_epochs  # the validation ELBO of every epoch
    changes = model.history["mask_changes"]["mask_changes"].astype(float)
    assert len(changes) == n_epochs and changes.iloc[0] > 0  # entries left the slab in the first epoch
    active = model.history["n_active_factors"]["n_active_factors"].astype(float)
    assert active.iloc[-11:].nunique() == 1  # the same active factors over the window
    assert model.train_kwargs_["stop_when_settled"].startswith("SettledStopping(window=10")
    model.write_results(adata, key_added="svae")
    assert adata.uns["svae"]["stopping"] == "settled"


def test_a_short_run_warns_that_the_fit_has_not_settled(counts_adata):
    SparseVAE.setup_anndata(counts_adata, layer="counts")
    model = SparseVAE(counts_adata, n_latent=4, n_hidden=8, seed=0, decoder_kwargs={"w_init": 1.0})
    with pytest.warns(FitNotSettledWarning, match=r"Training stopped after 4 epochs \(max_epochs\)") as record:
        model.train(max_epochs=4)
    assert record[0].filename == __file__  # the warning points at the caller's train()
    assert model.history["stopping"]["stopping"].tolist() == ["max_epochs"]
    with pytest.warns(FitNotSettledWarning):
        model.train(max_epochs=2)  # a second call continues the epoch count
    assert model.history["stopping"].index.tolist() == [3, 5]
    off = SparseVAE(counts_adata, n_latent=4, n_hidden=8, seed=0, decoder_kwargs={"w_init": 1.0})
    with warnings.catch_warnings():
        warnings.simplefilter("error", FitNotSettledWarning)
        off.train(max_epochs=4, stop_when_settled=False)
    assert "stopping" not in off.history
