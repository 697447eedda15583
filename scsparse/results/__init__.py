"""A fit as it lives in AnnData: the key layout, its writer and its reader, and the rules for reading programmes.

Torch-free: :mod:`scsparse.model` writes through it, :mod:`scsparse.tl`, :mod:`scsparse.pl` and the command line
read through it, and none of them spells out a key.

A :class:`~scsparse.model.SparseVAE` fit under ``key`` (``key_added``, default ``"sparsevae"``):

- ``obsm["X_{key}"]``: factor activities (posterior means), cells x K;
- ``varm["{key}_W"]``, ``varm["{key}_pip"]``: the mask ``W`` and the inclusion probabilities ``p*``, genes x K;
- ``uns[key]``: ``factor_names``, ``active``, ``active_factors``, ``eta``, ``pip_threshold``, ``top_genes``,
  ``anchor_genes`` and provenance (seed, parameters, versions, data hash).

A :class:`~scsparse.model.MultiStudySparseVAE` fit (default ``"mssvae"``): ``obsm["X_{key}_shared"]`` and
``obsm["X_{key}_specific"]`` (a study's specific factors are zero outside its cells), ``varm["{key}_W_shared"]``,
``varm["{key}_pip_shared"]`` and ``varm["{key}_W_<study>"]``, ``varm["{key}_pip_<study>"]`` per study, and
``uns[key]`` with ``studies``, ``study_keys``, ``shared_factors``, ``specific_factors`` and ``factor_table``
besides the fields above.

- :func:`result_keys` and :func:`factors_key`, :func:`loadings_key`, :func:`pip_key` — the key names;
- :func:`write_sparse_vae_results`, :func:`write_multistudy_results` — store a fit (never over a user's key
  unless asked); :func:`h5ad_safe`, :func:`data_hash` — provenance values;
- :func:`read_results` — a stored fit as :class:`FitResults` (:class:`MissingResultsError` names what to run when
  it is missing); :func:`study_cells`, :func:`is_multistudy`;
- :func:`resolve_factors` — factors by name or position, as every ``factors=`` argument takes them;
- :func:`rank_genes` — a programme's genes by decreasing ``|w|``; :func:`jaccard_matrix` — overlap of programmes;
  :func:`rank_biased_overlap` — agreement of two programmes' rankings;
  :func:`match_pairs`, :func:`matched_partners` — the one-to-one pairing of two fits' factors on a score;
  :func:`expression_factor_correlation` — the direction of a gene in a programme, from the data (its running sums,
  :class:`CorrelationSums`, for activities computed block by block);
- :func:`guided_table` — how far each factor guided by a gene set went from its set (``model.guided_table()``);
- :class:`FactorResponse` — decoded expression along a factor's traversal (``model.get_factor_response()``).
"""

from ._direction import CorrelationSums, expression_factor_correlation
from ._factors import resolve_factors
from ._guided import GUIDED_COLUMNS, GUIDED_STATUSES, MIN_KEPT, guided_table
from ._keys import factors_key, loadings_key, pip_key, result_keys, study_key_name
from ._matching import match_pairs, matched_partners
from ._programmes import OVERLAP_FRACTION, jaccard_matrix, rank_biased_overlap, rank_genes
from ._read import FitResults, MissingResultsError, is_multistudy, read_results, study_cells
from ._response import FactorResponse
from ._write import (
    DataHasher,
    check_keys_free,
    data_hash,
    h5ad_safe,
    write_multistudy_results,
    write_sparse_vae_results,
)

__all__ = [
    "GUIDED_COLUMNS",
    "GUIDED_STATUSES",
    "MIN_KEPT",
    "OVERLAP_FRACTION",
    "CorrelationSums",
    "DataHasher",
    "FactorResponse",
    "FitResults",
    "MissingResultsError",
    "check_keys_free",
    "data_hash",
    "expression_factor_correlation",
    "factors_key",
    "guided_table",
    "h5ad_safe",
    "is_multistudy",
    "jaccard_matrix",
    "loadings_key",
    "match_pairs",
    "matched_partners",
    "pip_key",
    "rank_biased_overlap",
    "rank_genes",
    "read_results",
    "resolve_factors",
    "result_keys",
    "study_cells",
    "study_key_name",
    "write_multistudy_results",
    "write_sparse_vae_results",
]
