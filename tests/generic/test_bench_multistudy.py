import math

import numpy as np
import pandas as pd
import pytest

from scsparse.data._simulate_multistudy import simulate_multistudy
from scsparse.generic.benchmarks import BENCHMARKS, run
from scsparse.generic.benchmarks._cell_scores import transfer_accuracy, transfer_predictions
from scsparse.generic.benchmarks._multistudy._run import MULTISTUDY_RESULT_COLUMNS, run_multistudy
from scsparse.generic.benchmarks._multistudy._scoring import EstimatedBlock, MultiStudyFit, score_multistudy
from scsparse.generic.benchmarks._multistudy_real._checks import confusion_table, largest_confusion, marker_labels
from scsparse.generic.benchmarks._multistudy_real._run import REAL_RESULT_COLUMNS, run_multistudy_real
from scsparse.generic.benchmarks._multistudy_real._summary import confusion_section

EXPECTED_COLUMNS = [
    "method",
    "seed",
    "shared_fscore",
    "specific_fscore",
    "factor_corr",
    "n_active_shared",
    "n_active_specific",
    "fit_seconds",
]


def test_registered():
    assert BENCHMARKS["multistudy"] is run_multistudy
    assert BENCHMARKS["multistudy_real"] is run_multistudy_real
    assert list(MULTISTUDY_RESULT_COLUMNS) == EXPECTED_COLUMNS
    assert list(REAL_RESULT_COLUMNS) == ["dataset", "seed", "metric", "value", "target", "met", "fit_seconds"]


def test_quick_run_writes_outputs(tmp_path):
    df = run("multistudy", out=tmp_path, seeds=1, quick=True, max_epochs=2)
    csv = pd.read_csv(tmp_path / "results.csv")
    assert list(csv.columns) == EXPECTED_COLUMNS
    assert csv["method"].tolist() == [
        "MultiStudySparseVAE",
        "SparseVAE (study as batch)",
        "SparseVAE (per study)",
        "MultiStudySparseVAE (last study as query)",
    ]
    assert (csv["seed"] == 0).all()
    for col in EXPECTED_COLUMNS[2:]:
        assert np.isfinite(csv[col].to_numpy(dtype=float)).all(), col
    for col in ("shared_fscore", "specific_fscore", "factor_corr"):
        assert csv[col].between(0, 1).all(), col
    assert (csv["fit_seconds"] > 0).all()
    pd.testing.assert_frame_equal(df.reset_index(drop=True), csv, check_dtype=False)

    summary = (tmp_path / "summary.md").read_text()
    assert summary.index("Provenance") < summary.index("What ran") < summary.index("Results")
    for needle in (
        "Targets",
        "not assessed (quick smoke run)",
        "better than both baselines",
        "switched off",
        "Hungarian",
    ):
        assert needle in summary
    # the query-mapping row is (a) by other means, not one of the two baselines of the target
    baseline_lines = [line for line in summary.splitlines() if "better than both baselines |" in line]
    assert len(baseline_lines) == 2 and not any("as query" in line for line in baseline_lines)
    assert "load_query_data" in summary
    png = tmp_path / "multistudy.png"
    assert png.exists() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _oracle_fit(data, *, extra_cols: int = 0, duplicate_shared: bool = False) -> MultiStudyFit:
    """A multi-study 'fit' built from the truth (perfect codes and supports)."""
    n = data.n_cells
    rng = np.random.default_rng(0)
    W_sh = data.W_shared.copy()
    z_sh = data.Z_shared.copy()
    if extra_cols:
        W_sh = np.column_stack([W_sh, np.zeros((data.n_genes, extra_cols))])
        z_sh = np.column_stack([z_sh, rng.normal(size=(n, extra_cols))])
    blocks = [
        EstimatedBlock(
            cells=np.arange(n),
            z=z_sh,
            W=W_sh,
            pip=(W_sh != 0).astype(float),
            candidates=[f"shared_{k}" for k in range(data.n_shared)],
            kind="shared",
        )
    ]
    for s in data.studies:
        W = data.W_specific[s].copy()
        z = data.Z_specific[s].copy()
        if duplicate_shared:  # a shared programme copied into the specific block
            W = np.column_stack([W, data.W_shared[:, 0]])
            z = np.column_stack([z, data.Z_shared[data.study_indices(s), 0]])
        blocks.append(
            EstimatedBlock(
                cells=data.study_indices(s),
                z=z,
                W=W,
                pip=(W != 0).astype(float),
                candidates=[f"{s}_{k}" for k in range(data.n_specific[s])],
                kind="specific",
            )
        )
    return MultiStudyFit(blocks=blocks, fit_seconds=1.0)


