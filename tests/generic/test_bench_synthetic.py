import math

import numpy as np
import pandas as pd
import pytest
import torch

from scsparse.data._simulate import simulate_eq9
from scsparse.generic.benchmarks import BENCHMARKS, run
from scsparse.generic.benchmarks._synthetic import _methods as syn_methods
from scsparse.generic.benchmarks._synthetic import _run as syn
from scsparse.generic.benchmarks._synthetic import _summary as syn_summary
from scsparse.generic.benchmarks._synthetic._methods import BETA_GRID, VALIDATION_SEED, MethodOutput, split_indices
from scsparse.generic.benchmarks._synthetic._run import RESULT_COLUMNS, active_units, run_synthetic, select_beta
from scsparse.generic.benchmarks._tables import format_mean_sd, markdown_table

EXPECTED_COLUMNS = [
    "method",
    "seed",
    "rho",
    "beta",
    "n_active",
    "active_units",
    "w_fscore",
    "w_precision",
    "w_recall",
    "dci",
    "heldout_nll",
    "heldout_mse",
    "fit_seconds",
]
ALL_METHODS = ["SparseVAE", "SparseVAE (1 fit)", "SparseVAE (correlated prior)", "VAE", "beta-VAE", "VSC", "oi-VAE"]


def test_run_synthetic_quick_writes_outputs(tmp_path):
    df = run("synthetic", out=tmp_path, seeds=1, rho=[0.4], quick=True, max_epochs=3)
    assert list(RESULT_COLUMNS) == EXPECTED_COLUMNS
    csv = pd.read_csv(tmp_path / "results.csv")
    assert list(csv.columns) == EXPECTED_COLUMNS
    assert csv["method"].tolist() == ALL_METHODS  # every method on the same dataset and seed
    assert (csv["seed"] == 0).all() and np.allclose(csv["rho"], 0.4)
    rows = csv.set_index("method")
    for col in ("active_units", "dci", "heldout_nll", "heldout_mse", "fit_seconds"):
        assert np.isfinite(rows[col]).all(), col
    assert ((rows["dci"] >= 0) & (rows["dci"] <= 1)).all() and (rows["heldout_mse"] > 0).all()
    # W support: only the methods with a feature x factor loading are scored
    for m in ("SparseVAE", "SparseVAE (1 fit)", "SparseVAE (correlated prior)", "oi-VAE"):
        assert 0.0 <= rows.loc[m, "w_fscore"] <= 1.0 and 0 <= rows.loc[m, "n_active"] <= 5
    for m in ("VAE", "beta-VAE", "VSC"):
        assert math.isnan(rows.loc[m, "w_fscore"]) and math.isnan(rows.loc[m, "n_active"])
    assert rows.loc["beta-VAE", "beta"] in BETA_GRID
    assert rows.drop(index="beta-VAE")["beta"].isna().all()
    pd.testing.assert_frame_equal(df.reset_index(drop=True), csv, check_dtype=False)

    sel = pd.read_csv(tmp_path / "beta_selection.csv")
    assert sorted(sel["beta"]) == sorted(BETA_GRID) and sel["chosen"].sum() == 1
    assert (sel["validation_seed"] >= VALIDATION_SEED).all()
    assert float(sel.loc[sel["chosen"], "beta"].iloc[0]) == rows.loc["beta-VAE", "beta"]

    summary = (tmp_path / "summary.md").read_text()
    assert summary.index("Provenance") < summary.index("What ran") < summary.index("Results")
    for needle in (
        "scvi-tools",
        "torch threads",
        "oi-VAE",
        "VSC",
        "beta-VAE (beta=",
        "Targets: met or not",
        "not assessed",
        "best of 4 fits",
        "so no method gets more tries than another",
        "`SparseVAE (1 fit)` is restart 0 alone",
        "`SparseVAE (correlated prior)` is the same model and restarts with z ~ N(0, Sigma_z)",
    ):
        assert needle in summary, needle
    for ours in ("SparseVAE", "SparseVAE (correlated prior)"):  # each variant's targets are stated
        assert f"| {ours}: DCI above VAE and beta-VAE | 0.4" in summary
        assert f"| {ours}: W support F-score >= 0.9 (rho <= 0.4) | 0.4" in summary
    for png in ("synthetic.png", "figure3.png"):
        assert (tmp_path / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _fake_output(split, z, W=None, pip=None):
    x_test = np.asarray(split.adata_test.X, dtype=np.float64)
    return MethodOutput(z=z, test_mean=np.zeros_like(x_test), heldout_nll=1.0, fit_seconds=0.01, W=W, pip=pip)


def _true_codes(split, noise, seed):
    data = simulate_eq9(split.adata_all.n_obs, split.rho, seed=split.seed)
    rng = np.random.default_rng(seed)
    z = np.hstack([data.Z, np.zeros((data.Z.shape[0], 3))]) + noise * rng.normal(size=(data.Z.shape[0], 5))
    return data, z


@pytest.mark.filterwarnings("ignore:DCI computed on")
def test_select_beta_uses_validation_seeds_and_highest_dci(monkeypatch):
    seen = []

    def fake_fit(split, max_epochs, n_latent, beta=4.0):
        seen.append(split.seed)
        # beta = 8 recovers the true factors; the others return noise
        _, z = _true_codes(split, noise=0.01 if beta == 8.0 else 5.0, seed=int(beta))
        if beta != 8.0:
            z = np.random.default_rng(int(beta)).normal(size=z.shape)
        return _fake_output(split, z)

    monkeypatch.setattr(syn, "fit_beta_vae", fake_fit)
    beta, table = select_beta(0.2, betas=[2.0, 8.0, 16.0], n_validation=2, n_obs=300, max_epochs=1)
    assert beta == 8.0
    assert set(seen) == {VALIDATION_SEED, VALIDATION_SEED + 1}  # never a test seed
    assert len(table) == 6 and table.loc[table["chosen"], "beta"].unique().tolist() == [8.0]
    with pytest.raises(ValueError, match="positive"):
        select_beta(0.2, betas=[-1.0])


@pytest.mark.filterwarnings("ignore:DCI computed on")
def test_select_beta_ties_go_to_the_smaller_beta(monkeypatch):
    def same_codes(split, max_epochs, n_latent, beta=4.0):
        return _fake_output(split, _true_codes(split, noise=0.1, seed=0)[1])

    monkeypatch.setattr(syn, "fit_beta_vae", same_codes)
    assert select_beta(0.0, betas=[16.0, 4.0], n_obs=300, max_epochs=1)[0] == 4.0


def test_dense_vaes_get_the_sparse_vaes_kl_warmup():
    X = np.random.default_rng(0).normal(size=(60, 3)).astype("float32")
    model = syn_methods._warmup_vae_class()(kl_warmup_fraction=0.25, n_latent=2, beta=4.0, max_epochs=8, n_hidden=8)
    model.fit(X)
    assert model.module.kl_warmup_epochs == 2 and model.module.kl_weight == 4.0
    model.fit(X, max_epochs=4)  # the warm-up follows the epochs actually run
    assert model.module.kl_warmup_epochs == 1
    x = torch.as_tensor(X[:10])
    torch.manual_seed(0)
    at_start = float(model.module.loss(x, n_obs=60, epoch=0))
    torch.manual_seed(0)
    after = float(model.module.loss(x, n_obs=60, epoch=1))
    assert at_start < after  # epoch 0: KL weight 0; epoch 1: weight beta


def test_active_units_counts_varying_codes():
    z = np.column_stack([np.linspace(-2, 2, 100), np.full(100, 0.7), 0.05 * np.sin(np.arange(100))])
    assert active_units(z) == 1
    assert active_units(z, threshold=1e-4) == 2
    with pytest.raises(ValueError, match="2-d"):
        active_units(np.zeros(5))


def _runner_methods():
    def oracle(split, max_epochs, n_latent):
        data, z = _true_codes(split, noise=0.05, seed=split.seed)
        W = np.zeros((7, n_latent))
        W[:, :2] = data.W_support * 0.8
        pip = np.where(W != 0, 0.9, 0.1)
        out = _fake_output(split, z, W=W, pip=pip)
        out.n_active = 2.0
        return out

    def mixer(split, max_epochs, n_latent):  # codes mix both factors: poor DCI, no W
        data, z = _true_codes(split, noise=0.05, seed=split.seed)
        z[:, 0], z[:, 1] = z[:, 0] + z[:, 1], z[:, 0] - z[:, 1]
        return _fake_output(split, z)

    return [("SparseVAE", oracle), ("VAE", mixer)]


def test_runner_scores_methods_and_states_targets(tmp_path):
    df = run_synthetic(tmp_path, rho=[0.0, 0.6], seeds=1, max_epochs=1, methods=_runner_methods(), verbose=False)
    assert len(df) == 4 and set(df["method"]) == {"SparseVAE", "VAE"}
    ours = df[df["method"] == "SparseVAE"]
    assert np.allclose(ours["w_fscore"], 1.0) and (ours["active_units"] == 2).all()
    assert df[df["method"] == "VAE"]["w_fscore"].isna().all()
    assert (ours["dci"].to_numpy() > df[df["method"] == "VAE"]["dci"].to_numpy()).all()
    summary = (tmp_path / "summary.md").read_text()
    assert "Reduced run: 1 dataset(s) per rho" in summary
    assert "| SparseVAE: DCI above VAE and beta-VAE | 0.6 |" in summary
    assert "correlated prior): DCI" not in summary  # a variant that did not run gets no target rows
    line = next(x for x in summary.splitlines() if x.startswith("| SparseVAE: W support F-score") and "| 0 |" in x)
    assert line.endswith("| met |")
    assert "F-score >= 0.9 (rho <= 0.4) | 0.6" not in summary  # the F target is only for rho <= 0.4
    assert "No beta-VAE in this run" in summary
    assert pd.read_csv(tmp_path / "beta_selection.csv").empty


def test_a_run_split_over_first_seeds_adds_up_to_the_whole(tmp_path):
    """seeds=1 then seeds=2, first_seed=1 give the same rows as seeds=3 in one run."""
    opts = {"rho": [0.2], "max_epochs": 1, "methods": _runner_methods(), "verbose": False}
    whole = run_synthetic(tmp_path / "whole", seeds=3, **opts)
    parts = [
        run_synthetic(tmp_path / "a", seeds=1, **opts),
        run_synthetic(tmp_path / "b", seeds=2, first_seed=1, **opts),
    ]
    joined = pd.concat(parts, ignore_index=True)
    assert joined["seed"].tolist() == whole["seed"].tolist() == [0, 0, 1, 1, 2, 2]
    cols = ["method", "seed", "rho", "w_fscore", "dci", "heldout_nll", "heldout_mse"]
    pd.testing.assert_frame_equal(joined[cols], whole[cols])
    assert "datasets (seeds) 1..2 per rho" in (tmp_path / "b" / "summary.md").read_text()
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="first_seed must be a non-negative integer"):
            run_synthetic(tmp_path / "c", seeds=1, first_seed=bad, **opts)
    with pytest.raises(ValueError, match="below 10000"):
        run_synthetic(tmp_path / "c", seeds=2, first_seed=9_999, **opts)


