"""The ``speed`` benchmark: :func:`run_speed` (in ``_run``) and its helpers, one module per job."""

from ._run import run_speed

__all__ = ["run_speed"]
