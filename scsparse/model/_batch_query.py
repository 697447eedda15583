"""Query mapping of new batches onto a trained SparseVAE (scArches-style): the reference fixed, new batches learnt."""

from __future__ import annotations

import copy
import os
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp
import torch
from anndata import AnnData
from scvi import REGISTRY_KEYS

from scsparse._checks import InvalidInputError

from ._validation import check_query_genes, check_unique_gene_names

__all__ = ["BatchQueryMixin", "onto_genes", "reference_genes"]


def reference_genes(reference_model: Any) -> pd.Index:
    """The genes of a trained model, or of one saved to a folder, in its order."""
    if isinstance(reference_model, str | os.PathLike):
        path = os.path.join(reference_model, "model.pt")
        if not os.path.isfile(path):
            raise InvalidInputError(
                f"No saved model at {str(reference_model)!r} (no model.pt): give the trained reference or the "
                "folder model.save() wrote."
            )
        saved = torch.load(path, map_location="cpu", weights_only=False)
        return pd.Index(np.asarray(saved["var_names"], dtype=str))
    return pd.Index(np.asarray(reference_model._gene_names, dtype=str))


def onto_genes(adata: AnnData, genes: pd.Index) -> AnnData:
    """``adata`` on ``genes`` in their order (itself when it already is): missing genes as zero counts.

    Raises
    ------
    InvalidInputError
        When ``adata`` shares no gene with ``genes``, or names a gene twice.
    """
    names = pd.Index(np.asarray(adata.var_names, dtype=str))
    if names.equals(genes):
        return adata
    check_unique_gene_names(adata)
    position = genes.get_indexer(names)
    present = np.flatnonzero(position >= 0)
    if present.size == 0:
        raise InvalidInputError(
            "The query shares no gene with the reference: compare adata.var_names with "
            "prepare_query_anndata(adata, reference, return_reference_var_names=True) (gene symbols vs Ensembl ids?)."
        )
    select = sp.csr_matrix(
        (np.ones(present.size), (np.arange(present.size), position[present])), shape=(present.size, genes.size)
    )

    def onto_reference(matrix):
        return sp.csr_matrix(sp.csr_matrix(matrix)[:, present] @ select, dtype=np.float32)

    def rows_onto_reference(array) -> np.ndarray:
        values = np.asarray(array, dtype=np.float64)
        out = np.full((genes.size, *values.shape[1:]), np.nan)
        out[position[present]] = values[present]
        return out

    var = adata.var.copy()
    var.index = names
    return AnnData(
        X=None if adata.X is None else onto_reference(adata.X),
        obs=adata.obs.copy(),
        var=var.reindex(genes),
        # anndata >= 0.13 lists X among the layers as layers[None]
        layers={name: onto_reference(adata.layers[name]) for name in adata.layers if name is not None},
        obsm={key: value.copy() for key, value in adata.obsm.items()},
        obsp={key: value.copy() for key, value in adata.obsp.items()},
        varm={key: rows_onto_reference(value) for key, value in adata.varm.items()},
        uns=copy.deepcopy(dict(adata.uns)),
    )


class BatchQueryMixin:
    """``prepare_query_anndata`` and ``load_query_data`` for :class:`~scsparse.model.SparseVAE` (new batches)."""

    @classmethod
    def prepare_query_anndata(
        cls,
        adata: AnnData,
        reference_model: Any,
        return_reference_var_names: bool = False,
        inplace: bool = True,
    ) -> AnnData | pd.Index | None:
        """Put the query's genes in the reference's order, genes it lacks as zero counts, for :meth:`load_query_data`.

        The parameters, defaults and results of scvi-tools' ``ArchesMixin.prepare_query_anndata``: genes are
        matched by name; the reference's genes missing from the query are added as zero counts (in ``X`` and every
        layer), the query's genes the reference does not have are left out. ``obs``, ``obsm``, ``obsp`` and
        ``uns`` are kept, ``var``'s columns too (empty for the added genes), and so are ``varm``'s arrays (NaN for
        the added genes). Not scvi-tools' own, which drops ``uns``, makes the counts float64, takes a saved
        reference's folder only as a ``str`` and stops at a repeated gene name with a pandas error.

        Parameters
        ----------
        adata
            The query cells.
        reference_model
            The trained reference, or the folder it was saved to (:meth:`save`).
        return_reference_var_names
            Only return the reference's genes (a :class:`pandas.Index`), changing nothing.
        inplace
            Change ``adata`` itself (and return ``None``); ``False`` returns a new AnnData and leaves ``adata``
            as it was.

        Returns
        -------
        ``None`` (``inplace=True``), the prepared AnnData (``inplace=False``) or the reference's genes
        (``return_reference_var_names=True``).

        Examples
        --------
        >>> scsparse.model.SparseVAE.prepare_query_anndata(adata_query, reference)
        >>> model = scsparse.model.SparseVAE.load_query_data(adata_query, reference)
        >>> query = scsparse.model.SparseVAE.prepare_query_anndata(adata_query, "reference_model/", inplace=False)
        """
        genes = reference_genes(reference_model)
        if return_reference_var_names:
            return genes
        prepared = onto_genes(adata, genes)
        if not inplace:
            return prepared
        if prepared is not adata:
            adata._init_as_actual(prepared)  # as scvi-tools does: the caller's object now holds the prepared data
        return None

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