def test_targets_not_met_are_explained():
    rows = []
    for s in range(3):
        rows.append(
            {
                "method": "SparseVAE",
                "seed": s,
                "rho": 0.2,
                "dci": 0.3,
                "n_active": 3.0,
                "w_fscore": 0.7,
                "w_precision": 0.6,
                "w_recall": 0.9,
                "beta": math.nan,
            }
        )
        rows.append({"method": "VAE", "seed": s, "rho": 0.2, "dci": 0.5, "beta": math.nan})
        rows.append({"method": "beta-VAE", "seed": s, "rho": 0.2, "dci": 0.4, "beta": 4.0})
    lines = "\n".join(syn_summary._targets_section(pd.DataFrame(rows), [0.2], quick=False, seeds=3))
    assert "beta-VAE (beta=4) 0.400" in lines and "above both in 0/3 datasets | not met |" in lines
    assert "mean F 0.700" in lines and "| not met |" in lines
    assert "Why the targets not met were missed" in lines
    assert "3 active: 3" in lines and "false positives dominate" in lines
    assert "- SparseVAE, DCI at rho=0.2" in lines and "- SparseVAE, F-score at rho=0.2" in lines


def test_support_is_scored_on_a_code_the_model_keeps_active():
    """A switched-off code that tracks a true factor must not take the match from the active code carrying it."""
    data, split = syn_methods.make_split(300, rho=0.4, seed=0)
    Z = data.Z
    rng = np.random.default_rng(0)
    # code 0 carries z1 and selects its features; code 1 is switched off (no loading) but tracks z1 even more
    # closely; code 2 carries z2; codes 3, 4 are off and constant
    z = np.column_stack([Z[:, 0] + 0.3 * rng.normal(size=len(Z)), Z[:, 0], Z[:, 1], np.zeros((len(Z), 2))])
    W = np.zeros((7, 5))
    W[:, 0], W[:, 2] = data.W_support[:, 0], data.W_support[:, 1]
    scores = syn._score(data, split, _fake_output(split, z, W=W, pip=(W > 0).astype(float)))
    assert scores["w_fscore"] == 1.0 and scores["w_precision"] == 1.0


