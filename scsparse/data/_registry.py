"""Data registry: where each dataset's files come from, where they are cached, and how they are verified.

The registry (``data_registry.yaml``) lists, per dataset, its files with a path relative to the cache root, a
raw URL of a public repository at a fixed commit (or ``null``), the sha256 and the size. Files are looked up
in the cache root (:func:`data_dir`); a file that is present is verified once per process; a file that is
absent is downloaded with :func:`pooch.retrieve` unless ``SCSPARSE_OFFLINE`` is set.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import os
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd
import pooch
import yaml

__all__ = [
    "ENV_DATA_DIR",
    "ENV_OFFLINE",
    "DataChecksumError",
    "DataNotAvailableError",
    "UnknownDatasetError",
    "data_dir",
    "fetch",
    "list_datasets",
    "registry",
]

ENV_DATA_DIR = "SCSPARSE_DATA_DIR"
ENV_OFFLINE = "SCSPARSE_OFFLINE"
_REGISTRY_FILE = "data_registry.yaml"

# (resolved path, size, mtime_ns) -> sha256 of files already hashed in this process.
_HASH_CACHE: dict[tuple[str, int, int], str] = {}


class DataNotAvailableError(FileNotFoundError):
    """A registry file is neither in the data folder nor downloadable (offline, no URL or network failure)."""


class DataChecksumError(ValueError):
    """A registry file exists but its sha256 differs from the registry's."""


class UnknownDatasetError(KeyError):
    """The requested dataset name is not in the registry."""

    def __str__(self) -> str:  # KeyError would quote the whole message
        return str(self.args[0]) if self.args else ""


def data_dir() -> Path:
    """Return the root folder of the local data cache.

    The folder is ``$SCSPARSE_DATA_DIR`` when that environment variable is set, else the per-user cache folder
    of :func:`pooch.os_cache` (for example ``~/.cache/scsparse`` on Linux). Files lie below it with the
    relative paths given in the registry. The folder is not created here.

    Returns
    -------
    pathlib.Path
        The cache root.

    Examples
    --------
    >>> from scsparse.data import data_dir
    >>> root = data_dir()
    >>> (root / "multistudy/kang2018_scgen/valid.h5ad").is_file()  # doctest: +SKIP
    True
    """
    env = os.environ.get(ENV_DATA_DIR)
    if env:
        return Path(env).expanduser()
    return Path(pooch.os_cache("scsparse"))


def _offline() -> bool:
    return os.environ.get(ENV_OFFLINE, "").strip().lower() not in ("", "0", "false", "no")


def _read_registry_text() -> str:
    packaged = resources.files("scsparse.data").joinpath(_REGISTRY_FILE)
    if packaged.is_file():  # wheel install: force-included by hatchling
        return packaged.read_text(encoding="utf-8")
    repo_root = Path(__file__).resolve().parents[2] / _REGISTRY_FILE  # editable install / source tree
    if repo_root.is_file():
        return repo_root.read_text(encoding="utf-8")
    raise FileNotFoundError(
        f"The scsparse data registry {_REGISTRY_FILE!r} was found neither inside the package "
        f"(scsparse/data/) nor at the repository root ({repo_root}). Reinstall scsparse."
    )


@functools.lru_cache(maxsize=1)
def _registry_cached() -> dict[str, dict[str, Any]]:
    raw = yaml.safe_load(_read_registry_text())
    out: dict[str, dict[str, Any]] = {}
    for entry in raw["datasets"]:
        out[entry["name"]] = entry
    return out


def registry() -> dict[str, dict[str, Any]]:
    """Return the data registry as a mapping from dataset name to its entry.

    Each entry has ``name``, ``description``, ``license``, ``citation`` and ``files``, a list of mappings with
    ``path`` (relative to :func:`data_dir`), ``url`` (or ``None``), ``sha256``, ``size`` and optionally
    ``note``. The YAML is parsed once per process; a deep copy is returned so callers may modify it freely.

    Returns
    -------
    dict
        ``{name: entry}`` in registry order.

    Examples
    --------
    >>> from scsparse.data import registry
    >>> reg = registry()
    >>> reg["kang2018"]["files"][0]["path"]
    'multistudy/kang2018_scgen/valid.h5ad'
    """
    return copy.deepcopy(_registry_cached())


def _entry(name: str) -> dict[str, Any]:
    reg = _registry_cached()
    if name not in reg:
        raise UnknownDatasetError(
            f"Unknown dataset {name!r}. Available datasets: {', '.join(reg)}. "
            "See scsparse.data.list_datasets() for descriptions."
        )
    return reg[name]


def list_datasets() -> pd.DataFrame:
    """List the registry's datasets.

    Returns
    -------
    pandas.DataFrame
        One row per dataset, indexed by name, with columns ``description``, ``n_files``, ``size_mb`` (total
        download size), ``downloadable`` (every file has a public URL), ``available`` (every file is present
        in :func:`data_dir`; not hash-checked), ``license`` and ``citation``.

    Examples
    --------
    >>> from scsparse.data import list_datasets
    >>> df = list_datasets()
    >>> "kang2018" in df.index
    True
    """
    root = data_dir()
    rows = []
    for name, entry in _registry_cached().items():
        files = entry["files"]
        rows.append(
            {
                "name": name,
                "description": entry["description"],
                "n_files": len(files),
                "size_mb": round(sum(int(f["size"]) for f in files) / 1e6, 3),
                "downloadable": all(f.get("url") for f in files),
                "available": all((root / f["path"]).is_file() for f in files),
                "license": entry["license"],
                "citation": entry["citation"],
            }
        )
    return pd.DataFrame(rows).set_index("name")


