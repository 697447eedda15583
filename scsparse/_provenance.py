"""Provenance shared by model results and benchmark reports: versions of the software a result depends on."""

from __future__ import annotations

import platform
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version

__all__ = ["DEFAULT_PACKAGES", "package_versions"]

#: Packages whose versions are recorded with every result.
DEFAULT_PACKAGES: tuple[str, ...] = (
    "scsparse",
    "scvi-tools",
    "torch",
    "lightning",
    "anndata",
    "scanpy",
    "numpy",
    "scipy",
    "pandas",
    "scikit-learn",
    "gseapy",
    "matplotlib",
)


def package_versions(packages: Sequence[str] = DEFAULT_PACKAGES) -> dict[str, str]:
    """Versions of Python and of ``packages`` (``"not installed"`` for missing ones).

    Examples
    --------
    >>> versions = package_versions(["numpy"])
    >>> sorted(versions)
    ['numpy', 'python']
    """
    out = {"python": platform.python_version()}
    for name in packages:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out