def test_collapse_section_lists_fits_without_active_units():
    df = pd.DataFrame(
        {"method": ["VAE", "VAE", "SparseVAE"], "rho": [0.2, 0.2, 0.2], "seed": [0, 1, 0], "active_units": [0.0, 2, 2]}
    )
    lines = "\n".join(syn_summary._collapse_section(df))
    assert "- VAE, rho=0.2: 1/2 datasets (seeds 0)" in lines and "SparseVAE" not in lines
    assert "Every fit kept" in "\n".join(syn_summary._collapse_section(df.assign(active_units=1.0)))


def test_run_synthetic_rejects_bad_options(tmp_path):
    with pytest.raises(ValueError, match="at least one value"):
        run_synthetic(tmp_path, rho=[])
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        run_synthetic(tmp_path, rho=[1.5])
    with pytest.raises(ValueError, match="seeds must be a whole number >= 1"):
        run_synthetic(tmp_path, seeds=0)
    with pytest.raises(ValueError, match="n_validation"):
        run_synthetic(tmp_path, n_validation=0)
    with pytest.raises(ValueError, match="betas"):
        run_synthetic(tmp_path, betas=[])


def test_unknown_benchmark_lists_names(tmp_path):
    with pytest.raises(ValueError, match="synthetic"):
        run("no-such-benchmark", out=tmp_path)
    assert "synthetic" in BENCHMARKS
    assert not any(tmp_path.iterdir())


