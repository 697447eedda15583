"""User-facing scvi-tools models."""

from scsparse._checks import InvalidInputError
from scsparse._options import DEFAULT_MAX_PRIOR_CELLS
from scsparse.nn import NoActiveFactorWarning
from scsparse.results import FactorResponse

from ._consensus import Consensus, consensus_of, consensus_programmes, refit_consensus
from ._multistudy import MultiStudySparseVAE
from ._seeding import seeded
from ._select import select_best
from ._sparsevae import SparseVAE
from ._validation import ZeroGenesWarning

__all__ = [
    "DEFAULT_MAX_PRIOR_CELLS",
    "Consensus",
    "FactorResponse",
    "InvalidInputError",
    "MultiStudySparseVAE",
    "NoActiveFactorWarning",
    "SparseVAE",
    "ZeroGenesWarning",
    "consensus_of",
    "consensus_programmes",
    "refit_consensus",
    "seeded",
    "select_best",
]
