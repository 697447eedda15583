"""The methods of ``scsparse bench guided``, each given the same gene sets and read the way its authors recommend.

Every method returns a :class:`GuidedFit`: its cell representation, its programmes (gene names, strongest first)
with their activity in every cell, the programme it ties to each gene set (``None``: it ties none, the reading
finds the best match afterwards) and whether its own mechanism switched a set off or flagged it.

- **SparseVAE (guided)** — ``SparseVAE(gene_sets=...)`` with ``N_FREE`` free factors beside the guided ones, trained
  as a user trains it (the settled stop); the programme of a set is its guided factor's genes with ``p* > 0.5``
  (:meth:`~scsparse.model.SparseVAE.guided_table`: set genes kept and genes added); a set is switched off or
  flagged when the table's status is ``"switched off"`` or ``"not supported"``.
- **SparseVAE (unguided)** — the same model without the sets, with as many factors in all; its programmes are
  :func:`scsparse.tl.programme_genes` (by direction), and a set's programme is the one that overlaps it most
  (Jaccard), as a user names free factors by enrichment afterwards. It has no way to flag a set.
- **Spectra** (PyPI ``scspectra``) — ``Spectra.est_spectra`` at the settings of its README (``lam=0.1``,
  ``delta=0.001``, ``rho=0.001``, ``kappa`` estimated, ``use_weights``, ``L=None``: one factor per set and one
  more, ``num_epochs=10000`` with its learning-rate schedule) on log-normalised counts (10,000 per cell, ``log1p``),
  every gene of the data (``use_highly_variable=False``: the data are already the variable genes) and global sets
  (``use_cell_types=False``: the cell-type labels are the held-out target of the accuracy). Factor ``i`` starts on
  set ``i``; its programme is its ``n_top_vals=50`` markers (``uns["SPECTRA_markers"]``), its activity the cell
  scores. A set is flagged when Spectra's own labelling (markers' overlap coefficient with the sets, threshold 0.2)
  does not give its factor the set's name.
- **expiMap** (``scarches.models.EXPIMAP``) — the reference model of its tutorial: the sets as the decoder mask
  (the data cut to the genes of some set, as the tutorial does), ``hidden_layer_sizes=[256, 256, 256]``, NB
  reconstruction, one condition, trained ``n_epochs=400`` with ``alpha=0.7`` (group lasso on the terms),
  ``alpha_kl=0.5``, ``alpha_epoch_anneal=130``, no weight decay and the tutorial's early stopping. The mask is
  hard: a term's genes are its set's, so it adds none and drops none by construction; its programme is the set's
  genes by decoder weight, its activity the latent mean times its direction (``latent_directions``); a set is
  switched off when the group lasso deactivates its term (``nonzero_terms``).
- **MuVI** (PyPI ``muvi``) — not installed: muvi 0.2.2 imports ``deep_getattr`` from pyro, which the locked
  pyro-ppl 1.9.2 no longer has, so it does not install cleanly beside scvi-tools; its rows say so.

Two packages need a compatibility step to import beside the locked stack, taken only where the name is missing
and undone afterwards: Spectra imports ``pkg_resources`` (unused; setuptools 81+ dropped it), given an empty module;
scArches 0.6.1 imports ``anndata.read`` (removed in anndata 0.12), given ``anndata.read_h5ad``.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import logging
import sys
import types
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from anndata import AnnData

from .._fits import fit_sparsevae, measured
from .._programme_fit import read_sparsevae
from .._programme_methods import MethodUnavailable, counts_matrix

__all__ = [
    "GUIDED_METHODS",
    "N_FREE",
    "NOT_INSTALLED",
    "GuidedBudget",
    "GuidedFit",
    "fit_guided_method",
]

#: The methods, in the order they run and are shown.
GUIDED_METHODS: tuple[str, ...] = ("SparseVAE (guided)", "SparseVAE (unguided)", "Spectra", "expiMap", "MuVI")

#: Methods that cannot be installed beside the locked environment, with the reason (their rows say it).
NOT_INSTALLED: dict[str, str] = {
    "MuVI": "not installed: muvi 0.2.2 imports pyro's deep_getattr, which the locked pyro-ppl 1.9.2 removed",
}

#: Free factors of the guided SparseVAE beside its guided ones (the unguided fit has as many factors in all).
N_FREE = 10


@dataclass(frozen=True)
class GuidedBudget:
    """Training budget of each method: a full run uses the methods' recommended settings, ``quick`` a smoke run."""

    sparsevae_epochs: int = 400
    spectra_epochs: int = 10000
    expimap_epochs: int = 400
    expimap_anneal: int = 130


