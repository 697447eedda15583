"""The ``mocap`` benchmark: :func:`run_mocap` (in ``_run``) and its helpers, one module per job."""

from ._run import run_mocap

__all__ = ["run_mocap"]
