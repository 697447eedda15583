"""pl.enrichment_dotplot, pl.top_genes, pl.factor_activity, pl.training_history, pl.multistudy_overview."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402

import scsparse  # noqa: E402
from scsparse.pl import MissingResultsError  # noqa: E402
from scsparse.tl import short_term  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "_planted_enrich_pl", Path(__file__).parents[1] / "tl" / "test_enrich.py"
)
planted = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(planted)
KEY = planted.KEY


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _png(path: Path) -> bool:
    return path.is_file() and path.stat().st_size > 2000 and path.read_bytes()[:4] == b"\x89PNG"


def _labels_do_not_overlap(ax: Axes, axis: str = "y") -> bool:
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    labels = ax.get_yticklabels() if axis == "y" else ax.get_xticklabels()
    boxes = [t.get_window_extent(renderer) for t in labels if t.get_text()]
    for a, b in zip(boxes, boxes[1:], strict=False):
        if a.overlaps(b):
            return False
    return True


def test_enrichment_dotplot(tmp_path):
    adata = planted.planted_adata()
    long_sets = dict(planted.planted_sets())
    long_sets["A_VERY_LONG_GENE_SET_NAME_" * 4] = planted.F1[:6]
    scsparse.tl.enrich(adata, long_sets, key=KEY, min_size=3)
    ax = scsparse.pl.enrichment_dotplot(adata, key=KEY, show=False, save=tmp_path / "dot.png")
    assert isinstance(ax, Axes) and _png(tmp_path / "dot.png")
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert "PLANTED UP" in labels and all(len(s) <= 40 for s in labels)
    assert {t.get_text() for t in ax.get_xticklabels()} >= {"0+", "0−", "1+"}
    assert _labels_do_not_overlap(ax)
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    colour_bar = [a for a in fig.axes if a is not ax][0].get_tightbbox(renderer)
    size_legend = ax.get_legend().get_window_extent(renderer)
    gap_inches = (size_legend.x0 - colour_bar.x1) / fig.dpi
    assert 0 <= gap_inches < 0.25 and size_legend.y1 >= colour_bar.y0  # beside the colour bar, not far off
    # from a table, one direction, into given axes
    table = adata.uns[f"{KEY}_enrichment"]
    fig, given = plt.subplots(figsize=(6, 3))
    out = scsparse.pl.enrichment_dotplot(enrichment=table, direction="negative", ax=given, show=False)
    assert out is given and [t.get_text() for t in given.get_xticklabels()] == ["0−"]
    # nothing significant: best terms are shown and the title says so
    weak = table.assign(p_adj=0.5)
    ax = scsparse.pl.enrichment_dotplot(enrichment=weak, show=False)
    assert "no term with adj. p" in ax.get_title()
    with pytest.raises(MissingResultsError, match="tl.enrich"):
        scsparse.pl.enrichment_dotplot(planted.planted_adata(), key=KEY, show=False)


def test_short_term():
    assert short_term("HALLMARK_INTERFERON_ALPHA_RESPONSE") == "INTERFERON ALPHA RESPONSE"
    assert short_term("defense response to virus (GO:0051607)", 30) == "defense response to virus"
    assert short_term("x" * 50, 10) == "x" * 9 + "…"


def test_top_genes_plot(tmp_path):
    adata = planted.planted_adata()
    axes = scsparse.pl.top_genes(adata, key=KEY, n_top=6, show=False, save=tmp_path / "top.png")
    assert len(axes) == 2 and all(isinstance(a, Axes) for a in axes) and _png(tmp_path / "top.png")
    labels = [t.get_text() for t in axes[0].get_yticklabels()]
    assert labels[:2] == ["UP0*", "DN0*"]  # anchors are starred
    colours = [tuple(np.round(p.get_facecolor()[:3], 2)) for p in axes[0].patches[:2]]
    assert colours[0] != colours[1]  # up and down drawn differently
    assert _labels_do_not_overlap(axes[0])
    fig, ax = plt.subplots()
    assert scsparse.pl.top_genes(adata, key=KEY, factors=["factor_1"], ax=ax, show=False) is ax


@pytest.mark.parametrize("kind", ["violin", "box"])
def test_factor_activity(tmp_path, kind):
    adata = planted.planted_adata()
    adata.obs["long"] = pd.Categorical(
        np.where(adata.obs["group"] == "high", "a rather long group name indeed", adata.obs["group"].astype(str))
    )
    path = tmp_path / f"act_{kind}.png"
    axes = scsparse.pl.factor_activity(adata, "long", key=KEY, kind=kind, show=False, save=path)
    assert len(axes) == 2 and _png(path)
    assert all(len(t.get_text()) <= 18 for t in axes[0].get_xticklabels())
    assert _labels_do_not_overlap(axes[0], axis="x")
    fig, ax = plt.subplots()
    assert scsparse.pl.factor_activity(adata, "group", key=KEY, factors=[0], ax=ax, show=False) is ax
    with pytest.raises(KeyError):
        scsparse.pl.factor_activity(adata, "nope", key=KEY, show=False)
    with pytest.raises(KeyError, match=r"did you mean 'group'\?"):
        scsparse.pl.factor_activity(adata, "Group", key=KEY, show=False)


def _history(validation: bool) -> dict[str, pd.DataFrame]:
    epochs = pd.Index(np.arange(12), name="epoch")
    out = {
        "elbo_train": pd.DataFrame({"elbo_train": 500 * np.exp(-np.arange(12) / 4) + 300}, index=epochs),
        "n_active_factors": pd.DataFrame({"n_active_factors": [10, 10, 9, 8, 7, 7, 6, 6, 6, 6, 6, 6]}, index=epochs),
    }
    if validation:
        out["elbo_validation"] = pd.DataFrame({"elbo_validation": out["elbo_train"].iloc[:, 0] + 10}, index=epochs)
    return out


def test_training_history(tmp_path, counts_factory):
    axes = scsparse.pl.training_history(_history(True), show=False, save=tmp_path / "h.png")
    assert len(axes) == 2 and _png(tmp_path / "h.png")
    assert len(axes[0].get_lines()) == 2  # training and validation
    assert list(axes[1].get_lines()[0].get_ydata()[:3]) == [10, 10, 9]
    fig, ax = plt.subplots()
    axes = scsparse.pl.training_history(_history(False), ax=ax, show=False)
    assert axes[0] is ax and len(axes) == 2  # active factors on a twin axis
    only_elbo = {"elbo_train": _history(False)["elbo_train"]}
    assert len(scsparse.pl.training_history(only_elbo, show=False)) == 1
    with pytest.raises(ValueError, match="elbo_train"):
        scsparse.pl.training_history({}, show=False)
    # a real (tiny) model's history
    adata = counts_factory(n_obs=80, n_vars=20)
    scsparse.model.SparseVAE.setup_anndata(adata, layer="counts")
    model = scsparse.model.SparseVAE(adata, n_latent=3, n_hidden=8)
    model.train(max_epochs=2, batch_size=40, enable_progress_bar=False)
    axes = scsparse.pl.training_history(model, show=False, save=tmp_path / "h2.png")
    assert _png(tmp_path / "h2.png") and len(axes) == 2
    assert [t.get_text() for t in axes[0].texts] == ["max_epochs"]  # why training stopped, at its last epoch
    assert axes[0].get_lines()[-1].get_xdata()[0] == 1


def _multistudy_adata():
    import anndata as ad

    table = pd.DataFrame(
        {
            "factor": ["shared_0", "shared_1", "shared_2", "control_0", "stimulated_0", "stimulated_1"],
            "kind": ["shared"] * 3 + ["specific"] * 3,
            "study": ["all"] * 3 + ["control", "stimulated", "stimulated"],
            "active": [True, True, False, False, True, True],
            "eta": [0.2, 0.1, 0.0, 0.0, 0.05, 0.02],
            "n_genes": [120, 40, 0, 0, 25, 8],
            "top_genes": ["LYZ, S100A9, CD14", "CD3E, IL7R", "", "", "ISG15, IFI6, IFIT1, MX1", "CXCL10"],
        }
    )
    adata = ad.AnnData(np.zeros((3, 2), dtype=np.float32))
    adata.uns["mssvae"] = {"factor_table": table}
    return adata


def test_multistudy_overview(tmp_path):
    adata = _multistudy_adata()
    ax = scsparse.pl.multistudy_overview(adata, show=False, save=tmp_path / "ms.png")
    assert isinstance(ax, Axes) and _png(tmp_path / "ms.png")
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[0] == "shared_0: LYZ, S100A9, CD14" and labels[4] == "stimulated_0: ISG15, IFI6, IFIT1"
    assert "shared: 2/3 active" in ax.get_title() and "stimulated specific: 2/2 active" in ax.get_title()
    assert _labels_do_not_overlap(ax)
    assert [t.get_text().strip() for t in ax.texts] == ["inactive"] * 2  # inactive factors have no bar to hatch
    ax = scsparse.pl.multistudy_overview(adata, active_only=True, show=False)
    assert len(ax.get_yticklabels()) == 4
    adata.write_h5ad(tmp_path / "ms.h5ad")  # the table survives h5ad and still plots
    import anndata as ad

    assert isinstance(scsparse.pl.multistudy_overview(ad.read_h5ad(tmp_path / "ms.h5ad"), show=False), Axes)
    with pytest.raises(MissingResultsError, match="factor_table"):
        scsparse.pl.multistudy_overview(adata, key="other", show=False)


def test_multistudy_overview_real_model(tmp_path, counts_factory):
    adata = counts_factory(n_obs=120, n_vars=20)
    adata.obs["study"] = np.where(np.arange(adata.n_obs) % 2 == 0, "a", "b")
    scsparse.model.MultiStudySparseVAE.setup_anndata(adata, study_key="study", layer="counts")
    model = scsparse.model.MultiStudySparseVAE(adata, n_latent_shared=3, n_latent_specific=2, n_hidden=8)
    model.train(max_epochs=1, batch_size=60, enable_progress_bar=False)
    model.write_results(adata, key_added="ms")
    ax = scsparse.pl.multistudy_overview(adata, key="ms", show=False, save=tmp_path / "real.png")
    assert len(ax.get_yticklabels()) == 3 + 2 * 2 and _png(tmp_path / "real.png")
