"""Tests of ``scsparse bench guided``: the gene sets, the scoring, ties and the quick run of every method."""

from __future__ import annotations

import importlib.util

import numpy as np
import pandas as pd
import pytest
from anndata import AnnData

from scsparse.generic.benchmarks import BENCHMARKS
from scsparse.generic.benchmarks._guided._methods import NOT_INSTALLED, GuidedFit
from scsparse.generic.benchmarks._guided._run import (
    DECOY,
    IFN_SET,
    MARKER_SETS,
    RESULT_COLUMNS,
    guided_data,
    run_guided,
    score_fit,
)
from scsparse.generic.benchmarks._guided._summary import compare


def test_registered_and_rejects_bad_arguments(tmp_path):
    assert BENCHMARKS["guided"] is run_guided
    with pytest.raises(ValueError, match="Unknown method"):
        run_guided(tmp_path, quick=True, methods="Spectra,nowhere")
    with pytest.raises(ValueError, match="seeds"):
        run_guided(tmp_path, quick=True, seeds=0)


def test_gene_sets_are_in_the_data_and_the_decoy_and_held_out_genes_are_apart():
    adata, sets, heldout = guided_data()
    genes = set(adata.var_names)
    assert list(sets) == [IFN_SET, *MARKER_SETS, DECOY]
    assert all(set(members) <= genes and len(members) >= 5 for members in sets.values())
    assert all(len(sets[name]) == len(MARKER_SETS[name]) for name in MARKER_SETS)  # every marker is in the data
    given = set().union(*sets.values())
    assert heldout and set(heldout) <= genes and not set(heldout) & given
    assert not set(sets[DECOY]) & set().union(*(sets[n] for n in sets if n != DECOY))
    assert guided_data()[1][DECOY] == sets[DECOY]  # seeded


def _toy():
    rng = np.random.default_rng(0)
    genes = [f"g{j}" for j in range(30)]
    obs = pd.DataFrame(
        {"condition": ["control"] * 20 + ["stimulated"] * 20, "cell_type": ["a", "b"] * 20},
        index=[f"c{i}" for i in range(40)],
    )
    adata = AnnData(X=np.zeros((40, 30)), obs=obs, var=pd.DataFrame(index=genes))
    sets = {IFN_SET: genes[:6], "MARKERS_B": genes[6:12], DECOY: genes[20:26]}
    heldout = genes[12:16]
    stim = np.r_[np.zeros(20), np.ones(20)] + 0.1 * rng.normal(size=40)
    cell = np.tile([0.0, 1.0], 20)
    return adata, sets, heldout, stim, cell


def test_score_reads_the_tied_programme_its_added_genes_and_the_decoy():
    adata, sets, heldout, stim, cell = _toy()
    fit = GuidedFit(
        "guided",
        np.c_[stim, cell],
        programmes={"ifn": [*sets[IFN_SET][:4], "g12", "g13", "g29"], "b": sets["MARKERS_B"], "decoy": []},
        activity={"ifn": -stim, "b": cell, "decoy": np.zeros(40)},
        tied={IFN_SET: "ifn", "MARKERS_B": "b", DECOY: "decoy"},
        off={IFN_SET: False, "MARKERS_B": False, DECOY: True},
    )
    scores, programmes = score_fit(fit, adata, sets, heldout, seed=0)
    assert scores["ifn_auroc"] == 1.0  # either direction
    assert scores["ifn_found"] == 1.0 and scores["ifn_retention"] == pytest.approx(4 / 6)
    assert scores["ifn_added"] == 3 and scores["ifn_added_heldout"] == 2
    assert scores["ifn_added_precision"] == pytest.approx(2 / 3) and scores["ifn_heldout_p"] < 0.1
    assert scores["markers_kept"] == 1 and scores["decoy_off"] == 1.0 and scores["decoy_jaccard"] == 0.0
    assert scores["accuracy"] == 1.0 and programmes[DECOY] == []
    # a fit that ties nothing: the best-overlapping programme stands for the set, and it cannot flag the decoy
    free = GuidedFit("free", fit.representation, fit.programmes, fit.activity, dict.fromkeys(sets))
    free.programmes = {"x": sets[DECOY][:5], "y": sets[IFN_SET]}
    free.activity = {"x": cell, "y": cell}
    scores, programmes = score_fit(free, adata, sets, heldout, seed=0)
    assert programmes[IFN_SET] == sets[IFN_SET] and scores["ifn_auroc"] < 0.9 and scores["ifn_found"] == 0.0
    assert np.isnan(scores["decoy_off"]) and scores["decoy_jaccard"] == pytest.approx(5 / 6)


def test_compare_writes_differences_inside_the_seeds_spread_as_ties():
    assert compare({"a": [1.0, 3.0], "b": [2.5, 2.5]}, higher=True) == {"b": "best", "a": "tie"}
    assert compare({"a": [10.0], "b": [12.0]}, higher=False) == {"a": "best", "b": "behind"}
    assert compare({"a": [np.nan]}, higher=True) == {}


def test_quick_run_fits_every_installed_method(tmp_path):
    df = run_guided(tmp_path, quick=True, verbose=False)
    assert list(df.columns) == RESULT_COLUMNS
    installed = {"Spectra": importlib.util.find_spec("Spectra"), "expiMap": importlib.util.find_spec("scarches")}
    for method, group in df.groupby("method", sort=False):
        if method in NOT_INSTALLED or (method in installed and installed[method] is None):
            assert len(group) == 1 and group["status"].iloc[0].startswith("not installed")
        else:
            assert len(group) == 2 and (group["status"] == "ok").all(), method
            assert group["ifn_auroc"].between(0.5, 1.0).all() and group["accuracy"].between(0, 1).all()
    guided = df[df["method"] == "SparseVAE (guided)"]
    assert guided["decoy_off"].notna().all() and df[df["method"] == "SparseVAE (unguided)"]["decoy_off"].isna().all()
    summary = (tmp_path / "summary.md").read_text()
    assert "| SparseVAE (guided) |" in summary and "not installed" in summary and "ties" in summary
    assert "not assessed (quick smoke run)" in summary
    agreement = pd.read_csv(tmp_path / "agreement.csv")
    assert set(agreement["gene_set"]) == {IFN_SET, *MARKER_SETS, DECOY}
    assert (tmp_path / "programmes.json").is_file()


def test_importing_expimap_leaves_the_print_options_alone():
    import subprocess
    import sys

    code = (
        "import numpy as np, torch\n"
        "from scsparse.generic.benchmarks._guided._methods import _import_expimap\n"
        "from scsparse.generic.benchmarks._programme_methods import MethodUnavailable\n"
        "before = (np.get_printoptions(), torch._tensor_str.PRINT_OPTS.precision)\n"
        "try:\n"
        "    _import_expimap()\n"
        "except MethodUnavailable:\n"
        "    print('unavailable')\n"
        "assert (np.get_printoptions(), torch._tensor_str.PRINT_OPTS.precision) == before, np.get_printoptions()\n"
        "print(repr(np.array([1 / 3])))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    if "unavailable" in out.stdout:
        pytest.skip("scarches is not installed")
    assert out.returncode == 0, out.stderr[-2000:]
    assert "0.33333333" in out.stdout  # numpy's default precision, not scArches' 2 digits
