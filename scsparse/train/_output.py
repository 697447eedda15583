"""What a fit prints: Lightning's progress bar and scsparse's own messages, not other packages' adverts."""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Iterable, Iterator

__all__ = ["THIRD_PARTY_WARNINGS", "clean_training_output", "without_log_lines"]

#: The logger behind Lightning's ``rank_zero_info`` messages (device summary, adverts).
LIGHTNING_INFO_LOGGER = "lightning.pytorch.utilities.rank_zero"

#: Warnings that other packages raise inside a fit and that a user can do nothing about: torch deprecated
#: ``LeafSpec``, which Lightning's own pytree helpers still use.
THIRD_PARTY_WARNINGS: tuple[str, ...] = (r".*LeafSpec.*",)


#: How the Lightning lines a fit drops start: its product adverts ("💡 Tip: For seamless cloud logging ...") and
#: its line about TPUs when there is none; everything else, the GPU line included (it says whether an available GPU
#: is used), comes through.
LIGHTNING_NOISE: tuple[str, ...] = ("💡 Tip:", "TPU available: False")


@contextlib.contextmanager
def clean_training_output(expected_warnings: Iterable[str] = ()) -> Iterator[None]:
    """Silence other packages' adverts and deprecations, and a model's expected warnings, inside the block.

    Lightning's GPU line and progress bar, and every other log record and warning, still come through. The
    filters are removed on exit.

    Parameters
    ----------
    expected_warnings
        Regular expressions of warning messages the caller raises by design (for instance Lightning's "fewer
        training batches than the logging interval" when the history is logged per epoch).

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     with clean_training_output():
    ...         warnings.warn("`isinstance(treespec, LeafSpec)` is deprecated", FutureWarning)
    ...         warnings.warn("a user's own warning")
    >>> [str(w.message) for w in caught]
    ["a user's own warning"]
    """
    with without_log_lines(LIGHTNING_INFO_LOGGER, *LIGHTNING_NOISE), warnings.catch_warnings():
        for message in (*THIRD_PARTY_WARNINGS, *expected_warnings):
            warnings.filterwarnings("ignore", message=message)
        yield


class _DropLines(logging.Filter):
    def __init__(self, prefixes: tuple[str, ...]) -> None:
        super().__init__()
        self.prefixes = prefixes

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(self.prefixes)


@contextlib.contextmanager
def without_log_lines(logger_name: str, *prefixes: str) -> Iterator[None]:
    """Drop the records of one logger that start with one of ``prefixes`` inside the block; keep all others.

    For other packages' routine notes that a call of ours makes them print (scvi-tools' "File ... already
    downloaded" when a model is loaded from a folder, "attempting to transfer AnnData setup" when a method is given
    new cells). The filter is removed on exit.

    Parameters
    ----------
    logger_name
        The logger that writes them (``logging.getLogger(__name__)`` of the module).
    *prefixes
        How the dropped messages start.

    Examples
    --------
    >>> import logging
    >>> with without_log_lines("scvi.data._download", "File "):
    ...     logging.getLogger("scvi.data._download").info("File model.pt already downloaded")
    """
    line_filter = _DropLines(tuple(prefixes))
    logger = logging.getLogger(logger_name)
    logger.addFilter(line_filter)
    try:
        yield
    finally:
        logger.removeFilter(line_filter)
