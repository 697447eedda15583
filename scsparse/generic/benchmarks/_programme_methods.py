"""The methods the programme benchmarks fit (``bench peers``, ``bench stability``'s resampled cells), each fitted and
read the way its authors recommend.

Every method gets the same cells and genes, the same maximum number of factors ``K`` and the same seed; the
neural ones the same epoch budget. Each fit returns a :class:`ProgrammeFit`: the cells x factors representation, the
programmes (gene lists, strongest gene first) with each programme's activity in every cell, and the factors it
kept. How each method's programmes are read (:data:`READING`):

- **SparseVAE** — :func:`scsparse.tl.programme_genes`: the genes with ``p* > 0.5`` of each active factor, split by
  the direction they go with it; the prior decides the size of each programme and which factors stay on.
  "restarts" fits ``FitBudget.restarts`` seeds (the first is the plain fit of the seed) and keeps the lowest
  training objective (:func:`scsparse.model.select_best`); "consensus" fits ``FitBudget.consensus_restarts``
  seeds (the first the plain fit of the seed, the others with their own split), pools their programmes, keeps the
  groups at least half of them feed and refits on those supports (:func:`scsparse.model.consensus_of`).
- **LDVAE** (``scvi.model.LinearSCVI``) — the top genes of each factor's linear decoder loadings
  (``get_loadings()``), positive and negative separately.
- **DRVI** (``scvi.external.DRVI``, scvi-tools >= 1.5) — its interpretability scores (``OOD_combined``, by
  direction) after ``set_latent_dimension_stats``; directions it flags as vanished are dropped. "DRVI" has the
  common budget (``K`` factors, the top ``n_top`` genes); "DRVI (defaults)" is DRVI as its authors recommend: its
  own default number of latent dimensions (32 in scvi-tools 1.5, read from the installed signature), so that its
  mechanism for switching dimensions off has spare ones, and its programmes chosen by its own gene-selection rule
  (:func:`drvi_selected_genes`) instead of a fixed size.
- **NMF (KL)** — scikit-learn's NMF with the Kullback-Leibler loss on library-size-normalised counts; the top
  genes of each component.
- **cNMF** — consensus NMF (PyPI ``cnmf``) over many NMF replicates; the top genes of each programme's
  z-scored spectrum (``gene_spectra_score``), its own marker ranking.
- **PCA** — of log-normalised, scaled expression (scanpy's recipe); the top genes of each component's
  loadings, positive and negative separately.

A method that cannot run in the environment raises :class:`MethodUnavailable` with the reason (DRVI needs
scvi-tools 1.5, which needs Python 3.12; cNMF is in the ``peers`` extra).
"""

from __future__ import annotations

import contextlib
import inspect
import io
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp
from anndata import AnnData

from ._fits import ModelStore, StoredFit, measured, scvi_tools_fit
from ._programme_fit import EQUAL_SIZES, FitBudget, ProgrammeFit, read_sparsevae

__all__ = [
    "DEFAULT_METHODS",
    "DETERMINISTIC",
    "PEER_METHODS",
    "READING",
    "MethodUnavailable",
    "counts_matrix",
    "drvi_selected_genes",
    "fit_peer",
    "signed_programmes",
    "slab_programmes",
]

#: The methods, in the order they run and are shown.
PEER_METHODS: tuple[str, ...] = (
    "SparseVAE", "SparseVAE (restarts)", "SparseVAE (consensus)", "LDVAE", "DRVI", "DRVI (defaults)", "NMF (KL)",
    "cNMF", "PCA",
)  # fmt: skip

#: The methods a run fits when it is not told which: all but the restarts, a several-fit row with no peer of the
#: same budget (the consensus is the several-fit row, set against cNMF's consensus); the restarts run when named.
DEFAULT_METHODS: tuple[str, ...] = tuple(m for m in PEER_METHODS if m != "SparseVAE (restarts)")

#: How each method's programmes are read (stated in the summary).
READING: dict[str, str] = {
    "SparseVAE": "genes with p* > 0.5 of each active factor, by direction (tl.programme_genes)",
    "SparseVAE (restarts)": "as SparseVAE, the fit with the lowest training objective of several seeds (select_best)",
    "SparseVAE (consensus)": "as SparseVAE, the pooled consensus of several seeds refitted (consensus_of): the "
    "groups of programmes at least half of them feed, genes with consensus p* > 0.5",
    "LDVAE": "top genes of each factor's decoder loadings (get_loadings), by sign",
    "DRVI": "top genes of the OOD_combined interpretability scores by direction; vanished directions dropped",
    "DRVI (defaults)": "DRVI's default number of latent dimensions; the genes its own selection rule keeps "
    "(drvi_selected_genes), by OOD_combined; vanished directions dropped",
    "NMF (KL)": "top genes of each component (components_)",
    "cNMF": "top genes of each consensus programme's z-scored spectrum (gene_spectra_score)",
    "PCA": "top genes of each component's loadings, by sign",
}


