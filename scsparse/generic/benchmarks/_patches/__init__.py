"""The ``patches`` benchmark: :func:`run_patches` (in ``_run``) and its helpers, one module per job."""

from ._run import run_patches

__all__ = ["run_patches"]
