r"""Paper abstracts as a documents x words count matrix (the PeerRead text of Moran et al. 2022).

The sparse VAE paper fits its text experiments to PeerRead abstracts (Kang et al. 2018): word tokens in
fewer than about 0.1% or more than 90% of the abstracts are discarded and the ``G = 500`` most used of the
rest are the features (Moran et al. 2022, App. C.1). PeerRead itself is not obtainable offline; the
registry's ``text_neurips`` data set (13,171 NeurIPS 2023-2025 abstracts, one paper per JSONL line with
PeerRead's per-paper fields) stands in for it. This module reads both layouts:

- JSONL files, one JSON object per line with an ``"abstract"`` field (the registry's stand-in);
- PeerRead's own layout, a directory tree of per-paper ``<id>.json`` files: the review files
  (``.../reviews/<id>.json``) carry ``"abstract"`` (and ``"title"``, ``"id"``) at the top level, the parsed
  PDFs (``.../parsed_pdfs/<id>.pdf.json``) carry ``{"metadata": {"abstractText": ...}}``. Both are read.

Tokenisation: lower case, tokens of two or more letters (``[^\W\d_]{2,}``, so digits, ``3d`` and
punctuation are dropped and ``self-supervised`` gives ``self`` and ``supervised``), scikit-learn's English stop
words removed, document-frequency filter, then the ``vocab_size`` tokens with the largest total count.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = [
    "TOKEN_PATTERN",
    "TextCorpus",
    "read_abstracts",
    "read_abstracts_jsonl",
    "read_peerread_dir",
    "text_corpus",
    "tokenize",
    "vectorize_abstracts",
]

#: Tokens: runs of two or more letters (no digits, no underscore), after lower-casing.
TOKEN_PATTERN = r"(?u)\b[^\W\d_]{2,}\b"
_TOKEN_RE = re.compile(TOKEN_PATTERN)

#: Registry name of the stand-in corpus.
REGISTRY_NAME = "text_neurips"


@dataclass(frozen=True, eq=False)
class TextCorpus:
    """A documents x words count matrix with its vocabulary and document metadata.

    Attributes
    ----------
    counts
        ``(n_docs, n_words)`` int64 word counts.
    vocabulary
        The ``n_words`` words (column order of ``counts``), as a numpy array of str.
    documents
        One row per document (same order as ``counts``) with ``id``, ``title`` and ``source`` (where it was
        read from), plus ``conference`` and ``accepted`` when the files have them.
    """

    counts: np.ndarray
    vocabulary: np.ndarray
    documents: pd.DataFrame

    @property
    def n_docs(self) -> int:
        """Number of documents (rows)."""
        return int(self.counts.shape[0])

    @property
    def n_words(self) -> int:
        """Vocabulary size (columns)."""
        return int(self.counts.shape[1])


def tokenize(text: str) -> list[str]:
    """Lower-case ``text`` and return its tokens of two or more letters (stop words are kept here).

    Examples
    --------
    >>> tokenize("Self-supervised 3D models beat GPT-4 in 2024.")
    ['self', 'supervised', 'models', 'beat', 'gpt', 'in']
    """
    return _TOKEN_RE.findall(text.lower())


def _record(obj: object, source: str) -> dict[str, object] | None:
    """Abstract, id and title of one PeerRead-style JSON object (``None`` if it has no abstract)."""
    if not isinstance(obj, dict):
        return None
    abstract = obj.get("abstract")
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    if not isinstance(abstract, str) or not abstract.strip():
        abstract = meta.get("abstractText")
    if not isinstance(abstract, str) or not abstract.strip():
        return None
    stem = Path(source.split(":")[0]).name
    default_id = stem.removesuffix(".json").removesuffix(".pdf")
    rec: dict[str, object] = {
        "id": str(obj.get("id", meta.get("id", default_id)) or default_id),
        "title": str(obj.get("title", meta.get("title", "")) or ""),
        "abstract": abstract,
        "source": source,
    }
    for key in ("conference", "accepted"):
        if key in obj:
            rec[key] = obj[key]
    return rec


def read_abstracts_jsonl(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> pd.DataFrame:
    r"""Read abstracts from JSONL files (one paper per line, PeerRead fields, ``"abstract"`` required).

    Parameters
    ----------
    paths
        One file or several; lines are read in order, blank lines skipped.

    Returns
    -------
    pandas.DataFrame
        One row per paper with ``id``, ``title``, ``abstract``, ``source`` (``file:line``) and, when present,
        ``conference`` and ``accepted``. Lines without a non-empty abstract are left out.

    Raises
    ------
    FileNotFoundError
        A file does not exist.
    ValueError
        A line is not valid JSON (the message names file and line), or no line has an abstract.

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "papers.jsonl"
    >>> _ = path.write_text(json.dumps({"id": "p1", "title": "T", "abstract": "Sparse factors."}) + "\n")
    >>> read_abstracts_jsonl(path)[["id", "abstract"]].to_dict("records")
    [{'id': 'p1', 'abstract': 'Sparse factors.'}]
    """
    files = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    rows: list[dict[str, object]] = []
    for f in files:
        path = Path(f)
        if not path.is_file():
            raise FileNotFoundError(f"JSONL file {path} does not exist; pass existing files (one paper per line).")
        with open(path, encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ValueError(
                        f"{path}, line {lineno} is not valid JSON ({exc.msg}); each line must be one paper's JSON "
                        "object with an 'abstract' field."
                    ) from exc
                rec = _record(obj, f"{path}:{lineno}")
                if rec is not None:
                    rows.append(rec)
    if not rows:
        raise ValueError(f"No abstracts found in {[str(f) for f in files]}: no line has a non-empty 'abstract'.")
    return pd.DataFrame(rows)


def read_peerread_dir(directory: str | os.PathLike[str]) -> pd.DataFrame:
    """Read abstracts from PeerRead's per-paper layout: a directory tree of ``<id>.json`` files.

    Every ``*.json`` below ``directory`` is read (recursively; review files first, then parsed PDFs, each in
    path order). A review file has the abstract at the top level (``"abstract"``, with ``"id"`` and
    ``"title"``); a parsed PDF (``<id>.pdf.json``) has it in ``"metadata"`` as ``"abstractText"``. When a paper
    appears in both (same ``id``), the review file's abstract is kept. Files without an abstract are skipped.

    Parameters
    ----------
    directory
        Root of the tree, e.g. ``PeerRead/data/iclr_2017`` or one of its ``train/reviews`` folders.

    Returns
    -------
    pandas.DataFrame
        One row per paper with ``id``, ``title``, ``abstract`` and ``source`` (the file path), plus
        ``conference`` / ``accepted`` when the files have them.

    Raises
    ------
    NotADirectoryError
        ``directory`` is not a directory.
    ValueError
        A file is not valid JSON (named in the message), or no file has an abstract.

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (root / "104.json").write_text(json.dumps({"id": "104", "title": "T", "abstract": "Topic models."}))
    >>> read_peerread_dir(root)[["id", "abstract"]].to_dict("records")
    [{'id': '104', 'abstract': 'Topic models.'}]
    """
    root = Path(directory)
    if not root.is_dir():
        raise NotADirectoryError(
            f"{root} is not a directory; pass the folder holding PeerRead's per-paper <id>.json files."
        )
    rows: list[dict[str, object]] = []
    seen: set[str] = set()
    # review files (top-level abstract) first, then parsed PDFs; each group in path order
    for path in sorted(root.rglob("*.json"), key=lambda q: (q.name.endswith(".pdf.json"), str(q))):
        try:
            obj = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"{path} is not valid JSON ({exc.msg}); PeerRead files hold one paper's JSON object each."
            ) from exc
        rec = _record(obj, str(path))
        if rec is None or rec["id"] in seen:
            continue
        seen.add(str(rec["id"]))
        rows.append(rec)
    if not rows:
        raise ValueError(
            f"No abstracts found under {root}: no *.json file has an 'abstract' (review files) or "
            "'metadata.abstractText' (parsed PDFs)."
        )
    return pd.DataFrame(rows)


def read_abstracts(source: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None) -> pd.DataFrame:
    """Read abstracts from the registry's stand-in, a PeerRead directory, or JSONL files.

    Parameters
    ----------
    source
        ``None``: the registry's ``text_neurips`` files (via :func:`scsparse.data.fetch`, offline cache
        first); a directory: :func:`read_peerread_dir`; a file or list of files: :func:`read_abstracts_jsonl`.

    Returns
    -------
    pandas.DataFrame
        One row per paper (see the readers).

    Examples
    --------
    >>> df = read_abstracts()  # doctest: +SKIP
    >>> len(df)  # doctest: +SKIP
    13171
    """
    if source is None:
        from scsparse.data import fetch

        paths = fetch(REGISTRY_NAME)
        return read_abstracts_jsonl([paths[k] for k in sorted(paths)])
    if isinstance(source, (str, os.PathLike)) and Path(source).is_dir():
        return read_peerread_dir(source)
    return read_abstracts_jsonl(source)


def vectorize_abstracts(
    texts: Sequence[str],
    vocab_size: int = 500,
    min_df: float | int = 0.001,
    max_df: float | int = 0.9,
    stop_words: str | Sequence[str] | None = "english",
) -> tuple[np.ndarray, np.ndarray]:
    """Count matrix of the ``vocab_size`` most used words of ``texts``.

    Tokens as :func:`tokenize`; stop words removed (``"english"``: scikit-learn's list); tokens kept when
    they appear in at least ``min_df`` and at most ``max_df`` of the documents (fractions, or absolute
    counts when integers; the paper: about 0.1% and 90%); of those, the ``vocab_size`` with the largest
    total count (ties broken alphabetically) become the columns, sorted alphabetically.

    Parameters
    ----------
    texts
        The documents.
    vocab_size
        Number of words kept (the paper: 500).
    min_df, max_df
        Document-frequency bounds.
    stop_words
        ``"english"``, a list of words, or ``None``.

    Returns
    -------
    counts : numpy.ndarray
        ``(len(texts), n_words)`` int64 counts, ``n_words <= vocab_size``.
    vocabulary : numpy.ndarray
        The words, in column order.

    Raises
    ------
    ValueError
        No texts, ``vocab_size < 1``, or no word survives the filters.

    Examples
    --------
    >>> counts, vocab = vectorize_abstracts(
    ...     ["Sparse models of text.", "Text models are sparse.", "Deep text."], vocab_size=2, min_df=1, max_df=1.0
    ... )
    >>> vocab.tolist(), counts.tolist()
    (['models', 'text'], [[1, 1], [1, 1], [0, 1]])
    """
    from sklearn.feature_extraction.text import CountVectorizer

    texts = list(texts)
    if not texts:
        raise ValueError("No texts to vectorise; pass at least one document.")
    if int(vocab_size) != vocab_size or vocab_size < 1:
        raise ValueError(f"vocab_size must be a positive integer, got {vocab_size}.")
    vectorizer = CountVectorizer(
        lowercase=True,
        token_pattern=TOKEN_PATTERN,
        stop_words=list(stop_words) if stop_words is not None and stop_words != "english" else stop_words,
        min_df=min_df,
        max_df=max_df,
    )
    try:
        full = vectorizer.fit_transform(texts).tocsc()
    except ValueError as exc:  # scikit-learn: empty vocabulary / max_df < min_df
        raise ValueError(
            f"No word survives the filters (min_df={min_df}, max_df={max_df}, stop words {stop_words!r}): {exc}. "
            "Relax min_df / max_df or pass more documents."
        ) from exc
    words = vectorizer.get_feature_names_out()
    totals = np.asarray(full.sum(axis=0)).ravel()
    order = np.lexsort((words, -totals))[: int(vocab_size)]  # most used first, ties alphabetical
    keep = np.sort(order)  # CountVectorizer's columns are alphabetical already
    counts = np.asarray(full[:, keep].todense(), dtype=np.int64)
    return counts, np.asarray(words[keep], dtype=str)


def text_corpus(
    source: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
    *,
    vocab_size: int = 500,
    min_df: float | int = 0.001,
    max_df: float | int = 0.9,
    drop_empty: bool = True,
    max_docs: int | None = None,
    seed: int = 0,
) -> TextCorpus:
    """Abstracts as a documents x words count matrix: the PeerRead text data of Moran et al. (2022).

    Parameters
    ----------
    source
        ``None``: the registry's ``text_neurips`` stand-in (13,171 NeurIPS 2023-2025 abstracts); a
        directory in PeerRead's per-paper layout; or JSONL file(s). See :func:`read_abstracts`.
    vocab_size, min_df, max_df
        Vocabulary (see :func:`vectorize_abstracts`; the paper: 500 words, 0.1% and 90%).
    drop_empty
        Leave out documents with no word of the vocabulary (their multinomial likelihood is trivially 1).
    max_docs
        Keep a random subset of this many documents (drawn with ``seed``, kept in file order) *before*
        the vocabulary is built; ``None`` keeps all.
    seed
        Seed of the subset.

    Returns
    -------
    TextCorpus
        ``counts`` (documents x words), ``vocabulary`` and ``documents``.

    Examples
    --------
    >>> corpus = text_corpus()  # doctest: +SKIP
    >>> corpus.counts.shape  # doctest: +SKIP
    (13171, 500)
    >>> corpus.vocabulary[:3].tolist()  # doctest: +SKIP
    ['ability', 'accuracy', 'accurate']
    """
    docs = read_abstracts(source)
    if max_docs is not None:
        if int(max_docs) != max_docs or max_docs < 1:
            raise ValueError(f"max_docs must be a positive integer or None, got {max_docs}.")
        if max_docs < len(docs):
            keep = np.sort(np.random.default_rng(seed).choice(len(docs), int(max_docs), replace=False))
            docs = docs.iloc[keep]
    docs = docs.reset_index(drop=True)
    counts, vocab = vectorize_abstracts(docs["abstract"].tolist(), vocab_size, min_df, max_df)
    if drop_empty:
        nonempty = counts.sum(1) > 0
        counts, docs = counts[nonempty], docs.loc[nonempty].reset_index(drop=True)
    meta = docs.drop(columns=["abstract"])
    return TextCorpus(counts=counts, vocabulary=vocab, documents=meta)
