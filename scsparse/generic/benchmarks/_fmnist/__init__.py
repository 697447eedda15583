"""The ``fmnist`` benchmark: :func:`run_fmnist` (in ``_run``) and its helpers, one module per job."""

from ._run import run_fmnist

__all__ = ["run_fmnist"]
