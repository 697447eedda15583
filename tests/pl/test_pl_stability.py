"""pl.stability draws the per-factor loadings agreement (loadings_corr) of tl.stability readably."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import anndata as ad
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

import scsparse
from scsparse.pl import MissingResultsError


def _loadings(seed: int, n_genes: int = 60, K: int = 20) -> pd.DataFrame:
    """Genes x factors loadings: factors 0-9 the same programmes in every run (permuted), 10-19 noise."""
    rng = np.random.default_rng(100)
    base = np.zeros((n_genes, K))
    for k in range(10):
        base[rng.choice(n_genes, 6, replace=False), k] = rng.uniform(0.5, 1.5, 6)
    noise = np.random.default_rng(seed).normal(size=(n_genes, K))
    W = base + 0.05 * noise
    W[:, 10:] = noise[:, 10:]
    perm = np.random.default_rng(seed + 7).permutation(K) if seed else np.arange(K)
    genes = [f"LONG-GENE-NAME-{j}.1" for j in range(n_genes)]
    return pd.DataFrame(W[:, perm], index=genes, columns=[f"factor_{k}" for k in range(K)])


@pytest.fixture(scope="module")
def stability_table():
    adata = ad.AnnData(np.zeros((3, 60), dtype=np.float32))
    scsparse.tl.stability(_loadings, seeds=(0, 1, 2), adata=adata)
    table = adata.uns["sparsevae_stability"]
    return adata, table


def _overlaps(labels) -> bool:
    boxes = [t.get_window_extent() for t in labels if t.get_text()]
    return any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])


def test_plot_reads_uns_and_is_readable(stability_table, tmp_path):
    adata, table = stability_table
    assert (table["loadings_corr"].head(10) > 0.95).all()  # the planted programmes lead the table
    ax = scsparse.pl.stability(adata, show=False, save=tmp_path / "stab.png")
    assert (tmp_path / "stab.png").stat().st_size > 0
    fig = ax.figure
    fig.canvas.draw()
    labels = ax.get_yticklabels()
    assert len(labels) == 20 and labels[0].get_text().startswith(table["factor"].iloc[0] + ": ")
    assert not _overlaps(labels)
    assert all(t.get_fontsize() >= 5 for t in labels)
    assert "10/20 factors ≥ 0.8" in ax.get_title()
    # bars: the loadings_corr of each factor, in the table's order
    widths = [p.get_width() for p in ax.patches[:20]]
    assert sorted(widths, reverse=True) == pytest.approx(sorted(table["loadings_corr"], reverse=True))
    # nothing outside the figure: tight bounding box contains the labels and the legend
    renderer = fig.canvas.get_renderer()
    assert ax.get_legend().get_window_extent(renderer).x0 > ax.get_window_extent(renderer).x1
    plt.close(fig)


def test_plot_options_and_errors(stability_table):
    adata, table = stability_table
    ax = scsparse.pl.stability(table, factors=list(table.factor[:3]), reference_line=None, show=False)
    assert len(ax.get_yticklabels()) == 3 and "≥" not in ax.get_title()
    plt.close(ax.figure)
    with pytest.raises(MissingResultsError, match="tl.stability"):
        scsparse.pl.stability(adata, key="other", show=False)
    with pytest.raises(ValueError, match="lacks columns"):
        scsparse.pl.stability(table.drop(columns="min_corr"), show=False)
    # a table stored under the measure's earlier name: told what it is now and how to rename it
    old = table.rename(columns={"loadings_corr": "reproducibility"})
    with pytest.raises(
        ValueError, match=r"'loadings_corr' now.*rename\(columns=\{'reproducibility': 'loadings_corr'\}\)"
    ):
        scsparse.pl.stability(old, show=False)
    renamed = old.rename(columns={"reproducibility": "loadings_corr"})
    plt.close(scsparse.pl.stability(renamed, show=False).figure)
    with pytest.raises(ValueError, match="not in the stability table"):
        scsparse.pl.stability(table, factors=["factor_99"], show=False)
