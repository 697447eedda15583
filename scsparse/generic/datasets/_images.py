"""Image data sets of the sparse-coding benchmarks: Olshausen's whitened images, Fashion-MNIST, Smiley.

- :func:`olshausen_images` and :func:`sample_patches` — the 10 whitened 512x512 natural images of Olshausen &
  Field (1996) (sparsenet-tcl, HIPS big-endian float32) and random 16x16 patches of them (Fallah & Rozell
  2022, Sec. 4.1);
- :func:`fashion_mnist` — Fashion-MNIST from its IDX gz files (Xiao et al. 2017);
- :func:`smiley` — Tonolini et al.'s (2019) Smiley sparse data set, test split (binary 32x32 images with 18
  presence flags and 18 continuous attribute values).

All files are read through :func:`scsparse.data.fetch` (offline cache first, verified by sha256).
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

__all__ = [
    "OLSHAUSEN_DATASET",
    "FASHION_MNIST_DATASET",
    "SMILEY_DATASET",
    "fashion_mnist",
    "olshausen_images",
    "read_hips_header",
    "read_idx",
    "sample_patches",
    "smiley",
]

#: Registry names of the three data sets.
OLSHAUSEN_DATASET = "olshausen_images"
FASHION_MNIST_DATASET = "fashion_mnist"
SMILEY_DATASET = "smiley_vsc"

_N_OLSHAUSEN = 10
_IDX_DTYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def _fetch(name: str, files: list[str] | None = None) -> dict[str, Path]:
    from scsparse.data import fetch  # lazy: keeps this module importable without the single-cell stack

    return fetch(name, files)


def read_hips_header(path: str | Path) -> dict[str, int]:
    r"""Parse the HIPS header of the sparsenet-tcl images (one frame per file, float32).

    The HIPS-1 text header lists, one per line: original name, sequence name, number of frames, date,
    rows, columns, bits per pixel, bit packing, pixel format (3 = float), then a free description
    ending with a line holding ``"."``.

    Parameters
    ----------
    path
        The ``header`` file.

    Returns
    -------
    dict
        ``n_frames``, ``rows``, ``cols``, ``bits_per_pixel`` and ``pixel_format``.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "header"
    >>> _ = p.write_text("\n\n1\n\n512\n512\n32\n0\n3\ngenheader\n\n.\n")
    >>> read_hips_header(p)["rows"]
    512
    """
    lines = Path(path).read_text(encoding="latin-1").split("\n")
    try:
        fields = {
            "n_frames": int(lines[2]),
            "rows": int(lines[4]),
            "cols": int(lines[5]),
            "bits_per_pixel": int(lines[6]),
            "pixel_format": int(lines[8]),
        }
    except (IndexError, ValueError) as exc:
        raise ValueError(
            f"{path} is not a HIPS header (expected frames, rows, columns, bits and format on lines 3, 5-7 and 9)."
        ) from exc
    if fields["pixel_format"] != 3 or fields["bits_per_pixel"] != 32:
        raise ValueError(f"{path}: expected 32-bit float pixels (HIPS format 3), got {fields}.")
    return fields


def olshausen_images() -> np.ndarray:
    """Olshausen's 10 whitened 512x512 natural images (sparsenet-tcl copy).

    Each ``imageN`` file is the big-endian float32 body of a HIPS image whose size is read from the
    shared ``header`` file. These are the images of ``IMAGES.mat`` up to a global scale (mean variance
    0.079 instead of 0.1). Benchmark input only: the images are not redistributed with the package.

    Returns
    -------
    numpy.ndarray
        float32 array of shape ``(10, 512, 512)``.

    Raises
    ------
    scsparse.data.DataNotAvailableError
        The files are neither in the data folder nor downloadable.
    ValueError
        A file does not have the size the header announces.

    Examples
    --------
    >>> from scsparse.generic.datasets import olshausen_images
    >>> olshausen_images().shape  # doctest: +SKIP
    (10, 512, 512)
    """
    names = ["header"] + [f"image{i}" for i in range(_N_OLSHAUSEN)]
    paths = {Path(k).name: v for k, v in _fetch(OLSHAUSEN_DATASET, names).items()}
    head = read_hips_header(paths["header"])
    shape = (head["rows"], head["cols"])
    images = []
    for i in range(_N_OLSHAUSEN):
        raw = np.fromfile(paths[f"image{i}"], dtype=">f4")
        if raw.size != shape[0] * shape[1]:
            raise ValueError(
                f"{paths[f'image{i}']} holds {raw.size} float32 values, the header announces {shape}; "
                "the file is truncated or not a sparsenet image."
            )
        images.append(raw.reshape(shape).astype(np.float32))
    return np.stack(images)


def sample_patches(
    images: np.ndarray, n_patches: int, patch_size: int = 16, seed: int = 0, image_ids: np.ndarray | None = None
) -> np.ndarray:
    """Square patches at uniformly random positions of randomly chosen images, flattened.

    Parameters
    ----------
    images
        Array ``(n_images, height, width)``.
    n_patches
        Number of patches.
    patch_size
        Side of a patch in pixels.
    seed
        Seed of the positions and images drawn.
    image_ids
        Images to draw from (default: all).

    Returns
    -------
    numpy.ndarray
        float32 array ``(n_patches, patch_size**2)``, rows in row-major pixel order.

    Examples
    --------
    >>> import numpy as np
    >>> imgs = np.arange(2 * 8 * 8, dtype=np.float32).reshape(2, 8, 8)
    >>> sample_patches(imgs, 5, patch_size=4).shape
    (5, 16)
    """
    imgs = np.asarray(images)
    if imgs.ndim != 3:
        raise ValueError(f"images must be 3-d (n_images, height, width), got shape {imgs.shape}.")
    if not 1 <= patch_size <= min(imgs.shape[1:]):
        raise ValueError(f"patch_size must be in [1, {min(imgs.shape[1:])}] for images {imgs.shape[1:]}.")
    if n_patches < 1:
        raise ValueError(f"n_patches must be positive, got {n_patches}.")
    ids = np.arange(imgs.shape[0]) if image_ids is None else np.asarray(image_ids, dtype=int)
    rng = np.random.default_rng(seed)
    which = rng.choice(ids, size=n_patches)
    rows = rng.integers(0, imgs.shape[1] - patch_size + 1, size=n_patches)
    cols = rng.integers(0, imgs.shape[2] - patch_size + 1, size=n_patches)
    offsets = np.arange(patch_size)
    r = rows[:, None, None] + offsets[None, :, None]
    c = cols[:, None, None] + offsets[None, None, :]
    return imgs[which[:, None, None], r, c].reshape(n_patches, -1).astype(np.float32)


def read_idx(path: str | Path) -> np.ndarray:
    """Read an IDX file (the MNIST format), gzipped or not.

    Examples
    --------
    >>> import gzip, pathlib, tempfile, numpy as np
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "x-idx1-ubyte.gz"
    >>> with gzip.open(p, "wb") as fh:
    ...     _ = fh.write(bytes([0, 0, 8, 1, 0, 0, 0, 3, 7, 8, 9]))
    >>> read_idx(p).tolist()
    [7, 8, 9]
    """
    p = Path(path)
    opener = gzip.open if p.suffix == ".gz" else open
    with opener(p, "rb") as fh:
        data = fh.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] not in _IDX_DTYPES:
        raise ValueError(f"{p} is not an IDX file (bad magic number {data[:4]!r}).")
    ndim = data[3]
    dims = tuple(int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    dtype = np.dtype(_IDX_DTYPES[data[2]])
    body = np.frombuffer(data, dtype=dtype, offset=4 + 4 * ndim)
    if body.size != int(np.prod(dims)):
        raise ValueError(f"{p}: header announces shape {dims} but the file holds {body.size} values.")
    return body.reshape(dims)


def fashion_mnist(split: str = "train") -> tuple[np.ndarray, np.ndarray]:
    """Fashion-MNIST images and labels (Xiao, Rasul & Vollgraf 2017).

    Parameters
    ----------
    split
        ``"train"`` (60,000 images) or ``"test"`` (10,000).

    Returns
    -------
    images, labels
        ``uint8`` arrays of shapes ``(n, 28, 28)`` and ``(n,)`` (classes 0-9).

    Examples
    --------
    >>> from scsparse.generic.datasets import fashion_mnist
    >>> X, y = fashion_mnist("test")  # doctest: +SKIP
    >>> X.shape, y.shape  # doctest: +SKIP
    ((10000, 28, 28), (10000,))
    """
    prefix = {"train": "train", "test": "t10k"}.get(split)
    if prefix is None:
        raise ValueError(f"split must be 'train' or 'test', got {split!r}.")
    files = [f"{prefix}-images-idx3-ubyte.gz", f"{prefix}-labels-idx1-ubyte.gz"]
    paths = {Path(k).name: v for k, v in _fetch(FASHION_MNIST_DATASET, files).items()}
    images, labels = read_idx(paths[files[0]]), read_idx(paths[files[1]])
    if images.ndim != 3 or labels.ndim != 1 or images.shape[0] != labels.shape[0]:
        raise ValueError(f"Fashion-MNIST files disagree: images {images.shape}, labels {labels.shape}.")
    return images, labels


def smiley() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Tonolini et al.'s Smiley sparse data set, test split (the training split is not available offline).

    Returns
    -------
    images, presence, values
        ``images``: ``(20000, 1024)`` binary ``uint8`` (32x32, flattened row-major as stored);
        ``presence``: ``(20000, 18)`` binary flags of the attribute features; ``values``: ``(20000, 18)``
        float64 values of those features.

    Examples
    --------
    >>> from scsparse.generic.datasets import smiley
    >>> X, S, V = smiley()  # doctest: +SKIP
    >>> X.shape, S.shape, V.shape  # doctest: +SKIP
    ((20000, 1024), (20000, 18), (20000, 18))
    """
    import scipy.io

    path = next(iter(_fetch(SMILEY_DATASET).values()))
    mat = scipy.io.loadmat(path)
    missing = [k for k in ("X", "S", "V") if k not in mat]
    if missing:
        raise ValueError(f"{path} lacks the variables {missing}; expected X (images), S (presence), V (values).")
    images, presence, values = np.asarray(mat["X"]), np.asarray(mat["S"]), np.asarray(mat["V"], dtype=np.float64)
    if not (images.shape[0] == presence.shape[0] == values.shape[0]):
        raise ValueError(f"{path}: row counts differ ({images.shape}, {presence.shape}, {values.shape}).")
    return images.astype(np.uint8), presence.astype(np.uint8), values
