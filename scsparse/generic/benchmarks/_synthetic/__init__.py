"""``scsparse bench synthetic``: :func:`run_synthetic` (in ``_run``) and the modules it uses, one job each."""

from ._run import run_synthetic

__all__ = ["run_synthetic"]
