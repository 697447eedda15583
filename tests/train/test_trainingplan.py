import numpy as np

from scsparse.model import SparseVAE
from scsparse.train import SparseVAETrainingPlan


def _fit(counts_factory, monkeypatch, **plan_kwargs):
    """Three epochs of four training steps; counts how often the ELBO metric objects are logged."""
    logged = []
    log_dict = SparseVAETrainingPlan.log_dict

    def counting(self, dictionary, *args, **kwargs):
        logged.extend(name for name in dictionary if name.startswith("elbo_"))
        return log_dict(self, dictionary, *args, **kwargs)

    monkeypatch.setattr(SparseVAETrainingPlan, "log_dict", counting)
    adata = counts_factory(n_obs=160, n_vars=20)
    SparseVAE.setup_anndata(adata, layer="counts")
    model = SparseVAE(adata, n_latent=3, n_hidden=8, seed=0)
    model.train(
        max_epochs=3,
        batch_size=36,
        train_size=0.9,
        stop_when_settled=False,
        check_val_every_n_epoch=1,
        plan_kwargs=plan_kwargs,
        enable_progress_bar=False,
    )
    return model, logged


def test_the_elbo_is_logged_once_an_epoch_and_adds_up_to_its_terms(counts_factory, monkeypatch):
    model, logged = _fit(counts_factory, monkeypatch)
    assert sorted(logged) == ["elbo_train"] * 3 + ["elbo_validation"] * 3  # not once a step
    history = {key: model.history[key].iloc[:, 0].to_numpy(dtype=float) for key in model.history}
    n_train = 144  # 90% of the 160 cells
    elbo = history["reconstruction_loss_train"] + history["kl_local_train"] + history["kl_global_train"] / n_train
    np.testing.assert_allclose(history["elbo_train"], elbo, rtol=1e-5)
    assert len(history["elbo_validation"]) == 3 and np.isfinite(history["elbo_validation"]).all()


def test_on_step_logging_keeps_scvi_tools_per_step_metrics(counts_factory, monkeypatch):
    _, logged = _fit(counts_factory, monkeypatch, on_step=True)
    assert logged.count("elbo_train") == 3 * 4  # every training step, as scvi-tools logs them
