"""The multi-study arm of ``scsparse bench peers``: shared and study-specific programmes across studies.

On a data set whose cells come from several studies (conditions, technologies), three ways of finding
programmes are compared, each with the same cells, genes, seed and at most ``K`` factors per cell:

- **MultiStudySparseVAE** — ``K - MULTISTUDY_SPECIFIC`` shared factors and :data:`MULTISTUDY_SPECIFIC` factors
  specific to each study; programmes as for SparseVAE (:func:`scsparse.tl.programme_genes`), a programme's scope
  is its factor's block (shared, or the study of a specific factor).
- **MOFA+ (groups)** — ``mofapy2`` with the studies as groups (its own way of modelling several sample groups),
  Gaussian likelihood on log-normalised expression, groups centred (its default), ``K`` factors with ARD and
  spike-and-slab priors. A factor is kept when it explains more than :data:`MOFA_MIN_R2` of the variance in at
  least one group (the rule of mofapy2's ``dropR2``); its programmes are read by its spike-and-slab prior, the
  genes whose weight is in the slab (posterior slab probability > 0.5) by sign
  (:func:`._programme_methods.slab_programmes`); its scope is the group that holds at least
  :data:`MOFA_SPECIFIC_SHARE` of the variance it explains, else shared.
- **SparseVAE (per study)** — one SparseVAE per study, on the genes expressed in that study: the baseline that
  shares nothing. Every programme is specific to its study, and a programme present in every study is found once
  per study.

Each fit's ``transfer`` representation (the factors every study shares: MultiStudySparseVAE's shared factors,
MOFA+'s kept factors that no group holds, the first study's SparseVAE applied to every cell) lets a classifier
trained on the first study's cells be tested on the other studies' (``transfer_accuracy``).
"""

from __future__ import annotations

import contextlib
import io
import warnings

import numpy as np
import scipy.sparse as sp
from anndata import AnnData

from .._fits import MULTISTUDY_SPECIFIC, fit_sparsevae, measured
from .._programme_fit import EQUAL_SIZES, FitBudget, ProgrammeFit, read_sparsevae
from .._programme_methods import MethodUnavailable, counts_matrix, slab_programmes
from .._real_data import study_names

__all__ = [
    "MOFA_MIN_R2",
    "MOFA_SPECIFIC_SHARE",
    "MULTISTUDY_METHODS",
    "MULTISTUDY_READING",
    "MULTISTUDY_SPECIFIC",
    "fit_multistudy_peer",
]

#: The methods of the multi-study arm, in the order they run and are shown.
MULTISTUDY_METHODS: tuple[str, ...] = ("MultiStudySparseVAE", "MOFA+ (groups)", "SparseVAE (per study)")
#: Variance explained (in at least one group) above which a MOFA+ factor is kept.
MOFA_MIN_R2 = 0.001
#: Share of a MOFA+ factor's variance explained that one group must hold for the factor to be specific to it.
MOFA_SPECIFIC_SHARE = 0.8

#: How each method's programmes are read (stated in the summary).
MULTISTUDY_READING: dict[str, str] = {
    "MultiStudySparseVAE": (
        f"genes with p* > 0.5 of each active factor, by direction (tl.programme_genes); K - {MULTISTUDY_SPECIFIC} "
        f"shared factors and {MULTISTUDY_SPECIFIC} specific to each study; scope: the factor's block"
    ),
    "MOFA+ (groups)": (
        "its spike-and-slab reading: the genes of each factor whose weight is in the slab (posterior slab probability "
        f"> 0.5), by sign, strongest weight first; factors explaining > {MOFA_MIN_R2:.1%} of a group's variance; "
        f"scope: the group holding >= {MOFA_SPECIFIC_SHARE:.0%} of the factor's variance explained, else shared"
    ),
    "SparseVAE (per study)": "as SparseVAE, one fit per study; every programme specific to its study",
}


def _fit_multistudy(adata: AnnData, budget: FitBudget, seed: int, study_key: str) -> ProgrammeFit:
    with measured() as m:
        model = fit_sparsevae(adata, budget.n_factors, budget.max_epochs, seed, None, study_key=study_key)
        fit = read_sparsevae(model, adata, "MultiStudySparseVAE")
        fit.transfer = model.get_latent_representation(kind="shared")
    fit.seconds, fit.peak_mb = m["seconds"], m["peak_mb"]
    fit.model = None
    return fit


