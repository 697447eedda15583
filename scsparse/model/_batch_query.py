"""Query mapping of new batches onto a trained SparseVAE (scArches-style): the reference fixed, new batches learnt."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from anndata import AnnData
from scvi import REGISTRY_KEYS

from scsparse._checks import InvalidInputError

from ._validation import check_query_genes

__all__ = ["BatchQueryMixin"]


class BatchQueryMixin:
    """``prepare_query_anndata`` and ``load_query_data`` for :class:`~scsparse.model.SparseVAE` (new batches)."""

    @classmethod
    def prepare_query_anndata(cls, adata: AnnData, reference_model: Any) -> AnnData:
        """The query's cells on the reference's genes, in its order: a new AnnData for :meth:`load_query_data`.

        As scvi-tools' ``ArchesMixin.prepare_query_anndata``, but returning a new AnnData rather than changing
        ``adata``: genes the query lacks become zero counts (in ``X`` and every layer), genes the reference does
        not have are left out; ``obs`` is kept.

        Examples
        --------
        >>> query = scsparse.model.SparseVAE.prepare_query_anndata(adata_query, reference)
        >>> model = scsparse.model.SparseVAE.load_query_data(query, reference)
        """
        import scipy.sparse as sp

        genes = pd.Index(reference_model._gene_names)
        position = genes.get_indexer(adata.var_names)
        present = np.flatnonzero(position >= 0)
        if present.size == 0:
            raise InvalidInputError("The query shares no gene with the reference (compare their var_names).")
        select = sp.csr_matrix(
            (np.ones(present.size), (np.arange(present.size), position[present])), shape=(present.size, genes.size)
        )

        def onto_reference(matrix):
            return sp.csr_matrix(sp.csr_matrix(matrix)[:, present] @ select, dtype=np.float32)

        # anndata >= 0.13 lists X among the layers as layers[None]
        layers = {name: onto_reference(adata.layers[name]) for name in adata.layers if name is not None}
        return AnnData(
            X=onto_reference(adata.X), obs=adata.obs.copy(), var=pd.DataFrame(index=genes.copy()), layers=layers
        )

    @classmethod
    def load_query_data(cls, adata: AnnData, reference_model: Any, seed: int | None = None) -> Any:
        """A model for cells of new batches built on a trained reference (scArches-style), its programmes fixed.

        The query model has the reference's encoder, mask ``W``, ``p*``, ``eta`` and network, bit for bit, and
        only learns what the new batch categories need: their weights in the decoder's first layer (the
        batch enters the decoder outside the mask). Training it on the query cells (:meth:`train`) therefore
        leaves every reference parameter as it was, and the query cells' factors are the reference's
        programmes. For new studies with programmes of their own use
        :meth:`scsparse.model.MultiStudySparseVAE.load_query_data`.

        Parameters
        ----------
        adata
            Query cells: the reference's genes in its order (:meth:`prepare_query_anndata`), counts in the
            reference's layer, and its ``batch_key`` column naming at least one batch the reference does not
            have. Registered here (no :meth:`setup_anndata` needed).
        reference_model
            A trained :class:`SparseVAE` set up with a ``batch_key`` (one batch or more) and
            ``encode_covariates=False`` (not changed). A reference of one batch has no batch input; its batch keeps
            adding nothing in the query model, so its cells decode exactly as before.
        seed
            Seed of the new weights and of training (default: the reference's).

        Returns
        -------
        SparseVAE
            The untrained query model.

        Examples
        --------
        >>> query = scsparse.model.SparseVAE.load_query_data(adata_stim, reference)
        >>> query.train(max_epochs=50)
        >>> query.get_latent_representation()  # the reference's programmes in the new batches' cells
        """
        setup, n_reference = _check_batch_query(adata, reference_model, cls)
        registry = reference_model.adata_manager.registry
        cls.setup_anndata(adata, source_registry=registry, extend_categories=True, **setup)
        init = dict(reference_model.init_params_.get("non_kwargs", {}))
        module_kwargs = dict(reference_model.init_params_.get("kwargs", {}).get("module_kwargs", {}))
        init["seed"] = reference_model.seed if seed is None else int(seed)
        model = cls(adata, **init, **module_kwargs, n_batch_frozen=n_reference)
        state = {k: v.detach().clone() for k, v in reference_model.module.state_dict().items()}
        key = "decoder.covariates.weight"
        grown = model.module.state_dict()[key].clone()  # batch columns first; the reference's keep their codes
        n_query, ref_columns = model.module.n_batch, (n_reference if n_reference > 1 else 0)
        if ref_columns:
            grown[:, :n_reference] = state[key][:, :n_reference]
        else:  # a reference of one batch had no batch input: its batch adds nothing, as before
            grown[:, :n_reference] = 0.0
        if key in state:  # the reference's other covariates follow the batch columns
            grown[:, n_query:] = state[key][:, ref_columns:]
        state[key] = grown
        model.module.load_state_dict(state)
        model.is_trained_ = False
        return model


def _check_batch_query(adata: AnnData, reference: Any, model_cls: type) -> tuple[dict[str, Any], int]:
    """Check that ``adata`` can be mapped onto ``reference`` as new batches; name the fix when it cannot."""
    if not isinstance(reference, model_cls) or reference._is_query() or hasattr(reference, "studies"):
        raise InvalidInputError(
            "reference_model must be a trained SparseVAE that is not itself a query (for studies with programmes "
            "of their own use MultiStudySparseVAE.load_query_data)."
        )
    if not reference.is_trained_:
        raise InvalidInputError("The reference model is not trained; train it before mapping a query onto it.")
    setup = dict(reference.adata_manager.registry["setup_args"])
    batch_key = setup.get("batch_key")
    if batch_key is None:
        raise InvalidInputError(
            "The reference was set up without a batch_key, so there is no batch column for new batches to extend. "
            "Fit the reference with setup_anndata(..., batch_key=...) (one batch is enough), or embed the query "
            "cells with reference.get_latent_representation(adata)."
        )
    if reference.module.encode_covariates:
        raise InvalidInputError(
            "The reference's encoder sees the batch (encode_covariates=True), so it has no input for a new batch. "
            "Map queries onto a reference fitted with encode_covariates=False (the default)."
        )
    check_query_genes(adata, reference._gene_names, type(reference).__name__)
    if batch_key not in adata.obs:
        raise InvalidInputError(f"The query has no column adata.obs[{batch_key!r}], the reference's batch column.")
    known = {str(b) for b in reference.adata_manager.get_state_registry(REGISTRY_KEYS.BATCH_KEY).categorical_mapping}
    if not set(adata.obs[batch_key].astype(str)) - known:
        raise InvalidInputError(
            f"Every batch in adata.obs[{batch_key!r}] is already in the reference: its cells need no new weights; "
            "use reference.get_latent_representation(adata)."
        )
    return setup, max(int(reference.module.n_batch), 1)
