"""Semi-synthetic text benchmark of Moran et al. (2022, Table 2): topics correlated differently in train and test.

Construction (the paper's App. C.1, followed step by step):

1. LDA with ``K = 20`` topics (scikit-learn, default settings) on the corpus gives document-topic
   proportions ``theta`` (``N x K``) and topics ``beta`` (``K x G``, each row a distribution over words).
2. Training factors: the last ``K / 2`` columns of ``theta`` are dropped and replaced by noisy copies of the first
   ``K / 2``: ``logit theta~_k = logit theta_k + N(0, sigma^2)``, ``k = 1..K/2``. Test factors are the original
   ``theta``. Each row of the training factors is renormalised to sum to one (the paper does not say; a
   multinomial needs it).
3. Documents: ``x_d ~ Mult(n_d, theta_d beta)`` with ``n_d`` the document's length in the real corpus (its
   number of vocabulary tokens) -- training documents from the training factors of the training documents,
   test documents from the original factors of the held-out documents.

The shift level is set by ``sigma``: a small ``sigma`` makes the training copies near-duplicates of the first
``K / 2`` topics (topic ``k + K/2`` always co-occurs with topic ``k`` in training but not in test: the largest
difference between training and test); a large ``sigma`` decorrelates them. The paper does not give its
``sigma`` values; ours are in :data:`SHIFT_LEVELS`, and the summary reports the resulting correlation between
paired columns in training and test factors, so the size of each shift is measured, not assumed.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from scsparse.generic.datasets import eval_subset, split_rows
from scsparse.utils import torch_threads

from .. import _report as report
from .._documents import METHOD_NAMES, load_corpus, resolve_run, resolve_settings, score_methods
from .._documents_summary import run_labels
from .._process import quiet_training_logs
from ._settings import PAPER_SEMISYNTHETIC_LAMBDA1, PAPER_SEMISYNTHETIC_NLL, SEMISYNTHETIC_SETTINGS
from ._summary import summary_lines

__all__ = [
    "PAPER_SEMISYNTHETIC_NLL",
    "RESULT_COLUMNS",
    "PAPER_SEMISYNTHETIC_LAMBDA1",
    "SEMISYNTHETIC_SETTINGS",
    "SHIFT_LEVELS",
    "fit_lda",
    "paired_correlation",
    "run_semisynthetic",
    "shifted_factors",
    "simulate_documents",
]


#: Seeds of a quick run at most (a smoke run needs no spread over seeds).
QUICK_MAX_SEEDS = 1


#: Shift level -> sd ``sigma`` of the logit noise of the training copies (smaller: larger train/test difference).
SHIFT_LEVELS: dict[str, float] = {"high": 0.1, "medium": 1.0, "low": 3.0}


#: Columns of ``results.csv``, in order.
RESULT_COLUMNS: tuple[str, ...] = (
    "method",
    "beta",
    "seed",
    "shift",
    "sigma",
    "heldout_nll",
    "nll_kind",
    "nll_plugin",
    "unigram_nll",
    "n_active",
    "train_pair_corr",
    "test_pair_corr",
    "n_train",
    "n_test",
    "fit_seconds",
    "eval_seconds",
)

#: Clip of the proportions before the logit.
_EPS = 1e-8


def fit_lda(counts: np.ndarray, n_topics: int = 20, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """LDA (scikit-learn's default settings) on a count matrix: document-topic proportions and topics.

    Returns
    -------
    theta : numpy.ndarray
        ``(n_docs, n_topics)``, rows sum to one (``LatentDirichletAllocation.transform``).
    beta : numpy.ndarray
        ``(n_topics, n_words)``, each row a distribution over words (normalised ``components_``).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).poisson(1.0, size=(40, 12))
    >>> theta, beta = fit_lda(X, n_topics=4)
    >>> theta.shape, beta.shape, bool(np.allclose(beta.sum(1), 1.0))
    ((40, 4), (4, 12), True)
    """
    from sklearn.decomposition import LatentDirichletAllocation

    if n_topics < 2 or n_topics % 2:
        raise ValueError(f"n_topics must be an even number >= 2 (half the topics are replaced), got {n_topics}.")
    lda = LatentDirichletAllocation(n_components=int(n_topics), random_state=int(seed))
    theta = lda.fit_transform(np.asarray(counts, dtype=np.float64))
    theta = theta / theta.sum(1, keepdims=True)
    beta = lda.components_ / lda.components_.sum(1, keepdims=True)
    return theta, beta


def shifted_factors(theta: np.ndarray, sigma: float, rng: np.random.Generator) -> np.ndarray:
    """Training factors: the last ``K/2`` columns replaced by logit-noised copies of the first ``K/2``.

    ``logit theta~_k = logit theta_k + N(0, sigma^2)`` for ``k < K/2``; rows renormalised to sum to one.

    Examples
    --------
    >>> import numpy as np
    >>> theta = np.full((3, 4), 0.25)
    >>> out = shifted_factors(theta, 0.0, np.random.default_rng(0))
    >>> bool(np.allclose(out, 0.25))
    True
    """
    from scipy.special import expit, logit

    if sigma < 0:
        raise ValueError(f"sigma must be non-negative, got {sigma}.")
    theta = np.asarray(theta, dtype=np.float64)
    k = theta.shape[1]
    if k % 2:
        raise ValueError(f"theta needs an even number of columns, got {k}.")
    first = theta[:, : k // 2]
    copies = expit(logit(np.clip(first, _EPS, 1.0 - _EPS)) + sigma * rng.standard_normal(first.shape))
    out = np.hstack([first, copies])
    return out / out.sum(1, keepdims=True)


def simulate_documents(
    theta: np.ndarray, beta: np.ndarray, lengths: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Word counts ``x_d ~ Mult(n_d, theta_d beta)``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> simulate_documents(np.eye(2), np.eye(2), np.array([3, 5]), rng).tolist()
    [[3, 0], [0, 5]]
    """
    p = np.asarray(theta, dtype=np.float64) @ np.asarray(beta, dtype=np.float64)
    p = np.maximum(p, 0.0)
    p /= p.sum(1, keepdims=True)
    return rng.multinomial(np.asarray(lengths, dtype=np.int64), p).astype(np.int64)


