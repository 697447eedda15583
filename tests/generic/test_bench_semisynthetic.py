"""Tests for the semi-synthetic text benchmark: LDA, shifted training factors, simulated documents, a quick run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from scsparse.generic.benchmarks import BENCHMARKS
from scsparse.generic.benchmarks._semisynthetic._run import (
    RESULT_COLUMNS,
    SHIFT_LEVELS,
    fit_lda,
    paired_correlation,
    run_semisynthetic,
    shifted_factors,
    simulate_documents,
)


def _dirichlet_theta(n: int = 3000, k: int = 20, seed: int = 0, alpha: float = 0.3) -> np.ndarray:
    return np.random.default_rng(seed).dirichlet(np.full(k, alpha), size=n)


def test_shifted_factors_copy_the_first_half_through_logit_noise() -> None:
    theta = _dirichlet_theta(alpha=2.0)  # no proportion near the 1e-8 clip before the logit
    exact = shifted_factors(theta, 0.0, np.random.default_rng(0))
    np.testing.assert_allclose(exact.sum(1), 1.0)
    np.testing.assert_allclose(exact[:, :10], exact[:, 10:])  # sigma = 0: exact copies after renormalising
    first = theta[:, :10] / theta[:, :10].sum(1, keepdims=True)
    np.testing.assert_allclose(2 * exact[:, :10], first)
    theta = _dirichlet_theta()
    corrs = [paired_correlation(shifted_factors(theta, s, np.random.default_rng(1))) for s in (0.1, 1.0, 3.0)]
    assert corrs[0] > 0.99 and corrs[0] > corrs[1] > corrs[2]
    assert abs(paired_correlation(theta)) < 0.1  # the original topics are not paired
    with pytest.raises(ValueError, match="non-negative"):
        shifted_factors(theta, -1.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="even number"):
        shifted_factors(theta[:, :3], 1.0, np.random.default_rng(0))


def test_simulate_documents_keeps_lengths_and_proportions() -> None:
    rng = np.random.default_rng(0)
    theta = _dirichlet_theta(n=200, k=4)
    beta = rng.dirichlet(np.ones(30), size=4)
    lengths = rng.integers(1, 50, size=200)
    x = simulate_documents(theta, beta, lengths, rng)
    assert x.shape == (200, 30) and x.dtype == np.int64
    np.testing.assert_array_equal(x.sum(1), lengths)
    big = simulate_documents(theta[:1], beta, np.array([200_000]), rng)[0] / 200_000
    np.testing.assert_allclose(big, theta[0] @ beta, atol=3e-3)


def test_fit_lda_recovers_planted_topics() -> None:
    rng = np.random.default_rng(0)
    topics = np.zeros((2, 12))
    topics[0, :6] = topics[1, 6:] = 1 / 6
    labels = np.arange(120) % 2
    X = np.stack([rng.multinomial(40, topics[c]) for c in labels])
    theta, beta = fit_lda(X, n_topics=2, seed=0)
    assert theta.shape == (120, 2) and beta.shape == (2, 12)
    np.testing.assert_allclose(theta.sum(1), 1.0)
    agree = np.mean(theta.argmax(1) == labels)
    assert max(agree, 1 - agree) > 0.95
    assert beta[:, :6].sum(1).max() > 0.9 and beta[:, :6].sum(1).min() < 0.1
    with pytest.raises(ValueError, match="even number"):
        fit_lda(X, n_topics=3)


def _write_corpus(root: Path, n_docs: int = 160) -> Path:
    rng = np.random.default_rng(0)
    letters = list("bcdfghklmnprstvz")
    vocab = sorted({"".join(rng.choice(letters, size=5)) for _ in range(120)})
    root.mkdir(parents=True)
    for i in range(n_docs):
        part = vocab[: len(vocab) // 2] if i % 2 else vocab[len(vocab) // 2 :]
        text = " ".join(rng.choice(part, size=int(rng.integers(15, 30))))
        (root / f"{i}.json").write_text(json.dumps({"id": str(i), "abstract": text}))
    return root


def test_run_semisynthetic_quick(tmp_path: Path) -> None:
    source = _write_corpus(tmp_path / "peerread")
    df = run_semisynthetic(
        tmp_path / "out", quick=True, seeds=1, source=source, verbose=False, methods=["SparseVAE", "VAE", "NMF"]
    )
    assert list(df.columns) == list(RESULT_COLUMNS)
    assert len(df) == 3 * len(SHIFT_LEVELS)
    assert list(dict.fromkeys(df["shift"])) == ["high", "medium", "low"]
    corr = df.groupby("shift", sort=False)["train_pair_corr"].first()
    assert corr["high"] > corr["medium"] > corr["low"]
    assert df["test_pair_corr"].nunique() == 1  # one test set per seed, shared by every level
    assert df["heldout_nll"].notna().all()
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "Table 2" in summary and "52.4" in summary and "SparseVAE best at all three shift levels" in summary
    assert "lambda1 = 1 instead of the paper's 0.01" in summary
    assert (tmp_path / "out" / "semisynthetic.png").stat().st_size > 0


def test_run_semisynthetic_rejects_bad_options(tmp_path: Path) -> None:
    assert "semisynthetic" in BENCHMARKS
    with pytest.raises(ValueError, match="shift_levels"):
        run_semisynthetic(tmp_path, quick=True, shift_levels={"high": -1.0})
    with pytest.raises(ValueError, match="seeds"):
        run_semisynthetic(tmp_path, seeds=0)
    with pytest.raises(ValueError, match="lambda1 must lie in"):
        run_semisynthetic(tmp_path, quick=True, lambda1=-1.0)
