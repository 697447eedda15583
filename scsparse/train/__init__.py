"""Training plans (Lightning modules) of the scsparse models."""

from ._trainingplan import SparseVAETrainingPlan

__all__ = ["SparseVAETrainingPlan"]
