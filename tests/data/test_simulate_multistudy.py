import numpy as np
import pytest
import scipy.sparse as sp

from scsparse.data._simulate_multistudy import NONLINEARITIES, MultiStudyData, simulate_multistudy


@pytest.fixture(scope="module")
def data() -> MultiStudyData:
    return simulate_multistudy(n_cells_per_study=200, seed=3)


def test_shapes_and_types(data):
    assert isinstance(data, MultiStudyData)
    assert data.counts.shape == (600, 200) and data.counts.dtype == np.float32
    np.testing.assert_array_equal(data.counts, np.round(data.counts))
    assert (data.counts >= 0).all()
    assert data.studies == ("study0", "study1", "study2")
    assert data.Z_shared.shape == (600, 5)
    assert data.W_shared_support.shape == (200, 5) and data.W_shared_support.dtype == bool
    for s in data.studies:
        assert data.Z_specific[s].shape == (200, 2)
        assert data.W_specific_support[s].shape == (200, 2) and data.W_specific_support[s].dtype == bool
        assert (data.study == s).sum() == 200
    assert data.W_support.shape == (200, 11)
    assert data.programme_names[:6] == ["shared_0", "shared_1", "shared_2", "shared_3", "shared_4", "study0_0"]
    assert np.isfinite(data.log_rate).all()
    with pytest.raises(AttributeError):
        data.seed = 4  # frozen


def test_supports_programme_sizes_and_anchors(data):
    support = data.W_support
    np.testing.assert_array_equal(support.sum(0), 20)  # every programme drives genes_per_programme genes
    assert support.sum(1).max() == 2  # a few genes are shared by two programmes ...
    assert (support.sum(1) == 2).sum() == 10 * 2  # ... `overlap` = 2 between each pair of neighbours
    anchors = data.anchor_genes()
    assert set(anchors) == set(data.programme_names)
    assert all(len(a) >= 2 for a in anchors.values())
    # supports agree with the amplitudes
    np.testing.assert_array_equal(data.W_shared_support, data.W_shared != 0)
    for s in data.studies:
        np.testing.assert_array_equal(data.W_specific_support[s], data.W_specific[s] != 0)


def test_specific_programmes_only_active_in_their_study(data):
    # Recompute the log-rates from the truth: the specific programmes enter only the own study's cells.
    lib = np.log(data.library)[:, None] + data.base[None, :]
    shared = np.zeros_like(data.log_rate)
    for k in range(data.n_shared):
        h = NONLINEARITIES[data.nonlinearity[k]](data.Z_shared[:, k])
        shared += h[:, None] * data.W_shared[:, k][None, :]
    for m, s in enumerate(data.studies):
        rows = data.study_indices(s)
        expected = lib[rows] + shared[rows]
        for k in range(data.n_specific[s]):
            p = data.n_shared + m * 2 + k
            h = NONLINEARITIES[data.nonlinearity[p]](data.Z_specific[s][:, k])
            expected += h[:, None] * data.W_specific[s][:, k][None, :]
        np.testing.assert_allclose(data.log_rate[rows], expected, rtol=1e-10, atol=1e-10)
        # genes driven only by another study's specific programmes sit at baseline + shared effects here
        others = [t for t in data.studies if t != s]
        only_other = np.zeros(data.n_genes, dtype=bool)
        for t in others:
            only_other |= data.W_specific_support[t].any(1)
        only_other &= ~data.W_specific_support[s].any(1) & ~data.W_shared_support.any(1)
        assert only_other.sum() > 0
        np.testing.assert_allclose(data.log_rate[np.ix_(rows, only_other)], lib[np.ix_(rows, only_other)])


def test_nonlinearities_vanish_at_zero():
    for h in NONLINEARITIES.values():
        assert h(np.zeros(1))[0] == pytest.approx(0.0, abs=1e-12)
    z = np.linspace(-3, 3, 7)
    assert not np.allclose(np.diff(NONLINEARITIES["softplus"](z), 2), 0)  # nonlinear


