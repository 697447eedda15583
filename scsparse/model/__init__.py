"""User-facing scvi-tools models."""

from ._multistudy import MultiStudySparseVAE
from ._select import select_best
from ._sparsevae import SparseVAE
from ._validation import InvalidInputError

__all__ = ["InvalidInputError", "MultiStudySparseVAE", "SparseVAE", "select_best"]
