"""Training from a backed AnnData (counts in ``.X`` on disk) and input checks that stream over row blocks."""

from __future__ import annotations

import anndata as ad
import numpy as np
import pytest
import scipy.sparse as sp

from scsparse import _matrix
from scsparse.model import InvalidInputError, MultiStudySparseVAE, SparseVAE, _validation

SMALL = {"n_latent": 4, "n_hidden": 16}
MULTI = {"n_latent_shared": 2, "n_latent_specific": 1, "n_hidden": 16}


def _counts(n_obs: int = 150, n_vars: int = 25, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n_obs, 3))
    counts = rng.poisson(np.exp(0.8 + 0.7 * z[:, np.arange(n_vars) % 3])).astype(np.float32)
    counts[:, counts.sum(0) == 0] = 1.0
    counts[counts.sum(1) == 0, 0] = 1.0
    return counts


def _write(path, counts, fmt: str = "csr") -> str:
    adata = ad.AnnData(sp.csr_matrix(counts) if fmt == "csr" else sp.csc_matrix(counts))
    adata.obs_names = [f"cell{i}" for i in range(counts.shape[0])]
    adata.var_names = [f"gene{j}" for j in range(counts.shape[1])]
    adata.obs["study"] = np.where(np.arange(counts.shape[0]) % 2 == 0, "a", "b")
    adata.write_h5ad(path)
    return str(path)


def _fit(adata, model_cls=SparseVAE, **setup):
    model_cls.setup_anndata(adata, **setup)
    kwargs = MULTI if model_cls is MultiStudySparseVAE else SMALL
    model = model_cls(adata, seed=1, **kwargs)
    model.train(max_epochs=2, batch_size=32, enable_progress_bar=False)
    return model


def test_backed_x_trains_like_in_memory(tmp_path):
    counts = _counts()
    path = _write(tmp_path / "counts.h5ad", counts)
    backed = ad.read_h5ad(path, backed="r")
    assert backed.isbacked and not isinstance(backed.X, sp.spmatrix | np.ndarray)
    model = _fit(backed)
    z_backed = model.get_latent_representation()
    assert z_backed.shape == (150, 4) and np.isfinite(z_backed).all()
    in_memory = ad.read_h5ad(path)
    SparseVAE.setup_anndata(in_memory)
    # the backed reader hands the model the same values as the in-memory matrix
    np.testing.assert_allclose(z_backed, model.get_latent_representation(in_memory), rtol=1e-6, atol=1e-7)
    # training on disk reaches the ELBO of training in memory (minibatches are read in sorted row order,
    # so dropout and sampling noise land on other cells: close, not bit-identical)
    elbo_backed = float(model.history["elbo_train"].iloc[-1, 0])
    elbo_memory = float(_fit(ad.read_h5ad(path)).history["elbo_train"].iloc[-1, 0])
    assert np.isfinite(elbo_backed) and abs(elbo_backed - elbo_memory) < 0.02 * abs(elbo_memory)

    model.write_results(backed, key_added="sv")
    assert backed.obsm["X_sv"].shape == (150, 4)
    assert backed.varm["sv_W"].shape == (25, 4)
    assert backed.uns["sv"]["data_hash"] == _fit(ad.read_h5ad(path))._provenance()["data_hash"]
    assert backed.isbacked  # the counts stayed on disk


def test_backed_multistudy_trains(tmp_path):
    backed = ad.read_h5ad(_write(tmp_path / "counts.h5ad", _counts()), backed="r")
    model = _fit(backed, MultiStudySparseVAE, study_key="study")
    model.write_results(backed, key_added="ms")
    assert backed.obsm["X_ms_shared"].shape == (150, 2)


def test_checks_stream_over_blocks_and_name_the_right_cell(tmp_path, monkeypatch):
    counts = _counts(n_obs=120)
    counts[97] = 0.0  # an empty cell in the last of several blocks
    backed = ad.read_h5ad(_write(tmp_path / "empty_cell.h5ad", counts), backed="r")
    monkeypatch.setattr(_matrix, "_CHUNK_ELEMENTS", 25 * 10)  # 10-row blocks
    assert [b.shape[0] for b in _matrix.iter_row_chunks(backed.X)] == [10] * 12
    scan = _validation.check_anndata(backed, None)
    assert scan.zero_cells.tolist() == [97]
    with pytest.raises(InvalidInputError, match="cell97"):
        _validation.check_counts(scan, backed.obs_names, "nb")

    fractional = _counts(n_obs=60)
    fractional[55, 3] = 2.5
    backed = ad.read_h5ad(_write(tmp_path / "fractional.h5ad", fractional), backed="r")
    SparseVAE.setup_anndata(backed)
    with pytest.raises(InvalidInputError, match="non-integer"):
        SparseVAE(backed, **SMALL)


def test_chunk_rows_bound_memory():
    assert _matrix.chunk_rows_for(2_000) * 2_000 <= 2**24
    assert _matrix.chunk_rows_for(20_000) * 20_000 <= 2**24
    assert _matrix.chunk_rows_for(10) == 10_000
    assert _matrix.chunk_rows_for(10, chunk_rows=7) == 7
    with pytest.raises(ValueError, match="positive"):
        _matrix.chunk_rows_for(10, chunk_rows=0)


def test_backed_csc_rejected_and_backed_layer_warned(tmp_path):
    csc = ad.read_h5ad(_write(tmp_path / "csc.h5ad", _counts(), fmt="csc"), backed="r")
    with pytest.raises(InvalidInputError, match="CSC"):
        SparseVAE.setup_anndata(csc)

    path = tmp_path / "layer.h5ad"
    adata = ad.read_h5ad(_write(tmp_path / "tmp.h5ad", _counts()))
    adata.layers["counts"] = adata.X.copy()
    adata.write_h5ad(path)
    with pytest.warns(UserWarning, match="only adata.X stays on disk"):
        SparseVAE.setup_anndata(ad.read_h5ad(path, backed="r"), layer="counts")


def test_anncollection_adapter_trains_with_a_layer(tmp_path):
    from anndata.experimental import AnnCollection
    from scvi.dataloaders import CollectionAdapter

    parts = []
    for i, n_obs in enumerate((70, 90)):
        part = ad.read_h5ad(_write(tmp_path / f"part{i}.h5ad", _counts(n_obs=n_obs, seed=i)))
        part.layers["counts"] = part.X.copy()
        parts.append(part)
    adapter = CollectionAdapter(AnnCollection(parts, join_vars="inner", label="dataset", index_unique="_"))
    model = _fit(adapter, layer="counts")
    z = model.get_latent_representation()
    assert z.shape == (160, 4) and np.isfinite(z).all()
    assert model.get_loadings().shape == (25, 4)
