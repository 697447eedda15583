"""The ``text`` benchmark: :func:`run_text` (in ``_run``) and its helpers, one module per job."""

from ._run import run_text

__all__ = ["run_text"]
