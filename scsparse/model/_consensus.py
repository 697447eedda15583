"""A consensus over restarts: each programme matched across fits with other seeds, kept where it reproduces.

One fit of a sparse VAE is one local optimum: a programme it reports may be one another seed would not find. A
consensus fits several restarts and asks, of each programme of the most central restart (the *reference*), how
many restarts recover it, and which genes they agree on. This module holds the part that works on the restarts'
inclusion probabilities (:func:`consensus_programmes`), the consensus of trained models (:func:`consensus_of`) and
the fit itself (:func:`fit_consensus`, behind :meth:`SparseVAE.consensus <scsparse.model.SparseVAE.consensus>`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from scsparse._checks import InvalidInputError
from scsparse.results import jaccard_matrix, rank_biased_overlap, rank_genes

__all__ = ["CONSENSUS_COLUMNS", "Consensus", "consensus_of", "consensus_programmes", "fit_consensus"]

logger = logging.getLogger(__name__)

#: Columns of the per-programme table (``model.consensus_``, ``uns[key]["consensus"]``).
CONSENSUS_COLUMNS: list[str] = [
    "factor", "reproducibility", "agreement", "jaccard", "n_genes", "n_anchor_genes", "identifiable", "kept",
]  # fmt: skip


@dataclass(frozen=True)
class Consensus:
    """The consensus of several restarts.

    Attributes
    ----------
    pip
        Consensus inclusion probabilities, genes x factors of the reference restart: for each of its programmes the
        mean, over all restarts, of the ``p*`` of the factor that recovers it (0 for a restart that does not);
        zero for the factors not kept (and for those inactive in the reference).
    table
        One row per active factor of the reference (:data:`CONSENSUS_COLUMNS`): ``reproducibility`` (share of the
        restarts that recover the programme, the reference included), ``agreement`` (mean Jaccard index of its
        genes with the matched programme of each other restart), ``n_genes`` (consensus ``p*`` above the
        threshold), ``n_anchor_genes`` (of those, genes in no other kept programme), ``identifiable`` (at least two
        anchor genes, the condition of the model's identifiability) and ``kept`` (recovered by at least
        ``min_share`` of the restarts, with at least one gene of consensus ``p*`` above the threshold).
    restarts
        One row per restart: ``restart`` (its position), ``n_active``, ``agreement`` (mean matched rank-biased
        overlap of its programmes with every other restart's, unmatched programmes counting 0) and ``reference``.
    reference
        Position of the reference restart: the one that agrees most with the others.
    """

    pip: np.ndarray
    table: pd.DataFrame
    restarts: pd.DataFrame
    reference: int


def _overlaps(a: list[list[int]], b: list[list[int]]) -> np.ndarray:
    """Rank-biased overlap of every ranked programme of ``a`` with every one of ``b``."""
    return np.array([[rank_biased_overlap(x, y) for y in b] for x in a]).reshape(len(a), len(b))


def _matched(overlap: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One-to-one matching of the rows to the columns of an overlap matrix (Hungarian, maximising)."""
    from scipy.optimize import linear_sum_assignment

    rows, cols = linear_sum_assignment(overlap, maximize=True)
    return rows, cols, overlap[rows, cols]


def _blocks(blocks: Sequence[Sequence[int]] | None, n_factors: int) -> list[np.ndarray]:
    """The factor columns of each block, checked to split ``0 .. n_factors - 1`` (one block of all by default)."""
    if blocks is None:
        return [np.arange(n_factors)]
    out = [np.asarray(b, dtype=np.int64).ravel() for b in blocks]
    joined = np.sort(np.concatenate(out)) if out else np.empty(0, dtype=np.int64)
    if not np.array_equal(joined, np.arange(n_factors)):
        raise InvalidInputError(
            f"blocks must split the {n_factors} factor columns into groups, each column in exactly one group; got "
            f"{[b.tolist() for b in out]}."
        )
    return out


def consensus_programmes(
    pips: Sequence[np.ndarray],
    loadings: Sequence[np.ndarray] | None = None,
    *,
    factor_names: Sequence[str] | None = None,
    blocks: Sequence[Sequence[int]] | None = None,
    pip_threshold: float = 0.5,
    min_rbo: float = 0.5,
    min_share: float = 0.5,
) -> Consensus:
    """Match the programmes of several restarts and keep those that reproduce.

    A programme is a factor's genes with ``p* > pip_threshold``, ranked by decreasing ``|w|``. Programmes of two
    restarts are paired one to one (Hungarian assignment) on the rank-biased overlap of their rankings
    (:func:`scsparse.results.rank_biased_overlap`, p = 0.9: the strongest genes weigh most), so that a programme is
    paired with the one that has its core, whatever its long tail shares with other programmes. With ``blocks``,
    programmes are paired only within a block (e.g. the shared factors of a multi-study model with the shared
    factors, each study's factors with that study's). The reference is the restart whose programmes agree most with
    the other restarts' (mean matched overlap over all blocks, a programme without a counterpart counting 0). A
    restart *recovers* a programme of the reference when the matched programme's overlap is at least ``min_rbo``. A
    programme is kept when at least ``min_share`` of the restarts recover it.

    Parameters
    ----------
    pips
        The inclusion probabilities of each restart, genes x factors (the same genes and number of factors).
    loadings
        Each restart's ``W`` (the same shape), which ranks a programme's genes; ``None``: ranked by ``p*``.
    factor_names
        Names of the factors (default ``factor_0`` ...).
    blocks
        Groups of factor columns matched apart, each column in one group (default: one group of all).
    pip_threshold
        Inclusion threshold defining a programme's genes.
    min_rbo
        Rank-biased overlap from which a matched programme counts as the same programme.
    min_share
        Share of the restarts that must recover a programme for it to be kept.

    Returns
    -------
    Consensus

    Examples
    --------
    >>> import numpy as np
    >>> a = np.zeros((6, 2)); a[:3, 0] = a[3:, 1] = 0.9  # two programmes
    >>> b = a[:, ::-1].copy()  # the same two, in the other order
    >>> c = a.copy(); c[:, 1] = 0.0; c[5:, 1] = 0.9  # the second programme is another one
    >>> result = consensus_programmes([a, b, c])
    >>> result.table[["factor", "reproducibility", "kept"]].to_dict("list")
    {'factor': ['factor_0', 'factor_1'], 'reproducibility': [1.0, 0.6666666666666666], 'kept': [True, True]}

    Matched within blocks (each factor only with the same factor of another restart), ``b``'s factors no longer
    stand for ``a``'s, and the second programme is found by its restart alone:

    >>> result = consensus_programmes([a, b, c], blocks=[[0], [1]])
    >>> result.table[["reproducibility", "kept"]].round(2).to_dict("list")
    {'reproducibility': [0.67, 0.33], 'kept': [True, False]}
    """
    pips = [np.asarray(p, dtype=np.float64) for p in pips]
    if len(pips) < 2:
        raise InvalidInputError(f"A consensus needs at least 2 restarts, got {len(pips)}.")
    if len({p.shape for p in pips}) > 1:
        raise InvalidInputError(f"The restarts' p* differ in shape: {sorted({p.shape for p in pips})}.")
    if loadings is not None and [np.shape(w) for w in loadings] != [p.shape for p in pips]:
        raise InvalidInputError("loadings must give one W per restart, each of the shape of its p*.")
    for name, value in (("min_rbo", min_rbo), ("min_share", min_share), ("pip_threshold", pip_threshold)):
        if not 0.0 <= value <= 1.0:
            raise InvalidInputError(f"{name} must be in [0, 1], got {value}.")
    n_restarts = len(pips)
    n_genes, n_factors = pips[0].shape
    names = list(factor_names) if factor_names is not None else [f"factor_{k}" for k in range(n_factors)]
    groups = _blocks(blocks, n_factors)
    weights = pips if loadings is None else [np.asarray(w, dtype=np.float64) for w in loadings]
    # per block: each restart's active factors (column numbers), their rankings, and every pair's overlaps
    active = [[cols[(p[:, cols] > pip_threshold).any(0)] for p in pips] for cols in groups]
    ranked = [
        [
            [rank_genes(weights[r][:, k], pips[r][:, k], pip_threshold).tolist() for k in act[r]]
            for r in range(n_restarts)
        ]
        for act in active
    ]
    pairs = [(r, s) for r in range(n_restarts) for s in range(r + 1, n_restarts)]
    overlaps = [{(r, s): _overlaps(rk[r], rk[s]) for r, s in pairs} for rk in ranked]
    # agreement of every pair of restarts: matched overlap summed over the blocks, over the larger numbers of
    # programmes summed over the blocks
    pair = np.eye(n_restarts)
    for r, s in pairs:
        total = sum(_matched(o[(r, s)])[2].sum() for o in overlaps if o[(r, s)].size)
        n = sum(max(act[r].size, act[s].size) for act in active)
        pair[r, s] = pair[s, r] = total / n if n else 1.0
    mean_agreement = (pair.sum(1) - 1.0) / (n_restarts - 1)
    ref = int(np.argmax(mean_agreement))  # the first of equals
    ref_active = np.concatenate([act[ref] for act in active])
    recovered = np.zeros((ref_active.size, n_restarts), dtype=bool)
    recovered[:, ref] = True
    overlap = np.zeros((ref_active.size, n_restarts))
    jaccard = np.zeros((ref_active.size, n_restarts))
    pip = np.zeros((n_genes, n_factors))
    pip[:, ref_active] = pips[ref][:, ref_active]
    offset = 0  # the rows of this block's reference programmes
    for act, o in zip(active, overlaps, strict=True):
        mine = act[ref]
        for s in range(n_restarts):
            if s == ref or not mine.size or not act[s].size:
                continue
            rows, cols, values = _matched(o[(ref, s)] if ref < s else o[(s, ref)].T)
            at = offset + rows
            overlap[at, s] = values
            sets = jaccard_matrix(pips[ref][:, mine] > pip_threshold, pips[s][:, act[s]] > pip_threshold)
            jaccard[at, s] = sets[rows, cols]
            hit = values >= min_rbo
            recovered[at[hit], s] = True
            pip[:, mine[rows[hit]]] += pips[s][:, act[s][cols[hit]]]
        offset += mine.size
    pip /= n_restarts
    reproducibility = recovered.mean(1)
    # a programme found often enough but whose genes no majority of the restarts shares has no consensus genes
    kept = (reproducibility >= min_share) & (pip[:, ref_active] > pip_threshold).any(0)
    drop = np.ones(n_factors, dtype=bool)
    drop[ref_active[kept]] = False
    pip[:, drop] = 0.0
    included = pip > pip_threshold
    n_kept_per_gene = included.sum(1)
    others = [s for s in range(n_restarts) if s != ref]
    table = pd.DataFrame(
        {
            "factor": [names[k] for k in ref_active],
            "reproducibility": reproducibility,
            "agreement": overlap[:, others].mean(1) if others else np.ones(ref_active.size),
            "jaccard": jaccard[:, others].mean(1) if others else np.ones(ref_active.size),
            "n_genes": included[:, ref_active].sum(0),
            "n_anchor_genes": (included[:, ref_active] & (n_kept_per_gene == 1)[:, None]).sum(0),
            "kept": kept,
        }
    )
    table["identifiable"] = table["kept"] & (table["n_anchor_genes"] >= 2)
    restarts = pd.DataFrame(
        {
            "restart": np.arange(n_restarts),
            "n_active": [sum(act[r].size for act in active) for r in range(n_restarts)],
            "agreement": mean_agreement,
            "reference": np.arange(n_restarts) == ref,
        }
    )
    return Consensus(pip=pip, table=table[CONSENSUS_COLUMNS], restarts=restarts, reference=ref)


def _factor_blocks(model: Any) -> list[np.ndarray] | None:
    """The factor columns matched apart: a multi-study model's shared block and each study's block; ``None`` (all
    together) for a single-study model.
    """
    block_slices = getattr(model.module, "block_slices", None)
    if block_slices is None:
        return None
    return [np.arange(cols.start, cols.stop) for _, _, cols in block_slices()]


def consensus_of(models: Sequence[Any], *, min_share: float = 0.5, min_rbo: float = 0.5) -> Any:
    """The consensus of trained restarts: the reference restart, its ``p*`` replaced by the consensus.

    Use it on fits made elsewhere (with other seeds of the same model on the same data);
    :meth:`SparseVAE.consensus <scsparse.model.SparseVAE.consensus>` fits the restarts and calls it.

    Parameters
    ----------
    models
        Trained :class:`~scsparse.model.SparseVAE` (or :class:`~scsparse.model.MultiStudySparseVAE`) models of the
        same data and settings, at least two. A multi-study model's shared factors are matched with the shared
        factors of the other restarts, each study's specific factors with that study's.
    min_share, min_rbo
        As in :meth:`SparseVAE.consensus <scsparse.model.SparseVAE.consensus>`.

    Returns
    -------
    SparseVAE
        The reference restart (modified in place) with ``consensus_``, ``restarts_`` and ``consensus_params_``.

    Examples
    --------
    >>> fits = [scsparse.model.SparseVAE(adata, seed=s) for s in range(5)]
    >>> for fit in fits:
    ...     fit.train()
    >>> model = scsparse.model.consensus_of(fits)
    >>> model.consensus_
    """
    import torch

    models = list(models)
    if len(models) < 2:
        raise InvalidInputError(f"A consensus needs at least 2 trained restarts, got {len(models)}.")
    if len({type(m) for m in models}) > 1 or len({tuple(m.factor_names) for m in models}) > 1:
        raise InvalidInputError("The restarts of a consensus must be models of one class with the same factors.")
    if len({tuple(m._gene_names) for m in models}) > 1:
        raise InvalidInputError("The restarts of a consensus must be fitted to the same genes, in the same order.")
    if not all(m.is_trained_ for m in models):
        raise InvalidInputError("Every restart of a consensus must be trained: call train() on each first.")
    result = consensus_programmes(
        [m.get_inclusion_probabilities().to_numpy() for m in models],
        [m.get_loadings().to_numpy() for m in models],
        factor_names=models[0].factor_names,
        blocks=_factor_blocks(models[0]),
        min_rbo=min_rbo,
        min_share=min_share,
    )
    best = models[result.reference]
    prior = best.module.prior
    with torch.no_grad():
        p_star = torch.as_tensor(result.pip, dtype=prior.p_star.dtype, device=prior.p_star.device)
        prior.p_star.copy_(p_star)
        prior.eta.copy_(prior.eta_update(p_star))
    restarts = result.restarts.copy()
    restarts.insert(1, "seed", [int(getattr(m, "init_seed", m.seed)) for m in models])
    restarts.insert(3, "epochs", [len(m.history["elbo_train"]) for m in models])
    best.consensus_ = result.table
    best.restarts_ = restarts
    best.consensus_params_ = {"n_restarts": len(models), "min_share": min_share, "min_rbo": min_rbo}
    return best


def fit_consensus(
    model_cls: Any,
    adata: Any,
    *,
    seeds: Sequence[int],
    min_share: float,
    min_rbo: float,
    train_kwargs: dict[str, Any],
    model_kwargs: dict[str, Any],
) -> Any:
    """Fit one model per seed, one after another, and return their consensus (:func:`consensus_of`).

    See :meth:`SparseVAE.consensus <scsparse.model.SparseVAE.consensus>` for the parameters.
    """
    models = []
    for r, seed in enumerate(seeds):
        model = model_cls(adata, seed=int(seed), **model_kwargs)
        model.train(**train_kwargs)
        logger.info("consensus: restart %d of %d (seed %d): %d active factors", r + 1, len(seeds), seed,
                    len(model.active_factors()))  # fmt: skip
        models.append(model)
    return consensus_of(models, min_share=min_share, min_rbo=min_rbo)
