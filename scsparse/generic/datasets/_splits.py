"""Seeded train / held-out splits of the rows of a data set (documents, users), independent of any model."""

from __future__ import annotations

import numpy as np

__all__ = ["SPLIT_SEED_OFFSET", "TEST_FRACTION", "eval_subset", "split_rows"]

#: Fraction of the rows held out.
TEST_FRACTION = 0.2
#: Offset of the split seed, so that split and model streams differ.
SPLIT_SEED_OFFSET = 7_919


def split_rows(
    n_rows: int,
    seed: int,
    test_fraction: float = TEST_FRACTION,
    *,
    unit: str = "rows",
    seed_offset: int = SPLIT_SEED_OFFSET,
) -> tuple[np.ndarray, np.ndarray]:
    """Seeded train/test split of ``n_rows`` rows (sorted indices), independent of any model.

    The split is drawn with ``numpy.random.default_rng(seed + seed_offset)``; at least one row is held out and
    at least one kept. ``unit`` names the rows in the error message (``"documents"``, ``"users"``).

    Examples
    --------
    >>> train, test = split_rows(10, seed=0)
    >>> len(train), len(test), sorted(set(train) | set(test)) == list(range(10))
    (8, 2, True)
    """
    if n_rows < 2:
        raise ValueError(f"Need at least 2 {unit} to split, got {n_rows}.")
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}.")
    rng = np.random.default_rng(int(seed) + int(seed_offset))
    n_test = min(max(int(round(test_fraction * n_rows)), 1), n_rows - 1)
    perm = rng.permutation(n_rows)
    return np.sort(perm[n_test:]), np.sort(perm[:n_test])


def eval_subset(test_idx: np.ndarray, n_eval: int | None, seed: int) -> np.ndarray:
    """A fixed (seeded) subset of ``n_eval`` held-out documents, or all of them when ``n_eval`` is ``None``."""
    if n_eval is None or n_eval >= len(test_idx):
        return test_idx
    rng = np.random.default_rng(int(seed) + 2 * SPLIT_SEED_OFFSET)
    return np.sort(rng.choice(test_idx, int(n_eval), replace=False))
