"""The ``multistudy`` benchmark: :func:`run_multistudy` (in ``_run``) and its helpers, one module per job."""

from ._run import run_multistudy

__all__ = ["run_multistudy"]
