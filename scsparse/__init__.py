"""scsparse: sparse, identifiable gene programmes for single-cell data.

The subpackages follow the scverse layout:

- :mod:`scsparse.nn` — torch building blocks (masked decoder, encoder, spike-and-slab lasso prior, likelihoods);
- :mod:`scsparse.module`, :mod:`scsparse.train`, :mod:`scsparse.model` — the scvi-tools models;
- :mod:`scsparse.results` — a fit as it lives in AnnData: key layout, writer, reader (torch-free);
- :mod:`scsparse.tl`, :mod:`scsparse.pl` — scanpy-style tools and plots on AnnData;
- :mod:`scsparse.data` — dataset registry, loaders, simulators and the embedded demo dataset;
- :mod:`scsparse.utils` — helpers the package is built on (files written whole, torch's threads, versions);
- :mod:`scsparse.generic` — baselines, metrics and benchmarks on plain arrays, built on the public API above.

Subpackages are imported lazily so that ``import scsparse`` stays fast.
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("scsparse")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0"

_SUBMODULES = ("nn", "module", "train", "model", "results", "tl", "pl", "data", "utils", "generic")

__all__ = list(_SUBMODULES) + ["__version__"]


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f"scsparse.{name}")
    raise AttributeError(f"module 'scsparse' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The subpackages too (imported on first use), so that tab completion offers ``scsparse.model`` and the rest."""
    return sorted(set(globals()) | set(__all__))
