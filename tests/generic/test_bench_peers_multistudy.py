"""Tests of the multi-study arm of ``scsparse bench peers``: MOFA+ groups, per-study fits, scoping and its metrics."""

from __future__ import annotations

import math
from pathlib import Path

import anndata as ad
import numpy as np
import pandas as pd
import pytest

from scsparse.generic.benchmarks._peers._multistudy import MULTISTUDY_METHODS, fit_multistudy_peer
from scsparse.generic.benchmarks._peers._run import run_peers
from scsparse.generic.benchmarks._programme_fit import FitBudget, ProgrammeFit
from scsparse.generic.benchmarks._programme_scores import score_fit
from scsparse.generic.benchmarks._real_data import RealDataset

SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"


def _two_studies(n_per_type: int = 40, n_genes: int = 40, seed: int = 0) -> ad.AnnData:
    """Two cell types in two studies: genes 0-9 up in type t0 and 10-19 in t1 in both studies, genes 20-29 up
    in half of study "b"'s cells only (its own programme); gene 0 is never expressed in study "a".
    """
    rng = np.random.default_rng(seed)
    study = np.repeat(["a", "b"], 2 * n_per_type)
    labels = np.tile(np.repeat(["t0", "t1"], n_per_type), 2)
    rate = np.full((study.size, n_genes), 1.0)
    rate[np.ix_(labels == "t0", np.arange(10))] = 8.0
    rate[np.ix_(labels == "t1", np.arange(10, 20))] = 8.0
    own = (study == "b") & (np.arange(study.size) % 2 == 0)
    rate[np.ix_(own, np.arange(20, 30))] = 10.0
    counts = rng.poisson(rate).astype(np.float32)
    counts[study == "a", 0] = 0.0
    adata = ad.AnnData(counts.copy())
    adata.obs_names = [f"c{i}" for i in range(study.size)]
    adata.var_names = [f"G{j}" for j in range(n_genes)]
    adata.layers["counts"] = counts
    adata.obs["study"] = pd.Categorical(study)
    adata.obs["cell_type"] = pd.Categorical(labels)
    return adata


def test_mofa_groups_scope_the_programme_of_one_study_to_it():
    pytest.importorskip("mofapy2")
    adata = _two_studies()
    fit = fit_multistudy_peer("MOFA+ (groups)", adata, FitBudget(n_factors=4, n_top=10), seed=0, study_key="study")
    assert fit.factors.shape == (adata.n_obs, 4)
    shared = {name[:-1] for name, scope in fit.scope.items() if scope == "shared"}
    assert fit.transfer.shape == (adata.n_obs, len(shared))  # a factor one group holds does not transfer
    own = set(range(20, 30))
    best = max(fit.programmes, key=lambda name: len(own & set(fit.programmes[name].tolist())))
    assert len(own & set(fit.programmes[best].tolist())) >= 8
    assert len(own & set(fit.programmes[best].tolist())) >= 0.8 * fit.programmes[best].size  # its slab, not a top n
    assert fit.scope[best] == "b"
    types = [max(fit.programmes, key=lambda n, b=b: len(b & set(fit.programmes[n].tolist()))) for b in
             (set(range(10)), set(range(10, 20)))]  # fmt: skip
    assert {fit.scope[n] for n in types} == {"shared"}
    assert "_scvi_uuid" not in adata.uns and not adata.obsm  # the caller's AnnData is left alone


def test_per_study_fits_use_each_study_genes_and_map_back():
    adata = _two_studies(n_per_type=100)
    fit = fit_multistudy_peer(
        "SparseVAE (per study)", adata, FitBudget(n_factors=3, max_epochs=200), seed=0, study_key="study"
    )
    assert fit.factors is None and fit.transfer.shape[0] == adata.n_obs
    assert fit.programmes and all(name.split(":")[0] in ("a", "b") for name in fit.programmes)
    assert all(fit.scope[name] == name.split(":")[0] for name in fit.programmes)
    a_genes = np.concatenate([g for n, g in fit.programmes.items() if n.startswith("a:")] or [np.array([], int)])
    assert 0 not in a_genes.tolist()  # study a's fit never saw the gene it does not express ...
    t0 = set(range(1, 10))  # ... and its programmes name the genes of the whole data set
    assert max(len(t0 & set(g.tolist())) for n, g in fit.programmes.items() if n.startswith("a:")) >= 7
    assert all(act.shape == (adata.n_obs,) for act in fit.activity.values())


