"""Metrics for learned representations on plain arrays.

- :func:`dci_disentanglement`, :func:`dci_from_importance` — DCI disentanglement / completeness /
  informativeness (Eastwood & Williams, 2018);
- :func:`match_factors`, :func:`assign_by_correlation`, :func:`factor_correlation` — Hungarian matching of
  estimated codes to true factors;
- :func:`support_fscore`, :func:`support_confusion`, :func:`estimated_support` — recovery of the support of
  the factor-to-feature matrix ``W``;
- :func:`recall_at_r`, :func:`ndcg_at_k`, :func:`fold_in_split`, :func:`fold_in_evaluate` — ranking metrics
  and the fold-in protocol for implicit feedback (Liang et al., 2018);
- :func:`multi_information`, :func:`jaccard_consistency`, :func:`pairwise_jaccard_consistency`,
  :func:`posterior_collapse_rate`, :func:`feature_collapse_rate`, :func:`dictionary_collapse_rate` —
  statistics of inferred codes (Fallah & Rozell, 2022);
- :func:`neighbour_agreement`, :func:`random_agreement` — how often a point's nearest neighbours share its label
  (batch mixing, cell-type conservation);
- :func:`label_disentanglement` (:func:`scaled_mutual_information`, :func:`same_process_neighbours`,
  :func:`absolute_spearman`; :func:`latent_matching_score`, :func:`most_similar_averaging_score`,
  :func:`most_similar_gap_score`) — DRVI's scores of one dimension per labelled process (LMS, MSAS, MSGS of SMI
  and SPN);
- :func:`programme_redundancy`, :func:`matched_programme_agreement`, :func:`batch_association` — gene programmes
  given as gene lists: overlap within a fit, agreement between fits (seeds), activity explained by batch;
- :func:`programme_agreement`, :func:`pairwise_agreement`, :func:`top_overlap`, :func:`rank_biased_overlap`,
  :class:`ProgrammeSet` — agreement between fits separated into what moves: gene sets, their cores, the
  loadings and the number of active factors.
"""

from ._codes import (
    active_atoms,
    dictionary_collapse_rate,
    feature_collapse_rate,
    gaussian_kl_per_dim,
    jaccard_consistency,
    multi_information,
    pairwise_jaccard_consistency,
    posterior_collapse_rate,
)
from ._dci import DCIResult, dci_disentanglement, dci_from_importance
from ._label_disentanglement import (
    DISENTANGLEMENT_AGGREGATIONS,
    DISENTANGLEMENT_SIMILARITIES,
    absolute_spearman,
    label_disentanglement,
    latent_matching_score,
    most_similar_averaging_score,
    most_similar_gap_score,
    same_process_neighbours,
    scaled_mutual_information,
)
from ._matching import assign_by_correlation, factor_correlation, match_factors
from ._neighbours import neighbour_agreement, random_agreement
from ._programmes import batch_association, matched_programme_agreement, programme_redundancy
from ._recommendation import FoldInSplit, fold_in_evaluate, fold_in_split, ndcg_at_k, recall_at_r
from ._stability import (
    AGREEMENT_MEASURES,
    ProgrammeSet,
    block_jaccard,
    pairwise_agreement,
    programme_agreement,
    rank_biased_overlap,
    top_overlap,
)
from ._support import SupportConfusion, estimated_support, support_confusion, support_fscore

__all__ = [
    "DCIResult",
    "SupportConfusion",
    "assign_by_correlation",
    "dci_disentanglement",
    "dci_from_importance",
    "estimated_support",
    "factor_correlation",
    "match_factors",
    "neighbour_agreement",
    "random_agreement",
    "support_confusion",
    "support_fscore",
    # disentanglement against labels (DRVI's scores)
    "DISENTANGLEMENT_AGGREGATIONS",
    "DISENTANGLEMENT_SIMILARITIES",
    "absolute_spearman",
    "label_disentanglement",
    "latent_matching_score",
    "most_similar_averaging_score",
    "most_similar_gap_score",
    "same_process_neighbours",
    "scaled_mutual_information",
    # programmes as gene lists
    "batch_association",
    "matched_programme_agreement",
    "programme_redundancy",
    # agreement between fits, by what moves
    "AGREEMENT_MEASURES",
    "ProgrammeSet",
    "pairwise_agreement",
    "block_jaccard",
    "programme_agreement",
    "rank_biased_overlap",
    "top_overlap",
    # ranking (Liang et al. 2018)
    "FoldInSplit",
    "fold_in_evaluate",
    "fold_in_split",
    "ndcg_at_k",
    "recall_at_r",
    # codes (Fallah & Rozell 2022)
    "active_atoms",
    "dictionary_collapse_rate",
    "feature_collapse_rate",
    "gaussian_kl_per_dim",
    "jaccard_consistency",
    "multi_information",
    "pairwise_jaccard_consistency",
    "posterior_collapse_rate",
]
