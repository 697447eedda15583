"""Baselines, metrics and benchmarks on plain arrays.

- :mod:`scsparse.generic.models` — VAE, beta-VAE, sparse VAE, NMF, oi-VAE, VSC, thresholded VSC behind one
  interface (``fit`` / ``transform`` / ``loadings`` / ``heldout_nll`` / ``predict_mean``);
- :mod:`scsparse.generic.nn` — the baselines' own building blocks (sparse codes, group lasso);
- :mod:`scsparse.generic.metrics` — DCI, support recovery, ranking metrics, statistics of codes;
- :mod:`scsparse.generic.benchmarks` — the papers' benchmarks, one function each.

Built on the public API of the rest of scsparse only, as a user's code is; nothing outside this subpackage imports
it. The benchmarks need the ``bench`` extra (``pip install 'scsparse[bench]'``). The subpackages are imported on
first access (no scvi-tools import here).
"""

from __future__ import annotations

import importlib
from types import ModuleType

_SUBMODULES = ("models", "nn", "metrics", "benchmarks")

__all__ = list(_SUBMODULES)


def __getattr__(name: str) -> ModuleType:
    if name in _SUBMODULES:
        return importlib.import_module(f"scsparse.generic.{name}")
    raise AttributeError(f"module 'scsparse.generic' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(list(globals()) + list(_SUBMODULES))
