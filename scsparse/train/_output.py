"""What a fit prints: Lightning's progress bar and scsparse's own messages, not other packages' adverts."""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Iterable, Iterator

__all__ = ["THIRD_PARTY_WARNINGS", "clean_training_output"]

#: The logger behind Lightning's ``rank_zero_info`` messages (device summary, adverts).
LIGHTNING_INFO_LOGGER = "lightning.pytorch.utilities.rank_zero"

#: Warnings that other packages raise inside a fit and that a user can do nothing about: torch deprecated
#: ``LeafSpec``, which Lightning's own pytree helpers still use.
THIRD_PARTY_WARNINGS: tuple[str, ...] = (r".*LeafSpec.*",)


class _DropAdverts(logging.Filter):
    """Drop Lightning's product adverts ("💡 Tip: For seamless cloud logging ...") and keep everything else."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("💡 Tip:")


@contextlib.contextmanager
def clean_training_output(expected_warnings: Iterable[str] = ()) -> Iterator[None]:
    """Silence other packages' adverts and deprecations, and a model's expected warnings, inside the block.

    Lightning's device summary and progress bar, and every other log record and warning, still come through.
    The filters are removed on exit.

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
    advert_filter = _DropAdverts()
    info_logger = logging.getLogger(LIGHTNING_INFO_LOGGER)
    info_logger.addFilter(advert_filter)
    try:
        with warnings.catch_warnings():
            for message in (*THIRD_PARTY_WARNINGS, *expected_warnings):
                warnings.filterwarnings("ignore", message=message)
            yield
    finally:
        info_logger.removeFilter(advert_filter)