def test_score_perfect_and_penalised():
    data = simulate_multistudy(n_cells_per_study=80, seed=0)
    perfect = score_multistudy(data, _oracle_fit(data, extra_cols=2))
    assert perfect["shared_fscore"] == pytest.approx(1.0)
    assert perfect["specific_fscore"] == pytest.approx(1.0)
    assert perfect["factor_corr"] == pytest.approx(1.0)
    assert perfect["n_active_shared"] == 5 and perfect["n_active_specific"] == 6

    dup = score_multistudy(data, _oracle_fit(data, duplicate_shared=True))
    assert dup["shared_fscore"] == pytest.approx(1.0)
    # three copies of a 20-gene shared programme are 60 false positives of the specific blocks
    assert dup["specific_fp"] == 60
    assert dup["specific_fscore"] == pytest.approx(2 * 120 / (2 * 120 + 60))
    assert dup["n_active_specific"] == 9


def test_score_baseline_labels_columns_by_programme():
    data = simulate_multistudy(n_cells_per_study=80, seed=1)
    # a pooled 'baseline' whose columns are the true programmes in shuffled order, each specific one zero
    # outside its study, plus one unmatched column that copies shared programme 2 (labelled shared)
    z = np.column_stack([data.Z_shared, data.Z_specific_padded, data.Z_shared[:, 2]])
    W = np.column_stack([data.W_support.astype(float), data.W_shared[:, 2] != 0])
    perm = np.random.default_rng(0).permutation(z.shape[1])
    block = EstimatedBlock(
        cells=np.arange(data.n_cells),
        z=z[:, perm],
        W=W[:, perm],
        pip=W[:, perm],
        candidates=list(data.programme_names),
        kind=None,
    )
    res = score_multistudy(data, MultiStudyFit(blocks=[block], fit_seconds=1.0))
    assert res["specific_fscore"] == pytest.approx(1.0)
    assert res["shared_fp"] == 20  # the duplicate's entries
    assert res["shared_fscore"] == pytest.approx(200 / 220)
    assert res["n_active_shared"] == 6 and res["n_active_specific"] == 6
    assert math.isclose(res["factor_corr"], 1.0, rel_tol=1e-9)


def test_bad_options(tmp_path):
    with pytest.raises(ValueError):
        run_multistudy(tmp_path, seeds=0)
    with pytest.raises(ValueError):
        run_multistudy(tmp_path, settings={"no_such_setting": 1})
    with pytest.raises(ValueError):
        run_multistudy_real(tmp_path, datasets=["nope"])


def test_reference_representations_of_the_real_data_checks():
    import anndata as ad
    import scipy.sparse as sp

    from scsparse.generic.benchmarks._multistudy_real._checks import lognormalised_genes, pca_reference

    counts = np.random.default_rng(0).poisson(3.0, size=(40, 12)).astype(np.float32)
    adata = ad.AnnData(X=sp.csr_matrix(counts), layers={"counts": sp.csr_matrix(counts)})
    expected = np.log1p(1e4 * counts / counts.sum(1, keepdims=True))
    np.testing.assert_allclose(lognormalised_genes(adata), expected, rtol=1e-5)
    assert sp.issparse(adata.layers["counts"])  # the user's layer is left as it was
    pcs = pca_reference(lognormalised_genes(adata), n_comps=5)
    assert pcs.shape == (40, 5)
    centred = expected - expected.mean(0)
    top = np.linalg.svd(centred, full_matrices=False)[0][:, 0] * np.linalg.svd(centred, compute_uv=False)[0]
    np.testing.assert_allclose(np.abs(pcs[:, 0]), np.abs(top), rtol=1e-3, atol=1e-3)


