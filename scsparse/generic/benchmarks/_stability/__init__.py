"""``scsparse bench stability``: :func:`run_stability` (in ``_run``) and the modules it uses, one job each."""

from ._run import run_stability

__all__ = ["run_stability"]
