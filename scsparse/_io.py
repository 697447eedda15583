"""Files written whole or not at all: every file scsparse writes goes to a temporary name beside it, then into place.

A writer interrupted part-way (Ctrl+C, a scheduler's SIGTERM, an out-of-memory kill, a full disk) leaves the earlier
file as it was, never a truncated one: the new content is written to a hidden temporary file in the target's folder
and moved onto the target with :func:`os.replace`, which is atomic within one file system.
"""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scsparse._checks import InvalidInputError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from anndata import AnnData
    from matplotlib.figure import Figure

__all__ = ["atomic_path", "save_figure", "temporary_name", "write_csv", "write_h5ad", "write_text"]

#: Marks the temporary files of :func:`atomic_path` (``.<name>.<random>.tmp<suffix>``).
TEMPORARY_MARK = ".tmp"


def temporary_name(target: Path) -> Path:
    """A hidden, unused name in ``target``'s folder that keeps its suffix (writers that read the format from it).

    Examples
    --------
    >>> name = temporary_name(Path("out/result.h5ad"))
    >>> name.parent, name.name.startswith(".result.h5ad."), name.suffix
    (PosixPath('out'), True, '.h5ad')
    """
    return target.with_name(f".{target.name}.{secrets.token_hex(4)}{TEMPORARY_MARK}{target.suffix}")


def _sync(path: Path) -> None:
    """Flush ``path``'s content to the disk before it replaces the target."""
    if path.is_file():
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextmanager
def atomic_path(target: str | PathLike[str]) -> Iterator[Path]:
    """A temporary path to write ``target``'s new content to; moved onto ``target`` when the block succeeds.

    If the block raises (or is interrupted, e.g. by ``KeyboardInterrupt``), the temporary file is removed and
    ``target`` is left as it was. An existing ``target`` keeps its permissions.

    Parameters
    ----------
    target
        The file to write (its folder must exist).

    Raises
    ------
    InvalidInputError
        If ``target`` is a folder, or its parent is not a folder.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> with atomic_path(folder / "notes.txt") as tmp:
    ...     _ = tmp.write_text("new")
    >>> (folder / "notes.txt").read_text(), len(list(folder.iterdir()))
    ('new', 1)
    """
    target = Path(target)
    if target.is_dir():
        raise InvalidInputError(f"{str(target)!r} is a folder; give the name of a file to write.")
    if not target.parent.is_dir():
        raise InvalidInputError(f"cannot write {str(target)!r}: {str(target.parent)!r} is not a folder.")
    tmp = temporary_name(target)
    try:
        yield tmp
        _sync(tmp)
        if target.exists():
            shutil.copymode(target, tmp)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _write_with(target: str | PathLike[str], write: Callable[[Path], Any]) -> Path:
    with atomic_path(target) as tmp:
        write(tmp)
    return Path(target)


def write_text(path: str | PathLike[str], text: str) -> Path:
    """Write ``text`` to ``path`` whole or not at all (see :func:`atomic_path`); returns the path."""
    return _write_with(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def write_h5ad(adata: AnnData, path: str | PathLike[str], **kwargs: Any) -> Path:
    """``adata.write_h5ad(path, **kwargs)`` whole or not at all (see :func:`atomic_path`); returns the path."""
    return _write_with(path, lambda tmp: adata.write_h5ad(tmp, **kwargs))


def write_csv(table: pd.DataFrame, path: str | PathLike[str], **kwargs: Any) -> Path:
    """``table.to_csv(path, **kwargs)`` whole or not at all (see :func:`atomic_path`); returns the path."""
    return _write_with(path, lambda tmp: table.to_csv(tmp, **kwargs))


def save_figure(fig: Figure, path: str | PathLike[str], **kwargs: Any) -> Path:
    """``fig.savefig(path, **kwargs)`` whole or not at all (see :func:`atomic_path`); returns the path.

    As with matplotlib, the format comes from ``path``'s suffix, and a path without one gets the default format's
    (``rcParams["savefig.format"]``, e.g. ``.png``).
    """
    import matplotlib

    target = Path(path)
    fmt = kwargs.pop("format", None) or target.suffix[1:] or matplotlib.rcParams["savefig.format"]
    if not target.suffix:
        target = target.with_name(f"{target.name}.{fmt}")
    return _write_with(target, lambda tmp: fig.savefig(tmp, format=fmt, **kwargs))
