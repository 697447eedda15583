"""Scanpy-style one-call wrapper: set up, train and write a :class:`~scsparse.model.SparseVAE` into AnnData."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from anndata import AnnData

if TYPE_CHECKING:  # pragma: no cover
    from scsparse.model import SparseVAE

__all__ = ["result_keys", "sparse_vae"]


def result_keys(key: str) -> dict[str, list[str]]:
    """The AnnData keys written by :meth:`~scsparse.model.SparseVAE.write_results` for ``key_added=key``.

    Parameters
    ----------
    key
        The ``key_added`` prefix.

    Returns
    -------
    dict
        Attribute name (``"obsm"``, ``"varm"``, ``"uns"``) -> list of keys.

    Examples
    --------
    >>> result_keys("sparsevae")
    {'obsm': ['X_sparsevae'], 'varm': ['sparsevae_W', 'sparsevae_pip'], 'uns': ['sparsevae']}
    """
    return {"obsm": [f"X_{key}"], "varm": [f"{key}_W", f"{key}_pip"], "uns": [key]}


def sparse_vae(
    adata: AnnData,
    *,
    layer: str | None = None,
    batch_key: str | None = None,
    n_latent: int = 20,
    gene_likelihood: Literal["nb", "zinb", "poisson", "multinomial", "normal"] = "nb",
    max_epochs: int | None = None,
    seed: int = 0,
    key_added: str = "sparsevae",
    overwrite: bool = False,
    copy: bool = False,
    model_kwargs: dict[str, Any] | None = None,
    train_kwargs: dict[str, Any] | None = None,
) -> SparseVAE | tuple[AnnData, SparseVAE]:
    """Fit a sparse VAE (Moran et al. 2022) and write its factors and loadings into ``adata``.

    One call for :meth:`SparseVAE.setup_anndata <scsparse.model.SparseVAE.setup_anndata>`,
    :class:`~scsparse.model.SparseVAE`, :meth:`~scsparse.model.SparseVAE.train` and
    :meth:`~scsparse.model.SparseVAE.write_results`. The model is set up and trained on a copy of
    ``adata``, so scvi-tools' registration keys (``uns["_scvi_uuid"]``, ``obs["_scvi_batch"]`` ...) never
    land on your object: the only change to ``adata`` is the results written under ``key_added``.

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
    key_added
        Prefix of the keys written.
    overwrite
        Replace existing results under ``key_added``. Without it, the function raises
        :class:`~scsparse.model.InvalidInputError` *before* training if any of the keys exists.
    copy
        Write the results into a copy of ``adata`` and return it with the model.
    model_kwargs
        Further arguments of :class:`~scsparse.model.SparseVAE` (``n_hidden``, ``lambda0``, ``lambda1``, ...).
    train_kwargs
        Further arguments of :meth:`~scsparse.model.SparseVAE.train` (``batch_size``, ``lr``,
        ``train_size``, ``enable_progress_bar``, ...). ``max_epochs`` given here is used when the
        ``max_epochs`` argument is ``None``.

    Returns
    -------
    SparseVAE or tuple of (AnnData, SparseVAE)
        The trained model (its ``model.adata`` is the internal training copy); with ``copy=True`` also the
        new AnnData holding the results, as ``(adata, model)``.

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
    >>> adata.obsm["X_sparsevae"].shape
    (1975, 20)
    >>> adata.uns["sparsevae"]["active_factors"]  # the factors the prior kept
    >>> adata.uns["sparsevae"]["top_genes"]["factor_0"]  # if factor_0 is active

    Keep the input untouched and get a new object:

    >>> result, model = scsparse.tl.sparse_vae(adata, layer="counts", max_epochs=10, key_added="svae", copy=True)
    """
    from scsparse.model import InvalidInputError, SparseVAE
    from scsparse.model._results import check_keys_free

    if not isinstance(adata, AnnData):
        raise InvalidInputError(f"Expected an AnnData object, got {type(adata).__name__}.")
    keys = result_keys(key_added)
    # fail before training, not after, when the results would not be written
    check_keys_free(adata, keys, overwrite)

    train_kwargs = dict(train_kwargs or {})
    if max_epochs is not None:
        train_kwargs["max_epochs"] = int(max_epochs)

    work = adata.copy()  # scvi-tools registers (and annotates) this copy, never the user's object
    SparseVAE.setup_anndata(work, layer=layer, batch_key=batch_key)
    model = SparseVAE(work, n_latent=n_latent, gene_likelihood=gene_likelihood, seed=seed, **(model_kwargs or {}))
    model.train(**train_kwargs)
    model.write_results(work, key_added=key_added, overwrite=overwrite)

    target = adata.copy() if copy else adata
    for attr, names in keys.items():
        for name in names:
            getattr(target, attr)[name] = getattr(work, attr)[name]
    return (target, model) if copy else model
