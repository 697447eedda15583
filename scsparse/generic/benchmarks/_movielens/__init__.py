"""The ``movielens`` benchmark: :func:`run_movielens` (in ``_run``) and its helpers, one module per job."""

from ._run import run_movielens

__all__ = ["run_movielens"]