@dataclass
class GuidedFit:
    """One method's fit given the gene sets.

    Attributes
    ----------
    method
        The method's name.
    representation
        Cells x dimensions (the input of the held-out cell-type classifier).
    programmes
        Programme name -> its genes (names), strongest first where the method ranks them.
    activity
        Programme name -> its activity in every cell.
    tied
        Gene set -> the programme the method ties to it (``None``: no tie, the best match is read afterwards).
    off
        Gene set -> whether the method switched it off or flagged it (absent: the method cannot say).
    seconds, peak_mb
        Wall time and peak memory growth of the fit and its reading.
    """

    method: str
    representation: np.ndarray
    programmes: dict[str, list[str]]
    activity: dict[str, np.ndarray]
    tied: dict[str, str | None]
    off: dict[str, bool] = field(default_factory=dict)
    seconds: float = float("nan")
    peak_mb: float = float("nan")


@contextlib.contextmanager
def _missing_names(patches: Mapping[tuple[Any, str], Any]) -> Iterator[None]:
    """Set attributes that a third-party import needs and the locked stack lacks; restore them afterwards."""
    added = []
    for (owner, name), value in patches.items():
        if not hasattr(owner, name):
            setattr(owner, name, value)
            added.append((owner, name))
    try:
        yield
    finally:
        for owner, name in added:
            delattr(owner, name)


@contextlib.contextmanager
def _print_options_kept() -> Iterator[None]:
    """Put numpy's and torch's print options back after the block: scArches sets both when its plotting modules are
    imported (numpy's precision to 2), which would change how every later array prints in the process.
    """
    import dataclasses

    import torch

    numpy_options = np.get_printoptions()
    torch_options = dataclasses.asdict(torch._tensor_str.PRINT_OPTS)  # torch has no public getter
    try:
        yield
    finally:
        np.set_printoptions(**numpy_options)
        for name, value in torch_options.items():
            setattr(torch._tensor_str.PRINT_OPTS, name, value)


def _import_spectra():
    try:
        with contextlib.suppress(ImportError):
            importlib.import_module("pkg_resources")
        added = "pkg_resources" not in sys.modules
        if added:
            sys.modules["pkg_resources"] = types.ModuleType("pkg_resources")  # imported, never used
        try:
            from Spectra import Spectra as spectra
        finally:
            if added:
                del sys.modules["pkg_resources"]
    except ImportError as exc:
        raise MethodUnavailable(f"not installed: Spectra needs scspectra (the peers extra): {exc}") from exc
    return spectra


def _import_expimap():
    import anndata

    previous = logging.root.manager.disable
    logging.disable(max(previous, logging.WARNING))  # scArches logs a warning per optional model it cannot load
    try:
        with (
            _missing_names({(anndata, "read"): anndata.read_h5ad}),
            contextlib.redirect_stdout(io.StringIO()),
            _print_options_kept(),
        ):
            import scarches  # noqa: F401 - registers its models
            from scarches.models import EXPIMAP
    except ImportError as exc:
        raise MethodUnavailable(f"not installed: expiMap needs scarches (the peers extra): {exc}") from exc
    finally:
        logging.disable(previous)
    return EXPIMAP


def _log_normalised(adata: AnnData) -> AnnData:
    """A copy with ``X`` the log1p of counts scaled to 10,000 per cell (dense), ``obs`` and ``var`` kept."""
    counts = counts_matrix(adata)
    size = np.maximum(counts.sum(axis=1, keepdims=True), 1.0)
    x = np.log1p(counts / size * 1e4).astype(np.float32)
    return AnnData(X=x, obs=adata.obs.copy(), var=adata.var[[]].copy())


# ---------------------------------------------------------------------------------------------- the methods
def _sparsevae(adata: AnnData, sets: dict[str, list[str]], seed: int, budget: GuidedBudget, guided: bool) -> GuidedFit:
    n_latent = N_FREE if guided else N_FREE + len(sets)
    kwargs = {"gene_sets": sets} if guided else {}
    model = fit_sparsevae(adata, n_latent, budget.sparsevae_epochs, seed, batch_key=None, **kwargs)
    fit = read_sparsevae(model, adata, "SparseVAE")
    genes = np.asarray(adata.var_names)
    programmes = {name: genes[idx].tolist() for name, idx in fit.programmes.items()}
    activity = dict(fit.activity)
    tied: dict[str, str | None] = dict.fromkeys(sets)
    off: dict[str, bool] = {}
    if guided:
        z = np.asarray(fit.factors)
        table = model.guided_table()
        for k, row in enumerate(table.itertuples()):  # the guided factors come first, in the order of the sets
            name = f"guided:{row.gene_set}"
            programmes[name] = [g for g in f"{row.kept_genes}; {row.added_genes}".split("; ") if g]
            activity[name] = z[:, k]
            tied[row.gene_set] = name
            off[row.gene_set] = row.status in ("switched off", "not supported")
    method = "SparseVAE (guided)" if guided else "SparseVAE (unguided)"
    return GuidedFit(method, np.asarray(fit.factors), programmes, activity, tied, off)


