"""``scsparse bench speed``: :func:`run_speed` (in ``_run``) and the modules it uses, one job each."""

from ._run import run_speed

__all__ = ["run_speed"]
