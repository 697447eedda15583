"""The ``zeisel`` benchmark: :func:`run_zeisel` (in ``_run``) and its helpers, one module per job."""

from ._run import run_zeisel

__all__ = ["run_zeisel"]
