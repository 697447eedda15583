"""tl.factor_diagnostics: broad programmes without an enriched gene set are flagged, focused ones are not."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import scsparse

_spec = importlib.util.spec_from_file_location("_planted_diag", Path(__file__).with_name("test_enrich.py"))
planted = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(planted)
KEY = planted.KEY


def _broad_factor_1(adata):
    """factor_1 now includes 60 of the 80 genes (a broad programme); factor_0 keeps its 20."""
    pip = np.asarray(adata.varm[f"{KEY}_pip"]).copy()
    pip[20:80, 1] = 0.9
    adata.varm[f"{KEY}_pip"] = pip
    return adata


def test_broad_unenriched_factor_is_flagged():
    adata = _broad_factor_1(planted.planted_adata())
    sets = {"PLANTED_UP": planted.UP, "PLANTED_DOWN": planted.DN}  # nothing of factor_1's genes
    scsparse.tl.enrich(adata, sets, key=KEY, min_size=3)
    diag = scsparse.tl.factor_diagnostics(adata, key=KEY, broad_fraction=0.3).set_index("factor")
    assert diag.loc["factor_0", "n_genes"] == 20 and diag.loc["factor_1", "n_genes"] == 60
    assert diag.loc["factor_1", "gene_fraction"] == pytest.approx(60 / 80)
    assert diag.loc["factor_0", "n_anchor"] == 20 and diag.loc["factor_1", "n_anchor"] == 60
    assert bool(diag.loc["factor_0", "enriched"]) and not diag.loc["factor_0", "broad"]
    assert (
        diag.loc["factor_0", "best_term"] in {"PLANTED_UP", "PLANTED_DOWN"}
        and diag.loc["factor_0", "best_p_adj"] < 1e-6
    )
    assert diag.loc["factor_0", "diagnostic"] == "ok" and not diag.loc["factor_0", "broad_unenriched"]
    assert diag.loc["factor_1", "broad"] and not bool(diag.loc["factor_1", "enriched"])
    assert diag.loc["factor_1", "broad_unenriched"] and diag.loc["factor_1", "diagnostic"] == "broad, no gene set"
    # a looser size rule: factor_1 is no longer broad, only unenriched
    loose = scsparse.tl.factor_diagnostics(adata, key=KEY, broad_fraction=0.8).set_index("factor")
    assert loose.loc["factor_1", "diagnostic"] == "no gene set" and not loose["broad_unenriched"].any()


def test_broad_but_enriched_and_without_enrichment():
    adata = _broad_factor_1(planted.planted_adata())
    diag = scsparse.tl.factor_diagnostics(adata, key=KEY, broad_fraction=0.3)  # no enrichment: nothing to judge by
    assert diag["enriched"].isna().all() and not diag["broad_unenriched"].any()
    assert list(diag["diagnostic"]) == ["ok", "broad"]
    table = pd.DataFrame(
        {"factor": ["factor_1"], "direction": ["positive"], "term": ["SOMETHING"], "p_adj": [1e-5], "overlap": [9]}
    )
    diag = scsparse.tl.factor_diagnostics(adata, key=KEY, enrichment=table, broad_fraction=0.3).set_index("factor")
    assert not diag.loc["factor_1", "broad_unenriched"] and diag.loc["factor_1", "best_term"] == "SOMETHING"
    assert diag.loc["factor_0", "diagnostic"] == "no gene set"  # untested factor: nothing significant
    with pytest.raises(ValueError, match="broad_fraction"):
        scsparse.tl.factor_diagnostics(adata, key=KEY, broad_fraction=0)


def test_report_table_and_text_explain_the_flag(tmp_path):
    adata = _broad_factor_1(planted.planted_adata())
    scsparse.tl.enrich(adata, {"PLANTED_UP": planted.UP, "PLANTED_DOWN": planted.DN}, key=KEY, min_size=3)
    diag = scsparse.tl.factor_diagnostics(adata, key=KEY, broad_fraction=0.3)
    assert diag.attrs["broad_fraction"] == 0.3
    text = "\n".join(scsparse.tl.diagnostics_report(diag, adata.n_vars))
    assert "more than 30% of the 80 model genes" in text
    assert "**factor_1**: 60 of 80 genes (75%) with p* > 0.5, 60 anchor genes; no gene set" in text
    assert text.count("**factor_") == 1  # only the flagged factor is listed
    # without any gene-set test there is no flag to explain
    untested = scsparse.tl.factor_diagnostics(adata, key=KEY, enrichment=pd.DataFrame(), broad_fraction=0.3)
    assert untested["enriched"].isna().all() and scsparse.tl.diagnostics_report(untested, adata.n_vars) == []

    report = scsparse.tl.fit_report(adata, key=KEY, diagnostics=diag, metrics=["- extra: 1"], path=tmp_path / "r.md")
    assert (tmp_path / "r.md").read_text() == report
    table = report[report.index("| factor |") :].split("\n\n")[0].splitlines()
    assert table[0] == "| factor | n_genes | gene_fraction | eta | diagnostic |"
    assert table[2].startswith("| factor_0 | 20 | 0.25 |") and table[2].endswith("| ok |")
    assert table[3].startswith("| factor_1 | 60 | 0.75 |") and table[3].endswith("| broad, no gene set |")
    assert "- extra: 1" in report and "### Broad factors without a gene set" in report
    assert "W is not sparse yet" not in report  # median programme: 40 of 80 genes


def test_default_rule():
    adata = _broad_factor_1(planted.planted_adata())  # factor_0: 20 of 80 genes (25%), factor_1: 75%
    assert scsparse.tl.BROAD_FRACTION == 0.2
    diag = scsparse.tl.factor_diagnostics(adata, key=KEY)
    assert diag["broad"].tolist() == [True, True] and diag.attrs["broad_fraction"] == 0.2


def test_library_size_correlation():
    from scipy.stats import spearmanr

    adata = planted.planted_adata()
    diag = scsparse.tl.factor_diagnostics(adata, key=KEY).set_index("factor")
    lib = np.log1p(np.asarray(adata.layers["counts"].sum(1)).ravel())
    z = adata.obsm[f"X_{KEY}"]
    for k, f in enumerate(["factor_0", "factor_1"]):
        assert diag.loc[f, "library_size_corr"] == pytest.approx(spearmanr(z[:, k], lib)[0])
    # factor_1 drives 10 genes up: cells high in it have more counts
    assert diag.loc["factor_1", "library_size_corr"] > 0.2
    adata.X = np.log1p(adata.layers["counts"].toarray())  # not counts: no library size
    del adata.uns[KEY]["setup_args"]
    assert scsparse.tl.factor_diagnostics(adata, key=KEY)["library_size_corr"].isna().all()


def test_overlapping_factors_are_flagged():
    adata = planted.planted_adata()  # factor_0: genes 0-19, factor_1: genes 20-29, independent activities
    diag = scsparse.tl.factor_diagnostics(adata, key=KEY, broad_fraction=0.5).set_index("factor")
    z = adata.obsm[f"X_{KEY}"]
    assert (diag["gene_jaccard"] == 0).all() and (diag["overlap_factor"] == "").all()
    assert diag.loc["factor_0", "corr_factor"] == "factor_1"
    assert diag.loc["factor_0", "activity_corr"] == pytest.approx(np.corrcoef(z[:, 0], z[:, 1])[0, 1])
    assert not diag["overlaps"].any() and (diag["diagnostic"] == "ok").all()
    assert diag.attrs["overlap_fraction"] == scsparse.tl.OVERLAP_FRACTION == 0.5

    merged = planted.planted_adata()
    pip = np.asarray(merged.varm[f"{KEY}_pip"]).copy()
    pip[:18, 1] = 0.99  # factor_1 now also holds 18 of factor_0's 20 genes: Jaccard 18 / 30
    merged.varm[f"{KEY}_pip"] = pip
    diag = scsparse.tl.factor_diagnostics(merged, key=KEY, broad_fraction=0.5).set_index("factor")
    assert diag["gene_jaccard"].tolist() == pytest.approx([0.6, 0.6]) and diag["overlaps"].all()
    assert diag.loc["factor_0", "diagnostic"] == "overlaps factor_1"
    assert diag.loc["factor_1", "diagnostic"] == "overlaps factor_0"
    strict = scsparse.tl.factor_diagnostics(merged, key=KEY, broad_fraction=0.5, overlap_fraction=0.8)
    assert not strict["overlaps"].any()
    report = "\n".join(scsparse.tl.diagnostics_report(diag.reset_index(), merged.n_vars))
    assert "Overlapping factors" in report and "factor_0 and factor_1." in report
    assert "Overlapping" not in "\n".join(scsparse.tl.diagnostics_report(strict, merged.n_vars))

    # disjoint genes, one activity mirroring the other: reported, not flagged (real programmes co-vary)
    correlated = planted.planted_adata()
    rng = np.random.default_rng(1)
    z = correlated.obsm[f"X_{KEY}"].copy()
    z[:, 1] = -z[:, 0] + 0.2 * rng.normal(size=len(z))
    correlated.obsm[f"X_{KEY}"] = z
    diag = scsparse.tl.factor_diagnostics(correlated, key=KEY, broad_fraction=0.5).set_index("factor")
    assert diag.loc["factor_1", "activity_corr"] < -0.9 and diag.loc["factor_1", "corr_factor"] == "factor_0"
    assert not diag["overlaps"].any()
    with pytest.raises(ValueError, match="overlap_fraction"):
        scsparse.tl.factor_diagnostics(correlated, key=KEY, overlap_fraction=1.5)


def test_overlap_of_a_specific_factor_is_judged_on_its_own_study():
    from test_tl_multistudy import KEY as MS_KEY
    from test_tl_multistudy import planted_multistudy

    adata = planted_multistudy()
    in_b = (adata.obs["study"] == "stim lab").to_numpy()
    shared = adata.obsm[f"X_{MS_KEY}_shared"].copy()
    shared[~in_b, 0] = -2.0  # over all cells the shared factor now tracks the study, and so the specific block
    adata.obsm[f"X_{MS_KEY}_shared"] = shared
    spec = adata.obsm[f"X_{MS_KEY}_specific"][:, 1]
    assert abs(np.corrcoef(shared[:, 0], spec)[0, 1]) > 0.5  # what an all-cells correlation would report
    diag = scsparse.tl.factor_diagnostics(adata, key=MS_KEY).set_index("factor")
    within = np.corrcoef(shared[in_b, 0], spec[in_b])[0, 1]
    assert diag.loc["stim lab_0", "activity_corr"] == pytest.approx(within) and abs(within) < 0.3
    assert not diag["overlaps"].any()


def test_a_specific_factor_constant_over_its_study_is_a_study_offset():
    from test_tl_multistudy import KEY as MS_KEY
    from test_tl_multistudy import planted_multistudy

    adata = planted_multistudy()
    in_b = (adata.obs["study"] == "stim lab").to_numpy()
    spec = adata.obsm[f"X_{MS_KEY}_specific"].copy()
    base = scsparse.tl.factor_diagnostics(adata, key=MS_KEY).set_index("factor")
    z = spec[in_b, 1]
    assert base.loc["stim lab_0", "study_shift"] == pytest.approx(z.mean() / z.std())
    assert np.isnan(base.loc["shared_0", "study_shift"]) and not base.loc["shared_0", "shifted"]
    # the specific factor moved to -1.5 in every cell of its study, with little spread: a study-wide shift
    spec[in_b, 1] = -1.5 + 0.2 * (z - z.mean()) / z.std()
    adata.obsm[f"X_{MS_KEY}_specific"] = spec
    diag = scsparse.tl.factor_diagnostics(adata, key=MS_KEY).set_index("factor")
    assert diag.loc["stim lab_0", "study_shift"] == pytest.approx(-7.5)
    assert diag.loc["stim lab_0", "shifted"] and "study-wide shift" in diag.loc["stim lab_0", "diagnostic"]
    assert diag.attrs["study_shift"] == scsparse.tl.STUDY_SHIFT
    # the threshold decides
    assert (
        not scsparse.tl.factor_diagnostics(adata, key=MS_KEY, study_shift=8.0)
        .set_index("factor")
        .loc["stim lab_0", "shifted"]
    )
    with pytest.raises(ValueError, match="study_shift"):
        scsparse.tl.factor_diagnostics(adata, key=MS_KEY, study_shift=0)
    # a single-study fit has no study-specific factors
    single = planted.planted_adata()
    table = scsparse.tl.factor_diagnostics(single, key=KEY)
    assert table["study_shift"].isna().all() and not table["shifted"].any()
