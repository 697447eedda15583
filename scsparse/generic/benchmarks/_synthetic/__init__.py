"""The ``synthetic`` benchmark: :func:`run_synthetic` (in ``_run``) and its helpers, one module per job."""

from ._run import run_synthetic

__all__ = ["run_synthetic"]
