"""The ``smiley`` benchmark: :func:`run_smiley` (in ``_run``) and its helpers, one module per job."""

from ._run import run_smiley

__all__ = ["run_smiley"]
