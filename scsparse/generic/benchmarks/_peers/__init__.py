"""``scsparse bench peers``: :func:`run_peers` (in ``_run``) and the modules it uses, one job each."""

from ._run import run_peers

__all__ = ["run_peers"]
