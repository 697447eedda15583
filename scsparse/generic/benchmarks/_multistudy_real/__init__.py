"""The ``multistudy_real`` benchmark: :func:`run_multistudy_real` (in ``_run``) and its helpers, one module per job."""

from ._run import run_multistudy_real

__all__ = ["run_multistudy_real"]