def _fit_per_study(adata: AnnData, budget: FitBudget, seed: int, study_key: str) -> ProgrammeFit:
    studies = study_names(adata, study_key)
    labels = adata.obs[study_key].astype(str).to_numpy()
    programmes, activity, scope, rankings, kept, transfer = {}, {}, {}, {}, 0, None
    with measured() as m:
        for s in studies:
            study = adata[labels == s]
            expressed = np.flatnonzero(counts_matrix(study).sum(0) > 0)  # a study's fit: its expressed genes
            cells = study[:, expressed].copy()
            model = fit_sparsevae(cells, budget.n_factors, budget.max_epochs, seed, None)
            fit = read_sparsevae(model, cells, "SparseVAE (per study)")
            z_all = model.get_latent_representation(adata[:, expressed].copy())  # the study's factors of every cell
            names = list(model.factor_names)
            for name, genes in fit.programmes.items():
                factor, sign = name[:-1], 1.0 if name.endswith("+") else -1.0
                programmes[f"{s}:{name}"] = expressed[genes]
                rankings[f"{s}:{name}"] = expressed[fit.rankings.get(name, genes)]
                activity[f"{s}:{name}"] = sign * np.asarray(z_all[:, names.index(factor)], dtype=np.float64)
                scope[f"{s}:{name}"] = s
            kept += fit.n_kept
            if transfer is None:
                transfer = np.asarray(z_all, dtype=np.float64)
    return ProgrammeFit(
        "SparseVAE (per study)", None, programmes, activity, kept, m["seconds"], m["peak_mb"], scope=scope,
        rankings=rankings, transfer=transfer,
    )  # fmt: skip


def _mofa_entry():
    try:
        from mofapy2.run.entry_point import entry_point
    except ImportError as exc:
        raise MethodUnavailable("MOFA+ is not installed: pip install 'scsparse[peers]' (PyPI mofapy2)") from exc
    return entry_point


def _fit_mofa(adata: AnnData, budget: FitBudget, seed: int, study_key: str) -> ProgrammeFit:
    import scanpy as sc

    entry_point = _mofa_entry()
    studies = study_names(adata, study_key)
    labels = adata.obs[study_key].astype(str).to_numpy()
    order = np.concatenate([np.flatnonzero(labels == s) for s in studies])  # MOFA+ stacks the groups
    with measured() as m:
        x = AnnData(sp.csr_matrix(counts_matrix(adata)))
        sc.pp.normalize_total(x, target_sum=1e4)
        sc.pp.log1p(x)
        logn = x.X.toarray()
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ent = entry_point()
            ent.set_data_options()
            ent.set_data_matrix(
                [[logn[labels == s] for s in studies]],
                likelihoods=["gaussian"],
                views_names=["rna"],
                groups_names=studies,
                samples_names=[list(adata.obs_names[labels == s]) for s in studies],
                features_names=[list(adata.var_names)],
            )
            ent.set_model_options(factors=budget.n_factors, ard_factors=len(studies) > 1)
            ent.set_train_options(iter=budget.mofa_iterations, convergence_mode="fast", seed=seed, quiet=True)
            ent.build()
            ent.run()
        expectations = ent.model.getExpectations(True, "Z", "W")
        z = np.empty((adata.n_obs, budget.n_factors))
        z[order] = np.asarray(expectations["Z"], dtype=np.float64)
        weights = np.asarray(expectations["W"][0], dtype=np.float64)  # genes x K
        slab = np.asarray(ent.model.nodes["W"].nodes[0].Q.getExpectations()["EB"], dtype=np.float64)
        r2 = np.vstack([np.asarray(g[0], dtype=np.float64) for g in ent.model.calculate_variance_explained()])
        kept = np.flatnonzero((r2 > MOFA_MIN_R2).any(axis=0))  # r2: groups x K
        read = slab_programmes(weights[:, kept], slab[:, kept], z[:, kept], max(EQUAL_SIZES))
        programmes, activity, rankings = ({f"{kept[int(k[:-1])]}{k[-1]}": v for k, v in d.items()} for d in read)
        share = np.clip(r2, 0.0, None) / np.maximum(np.clip(r2, 0.0, None).sum(0), 1e-12)
        specific = share.max(axis=0) >= MOFA_SPECIFIC_SHARE  # per factor: held by one group
        scope = {}
        for name in programmes:
            k = int(name[:-1])
            scope[name] = studies[int(np.argmax(share[:, k]))] if specific[k] else "shared"
        shared = [k for k in kept if not specific[k]]
    return ProgrammeFit(
        "MOFA+ (groups)", z, programmes, activity, int(kept.size), m["seconds"], m["peak_mb"], scope=scope,
        rankings=rankings, transfer=z[:, shared] if shared else None,
    )  # fmt: skip


_FITTERS = {
    "MultiStudySparseVAE": _fit_multistudy,
    "MOFA+ (groups)": _fit_mofa,
    "SparseVAE (per study)": _fit_per_study,
}


def fit_multistudy_peer(method: str, adata: AnnData, budget: FitBudget, seed: int, study_key: str) -> ProgrammeFit:
    """Fit a method of the multi-study arm to a copy of ``adata`` and read its programmes and their scope.

    Parameters
    ----------
    method
        A name of :data:`MULTISTUDY_METHODS`.
    adata
        The cells of every study, counts in ``layers["counts"]``; not modified.
    budget
        Factors (at most ``K`` per cell), epochs and MOFA+ iterations.
    seed
        Seed of the fit.
    study_key
        ``obs`` column of the studies.

    Raises
    ------
    MethodUnavailable
        When the method cannot run in this environment (MOFA+ without the ``peers`` extra).
    """
    if method not in _FITTERS:
        raise ValueError(f"Unknown multi-study method {method!r}; choose from {', '.join(MULTISTUDY_METHODS)}.")
    fit = _FITTERS[method](adata.copy(), budget, int(seed), study_key)
    fit.method = method
    return fit
