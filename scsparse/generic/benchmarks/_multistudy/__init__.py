"""``scsparse bench multistudy``: :func:`run_multistudy` (in ``_run``) and the modules it uses, one job each."""

from ._run import run_multistudy

__all__ = ["run_multistudy"]
