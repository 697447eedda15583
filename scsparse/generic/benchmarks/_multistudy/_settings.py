"""The multistudy benchmark's settings, targets and the paper's numbers, for ``_run`` and ``_summary``."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    pass

__all__ = ["TARGET_FSCORE"]

#: The issue's targets.
TARGET_FSCORE = 0.8