def _spectra(adata: AnnData, sets: dict[str, list[str]], seed: int, budget: GuidedBudget) -> GuidedFit:
    import torch

    spectra = _import_spectra()
    data = _log_normalised(adata)
    torch.manual_seed(seed)
    np.random.seed(seed)  # noqa: NPY002 - Spectra draws from numpy's global generator
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        spectra.est_spectra(
            adata=data, gene_set_dictionary={k: list(v) for k, v in sets.items()}, L=None,
            use_highly_variable=False, use_cell_types=False, use_weights=True, lam=0.1, delta=0.001, kappa=None,
            rho=0.001, n_top_vals=50, filter_sets=True, label_factors=True, overlap_threshold=0.2, clean_gs=True,
            min_gs_num=3, num_epochs=budget.spectra_epochs,
        )  # fmt: skip
    markers = np.asarray(data.uns["SPECTRA_markers"])
    scores = np.asarray(data.obsm["SPECTRA_cell_scores"], dtype=np.float64)
    labels = [str(name).split("-X-")[-1] for name in data.uns["SPECTRA_overlap"].index]
    programmes = {f"factor_{i}": [str(g) for g in markers[i]] for i in range(markers.shape[0])}
    activity = {f"factor_{i}": scores[:, i] for i in range(scores.shape[1])}
    tied = {name: f"factor_{i}" for i, name in enumerate(sets)}  # factor i starts on set i (all sets kept)
    off = {name: labels[i] != name for i, name in enumerate(sets)}
    return GuidedFit("Spectra", scores, programmes, activity, tied, off)


def _expimap(adata: AnnData, sets: dict[str, list[str]], seed: int, budget: GuidedBudget) -> GuidedFit:
    expimap = _import_expimap()
    names = list(sets)
    mask = np.column_stack([np.isin(adata.var_names, sets[name]) for name in names]).astype(np.float32)
    keep = mask.sum(axis=1) > 0
    x = counts_matrix(adata)[:, keep].astype(np.float32)
    data = AnnData(X=x, obs=adata.obs[[]].copy(), var=adata.var[[]].iloc[np.flatnonzero(keep)].copy())
    data.obs["condition_all"] = "all"
    data.varm["I"] = mask[keep]
    data.uns["terms"] = names
    early = {
        "early_stopping_metric": "val_unweighted_loss", "threshold": 0, "patience": 50, "reduce_lr": True,
        "lr_patience": 13, "lr_factor": 0.1,
    }  # fmt: skip
    quiet = contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO())
    with quiet[0], quiet[1], warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scArches' own pandas and torch deprecation warnings
        model = expimap(adata=data, condition_key="condition_all", hidden_layer_sizes=[256, 256, 256], recon_loss="nb")
        model.train(
            n_epochs=budget.expimap_epochs, alpha_epoch_anneal=budget.expimap_anneal, alpha=0.7, alpha_kl=0.5,
            weight_decay=0.0, early_stopping_kwargs=early, use_early_stopping=True, monitor_only_val=False,
            seed=seed,
        )  # fmt: skip
        model.latent_directions(adata=data)
        latent = np.asarray(model.get_latent(mean=True), dtype=np.float64)
    latent = latent * np.asarray(data.uns["directions"], dtype=np.float64)[None, :]
    active = set(np.flatnonzero(np.asarray(model.nonzero_terms(), dtype=bool)).tolist())  # a mask of the terms
    programmes, activity, tied, off = {}, {}, {}, {}
    for i, name in enumerate(names):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            table = model.term_genes(i, terms=list(names))
        programmes[name] = [str(g) for g in table["genes"]] if i in active else []
        activity[name] = latent[:, i]
        tied[name] = name
        off[name] = i not in active
    return GuidedFit("expiMap", latent, programmes, activity, tied, off)


def fit_guided_method(
    method: str, adata: AnnData, sets: dict[str, list[str]], seed: int, budget: GuidedBudget
) -> GuidedFit:
    """Fit ``method`` to ``adata`` (raw counts in ``layers["counts"]``) given ``sets``, measured.

    Raises
    ------
    MethodUnavailable
        The method is not installed (:data:`NOT_INSTALLED`, or its package is missing).
    ValueError
        An unknown method.
    """
    if method in NOT_INSTALLED:
        raise MethodUnavailable(NOT_INSTALLED[method])
    fits = {
        "SparseVAE (guided)": lambda: _sparsevae(adata, sets, seed, budget, guided=True),
        "SparseVAE (unguided)": lambda: _sparsevae(adata, sets, seed, budget, guided=False),
        "Spectra": lambda: _spectra(adata, sets, seed, budget),
        "expiMap": lambda: _expimap(adata, sets, seed, budget),
    }
    if method not in fits:
        raise ValueError(f"Unknown method {method!r}; known: {', '.join(GUIDED_METHODS)}")
    with measured() as cost:
        fit = fits[method]()
    fit.seconds, fit.peak_mb = cost["seconds"], cost["peak_mb"]
    return fit
