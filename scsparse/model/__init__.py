"""User-facing scvi-tools models."""

from ._sparsevae import SparseVAE
from ._validation import InvalidInputError

__all__ = ["InvalidInputError", "SparseVAE"]