def paired_correlation(theta: np.ndarray) -> float:
    """Mean correlation of column ``k`` with column ``k + K/2`` (``k < K/2``): how tied the paired topics are.

    Examples
    --------
    >>> import numpy as np
    >>> t = np.random.default_rng(0).random((100, 2))
    >>> paired_correlation(np.hstack([t, t]))
    1.0
    """
    theta = np.asarray(theta, dtype=np.float64)
    half = theta.shape[1] // 2
    corr = [np.corrcoef(theta[:, k], theta[:, k + half])[0, 1] for k in range(half)]
    return float(np.round(np.nanmean(corr), 12))


def _seed_rng(seed: int, *stream: int) -> np.random.Generator:
    return np.random.default_rng([int(seed), *stream])


# ---------------------------------------------------------------------------------------------- outputs
def _write_figure(out_dir: Path, df: pd.DataFrame, levels: Sequence[str]) -> Path:
    """Held-out NLL against the shift level, one line per method (every beta)."""
    fig = report.new_figure((9, 5.5))
    ax = fig.add_subplot(1, 1, 1)
    labelled = df.assign(label=run_labels(df))
    for label, sub in labelled.groupby("label", sort=False):
        means = [sub.loc[sub["shift"] == lv, "heldout_nll"].mean() for lv in levels]
        ax.plot(range(len(levels)), means, marker="o", lw=2 if label == "SparseVAE" else 1.2, label=label)
        for i, lv in enumerate(levels):
            vals = sub.loc[sub["shift"] == lv, "heldout_nll"]
            ax.scatter(np.full(len(vals), i), vals, s=10, alpha=0.4, color=ax.lines[-1].get_color())
    ax.set_xticks(range(len(levels)), [f"{lv}\n(sigma = {SHIFT_LEVELS.get(lv, math.nan):g})" for lv in levels])
    ax.set_xlabel("difference between training and test factor distributions")
    ax.set_ylabel("held-out NLL per document (lower is better)")
    ax.set_title("Semi-synthetic text: held-out NLL under a shift of topic correlations (Table 2)")
    ax.legend(fontsize=8, ncols=2)
    return report.save_figure(fig, out_dir / "semisynthetic.png")


