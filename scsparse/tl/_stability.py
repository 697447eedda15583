"""Seed stability of the programmes: fit several seeds, match factors across seeds, correlate their loadings."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd
from anndata import AnnData

from scsparse._checks import InvalidInputError, check_integer
from scsparse._options import GeneLikelihood
from scsparse.results import matched_partners

from ._store import check_table_key, store_table

__all__ = ["stability"]


def _abs_corr(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``|corr(a[:, i], b[:, j])|`` for all column pairs (0 for constant columns)."""

    def unit(x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        c = x - x.mean(0)
        norm = np.sqrt((c * c).sum(0))
        return c / np.where(norm > 1e-12, norm, np.inf)

    return np.clip(np.abs(unit(a).T @ unit(b)), 0.0, 1.0)


def _loadings_of(fitted: Any) -> tuple[pd.DataFrame, list[str]]:
    """Loadings (genes x factors) and active factors of a model, or of a loadings matrix returned by a factory."""
    if hasattr(fitted, "get_loadings"):  # a multi-study model gives its shared and specific factors
        W = fitted.get_loadings()
        if not isinstance(W, pd.DataFrame):
            W = pd.DataFrame(np.asarray(W))
        active = list(fitted.active_factors()) if hasattr(fitted, "active_factors") else list(W.columns)
    elif isinstance(fitted, pd.DataFrame | np.ndarray):
        W = fitted if isinstance(fitted, pd.DataFrame) else pd.DataFrame(np.asarray(fitted))
        active = list(W.columns)
    else:
        raise TypeError(
            "The factory must return a fitted model with get_loadings() (e.g. scsparse.model.SparseVAE) or a "
            f"genes x factors loadings matrix, got {type(fitted).__name__}."
        )
    W.columns = [str(c) for c in W.columns]
    return W, [str(a) for a in active]


def stability(
    adata_or_factory: AnnData | Callable[[int], Any],
    seeds: Sequence[int] = (0, 1, 2),
    *,
    layer: str | None = None,
    batch_key: str | None = None,
    n_latent: int = 20,
    max_epochs: int | None = None,
    gene_likelihood: GeneLikelihood = "nb",
    model_kwargs: dict[str, Any] | None = None,
    train_kwargs: dict[str, Any] | None = None,
    key: str = "sparsevae",
    key_added: str | None = None,
    adata: AnnData | None = None,
    n_top_genes: int = 5,
    overwrite: bool = False,
    copy: bool = False,
) -> pd.DataFrame | AnnData | None:
    """How much each programme's loadings agree across random seeds (``loadings_corr``).

    As every tool of :mod:`scsparse.tl` that keeps a table, the table goes to the AnnData given (the first
    argument, or ``adata=`` with a factory), under ``uns[f"{key}_stability"]`` (or ``key_added``), and the call
    returns ``None``; only with a factory and no AnnData is the table returned.

    Fits one model per seed (a :class:`~scsparse.model.SparseVAE` on ``adata``, or ``factory(seed)``), then aligns
    every run to the first one by the Hungarian algorithm on the absolute correlation between loading columns
    (``W[:, k]`` across genes; absolute because a factor and its loadings can flip sign together;
    :func:`scsparse.results.match_pairs`). For each factor of the first run (the reference), ``loadings_corr`` is
    the mean, over all pairs of seeds, of the absolute correlation between the loadings of its aligned factors: 1
    means the same programme in every run, values near 0 a programme that one seed made up. (The share of restarts
    that hold a programme, its ``reproducibility``, is a consensus fit's: :meth:`scsparse.model.SparseVAE.consensus`.)

    Parameters
    ----------
    adata_or_factory
        An AnnData to fit (counts in ``layer``), or a callable ``factory(seed) -> fitted model`` (anything with
        ``get_loadings()`` returning genes x factors, optionally ``active_factors()``; or the loadings matrix
        itself). A :class:`~scsparse.model.MultiStudySparseVAE` contributes its shared and all study-specific
        factors (names as in its factor table).
    seeds
        Seeds, at least two; the first is the reference.
    layer, batch_key, n_latent, max_epochs, gene_likelihood, model_kwargs, train_kwargs
        Passed to :meth:`SparseVAE.setup_anndata <scsparse.model.SparseVAE.setup_anndata>`,
        :class:`~scsparse.model.SparseVAE` and its ``train`` when an AnnData is given.
    key
        Prefix of the stored table (``uns[f"{key}_stability"]``).
    key_added
        Where the table is stored (default ``f"{key}_stability"``). An earlier stability table there is replaced;
        anything else (e.g. a fit's record) only with ``overwrite=True``.
    adata
        With a factory: an AnnData to store the table in (optional). With an AnnData as first argument, the table
        is stored there.
    n_top_genes
        Top genes (by ``|w|`` in the reference run) listed per factor.
    overwrite
        Replace whatever ``uns[key_added]`` holds.
    copy
        Store the table in a copy of the AnnData and return the copy.

    Returns
    -------
    None, AnnData or pandas.DataFrame
        ``None`` (the table is in ``uns[key_added]`` of the AnnData), the copy with it when ``copy=True``, or the
        table itself with a factory and no AnnData. The table has one row per factor of the reference run,
        sorted by decreasing ``loadings_corr``: ``factor``, ``loadings_corr`` (in ``[0, 1]``), ``min_corr``
        (the worst seed pair), ``active`` (in the reference), ``active_fraction`` (fraction of runs in which the
        aligned factor is active), ``top_genes``, and per other seed ``s``: ``match_seed{s}`` (its aligned factor)
        and ``corr_seed{s}`` (its correlation with the reference).

    Raises
    ------
    ValueError
        Fewer than two seeds, or runs with different genes.

    Examples
    --------
    >>> scsparse.tl.stability(adata, seeds=(0, 1, 2), layer="counts", n_latent=10, max_epochs=50)
    >>> adata.uns["sparsevae_stability"][["factor", "loadings_corr", "top_genes"]].head()

    With any model:

    >>> def fit(seed):
    ...     m = scsparse.model.SparseVAE(adata, n_latent=10, seed=seed)
    ...     m.train(max_epochs=50)
    ...     return m
    >>> table = scsparse.tl.stability(fit, seeds=range(4))  # no AnnData: the table is returned
    """
    seeds = [check_integer("seed", s, minimum=0, fix="seeds are whole numbers, one per run.") for s in seeds]
    if len(seeds) < 2:
        raise ValueError(f"stability needs at least two seeds, got {seeds}.")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"Seeds must be distinct, got {seeds}.")
    name = f"{key}_stability" if key_added is None else key_added
    target = adata_or_factory if isinstance(adata_or_factory, AnnData) else adata
    if target is not None:  # before the fits
        check_table_key(target, name, overwrite=overwrite, default_name=f"{key}_stability")
    if isinstance(adata_or_factory, AnnData):
        from scsparse.model import SparseVAE

        store = adata_or_factory
        work = adata_or_factory.copy()  # registration happens on a copy, as in tl.sparse_vae
        SparseVAE.setup_anndata(work, layer=layer, batch_key=batch_key)
        tk = dict(train_kwargs or {})
        if max_epochs is not None:
            tk["max_epochs"] = int(max_epochs)

        def factory(seed: int):
            model = SparseVAE(
                work, n_latent=n_latent, gene_likelihood=gene_likelihood, seed=seed, **(model_kwargs or {})
            )
            model.train(**tk)
            return model

    elif callable(adata_or_factory):
        factory, store = adata_or_factory, adata
    else:
        raise TypeError(f"Expected an AnnData or a callable factory(seed), got {type(adata_or_factory).__name__}.")

    if store is None and copy:  # before any fit
        raise InvalidInputError("copy=True needs an AnnData to copy: pass adata= with a factory.")
    runs = [_loadings_of(factory(s)) for s in seeds]
    ref_W, ref_active = runs[0]
    for s, (W, _) in zip(seeds[1:], runs[1:], strict=True):
        if W.shape[0] != ref_W.shape[0] or not W.index.equals(ref_W.index):
            raise ValueError(f"The run of seed {s} has different genes than the run of seed {seeds[0]}.")
    K = ref_W.shape[1]
    # aligned[r][k] = column index in run r matched to reference factor k (-1 when run r has fewer factors)
    aligned = [np.arange(K)]
    corr_to_ref = [np.ones(K)]
    for W, _ in runs[1:]:
        match, corr = matched_partners(_abs_corr(ref_W.to_numpy(), W.to_numpy()))  # 0 where unmatched
        aligned.append(match)
        corr_to_ref.append(corr)
    pair_corr = np.zeros((K, 0))
    for a, b in combinations(range(len(runs)), 2):
        Wa, Wb = runs[a][0].to_numpy(), runs[b][0].to_numpy()
        C = _abs_corr(Wa, Wb)
        ia, ib = aligned[a], aligned[b]
        vals = np.where((ia >= 0) & (ib >= 0), C[np.maximum(ia, 0), np.maximum(ib, 0)], 0.0)
        pair_corr = np.column_stack([pair_corr, vals])
    genes = np.asarray(ref_W.index).astype(str)
    rows_out = []
    for k, f in enumerate(ref_W.columns):
        active_runs = [bool(m[k] >= 0 and W.columns[m[k]] in act) for (W, act), m in zip(runs, aligned, strict=True)]
        top = genes[np.argsort(-np.abs(ref_W.iloc[:, k].to_numpy()), kind="stable")[:n_top_genes]]
        row = {
            "factor": str(f),
            "loadings_corr": float(pair_corr[k].mean()),
            "min_corr": float(pair_corr[k].min()),
            "active": bool(f in ref_active),
            "active_fraction": float(np.mean(active_runs)),
            "top_genes": ", ".join(top),
        }
        for s, (W, _), m, c in zip(seeds[1:], runs[1:], aligned[1:], corr_to_ref[1:], strict=True):
            row[f"match_seed{s}"] = str(W.columns[m[k]]) if m[k] >= 0 else ""
            row[f"corr_seed{s}"] = float(c[k])
        rows_out.append(row)
    table = (
        pd.DataFrame(rows_out)
        .sort_values(["loadings_corr", "factor"], ascending=[False, True], kind="stable")
        .reset_index(drop=True)
    )
    if store is None:
        return table
    return store_table(store, name, table, copy=copy, overwrite=overwrite, default_name=f"{key}_stability")