def test_scvi_reference_is_fitted_on_a_copy_with_the_study_as_batch():
    import anndata as ad
    import scipy.sparse as sp

    from scsparse.generic.benchmarks._multistudy_real._checks import scvi_reference

    rng = np.random.default_rng(0)
    counts = rng.poisson(3.0, size=(60, 15)).astype(np.float32)
    adata = ad.AnnData(X=sp.csr_matrix(counts), layers={"counts": sp.csr_matrix(counts)})
    adata.obs["study"] = np.repeat(["a", "b"], 30)
    settings = {
        "n_latent_shared": 3, "n_hidden": 8, "n_layers": 1, "dropout_rate": 0.1,
        "max_epochs": 2, "batch_size": 32, "lr": 0.01,
    }  # fmt: skip
    z = scvi_reference(adata, "study", settings, seed=0)
    assert z.shape == (60, 3) and np.isfinite(z).all()
    assert "_scvi_uuid" not in adata.uns and "_scvi_manager_uuid" not in adata.uns  # the user's AnnData untouched
    np.testing.assert_array_equal(adata.layers["counts"].toarray(), counts)
    np.testing.assert_allclose(scvi_reference(adata, "study", settings, seed=0), z, rtol=1e-5, atol=1e-6)
    with pytest.raises(KeyError):
        scvi_reference(adata, "no_such_column", settings, seed=0)


def test_confusion_table_and_its_largest_error_name_the_transfer_failure():
    truth = np.array(["B", "Mono14", "Mono16", "Mono16", "Mono16", "T"])
    predicted = np.array(["B", "Mono14", "Mono14", "Mono14", "Mono16", "Mono14"])
    table = confusion_table(truth, predicted)
    assert list(table.index) == list(table.columns) == ["B", "Mono14", "Mono16", "T"]  # T never predicted: a column
    assert table.loc["Mono16", "Mono14"] == 2 and table.to_numpy().sum() == len(truth)
    assert largest_confusion(table) == ("Mono16", "Mono14", 2, 3)
    lines = "\n".join(confusion_section({"shared factors": table}))
    assert "shared factors (accuracy 0.500); the largest error: 2 of the 3 stimulated cells labelled Mono16" in lines
    assert "(accuracy with those two labels counted as one: 0.833)" in lines  # 5 of 6 once Mono14 = Mono16


def test_transfer_accuracy_is_the_accuracy_of_transfer_predictions():
    rng = np.random.default_rng(0)
    labels = np.repeat(["a", "b", "c"], 40)
    z = rng.normal(size=(120, 3)) + 3.0 * (labels[:, None] == np.array(["a", "b", "c"]))
    train, test = np.arange(120) % 2 == 0, np.arange(120) % 2 == 1
    pred = transfer_predictions(z, labels, train, test)
    assert pred.shape == (60,)
    accuracy = float(np.mean(pred == labels[test]))
    assert transfer_accuracy(z, labels, train, test) == pytest.approx(accuracy) and accuracy > 0.9


def test_score_matches_programmes_to_columns_that_select_genes():
    """A switched-off column whose code tracks a programme must not take it from the active column carrying it."""
    data = simulate_multistudy(n_cells_per_study=80, seed=2)
    fit = _oracle_fit(data)
    shared = fit.blocks[0]
    rng = np.random.default_rng(0)
    noisy = shared.z[:, 0] + 0.3 * rng.normal(size=shared.z.shape[0])
    # column 0 keeps programme 0's genes but its code is noisy; a new last column has no gene, exact code
    shared.z = np.column_stack([noisy, shared.z[:, 1:], shared.z[:, 0]])
    shared.W = np.column_stack([shared.W, np.zeros(data.n_genes)])
    shared.pip = np.column_stack([shared.pip, np.zeros(data.n_genes)])
    res = score_multistudy(data, fit)
    assert res["shared_fscore"] == pytest.approx(1.0) and res["shared_fn"] == 0
    assert res["n_active_shared"] == 5


def test_marker_labels_pick_the_highest_scoring_set_and_skip_absent_genes():
    import anndata as ad
    import scipy.sparse as sp

    counts = np.array([[20, 0, 0, 5], [0, 20, 1, 5], [15, 1, 0, 5], [0, 0, 20, 5]], dtype=np.float32)
    adata = ad.AnnData(sp.csr_matrix(counts))
    adata.var_names = ["CD3E", "MS4A1", "NKG7", "ACTB"]
    adata.layers["counts"] = adata.X.copy()
    markers = {"T": ["CD3E", "IL7R"], "B": ["MS4A1"], "NK": ["NKG7"], "absent": ["NOPE"]}
    assert marker_labels(adata, markers).tolist() == ["T", "B", "T", "NK"]
    with pytest.raises(ValueError, match="marker"):
        marker_labels(adata, {"absent": ["NOPE"]})
