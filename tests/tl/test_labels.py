"""How well factors predict labels: scsparse.tl.label_accuracy and predict_labels."""

from __future__ import annotations

import numpy as np
import pytest

from scsparse import tl


def _factors(n_per_label: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = np.repeat(["B", "T", "NK"], n_per_label)
    centres = {"B": [4.0, 0.0], "T": [0.0, 4.0], "NK": [-4.0, -4.0]}
    z = np.array([centres[label] for label in labels]) + 0.3 * rng.standard_normal((labels.size, 2))
    return z, labels


def test_factors_that_separate_the_labels_predict_them():
    z, labels = _factors(30)
    acc = tl.label_accuracy(z, labels, seed=0)
    assert acc == {"accuracy": 1.0, "balanced_accuracy": 1.0, "chance": pytest.approx(1 / 3, abs=0.02)}


def test_factors_unrelated_to_the_labels_predict_about_chance():
    rng = np.random.default_rng(1)
    labels = np.array(["a"] * 150 + ["b"] * 50)
    acc = tl.label_accuracy(rng.standard_normal((200, 3)), labels, seed=2)
    assert acc["chance"] == pytest.approx(0.75)  # stratified: the held-out rows keep the label shares
    assert acc["balanced_accuracy"] < 0.65


def test_the_split_follows_the_seed():
    z, labels = _factors(20)
    z[:, 0] += np.random.default_rng(3).standard_normal(z.shape[0]) * 4.0  # overlap: the split matters
    assert tl.label_accuracy(z, labels, seed=5) == tl.label_accuracy(z, labels, seed=5)


def test_predict_labels_labels_held_out_rows():
    z, labels = _factors(10)
    assert tl.predict_labels(z, labels, z[[0, 10, 20]]).tolist() == ["B", "T", "NK"]


def test_factors_with_nan_are_refused_with_the_reason():
    z, labels = _factors(10)
    z[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN or infinite"):
        tl.label_accuracy(z, labels)
