"""Tests for the text benchmark: split, NMF marginal likelihood, verdicts, top words and a quick run."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from scipy.special import gammaln

from scsparse.generic.benchmarks import BENCHMARKS, run
from scsparse.generic.benchmarks._documents import METHOD_NAMES, build_models, nmf_marginal_nll
from scsparse.generic.benchmarks._documents_summary import beaten_by, verdict_best
from scsparse.generic.benchmarks._text._run import RESULT_COLUMNS, run_text, top_words
from scsparse.generic.datasets import split_rows
from scsparse.generic.models import NMF, ArraySparseVAE

SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"


def _theme_words(seed: int, n: int = 40) -> list[str]:
    """``n`` distinct pseudo-words of five letters (letters only, so the tokeniser keeps them)."""
    rng = np.random.default_rng(seed)
    words: set[str] = set()
    while len(words) < n:
        words.add("".join(rng.choice(list("bcdfghklmnprstvz"), size=5)))
    return sorted(words)


def write_corpus(root: Path, n_docs: int = 160, seed: int = 0) -> Path:
    """PeerRead-style per-paper JSON files with abstracts drawn from two themes of 40 words each."""
    rng = np.random.default_rng(seed)
    themes = (_theme_words(1), _theme_words(2))
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n_docs):
        text = " ".join(rng.choice(themes[i % 2], size=int(rng.integers(15, 30)))) + " the model of data"
        (root / f"{i}.json").write_text(json.dumps({"id": str(i), "title": f"paper {i}", "abstract": text}))
    return root


def test_document_split_is_a_seeded_partition() -> None:
    train, test = split_rows(100, seed=3, unit="documents")
    assert len(test) == 20 and len(train) == 80
    assert np.array_equal(np.sort(np.concatenate([train, test])), np.arange(100))
    again = split_rows(100, seed=3, unit="documents")
    assert np.array_equal(train, again[0]) and not np.array_equal(test, split_rows(100, seed=4)[1])
    with pytest.raises(ValueError, match="at least 2 documents"):
        split_rows(1, seed=0, unit="documents")


def test_nmf_marginal_nll_is_the_exact_mixture_likelihood() -> None:
    rng = np.random.default_rng(0)
    X = rng.poisson(2.0, size=(30, 5)).astype(float)
    model = NMF(n_components=2, likelihood="multinomial").fit(X)
    x = X[:4]
    # by hand: p(x) = mean over training codes of Mult(x; n, h H / sum(h H))
    rec = model.transform(X) @ model.loadings().T
    p = rec / rec.sum(1, keepdims=True)
    coef = gammaln(x.sum(1) + 1) - gammaln(x + 1).sum(1)
    ll = np.log(np.mean(np.exp(coef[:, None] + x @ np.log(p).T), axis=1))
    assert nmf_marginal_nll(model, X, x, chunk=3) == pytest.approx(-ll.mean(), rel=1e-9)
    assert nmf_marginal_nll(model, X, x) >= model.heldout_nll(x)  # the plug-in is optimistic


def test_verdict_best_compares_every_beta() -> None:
    df = pd.DataFrame(
        {
            "method": ["SparseVAE", "VAE", "beta-VAE", "beta-VAE"] * 2,
            "beta": [math.nan, math.nan, 2.0, 4.0] * 2,
            "seed": [0] * 4 + [1] * 4,
            "heldout_nll": [10.0, 11.0, 12.0, 9.0, 10.0, 11.0, 12.0, 12.0],
        }
    )
    met, detail = verdict_best(df)
    assert met and "best other beta-VAE (beta=4) 10.50" in detail  # beta=4 averages 10.5 > 10
    df.loc[7, "heldout_nll"] = 9.0
    met, detail = verdict_best(df)
    assert not met and "beta-VAE (beta=4) 9.00" in detail


def test_build_models_one_entry_per_beta_and_rejects_unknown() -> None:
    cfg = {
        "n_latent": 3,
        "n_hidden": 4,
        "n_layers": 1,
        "lr": 0.01,
        "max_epochs": 1,
        "batch_size": 16,
        "lambda0": 5.0,
        "lambda1": 0.01,
        "betas": (2.0, 4.0),
        "vsc_alpha": 0.1,
        "oivae_lambda": 1.0,
        "oivae_p": 2,
        "oivae_layers": 1,
        "nmf_alpha": 0.0,
        "n_features": 6,
    }
    entries = build_models(cfg, seed=0)
    assert [e.method for e in entries] == ["SparseVAE", "VAE", "beta-VAE", "beta-VAE", "OI-VAE", "VSC", "NMF"]
    assert [e.beta for e in entries if e.method == "beta-VAE"] == [2.0, 4.0]
    assert all(e.model.likelihood == "multinomial" for e in entries)
    with pytest.raises(ValueError, match="Unknown method"):
        build_models(cfg, 0, ["LDA"])


def test_top_words_ranks_by_loading() -> None:
    X = np.zeros((40, 4))
    X[:20, :2] = [5, 1]
    X[20:, 2:] = [1, 6]
    model = NMF(n_components=2, likelihood="multinomial").fit(X)
    words = top_words(model, np.array(["a", "b", "c", "d"]), n_words=2)
    assert sorted(words["words"]) == ["a; b", "d; c"]


def test_top_words_of_sparsevae_falls_back_to_largest_columns() -> None:
    X = np.random.default_rng(0).poisson(1.0, size=(60, 8)).astype(np.float32)
    model = ArraySparseVAE(n_latent=4, n_hidden=4, n_layers=1, likelihood="multinomial", max_epochs=1).fit(X)
    words = top_words(model, np.array(list("abcdefgh")), n_words=3, n_fallback=3)
    active = model.active_factors()
    assert len(words) == (len(active) if len(active) else 3)
    assert words["active"].tolist() == [len(active) > 0] * len(words)
    k = int(words["factor"].iloc[0])
    assert words["words"].iloc[0].split("; ")[0] == "abcdefgh"[int(np.argmax(np.abs(model.loadings()[:, k])))]


def test_top_words_of_an_active_sparsevae_factor_are_its_selected_words() -> None:
    X = np.random.default_rng(0).poisson(1.0, size=(60, 8)).astype(np.float32)
    model = ArraySparseVAE(n_latent=2, n_hidden=4, n_layers=1, likelihood="multinomial", max_epochs=1).fit(X)
    W = np.zeros((8, 2), dtype=np.float32)
    W[[5, 1, 6], 0] = [3.0, 2.5, 2.0]  # three words deep in the slab of factor 0; factor 1 all spike
    with torch.no_grad():
        model.module.decoder.W.copy_(torch.from_numpy(W))
        model.module.em_update()
    words = top_words(model, np.array(list("abcdefgh")), n_words=5)
    assert words["factor"].tolist() == [0] and words["n_selected"].tolist() == [3]
    assert words["words"].iloc[0] == "f; b; g"  # not padded with unselected words up to n_words
    assert top_words(model, np.array(list("abcdefgh")), n_words=2)["words"].iloc[0] == "f; b"


def test_beaten_by_lists_better_runs() -> None:
    df = pd.DataFrame({"method": ["SparseVAE", "VAE", "NMF"], "beta": [math.nan] * 3, "heldout_nll": [10.0, 9.0, 12.0]})
    assert beaten_by(df) == "lower mean NLL than SparseVAE: VAE by 1.00 nats"
    assert beaten_by(df.iloc[[0, 2]]) == "no method has a lower mean NLL"


def test_run_text_quick_on_peerread_layout(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "peerread")
    df = run_text(tmp_path / "out", quick=True, seeds=1, source=corpus, verbose=False)
    assert list(df.columns) == list(RESULT_COLUMNS)
    assert set(df["method"]) == set(METHOD_NAMES)
    assert df["heldout_nll"].notna().all() and (df["heldout_nll"] > 0).all()
    assert set(df.loc[df["method"] == "NMF", "nll_kind"]) == {"empirical-prior"}
    assert df.loc[df["method"] == "NMF", "nll_plugin"].notna().all()
    assert df["unigram_nll"].nunique() == 1 and df["unigram_nll"].iloc[0] > 0  # one reference per split
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "Table 1b" in summary and "245.0" in summary and "not assessed (quick smoke run)" in summary
    assert "NeurIPS" in summary and "Table 3b" in summary
    assert "lambda1 = 1 instead of the paper's 0.001" in summary and "|w| = 1.70" in summary
    for name in ("results.csv", "text.png", "top_words.csv"):
        assert (tmp_path / "out" / name).stat().st_size > 0


def test_run_text_rejects_bad_options(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="seeds"):
        run_text(tmp_path, seeds=0)
    with pytest.raises(ValueError, match="n_is_samples"):
        run_text(tmp_path, quick=True, n_is_samples=0)
    with pytest.raises(ValueError, match="methods"):
        run_text(tmp_path, quick=True, methods=[])
    for bad in (0.0, 5.0, 6.0):
        with pytest.raises(ValueError, match="lambda1 must lie in"):
            run_text(tmp_path, quick=True, lambda1=bad)
    tiny = tmp_path / "tiny"
    tiny.mkdir()
    words = ["sparse", "graph", "model", "topic", "prior"]
    for i in range(30):
        text = f"{words[i % 5]} {words[(i + 1) % 5]}"  # 5 words, each in 40% of the documents
        (tiny / f"{i}.json").write_text(json.dumps({"id": str(i), "abstract": text}))
    with pytest.raises(ValueError, match="fewer words than the 20 factors"):
        run_text(tmp_path / "out", quick=True, source=tiny, verbose=False)


def test_registered_and_runs_on_registry_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert "text" in BENCHMARKS
    if not (SHARED_DATA / "text_neurips_abstracts").is_dir():
        pytest.skip(f"offline data copy not found at {SHARED_DATA}")
    monkeypatch.setenv("SCSPARSE_DATA_DIR", str(SHARED_DATA))
    monkeypatch.setenv("SCSPARSE_OFFLINE", "1")
    df = run("text", out=tmp_path, quick=True, seeds=1, verbose=False, methods=["SparseVAE", "VAE", "NMF"])
    assert len(df) == 3 and (df["n_train"] == 160).all()
    assert "200 documents x 60 words" in (tmp_path / "summary.md").read_text()