#: Methods whose fit does not depend on the seed: their programmes agree between seeds by construction (PCA), so
#: their stability is not a result and is not compared. NMF's ``nndsvda`` start depends on the seed only through a
#: randomised SVD (stability 0.96-0.98 in the record): near, not by construction.
DETERMINISTIC: frozenset[str] = frozenset({"PCA"})


class MethodUnavailable(RuntimeError):
    """A method that cannot run in this environment; the message says why and what would make it run."""


# ---------------------------------------------------------------------------------------------- reading helpers
def _top_by_sign(weights: np.ndarray, n_top: int, sign: int) -> np.ndarray:
    """Indices of the ``n_top`` largest ``sign * weights`` that are > 0, strongest first."""
    w = sign * np.asarray(weights, dtype=np.float64)
    order = np.argsort(-w, kind="stable")[:n_top]
    return order[w[order] > 0]


def signed_programmes(
    loadings: np.ndarray, scores: np.ndarray, n_top: int, directions: tuple[int, ...] = (1, -1)
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Top genes of each column of genes x factors ``loadings`` by sign, with the matching cell activity."""
    programmes, activity = {}, {}
    for k in range(loadings.shape[1]):
        for sign in directions:
            genes = _top_by_sign(loadings[:, k], n_top, sign)
            if genes.size:
                name = f"{k}{'+' if sign > 0 else '-'}"
                programmes[name] = genes
                activity[name] = sign * np.asarray(scores[:, k], dtype=np.float64)
    return programmes, activity


def slab_programmes(
    weights: np.ndarray, slab: np.ndarray, scores: np.ndarray, n_rank: int
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], dict[str, np.ndarray]]:
    """A spike-and-slab model's own reading: per factor and direction, the genes whose weight is more likely in the
    slab than in the spike (posterior slab probability ``slab > 0.5``), strongest weight first.

    Returns programmes, activities and rankings (the programme's genes, then the direction's other genes by
    weight, ``n_rank`` in all: what the equal-size reading cuts).

    Examples
    --------
    >>> w = np.array([[2.0, 0.0], [1.0, -1.0], [0.1, -3.0]])
    >>> slab = np.array([[1.0, 0.0], [0.9, 0.8], [0.2, 1.0]])
    >>> programmes, _, rankings = slab_programmes(w, slab, np.ones((4, 2)), n_rank=3)
    >>> {k: v.tolist() for k, v in programmes.items()}, rankings["0+"].tolist()
    ({'0+': [0, 1], '1-': [2, 1]}, [0, 1, 2])
    """
    programmes, activity, rankings = {}, {}, {}
    for k in range(weights.shape[1]):
        for sign in (1, -1):
            ranked = _top_by_sign(weights[:, k], weights.shape[0], sign)
            inside = slab[ranked, k] > 0.5
            if inside.any():
                name = f"{k}{'+' if sign > 0 else '-'}"
                programmes[name] = ranked[inside]
                rankings[name] = np.concatenate([ranked[inside], ranked[~inside]])[:n_rank]
                activity[name] = sign * np.asarray(scores[:, k], dtype=np.float64)
    return programmes, activity, rankings


def counts_matrix(adata: AnnData) -> np.ndarray:
    x = adata.layers["counts"]
    return np.asarray(x.toarray() if sp.issparse(x) else x, dtype=np.float64)


# ---------------------------------------------------------------------------------------------- SparseVAE
def _fit_sparsevae(adata, budget, seed, batch_key, store: ModelStore) -> ProgrammeFit:
    made = store.fit_sparsevae(adata, budget.n_factors, budget.max_epochs, seed, batch_key)
    with measured() as m:
        fit = read_sparsevae(made.model, adata, "SparseVAE")
    fit.seconds, fit.peak_mb = made.seconds + m["seconds"], max(made.peak_mb, m["peak_mb"])
    return fit


def _several_fits(made: list[StoredFit], combine, adata, method: str) -> ProgrammeFit:
    """``combine`` (the models -> one model) read as ``method``; its cost is the fits' and the reading's."""
    with measured() as m:
        model = combine([f.model for f in made])
        fit = read_sparsevae(model, adata.copy(), method)
    fit.seconds = sum(f.seconds for f in made) + m["seconds"]
    fit.peak_mb = max([m["peak_mb"], *(f.peak_mb for f in made)])
    return fit


def _fit_sparsevae_restarts(adata, budget, seed, batch_key, store: ModelStore) -> ProgrammeFit:
    from scsparse.model import select_best

    from ._restarts import RESTART_SEED_STEP

    made = [
        store.fit_sparsevae(
            adata.copy(), budget.n_factors, budget.max_epochs, seed, batch_key, init_seed=seed + r * RESTART_SEED_STEP
        )  # the same split, initial weights of their own
        for r in range(budget.restarts)
    ]
    selected: list[int] = []

    def best_of(models):
        best, table = select_best(models)
        selected.append(int(np.flatnonzero(table["selected"].to_numpy())[0]))
        return best

    fit = _several_fits(made, best_of, adata, "SparseVAE (restarts)")
    fit.extra["selected_restart"] = float(selected[0])
    fit.extra["restarts"] = float(budget.restarts)
    return fit


def _fit_sparsevae_consensus(adata, budget, seed, batch_key, store: ModelStore) -> ProgrammeFit:
    from scsparse.model import consensus_of

    from ._restarts import RESTART_SEED_STEP

    made = [
        store.fit_sparsevae(adata.copy(), budget.n_factors, budget.max_epochs, seed + r * RESTART_SEED_STEP, batch_key)
        for r in range(budget.consensus_restarts)
    ]  # each restart its own initial weights and its own split; restart 0 is the seed's plain fit
    refit = {"max_epochs": budget.max_epochs, "enable_progress_bar": False}  # the restarts' budget
    fit = _several_fits(made, lambda models: consensus_of(models, train_kwargs=refit), adata, "SparseVAE (consensus)")
    fit.extra["restarts"] = float(budget.consensus_restarts)
    return fit


# ---------------------------------------------------------------------------------------------- scvi-tools peers
def _fit_ldvae(adata, budget, seed, batch_key, store=None) -> ProgrammeFit:
    import scvi

    setup = {"layer": "counts", "batch_key": batch_key}
    train = {"max_epochs": budget.max_epochs, "enable_progress_bar": False}
    network = {"n_latent": budget.n_factors}
    with (
        measured() as m,
        scvi_tools_fit(scvi.model.LinearSCVI, adata, seed, setup=setup, model=network, train=train) as fit,
    ):
        z = fit.model.get_latent_representation()
        programmes, activity = signed_programmes(fit.model.get_loadings().to_numpy(), z, budget.n_top)
    return ProgrammeFit("LDVAE", z, programmes, activity, budget.n_factors, m["seconds"], m["peak_mb"])


def _drvi_class():
    import scvi

    try:
        from scvi.external import DRVI
    except ImportError as exc:
        raise MethodUnavailable(
            f"scvi.external.DRVI needs scvi-tools >= 1.5 (Python >= 3.12); scvi-tools {scvi.__version__} is installed"
        ) from exc
    return DRVI


def drvi_selected_genes(max_possible: np.ndarray, min_possible: np.ndarray) -> np.ndarray:
    """DRVI's own rule for the genes a latent direction drives, on its out-of-distribution effect scores.

    The rule of DRVI's interpretation utilities (``calculate_differential_vars``; Moinfar et al., DRVI): a gene
    belongs to a direction when the direction can change it at least e-fold (``max_possible >= 1``, a natural-log
    fold change) and either that change is more than half the largest any direction makes on the gene, or its
    specific change (``min_possible``, the other dimensions held at their maximum) is more than a tenth of the
    gene's largest specific change. scvi-tools keeps the extremes of the traversal rather than every step, so the
    rule is applied to those.

    Parameters
    ----------
    max_possible, min_possible
        ``(n_directions, n_genes)`` effect scores of every latent direction (``OOD_max_possible_*`` and
        ``OOD_min_possible_*`` of :meth:`scvi.external.DRVI.calculate_interpretability_scores`, positive and
        negative directions stacked).

    Returns
    -------
    numpy.ndarray
        Boolean ``(n_directions, n_genes)``: the genes of each direction.

    Examples
    --------
    >>> import numpy as np
    >>> mx = np.array([[3.0, 0.5], [1.2, 2.0]])
    >>> mn = np.array([[2.0, 0.1], [0.1, 1.0]])
    >>> drvi_selected_genes(mx, mn).tolist()  # gene 0 in direction 1: weak, not specific; gene 1 in 0: < e-fold
    [[True, False], [False, True]]
    """
    mx = np.asarray(max_possible, dtype=np.float64)
    mn = np.asarray(min_possible, dtype=np.float64)
    if mx.shape != mn.shape or mx.ndim != 2:
        raise ValueError(f"expected two (n_directions, n_genes) arrays of one shape, got {mx.shape} and {mn.shape}")
    strong = mx > mx.max(axis=0, keepdims=True) / 2
    specific = mn > mn.max(axis=0, keepdims=True) / 10
    return (mx >= 1.0) & (strong | specific)


def _drvi_default_n_latent() -> int:
    drvi = _drvi_class()
    return int(inspect.signature(drvi.__init__).parameters["n_latent"].default)


def _fit_drvi_model(adata, n_latent, budget, seed, batch_key, own_rule: bool) -> ProgrammeFit:
    drvi = _drvi_class()
    n_rank = max(EQUAL_SIZES)
    setup = {"layer": "counts", "batch_key": batch_key}
    train = {"max_epochs": budget.max_epochs, "enable_progress_bar": False}
    with (
        measured() as m,
        scvi_tools_fit(drvi, adata, seed, setup=setup, model={"n_latent": n_latent}, train=train) as fit,
    ):
        model = fit.model
        z = model.get_latent_representation()
        embed = AnnData(np.asarray(z, dtype=np.float32))
        model.set_latent_dimension_stats(embed, adata=adata)
        model.calculate_interpretability_scores(embed, methods="OOD", seed=seed)
        suffixes = ("positive", "negative")
        combined = np.stack([np.asarray(embed.varm[f"OOD_combined_{s}"], dtype=np.float64) for s in suffixes])
        if own_rule:
            selected = drvi_selected_genes(
                np.concatenate([np.asarray(embed.varm[f"OOD_max_possible_{s}"]) for s in suffixes]),
                np.concatenate([np.asarray(embed.varm[f"OOD_min_possible_{s}"]) for s in suffixes]),
            ).reshape(combined.shape)
        programmes, activity, rankings = {}, {}, {}
        for i, (sign, suffix) in enumerate(((1, "positive"), (-1, "negative"))):
            vanished = embed.var[f"vanished_{suffix}_direction"].to_numpy(dtype=bool)
            for k in np.flatnonzero(~vanished):
                ranked = _top_by_sign(combined[i, k], max(n_rank, budget.n_top), 1)
                if own_rule:  # DRVI's reading: the selected genes with a positive score, strongest first
                    chosen = np.flatnonzero(selected[i, k] & (combined[i, k] > 0))
                    genes = chosen[np.argsort(-combined[i, k, chosen], kind="stable")]
                else:
                    genes = ranked[: budget.n_top]
                if genes.size:
                    name = f"{k}{'+' if sign > 0 else '-'}"
                    programmes[name] = genes
                    rankings[name] = ranked[:n_rank]
                    activity[name] = sign * np.asarray(z[:, k], dtype=np.float64)
        kept = int((~embed.var["vanished"].to_numpy(dtype=bool)).sum())
    extra = {"n_latent": n_latent}
    return ProgrammeFit(
        "DRVI", z, programmes, activity, kept, m["seconds"], m["peak_mb"], extra=extra, rankings=rankings
    )


def _fit_drvi(adata, budget, seed, batch_key, store=None) -> ProgrammeFit:
    return _fit_drvi_model(adata, budget.n_factors, budget, seed, batch_key, own_rule=False)


def _fit_drvi_defaults(adata, budget, seed, batch_key, store=None) -> ProgrammeFit:
    return _fit_drvi_model(adata, _drvi_default_n_latent(), budget, seed, batch_key, own_rule=True)


# ---------------------------------------------------------------------------------------------- matrix factorisations
def _fit_nmf(adata, budget, seed, batch_key, store=None) -> ProgrammeFit:
    from sklearn.decomposition import NMF

    with measured() as m:
        x = counts_matrix(adata)
        total = x.sum(1, keepdims=True)
        x = x / np.maximum(total, 1.0) * float(np.median(total))
        nmf = NMF(
            n_components=budget.n_factors,
            beta_loss="kullback-leibler",
            solver="mu",
            init="nndsvda",
            max_iter=1000,
            random_state=seed,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ConvergenceWarning at max_iter is reported by n_iter_
            usage = nmf.fit_transform(x)
        spectra = nmf.components_.T  # genes x K
        programmes, activity = signed_programmes(spectra, usage, budget.n_top, directions=(1,))
        kept = int(((spectra.max(0) > 0) & (usage.max(0) > 0)).sum())
    return ProgrammeFit("NMF (KL)", usage, programmes, activity, kept, m["seconds"], m["peak_mb"])


def _fit_cnmf(adata, budget, seed, batch_key, store=None) -> ProgrammeFit:
    try:
        from cnmf import cNMF
    except ImportError as exc:
        raise MethodUnavailable("cNMF is not installed: pip install 'scsparse[peers]' (PyPI cnmf)") from exc
    import anndata as ad

    k = budget.n_factors
    density = 0.5  # cNMF's default outlier filter
    with measured() as m, tempfile.TemporaryDirectory() as tmp:
        counts = ad.AnnData(
            sp.csr_matrix(counts_matrix(adata).astype(np.float32)),
            obs=pd.DataFrame(index=adata.obs_names),
            var=pd.DataFrame(index=adata.var_names),
        )
        path, genes = Path(tmp) / "counts.h5ad", Path(tmp) / "genes.txt"
        counts.write_h5ad(path)
        genes.write_text("\n".join(adata.var_names))
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            obj = cNMF(output_dir=tmp, name="peers")
            obj.prepare(
                counts_fn=str(path), components=[k], n_iter=budget.cnmf_iterations, seed=seed, genes_file=str(genes)
            )
            obj.factorize()
            obj.combine()
            obj.consensus(k=k, density_threshold=density, show_clustering=False, close_clustergram_fig=True)
            usage, spectra_scores, _, _ = obj.load_results(K=k, density_threshold=density)
        spectra = spectra_scores.reindex(adata.var_names).fillna(0.0).to_numpy(dtype=np.float64)  # genes x k
        usage = usage.loc[adata.obs_names].to_numpy(dtype=np.float64)
        programmes, activity = signed_programmes(spectra, usage, budget.n_top, directions=(1,))
    return ProgrammeFit("cNMF", usage, programmes, activity, spectra.shape[1], m["seconds"], m["peak_mb"])


def _fit_pca(adata, budget, seed, batch_key, store=None) -> ProgrammeFit:
    import scanpy as sc

    from scsparse.utils import torch_threads

    with measured() as m, torch_threads(None):
        x = AnnData(sp.csr_matrix(counts_matrix(adata)))
        sc.pp.normalize_total(x, target_sum=1e4)
        sc.pp.log1p(x)
        sc.pp.scale(x, max_value=10)
        sc.tl.pca(x, n_comps=budget.n_factors, random_state=seed)
        z = np.asarray(x.obsm["X_pca"], dtype=np.float64)
        programmes, activity = signed_programmes(np.asarray(x.varm["PCs"]), z, budget.n_top)
    return ProgrammeFit("PCA", z, programmes, activity, budget.n_factors, m["seconds"], m["peak_mb"])


_FITTERS = {
    "SparseVAE": _fit_sparsevae,
    "SparseVAE (restarts)": _fit_sparsevae_restarts,
    "SparseVAE (consensus)": _fit_sparsevae_consensus,
    "LDVAE": _fit_ldvae,
    "DRVI": _fit_drvi,
    "DRVI (defaults)": _fit_drvi_defaults,
    "NMF (KL)": _fit_nmf,
    "cNMF": _fit_cnmf,
    "PCA": _fit_pca,
}


def fit_peer(
    method: str,
    adata: AnnData,
    budget: FitBudget,
    seed: int,
    batch_key: str | None = None,
    *,
    store: ModelStore | None = None,
) -> ProgrammeFit:
    """Fit ``method`` to a copy of ``adata`` (counts in ``layers["counts"]``) and read its programmes.

    Parameters
    ----------
    method
        A name of :data:`PEER_METHODS`.
    adata
        The data set's cells and genes; not modified.
    budget
        Factors, epochs and the methods' own settings.
    seed
        Seed of the fit.
    batch_key
        ``obs`` column of the batches, given to the methods that model batches (SparseVAE, LDVAE, DRVI).
    store
        Where the SparseVAE rows get their fits (:class:`._fits.ModelStore`): one store for a data set's run lets
        a seed's plain fit serve as restart 0 of its restarts and its consensus, fitted once (default: a store of
        this call only).

    Raises
    ------
    MethodUnavailable
        When the method cannot run in this environment.
    """
    if method not in _FITTERS:
        raise ValueError(f"Unknown method {method!r}; choose from {', '.join(PEER_METHODS)}.")
    fit = _FITTERS[method](adata.copy(), budget, int(seed), batch_key, store or ModelStore())
    fit.method = method
    return fit
