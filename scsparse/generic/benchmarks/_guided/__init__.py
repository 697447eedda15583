"""The ``guided`` benchmark: :func:`run_guided` (in ``_run``) and its helpers, one module per job."""

from ._run import run_guided

__all__ = ["run_guided"]
