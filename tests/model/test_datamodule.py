"""Training from a registry and a datamodule, as scvi-tools documents for its custom dataloaders."""

from __future__ import annotations

import lightning.pytorch as pl
import numpy as np
import pytest
from scvi.dataloaders import AnnDataLoader, DataSplitter

from scsparse.model import InvalidInputError, SparseVAE

SMALL = {"n_latent": 3, "n_hidden": 16, "seed": 0}


class InMemoryDataModule(pl.LightningDataModule):
    """Every cell of a registered AnnData as training data, with the attributes scvi-tools' data modules have."""

    def __init__(self, adata_manager, batch_size: int = 64, with_n_obs: bool = True) -> None:
        super().__init__()
        self.adata_manager = adata_manager
        self.registry = adata_manager.registry
        self.batch_size = batch_size
        if with_n_obs:
            self.n_obs = adata_manager.adata.n_obs

    def train_dataloader(self):
        return AnnDataLoader(self.adata_manager, batch_size=self.batch_size, shuffle=True)

    def val_dataloader(self):
        return []


def test_a_datamodule_gives_the_fit_of_the_anndata(counts_factory):
    adata = counts_factory(n_obs=150)
    SparseVAE.setup_anndata(adata, layer="counts")
    reference = SparseVAE(adata, **SMALL)
    reference.train(max_epochs=5, batch_size=64, orient=False, enable_progress_bar=False)

    datamodule = DataSplitter(reference.adata_manager, train_size=0.9, batch_size=64)
    model = SparseVAE(registry=reference.adata_manager.registry, **SMALL)
    assert model.adata is None and model.data_checks_.startswith("not run")
    model.train(max_epochs=5, datamodule=datamodule, enable_progress_bar=False)
    with pytest.raises(InvalidInputError, match="pass the cells to write into"):
        model.write_results()
    np.testing.assert_array_equal(model.get_loadings().to_numpy(), reference.get_loadings().to_numpy())
    np.testing.assert_array_equal(
        model.get_inclusion_probabilities().to_numpy(), reference.get_inclusion_probabilities().to_numpy()
    )
    np.testing.assert_array_equal(model.get_factor_weights().to_numpy(), reference.get_factor_weights().to_numpy())
    np.testing.assert_array_equal(model.get_latent_representation(adata), reference.get_latent_representation())
    assert model.train_kwargs_["datamodule"] == "DataSplitter" and not model.train_kwargs_["orient"]
    target = adata.copy()
    model.write_results(target, key_added="dm")
    assert target.uns["dm"]["data_hash"] == "" and target.uns["dm"]["data_checks"].startswith("not run")


def test_a_datamodule_without_n_train_scales_the_prior_by_its_cells(counts_factory):
    adata = counts_factory(n_obs=120)
    SparseVAE.setup_anndata(adata, layer="counts")
    manager = SparseVAE(adata, **SMALL).adata_manager
    model = SparseVAE(registry=manager.registry, **SMALL)
    model.train(max_epochs=2, datamodule=InMemoryDataModule(manager), enable_progress_bar=False)
    assert model.trainer.lightning_module.n_obs_training == 120
    assert model.trainer.lightning_module.loss_kwargs["n_obs"] == 120
    with pytest.raises(InvalidInputError, match="neither n_train nor n_obs"):
        model.train(max_epochs=1, datamodule=InMemoryDataModule(manager, with_n_obs=False))
