"""DRVI's disentanglement scores (SMI, SPN, ASC; LMS, MSAS, MSGS) on cases with known answers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scsparse.generic.metrics import (
    absolute_spearman,
    label_disentanglement,
    latent_matching_score,
    most_similar_averaging_score,
    most_similar_gap_score,
    same_process_neighbours,
    scaled_mutual_information,
)

TYPES = ("B", "NK", "T")


def _balanced(n_per: int = 100) -> np.ndarray:
    return np.repeat(np.asarray(TYPES), n_per)


def _indicators(labels: np.ndarray) -> np.ndarray:
    return np.column_stack([(labels == t).astype(float) for t in TYPES])


def _binary_entropy(p: float) -> float:
    return -(p * math.log(p) + (1 - p) * math.log(1 - p))


def test_smi_of_indicator_dimensions_is_one_on_the_diagonal_and_known_off_it():
    labels = _balanced()
    smi = scaled_mutual_information(_indicators(labels), labels)
    assert list(smi.columns) == list(TYPES)
    np.testing.assert_allclose(np.diag(smi.to_numpy()), 1.0)
    # the B indicator tells NK apart only in part: MI = H(1/3) - (2/3) H(1/2), scaled by H(1/3)
    expected = (_binary_entropy(1 / 3) - 2 / 3 * _binary_entropy(1 / 2)) / _binary_entropy(1 / 3)
    off = smi.to_numpy()[~np.eye(3, dtype=bool)]
    np.testing.assert_allclose(off, expected, rtol=1e-12)
    assert latent_matching_score(smi) == pytest.approx(1.0)
    assert most_similar_averaging_score(smi) == pytest.approx(1.0)
    assert most_similar_gap_score(smi) == pytest.approx(1.0 - expected)


def test_smi_matches_mutual_information_of_the_binned_dimension():
    from sklearn.metrics import mutual_info_score

    rng = np.random.default_rng(0)
    labels = rng.choice(TYPES, size=400)
    z = rng.normal(size=(400, 2)) + (labels == "T")[:, None] * [1.5, 0.0]
    smi = scaled_mutual_information(z, labels, n_bins=10)
    for d in range(2):
        edges = np.linspace(z[:, d].min(), z[:, d].max(), 11)
        bins = np.clip(np.digitize(z[:, d], edges[1:-1]), 0, 9)
        for t in TYPES:
            y = labels == t
            expected = mutual_info_score(bins, y) / _binary_entropy(y.mean())
            assert smi.loc[d, t] == pytest.approx(expected, abs=1e-12)
    assert smi.loc[0, "T"] > 0.2 > smi.loc[1, "T"]


def test_spn_by_hand_and_on_sorted_and_constant_dimensions():
    labels = np.array(["a", "a", "b", "a", "b", "b"])
    # along 0..5: a-a is the one a pair (share 1/2 = frequency 1/2: no better than chance); b-b likewise
    assert same_process_neighbours(np.arange(6.0)[:, None], labels).to_numpy().tolist() == [[0.0, 0.0]]
    sorted_labels = np.array(["a", "a", "a", "b", "b", "b"])
    assert same_process_neighbours(np.arange(6.0)[:, None], sorted_labels).to_numpy().tolist() == [[1.0, 1.0]]
    # a constant (inactive) dimension scores 0 even when the cells are stored sorted by label
    assert same_process_neighbours(np.zeros((6, 1)), sorted_labels).to_numpy().tolist() == [[0.0, 0.0]]


def test_spn_breaks_ties_at_random_not_in_stored_order():
    labels = _balanced()  # stored sorted by type
    z = _indicators(labels)  # the B dimension is 0 for every NK and T cell: one long tie
    spn = same_process_neighbours(z, labels).to_numpy()
    np.testing.assert_allclose(np.diag(spn), 1.0)
    # NK among the tied non-B cells in random order: about (1/2 - 1/3) / (2/3) = 1/4, not the 1 of stored order
    assert 0.1 < spn[0, 1] < 0.4 and 0.1 < spn[0, 2] < 0.4


def test_scores_do_not_depend_on_the_sign_or_scale_of_a_dimension():
    rng = np.random.default_rng(1)
    labels = rng.choice(TYPES, size=300)
    z = rng.normal(size=(300, 3)) + _indicators(labels)
    flipped = z * np.array([-1.0, 3.0, -0.5]) + 2.0
    for score in (scaled_mutual_information, same_process_neighbours, absolute_spearman):
        np.testing.assert_allclose(score(flipped, labels).to_numpy(), score(z, labels).to_numpy(), atol=1e-12)


def test_random_codes_score_near_zero_and_structured_codes_near_one():
    rng = np.random.default_rng(2)
    labels = rng.choice(TYPES, size=600)
    noise = label_disentanglement(rng.normal(size=(600, 5)), labels)
    assert max(noise.values()) < 0.1
    codes = _indicators(labels) + 0.05 * rng.normal(size=(600, 3))
    good = label_disentanglement(codes, labels)
    assert min(good["LMS-SMI"], good["LMS-SPN"], good["MSAS-SPN"]) > 0.95
    # a second dimension copying the first process makes its gap vanish (redundancy), not its matching
    redundant = np.column_stack([codes, codes[:, 0]])
    worse = label_disentanglement(redundant, labels)
    assert worse["LMS-SPN"] == pytest.approx(good["LMS-SPN"], abs=0.02)
    assert worse["MSGS-SPN"] < good["MSGS-SPN"] - 0.2


def test_aggregations_by_hand():
    m = np.array([[0.9, 0.8], [0.1, 0.2]])
    assert latent_matching_score(m) == pytest.approx((0.9 + 0.2) / 2)
    assert most_similar_averaging_score(m) == pytest.approx((0.9 + 0.8) / 2)
    assert most_similar_gap_score(m) == pytest.approx(((0.9 - 0.1) + (0.8 - 0.2)) / 2)
    assert latent_matching_score([[1.0, 1.0, 1.0]]) == pytest.approx(1 / 3)  # two processes without a dimension


def test_absolute_spearman_of_an_indicator_is_one():
    labels = _balanced(20)
    asc = absolute_spearman(_indicators(labels), labels)
    np.testing.assert_allclose(np.diag(asc.to_numpy()), 1.0)
    assert absolute_spearman(np.zeros((60, 1)), labels).to_numpy().tolist() == [[0.0, 0.0, 0.0]]


def test_bad_input_is_refused_with_the_reason():
    labels = _balanced(10)
    with pytest.raises(ValueError, match="at least two categories"):
        scaled_mutual_information(np.zeros((5, 1)), ["a"] * 5)
    with pytest.raises(ValueError, match="30 rows"):
        same_process_neighbours(np.zeros((29, 2)), labels)
    with pytest.raises(ValueError, match="finite"):
        scaled_mutual_information(np.full((30, 1), np.nan), labels)
    with pytest.raises(ValueError, match="Unknown similarity or aggregation"):
        label_disentanglement(np.zeros((30, 1)), labels, similarities=("MIG",))
    with pytest.raises(ValueError, match="n_bins"):
        scaled_mutual_information(np.zeros((30, 1)), labels, n_bins=1)


def test_a_table_of_processes_scores_like_the_labels_it_was_made_of():
    import pandas as pd

    rng = np.random.default_rng(1)
    labels = _balanced(40)
    z = _indicators(labels) + 0.3 * rng.normal(size=(120, 3))
    table = pd.DataFrame(_indicators(labels).astype(bool), columns=list(TYPES))
    for similarity in (scaled_mutual_information, same_process_neighbours, absolute_spearman):
        pd.testing.assert_frame_equal(similarity(z, table), similarity(z, labels))
    assert label_disentanglement(z, table) == label_disentanglement(z, labels)


def test_a_binary_condition_is_one_process_in_a_table_and_two_as_labels():
    import pandas as pd

    condition = np.repeat(["control", "stimulated"], 60)
    z = (condition == "stimulated")[:, None] + 0.1 * np.random.default_rng(2).normal(size=(120, 1))
    as_labels = label_disentanglement(z, condition)  # two complementary processes, one dimension for both
    as_process = label_disentanglement(z, pd.DataFrame({"stimulated": condition == "stimulated"}))
    assert as_process["LMS-SMI"] == pytest.approx(1.0) and as_process["LMS-SPN"] > 0.9
    assert as_labels["LMS-SMI"] == pytest.approx(0.5)  # the second process is left without a dimension


def test_a_bad_table_of_processes_is_refused_with_the_reason():
    import pandas as pd

    with pytest.raises(ValueError, match="0/1"):
        scaled_mutual_information(np.zeros((4, 1)), pd.DataFrame({"p": [0.0, 0.5, 1.0, 1.0]}))
    with pytest.raises(ValueError, match="constant: \\['q'\\]"):
        scaled_mutual_information(np.zeros((4, 1)), pd.DataFrame({"p": [0, 1, 0, 1], "q": [1, 1, 1, 1]}))
