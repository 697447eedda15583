"""Tests of the seed-agreement measures: gene sets, cores, loadings and the number of active factors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scsparse.generic.metrics import (
    ProgrammeSet,
    matched_programme_agreement,
    pairwise_agreement,
    programme_agreement,
    rank_biased_overlap,
    top_overlap,
)


def test_top_overlap_compares_the_heads_only():
    assert top_overlap([0, 1, 2, 7, 8], [2, 1, 0, 9, 3], n=3) == 1.0
    assert top_overlap([0, 1, 2, 7, 8], [2, 1, 0, 9, 3], n=5) == pytest.approx(3 / 5)
    # a short programme against a long one cannot agree fully
    assert top_overlap([0, 1, 2], list(range(10)), n=10) == pytest.approx(0.3)
    assert math.isnan(top_overlap([], [], n=10))
    with pytest.raises(ValueError, match="n must be"):
        top_overlap([0], [0], n=0)


def test_rank_biased_overlap_weights_the_top_more_than_the_tail():
    ranking = list(range(30))
    assert rank_biased_overlap(ranking, ranking) == pytest.approx(1.0)
    assert rank_biased_overlap(ranking, list(range(30, 60))) == 0.0
    swapped_top = [1, 0, *ranking[2:]]
    swapped_tail = [*ranking[:27], 28, 27, 29]
    assert rank_biased_overlap(ranking, swapped_tail) > rank_biased_overlap(ranking, swapped_top) > 0.85
    # symmetric, and in [0, 1] for random rankings
    rng = np.random.default_rng(0)
    for _ in range(20):
        a, b = rng.permutation(40)[:25].tolist(), rng.permutation(40)[:15].tolist()
        value = rank_biased_overlap(a, b)
        assert 0.0 <= value <= 1.0
        assert value == pytest.approx(rank_biased_overlap(b, a))
    with pytest.raises(ValueError, match="p must be"):
        rank_biased_overlap([0], [0], p=1.0)


def test_programme_agreement_separates_edges_from_cores_and_counts_the_unmatched():
    core_a, core_b = list(range(10)), list(range(20, 30))
    a = ProgrammeSet([np.array(core_a + list(range(40, 60))), np.array(core_b)])
    # same cores, different edges: the sets agree less than the cores do
    b = ProgrammeSet([np.array(core_b), np.array(core_a + list(range(60, 80)))])
    res = programme_agreement(a, b, n_genes=100)
    assert res["top_overlap"] == pytest.approx(1.0)
    assert res["rbo"] > 0.6
    assert res["jaccard"] == pytest.approx((1.0 + 10 / 50) / 2)
    assert res["jaccard"] == pytest.approx(matched_programme_agreement(a.programmes, b.programmes, 100))
    # a third programme in one fit only counts as 0 in every measure
    c = ProgrammeSet([*b.programmes, np.array([90, 91, 92])])
    res3 = programme_agreement(a, c, n_genes=100)
    assert res3["top_overlap"] == pytest.approx(2 / 3)
    assert res3["jaccard"] == pytest.approx(res["jaccard"] * 2 / 3)


def test_programme_agreement_on_loadings_matches_columns_up_to_sign_and_order():
    rng = np.random.default_rng(1)
    w = rng.normal(size=(200, 4))
    a = ProgrammeSet([np.array([0])], loadings=w)
    b = ProgrammeSet([np.array([0])], loadings=-w[:, ::-1] * 3.0)
    res = programme_agreement(a, b, n_genes=200)
    assert res["loadings_corr"] == pytest.approx(1.0)
    assert res["n_active_diff"] == 0.0
    fewer = ProgrammeSet([np.array([0])], loadings=w[:, :2])
    res2 = programme_agreement(a, fewer, n_genes=200)
    assert res2["loadings_corr"] == pytest.approx(2 / 4)
    assert res2["n_active_diff"] == 2.0
    assert math.isnan(programme_agreement(ProgrammeSet([np.array([0])]), a, n_genes=200)["loadings_corr"])


def test_pairwise_agreement_has_one_row_per_pair():
    fits = {
        0: ProgrammeSet([np.array([0, 1, 2])]),
        3: ProgrammeSet([np.array([0, 1, 2])]),
        7: ProgrammeSet([np.array([5, 6])]),
    }
    table = pairwise_agreement(fits, n_genes=8)
    assert table[["seed_a", "seed_b"]].to_numpy().tolist() == [[0, 3], [0, 7], [3, 7]]
    assert table["jaccard"].tolist() == pytest.approx([1.0, 0.0, 0.0])
    empty = programme_agreement(ProgrammeSet([]), ProgrammeSet([np.array([1])]), n_genes=3)
    assert empty["jaccard"] == 0.0 and empty["rbo"] == 0.0


def test_cores_are_paired_on_their_rankings_not_on_a_shared_tail():
    tail = list(range(20, 60))
    a = ProgrammeSet([np.array([0, 1, 2, 3, 4, *tail]), np.array([10, 11, 12, 13, 14])])
    b = ProgrammeSet([np.array([10, 11, 12, 13, 14, *tail]), np.array([0, 1, 2, 3, 4])])
    res = programme_agreement(a, b, n_genes=60)
    # the Jaccard pairing follows the 40 shared tail genes and pairs programmes with different cores
    assert res["jaccard"] == pytest.approx(0.8 / 2)
    # the ranking pairing keeps each core with its own: the five strongest genes agree in both pairs
    assert res["rbo"] == pytest.approx(1.0)
    # each pair shares its five core genes of ten (a 5-gene programme against the first ten of a 45-gene one)
    assert res["top_overlap"] == pytest.approx(0.5)


def test_blocks_are_matched_apart():
    """Two multi-study fits: a programme is paired only within its block (shared, or one study's)."""
    shared, specific = np.arange(0, 10), np.arange(10, 20)
    centred = np.random.default_rng(1).normal(size=(30, 2))
    loadings = np.linalg.qr(centred - centred.mean(0))[0]  # uncorrelated columns
    blocks = {"scopes": ["shared", "stim"], "factor_scopes": ["shared", "stim"]}
    a = ProgrammeSet([shared, specific], loadings, **blocks)
    same = ProgrammeSet([shared, specific], loadings, **blocks)
    # seed b finds the same two programmes but puts the stimulated one in the shared block and vice versa
    moved = ProgrammeSet([specific, shared], loadings[:, ::-1], **blocks)
    assert programme_agreement(a, same, 30)["jaccard"] == 1.0
    apart = programme_agreement(a, moved, 30)
    assert apart["jaccard"] == 0.0 and apart["rbo"] == 0.0 and apart["top_overlap"] == 0.0
    assert apart["loadings_corr"] == pytest.approx(0.0, abs=1e-12)
    # without blocks the same two fits agree fully
    unblocked = [ProgrammeSet(f.programmes, f.loadings) for f in (a, moved)]
    together = programme_agreement(*unblocked, 30)
    assert together["jaccard"] == 1.0 and together["loadings_corr"] == pytest.approx(1.0)
    # one block of two matches, the other does not: half
    half = ProgrammeSet([shared, specific], loadings, scopes=["shared", "ctrl"], factor_scopes=["shared", "ctrl"])
    assert programme_agreement(a, half, 30)["jaccard"] == 0.5


def test_blocks_must_be_given_to_both_fits_and_fit_their_programmes():
    a = ProgrammeSet([np.arange(3)], scopes=["shared"])
    with pytest.raises(ValueError, match="give both fits their blocks"):
        programme_agreement(a, ProgrammeSet([np.arange(3)]), 5)
    with pytest.raises(ValueError, match="one block per programme"):
        ProgrammeSet([np.arange(3), np.arange(2)], scopes=["shared"])
    with pytest.raises(ValueError, match="one block per column of loadings"):
        ProgrammeSet([np.arange(3)], np.ones((5, 2)), scopes=["shared"], factor_scopes=["shared"])
