"""User-facing scvi-tools models."""

from scsparse.nn import NoActiveFactorWarning

from ._multistudy import MultiStudySparseVAE
from ._response import FactorResponse
from ._select import select_best
from ._sparsevae import SparseVAE
from ._validation import InvalidInputError

__all__ = [
    "FactorResponse",
    "InvalidInputError",
    "MultiStudySparseVAE",
    "NoActiveFactorWarning",
    "SparseVAE",
    "select_best",
]
