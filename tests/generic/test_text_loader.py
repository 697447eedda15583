"""Tests for the abstracts loader: tokenising, vocabulary, JSONL and PeerRead's per-paper JSON layout."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from scsparse.generic.datasets import (
    read_abstracts,
    read_abstracts_jsonl,
    read_peerread_dir,
    text_corpus,
    vectorize_abstracts,
)
from scsparse.generic.datasets._text import tokenize


@pytest.fixture
def shared_data(shared_data: Path) -> Path:
    """The conftest's data copy, skipping where it lacks the abstracts."""
    if not (shared_data / "text_neurips_abstracts").is_dir():
        pytest.skip(f"text_neurips_abstracts not found in {shared_data}")
    return shared_data


def _write_peerread(root: Path) -> None:
    """A small PeerRead-style tree: review files with a top-level abstract and parsed PDFs with metadata."""
    reviews = root / "iclr_2017" / "train" / "reviews"
    pdfs = root / "iclr_2017" / "train" / "parsed_pdfs"
    reviews.mkdir(parents=True)
    pdfs.mkdir(parents=True)
    (reviews / "304.json").write_text(
        json.dumps(
            {
                "id": "304",
                "title": "Policy search",
                "abstract": "Policy gradient agents learn a policy; the policy is sparse.",
                "accepted": True,
                "reviews": [{"comments": "good"}],
            }
        )
    )
    (reviews / "305.json").write_text(json.dumps({"id": "305", "title": "No abstract", "abstract": ""}))
    # the parsed PDF of 304 repeats it (kept once) and 777 exists only as a parsed PDF
    (pdfs / "304.pdf.json").write_text(json.dumps({"name": "304.pdf", "metadata": {"abstractText": "Other text."}}))
    meta = {"title": "Topics", "abstractText": "Topic models of words, words."}
    (pdfs / "777.pdf.json").write_text(json.dumps({"name": "777.pdf", "metadata": meta}))


def test_tokenize_lowercases_and_keeps_letter_runs() -> None:
    assert tokenize("Deep-Learning of 3D shapes, GPT-4 & x.") == ["deep", "learning", "of", "shapes", "gpt"]


def test_vectorize_keeps_most_frequent_non_stop_words() -> None:
    texts = ["the cat sat", "the cat ran", "a dog ran", "the bird"]
    counts, vocab = vectorize_abstracts(texts, vocab_size=2, min_df=1, max_df=1.0)
    # 'the' and 'a' are stop words; cat (2) and ran (2) are the most used
    assert vocab.tolist() == ["cat", "ran"]
    np.testing.assert_array_equal(counts, [[1, 0], [1, 1], [0, 1], [0, 0]])
    assert counts.dtype == np.int64


def test_vectorize_document_frequency_filters() -> None:
    texts = ["model data", "model noise", "model graph", "model graph"]
    _, vocab = vectorize_abstracts(texts, vocab_size=10, min_df=2, max_df=0.9)
    assert vocab.tolist() == ["graph"]  # 'model' is in 100% > 90% of documents; data/noise in 1 < 2


def test_vectorize_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="No texts"):
        vectorize_abstracts([])
    with pytest.raises(ValueError, match="vocab_size"):
        vectorize_abstracts(["a text"], vocab_size=0)
    with pytest.raises(ValueError, match="No word survives"):
        vectorize_abstracts(["the and of"], min_df=1, max_df=1.0)


def test_read_peerread_dir_reads_reviews_and_parsed_pdfs(tmp_path: Path) -> None:
    _write_peerread(tmp_path)
    df = read_peerread_dir(tmp_path)
    assert sorted(df["id"]) == ["304", "777"]  # 305 has no abstract; 304's parsed PDF is a duplicate
    row = df.set_index("id").loc["304"]
    assert row["abstract"].startswith("Policy gradient") and row["title"] == "Policy search"
    assert df.set_index("id").loc["777", "abstract"] == "Topic models of words, words."
    assert read_abstracts(tmp_path)["id"].tolist() == df["id"].tolist()


def test_read_peerread_dir_errors(tmp_path: Path) -> None:
    with pytest.raises(NotADirectoryError, match="per-paper"):
        read_peerread_dir(tmp_path / "missing")
    with pytest.raises(ValueError, match="No abstracts found"):
        read_peerread_dir(tmp_path)
    (tmp_path / "1.json").write_text("{not json")
    with pytest.raises(ValueError, match="1.json is not valid JSON"):
        read_peerread_dir(tmp_path)


def test_read_abstracts_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "papers.jsonl"
    lines = [json.dumps({"id": "a", "title": "T", "abstract": "Sparse text.", "conference": "X"}), "", '{"id": "b"}']
    path.write_text("\n".join(lines) + "\n")
    df = read_abstracts_jsonl(path)
    assert df["id"].tolist() == ["a"] and df["conference"].tolist() == ["X"]
    path.write_text(lines[0] + "\n{broken\n")
    with pytest.raises(ValueError, match="line 2 is not valid JSON"):
        read_abstracts_jsonl(path)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_abstracts_jsonl(tmp_path / "none.jsonl")


def test_text_corpus_from_peerread_dir(tmp_path: Path) -> None:
    _write_peerread(tmp_path)
    corpus = text_corpus(tmp_path, vocab_size=3, min_df=1, max_df=1.0)
    assert corpus.vocabulary.tolist() == ["agents", "policy", "words"]  # policy 3, words 2, then ties: a-z
    assert corpus.counts.shape == (2, corpus.n_words)
    doc = dict(zip(corpus.vocabulary, corpus.counts[corpus.documents["id"].tolist().index("304")], strict=True))
    assert doc["policy"] == 3
    assert list(corpus.documents.columns)[:2] == ["id", "title"]
    with pytest.raises(ValueError, match="max_docs"):
        text_corpus(tmp_path, max_docs=0)


def test_text_corpus_drops_documents_without_vocabulary_words(tmp_path: Path) -> None:
    for i, text in enumerate(["graph graph model", "graph model", "entirely different"]):
        (tmp_path / f"{i}.json").write_text(json.dumps({"id": str(i), "abstract": text}))
    corpus = text_corpus(tmp_path, vocab_size=2, min_df=2, max_df=1.0)
    assert corpus.documents["id"].tolist() == ["0", "1"]
    kept = text_corpus(tmp_path, vocab_size=2, min_df=2, max_df=1.0, drop_empty=False)
    assert kept.n_docs == 3 and kept.counts[2].sum() == 0


def test_registry_corpus(shared_data: Path) -> None:
    docs = read_abstracts()
    assert len(docs) == 13171 and docs["abstract"].str.len().min() > 0
    corpus = text_corpus(max_docs=1500, seed=1)
    assert corpus.counts.shape == (corpus.n_docs, 500) and 1400 <= corpus.n_docs <= 1500
    assert not set(corpus.vocabulary) & set(ENGLISH_STOP_WORDS)
    assert {"learning", "model", "data"} <= set(corpus.vocabulary)
    assert all(w.isalpha() and w == w.lower() for w in corpus.vocabulary)
