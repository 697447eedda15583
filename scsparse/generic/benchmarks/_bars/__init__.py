"""The ``bars`` benchmark: :func:`run_bars` (in ``_run``) and its helpers, one module per job."""

from ._run import run_bars

__all__ = ["run_bars"]
