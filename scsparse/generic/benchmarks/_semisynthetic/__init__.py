"""The ``semisynthetic`` benchmark: :func:`run_semisynthetic` (in ``_run``) and its helpers, one module per job."""

from ._run import run_semisynthetic

__all__ = ["run_semisynthetic"]