# ---------------------------------------------------------------------------------------------- runner
def run_semisynthetic(
    out: str | os.PathLike[str],
    *,
    seeds: int = 5,
    quick: bool = False,
    max_epochs: int | None = None,
    n_threads: int | None = 1,
    verbose: bool = True,
    methods: Sequence[str] = METHOD_NAMES,
    shift_levels: Mapping[str, float] | None = None,
    n_docs: int | None = None,
    vocab_size: int | None = None,
    n_is_samples: int | None = None,
    n_eval_docs: int | None = None,
    betas: Sequence[float] | None = None,
    lambda1: float | None = None,
    source: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
) -> pd.DataFrame:
    """Held-out NLL on semi-synthetic text whose topic correlations differ between training and test (Table 2).

    LDA (K = 20) is fitted once on the corpus; for each seed and shift level, training documents are drawn from
    training factors with noisy copies of half the topics and test documents from the original factors (see
    the module docstring). Every method is fitted on the same training documents and scored on the same
    held-out documents.

    Parameters
    ----------
    out
        Output folder: ``results.csv``, ``summary.md``, ``semisynthetic.png``.
    seeds
        Number of semi-simulated data sets per level (the paper: 5).
    quick
        Smoke run: 200 documents, 60 words, width 8, 2 epochs, one seed.
    max_epochs
        Epochs (the paper: 50), overriding ``quick``.
    n_threads
        Torch intra-op threads (restored afterwards); ``None`` leaves the setting alone.
    verbose
        Print progress.
    methods
        Subset of :data:`~scsparse.generic.benchmarks._documents.METHOD_NAMES` (default: all six).
    shift_levels
        Level name -> ``sigma`` (default :data:`SHIFT_LEVELS`).
    lambda1
        Slab rate of the SparseVAE (default 1; the paper's 0.01, :data:`PAPER_SEMISYNTHETIC_LAMBDA1`, leaves no
        factor active with scsparse's exact E-step: :func:`~scsparse.generic.benchmarks._paper.slab_threshold_note`).
    n_docs, vocab_size, n_is_samples, n_eval_docs, betas, source
        As in :func:`~scsparse.generic.benchmarks._text._run.run_text`.

    Returns
    -------
    pandas.DataFrame
        One row per method, beta, shift level and seed with the columns of :data:`RESULT_COLUMNS`.

    Examples
    --------
    >>> from scsparse.generic.benchmarks import run
    >>> df = run("semisynthetic", out="bench_semi", quick=True)  # doctest: +SKIP
    """
    seeds, methods = resolve_run(seeds, quick, QUICK_MAX_SEEDS, methods)
    levels = dict(SHIFT_LEVELS if shift_levels is None else shift_levels)
    if not levels or any(not np.isfinite(v) or v < 0 for v in levels.values()):
        raise ValueError(f"shift_levels must map level names to non-negative sigmas, got {levels}")
    cfg = resolve_settings(
        SEMISYNTHETIC_SETTINGS,
        quick,
        max_epochs,
        n_docs=n_docs,
        vocab_size=vocab_size,
        n_is_samples=n_is_samples,
        n_eval_docs=n_eval_docs,
        betas=betas,
        lambda1=lambda1,
    )
    out_dir = report.make_output_dir(out)
    options = report.run_options(out_dir, seeds, quick, max_epochs, methods=methods, shift_levels=levels,
                                 n_threads=n_threads, config=cfg)  # fmt: skip
    start = time.perf_counter()
    rows: list[dict[str, Any]] = []
    with torch_threads(n_threads), quiet_training_logs():
        prov = report.provenance("semisynthetic", options)
        corpus = load_corpus(cfg, source, max(cfg["n_latent"], cfg["n_topics"]))
        t0 = time.perf_counter()
        theta, beta = fit_lda(corpus.counts, cfg["n_topics"], seed=0)
        if verbose:
            print(
                f"[semisynthetic] corpus {corpus.n_docs} x {corpus.n_words}; LDA K={cfg['n_topics']} in "
                f"{time.perf_counter() - t0:.1f} s",
                flush=True,
            )
        lengths = corpus.counts.sum(1)
        for seed in range(seeds):
            train_idx, test_idx = split_rows(corpus.n_docs, seed, unit="documents")
            eval_idx = eval_subset(test_idx, cfg["n_eval_docs"], seed)
            x_eval = simulate_documents(theta[eval_idx], beta, lengths[eval_idx], _seed_rng(seed, 0)).astype(np.float32)
            test_corr = paired_correlation(theta[test_idx])
            for li, (level, sigma) in enumerate(levels.items()):
                rng = _seed_rng(seed, 1, li)
                theta_tr = shifted_factors(theta[train_idx], sigma, rng)
                x_train = simulate_documents(theta_tr, beta, lengths[train_idx], rng).astype(np.float32)
                train_corr = paired_correlation(theta_tr)
                for entry, row in score_methods(cfg, seed, methods, x_train, x_eval):
                    rows.append(
                        {
                            **row,
                            "shift": level,
                            "sigma": sigma,
                            "train_pair_corr": train_corr,
                            "test_pair_corr": test_corr,
                        }
                    )
                    if verbose:
                        print(
                            f"[semisynthetic] seed {seed} {level} (sigma={sigma:g}) {entry.method}{entry.beta_note}: "
                            f"NLL {entry.heldout_nll:.2f}, fit {entry.fit_seconds:.1f} s",
                            flush=True,
                        )
    total = time.perf_counter() - start
    df = pd.DataFrame(rows, columns=list(RESULT_COLUMNS))
    report.write_results(df, out_dir, RESULT_COLUMNS)
    report.write_summary(
        out_dir, summary_lines(df, prov, cfg, corpus, levels, quick=quick, seeds=seeds, total_seconds=total)
    )
    _write_figure(out_dir, df, list(levels))
    done = report.wrote_line("semisynthetic", [out_dir / "results.csv", out_dir / "summary.md"])
    return report.finish_run(df, out_dir, done, verbose=verbose)
