"""scvi-tools modules (``BaseModuleClass``) of the scsparse models."""

from ._multistudy import STUDY_KEY, MultiStudySparseVAEModule
from ._sparsevae import COUNT_LIKELIHOODS, GENE_LIKELIHOODS, SparseVAEModule

__all__ = [
    "COUNT_LIKELIHOODS",
    "GENE_LIKELIHOODS",
    "STUDY_KEY",
    "MultiStudySparseVAEModule",
    "SparseVAEModule",
]
