"""Text benchmark of Moran et al. (2022): held-out likelihood of abstracts (Table 1b) and topics (Table 3b).

Every method is fitted to the same training documents of a seeded 80/20 split of the corpus (word counts,
multinomial likelihood) and scored on the same held-out documents. The methods, their fitting and
scoring are those of :mod:`._documents`, shared with the semi-synthetic benchmark; the top words live here.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from scsparse.generic.datasets import eval_subset, split_rows
from scsparse.generic.models import ArrayModel, ArraySparseVAE
from scsparse.utils import torch_threads, write_csv

from .. import _report as report
from .._documents import METHOD_NAMES, load_corpus, resolve_run, resolve_settings, score_methods
from .._documents_summary import run_labels
from .._process import quiet_training_logs
from ._settings import N_TOP_WORDS, PAPER_TEXT_LAMBDA1, PAPER_TEXT_NLL, TEXT_SETTINGS
from ._summary import summary_lines

__all__ = [
    "PAPER_TEXT_LAMBDA1",
    "PAPER_TEXT_NLL",
    "RESULT_COLUMNS",
    "TEXT_SETTINGS",
    "run_text",
    "top_words",
]


#: Seeds of a quick run at most (a smoke run needs no spread over seeds).
QUICK_MAX_SEEDS = 2


#: Columns of ``results.csv``, in order.
RESULT_COLUMNS: tuple[str, ...] = (
    "method",
    "beta",
    "seed",
    "heldout_nll",
    "nll_kind",
    "nll_plugin",
    "unigram_nll",
    "n_active",
    "n_train",
    "n_test",
    "fit_seconds",
    "eval_seconds",
)


def top_words(
    model: ArrayModel,
    vocabulary: np.ndarray,
    n_words: int = N_TOP_WORDS,
    factors: Sequence[int] | None = None,
    n_fallback: int = 6,
) -> pd.DataFrame:
    """The words with the largest loadings of each factor (the paper's Table 3b: largest ``w_jk``).

    SparseVAE: largest ``|w_jk|`` (the mask's sign is not the direction of a word's response, the decoder being
    nonlinear); by default its active factors (a word with ``p* > 0.5``), each with only its selected words
    (``p*`` rises with ``|w_jk|`` within a column, so these are its largest), or, when none is active, the
    ``n_fallback`` factors with the largest column norm of ``W`` and their largest ``|w_jk|`` whatever ``p*``
    (``active`` is then ``False``). NMF: largest entries of ``components_``, every component.

    Returns
    -------
    pandas.DataFrame
        One row per factor: ``factor``, ``active``, ``n_selected`` (words with ``p* > 0.5``; NMF: ``nan``) and
        ``words`` (``"; "``-joined, most loaded first).

    Examples
    --------
    >>> import numpy as np
    >>> from scsparse.generic.models import NMF
    >>> X = np.repeat([[4.0, 1.0, 0.0], [0.0, 1.0, 5.0]], 10, axis=0)
    >>> model = NMF(n_components=2, likelihood="multinomial").fit(X)
    >>> sorted(top_words(model, np.array(["a", "b", "c"]), n_words=1)["words"])
    ['a', 'c']
    """
    W = model.loadings()
    if W is None:
        raise ValueError(f"{type(model).__name__} has no loadings to rank words by.")
    W = np.abs(np.asarray(W, dtype=np.float64))
    pip = model.inclusion_probabilities() if isinstance(model, ArraySparseVAE) else None
    active = set(model.active_factors().tolist()) if isinstance(model, ArraySparseVAE) else set(range(W.shape[1]))
    if factors is None:
        factors = sorted(active)
        if not factors:
            factors = np.argsort(-np.linalg.norm(W, axis=0), kind="stable")[:n_fallback].tolist()
    rows = []
    for k in factors:
        n_selected = int((pip[:, k] > 0.5).sum()) if pip is not None else None
        shown = n_words if n_selected is None or int(k) not in active else min(n_words, n_selected)
        order = np.argsort(-W[:, k], kind="stable")[:shown]
        rows.append(
            {
                "factor": int(k),
                "active": int(k) in active,
                "n_selected": math.nan if n_selected is None else n_selected,
                "words": "; ".join(str(vocabulary[j]) for j in order),
            }
        )
    return pd.DataFrame(rows, columns=["factor", "active", "n_selected", "words"])


# ---------------------------------------------------------------------------------------------- outputs
def _write_figure(
    out_dir: Path, df: pd.DataFrame, W: np.ndarray | None, vocab: np.ndarray, words: pd.DataFrame
) -> Path:
    """Held-out NLL per method and seed, and the SparseVAE mask W on the top words of its active factors."""
    fig = report.new_figure((14, 6))
    ax = fig.add_subplot(1, 2, 1)
    labels = [lab.replace(" (", "\n(") for lab in run_labels(df)]
    order = list(dict.fromkeys(labels))
    xs = np.array([order.index(lab) for lab in labels], dtype=float)
    ax.scatter(xs + np.random.default_rng(0).uniform(-0.12, 0.12, len(xs)), df["heldout_nll"], s=30, zorder=3)
    means = pd.Series(df["heldout_nll"].to_numpy(), index=labels).groupby(level=0, sort=False).mean()
    ax.scatter([order.index(k) for k in means.index], means.to_numpy(), marker="_", s=600, color="k", label="mean")
    ax.set_xticks(range(len(order)), order, rotation=30, ha="right", fontsize=9)
    ax.set_ylabel("held-out NLL per document (lower is better)")
    ax.set_title("Held-out negative log-likelihood (Table 1b)")
    ax.legend(fontsize=9)
    ax2 = fig.add_subplot(1, 2, 2)
    if W is not None and len(words):
        factors = words["factor"].tolist()[:10]
        rows: list[int] = []
        for k in factors:
            for j in np.argsort(-np.abs(W[:, k]), kind="stable")[:4]:
                if int(j) not in rows:
                    rows.append(int(j))
        sub = W[np.ix_(rows, factors)]
        vmax = float(np.abs(sub).max()) or 1.0
        im = ax2.imshow(sub, cmap="RdBu_r", vmin=-vmax, vmax=vmax, aspect="auto")
        ax2.set_yticks(range(len(rows)), [str(vocab[j]) for j in rows], fontsize=8)
        ax2.set_xticks(range(len(factors)), [f"f{k}" for k in factors], fontsize=9)
        ax2.set_xlabel("factor (those of Table 3b)")
        ax2.set_title("SparseVAE mask W (seed 0): top words of the factors of Table 3b")
        fig.colorbar(im, ax=ax2, shrink=0.8, label="w_jk")
    else:
        ax2.text(0.5, 0.5, "no active SparseVAE factor", ha="center", va="center")
        ax2.set_axis_off()
    return report.save_figure(fig, out_dir / "text.png")


# ---------------------------------------------------------------------------------------------- runner
def run_text(
    out: str | os.PathLike[str],
    *,
    seeds: int = 5,
    quick: bool = False,
    max_epochs: int | None = None,
    n_threads: int | None = 1,
    verbose: bool = True,
    methods: Sequence[str] = METHOD_NAMES,
    n_docs: int | None = None,
    vocab_size: int | None = None,
    n_is_samples: int | None = None,
    n_eval_docs: int | None = None,
    betas: Sequence[float] | None = None,
    lambda1: float | None = None,
    source: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
) -> pd.DataFrame:
    """Held-out NLL of abstracts for every method (Table 1b) and the SparseVAE's topics (Table 3b).

    For each seed: a seeded 80/20 split of the documents; SparseVAE, VAE, beta-VAE (every ``beta``), OI-VAE,
    VSC and NMF are fitted on the same training documents (multinomial likelihood, the paper's PeerRead
    settings, :data:`TEXT_SETTINGS`) and scored on the same held-out documents (:data:`NLL_DEFINITION`).

    Parameters
    ----------
    out
        Output folder: ``results.csv``, ``summary.md``, ``text.png``, ``top_words.csv``.
    seeds
        Number of splits (seeds ``0 .. seeds - 1``; the paper: 5).
    quick
        Smoke run: 200 documents, 60 words, width 8, 2 epochs, 4 importance samples, at most 2 seeds.
    max_epochs
        Epochs (the paper: 40), overriding ``quick``.
    n_threads
        Torch intra-op threads (restored afterwards); ``None`` leaves the setting alone.
    verbose
        Print progress.
    methods
        Subset of :data:`METHOD_NAMES`.
    n_docs
        Random subset of the corpus (before the vocabulary is built); ``None``: all documents.
    vocab_size
        Vocabulary size (the paper: 500).
    n_is_samples
        Importance samples per held-out document (default 50).
    n_eval_docs
        Score a seeded subset of this many held-out documents (``None``: all; the same subset for every method).
    betas
        KL weights of the beta-VAE (the paper's sweep: 2, 4, 6, 8, 16).
    lambda1
        Slab rate of the SparseVAE (default 1; the paper's 0.001, :data:`PAPER_TEXT_LAMBDA1`, leaves no factor
        active with scsparse's exact E-step: :func:`~scsparse.generic.benchmarks._paper.slab_threshold_note`).
    source
        Corpus: ``None`` for the registry's NeurIPS abstracts, a PeerRead directory, or JSONL file(s).

    Returns
    -------
    pandas.DataFrame
        One row per method, beta and seed with the columns of :data:`RESULT_COLUMNS`.

    Examples
    --------
    >>> from scsparse.generic.benchmarks import run
    >>> df = run("text", out="bench_text", quick=True)  # doctest: +SKIP
    """
    seeds, methods = resolve_run(seeds, quick, QUICK_MAX_SEEDS, methods)
    cfg = resolve_settings(
        TEXT_SETTINGS,
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
    options = report.run_options(out_dir, seeds, quick, max_epochs, methods=methods, n_threads=n_threads, config=cfg)
    start = time.perf_counter()
    rows: list[dict[str, Any]] = []
    words_sv = pd.DataFrame(columns=["factor", "active", "n_selected", "words"])
    words_nmf = pd.DataFrame(columns=["factor", "active", "n_selected", "words"])
    W0: np.ndarray | None = None
    with torch_threads(n_threads), quiet_training_logs():
        prov = report.provenance("text", options)
        corpus = load_corpus(cfg, source, cfg["n_latent"])
        X = corpus.counts.astype(np.float32)
        if verbose:
            print(f"[text] corpus: {corpus.n_docs} documents x {corpus.n_words} words", flush=True)
        for seed in range(seeds):
            train_idx, test_idx = split_rows(corpus.n_docs, seed, unit="documents")
            eval_idx = eval_subset(test_idx, cfg["n_eval_docs"], seed)
            for entry, row in score_methods(cfg, seed, methods, X[train_idx], X[eval_idx]):
                rows.append(row)
                if verbose:
                    print(
                        f"[text] seed {seed} {entry.method}{entry.beta_note}: NLL {entry.heldout_nll:.2f} "
                        f"({entry.nll_kind}), fit {entry.fit_seconds:.1f} s, eval {entry.eval_seconds:.1f} s",
                        flush=True,
                    )
                if seed == 0 and entry.method == "SparseVAE":
                    words_sv = top_words(entry.model, corpus.vocabulary)
                    W0 = entry.model.loadings()
                if seed == 0 and entry.method == "NMF":
                    words_nmf = top_words(entry.model, corpus.vocabulary)
    total = time.perf_counter() - start
    df = pd.DataFrame(rows, columns=list(RESULT_COLUMNS))
    report.write_results(df, out_dir, RESULT_COLUMNS)
    write_csv(
        pd.concat([words_sv.assign(method="SparseVAE"), words_nmf.assign(method="NMF")]),
        out_dir / "top_words.csv",
        index=False,
    )
    n_train = int(df["n_train"].iloc[0]) if len(df) else 0
    n_eval = int(df["n_test"].iloc[0]) if len(df) else 0
    n_test = len(split_rows(corpus.n_docs, 0, unit="documents")[1])
    report.write_summary(
        out_dir,
        summary_lines(
            df,
            prov,
            cfg,
            corpus,
            words_sv,
            words_nmf,
            quick=quick,
            seeds=seeds,
            n_train=n_train,
            n_eval=n_eval,
            n_test=n_test,
            total_seconds=total,
        ),
    )
    _write_figure(out_dir, df, W0, corpus.vocabulary, words_sv)
    done = report.wrote_line("text", [out_dir / "results.csv", out_dir / "summary.md", out_dir / "text.png"])
    return report.finish_run(df, out_dir, done, verbose=verbose)
