from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import subprocess  # noqa: E402
import sys  # noqa: E402

import anndata as ad  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import scipy.sparse as sp  # noqa: E402

import scsparse  # noqa: E402
from scsparse.cli import build_parser, main  # noqa: E402


@pytest.fixture
def input_file(counts_factory, tmp_path):
    path = tmp_path / "in.h5ad"
    adata = counts_factory(n_obs=150)
    # an existing embedding: `fit --figures` draws on it rather than computing a UMAP (slow to compile)
    adata.obsm["X_umap"] = np.random.default_rng(0).normal(size=(adata.n_obs, 2))
    adata.write_h5ad(path)
    return path


_KANG_PBMC = scsparse.data.kang_pbmc
#: Options that let two epochs on 150 cells keep factors: more optimiser steps, W started deeper in the slab.
RESCUE = ["--batch-size", "16", "--w-init", "1.0"]


def _kang_subset() -> ad.AnnData:
    """300 cells (all cell types, both conditions) x 200 genes of the embedded data, for a fast demo."""
    full = _KANG_PBMC()
    rng = np.random.default_rng(0)
    cells = np.sort(rng.choice(full.n_obs, 300, replace=False))
    sub = full[cells]
    total = np.asarray(sub.layers["counts"].sum(0)).ravel()
    genes = np.sort(np.argsort(-total)[:200])
    return sub[:, genes].copy()


