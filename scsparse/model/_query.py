"""Checks of a query for :meth:`scsparse.model.MultiStudySparseVAE.load_query_data`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from anndata import AnnData
from scvi import REGISTRY_KEYS

from ._validation import InvalidInputError, check_anndata

if TYPE_CHECKING:
    from ._multistudy import MultiStudySparseVAE

__all__ = ["check_query"]


def check_query(
    adata: AnnData, reference: MultiStudySparseVAE, n_latent_specific: int | Mapping[str, int]
) -> tuple[dict[str, Any], dict[str, int]]:
    """Check that ``adata`` can be mapped onto ``reference`` as new studies; name the fix when it cannot.

    Parameters
    ----------
    adata
        Query cells.
    reference
        The trained reference model.
    n_latent_specific
        Specific factors per new study (one int, or ``{study: K}``).

    Returns
    -------
    tuple
        The reference's setup arguments (to register the query with) and ``{new study: K}``.

    Raises
    ------
    InvalidInputError
        Untrained reference, a query model or a study-encoding reference as reference, genes that differ,
        no study column, studies already in the reference, batches the reference never saw, no new factor.
    """
    if not reference.is_trained_:
        raise InvalidInputError("The reference model is not trained; train it before mapping a query onto it.")
    if reference.module.n_latent_frozen:
        raise InvalidInputError(
            "The reference is itself a query model; map further studies onto its own reference (each query "
            "then has its own model), or fit one MultiStudySparseVAE on all the studies you have."
        )
    if reference.module.encode_study:
        raise InvalidInputError(
            "The reference encodes the study (encode_study=True), so its encoder has no input for a new "
            "study. Map queries onto a reference fitted with encode_study=False (the default)."
        )
    check_anndata(adata, reference._layer())
    ref_genes = np.asarray(reference.adata.var_names)
    if not np.array_equal(np.asarray(adata.var_names), ref_genes):
        missing = np.setdiff1d(ref_genes, np.asarray(adata.var_names))
        fix = (
            f"{missing.size} of the reference's genes are missing (e.g. {list(missing[:3])}); add them as zero counts"
            if missing.size
            else "subset and order it as the reference: adata[:, reference.adata.var_names].copy()"
        )
        raise InvalidInputError(f"The query's genes differ from the reference's (names or order): {fix}.")
    registry = reference.adata_manager.registry
    setup = dict(registry["setup_args"])
    study_key, batch_key = setup["study_key"], setup.get("batch_key")
    if study_key not in adata.obs:
        raise InvalidInputError(
            f"The query has no column adata.obs[{study_key!r}], the reference's study column; add it with "
            "the query's study name(s)."
        )
    query_studies = [str(s) for s in pd.unique(adata.obs[study_key].astype(str))]
    known = sorted(set(query_studies) & set(reference.studies))
    if known:
        raise InvalidInputError(
            f"Studies {known} are already in the reference; their cells need no new factors: use "
            "reference.get_latent_representation(adata). A query names new studies only."
        )
    if batch_key is not None and batch_key in adata.obs:
        ref_batches = reference.adata_manager.get_state_registry(REGISTRY_KEYS.BATCH_KEY).categorical_mapping
        new_batches = sorted(set(adata.obs[batch_key].astype(str)) - {str(b) for b in ref_batches})
        if new_batches:
            raise InvalidInputError(
                f"Batches {new_batches} of adata.obs[{batch_key!r}] are not in the reference: the decoder has "
                "no weights for them. Map batches the reference was trained with."
            )
    if isinstance(n_latent_specific, Mapping):
        unknown = sorted(set(map(str, n_latent_specific)) - set(query_studies))
        if unknown:
            raise InvalidInputError(
                f"n_latent_specific names studies {unknown} that are not in the query {query_studies}."
            )
        new_blocks = {s: int(n_latent_specific.get(s, 0)) for s in query_studies}
    else:
        new_blocks = dict.fromkeys(query_studies, int(n_latent_specific))
    if min(new_blocks.values()) < 0 or sum(new_blocks.values()) == 0:
        raise InvalidInputError("A query needs at least one new specific factor (n_latent_specific >= 1).")
    return setup, new_blocks