def test_fit_multistudy_peer_rejects_unknown_methods():
    with pytest.raises(ValueError, match="Unknown multi-study method"):
        fit_multistudy_peer("SparseVAE", _two_studies(), FitBudget(), seed=0, study_key="study")
    assert MULTISTUDY_METHODS[0] == "MultiStudySparseVAE"


def _scoped_fit(adata: ad.AnnData, ifn_scope: str) -> ProgrammeFit:
    """Programmes: the two types (shared) and the interferon genes 20-27 with the given scope."""
    labels = adata.obs["cell_type"].to_numpy()
    own = (adata.obs["study"] == "b").to_numpy() & (np.arange(adata.n_obs) % 2 == 0)
    programmes = {"0+": np.arange(10), "1+": np.arange(10, 20), "2+": np.arange(20, 28)}
    activity = {"0+": (labels == "t0") * 1.0, "1+": (labels == "t1") * 1.0, "2+": own * 1.0}
    scope = {"0+": "shared", "1+": "shared", "2+": ifn_scope}
    z = np.column_stack([activity["0+"], activity["1+"]])
    return ProgrammeFit("x", z, programmes, activity, 3, seconds=1.0, scope=scope, transfer=z)


def _scored(monkeypatch, ifn_scope: str) -> dict[str, float]:
    from scsparse.generic.benchmarks import _programme_scores

    adata = _two_studies()
    adata.obs["condition"] = np.where(adata.obs["study"] == "b", "stimulated", "control")
    sets = {"Hallmark: HALLMARK_INTERFERON_ALPHA_RESPONSE": [f"G{j}" for j in range(20, 28)]}
    monkeypatch.setattr(_programme_scores, "_gene_sets", lambda spec: sets)
    spec = RealDataset(
        "toy", "toy", lambda: adata, label_key="cell_type", batch_key="study", libraries=("custom",),
        condition=("condition", "stimulated"), study_key="study",
    )  # fmt: skip
    return score_fit(_scoped_fit(adata, ifn_scope), adata, spec, seed=0)


def test_multistudy_scores_transfer_shared_programmes_and_leakage(monkeypatch):
    row = _scored(monkeypatch, "b")
    assert row["shared_programmes"] == 2 and row["programmes"] == 3
    assert row["transfer_accuracy"] == pytest.approx(1.0)  # the types look the same in both studies
    assert row["batch_leakage"] < 0.05  # measured on the shared programmes only, which ignore the study


def test_interferon_belongs_to_the_stimulated_study(monkeypatch):
    # the stimulated study ("b", here the condition's "stimulated" cells) is the column's group name
    specific = _scored(monkeypatch, "stimulated")
    assert specific["interferon_recovered"] == 1.0 and specific["interferon_specific"] == 1.0
    shared = _scored(monkeypatch, "shared")  # shared but more active in the stimulated cells: found, not specific
    assert shared["interferon_recovered"] == 1.0 and shared["interferon_specific"] == 0.0
    other = _scored(monkeypatch, "control")  # a programme of the other study is no candidate
    assert other["interferon_recovered"] == 0.0 and other["interferon_p"] == 1.0
    assert other["interferon_specific"] == 0.0


def test_runner_gives_the_multistudy_data_sets_their_own_methods(monkeypatch, tmp_path):
    pytest.importorskip("mofapy2")
    if not SHARED_DATA.is_dir():
        pytest.skip(f"offline data copy not found at {SHARED_DATA}")
    monkeypatch.setenv("SCSPARSE_DATA_DIR", str(SHARED_DATA))
    monkeypatch.setenv("SCSPARSE_OFFLINE", "1")
    df = run_peers(tmp_path, quick=True, datasets="kang_studies", methods="SparseVAE,MOFA+ (groups)", verbose=False)
    assert df["method"].tolist() == ["MOFA+ (groups)"] and df["status"].tolist() == ["ok"]
    assert df["transfer_accuracy"].between(0, 1).all() and df["shared_programmes"].notna().all()
    assert math.isnan(df["settled"].iloc[0])
    assert "## Multi-study arm: Kang" in (tmp_path / "summary.md").read_text()
