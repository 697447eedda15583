"""The ``programme_size`` benchmark: :func:`run_programme_size` (in ``_run``) and its helpers, one module per job."""

from ._run import run_programme_size

__all__ = ["run_programme_size"]
