"""Helpers the package is built on, for scripts and analyses around it.

- :func:`atomic_path`, :func:`write_text`, :func:`write_csv`, :func:`write_h5ad`, :func:`save_figure` — files
  written whole or not at all: the content goes to a temporary file beside the target, then into place, so an
  interrupted write leaves the earlier file as it was;
- :func:`torch_threads` — the number of CPU threads torch (and numba, under scanpy) may use inside a block,
  restored after it;
- :func:`package_versions` — the versions of Python and of the packages a result depends on, as every fit records
  them;
- :func:`markdown_rows` — the lines of a Markdown table, as the reports write them;
- :func:`check_integer` — an argument checked to be a whole number of at least a minimum, with an error that says
  what to pass (:class:`~scsparse.model.InvalidInputError`, a ``ValueError``), as the models check theirs;
- :func:`iter_row_chunks`, :func:`column_variances` — a matrix (dense, sparse or backed) read in blocks of rows,
  and its columns' variances in one pass over the blocks.

Light to import: nothing here imports torch or scvi-tools until a function needs it.

Examples
--------
>>> import numpy as np
>>> from scsparse.utils import column_variances, iter_row_chunks
>>> column_variances(iter_row_chunks(np.array([[0.0, 1.0], [2.0, 1.0], [4.0, 1.0]]), chunk_rows=2))
array([4., 0.])
"""

from scsparse._checks import check_integer
from scsparse._io import atomic_path, save_figure, write_csv, write_h5ad, write_text
from scsparse._matrix import column_variances, iter_row_chunks
from scsparse._provenance import package_versions
from scsparse._text import markdown_rows
from scsparse._threads import torch_threads

__all__ = [
    "atomic_path",
    "check_integer",
    "column_variances",
    "iter_row_chunks",
    "markdown_rows",
    "package_versions",
    "save_figure",
    "torch_threads",
    "write_csv",
    "write_h5ad",
    "write_text",
]