def test_programmes_drive_their_genes(data):
    # anchor genes of a shared programme correlate with its factor through the counts
    rows = np.arange(data.n_cells)
    norm = np.log1p(data.counts / data.counts.sum(1, keepdims=True) * 1e4)
    for k, name in enumerate(data.programme_names[: data.n_shared]):
        genes = data.anchor_genes()[name]
        c = [abs(np.corrcoef(data.Z_shared[rows, k], norm[rows, j])[0, 1]) for j in genes]
        assert np.median(c) > 0.3


def test_deterministic_per_seed():
    a = simulate_multistudy(n_cells_per_study=50, seed=7)
    b = simulate_multistudy(n_cells_per_study=50, seed=7)
    c = simulate_multistudy(n_cells_per_study=50, seed=8)
    np.testing.assert_array_equal(a.counts, b.counts)
    np.testing.assert_array_equal(a.Z_shared, b.Z_shared)
    np.testing.assert_array_equal(a.W_shared, b.W_shared)
    assert not np.array_equal(a.counts, c.counts)


def test_a_background_of_small_effects_changes_only_the_amplitudes():
    plain = simulate_multistudy(n_cells_per_study=50, seed=7)
    dense = simulate_multistudy(n_cells_per_study=50, seed=7, background_sd=0.05)
    np.testing.assert_array_equal(dense.Z_shared, plain.Z_shared)
    np.testing.assert_array_equal(dense.library, plain.library)
    np.testing.assert_array_equal(dense.W_support, plain.W_support)  # the supports stay the planted genes
    assert (dense.W_shared != 0).all() and not (plain.W_shared != 0).all()
    extra = (dense.W_shared - plain.W_shared)[~plain.W_shared_support]
    assert 0.03 < extra.std() < 0.07 and abs(extra.mean()) < 0.02
    assert dense.settings["background_sd"] == 0.05 and plain.settings["background_sd"] == 0.0


def test_poisson_and_options():
    d = simulate_multistudy(
        n_studies=2,
        n_cells_per_study={"study0": 30, "study1": 40},
        n_genes=60,
        n_shared=2,
        n_specific=1,
        genes_per_programme=10,
        overlap=1,
        likelihood="poisson",
        seed=0,
    )
    assert d.counts.shape == (70, 60)
    assert d.W_support.shape == (60, 4)
    assert (d.W_support.sum(1) == 0).sum() == 60 - (4 * 9 + 1)  # genes driven by no programme
    assert d.likelihood == "poisson"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"n_studies": 1},
        {"n_genes": 100},  # 11 programmes of 20 genes do not fit
        {"overlap": 10},  # fewer than 2 anchors
        {"likelihood": "zinb"},
        {"theta": 0.0},
        {"background_sd": -0.1},
        {"n_cells_per_study": {"study0": 10}},
        {"n_shared": 0, "n_specific": 0},
    ],
)
def test_invalid_arguments(kwargs):
    with pytest.raises(ValueError):
        simulate_multistudy(**kwargs)


def test_to_anndata(tmp_path):
    d = simulate_multistudy(n_cells_per_study=40, seed=1)
    adata = d.to_anndata()
    assert adata.shape == (120, 200)
    assert sp.issparse(adata.layers["counts"])
    np.testing.assert_array_equal(adata.layers["counts"].toarray(), d.counts)
    np.testing.assert_array_equal(adata.X.toarray(), d.counts)
    assert adata.X is not adata.layers["counts"]
    assert list(adata.obs["study"].cat.categories) == list(d.studies)
    assert adata.obsm["Z_shared"].shape == (120, 5)
    spec = adata.obsm["Z_specific"]
    assert spec.shape == (120, 6)
    rows0 = d.study_indices("study0")
    np.testing.assert_array_equal(spec[rows0, :2], d.Z_specific["study0"])
    assert (spec[rows0, 2:] == 0).all()
    np.testing.assert_array_equal(adata.varm["W_shared_support"], d.W_shared_support)
    np.testing.assert_array_equal(adata.varm["W_specific_support_study2"], d.W_specific_support["study2"])
    assert adata.uns["simulation"]["seed"] == 1
    path = tmp_path / "sim.h5ad"
    adata.write_h5ad(path)
    import anndata as ad

    back = ad.read_h5ad(path)
    np.testing.assert_array_equal(back.varm["W_shared_support"], d.W_shared_support)
    assert list(back.uns["simulation"]["programme_names"]) == d.programme_names
