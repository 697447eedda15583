"""The document models of the text benchmarks: their settings, which methods, how each is built, fitted and scored.

``bench text`` (abstracts, Moran et al. 2022, Table 1b) and ``bench semisynthetic`` (LDA documents with shifted
topic correlations, Table 2) fit the same methods with the same multinomial likelihood and score them by the same
held-out negative log-likelihood (:data:`NLL_DEFINITION`); both take them from here, their settings from
:func:`document_settings` and :func:`resolve_settings`. Their summaries' opening, tables and verdicts are in
:mod:`._documents_summary`.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scsparse.generic.datasets import TextCorpus, text_corpus
from scsparse.generic.models import NMF, OIVAE, VAE, VSC, ArrayModel, ArraySparseVAE, BetaVAE
from scsparse.utils import check_integer

from ._paper import PAPER_HIDDEN_LAYERS
from ._settings import run_settings

__all__ = [
    "METHOD_NAMES",
    "NLL_DEFINITION",
    "QUICK_DOCUMENT_SETTINGS",
    "FittedMethod",
    "build_models",
    "check_corpus",
    "document_settings",
    "entry_row",
    "fit_and_score",
    "load_corpus",
    "nmf_marginal_nll",
    "resolve_run",
    "resolve_settings",
    "score_methods",
    "unigram_nll",
]

#: Methods of Table 1b, in the paper's order.
METHOD_NAMES: tuple[str, ...] = ("SparseVAE", "VAE", "beta-VAE", "OI-VAE", "VSC", "NMF")

#: How the held-out NLL is defined (stated in every summary).
NLL_DEFINITION = (
    "`heldout_nll` = mean over held-out documents of -log p(x_d), where x_d is the document's vector of word "
    "counts over the vocabulary and p(x_d | z) = Mult(x_d; n_d, softmax(f(z))) with n_d = sum_j x_dj, *including* "
    "the multinomial coefficient log n_d! - sum_j log x_dj! (the probability of the count vector, not of one word "
    "order), marginalised over the latent variable under each model's own prior: for SparseVAE, VAE, beta-VAE and "
    "OI-VAE by importance sampling, log (1/S) sum_s p(x | z_s) N(z_s; 0, I) / q(z_s | x) with S draws from the "
    "encoder (`nll_kind = is`); for VSC the same importance-weighted estimate with exact spike-and-slab draws from "
    "its encoder and its pseudo-input prior (`nll_kind = iwae`; the relaxed training sample has no density, see "
    "`scsparse.generic.models.VSC`); NMF has no prior on its codes, so we give it the empirical one -- the codes "
    "h_1..h_N of the N training documents, each with mass 1/N -- and compute p(x) = (1/N) sum_i Mult(x; n, "
    "h_i H / sum(h_i H)) exactly (`nll_kind = empirical-prior`). The plug-in value at codes fitted to the "
    "held-out document itself (optimistic: the codes see the counts they score) is in the column `nll_plugin`. "
    "With finitely many samples the importance-sampled values are stochastic upper bounds on -log p(x); lower "
    "is better."
)

#: Floor of NMF's word probabilities (as :data:`scsparse.generic.models._nmf.PROB_FLOOR`).
_PROB_FLOOR = 1e-10


def unigram_nll(x_train: np.ndarray, x_eval: np.ndarray, pseudo_count: float = 0.5) -> float:
    """Mean ``-log Mult(x; n, p)`` of the held-out rows with ``p`` the training word frequencies (no latent variable).

    The reference every latent-variable model should beat: a model whose posterior collapsed scores about this.
    ``p_j`` is proportional to the training count of word ``j`` plus ``pseudo_count``; the multinomial coefficient
    is included, as in :data:`NLL_DEFINITION`.

    Examples
    --------
    >>> import numpy as np
    >>> round(unigram_nll(np.array([[1.0, 1.0]]), np.array([[2.0, 0.0]]), pseudo_count=0.0), 4)  # -log 0.25
    1.3863
    """
    from scipy.special import gammaln

    p = np.asarray(x_train, dtype=np.float64).sum(0) + float(pseudo_count)
    log_p = np.log(np.maximum(p / p.sum(), _PROB_FLOOR))
    x = np.asarray(x_eval, dtype=np.float64)
    ll = gammaln(x.sum(1) + 1.0) - gammaln(x + 1.0).sum(1) + x @ log_p
    return -float(ll.mean())


def nmf_marginal_nll(model: NMF, x_train: np.ndarray, x_eval: np.ndarray, chunk: int = 256) -> float:
    """Mean ``-log p(x)`` of NMF as a generative model with the empirical prior over its training codes.

    ``p(x) = (1 / N) sum_i Mult(x; sum(x), p_i)`` with ``p_i = h_i H / sum(h_i H)`` (floored at ``1e-10`` and
    renormalised), ``h_i`` the codes of the ``N`` training rows and ``H`` the components; exact (a sum over
    all training codes), multinomial coefficient included.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).poisson(2.0, size=(50, 6)).astype(float)
    >>> model = NMF(n_components=2, likelihood="multinomial").fit(X)
    >>> bool(nmf_marginal_nll(model, X, X[:5]) >= model.heldout_nll(X[:5]) - 1e-9)  # plug-in is optimistic
    True
    """
    from scipy.special import gammaln, logsumexp

    codes = np.asarray(model.transform(x_train), dtype=np.float64)
    rec = codes @ np.asarray(model.loadings(), dtype=np.float64).T
    total = rec.sum(1, keepdims=True)
    p = np.where(total > 0, rec / np.where(total > 0, total, 1.0), 1.0 / rec.shape[1])
    p = np.maximum(p, _PROB_FLOOR)
    log_p = np.log(p / p.sum(1, keepdims=True))
    x = np.asarray(x_eval, dtype=np.float64)
    coef = gammaln(x.sum(1) + 1.0) - gammaln(x + 1.0).sum(1)
    ll = np.concatenate([logsumexp(x[i : i + chunk] @ log_p.T, axis=1) for i in range(0, x.shape[0], chunk)]) - np.log(
        log_p.shape[0]
    )
    return -float(np.mean(coef + ll))


@dataclass(eq=False)
class FittedMethod:
    """One fitted method and its scores on the held-out documents.

    Attributes
    ----------
    method
        Method name (one of :data:`METHOD_NAMES`).
    beta
        KL weight of the beta-VAE (``nan`` for the other methods).
    model
        The fitted :class:`~scsparse.generic.models.ArrayModel`.
    heldout_nll
        Mean ``-log p(x)`` per held-out document (see :data:`NLL_DEFINITION`).
    nll_kind
        ``"is"``, ``"iwae"`` or ``"empirical-prior"``.
    nll_plugin
        NMF only: the plug-in NLL at codes fitted to each held-out row (``nan`` for the others).
    n_active
        Active factors (SparseVAE: factors with a word with ``p* > 0.5``; ``nan`` for the others).
    fit_seconds, eval_seconds
        Wall-clock seconds of fitting and of the NLL.
    extra
        Anything else.
    """

    method: str
    beta: float
    model: ArrayModel
    heldout_nll: float
    nll_kind: str
    n_active: float
    fit_seconds: float
    eval_seconds: float
    nll_plugin: float = math.nan
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def beta_note(self) -> str:
        """``" beta=<beta>"`` for the beta-VAE, ``""`` for the others (for progress lines)."""
        return "" if math.isnan(self.beta) else f" beta={self.beta:g}"


def build_models(cfg: Mapping[str, Any], seed: int, methods: Sequence[str] = METHOD_NAMES) -> list[FittedMethod]:
    """Unfitted models of ``methods`` with settings ``cfg`` (see :func:`document_settings`), all multinomial.

    The beta-VAE gives one entry per ``cfg["betas"]``. OI-VAE puts every word in its own group (the
    paper's p = 5 rows per group, lambda = 1) with ``cfg["oivae_layers"]`` hidden layers per word generator.

    Returns
    -------
    list of FittedMethod
        Entries with ``model`` set and the scores still ``nan``.
    """
    unknown = [m for m in methods if m not in METHOD_NAMES]
    if unknown:
        raise ValueError(f"Unknown method(s) {unknown}; choose from {list(METHOD_NAMES)}.")
    common = {
        "n_latent": cfg["n_latent"],
        "lr": cfg["lr"],
        "max_epochs": cfg["max_epochs"],
        "batch_size": cfg["batch_size"],
        "seed": seed,
        "likelihood": "multinomial",
    }
    deep = {**common, "n_hidden": cfg["n_hidden"], "n_layers": cfg["n_layers"]}
    out: list[FittedMethod] = []

    def add(name: str, model: ArrayModel, beta: float = math.nan) -> None:
        out.append(FittedMethod(name, beta, model, math.nan, "", math.nan, math.nan, math.nan))

    for name in methods:
        if name == "SparseVAE":
            add(name, ArraySparseVAE(**deep, lambda0=cfg["lambda0"], lambda1=cfg["lambda1"]))
        elif name == "VAE":
            add(name, VAE(**deep))
        elif name == "beta-VAE":
            for beta in cfg["betas"]:
                add(name, BetaVAE(**deep, beta=float(beta)), float(beta))
        elif name == "OI-VAE":
            groups = np.arange(int(cfg["n_features"]))
            add(
                name,
                OIVAE(
                    groups,
                    **{**common, "n_hidden": cfg["n_hidden"], "n_layers": cfg["oivae_layers"]},
                    p=cfg["oivae_p"],
                    lambda_=cfg["oivae_lambda"],
                ),
            )
        elif name == "VSC":
            add(name, VSC(**deep, alpha=cfg["vsc_alpha"]))
        else:
            add(name, NMF(n_components=cfg["n_latent"], likelihood="multinomial", alpha=cfg["nmf_alpha"], seed=seed))
    return out


def fit_and_score(entry: FittedMethod, x_train: np.ndarray, x_eval: np.ndarray, n_is_samples: int) -> FittedMethod:
    """Fit ``entry.model`` on ``x_train`` and fill in its held-out NLL on ``x_eval`` (in place; returned).

    All importance-sampled estimates use ``n_is_samples`` draws per document.
    """
    model = entry.model
    t0 = time.perf_counter()
    model.fit(x_train)
    entry.fit_seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    if isinstance(model, NMF):
        entry.heldout_nll, entry.nll_kind = nmf_marginal_nll(model, x_train, x_eval), "empirical-prior"
        entry.nll_plugin = float(model.heldout_nll(x_eval))
    elif isinstance(model, VSC):
        nll = model.heldout_nll(x_eval, n_samples=n_is_samples, importance_weighted=True)
        entry.heldout_nll, entry.nll_kind = float(nll), "iwae"
    else:
        entry.heldout_nll, entry.nll_kind = float(model.heldout_nll(x_eval, n_samples=n_is_samples)), "is"
    entry.eval_seconds = time.perf_counter() - t0
    if isinstance(model, ArraySparseVAE):
        entry.n_active = float(len(model.active_factors()))
    return entry


def resolve_run(seeds: int, quick: bool, quick_max_seeds: int, methods: Sequence[str]) -> tuple[int, list[str]]:
    """Validated number of seeds (at most ``quick_max_seeds`` when ``quick``) and list of methods."""
    check_integer("seeds", seeds)
    methods = list(methods)
    if not methods:
        raise ValueError(f"methods must name at least one of {list(METHOD_NAMES)}")
    return (min(int(seeds), quick_max_seeds) if quick else int(seeds)), methods


def entry_row(entry: FittedMethod, *, seed: int, reference: float, n_train: int, n_test: int) -> dict[str, Any]:
    """The result columns every document benchmark records for one fitted method."""
    return {
        "method": entry.method,
        "beta": entry.beta,
        "seed": seed,
        "heldout_nll": entry.heldout_nll,
        "nll_kind": entry.nll_kind,
        "nll_plugin": entry.nll_plugin,
        "unigram_nll": reference,
        "n_active": entry.n_active,
        "n_train": n_train,
        "n_test": n_test,
        "fit_seconds": entry.fit_seconds,
        "eval_seconds": entry.eval_seconds,
    }


def score_methods(
    cfg: Mapping[str, Any], seed: int, methods: Sequence[str], x_train: np.ndarray, x_eval: np.ndarray
) -> Iterator[tuple[FittedMethod, dict[str, Any]]]:
    """Fit every method on ``x_train``, score it on ``x_eval``, and yield it with its result row (:func:`entry_row`).

    The models are :func:`build_models` of ``cfg`` and ``seed``; the row carries the unigram reference of the same
    documents (:func:`unigram_nll`) and the numbers of training and scored documents.
    """
    reference = unigram_nll(x_train, x_eval)
    for entry in build_models(cfg, seed, methods):
        fit_and_score(entry, x_train, x_eval, cfg["n_is_samples"])
        yield entry, entry_row(entry, seed=seed, reference=reference, n_train=len(x_train), n_test=len(x_eval))


# ---------------------------------------------------------------------------------------------- settings
def document_settings(*, n_hidden: int, max_epochs: int, **more: Any) -> dict[str, Any]:
    """Settings of a document benchmark: its row of the paper's Table 6 and the baselines' settings.

    The paper's PeerRead experiments (Moran et al. 2022, Table 6) differ in the width ``n_hidden`` and the number
    of epochs ``max_epochs``; ``more`` adds a benchmark's own settings after the shared ones. ``lambda1`` is 1
    where Table 6 has a smaller slab rate (each benchmark's ``PAPER_*_LAMBDA1``), see
    :func:`._paper.slab_threshold_note`.

    Examples
    --------
    >>> cfg = document_settings(n_hidden=50, max_epochs=50, n_topics=20)
    >>> cfg["n_hidden"], cfg["max_epochs"], list(cfg)[-1]
    (50, 50, 'n_topics')
    """
    return {
        "n_latent": 20,
        "n_hidden": n_hidden,
        "n_layers": PAPER_HIDDEN_LAYERS,
        "lr": 0.01,
        "max_epochs": max_epochs,
        "batch_size": 128,
        "lambda0": 5.0,
        "lambda1": 1.0,
        "betas": (2.0, 4.0, 6.0, 8.0, 16.0),
        "vsc_alpha": 0.01,
        "oivae_lambda": 1.0,
        "oivae_p": 5,
        "oivae_layers": 1,
        "nmf_alpha": 0.0,
        "vocab_size": 500,
        "n_docs": None,
        "n_is_samples": 50,
        "n_eval_docs": None,
        **more,
    }


#: Overrides of ``quick=True``: a small corpus and vocabulary, narrow networks, 2 epochs.
QUICK_DOCUMENT_SETTINGS: dict[str, Any] = {
    "n_hidden": 8,
    "max_epochs": 2,
    "betas": (2.0,),
    "vocab_size": 60,
    "n_docs": 200,
    "n_is_samples": 4,
    "n_eval_docs": 40,
}


def resolve_settings(
    defaults: Mapping[str, Any], quick: bool, max_epochs: int | None, **overrides: Any
) -> dict[str, Any]:
    """Settings of a document benchmark: :func:`run_settings` of ``defaults`` (:func:`document_settings`) and
    :data:`QUICK_DOCUMENT_SETTINGS` with ``max_epochs``, then non-``None`` ``overrides``.
    """
    given = {k: tuple(v) if k == "betas" and v is not None else v for k, v in overrides.items()}
    cfg = run_settings(defaults, QUICK_DOCUMENT_SETTINGS, quick, given=given, max_epochs=max_epochs)
    for key in ("n_is_samples", "vocab_size"):
        check_integer(key, cfg[key])
    for key in ("n_docs", "n_eval_docs"):
        if cfg[key] is not None:
            check_integer(key, cfg[key], minimum=2, fix="Or None: all of them.")
    if not cfg["betas"] or any(b <= 0 for b in cfg["betas"]):
        raise ValueError(f"betas must be positive numbers, got {cfg['betas']}")
    if not cfg["lambda0"] > cfg["lambda1"] > 0:
        raise ValueError(
            f"lambda1 must lie in (0, lambda0 = {cfg['lambda0']:g}) (the slab wider than the spike), "
            f"got {cfg['lambda1']}"
        )
    return cfg


def check_corpus(corpus: TextCorpus, n_latent: int) -> None:
    """Raise a ``ValueError`` when the corpus is too small for ``n_latent`` factors (NMF needs ``K <= G, N``)."""
    if corpus.n_words < n_latent or corpus.n_docs < max(n_latent, 10):
        raise ValueError(
            f"The corpus has {corpus.n_docs} documents x {corpus.n_words} words: fewer words than the {n_latent} "
            f"factors, or fewer than max({n_latent}, 10) documents. Pass a larger corpus (source=...) or a larger "
            "vocab_size."
        )


def load_corpus(
    cfg: dict[str, Any],
    source: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None,
    n_factors: int,
) -> TextCorpus:
    """The corpus of a document benchmark, checked for ``n_factors`` factors; sets ``cfg["n_features"]``.

    :func:`~scsparse.generic.datasets.text_corpus` of ``source`` with ``cfg``'s ``vocab_size`` and ``n_docs``,
    then :func:`check_corpus`; ``cfg["n_features"]`` becomes its number of words.
    """
    corpus = text_corpus(source, vocab_size=cfg["vocab_size"], max_docs=cfg["n_docs"])
    check_corpus(corpus, n_factors)
    cfg["n_features"] = corpus.n_words
    return corpus