def test_version_and_help(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert scsparse.__version__ in capsys.readouterr().out
    with pytest.raises(SystemExit) as info:
        main([])
    assert info.value.code == 2
    args = build_parser().parse_args(["fit", "a.h5ad", "--out", "b.h5ad"])
    assert (args.n_latent, args.gene_likelihood, args.key_added, args.layer) == (20, "nb", None, None)
    assert args.study_key is None and args.n_latent_specific is None


def test_fit_writes_results(input_file, tmp_path, capsys):
    out = tmp_path / "sub" / "out.h5ad"
    figures = tmp_path / "figs"
    code = main(
        [
            "fit", str(input_file), "--out", str(out), "--layer", "counts", "--batch-key", "batch",
            "--n-latent", "3", "--max-epochs", "2", "--seed", "4", "--key-added", "svae", "--figures", str(figures),
            "--groupby", "batch", *RESCUE,
        ]
    )  # fmt: skip
    assert code == 0
    back = ad.read_h5ad(out)
    assert back.obsm["X_svae"].shape == (150, 3)
    assert back.varm["svae_W"].shape == back.varm["svae_pip"].shape == (40, 3)
    assert back.uns["svae"]["seed"] == 4
    assert not any(k.startswith("_scvi") for k in back.uns)
    assert "wrote" in capsys.readouterr().out
    if len(back.uns["svae"]["active_factors"]):
        assert (figures / "loadings_heatmap.png").stat().st_size > 1000
        assert (figures / "factors_umap.png").stat().st_size > 1000
        assert (figures / "factor_responses.png").stat().st_size > 1000
        report = (figures / "factors.md").read_text()
        assert all(f"**{f}**" in report for f in back.uns["svae"]["active_factors"]) and "Batch" in report
        assert "## Settings" in report and "- seed: 4" in report and "`batch_highest`" in report
        assert "- `loadings_heatmap.png`: |W| of the top genes" in report


def test_fit_that_keeps_no_factor_exits_3_and_the_rescue_options_keep_factors(input_file, tmp_path, capsys):
    out = tmp_path / "out.h5ad"
    args = ["fit", str(input_file), "--out", str(out), "--layer", "counts", "--n-latent", "3", "--max-epochs", "2"]
    assert main(args) == 3
    captured = capsys.readouterr()
    assert "no factor was kept" in captured.err and "--batch-size" in captured.err and "--w-init 1.0" in captured.err
    assert "\r" not in captured.out  # no progress bar when stdout is not a terminal
    assert ad.read_h5ad(out).uns["sparsevae"]["active_factors"].size == 0  # written all the same
    rescue = [*RESCUE, "--lr", "0.01", "--n-hidden", "32", "--mask-init", "constant", "--quiet", "--overwrite"]
    rescue.append("--exact-zeros")
    assert main([*args, *rescue]) == 0
    assert capsys.readouterr().out == ""
    uns = ad.read_h5ad(out).uns["sparsevae"]
    assert len(uns["active_factors"]) > 0
    assert int(uns["train_params"]["batch_size"]) == 16 and int(uns["params"]["n_hidden"]) == 32
    assert float(uns["params"]["decoder_kwargs"]["w_init"]) == 1.0
    assert bool(uns["train_params"]["plan_kwargs"]["exact_zeros"])
    for bad in (["--batch-size", "1"], ["--lr", "0"], ["--w-init", "-1"], ["--key-added", ""]):
        with pytest.raises(SystemExit):
            main([*args, *bad])


def test_fit_input_errors(input_file, tmp_path, capsys):
    out = tmp_path / "out.h5ad"
    # a missing layer: one clean line naming it, exit status 2
    assert main(["fit", str(input_file), "--out", str(out), "--layer", "raw_counts", "--max-epochs", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("scsparse: error: ") and "'raw_counts'" in err and "leave out --layer" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not out.exists()
    # a missing input file
    assert main(["fit", str(tmp_path / "missing.h5ad"), "--out", str(out)]) == 2
    assert "missing.h5ad" in capsys.readouterr().err
    # an existing output file is not replaced without --overwrite
    out.write_text("keep me")
    assert main(["fit", str(input_file), "--out", str(out), "--layer", "counts", "--max-epochs", "1"]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert out.read_text() == "keep me"
    # a bad batch column
    out.unlink()
    assert main(["fit", str(input_file), "--out", str(out), "--batch-key", "nope", "--max-epochs", "1"]) == 2
    assert "nope" in capsys.readouterr().err
    # --groupby: only with --figures, and a missing column is named before training
    assert main(["fit", str(input_file), "--out", str(out), "--groupby", "batch"]) == 2
    assert "add --figures" in capsys.readouterr().err
    args = ["fit", str(input_file), "--out", str(out), "--figures", str(tmp_path / "f"), "--groupby", "cell_typ"]
    assert main(args) == 2
    assert "cell_typ" in capsys.readouterr().err and not out.exists()
    # usage errors are argparse's
    with pytest.raises(SystemExit) as info:
        main(["fit", str(input_file), "--out", str(out), "--gene-likelihood", "gamma"])
    assert info.value.code == 2


def test_fit_restarts_writes_a_consensus(input_file, tmp_path, capsys):
    out = tmp_path / "out.h5ad"
    args = ["fit", str(input_file), "--out", str(out), "--layer", "counts", "--n-latent", "3", "--max-epochs", "2"]
    assert main([*args, *RESCUE, "--max-epochs", "30", "--restarts", "2", "--seed", "7"]) == 0
    printed = capsys.readouterr().out
    assert "consensus of 2 restarts" in printed
    uns = ad.read_h5ad(out).uns["sparsevae"]
    assert list(uns["consensus_restarts"]["seed"]) == [7, 8] and int(uns["consensus_params"]["n_restarts"]) == 2
    assert "reproducibility" in pd.DataFrame(uns["consensus"]).columns
    # a multi-study consensus: the shared and each study's factors, matched apart
    multi = [*args, *RESCUE, "--max-epochs", "30", "--restarts", "2", "--study-key", "batch", "--overwrite"]
    assert main(multi) == 0
    assert "consensus of 2 restarts" in capsys.readouterr().out
    uns = ad.read_h5ad(out).uns["mssvae"]
    assert list(uns["consensus_restarts"]["seed"]) == [0, 1]
    table = pd.DataFrame(uns["consensus"])
    assert table.loc[table["kept"].astype(bool), "factor"].tolist() == list(uns["factor_names"])


def test_fit_multistudy(counts_factory, tmp_path, capsys):
    adata = counts_factory(n_obs=150)
    adata.obs["study"] = np.where(np.arange(150) < 80, "ctrl", "stim")
    adata.obsm["X_umap"] = np.random.default_rng(0).normal(size=(150, 2))
    path, out, figures = tmp_path / "in.h5ad", tmp_path / "out.h5ad", tmp_path / "figs"
    adata.write_h5ad(path)
    code = main(
        [
            "fit", str(path), "--out", str(out), "--layer", "counts", "--study-key", "study", "--n-latent", "3",
            "--n-latent-specific", "stim=2", "--max-epochs", "2", "--figures", str(figures), *RESCUE,
        ]
    )  # fmt: skip
    assert code == 0
    back = ad.read_h5ad(out)
    assert back.obsm["X_mssvae_shared"].shape == (150, 3) and back.obsm["X_mssvae_specific"].shape == (150, 2)
    assert list(back.uns["mssvae"]["specific_factors"]) == ["stim_0", "stim_1"]
    for name in ("mssvae_W_shared", "mssvae_pip_stim", "mssvae_W_ctrl"):
        assert name in back.varm
    printed = capsys.readouterr().out
    assert "of 5 in" in printed and "varm['mssvae_pip_stim']" in printed
    assert (figures / "multistudy_overview.png").stat().st_size > 1000
    # option errors: one clean line, or argparse's usage error
    assert main(["fit", str(path), "--out", str(tmp_path / "o2.h5ad"), "--n-latent-specific", "2"]) == 2
    assert "--study-key" in capsys.readouterr().err
    for bad in ("stim=x", "=2", "stim=1,stim=2", "-1"):
        with pytest.raises(SystemExit):
            main(
                [
                    "fit",
                    str(path),
                    "--out",
                    str(tmp_path / "o2.h5ad"),
                    "--study-key",
                    "study",
                    "--n-latent-specific",
                    bad,
                ]
            )
    args = build_parser().parse_args(["fit", "a", "--out", "b", "--n-latent-specific", "IFN-b stim=3,ctrl=0"])
    assert args.n_latent_specific == {"IFN-b stim": 3, "ctrl": 0}


def test_fit_figures_multistudy_umap_on_active_shared_factors(counts_factory, tmp_path):
    from scsparse._cli_output import fit_figures

    adata = counts_factory(n_obs=150)
    adata.obs["study"] = np.where(np.arange(150) < 80, "ctrl", "stim")
    # W started deep in the slab: factors are active after a few epochs
    model = scsparse.tl.multistudy_sparse_vae(
        adata, "study", layer="counts", n_latent_shared=3, n_latent_specific=1, max_epochs=3,
        model_kwargs={"n_hidden": 16, "decoder_kwargs": {"w_init": 1.0}}, train_kwargs={"enable_progress_bar": False},
    )  # fmt: skip
    uns = adata.uns["mssvae"]
    shared_active = [f for f in uns["active_factors"] if f in set(uns["shared_factors"])]
    assert shared_active
    # the user's own neighbour graph: the figures' UMAP gets a graph of its own
    graph = {"params": {"n_neighbors": 10, "method": "umap"}}
    adata.uns["neighbors"] = graph
    adata.obsp["connectivities"] = connectivities = sp.identity(150, format="csr")
    written = fit_figures(adata, "mssvae", tmp_path, seed=0)  # without the model: no traversals
    assert [w.name for w in written] == [
        "multistudy_overview.png",
        "loadings_heatmap.png",
        "factors_umap.png",
        "factors.md",
    ]
    assert all(w.stat().st_size > 1000 for w in written[:-1])
    report = written[-1].read_text()
    assert all(f"- **{f}**: genes up with it:" in report for f in uns["active_factors"])
    assert adata.obsm["X_mssvae_active"].shape == (150, len(shared_active))
    names = list(uns["shared_factors"])
    np.testing.assert_array_equal(
        adata.obsm["X_mssvae_active"], adata.obsm["X_mssvae_shared"][:, [names.index(f) for f in shared_active]]
    )
    assert "X_umap" not in adata.obsm and adata.obsm["X_mssvae_umap"].shape == (150, 2)
    assert adata.uns["neighbors"] is graph and adata.obsp["connectivities"] is connectivities
    assert adata.uns["mssvae_neighbors"]["params"]["use_rep"] == "X_mssvae_active"
    with_model = fit_figures(adata, "mssvae", tmp_path / "with_model", seed=0, model=model)
    assert with_model[-2].name == "factor_responses.png" and with_model[-2].stat().st_size > 1000


def test_n_threads_applies_to_the_fit_and_is_restored(monkeypatch, input_file, tmp_path, capsys):
    import torch

    from scsparse import tl
    from scsparse._checks import InvalidInputError
    from scsparse._threads import torch_threads

    seen = []

    def fake_fit(adata, **kwargs):
        seen.append(torch.get_num_threads())
        raise InvalidInputError("stop here")

    monkeypatch.setattr(tl, "sparse_vae", fake_fit)
    before = torch.get_num_threads()
    target = 1 if before != 1 else 2
    out = tmp_path / "out.h5ad"
    assert main(["fit", str(input_file), "--out", str(out), "--n-threads", str(target)]) == 2
    assert "stop here" in capsys.readouterr().err
    assert seen == [target] and torch.get_num_threads() == before
    assert main(["fit", str(input_file), "--out", str(out)]) == 2
    assert seen[-1] == before  # without the option torch's setting is left alone
    with pytest.raises(SystemExit):
        main(["fit", str(input_file), "--out", str(out), "--n-threads", "0"])
    with torch_threads(None):  # None: leave the setting, but restore it after code that changes it
        torch.set_num_threads(target)
    assert torch.get_num_threads() == before
    for bad in (0, 1.5, True):
        with pytest.raises(ValueError, match="positive integer"), torch_threads(bad):
            pass


def test_bench_dispatch(monkeypatch, tmp_path, capsys):
    benchmarks = pytest.importorskip("scsparse.generic.benchmarks")
    calls = {}

    def fake_run(name, **options):
        calls[name] = options
        return pd.DataFrame({"x": [1, 2]})

    monkeypatch.setattr(benchmarks, "run", fake_run)
    name = "synthetic"
    code = main(["bench", name, "--rho", "0.2", "0.6", "--seeds", "2", "--out", str(tmp_path), "--quick"])
    assert code == 0
    assert calls[name] == {
        "out": tmp_path,
        "seeds": 2,
        "rho": [0.2, 0.6],
        "device": None,
        "quick": True,
        "max_epochs": None,
        "n_threads": None,
        "datasets": None,
        "methods": None,
        "cells": None,
        "max_prior_cells": None,
        "resume": None,
        "halves": None,
        "sections": None,
    }
    assert "2 result row(s)" in capsys.readouterr().out
    assert main(["bench", "programme_size", "--cells", "2000,10000", "--out", str(tmp_path)]) == 0
    assert calls["programme_size"]["cells"] == [2000, 10000]
    assert main(["bench", "stability", "--halves", "2", "--out", str(tmp_path)]) == 0
    assert calls["stability"]["halves"] == 2
    with pytest.raises(SystemExit):
        main(["bench", "stability", "--halves", "-1"])
    assert main(["bench", "programme_size", "--cells", "2000,lots"]) == 2
    assert "--cells takes positive whole numbers" in capsys.readouterr().err
    assert main(["bench", "programme_size", "--max-prior-cells", "all", "--out", str(tmp_path)]) == 0
    assert calls["programme_size"]["max_prior_cells"] == "all"
    assert main(["bench", "programme_size", "--max-prior-cells", "2000", "--out", str(tmp_path)]) == 0
    assert calls["programme_size"]["max_prior_cells"] == 2000
    with pytest.raises(SystemExit):
        main(["bench", "programme_size", "--max-prior-cells", "many"])
    assert "expected a positive integer, got 'many'" in capsys.readouterr().err
    assert main(["bench", "synthetic", "--max-prior-cells", "2000"]) == 2
    assert "does not take --max-prior-cells" in capsys.readouterr().err
    assert main(["bench", "peers", "--datasets", "kang,pbmc3k", "--methods", "PCA", "--out", str(tmp_path)]) == 0
    assert calls["peers"]["datasets"] == "kang,pbmc3k" and calls["peers"]["methods"] == "PCA"
    assert calls["peers"]["resume"] is None
    assert main(["bench", "peers", "--resume", "--out", str(tmp_path)]) == 0
    assert calls["peers"]["resume"] is True
    assert main(["bench", "synthetic", "--datasets", "kang"]) == 2
    assert "does not take --datasets" in capsys.readouterr().err
    assert main(["bench", name, "--n-threads", "2", "--out", str(tmp_path)]) == 0
    assert calls[name]["n_threads"] == 2
    with pytest.raises(SystemExit) as info:
        main(["bench", "no-such-benchmark"])
    assert info.value.code == 2
    assert main(["bench", "multistudy", "--rho", "0.2"]) == 2
    assert "does not take --rho" in capsys.readouterr().err


_WITHOUT_BENCH_EXTRA = "import sys; sys.modules['threadpoolctl'] = None; "  # as if the 'bench' extra were missing


def test_bench_without_the_bench_extra_says_how_to_install_it(tmp_path):
    """Without the 'bench' extra the benchmarks refuse to load with the command that installs it, and ``scsparse
    bench`` exits with it as a usage error before writing anything."""
    code = _WITHOUT_BENCH_EXTRA + "import scsparse.generic.benchmarks"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 1
    assert "ImportError: scsparse's benchmarks need threadpoolctl" in run.stderr
    assert "pip install 'scsparse[bench]'" in run.stderr
    out = tmp_path / "bench_out"
    code = (
        _WITHOUT_BENCH_EXTRA
        + f"from scsparse.cli import main; sys.exit(main(['bench', 'synthetic', '--out', {str(out)!r}]))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    assert "scsparse: error: benchmarks are not available in this installation" in run.stderr
    assert "pip install 'scsparse[bench]'" in run.stderr
    assert not out.exists()


def test_bench_all_dispatch(monkeypatch, tmp_path, capsys):
    benchmarks = pytest.importorskip("scsparse.generic.benchmarks")
    calls = {}

    def fake_run_all(out, **options):
        calls["all"] = (out, options)
        if options.get("seeds") == 3:
            raise RuntimeError("1 benchmark(s) failed: zeisel")
        return pd.DataFrame({"benchmark": ["a", "b"]})

    monkeypatch.setattr(benchmarks, "run_all", fake_run_all)
    assert main(["bench", "all", "--quick", "--out", str(tmp_path)]) == 0
    assert calls["all"] == (
        tmp_path,
        {
            "quick": True,
            "seeds": None,
            "max_epochs": None,
            "skip_missing_data": False,
            "jobs": 1,
            "rho": None,
            "device": None,
            "n_threads": None,
            "datasets": None,
            "methods": None,
            "cells": None,
            "max_prior_cells": None,
            "resume": None,
            "halves": None,
            "sections": None,
        },
    )
    assert "2 benchmark(s)" in capsys.readouterr().out
    assert main(["bench", "all", "--quick", "--skip-missing-data", "--out", str(tmp_path)]) == 0
    assert calls["all"][1]["skip_missing_data"] is True
    assert main(["bench", "all", "--quick", "--jobs", "2", "--out", str(tmp_path)]) == 0
    assert calls["all"][1]["jobs"] == 2
    assert main(["bench", "synthetic", "--jobs", "2"]) == 2
    assert "only applies to 'scsparse bench all'" in capsys.readouterr().err
    capsys.readouterr()
    monkeypatch.setattr(
        benchmarks,
        "run_all",
        lambda out, **options: pd.DataFrame({"benchmark": ["a", "b"], "status": ["ok", "not run: data not available"]}),
    )
    assert main(["bench", "all", "--quick", "--skip-missing-data", "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "1 benchmark(s) written" in printed and "not run, data not available: b" in printed
    monkeypatch.setattr(benchmarks, "run_all", fake_run_all)
    assert main(["bench", "synthetic", "--skip-missing-data"]) == 2
    assert "only applies to 'scsparse bench all'" in capsys.readouterr().err
    assert main(["bench", "all", "--seeds", "3", "--out", str(tmp_path)]) == 2
    assert "zeisel" in capsys.readouterr().err


def test_demo(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(scsparse.data, "kang_pbmc", _kang_subset)
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--max-epochs", "2", "--n-latent", "5"]) == 0
    for name in ("result.h5ad", "loadings_heatmap.png", "factors_umap.png", "umap_celltype_condition.png"):
        assert (out / name).stat().st_size > 1000, name
    report = (out / "report.md").read_text()
    assert "held-out NLL" in report and "cell-type accuracy" in report and "data hash" in report
    assert '"overlaps <factor>" when the Jaccard index of the two factors\' genes exceeds 0.5' in report
    back = ad.read_h5ad(out / "result.h5ad")
    assert {"X_sparsevae", "X_umap"} <= set(back.obsm)
    assert back.uns["sparsevae"]["data_hash"] in report
    # interpretation: direction, gene sets (Hallmark ships with the package), associations
    assert (out / "training_history.png").stat().st_size > 1000
    responses = out / "factor_responses.png"  # traversals of the active factors
    assert responses.exists() == bool(len(back.uns["sparsevae"]["active_factors"])) == ("factor_responses" in report)
    assert "## What each factor is" in report and "genes up with it" in report
    assert "`condition_highest` / `condition_lowest`, `cell_type_highest` / `cell_type_lowest`" in report
    assert {"sparsevae_association_condition", "sparsevae_association_cell_type"} <= set(back.uns)
    if "Gene-set enrichment skipped" not in report:
        assert "MSigDB Hallmark" in report
        table = pd.read_csv(out / "enrichment.csv")
        assert {"factor", "direction", "term", "p_adj"} <= set(table.columns)
        assert isinstance(back.uns["sparsevae_enrichment"], pd.DataFrame)
    stdout = capsys.readouterr().out
    assert "scsparse demo:" in stdout and "cell-type accuracy" in stdout


def test_demo_enrichment_failure_is_reported(monkeypatch, tmp_path):
    from scsparse import _demo, tl

    def fail(*args, **kwargs):
        raise tl.GeneSetError("no gene of any set in the data")

    monkeypatch.setattr(tl, "enrich", fail)
    table, note = _demo._run_enrichment(ad.AnnData(np.zeros((2, 2))), "sparsevae", ["factor_0"], tmp_path, False)
    assert table is None and note.startswith("Gene-set enrichment skipped") and "no gene of any set" in note
    assert not (tmp_path / "enrichment.csv").exists()


def test_demo_summary_lists_genes_by_direction_whatever_the_factor_sign(counts_factory, capsys):
    from scsparse import _demo

    adata = counts_factory(n_obs=150)
    scsparse.tl.sparse_vae(
        adata,
        layer="counts",
        n_latent=3,
        max_epochs=30,
        model_kwargs={"n_hidden": 16, "decoder_kwargs": {"w_init": 1.0}},
        train_kwargs={"batch_size": 50, "enable_progress_bar": False},
    )
    z = adata.obsm["X_sparsevae"][:, 0]
    adata.obs["condition"] = np.where(np.arange(adata.n_obs) % 2 == 0, "control", "stimulated")
    adata.obs["cell_type"] = np.where(z > np.median(z), "high", "low")  # the first factor's activity
    f = "factor_0"

    def summary_line() -> str:
        _demo._print_summary(
            {
                "description": scsparse.tl.describe_factors(adata, factors=[f], groupby="cell_type", n_genes=5),
                "diagnostics": scsparse.tl.factor_diagnostics(adata, factors=[f]),
                "active_factors": [f],
                "adata": adata,
                "heldout_nll": 1.0,
                "celltype_accuracy": {"accuracy": 1.0, "chance": 0.5},
                "time_s": 1.0,
                "result": "result.h5ad",
                "report": "report.md",
                "figures": [],
                "out_dir": ".",
            }
        )
        return next(line for line in capsys.readouterr().out.splitlines() if line.strip().startswith(f))

    tops = scsparse.tl.top_genes(adata, n_top=5, factors=[f])
    up = tops.loc[tops["direction"] == "positive", "gene"].tolist()
    down = tops.loc[tops["direction"] == "negative", "gene"].tolist()
    assert up or down
    # the same factor with the opposite sign: the words swap, the genes stay
    cases = ((False, ("high", "low"), ("up", "down")), (True, ("low", "high"), ("down", "up")))
    for flip, (high, low), (with_up, with_down) in cases:
        if flip:
            adata.obsm["X_sparsevae"][:, 0] *= -1
        line = summary_line()
        assert f"activity highest in {high}, lowest in {low}" in line
        for genes, label in ((up, with_up), (down, with_down)):
            if genes:
                assert f"genes {label} with it: {', '.join(genes)}" in line