def test_split_is_fixed_and_disjoint():
    tr, te = split_indices(1000, seed=3)
    tr2, te2 = split_indices(1000, seed=3)
    np.testing.assert_array_equal(te, te2)
    assert len(te) == 200 and len(tr) == 800
    assert np.intersect1d(tr, te).size == 0
    assert not np.array_equal(te, split_indices(1000, seed=4)[1])


def test_markdown_table_mean_sd():
    df = pd.DataFrame({"method": ["A", "A", "B"], "rho": [0.4, 0.4, 0.4], "dci": [0.5, 0.7, 0.9]})
    table = markdown_table(df, ["method", "rho"], ["dci"])
    assert "| A | 0.4 | 0.600 ± 0.141 | 2 |" in table
    assert "| B | 0.4 | 0.900 | 1 |" in table
    assert format_mean_sd([1.0, float("nan")]) == "1.000 (1 nan)"


def test_run_rejects_unknown_option_and_name(tmp_path):
    with pytest.raises(ValueError, match="does not take 'device'"):
        run("synthetic", out=tmp_path, device="cpu")
    with pytest.raises(ValueError, match="Unknown benchmark"):
        run("no_such", out=tmp_path)


def test_run_all_indexes_and_reports_failures(monkeypatch, tmp_path):
    from scsparse.generic import benchmarks

    def ok(out, *, seeds=2, quick=False, max_epochs=None):
        return pd.DataFrame({"seed": range(seeds)})

    def broken(out, *, seeds=2, quick=False, max_epochs=None, rho=(0.4,)):
        raise FloatingPointError("diverged")

    monkeypatch.setattr(benchmarks, "BENCHMARKS", {"ok": ok, "broken": broken})
    with pytest.raises(RuntimeError, match="1 benchmark\\(s\\) failed: broken"):
        benchmarks.run_all(tmp_path, quick=True, rho=[0.1], device="cpu")
    index = pd.read_csv(tmp_path / "index.csv")
    assert list(index["benchmark"]) == ["ok", "broken"]
    assert index.loc[0, "status"] == "ok" and index.loc[0, "rows"] == 2
    assert "FloatingPointError: diverged" in index.loc[1, "status"]
    assert "[broken/summary.md]" in (tmp_path / "summary.md").read_text()
    assert benchmarks.run_all(tmp_path / "again", names=["ok"], seeds=3)["rows"].tolist() == [3]


def _pid_benchmark(out, *, seeds=2, quick=False, max_epochs=None):
    """A benchmark that records the process it ran in (module level, so a spawned worker can import it)."""
    import os
    from pathlib import Path

    Path(out).mkdir(parents=True, exist_ok=True)
    (Path(out) / "pid.txt").write_text(str(os.getpid()))
    return pd.DataFrame({"seed": range(seeds)})


