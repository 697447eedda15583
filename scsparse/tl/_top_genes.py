"""Top genes per factor, with the direction of each gene's response defined from the data.

Sign convention (used by :func:`top_genes`, :func:`scsparse.tl.enrich` and the plots)
---------------------------------------------------------------------------------------
In the sparse VAE, gene ``j`` of cell ``i`` is decoded by a shared nonlinear network from ``w_j ⊙ z_i``; with
weight normalisation each gene's output vector has unit norm and can point either way, and the hidden layers are
nonlinear. The sign of ``w_jk`` therefore does **not** say whether gene ``j`` goes up or down with factor ``k``:
flipping the sign of ``w_jk`` and of the network's response gives the same model. We define the direction from
the data instead:

``r_jk``
    Pearson correlation, across cells, between factor ``k``'s activity (``adata.obsm[f"X_{key}"][:, k]``, the
    posterior mean) and gene ``j``'s normalised expression (``log1p`` of counts scaled to 10,000 per cell when the
    data are counts, else the values as stored).
``direction``
    ``"positive"`` when ``r_jk > 0`` (the gene is higher in cells where the factor is high), ``"negative"`` when
    ``r_jk < 0``.
``signed loading``
    ``|w_jk| · sign(r_jk)``: the size of the gene's dependence on the factor, from the model, with the direction
    from the data.

The correlation is marginal (other factors are not held fixed). A factor's sign is a symmetry of the model;
training fixes it (:meth:`scsparse.model.SparseVAE.orient_factors`) so that the factor's top genes, weighted by
``|w_jk|``, go up with it (``uns[key]["factors_oriented"]``). "Positive" always means "goes up with this
factor's activity as stored in ``obsm``"; a factor that mixes programmes can have genes in both directions.

Multi-study results (:class:`~scsparse.model.MultiStudySparseVAE`, ``write_results(adata, key_added=key)``) are
read the same way: the shared factors (``obsm[f"X_{key}_shared"]``, masks ``varm[f"{key}_W_shared"]``) are
correlated with expression over all cells; a study's specific factors (its block of
``obsm[f"X_{key}_specific"]``, masks ``varm[f"{key}_W_<study>"]``) only over that study's cells, where they are
defined (they are zero elsewhere). Factor names are those of the model's factor table (``shared_0``,
``<study>_0``, ...).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import scipy.sparse as sp
from anndata import AnnData

from scsparse._checks import did_you_mean
from scsparse.results import expression_factor_correlation, rank_genes, read_results

__all__ = ["factor_gene_correlation", "top_genes"]


def looks_like_counts(mat) -> bool:
    data = mat.data if sp.issparse(mat) else np.asarray(mat[: min(mat.shape[0], 500)]).ravel()
    sample = np.asarray(data[: min(data.size, 100_000)], dtype=np.float64)
    if sample.size == 0:
        return False
    return bool(np.all(sample >= 0) and np.allclose(sample, np.round(sample)))


def expression_source(adata: AnnData, layer: str | None, setup_layer: str | None):
    """The matrix to correlate with (a layer or ``X``) and its name."""
    if layer is None and setup_layer is not None and setup_layer in adata.layers:
        layer = setup_layer
    if layer is not None:
        if layer not in adata.layers:
            raise KeyError(
                f"Layer {layer!r} not found in adata.layers{did_you_mean(layer, adata.layers)} "
                f"(available: {list(adata.layers)})."
            )
        return adata.layers[layer], layer
    return adata.X, "X"


def factor_gene_correlation(
    adata: AnnData,
    *,
    key: str = "sparsevae",
    layer: str | None = None,
    normalize: bool | None = None,
) -> pd.DataFrame:
    """Correlation across cells between each factor's activity and each gene's normalised expression.

    This defines the direction of a gene in a programme (see the module notes on the sign convention): ``r_jk >
    0`` means gene ``j`` is higher in cells where factor ``k`` is high. The expression matrix is streamed in
    chunks of cells (sparse matrices stay sparse), so memory does not grow with the number of cells.

    Parameters
    ----------
    adata
        AnnData with results of :func:`scsparse.tl.sparse_vae` (or of a multi-study fit) under ``key``.
    key
        The ``key_added`` of the fit (reads ``obsm[f"X_{key}"]``, or the shared and specific factors of a
        multi-study fit; specific factors are correlated within their own study's cells).
    layer
        Expression layer (default: the layer the model was trained on, ``uns[key]["setup_args"]["layer"]``, when
        present in ``adata.layers``, else ``adata.X``).
    normalize
        Scale each cell to 10,000 counts and take ``log1p`` (default: when the values are non-negative integers).

    Returns
    -------
    pandas.DataFrame
        Genes x factors, values in ``[-1, 1]`` (0 for genes or factors without variance).

    Examples
    --------
    >>> r = scsparse.tl.factor_gene_correlation(adata)
    >>> r["factor_0"].sort_values().tail()  # genes that go up with factor_0
    """
    res = read_results(adata, key)
    mat, _ = expression_source(adata, layer, res.setup_layer)
    if normalize is None:
        normalize = looks_like_counts(mat)
    Z = np.asarray(res.Z, dtype=np.float64)
    r = np.zeros((mat.shape[1], Z.shape[1]))
    # factors defined on all cells together; each study's specific factors on that study's cells only
    groups: dict[int | None, list[int]] = {}
    subsets: dict[int, np.ndarray] = {}
    for k, f in enumerate(res.factor_names):
        mask = res.cell_masks.get(f)
        if mask is None:
            groups.setdefault(None, []).append(k)
            continue
        for gid, other in subsets.items():
            if np.array_equal(other, mask):
                groups[gid].append(k)
                break
        else:
            subsets[len(subsets)] = np.asarray(mask, dtype=bool)
            groups[len(subsets) - 1] = [k]
    for gid, cols in groups.items():
        cells = None if gid is None else subsets[gid]
        r[:, cols] = expression_factor_correlation(mat, Z[:, cols], bool(normalize), cells)
    return pd.DataFrame(r, index=adata.var_names.copy(), columns=res.factor_names)


def _direction_label(r: np.ndarray) -> np.ndarray:
    return np.where(r > 0, "positive", np.where(r < 0, "negative", "none")).astype(object)


def top_genes(
    adata: AnnData,
    *,
    key: str = "sparsevae",
    n_top: int = 10,
    pip_threshold: float = 0.5,
    factors: Sequence[str | int] | None = None,
    direction: bool = True,
    layer: str | None = None,
) -> pd.DataFrame:
    """The top genes of each factor as a tidy table, with inclusion probability, anchor status and direction.

    Genes are those with ``p*_jk > pip_threshold``, ranked by ``|w_jk|`` (the same rule as
    ``adata.uns[key]["top_genes"]``). The direction of each gene (``"positive"``: higher where the factor is
    high; ``"negative"``: lower) comes from the data, not from the sign of ``w_jk`` (see
    :func:`factor_gene_correlation` for why). For a multi-study fit, shared and study-specific factors are listed
    under their factor-table names, the direction of a specific factor taken within its study's cells.

    Parameters
    ----------
    adata
        AnnData with results of :func:`scsparse.tl.sparse_vae` under ``key``.
    key
        The ``key_added`` of the fit.
    n_top
        Genes per factor (fewer when fewer genes pass the threshold).
    pip_threshold
        Inclusion threshold on ``p*``.
    factors
        Factor names or indices (default: the active factors).
    direction
        Compute ``correlation`` and ``direction`` (one pass over the expression matrix).
    layer
        Expression layer for the direction (default: the model's training layer, else ``X``).

    Returns
    -------
    pandas.DataFrame
        One row per factor and gene: ``factor``, ``rank`` (1 = largest ``|w|``), ``gene``, ``loading``
        (``w_jk``), ``abs_loading``, ``pip``, ``anchor`` (the gene's only factor with ``p* > pip_threshold``),
        and with ``direction=True`` also ``correlation`` (``r_jk``), ``direction`` and ``signed_loading``
        (``|w_jk| · sign(r_jk)``).

    Raises
    ------
    KeyError
        No results under ``key``.
    ValueError
        No active factor and ``factors`` not given.

    Examples
    --------
    >>> tg = scsparse.tl.top_genes(adata, n_top=5)
    >>> tg[tg.factor == "factor_3"][["gene", "pip", "direction"]]
    """
    res = read_results(adata, key)
    names = res.resolve(factors)
    genes = np.asarray(adata.var_names).astype(str)
    included = res.pip > pip_threshold
    n_included = included.sum(1)
    corr = factor_gene_correlation(adata, key=key, layer=layer).to_numpy() if direction else None
    rows = []
    for f in names:
        k = res.factor_names.index(f)
        absw = np.abs(res.W[:, k])
        order = rank_genes(absw, res.pip[:, k], pip_threshold, int(n_top))
        for rank, j in enumerate(order, start=1):
            row = {
                "factor": f,
                "rank": rank,
                "gene": str(genes[j]),
                "loading": float(res.W[j, k]),
                "abs_loading": float(absw[j]),
                "pip": float(res.pip[j, k]),
                "anchor": bool(n_included[j] == 1),
            }
            if corr is not None:
                r = float(corr[j, k])
                row["correlation"] = r
                row["direction"] = str(_direction_label(np.asarray([r]))[0])
                row["signed_loading"] = float(absw[j] * np.sign(r))
            rows.append(row)
    columns = ["factor", "rank", "gene", "loading", "abs_loading", "pip", "anchor"]
    if direction:
        columns += ["correlation", "direction", "signed_loading"]
    return pd.DataFrame(rows, columns=columns)
