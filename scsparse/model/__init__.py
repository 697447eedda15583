"""User-facing scvi-tools models."""

from ._multistudy import MultiStudySparseVAE
from ._sparsevae import SparseVAE
from ._validation import InvalidInputError

__all__ = ["InvalidInputError", "MultiStudySparseVAE", "SparseVAE"]