def _sha256(path: Path) -> str:
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if key not in _HASH_CACHE:
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        _HASH_CACHE[key] = h.hexdigest()
    return _HASH_CACHE[key]


def _checksum_error(name: str, fentry: dict[str, Any], local: Path, found: str) -> DataChecksumError:
    return DataChecksumError(
        f"Checksum mismatch for {local} (dataset {name!r}, registry path {fentry['path']!r}): expected "
        f"sha256 {fentry['sha256']}, found {found}. The file is corrupted or a different version. Delete it "
        f"and call scsparse.data.fetch({name!r}) to download it again, or replace it with the original file "
        f"(or point {ENV_DATA_DIR} to a folder holding the original)."
    )


def _not_available(name: str, fentry: dict[str, Any], root: Path, reason: str) -> DataNotAvailableError:
    url = fentry.get("url")
    note = f" Note: {fentry['note']}" if fentry.get("note") else ""
    return DataNotAvailableError(
        f"Dataset {name!r}: file {fentry['path']!r} is not in the data folder {root} and could not be "
        f"obtained from {url if url else '(no public URL)'}: {reason}. Set the environment variable "
        f"{ENV_DATA_DIR} to a folder that holds {fentry['path']!r} (same layout as the registry), or connect "
        f"to the network and try again.{note}"
    )


def _download(name: str, fentry: dict[str, Any], root: Path, target: Path) -> None:
    url = fentry.get("url")
    if not url:
        raise _not_available(name, fentry, root, "the registry has no public download URL for this file")
    if _offline():
        raise _not_available(name, fentry, root, f"downloads are disabled ({ENV_OFFLINE} is set)")
    try:
        pooch.retrieve(
            url,
            known_hash=f"sha256:{fentry['sha256']}",
            path=target.parent,
            fname=target.name,
            progressbar=False,
        )
    except ValueError as exc:  # pooch: hash of the downloaded file does not match
        if "hash" in str(exc).lower():
            raise DataChecksumError(
                f"Dataset {name!r}: the file downloaded from {url} for {fentry['path']!r} does not have the "
                f"registry's sha256 {fentry['sha256']} ({exc}). The remote file changed; obtain the original "
                f"file and place it under {ENV_DATA_DIR}."
            ) from exc
        raise _not_available(name, fentry, root, f"{type(exc).__name__}: {exc}") from exc
    except Exception as exc:  # any network or filesystem failure means "not available"
        raise _not_available(name, fentry, root, f"{type(exc).__name__}: {exc}") from exc


def fetch(name: str, files: list[str] | tuple[str, ...] | None = None) -> dict[str, Path]:
    """Return local paths of a dataset's files, downloading and verifying them as needed.

    Each file is looked up below :func:`data_dir`. A present file is checked against the registry's sha256
    (hashed once per process and file version); an absent one is downloaded from its registry URL with
    :func:`pooch.retrieve` (verified by sha256), unless the environment variable ``SCSPARSE_OFFLINE`` is set.

    Parameters
    ----------
    name
        Dataset name, see :func:`list_datasets`.
    files
        Optional subset of the dataset's files, given by registry path or by file name; all files by default.

    Returns
    -------
    dict of str to pathlib.Path
        Registry path of each file -> local path.

    Raises
    ------
    UnknownDatasetError
        ``name`` is not in the registry (a :class:`KeyError`; the message lists the available names).
    DataNotAvailableError
        A file is absent and cannot be downloaded (offline, no URL, or network failure); a
        :class:`FileNotFoundError` whose message names the file, its URL and ``SCSPARSE_DATA_DIR``.
    DataChecksumError
        A file's sha256 differs from the registry's (a :class:`ValueError`).

    Examples
    --------
    >>> from scsparse.data import fetch
    >>> paths = fetch("kang2018")  # doctest: +SKIP
    >>> paths["multistudy/kang2018_scgen/valid.h5ad"].name  # doctest: +SKIP
    'valid.h5ad'
    """
    entry = _entry(name)
    fentries = entry["files"]
    if files is not None:
        wanted = set(files)
        fentries = [f for f in fentries if f["path"] in wanted or Path(f["path"]).name in wanted]
        unknown = wanted - {f["path"] for f in fentries} - {Path(f["path"]).name for f in fentries}
        if unknown:
            raise ValueError(
                f"Dataset {name!r} has no file(s) {sorted(unknown)}; its files are "
                f"{[f['path'] for f in entry['files']]}."
            )
    root = data_dir()
    out: dict[str, Path] = {}
    for fentry in fentries:
        local = root / fentry["path"]
        if not local.is_file():
            _download(name, fentry, root, local)
        found = _sha256(local)
        if found != fentry["sha256"]:
            raise _checksum_error(name, fentry, local, found)
        out[fentry["path"]] = local
    return out
