"""Scanpy-style one-call wrappers: set up, train and write a sparse VAE model's results into AnnData."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import anndata as ad
from anndata import AnnData

from scsparse._checks import InvalidInputError, check_key_added
from scsparse._options import GeneLikelihood
from scsparse.results import check_keys_free, result_keys
from scsparse.results._write import remove_fit

if TYPE_CHECKING:  # pragma: no cover
    from scsparse.model import MultiStudySparseVAE, SparseVAE

__all__ = ["multistudy_sparse_vae", "sparse_vae"]


def _registration_copy(adata: AnnData) -> AnnData:
    """An AnnData that shares ``adata``'s matrices but has its own ``obs``, ``var`` and ``uns``.

    scvi-tools' setup writes into ``obs`` and ``uns`` of the object it registers; training only reads the
    registered matrix. This keeps the user's object untouched without copying its matrices: ``X``, the layers and
    ``obsm`` are the same arrays, and a backed file is opened a second time, read-only, so ``X`` stays on disk.
    """
    if adata.isbacked:
        if adata.is_view:
            raise InvalidInputError(
                "A view of a backed AnnData cannot be trained on without loading it: write the subset to its own "
                "file (`adata[mask].copy(filename='subset.h5ad')`) and open that with backed='r', or load it "
                "into memory with `.to_memory()`."
            )
        work = ad.read_h5ad(adata.filename, backed="r")
        work.obs = adata.obs.copy()
        work.var = adata.var.copy()
        return work
    return AnnData(
        X=adata.X, obs=adata.obs.copy(), var=adata.var.copy(), layers=dict(adata.layers), obsm=dict(adata.obsm)
    )


def _fit_into(
    adata: AnnData,
    model_cls: type[SparseVAE],
    setup_kwargs: dict[str, Any],
    model_kwargs: dict[str, Any],
    train_kwargs: dict[str, Any] | None,
    max_epochs: int | None,
    key_added: str,
    overwrite: bool,
    copy: bool,
    n_restarts: int = 1,
) -> Any:
    """Set up, train and write a model on a registration copy of ``adata``; move only the result keys over.

    With ``n_restarts > 1`` the model is the consensus of that many restarts (:meth:`SparseVAE.consensus`).
    """
    if not isinstance(adata, AnnData):
        raise InvalidInputError(f"Expected an AnnData object, got {type(adata).__name__}.")
    check_key_added(key_added)
    if isinstance(n_restarts, bool) or not isinstance(n_restarts, int) or n_restarts < 1:
        raise InvalidInputError(f"n_restarts must be a positive integer (1: a single fit), got {n_restarts!r}.")
    train_kwargs = dict(train_kwargs or {})
    if max_epochs is not None:
        train_kwargs["max_epochs"] = int(max_epochs)

    work = _registration_copy(adata)  # scvi-tools annotates this object, never the user's
    model_cls.setup_anndata(work, **setup_kwargs)
    if n_restarts > 1:
        check_keys_free(adata, result_keys(key_added), overwrite)  # before the restarts are fitted
        model = model_cls.consensus(work, n_restarts, train_kwargs=train_kwargs, **model_kwargs)
        keys = model.result_keys(key_added)
    else:
        model = model_cls(work, **model_kwargs)
        keys = model.result_keys(key_added)
        check_keys_free(adata, keys, overwrite)  # fail before training, not after, when results could not be written
        model.train(**train_kwargs)
    model.write_results(work, key_added=key_added, overwrite=overwrite)

    target = adata.copy() if copy else adata
    if overwrite:  # the earlier fit under key_added goes as a whole, not only the keys the new one writes
        remove_fit(target, key_added)
    for attr, names in keys.items():
        for name in names:
            getattr(target, attr)[name] = getattr(work, attr)[name]
    return (target, model) if copy else model


def _warn_copy(function: str) -> None:
    """``copy=True`` of a fitting tool: deprecated, the tools that fit a model write in place and return it."""
    warnings.warn(
        f"scsparse.tl.{function}(copy=True) is deprecated and will be removed in scsparse 0.3: a tool that fits a "
        f"model writes its results into the AnnData it is given and returns the model. Call "
        f"`model = scsparse.tl.{function}(result := adata.copy(), ...)` instead.",
        FutureWarning,
        stacklevel=3,
    )


def sparse_vae(
    adata: AnnData,
    *,
    layer: str | None = None,
    batch_key: str | None = None,
    n_latent: int = 20,
    gene_likelihood: GeneLikelihood = "nb",
    max_epochs: int | None = None,
    seed: int = 0,
    n_restarts: int = 1,
    key_added: str = "sparsevae",
    overwrite: bool = False,
    copy: bool = False,
    model_kwargs: dict[str, Any] | None = None,
    train_kwargs: dict[str, Any] | None = None,
) -> SparseVAE:
    """Fit a sparse VAE (Moran et al. 2022) and write its factors and loadings into ``adata``.

    One call for :meth:`SparseVAE.setup_anndata <scsparse.model.SparseVAE.setup_anndata>`,
    :class:`~scsparse.model.SparseVAE`, :meth:`~scsparse.model.SparseVAE.train` and
    :meth:`~scsparse.model.SparseVAE.write_results`. The model is set up and trained on an AnnData that
    shares ``adata``'s matrices (no copy of ``X`` or the layers; a backed file stays on disk) but has its own
    ``obs`` and ``uns``, so scvi-tools' registration keys (``uns["_scvi_uuid"]``, ``obs["_scvi_batch"]`` ...)
    never land on your object: the only change to ``adata`` is the results written under ``key_added``.

    Fields written (``key = key_added``):

    ``adata.obsm[f"X_{key}"]``
        Posterior mean of the factors, cells x ``n_latent`` (all factors; use
        ``adata.uns[key]["active"]`` to select the ones the prior kept).
    ``adata.varm[f"{key}_W"]``
        The decoder mask ``W``, genes x ``n_latent``: ``w_jk`` scales factor ``k``'s input to gene ``j``.
    ``adata.varm[f"{key}_pip"]``
        Posterior inclusion probabilities ``p*_jk`` (probability that gene ``j`` belongs to programme ``k``),
        genes x ``n_latent``.
    ``adata.uns[key]``
        A dict with ``factor_names``; ``active`` (bool per factor) and ``active_factors`` (names; a factor is
        active when at least one gene has ``p* > pip_threshold``); ``eta`` (prior fraction of genes per factor);
        ``pip_threshold``; ``anchor_genes`` and ``top_genes`` (factor -> array of gene names, by decreasing
        ``|w_jk|`` among genes with ``p* > pip_threshold``); ``factors_oriented`` (each factor's sign fixed so
        that its top genes go up with it, see :meth:`~scsparse.model.SparseVAE.orient_factors`); ``model``,
        ``seed``, ``params``,
        ``train_params``, ``setup_args``, ``n_epochs_trained``, ``versions`` (package versions) and
        ``data_hash`` (SHA-256 of the training matrix).

    Parameters
    ----------
    adata
        Cells x genes AnnData. Not modified except for the fields above (unless ``copy=True``).
    layer
        Layer with the data (raw counts for count likelihoods); ``None`` uses ``adata.X``.
    batch_key
        Column of ``adata.obs`` with a batch covariate; it enters the decoder outside the mask.
    n_latent
        Number of factors ``K`` (an upper bound: the prior switches unused factors off).
    gene_likelihood
        ``"nb"``, ``"zinb"``, ``"poisson"``, ``"multinomial"`` (counts) or ``"normal"`` (normalised data).
    max_epochs
        Training epochs; ``None`` uses scvi-tools' heuristic (``min(400, 20000 / n_cells * 400)``), which is
        slow on a CPU for small data sets.
    seed
        Seed of the weights, the train/validation split and training; recorded in ``uns[key]["seed"]``.
    n_restarts
        With more than 1, fit that many restarts (seeds ``seed``, ``seed + 1`` ...), pool their programmes and
        refit one model on those most of them find (:meth:`SparseVAE.consensus
        <scsparse.model.SparseVAE.consensus>`): ``uns[key]["consensus"]`` then says how reproducible each programme
        is. Costs ``n_restarts`` fits and one refit.
    key_added
        Prefix of the keys written.
    overwrite
        Replace existing results under ``key_added``. Without it, the function raises
        :class:`~scsparse.model.InvalidInputError` *before* training if any of the keys exists.
    copy
        Deprecated (removed in 0.3): write the results into a copy of ``adata`` and return ``(copy, model)``. Pass
        ``adata.copy()`` instead.
    model_kwargs
        Further arguments of :class:`~scsparse.model.SparseVAE` (``n_hidden``, ``lambda0``, ``lambda1``, ...).
    train_kwargs
        Further arguments of :meth:`~scsparse.model.SparseVAE.train` (``batch_size``, ``lr``,
        ``train_size``, ``enable_progress_bar``, ...). ``max_epochs`` given here is used when the
        ``max_epochs`` argument is ``None``.

    Returns
    -------
    SparseVAE
        The trained model (its ``model.adata`` is the registered object, sharing ``adata``'s matrices); the results
        are in ``adata``. (With the deprecated ``copy=True``: ``(copy, model)``.)

    Raises
    ------
    scsparse.model.InvalidInputError
        Missing layer or batch column, non-count data for a count likelihood, all-zero genes, or results
        already present under ``key_added`` without ``overwrite=True``.

    Examples
    --------
    >>> import scsparse
    >>> adata = scsparse.data.kang_pbmc()
    >>> model = scsparse.tl.sparse_vae(adata, layer="counts", n_latent=20, max_epochs=10)
    >>> adata.obsm["X_sparsevae"].shape  # doctest: +SKIP
    (1975, 20)
    >>> adata.uns["sparsevae"]["active_factors"]  # the factors the prior kept
    >>> adata.uns["sparsevae"]["top_genes"]["factor_0"]  # if factor_0 is active

    Keep the input untouched: fit on a copy, which receives the results.

    >>> result = adata.copy()
    >>> model = scsparse.tl.sparse_vae(result, layer="counts", max_epochs=10, key_added="svae")
    """
    from scsparse.model import SparseVAE

    if copy:
        _warn_copy("sparse_vae")

    return _fit_into(
        adata,
        SparseVAE,
        {"layer": layer, "batch_key": batch_key},
        {"n_latent": n_latent, "gene_likelihood": gene_likelihood, "seed": seed, **(model_kwargs or {})},
        train_kwargs,
        max_epochs,
        key_added,
        overwrite,
        copy,
        n_restarts=n_restarts,
    )


def multistudy_sparse_vae(
    adata: AnnData,
    study_key: str,
    *,
    layer: str | None = None,
    batch_key: str | None = None,
    n_latent_shared: int = 10,
    n_latent_specific: int | Mapping[str, int] = 5,
    gene_likelihood: GeneLikelihood = "nb",
    max_epochs: int | None = None,
    seed: int = 0,
    n_restarts: int = 1,
    key_added: str = "mssvae",
    overwrite: bool = False,
    copy: bool = False,
    model_kwargs: dict[str, Any] | None = None,
    train_kwargs: dict[str, Any] | None = None,
) -> MultiStudySparseVAE:
    """Fit shared and study-specific sparse programmes across studies and write them into ``adata``.

    One call for :meth:`MultiStudySparseVAE.setup_anndata <scsparse.model.MultiStudySparseVAE.setup_anndata>`,
    :class:`~scsparse.model.MultiStudySparseVAE`, :meth:`~scsparse.model.MultiStudySparseVAE.train` and
    :meth:`~scsparse.model.MultiStudySparseVAE.write_results`, set up on an object sharing ``adata``'s matrices as in
    :func:`sparse_vae`: the only change to ``adata`` is the results written under ``key_added``.

    Fields written (``key = key_added``; ``<study>`` is the study name with characters other than letters,
    digits and ``-_.`` replaced by ``_``, see ``adata.uns[key]["study_keys"]``):

    ``adata.obsm[f"X_{key}_shared"]``
        Shared factors, cells x ``n_latent_shared``.
    ``adata.obsm[f"X_{key}_specific"]``
        Specific factors, cells x (sum of the studies' blocks): each cell's own study's block filled, zeros in
        the other studies' blocks (column names in ``uns[key]["specific_factors"]``).
    ``adata.varm[f"{key}_W_shared"]``, ``adata.varm[f"{key}_pip_shared"]``
        The shared mask and its inclusion probabilities ``p*``, genes x ``n_latent_shared``.
    ``adata.varm[f"{key}_W_<study>"]``, ``adata.varm[f"{key}_pip_<study>"]``
        Each study's specific mask and ``p*``.
    ``adata.uns[key]``
        ``factor_table`` (one row per factor: block, study, active, number of genes, top genes), ``studies``,
        ``factor_names``, ``shared_factors``, ``specific_factors``, ``active``, ``active_factors``, ``eta``,
        ``top_genes``, ``anchor_genes``, ``factors_oriented``, hyper-parameters, seed, package versions and
        the training data's hash.

    The tools and plots of :mod:`scsparse.tl` and :mod:`scsparse.pl` read these results with ``key=key_added``.

    Parameters
    ----------
    adata
        Cells x genes AnnData with the same genes measured in every study. Not modified except for the fields
        above (unless ``copy=True``).
    study_key
        Column of ``adata.obs`` naming each cell's study (or condition, cohort): at least two studies, at least
        10 cells each, no missing labels.
    layer
        Layer with the data (raw counts for count likelihoods); ``None`` uses ``adata.X``.
    batch_key
        Column of ``adata.obs`` with a technical covariate; it enters the decoder outside the masks. When the
        studies are technical batches (chemistries, platforms), pass the study column here too: the model has no
        per-study offset otherwise, and study-specific factors then take it up as a study-wide shift (flagged by
        :func:`scsparse.tl.factor_diagnostics`).
    n_latent_shared
        Number of shared factors (an upper bound: the prior switches unused ones off).
    n_latent_specific
        Number of specific factors per study: one int for every study, or a dict ``{study: K_m}`` (studies not
        in it get none).
    gene_likelihood
        ``"nb"``, ``"zinb"``, ``"poisson"``, ``"multinomial"`` (counts) or ``"normal"`` (normalised data).
    max_epochs
        Training epochs; ``None`` uses scvi-tools' heuristic.
    seed
        Seed of the weights, the split and training; recorded in ``uns[key]["seed"]``.
    n_restarts
        With more than 1, fit that many restarts (seeds ``seed``, ``seed + 1`` ...), pool their programmes, shared
        and specific blocks apart, and refit one model on those most of them find
        (:meth:`MultiStudySparseVAE.consensus <scsparse.model.MultiStudySparseVAE.consensus>`):
        ``uns[key]["consensus"]`` then says how reproducible each programme is. Costs ``n_restarts`` fits and one
        refit.
    key_added
        Prefix of the keys written.
    overwrite
        Replace existing results under ``key_added``; without it the function raises
        :class:`~scsparse.model.InvalidInputError` before training if any key exists.
    copy
        Deprecated (removed in 0.3): write the results into a copy of ``adata`` and return ``(copy, model)``. Pass
        ``adata.copy()`` instead.
    model_kwargs
        Further arguments of :class:`~scsparse.model.MultiStudySparseVAE` (``n_hidden``, ``lambda0``, ...).
    train_kwargs
        Further arguments of :meth:`~scsparse.model.MultiStudySparseVAE.train`.

    Returns
    -------
    MultiStudySparseVAE
        The trained model; the results are in ``adata``. (With the deprecated ``copy=True``: ``(copy, model)``.)

    Raises
    ------
    scsparse.model.InvalidInputError
        A missing or single-study ``study_key``, a study with too few cells, a missing layer or batch column,
        non-count data for a count likelihood, or results already present without ``overwrite=True``.

    Examples
    --------
    >>> import scsparse
    >>> adata = scsparse.data.kang_pbmc()
    >>> model = scsparse.tl.multistudy_sparse_vae(
    ...     adata, "condition", layer="counts", n_latent_shared=10, n_latent_specific=3, max_epochs=10
    ... )
    >>> adata.obsm["X_mssvae_shared"].shape  # doctest: +SKIP
    (1975, 10)
    >>> adata.uns["mssvae"]["factor_table"]  # shared and specific factors, active or not, top genes
    >>> scsparse.pl.multistudy_overview(adata, key="mssvae")
    """
    from scsparse.model import MultiStudySparseVAE

    if copy:
        _warn_copy("multistudy_sparse_vae")
    return _fit_into(
        adata,
        MultiStudySparseVAE,
        {"study_key": study_key, "layer": layer, "batch_key": batch_key},
        {
            "n_latent_shared": n_latent_shared,
            "n_latent_specific": n_latent_specific,
            "gene_likelihood": gene_likelihood,
            "seed": seed,
            **(model_kwargs or {}),
        },
        train_kwargs,
        max_epochs,
        key_added,
        overwrite,
        copy,
        n_restarts,
    )
