"""Training plans (Lightning modules) and callbacks of the scsparse models."""

from ._output import clean_training_output, without_log_lines
from ._pruning import SpikePruning
from ._stopping import FitNotSettledWarning, SettledStopping
from ._trainingplan import ACTIVE_SET_EVERY, ZERO_RULE_DECAY, SparseVAETrainingPlan

__all__ = [
    "ACTIVE_SET_EVERY",
    "FitNotSettledWarning",
    "SettledStopping",
    "SparseVAETrainingPlan",
    "SpikePruning",
    "ZERO_RULE_DECAY",
    "clean_training_output",
    "without_log_lines",
]
