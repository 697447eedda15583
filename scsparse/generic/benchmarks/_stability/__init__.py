"""The ``stability`` benchmark: :func:`run_stability` (in ``_run``) and its helpers, one module per job."""

from ._run import run_stability

__all__ = ["run_stability"]
