"""Tests of ``scsparse bench stability``: variants, agreement of seeds, the summary and resuming."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from lightning.pytorch import Callback

from scsparse.generic.benchmarks import BENCHMARKS
from scsparse.generic.benchmarks._real_data import load_real_dataset
from scsparse.generic.benchmarks._report import provenance
from scsparse.generic.benchmarks._stability import _run as stability
from scsparse.generic.benchmarks._stability import _summary as stability_summary
from scsparse.generic.benchmarks._stability._run import AGREEMENT_COLUMNS, RESULT_COLUMNS, VARIANTS, run_stability
from scsparse.generic.metrics import AGREEMENT_MEASURES, programme_agreement


def test_variants_separate_the_seed_of_the_initial_weights_from_the_training():
    assert VARIANTS["default"].seeds(3) == (3, 3)
    assert VARIANTS["fixed_init"].seeds(3) == (0, 3)
    assert VARIANTS["fixed_training"].seeds(3) == (3, 0)
    # a consensus run uses its own block of seeds: two runs share none
    restarts = VARIANTS["consensus"].restarts
    assert restarts > 1 and VARIANTS["consensus"].seeds(2) == (2 * restarts, 2 * restarts)


def test_registered_and_rejects_bad_arguments(tmp_path):
    assert "stability" in BENCHMARKS
    with pytest.raises(ValueError, match="at least 2 seeds"):
        run_stability(tmp_path, seeds=1, quick=True)
    with pytest.raises(ValueError, match="Unknown variant"):
        run_stability(tmp_path, quick=True, methods="default,nowhere")
    with pytest.raises(ValueError, match="Unknown data set"):
        run_stability(tmp_path, quick=True, datasets="kang,nowhere")
    with pytest.raises(ValueError, match=r"\['nmf_start'\] do not apply to the multi-study data sets"):
        run_stability(tmp_path, quick=True, datasets="kang,kang_studies", methods="default,nmf_start")
    assert not VARIANTS["nmf_start"].multi_study and VARIANTS["consensus"].multi_study


def test_summary_reports_every_measure_and_the_targets():
    agreement = pd.DataFrame(
        [
            {
                "dataset": "kang",
                "variant": "default",
                "seed_a": 0,
                "seed_b": 1,
                **dict.fromkeys(AGREEMENT_MEASURES, 0.5),
            },
            {
                "dataset": "kang",
                "variant": "default",
                "seed_a": 0,
                "seed_b": 2,
                **dict.fromkeys(AGREEMENT_MEASURES, 0.9),
            },
        ],
        columns=AGREEMENT_COLUMNS,
    )
    results = pd.DataFrame(
        [{"dataset": "kang", "variant": "default", "seed": s, "factors_kept": 9.0 + s} for s in range(3)],
        columns=RESULT_COLUMNS,
    )
    text = "\n".join(
        stability_summary.summary_lines(
            results, agreement, provenance("stability", {}), quick=False, total_seconds=60.0
        )
    )
    assert "programmes (Jaccard)" in text and "cores (top-10 shared)" in text and "0.70 ± 0.28" in text
    header = next(line for line in text.splitlines() if line.startswith("| variant | programmes"))
    assert header.count("|") == 8  # variant, five measures, pairs: no label breaks the table
    assert "default single fit programmes (Jaccard) >= 0.6: 0.70, met" in text
    assert "default single fit cores (top-10 shared) >= 0.8: 0.70, not met" in text


def test_quick_run_and_resume(shared_data, tmp_path, monkeypatch):
    df = run_stability(tmp_path, quick=True, seeds=4, max_epochs=40, verbose=False)
    assert df["variant"].tolist() == ["default"] * 4
    assert (df["factors_kept"] >= 0).all() and np.isfinite(df["heldout_nll"]).all()
    agreement = pd.read_csv(tmp_path / "agreement.csv")
    assert list(agreement.columns) == AGREEMENT_COLUMNS and len(agreement) == 6
    # four single fits give three pairs of disjoint consensus fits of 2 restarts each, read off their p*
    consensus = pd.read_csv(tmp_path / "consensus.csv", dtype={"seeds_a": str, "seeds_b": str})
    assert consensus["restarts"].tolist() == [1] * 6 + [2] * 3  # the single fits read the same way, then consensus
    pairs = consensus.loc[consensus["restarts"] == 2, ["seeds_a", "seeds_b"]].to_numpy().tolist()
    assert pairs == [["0 1", "2 3"], ["0 2", "1 3"], ["0 3", "1 2"]]
    assert consensus["jaccard"].between(0, 1).all()
    kept = pd.read_csv(tmp_path / "consensus_programmes.csv")
    assert len(kept) == consensus[["kept_a", "kept_b"]].to_numpy().sum()
    assert kept["recovered_by"].isin([1, 2]).all() and kept["best_jaccard"].between(0, 1).all()
    values = agreement.loc[0, ["jaccard", "top_overlap", "rbo", "loadings_corr"]].astype(float)
    assert ((values >= 0) & (values <= 1)).all()
    summary = (tmp_path / "summary.md").read_text()
    assert "# Stability of the programmes over seeds" in summary and "not assessed (quick smoke run)" in summary
    assert "Consensus fits read off the single fits" in summary and "two consensus fits of 2 restarts" in summary
    tables, current = [], []
    for line in [*summary.splitlines(), ""]:
        if line.startswith("|"):
            current.append(line.count("|"))
        elif current:
            tables, current = [*tables, current], []
    assert len(tables) >= 3 and all(len(set(t)) == 1 for t in tables)  # every row has its header's columns

    def no_fit(*args, **kwargs):
        raise AssertionError("a saved fit was fitted again")

    monkeypatch.setattr(stability, "_fit", no_fit)
    again = run_stability(tmp_path, quick=True, seeds=4, max_epochs=40, resume=True, verbose=False)
    pd.testing.assert_frame_equal(again.reset_index(drop=True), df.reset_index(drop=True), check_dtype=False)
    assert pd.read_csv(tmp_path / "agreement.csv").equals(agreement)
    assert pd.read_csv(tmp_path / "consensus.csv", dtype={"seeds_a": str, "seeds_b": str}).equals(consensus)
    with pytest.raises(ValueError, match="Resume with the settings"):
        run_stability(tmp_path, quick=True, seeds=4, resume=True, max_epochs=5, verbose=False)


def test_quick_consensus_runs_use_disjoint_seeds(shared_data, tmp_path, monkeypatch):
    from dataclasses import replace

    monkeypatch.setitem(stability.VARIANTS, "consensus", replace(VARIANTS["consensus"], restarts=2))
    df = run_stability(tmp_path, quick=True, max_epochs=40, methods="consensus", verbose=False)
    assert df["init_seed"].tolist() == [0, 2]
    saved = (tmp_path / "fits" / "kang" / "consensus_seed1.json").read_text()
    assert '"init_seed": 2' in saved
    assert len(pd.read_csv(tmp_path / "agreement.csv")) == 1


def test_halves_are_disjoint_and_keep_the_genes_expressed_in_both(shared_data):
    from scsparse.generic.benchmarks._stability._halves import split_halves

    adata = load_real_dataset("kang", quick=True)
    a, b = split_halves(adata, 0)
    again, _ = split_halves(adata, 0)
    other, _ = split_halves(adata, 1)
    assert not set(a.obs_names) & set(b.obs_names) and a.n_obs + b.n_obs == adata.n_obs
    assert list(a.obs_names) == list(again.obs_names) and list(a.obs_names) != list(other.obs_names)
    assert list(a.var_names) == list(b.var_names)
    for half in (a, b):
        assert (np.asarray((half.layers["counts"] != 0).sum(axis=0)).ravel() > 0).all()


def test_quick_run_with_resampled_cells(shared_data, tmp_path, monkeypatch):
    from scsparse.generic.benchmarks._stability import _halves as _stability_halves
    from scsparse.generic.benchmarks._stability._halves import HALVES_COLUMNS

    monkeypatch.setattr(stability, "HALVES_PEERS", ("NMF (KL)",))  # cNMF's 100 replicates are a full run's
    run_stability(tmp_path, quick=True, seeds=3, max_epochs=40, halves=1, verbose=False)
    halves = pd.read_csv(tmp_path / "halves.csv", dtype={"seeds_a": str, "seeds_b": str})
    assert list(halves.columns) == HALVES_COLUMNS and set(halves["draw"]) == {0}
    single = halves[halves["method"] == "SparseVAE"]
    # three seeds per half: three pairs within each half, nine across the halves
    assert (single["reading"] == "seeds").sum() == 6 and (single["reading"] == "halves").sum() == 9
    pooled = halves[halves["method"] == "SparseVAE (consensus)"]
    assert set(pooled["restarts"]) == {2, 3}
    # consensus pairs within a half use disjoint seeds; across halves every set has a partner
    within = pooled[pooled["reading"] == "seeds"]
    pairs = zip(within["seeds_a"], within["seeds_b"], strict=True)
    assert all(not set(a.split("-")) & set(b.split("-")) for a, b in pairs)
    assert (pooled[(pooled["reading"] == "halves") & (pooled["restarts"] == 3)]["seeds_a"] == "0-1-2").all()
    nmf = halves[halves["method"] == "NMF (KL)"]
    assert (nmf["reading"] == "seeds").sum() == 6 and (nmf["reading"] == "halves").sum() == 9
    assert halves["jaccard"].dropna().between(0, 1).all()  # NaN: two fits without a programme
    # each half's fits are stored apart from the whole data set's
    assert len(list((tmp_path / "fits" / "kang" / "halves" / "draw0a").glob("default_seed*.json"))) == 3
    summary = (tmp_path / "summary.md").read_text()
    assert "**Resampled cells** (1 random halving(s)" in summary
    assert "| SparseVAE (consensus), 3 restarts |" in summary and "| NMF (KL) |" in summary
    assert _stability_halves.MAX_CONSENSUS_DRAWS >= 2
    with pytest.raises(ValueError, match="halves must be a whole number"):
        run_stability(tmp_path, quick=True, halves=-1)


def test_halves_section_alone_fits_only_the_halves(shared_data, tmp_path, monkeypatch):
    monkeypatch.setattr(stability, "HALVES_PEERS", ())
    run_stability(tmp_path, quick=True, seeds=2, max_epochs=20, halves=1, sections="halves", verbose=False)
    assert not list((tmp_path / "fits" / "kang").glob("default_seed*.json"))  # no fit of all the cells
    assert len(list((tmp_path / "fits" / "kang" / "halves" / "draw0b").glob("default_seed*.json"))) == 2
    assert len(pd.read_csv(tmp_path / "results.csv")) == 0
    summary = (tmp_path / "summary.md").read_text()
    assert "**Resampled cells** (1 random halving(s)" in summary
    assert "- target: consensus fits of 2 restarts on the two halves" in summary
    with pytest.raises(ValueError, match="needs at least one random halving"):
        run_stability(tmp_path, quick=True, sections="halves", halves=0)
    with pytest.raises(ValueError, match="section"):
        run_stability(tmp_path, quick=True, sections="everything")


def test_halves_target_judges_against_cnmf_only_with_a_spread():
    def rows(method, restarts, values):
        return [{"dataset": "kang", "method": method, "restarts": restarts, "reading": "halves", "jaccard": v}
                for v in values]  # fmt: skip

    cnmf = rows("cNMF", 1, [0.27, 0.27, 0.28])
    one = pd.DataFrame(rows("SparseVAE (consensus)", 3, [0.35]) + cnmf)
    lines = stability_summary._halves_target_lines(one, quick=False)
    assert lines[0].endswith(": 0.35, not met") and "not judged (one pair" in lines[1]
    close = pd.DataFrame(rows("SparseVAE (consensus)", 3, [0.20, 0.36]) + cnmf)
    assert ": tie (" in stability_summary._halves_target_lines(close, quick=False)[1]
    far = pd.DataFrame(rows("SparseVAE (consensus)", 3, [0.80, 0.82]) + cnmf)
    lines = stability_summary._halves_target_lines(far, quick=False)
    assert lines[0].endswith(", met") and ": ahead (" in lines[1]
    assert stability_summary._halves_target_lines(pd.DataFrame(cnmf), quick=False) == []


def test_lambda0_ladder_climbs_to_the_model_rate_and_ends_there(counts_factory):
    """Dynamic posterior exploration: lambda0 rises geometrically over the first epochs; the fit ends at its own."""
    import warnings

    from scsparse.model import SparseVAE

    ladder = stability.Lambda0Ladder(start=1.5, n_epochs=4)
    ladder.end = 10.0
    rates = [ladder.rate(e) for e in range(6)]
    assert rates[0] == pytest.approx(1.5) and rates[4:] == [10.0, 10.0]
    assert all(a < b for a, b in zip(rates[:4], rates[1:5], strict=True))  # rising
    assert rates[2] == pytest.approx(np.sqrt(1.5 * 10.0))  # geometric: halfway is the geometric mean

    class Record(Callback):
        def __init__(self):
            self.seen = []

        def on_train_epoch_end(self, trainer, pl_module):
            self.seen.append(pl_module.module.prior.lambda0)

    adata = counts_factory(n_obs=80, n_vars=20)
    SparseVAE.setup_anndata(adata, layer="counts")
    model = SparseVAE(adata, n_latent=2, n_hidden=8, lambda0=8.0, seed=0)
    record = Record()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.train(max_epochs=3, batch_size=40, enable_progress_bar=False,
                    callbacks=[stability.Lambda0Ladder(start=2.0, n_epochs=4), record])  # fmt: skip
    assert record.seen[0] == pytest.approx(2.0) and record.seen[1] > 2.0 and record.seen[2] < 8.0
    assert model.module.prior.lambda0 == 8.0  # stopped before the top: put back at the model's own rate
    assert set(VARIANTS) >= {"nmf_start", "lambda0_ladder"}
    assert VARIANTS["nmf_start"].model_kwargs == {"mask_init": "nmf"}
    assert isinstance(VARIANTS["lambda0_ladder"].callbacks()[0], stability.Lambda0Ladder)


def test_quick_multistudy_run_compares_fits_block_by_block(shared_data, tmp_path):
    import json

    df = run_stability(tmp_path, quick=True, datasets="kang_studies", max_epochs=30, verbose=False)
    assert df["dataset"].tolist() == ["kang_studies", "kang_studies"] and np.isfinite(df["heldout_nll"]).all()
    saved = json.loads((tmp_path / "fits" / "kang_studies" / "default_seed0.json").read_text())
    # every programme and every active factor is in a block: the shared one or a study's
    blocks = {"shared", "control", "stimulated"}
    assert set(saved["scopes"]) == set(saved["programmes"]) and set(saved["scopes"].values()) <= blocks
    loadings = np.load(tmp_path / "fits" / "kang_studies" / "default_seed0.npy")
    assert len(saved["factor_scopes"]) == loadings.shape[1] and set(saved["factor_scopes"]) <= blocks
    agreement = pd.read_csv(tmp_path / "agreement.csv")
    assert len(agreement) == 1
    values = agreement.loc[0, ["jaccard", "top_overlap", "rbo", "loadings_corr"]].astype(float)
    assert ((values >= 0) & (values <= 1)).all()
    # read back, the saved fits carry their blocks into the comparison
    genes = load_real_dataset("kang_studies", quick=True).var_names.astype(str).tolist()
    fits = [stability._load_fit(tmp_path / "fits" / "kang_studies" / f"default_seed{s}", {}) for s in (0, 1)]
    sets = [f.programme_set(genes) for f in fits]
    assert all(x.scopes is not None and x.factor_scopes is not None for x in sets)
    again = programme_agreement(*sets, len(genes))
    assert again["jaccard"] == pytest.approx(agreement.loc[0, "jaccard"])


def test_consensus_read_off_single_fits_keeps_what_each_set_of_seeds_shares():
    """Seeds 0 and 1 find programmes A and B, seeds 2 and 3 find A and C: the consensus of {0, 1} against that of
    {2, 3} agrees on A only, and every programme each keeps is recovered by both of its restarts."""
    from scsparse.generic.benchmarks._stability._consensus import FitMask, consensus_agreement

    n_genes = 40
    pip_b, pip_c = np.zeros((n_genes, 3)), np.zeros((n_genes, 3))
    pip_b[:10, 0] = pip_c[:10, 0] = 0.95  # A
    pip_b[10:20, 1] = 0.95  # B
    pip_c[20:30, 1] = 0.95  # C
    weights = np.random.default_rng(0).normal(size=(n_genes, 3))
    fits = {
        0: FitMask(pip_b, weights),
        1: FitMask(pip_b, weights),
        2: FitMask(pip_c, weights),
        3: FitMask(pip_c, weights),
    }
    pairs, programmes = consensus_agreement("toy", "default", fits, n_genes)
    apart = pairs[(pairs["seeds_a"] == "0 1") & (pairs["seeds_b"] == "2 3")].iloc[0]
    assert apart["jaccard"] == 0.5 and apart["kept_a"] == apart["kept_b"] == 2
    # the single fits, read the same way: seeds 0 and 1 agree fully, 0 and 2 on A only
    singles = pairs[pairs["restarts"] == 1].set_index(["seeds_a", "seeds_b"])["jaccard"]
    assert singles["0", "1"] == 1.0 and singles["0", "2"] == 0.5
    mine = programmes[(programmes["restarts"] == 2) & (programmes["draw"] == apart["draw"])]
    assert mine["recovered_by"].tolist() == [2, 2, 2, 2]
    assert sorted(mine["best_jaccard"].tolist()) == [0.0, 0.0, 1.0, 1.0]  # A is found again, B and C are not
    # blocks: the same programmes in different blocks of two multi-study fits do not match
    blocked = {s: FitMask(f.pip, f.weights, ["shared", "stim", "stim"]) for s, f in fits.items()}
    blocked[2] = blocked[3] = FitMask(pip_c[:, [1, 0, 2]], weights, ["shared", "stim", "stim"])
    pairs, _ = consensus_agreement("toy", "default", blocked, n_genes)
    assert pairs.loc[(pairs["seeds_a"] == "0 1") & (pairs["seeds_b"] == "2 3"), "jaccard"].item() == 0.0
