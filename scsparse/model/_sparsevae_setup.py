"""Registering an AnnData with :class:`~scsparse.model.SparseVAE` (``setup_anndata``) and reading the registry."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from anndata import AnnData
from scvi import REGISTRY_KEYS
from scvi.data import AnnDataManager
from scvi.data._utils import _get_adata_minify_type
from scvi.data.fields import (
    CategoricalJointObsField,
    CategoricalObsField,
    LayerField,
    NumericalJointObsField,
    NumericalObsField,
)

from scsparse._checks import InvalidInputError

from ._validation import SETUP_SCANS, check_anndata, check_batch_key, check_covariates, check_saved_genes


def covariate_fields(
    labels_key: str | None,
    size_factor_key: str | None,
    categorical_covariate_keys: list[str] | None,
    continuous_covariate_keys: list[str] | None,
) -> list[Any]:
    """The scvi-tools registry fields of the labels, size factors and covariates (those given)."""
    fields: list[Any] = [
        CategoricalObsField(REGISTRY_KEYS.LABELS_KEY, labels_key),
        NumericalObsField(REGISTRY_KEYS.SIZE_FACTOR_KEY, size_factor_key, required=False),
    ]
    if categorical_covariate_keys:
        fields.append(CategoricalJointObsField(REGISTRY_KEYS.CAT_COVS_KEY, list(categorical_covariate_keys)))
    if continuous_covariate_keys:
        fields.append(NumericalJointObsField(REGISTRY_KEYS.CONT_COVS_KEY, list(continuous_covariate_keys)))
    return fields


class SetupMixin:
    """``setup_anndata``, the checked registration every model's ``setup_anndata`` runs, and ``minify_adata``."""

    @classmethod
    def setup_anndata(
        cls,
        adata: AnnData,
        layer: str | None = None,
        batch_key: str | None = None,
        labels_key: str | None = None,
        size_factor_key: str | None = None,
        categorical_covariate_keys: list[str] | None = None,
        continuous_covariate_keys: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        """Register an AnnData with the model.

        The data are checked first: a missing layer, an empty AnnData, NaN/inf values, genes that are
        zero in every cell, and covariate, label or size-factor columns that are missing, incomplete or (for
        continuous ones) not finite numbers each raise an :class:`~scsparse.model.InvalidInputError` that says
        how to fix them. Whether the values are counts is checked when the model is built, since it depends on
        ``gene_likelihood``.

        Only scvi-tools' registration keys are added to ``adata`` (``adata.uns["_scvi_uuid"]``,
        ``adata.uns["_scvi_manager_uuid"]``, the encoded batch and label columns ``adata.obs["_scvi_batch"]`` and
        ``adata.obs["_scvi_labels"]`` and, with covariates, their arrays in ``adata.obsm``); the data themselves
        are not modified.

        Parameters
        ----------
        adata
            AnnData with cells in rows and genes in columns (dense or sparse).
        layer
            Layer holding the data (raw counts for count likelihoods); ``None`` uses ``adata.X``.
        batch_key
            Column of ``adata.obs`` with a batch covariate. It enters the decoder outside the mask, so batch
            effects are modelled without leaking into ``W``; ``transform_batch`` decodes cells as if from one batch.
        labels_key
            Column of ``adata.obs`` with cell labels (registered as in scvi-tools; the model does not use them).
        size_factor_key
            Column of ``adata.obs`` with positive per-cell size factors replacing the observed library size.
        categorical_covariate_keys, continuous_covariate_keys
            Columns of ``adata.obs`` with further covariates (e.g. donor; percent mitochondrial counts). Like the
            batch they enter the decoder outside the mask, so they explain expression without entering ``W``;
            with ``encode_covariates=True`` the encoder sees them too.

        Examples
        --------
        >>> scsparse.model.SparseVAE.setup_anndata(adata, layer="counts", batch_key="sample")
        >>> scsparse.model.SparseVAE.setup_anndata(
        ...     adata, layer="counts", batch_key="sample", categorical_covariate_keys=["donor"],
        ...     continuous_covariate_keys=["pct_counts_mt"],
        ... )
        """
        setup_method_args = cls._get_setup_method_args(**locals())
        cls._register_anndata(
            adata, setup_method_args, layer=layer, batch_key=batch_key, labels_key=labels_key,
            size_factor_key=size_factor_key, categorical_covariate_keys=categorical_covariate_keys,
            continuous_covariate_keys=continuous_covariate_keys, **kwargs,
        )  # fmt: skip

    @classmethod
    def _register_anndata(
        cls,
        adata: AnnData,
        setup_method_args: dict[str, Any],
        *,
        layer: str | None,
        batch_key: str | None,
        labels_key: str | None,
        size_factor_key: str | None,
        categorical_covariate_keys: list[str] | None,
        continuous_covariate_keys: list[str] | None,
        block_fields: Sequence[Any] = (),
        check_blocks: Callable[[bool], None] | None = None,
        reserved: Sequence[str] = (),
        **kwargs: Any,
    ) -> None:
        """Check ``adata`` and register it with the model: the body of every model's :meth:`setup_anndata`.

        A model with factor blocks (:class:`~scsparse.model.MultiStudySparseVAE`) passes the registry fields of its
        blocks' column (``block_fields``, registered after the data's), the check of that column
        (``check_blocks(query)``, run after the data's checks; ``query`` says whether ``adata`` is registered against
        a reference's registry) and the columns the covariates may not reuse (``reserved``). ``kwargs`` go to
        scvi-tools' ``register_fields``.
        """
        check_saved_genes(adata, kwargs.get("source_registry"))
        minified = _get_adata_minify_type(adata)
        query = kwargs.get("source_registry") is not None  # a query keeps every reference gene, measured or not
        scan = check_anndata(adata, layer, allow_zero_genes=query) if minified is None else None  # no counts: minified
        if check_blocks is not None:
            check_blocks(query)
        check_batch_key(adata, batch_key)
        check_covariates(
            adata, categorical_covariate_keys, continuous_covariate_keys, size_factor_key, labels_key,
            reserved=[batch_key, *reserved],
        )  # fmt: skip
        fields = [
            LayerField(REGISTRY_KEYS.X_KEY, layer, is_count_data=False),
            *block_fields,
            CategoricalObsField(REGISTRY_KEYS.BATCH_KEY, batch_key),
            *covariate_fields(labels_key, size_factor_key, categorical_covariate_keys, continuous_covariate_keys),
        ]
        if minified is not None:
            fields += cls._get_fields_for_adata_minification(minified)
        adata_manager = AnnDataManager(fields=fields, setup_method_args=setup_method_args)
        adata_manager.register_fields(adata, **kwargs)
        if scan is not None:  # the one pass over the matrix serves the count checks and the data hash
            SETUP_SCANS.remember(adata_manager.id, adata, scan)
        cls.register_manager(adata_manager)

    def minify_adata(
        self,
        minified_data_type: str = "latent_posterior_parameters",
        use_latent_qzm_key: str = "X_latent_qzm",
        use_latent_qzv_key: str = "X_latent_qzv",
    ) -> None:
        """Replace the model's AnnData by a minified copy that keeps each cell's posterior instead of its counts.

        As :meth:`scvi.model.base.BaseMinifiedModeModelClass.minify_adata`: the minified AnnData holds the
        posterior means and variances of the factors (``obsm["sparsevae_latent_qzm"]`` and
        ``obsm["sparsevae_latent_qzv"]``), the observed library sizes and an empty ``X`` (the counts are kept with
        ``"latent_posterior_parameters_with_counts"``). The latent representation, normalised expression,
        differential expression, posterior predictive samples and latent traversals then run from the stored
        posterior; what needs the counts (training, held-out likelihood, orientation, writing results) refuses.
        The posterior is computed and stored under ``use_latent_qzm_key`` / ``use_latent_qzv_key`` of the current
        AnnData when those keys
        are not there yet (existing ones are used as they are).

        Examples
        --------
        >>> model.minify_adata()
        >>> model.adata  # cells x genes, X empty, the posterior in obsm
        >>> model.differential_expression(groupby="cell_type", group1="B")
        """
        if use_latent_qzm_key not in self.adata.obsm or use_latent_qzv_key not in self.adata.obsm:
            present = [k for k in (use_latent_qzm_key, use_latent_qzv_key) if k in self.adata.obsm]
            if present:
                raise InvalidInputError(
                    f"adata.obsm has {present} but not both posterior keys; give use_latent_qzm_key and "
                    "use_latent_qzv_key that are both present, or two new keys."
                )
            qzm, qzv = self.get_latent_representation(return_dist=True)
            self.adata.obsm[use_latent_qzm_key] = qzm
            self.adata.obsm[use_latent_qzv_key] = qzv
        super().minify_adata(minified_data_type, use_latent_qzm_key, use_latent_qzv_key)

    def _covariate_sizes(self) -> dict[str, Any]:
        """The module's ``n_cats_per_cov`` and ``n_continuous_cov`` from the registry."""
        sizes: dict[str, Any] = {"n_cats_per_cov": [], "n_continuous_cov": 0}
        fields = self.registry_["field_registries"]
        if REGISTRY_KEYS.CAT_COVS_KEY in fields:
            state = fields[REGISTRY_KEYS.CAT_COVS_KEY]["state_registry"]
            sizes["n_cats_per_cov"] = [int(n) for n in state["n_cats_per_key"]]
        if REGISTRY_KEYS.CONT_COVS_KEY in fields:
            state = fields[REGISTRY_KEYS.CONT_COVS_KEY]["state_registry"]
            sizes["n_continuous_cov"] = len(state["columns"])
        return sizes