def _diverging_benchmark(out, *, seeds=2, quick=False, max_epochs=None):
    raise FloatingPointError("diverged")


def test_run_all_runs_benchmarks_side_by_side_in_processes_of_their_own(monkeypatch, tmp_path):
    import os

    from scsparse.generic import benchmarks

    registry = {"first": _pid_benchmark, "broken": _diverging_benchmark, "last": _pid_benchmark}
    monkeypatch.setattr(benchmarks, "BENCHMARKS", registry)
    with pytest.raises(RuntimeError, match="1 benchmark\\(s\\) failed: broken"):
        benchmarks.run_all(tmp_path, seeds=3, jobs=2)
    index = pd.read_csv(tmp_path / "index.csv")
    assert list(index["benchmark"]) == ["first", "broken", "last"]
    assert list(index["rows"]) == [3, 0, 3]
    assert "FloatingPointError: diverged" in index.loc[1, "status"]
    pids = {int((tmp_path / name / "pid.txt").read_text()) for name in ("first", "last")}
    assert os.getpid() not in pids
    with pytest.raises(ValueError, match="jobs must be a positive integer"):
        benchmarks.run_all(tmp_path, jobs=0)


def test_run_all_skips_benchmarks_without_data_only_when_asked(monkeypatch, tmp_path):
    from scsparse.data import DataNotAvailableError
    from scsparse.generic import benchmarks

    def ok(out, *, seeds=2, quick=False, max_epochs=None):
        return pd.DataFrame({"seed": range(seeds)})

    def needs_data(out, *, seeds=2, quick=False, max_epochs=None):
        raise DataNotAvailableError("zeisel: file not in the cache and SCSPARSE_OFFLINE is set")

    monkeypatch.setattr(benchmarks, "BENCHMARKS", {"ok": ok, "needs_data": needs_data})
    with pytest.raises(RuntimeError, match="1 benchmark\\(s\\) failed: needs_data"):
        benchmarks.run_all(tmp_path / "strict", quick=True)
    index = benchmarks.run_all(tmp_path / "lenient", quick=True, skip_missing_data=True)
    assert index["status"].tolist() == [
        "ok",
        "not run: data not available (zeisel: file not in the cache and SCSPARSE_OFFLINE is set)",
    ]
    assert "not run: data not available" in (tmp_path / "lenient" / "summary.md").read_text()


def test_baselines_are_the_best_of_the_same_number_of_fits(monkeypatch):
    """Every method gets the sparse VAE's restarts, chosen by its own training objective."""
    from scsparse.generic.benchmarks._restarts import RESTART_SEED_STEP
    from scsparse.generic.models import VAE

    monkeypatch.setitem(syn_methods.SYNTHETIC_SETTINGS, "n_restarts", 3)
    _, split = syn_methods.make_split(200, rho=0.2, seed=4)
    X_train = split.arrays()[0]
    built = []

    def make(seed):
        built.append(VAE(n_latent=2, max_epochs=2, seed=seed))
        return built[-1]

    out, kept = syn_methods._fit_array_model(make, split, max_epochs=2)
    assert [m.seed for m in built] == [4 + r * RESTART_SEED_STEP for r in range(3)]
    objectives = [m.training_objective(X_train) for m in built]
    assert kept is built[int(np.argmin(objectives))]
    np.testing.assert_allclose(out.z, kept.transform(split.arrays()[2]))


def test_sparse_vae_is_fitted_with_the_papers_decoder(monkeypatch):
    """The paper's decoder has no first-layer bias; the benchmark pins it, whatever SparseVAE's default is."""
    from scsparse.nn import MaskedDecoder

    assert MaskedDecoder(1, 1, 1).first_bias is not None  # the package default differs, so the pin matters
    kept = []
    best_of_restarts = syn_methods.best_of_restarts

    def keep(fit, seed, n):
        kept.append(best_of_restarts(fit, seed, n))
        return kept[-1]

    monkeypatch.setattr(syn_methods, "best_of_restarts", keep)
    _, split = syn_methods.make_split(200, rho=0.2, seed=0)
    syn_methods.fit_sparsevae(split, max_epochs=1, n_restarts=1)
    assert kept[0].module.decoder.first_bias is None
