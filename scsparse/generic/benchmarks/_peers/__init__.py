"""The ``peers`` benchmark: :func:`run_peers` (in ``_run``) and its helpers, one module per job."""

from ._run import run_peers

__all__ = ["run_peers"]
