"""Training plans (Lightning modules) and callbacks of the scsparse models."""

from ._pruning import SpikePruning
from ._trainingplan import SparseVAETrainingPlan

__all__ = ["SparseVAETrainingPlan", "SpikePruning"]
