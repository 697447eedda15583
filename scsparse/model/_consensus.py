"""A pooled consensus over restarts: every restart's programmes grouped, the groups that reproduce refitted.

One fit of a sparse VAE is one local optimum: a programme it reports may be one another seed would not find, and
two seeds may cut the same cells into programmes differently. A consensus fits several restarts, pools the active
programmes of all of them, drops the outliers, groups the rest by the similarity of their loadings and keeps the
groups that most restarts contribute to; each kept group's genes are those most of its members hold. One model is
then refitted with those supports held fixed, so that its factors, differential expression and saved weights are
the consensus's own rather than one restart's. This module holds the grouping, which works on the restarts'
inclusion probabilities and loadings (:func:`consensus_programmes`), the refit (:func:`refit_consensus`), the
consensus of trained models (:func:`consensus_of`) and the whole fit (:func:`fit_consensus`, behind
:meth:`SparseVAE.consensus <scsparse.model.SparseVAE.consensus>`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from scsparse._checks import InvalidInputError
from scsparse.results import jaccard_matrix

__all__ = [
    "CONSENSUS_COLUMNS",
    "Consensus",
    "check_consensus_options",
    "consensus_of",
    "consensus_programmes",
    "fit_consensus",
    "refit_consensus",
]

logger = logging.getLogger(__name__)

#: Columns of the per-programme table (``model.consensus_``, ``uns[key]["consensus"]``).
CONSENSUS_COLUMNS: list[str] = [
    "factor", "programme", "block", "reproducibility", "agreement", "n_members", "n_genes", "n_anchor_genes",
    "identifiable", "kept",
]  # fmt: skip
#: Columns of the per-programme-of-a-restart table (``Consensus.members``, ``uns[key]["consensus_members"]``).
MEMBER_COLUMNS: list[str] = ["restart", "factor", "block", "programme", "density", "outlier"]
#: Columns of the table behind the number of programmes (``Consensus.selection``).
SELECTION_COLUMNS: list[str] = ["distance", "n_programmes", "n_groups", "silhouette"]
#: Candidate cut distances of :attr:`Consensus.selection` (cosine distance between programmes).
SELECTION_GRID: np.ndarray = np.round(np.arange(0.2, 0.951, 0.05), 2)


@dataclass(frozen=True)
class Consensus:
    """The pooled consensus of several restarts.

    Attributes
    ----------
    pip
        Consensus inclusion probabilities, genes x kept programmes (in block order): for each kept programme, the
        share of its group's members that hold the gene (``p* > pip_threshold`` in that member, 0.5 by default). A
        gene is one of the programme's genes when more than half the members hold it (``pip > 0.5``), the reading of
        ``p*`` everywhere else in scsparse.
    loadings
        Genes x kept programmes: the mean over the group's members of ``|w|`` of the genes each member holds (0 for
        a member that does not), zero outside the programme's genes. It ranks a programme's genes before the refit
        and starts the refit's ``W``.
    table
        One row per group (:data:`CONSENSUS_COLUMNS`; the kept programmes first, in the order of ``pip``'s
        columns): ``programme`` (its label), ``block``, ``reproducibility`` (share of the restarts with a member in
        the group), ``agreement`` (the mean over the members of the Jaccard index of each member's genes with the
        programme's genes), ``n_members``, ``n_genes`` (``pip > 0.5``), ``n_anchor_genes`` (of those, genes in no
        other kept programme), ``identifiable`` (kept, with at least two anchor genes: the model's identifiability
        condition) and ``kept`` (members from at least ``min_share`` of the restarts, and at least one gene).
        ``factor`` is empty here; a refitted model fills it with the names of its factors.
    members
        One row per active programme of every restart (:data:`MEMBER_COLUMNS`): ``restart`` (position), ``factor``
        (that restart's factor), ``block``, ``programme`` (the group it joined, empty for an outlier), ``density``
        (mean cosine distance to its nearest other programmes) and ``outlier``.
    restarts
        One row per restart: ``restart``, ``n_active``, ``n_outliers`` and ``n_in_kept`` (its programmes in kept
        groups).
    selection
        How the number of programmes depends on the cut (:data:`SELECTION_COLUMNS`): for each candidate cosine
        distance at which the grouping tree is cut, the number of kept programmes, of groups, and the mean
        silhouette of the grouped programmes (cosine distance). ``distance`` is the cut used.
    distance
        The cut used (cosine distance).
    blocks
        The block label of each kept programme, in the order of ``pip``'s columns.
    """

    pip: np.ndarray
    loadings: np.ndarray
    table: pd.DataFrame
    members: pd.DataFrame
    restarts: pd.DataFrame
    selection: pd.DataFrame
    distance: float
    blocks: list[str] = field(default_factory=list)

    @property
    def n_programmes(self) -> int:
        """Number of kept programmes."""
        return int(self.pip.shape[1])

    def block_counts(self, block_names: Sequence[str]) -> dict[str, int]:
        """Number of kept programmes in each block of ``block_names`` (0 for a block with none)."""
        counts = dict.fromkeys(block_names, 0)
        for name in self.blocks:
            counts[name] += 1
        return counts


def check_consensus_options(
    *, min_share: float, distance: float, max_density: float | None, pip_threshold: float = 0.5
) -> None:
    """Check the consensus options before any restart is fitted; raise :class:`InvalidInputError` naming the fix."""
    for name, value, low, high in (
        ("min_share", min_share, 0.0, 1.0),
        ("distance", distance, 0.0, 2.0),
        ("pip_threshold", pip_threshold, 0.0, 1.0),
        *([] if max_density is None else [("max_density", max_density, 0.0, 2.0)]),
    ):
        if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
            raise InvalidInputError(f"{name} must be a number, got {value!r}.")
        if not low < float(value) <= high:
            raise InvalidInputError(
                f"{name} must be in ({low:g}, {high:g}], got {value}"
                + (" (a share of the restarts, e.g. 0.5)." if name == "min_share" else ".")
            )


def _block_columns(blocks: Sequence[Sequence[int]] | None, n_factors: int) -> list[np.ndarray]:
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


def _unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (an all-zero row stays zero)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)


def _local_density(dist: np.ndarray, n_neighbours: int) -> np.ndarray:
    """Mean distance of each point to its ``n_neighbours`` nearest other points (cNMF's local density)."""
    n = dist.shape[0]
    if n < 2:
        return np.zeros(n)
    others = np.sort(dist + np.diag(np.full(n, np.inf)), axis=1)[:, : min(n_neighbours, n - 1)]
    return others.mean(axis=1)


def _average_linkage(dist: np.ndarray) -> Callable[[float], np.ndarray]:
    """The average-linkage tree of a distance matrix, as a function from a cut distance to group labels 0, 1, ..."""
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    if dist.shape[0] == 1:
        return lambda distance: np.zeros(1, dtype=np.int64)
    tree = linkage(squareform(dist, checks=False), method="average")
    return lambda distance: fcluster(tree, t=distance, criterion="distance").astype(np.int64) - 1


def _silhouette(dist: np.ndarray, labels: np.ndarray) -> float:
    """Mean silhouette of a grouping on a precomputed distance (NaN when it has one group or only singletons)."""
    from sklearn.metrics import silhouette_score

    n_groups = np.unique(labels).size
    if not 2 <= n_groups <= labels.size - 1:
        return float("nan")
    return float(silhouette_score(dist, labels, metric="precomputed"))


def consensus_programmes(
    pips: Sequence[np.ndarray],
    loadings: Sequence[np.ndarray] | None = None,
    *,
    blocks: Sequence[Sequence[int]] | None = None,
    block_names: Sequence[str] | None = None,
    pip_threshold: float = 0.5,
    min_share: float = 0.5,
    distance: float = 0.6,
    max_density: float | None = None,
) -> Consensus:
    """Pool the programmes of several restarts, group them, and keep the groups most restarts contribute to.

    Each active programme of each restart (a factor with a gene of ``p* > pip_threshold``) is a vector over genes:
    ``|w|`` of its genes, zero elsewhere, scaled to unit length; two programmes are as far apart as one minus the
    cosine of their vectors. As in cNMF (Kotliar et al. 2019), outliers go first: a programme whose mean distance
    to its nearest other programmes (as many as 30% of the restarts, at least one) exceeds ``max_density`` is
    one no other restart finds. The others are grouped by average linkage, the tree cut at ``distance``: a group
    holds programmes whose mean pairwise distance is at most ``distance``. A group is kept when it has members
    from at least ``min_share`` of the restarts; its genes are those more than half of its members hold, its
    ``p*`` the share of members that hold each gene. Programmes are grouped within a block only (``blocks``:
    e.g. the shared factors of a multi-study model apart from each study's).

    Parameters
    ----------
    pips
        Each restart's inclusion probabilities, genes x factors (the same genes and factors in every restart).
    loadings
        Each restart's ``W`` (the same shapes); ``None``: the programmes' vectors are their ``p*``.
    blocks
        Groups of factor columns grouped apart, each column in one group (default: one group of all).
    block_names
        A label per block (default ``"all"`` for one block, ``"block_0"`` ... otherwise).
    pip_threshold
        Inclusion threshold defining a restart's programme.
    min_share
        Share of the restarts that must contribute to a group for it to be kept.
    distance
        Cosine distance at which the average-linkage tree is cut. The default, 0.6, groups programmes that share
        their strongest genes and leaves apart two cuts of the same cells into different programmes;
        :attr:`Consensus.selection` shows how the number of programmes moves with it.
    max_density
        Programmes whose mean distance to their nearest other programmes exceeds it are outliers (default: the
        ``distance`` cut, so an outlier is a programme no group could take in).

    Returns
    -------
    Consensus

    Examples
    --------
    >>> import numpy as np
    >>> a = np.zeros((8, 2)); a[:3, 0] = a[3:6, 1] = 0.9   # two programmes
    >>> b = a[:, ::-1].copy()                               # the same two, in the other order
    >>> c = a.copy(); c[:, 1] = 0.0; c[6:, 1] = 0.9         # the second one is another programme
    >>> result = consensus_programmes([a, b, c])
    >>> result.table[["reproducibility", "n_genes", "kept"]].round(2).to_dict("list")
    {'reproducibility': [1.0, 0.67], 'n_genes': [3, 3], 'kept': [True, True]}
    >>> result.members[["restart", "programme", "outlier"]].tail(2).to_dict("list")  # c's own: an outlier
    {'restart': [2, 2], 'programme': ['programme_0', ''], 'outlier': [False, True]}
    """
    pips = [np.asarray(p, dtype=np.float64) for p in pips]
    if len(pips) < 2:
        raise InvalidInputError(f"A consensus needs at least 2 restarts, got {len(pips)}.")
    if len({p.shape for p in pips}) > 1:
        raise InvalidInputError(f"The restarts' p* differ in shape: {sorted({p.shape for p in pips})}.")
    if loadings is not None and [np.shape(w) for w in loadings] != [p.shape for p in pips]:
        raise InvalidInputError("loadings must give one W per restart, each of the shape of its p*.")
    check_consensus_options(
        min_share=min_share, distance=distance, max_density=max_density, pip_threshold=pip_threshold
    )
    n_restarts = len(pips)
    n_genes, n_factors = pips[0].shape
    columns = _block_columns(blocks, n_factors)
    if block_names is None:
        block_names = ["all"] if len(columns) == 1 else [f"block_{b}" for b in range(len(columns))]
    if len(block_names) != len(columns):
        raise InvalidInputError(f"block_names must name each of the {len(columns)} blocks, got {list(block_names)}.")
    weights = pips if loadings is None else [np.abs(np.asarray(w, dtype=np.float64)) for w in loadings]
    max_density = distance if max_density is None else float(max_density)
    n_neighbours = max(1, int(round(0.3 * n_restarts)))

    kept_pip, kept_load, kept_blocks, rows, member_rows = [], [], [], [], []
    selection = {d: [0, 0, []] for d in SELECTION_GRID}  # distance -> kept, groups, (silhouette, size) per block
    for cols, block in zip(columns, block_names, strict=True):
        # the block's pooled programmes: (restart, factor) and their gene sets and unit vectors
        origin = [(r, int(k)) for r in range(n_restarts) for k in cols if (pips[r][:, k] > pip_threshold).any()]
        if not origin:
            continue
        held = np.stack([pips[r][:, k] > pip_threshold for r, k in origin])  # programmes x genes
        strengths = np.where(held, np.stack([weights[r][:, k] for r, k in origin]), 0.0)  # |w| of their genes
        vectors = _unit_rows(strengths)
        dist = np.clip(1.0 - vectors @ vectors.T, 0.0, 2.0)
        np.fill_diagonal(dist, 0.0)
        density = _local_density(dist, n_neighbours)
        inlier = density <= max_density
        labels = np.full(len(origin), -1, dtype=np.int64)
        restart_of = np.array([r for r, _ in origin])
        if inlier.any():
            sub = dist[np.ix_(inlier, inlier)]
            cut_at = _average_linkage(sub)
            labels[inlier] = cut_at(distance)
            for d in SELECTION_GRID:
                cut = cut_at(d)
                shares = [np.unique(restart_of[inlier][cut == g]).size / n_restarts for g in np.unique(cut)]
                selection[d][0] += int(sum(s >= min_share for s in shares))
                selection[d][1] += len(shares)
                selection[d][2].append((_silhouette(sub, cut), int(inlier.sum())))
        groups = []
        for g in np.unique(labels[labels >= 0]):
            at = np.flatnonzero(labels == g)
            share = held[at].mean(axis=0)
            genes = share > 0.5
            reproducibility = np.unique(restart_of[at]).size / n_restarts
            kept = bool(reproducibility >= min_share and genes.any())
            strength = strengths[at].mean(axis=0)
            agreement = float(jaccard_matrix(held[at].T, genes[:, None])[:, 0].mean()) if genes.any() else 0.0
            groups.append((kept, reproducibility, int(genes.sum()), g, at, share, genes, strength, agreement))
        # kept groups first, the most reproducible and then the largest first; then the others
        groups.sort(key=lambda t: (not t[0], -t[1], -t[2], int(t[3])))
        names = {}
        for kept, reproducibility, n_in, g, at, share, genes, strength, agreement in groups:
            label = f"{block}_{len(names)}" if block != "all" else f"programme_{len(names)}"
            names[g] = label
            rows.append(
                {"factor": "", "programme": label, "block": block, "reproducibility": reproducibility,
                 "agreement": agreement, "n_members": int(at.size), "n_genes": n_in, "kept": kept}
            )  # fmt: skip
            if kept:
                kept_pip.append(share)
                kept_load.append(np.where(genes, strength, 0.0))
                kept_blocks.append(block)
        for i, (r, k) in enumerate(origin):
            member_rows.append(
                {"restart": r, "factor": f"factor_{k}", "block": block, "programme": names.get(labels[i], ""),
                 "density": float(density[i]), "outlier": bool(not inlier[i])}
            )  # fmt: skip

    pip = np.stack(kept_pip, axis=1) if kept_pip else np.zeros((n_genes, 0))
    loads = np.stack(kept_load, axis=1) if kept_load else np.zeros((n_genes, 0))
    table = pd.DataFrame(rows, columns=[c for c in CONSENSUS_COLUMNS if c not in ("n_anchor_genes", "identifiable")])
    in_programme = pip > 0.5
    anchors = (in_programme & (in_programme.sum(axis=1) == 1)[:, None]).sum(axis=0)
    table["n_anchor_genes"] = 0
    table.loc[table["kept"].to_numpy(dtype=bool), "n_anchor_genes"] = anchors
    table["identifiable"] = table["kept"].astype(bool) & (table["n_anchor_genes"] >= 2)
    table = table[CONSENSUS_COLUMNS].astype({"kept": bool, "identifiable": bool})
    table = pd.concat([table[table["kept"]], table[~table["kept"]]], ignore_index=True)  # kept: pip's order
    members = pd.DataFrame(member_rows, columns=MEMBER_COLUMNS)
    restarts = pd.DataFrame(
        {
            "restart": np.arange(n_restarts),
            "n_active": [int((members["restart"] == r).sum()) for r in range(n_restarts)],
            "n_outliers": [int((members["outlier"] & (members["restart"] == r)).sum()) for r in range(n_restarts)],
            "n_in_kept": [
                int(members.loc[members["restart"] == r, "programme"].isin(table.loc[table["kept"], "programme"]).sum())
                for r in range(n_restarts)
            ],
        }
    )
    selection_table = pd.DataFrame(
        [
            {
                "distance": float(d),
                "n_programmes": kept,
                "n_groups": n_groups,
                "silhouette": _weighted_mean(scores),
            }
            for d, (kept, n_groups, scores) in selection.items()
        ],
        columns=SELECTION_COLUMNS,
    )
    return Consensus(
        pip=pip, loadings=loads, table=table, members=members, restarts=restarts, selection=selection_table,
        distance=float(distance), blocks=kept_blocks,
    )  # fmt: skip


def _weighted_mean(scores: list[tuple[float, int]]) -> float:
    """Mean of the blocks' silhouettes weighed by their numbers of programmes (NaN blocks left out)."""
    valid = [(s, n) for s, n in scores if np.isfinite(s)]
    if not valid:
        return float("nan")
    return float(sum(s * n for s, n in valid) / sum(n for _, n in valid))


def _block_names(model: Any) -> tuple[list[np.ndarray] | None, list[str] | None]:
    """The factor columns grouped apart, and their labels: a multi-study model's shared block and each study's
    block; ``None`` (one block of all) for a single-study model.
    """
    block_slices = getattr(model.module, "block_slices", None)
    if block_slices is None:
        return None, None
    slices = block_slices()
    studies = list(getattr(model, "studies", []))
    names = ["shared" if m < 0 else str(studies[m]) for _, m, _ in slices]
    return [np.arange(cols.start, cols.stop) for _, _, cols in slices], names


def refit_consensus(
    model_cls: Any,
    adata: Any,
    consensus: Consensus,
    *,
    seed: int,
    model_kwargs: dict[str, Any],
    train_kwargs: dict[str, Any],
) -> Any:
    """Fit one model whose factors are the consensus programmes, their supports held fixed.

    The model has one factor per kept programme (per block, for a multi-study model); its mask ``W`` starts at the
    programmes' mean loadings and is zero, and stays zero, outside their genes; ``p*`` is the consensus's and is
    not updated. The weights on the programmes' genes, the decoder's network and the encoder are trained as in
    any fit (:meth:`SparseVAE.train <scsparse.model.SparseVAE.train>` with ``train_kwargs``, less ``exact_zeros``:
    the decoder of a fixed support computes that support only).

    Parameters
    ----------
    model_cls
        :class:`~scsparse.model.SparseVAE` or :class:`~scsparse.model.MultiStudySparseVAE`.
    adata
        The AnnData the restarts were fitted to (registered with ``model_cls.setup_anndata``).
    consensus
        The grouping (:func:`consensus_programmes`) of the restarts' programmes.
    seed
        The refit's seed (initial weights, split and training).
    model_kwargs
        The restarts' constructor arguments; the numbers of factors are replaced by the consensus's.
    train_kwargs
        Passed to :meth:`train`.

    Returns
    -------
    SparseVAE
        The trained refit (of ``model_cls``).

    Raises
    ------
    InvalidInputError
        When no programme is kept; its ``consensus`` attribute holds the grouping.

    Examples
    --------
    >>> arrays = [(fit.get_inclusion_probabilities().to_numpy(), fit.get_loadings().to_numpy()) for fit in fits]
    >>> grouping = scsparse.model.consensus_programmes([p for p, _ in arrays], [w for _, w in arrays])
    >>> model = scsparse.model.refit_consensus(
    ...     scsparse.model.SparseVAE, adata, grouping, seed=0, model_kwargs={}, train_kwargs={}
    ... )
    """
    import torch

    if consensus.n_programmes == 0:
        error = InvalidInputError(
            "No programme reproduces in the restarts: no group of programmes has members from at least min_share of "
            "them. Fit more restarts, lower min_share, or raise distance to group looser programmes; the error's "
            "consensus.table lists every group and its reproducibility."
        )
        error.consensus = consensus  # the grouping, to read without refitting the restarts
        raise error
    kwargs = {**model_kwargs, **model_cls._consensus_factor_kwargs(consensus), "fixed_support": True}
    kwargs.pop("mask_init", None)  # the refit's W starts at the consensus loadings, whatever the restarts' start
    model = model_cls(adata, seed=int(seed), **kwargs)
    model.module.fix_support_(
        torch.as_tensor(consensus.pip, dtype=torch.float32), torch.as_tensor(consensus.loadings, dtype=torch.float32)
    )
    model.train(**{k: v for k, v in train_kwargs.items() if k != "exact_zeros"})
    return model


def _attach(model: Any, consensus: Consensus, restarts: pd.DataFrame, params: dict[str, Any]) -> Any:
    """Give the refitted model its consensus tables (``consensus_``, ``consensus_members_``, ``restarts_`` ...)."""
    table = consensus.table.copy()
    names = list(model.factor_names)
    table.loc[table["kept"], "factor"] = names[: int(table["kept"].sum())]
    model.consensus_ = table
    model.consensus_members_ = consensus.members.copy()
    model.consensus_selection_ = consensus.selection.copy()
    model.restarts_ = restarts
    model.consensus_params_ = params
    return model


def _restart_arrays(model: Any) -> tuple[np.ndarray, np.ndarray]:
    """A trained restart's ``p*`` and ``W`` (genes x factors)."""
    return model.get_inclusion_probabilities().to_numpy(), model.get_loadings().to_numpy()


def consensus_of(
    models: Sequence[Any],
    *,
    min_share: float = 0.5,
    distance: float = 0.6,
    max_density: float | None = None,
    refit_seed: int | None = None,
    train_kwargs: dict[str, Any] | None = None,
) -> Any:
    """The pooled consensus of trained restarts, refitted as one model.

    Use it on fits made elsewhere (other seeds of the same model on the same AnnData);
    :meth:`SparseVAE.consensus <scsparse.model.SparseVAE.consensus>` fits the restarts and calls the same steps.

    Parameters
    ----------
    models
        Trained :class:`~scsparse.model.SparseVAE` (or :class:`~scsparse.model.MultiStudySparseVAE`) models of the
        same AnnData and settings, at least two. A multi-study model's shared programmes are grouped with the
        shared programmes of the other restarts, each study's with that study's.
    min_share, distance, max_density
        As in :func:`consensus_programmes`.
    refit_seed
        The refit's seed (default: the first restart's).
    train_kwargs
        Passed to the refit's :meth:`train` (default: the first restart's ``max_epochs`` and ``batch_size``).

    Returns
    -------
    SparseVAE
        The refit, with ``consensus_``, ``consensus_members_``, ``consensus_selection_``, ``restarts_`` and
        ``consensus_params_``.

    Examples
    --------
    >>> fits = [scsparse.model.SparseVAE(adata, seed=s) for s in range(5)]
    >>> for fit in fits:
    ...     fit.train()
    >>> model = scsparse.model.consensus_of(fits)
    >>> model.consensus_
    """
    models = list(models)
    if len(models) < 2:
        raise InvalidInputError(f"A consensus needs at least 2 trained restarts, got {len(models)}.")
    if len({type(m) for m in models}) > 1 or len({tuple(m.factor_names) for m in models}) > 1:
        raise InvalidInputError("The restarts of a consensus must be models of one class with the same factors.")
    if len({tuple(m._gene_names) for m in models}) > 1:
        raise InvalidInputError("The restarts of a consensus must be fitted to the same genes, in the same order.")
    if not all(m.is_trained_ for m in models):
        raise InvalidInputError("Every restart of a consensus must be trained: call train() on each first.")
    if models[0].adata is None:
        raise InvalidInputError("The restarts must hold their AnnData (the refit trains on it); load them with it.")
    check_consensus_options(min_share=min_share, distance=distance, max_density=max_density)
    first = models[0]
    init = first.init_params_  # scvi-tools': the named arguments, and **module_kwargs under "kwargs"
    model_kwargs = {**init["non_kwargs"], **init["kwargs"].get("module_kwargs", {})}
    model_kwargs.pop("seed", None)
    if train_kwargs is None:
        train_kwargs = {k: first.train_kwargs_[k] for k in ("max_epochs", "batch_size") if k in first.train_kwargs_}
    seeds = [int(getattr(m, "init_seed", m.seed)) for m in models]
    epochs = [len(m.history["elbo_train"]) for m in models]
    arrays = [_restart_arrays(m) for m in models]
    return _pooled_refit(
        type(first), first.adata, arrays, seeds, epochs, _block_names(first),
        min_share=min_share, distance=distance, max_density=max_density,
        refit_seed=seeds[0] if refit_seed is None else int(refit_seed),
        model_kwargs=model_kwargs, train_kwargs=dict(train_kwargs),
    )  # fmt: skip


def _pooled_refit(
    model_cls: Any,
    adata: Any,
    arrays: list[tuple[np.ndarray, np.ndarray]],
    seeds: list[int],
    epochs: list[int],
    blocks: tuple[list[np.ndarray] | None, list[str] | None],
    *,
    min_share: float,
    distance: float,
    max_density: float | None,
    refit_seed: int,
    model_kwargs: dict[str, Any],
    train_kwargs: dict[str, Any],
) -> Any:
    """Group the restarts' programmes, refit the kept ones, and attach the tables."""
    consensus = consensus_programmes(
        [p for p, _ in arrays], [w for _, w in arrays], blocks=blocks[0], block_names=blocks[1],
        min_share=min_share, distance=distance, max_density=max_density,
    )  # fmt: skip
    logger.info(
        "consensus: %d of %d groups kept; refitting with seed %d",
        consensus.n_programmes, len(consensus.table), refit_seed,
    )  # fmt: skip
    model = refit_consensus(
        model_cls, adata, consensus, seed=refit_seed, model_kwargs=model_kwargs, train_kwargs=train_kwargs
    )
    restarts = consensus.restarts.copy()
    restarts.insert(1, "seed", seeds)
    restarts.insert(2, "epochs", epochs)
    params = {
        "n_restarts": len(seeds), "min_share": float(min_share), "distance": float(distance),
        "max_density": float(distance if max_density is None else max_density), "refit_seed": int(refit_seed),
    }  # fmt: skip
    return _attach(model, consensus, restarts, params)


def fit_consensus(
    model_cls: Any,
    adata: Any,
    *,
    seeds: Sequence[int],
    min_share: float,
    distance: float,
    max_density: float | None,
    train_kwargs: dict[str, Any],
    model_kwargs: dict[str, Any],
) -> Any:
    """Fit one model per seed, one after another, pool their programmes and refit the consensus.

    Only each restart's ``p*`` and ``W`` are kept while the next one trains. See :meth:`SparseVAE.consensus
    <scsparse.model.SparseVAE.consensus>` for the parameters.
    """
    arrays, epochs, blocks = [], [], (None, None)
    for r, seed in enumerate(seeds):
        model = model_cls(adata, seed=int(seed), **model_kwargs)
        model.train(**train_kwargs)
        logger.info("consensus: restart %d of %d (seed %d): %d active factors", r + 1, len(seeds), seed,
                    len(model.active_factors()))  # fmt: skip
        arrays.append(_restart_arrays(model))
        epochs.append(len(model.history["elbo_train"]))
        blocks = _block_names(model)
        del model
    return _pooled_refit(
        model_cls, adata, arrays, [int(s) for s in seeds], epochs, blocks,
        min_share=min_share, distance=distance, max_density=max_density, refit_seed=int(seeds[0]),
        model_kwargs=model_kwargs, train_kwargs=train_kwargs,
    )  # fmt: skip
