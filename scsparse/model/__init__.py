"""User-facing scvi-tools models."""

from scsparse._checks import InvalidInputError
from scsparse.nn import NoActiveFactorWarning
from scsparse.results import FactorResponse

from ._consensus import consensus_of
from ._multistudy import MultiStudySparseVAE
from ._select import select_best
from ._sparsevae import SparseVAE
from ._validation import ZeroGenesWarning

__all__ = [
    "FactorResponse",
    "InvalidInputError",
    "MultiStudySparseVAE",
    "NoActiveFactorWarning",
    "SparseVAE",
    "ZeroGenesWarning",
    "consensus_of",
    "select_best",
]
