"""Metrics for learned representations on plain arrays.

- :func:`dci_disentanglement`, :func:`dci_from_importance` — DCI disentanglement / completeness /
  informativeness (Eastwood & Williams, 2018);
- :func:`match_factors`, :func:`factor_correlation` — Hungarian matching of estimated codes to true factors;
- :func:`support_fscore`, :func:`support_confusion`, :func:`estimated_support` — recovery of the support of
  the factor-to-feature matrix ``W``.
"""

from ._dci import DCIResult, dci_disentanglement, dci_from_importance
from ._matching import factor_correlation, match_factors
from ._support import SupportConfusion, estimated_support, support_confusion, support_fscore

__all__ = [
    "DCIResult",
    "SupportConfusion",
    "dci_disentanglement",
    "dci_from_importance",
    "estimated_support",
    "factor_correlation",
    "match_factors",
    "support_confusion",
    "support_fscore",
]
