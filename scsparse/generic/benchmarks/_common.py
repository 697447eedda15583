"""Pieces shared by the benchmarks: settings, restarts, checks, and the tables of their summaries.

What a run writes (output folder, ``results.csv``, provenance, ``summary.md``, figures, the closing lines) is
in :mod:`._report`. The last section holds what the document benchmarks (text, semi-synthetic) share: their
settings, the corpus check, and the tables and verdicts on held-out NLL (the best beta of the beta-VAE is
MovieLens's too).
"""

from __future__ import annotations

import contextlib
import logging
import math
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from scsparse.nn import NoActiveFactorWarning, slab_threshold
from scsparse.utils import markdown_rows, torch_threads

if TYPE_CHECKING:
    from anndata import AnnData

    from scsparse.generic.datasets import TextCorpus

__all__ = [
    "INTERFERON_TERMS",
    "PAPER_DEPTH_NOTE",
    "PAPER_HIDDEN_LAYERS",
    "RESTART_SEED_STEP",
    "beaten_by",
    "best_beta",
    "best_beta_rows",
    "best_of_restarts",
    "check_corpus",
    "check_positive_int",
    "chosen_names",
    "cpu_threads",
    "format_mean_sd",
    "markdown_table",
    "method_label",
    "no_active_factor_note",
    "paper_comparison_table",
    "proc_status_mb",
    "quiet_training_logs",
    "reduced_settings",
    "resolve_settings",
    "run_labels",
    "run_settings",
    "slab_threshold_note",
    "summarise",
    "torch_threads",
    "variable_genes",
    "unigram_lines",
    "verdict_best",
]


#: Hidden layers of the encoder and decoder MLPs in the benchmarks of Moran et al. (2022). Table 6 lists
#: "# hidden layers 3"; the networks it counts have three *weight* layers. The decoder is ``K -> H`` (no
#: bias), ReLU, ``H -> H``, ReLU, then the per-feature output ``H -> 1``: the "three-layer neural network"
#: ``H3 ReLU(H2 ReLU(H1 (w ⊙ z)))`` of the paper's Appendix A.3, and the network of the authors' released
#: code (encoder alike). In scsparse's count (``n_layers`` = hidden layers) that is 2. Reading it as three
#: hidden layers made every network one layer deeper than the paper's; on Zeisel the deeper sparse VAE kept
#: 2-4 of 15 factors and reached 0.933 held-out accuracy in 100 epochs (seed 0), against 0.952 at this depth.
PAPER_HIDDEN_LAYERS = 2
#: How the summaries say it.
PAPER_DEPTH_NOTE = (
    f'(Table 6\'s "3 layers" counts the weight layers K -> H -> H -> 1: {PAPER_HIDDEN_LAYERS} hidden layers)'
)


def slab_threshold_note(lambda0: float, lambda1: float, paper_lambda1: float) -> str:
    """Summary text for a benchmark whose ``lambda1`` differs from the paper's Table 6 value (``""`` if equal).

    The paper's small slab rates were paired with the authors' E-step, which drops the Laplace normalisers
    ``lambda / 2`` (:func:`scsparse.nn.ssl_inclusion_logits` keeps them, as the maths says). With them kept,
    a slab rate of 0.001 next to a spike rate of 5 puts an entry in the slab only above ``|w|`` of about 1.7,
    and the text and semi-synthetic fits ended with every factor switched off (:doc:`/user-guide/settings`). The
    note gives both thresholds (:func:`scsparse.nn.slab_threshold`), so that a reader can see why the run
    departs from the paper.
    """
    if lambda1 == paper_lambda1:
        return ""
    return (
        f"SparseVAE lambda1 = {lambda1:g} instead of the paper's {paper_lambda1:g}: scsparse's E-step keeps the "
        f"Laplace normalisers lambda/2 that the authors' code drops, and with them an entry is in the slab (p* > "
        f"0.5 at eta = 0.5) only above |w| = {slab_threshold(lambda0, paper_lambda1):.2f} at lambda1 = "
        f"{paper_lambda1:g} against {slab_threshold(lambda0, lambda1):.2f} at lambda1 = {lambda1:g} (lambda0 = "
        f"{lambda0:g}); at the paper's value no factor stayed active (user guide: Choosing settings). "
        f"`run(..., lambda1={paper_lambda1:g})` runs the paper's value."
    )


#: Seed offset between the restarts of one method on one dataset: restart ``r`` uses ``seed + r * this``, so
#: restart 0 is the single fit of that seed.
RESTART_SEED_STEP = 1000

#: Hallmark terms of the interferon-beta response (the known programme of the Kang data).
INTERFERON_TERMS: tuple[str, ...] = ("HALLMARK_INTERFERON_ALPHA_RESPONSE", "HALLMARK_INTERFERON_GAMMA_RESPONSE")


def best_of_restarts(
    fit: Callable[[int], Any], seed: int, n_restarts: int, objective: Callable[[Any], float] | None = None
) -> Any:
    """Fit ``n_restarts`` times and keep the fit with the lowest training objective.

    The sparse VAE's objective is not convex and the EM on the Spike-and-Slab Lasso can settle on a split or
    merged programme depending on the seed. The choice uses the training objective only
    (:func:`scsparse.model.select_best`), never the true programmes, so a benchmark may use it like NMF's
    ``n_init``.

    Parameters
    ----------
    fit
        ``fit(seed)`` builds, trains and returns one fitted model: a scvi-tools model of scsparse (a
        :class:`~scsparse.model.SparseVAE` or :class:`~scsparse.model.MultiStudySparseVAE`), or any model
        when ``objective`` is given.
    seed
        Seed of restart 0; restart ``r`` uses ``seed + r * RESTART_SEED_STEP``.
    n_restarts
        Number of fits (1: just ``fit(seed)``).
    objective
        ``objective(model)``, the training objective of a fit (lower is better), e.g.
        ``lambda m: m.training_objective(X)`` for a model of :mod:`scsparse.generic.models`. ``None``: the
        scvi-tools models' own, through :func:`scsparse.model.select_best`.

    Returns
    -------
    The selected model.
    """
    from scsparse.model import select_best

    check_positive_int("n_restarts", n_restarts)
    fits = [fit(int(seed) + r * RESTART_SEED_STEP) for r in range(int(n_restarts))]
    if len(fits) == 1:
        return fits[0]
    if objective is None:
        return select_best(fits)[0]
    values = [float(objective(f)) for f in fits]
    return fits[int(np.argmin(values))]


def no_active_factor_note(n_active: pd.Series | Sequence[float], method: str = "SparseVAE") -> list[str]:
    """Summary lines saying how many fits of ``method`` ended with every factor switched off (none: ``[]``).

    A sparse VAE whose every ``w_jk`` sits in the spike still fits the data through its shrunken inputs, so
    its likelihood stays close to a dense model's, but it has no programme to read. A summary that reports
    its likelihood must say so beside it.

    Parameters
    ----------
    n_active
        Active factors of each fit of ``method`` (NaN entries are ignored).
    method
        Name used in the text.

    Examples
    --------
    >>> no_active_factor_note([0.0, 3.0])[0][:59]
    '- SparseVAE ended with **no active factor** in 1 of 2 fits '
    >>> no_active_factor_note([2.0])
    []
    """
    values = np.asarray(pd.Series(n_active, dtype=float).dropna())
    n_off = int((values == 0).sum())
    if n_off == 0:
        return []
    return [
        f"- {method} ended with **no active factor** in {n_off} of {values.size} fits (every w_jk in the spike, "
        "p* < 0.5): its held-out likelihood is that of the decoder on shrunken inputs, and its factors cannot be "
        "read as programmes. With a few hundred to a few thousand training rows the prior's penalty (divided by "
        "the number of rows) outweighs the data, and the few hundred optimiser steps do not let W grow past the "
        "slab threshold; the paper's data sets were 10-200x larger (documentation: Benchmarks)."
    ]


def chosen_names(value: str | Sequence[str] | None, known: Sequence[str], what: str) -> list[str]:
    """The names a ``--datasets`` / ``--methods`` option chose, in the order of ``known`` (``None``: all of them).

    Examples
    --------
    >>> chosen_names("b, a", ["a", "b", "c"], "data set(s)")
    ['a', 'b']
    >>> chosen_names(None, ["a", "b"], "method(s)")
    ['a', 'b']
    """
    if value is None:
        return list(known)
    names = [v.strip() for v in value.split(",")] if isinstance(value, str) else [str(v) for v in value]
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise ValueError(f"Unknown {what} {unknown}; choose from {', '.join(known)} (comma-separated).")
    return [n for n in known if n in names]


def check_positive_int(name: str, value: Any, *, optional: bool = False) -> None:
    """Raise ``ValueError("<name> must be a positive integer, got <value>")`` unless ``value`` is one.

    With ``optional=True``, ``None`` is accepted too.

    Examples
    --------
    >>> check_positive_int("seeds", 3)
    >>> check_positive_int("max_epochs", None, optional=True)
    """
    if optional and value is None:
        return
    if value is None or int(value) != value or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value}")


def format_mean_sd(values: Sequence[float] | np.ndarray | pd.Series, digits: int = 3) -> str:
    """``"mean ± sd"`` of the finite values (sample sd, ``ddof=1``); ``"mean"`` alone for one value.

    Non-finite values are left out and counted, e.g. ``"0.812 ± 0.041 (1 nan)"``; no finite value gives
    ``"n/a"``.

    Examples
    --------
    >>> format_mean_sd([0.5, 0.7])
    '0.600 ± 0.141'
    >>> format_mean_sd([2.0])
    '2.000'
    """
    arr = np.asarray(values, dtype=np.float64).ravel()
    finite = arr[np.isfinite(arr)]
    n_bad = arr.size - finite.size
    if finite.size == 0:
        return "n/a"
    text = f"{finite.mean():.{digits}f}"
    if finite.size > 1:
        text += f" ± {finite.std(ddof=1):.{digits}f}"
    if n_bad:
        text += f" ({n_bad} nan)"
    return text


def summarise(df: pd.DataFrame, by: Sequence[str], metrics: Sequence[str]) -> pd.DataFrame:
    """Mean, sample standard deviation and count of each metric per group (non-finite values skipped).

    Parameters
    ----------
    df
        Per-run results.
    by
        Grouping columns (e.g. ``["method", "rho"]``); groups keep their order of first appearance.
    metrics
        Numeric columns to summarise.

    Returns
    -------
    pandas.DataFrame
        One row per group with columns ``{metric}_mean``, ``{metric}_sd`` and ``n_runs``.
    """
    rows = []
    for key, group in df.groupby(list(by), sort=False):
        key = key if isinstance(key, tuple) else (key,)
        row: dict[str, Any] = dict(zip(by, key, strict=True))
        row["n_runs"] = len(group)
        for m in metrics:
            vals = pd.to_numeric(group[m], errors="coerce").to_numpy(dtype=np.float64)
            vals = vals[np.isfinite(vals)]
            row[f"{m}_mean"] = float(vals.mean()) if vals.size else math.nan
            row[f"{m}_sd"] = float(vals.std(ddof=1)) if vals.size > 1 else math.nan
        rows.append(row)
    return pd.DataFrame(rows)


def markdown_table(
    df: pd.DataFrame,
    by: Sequence[str],
    metrics: Sequence[str],
    digits: int | Mapping[str, int] = 3,
    labels: Mapping[str, str] | None = None,
    formats: Mapping[str, Callable[[pd.Series], str]] | None = None,
) -> str:
    """Markdown table of ``mean ± sd`` over seeds for each metric, one row per group.

    Parameters
    ----------
    df
        Per-run results (one row per method, setting and seed).
    by
        Grouping columns shown first (e.g. ``["method", "rho"]``).
    metrics
        Metric columns, shown as ``mean ± sd`` (sample sd over the runs of the group).
    digits
        Decimals, for all metrics or per metric (default 3).
    labels
        Optional column headers for the ``by`` and metric columns.
    formats
        Optional cell text of a metric from the group's values (numeric), in place of ``mean ± sd``; for
        values such as p-values that a mean summarises badly.

    Returns
    -------
    str
        A GitHub-flavoured markdown table; the last column is the number of runs (seeds) per group.
    """
    labels = dict(labels or {})
    formats = dict(formats or {})
    header = [labels.get(c, c) for c in by] + [labels.get(m, m) for m in metrics] + ["n seeds"]
    rows = []
    for key, group in df.groupby(list(by), sort=False):
        key = key if isinstance(key, tuple) else (key,)
        cells = [str(k) for k in key]
        for m in metrics:
            values = pd.to_numeric(group[m], errors="coerce")
            if m in formats:
                cells.append(formats[m](values))
                continue
            d = digits.get(m, 3) if isinstance(digits, Mapping) else digits
            cells.append(format_mean_sd(values, d))
        cells.append(str(len(group)))
        rows.append(cells)
    return "\n".join(markdown_rows(header, rows))


@contextlib.contextmanager
def quiet_training_logs(level: int = logging.WARNING) -> Iterator[None]:
    """Raise the level of the lightning and scvi-tools loggers for the duration of a benchmark.

    The previous levels (and ``scvi.settings.verbosity``) are restored on exit. The
    :class:`~scsparse.nn.NoActiveFactorWarning` is silenced too: the benchmarks that read factors report each
    fit's active factors in their results (and the summaries say when none is left); speed and scale runs
    are timings, where the factors do not matter.
    """
    names = ("lightning", "lightning.pytorch", "lightning.fabric", "scvi", "pytorch_lightning")
    loggers = [logging.getLogger(n) for n in names]
    saved = [lg.level for lg in loggers]
    from scsparse.train import clean_training_output

    try:
        import scvi

        saved_verbosity = scvi.settings.verbosity
        scvi.settings.verbosity = level
    except ImportError:  # pragma: no cover
        scvi = None
        saved_verbosity = None
    for lg in loggers:
        lg.setLevel(level)
    try:
        with (
            clean_training_output([r".*smaller than the logging interval.*", r".*does not have many workers.*"]),
            warnings.catch_warnings(),
        ):
            warnings.filterwarnings("ignore", category=NoActiveFactorWarning)
            yield
    finally:
        for lg, lvl in zip(loggers, saved, strict=True):
            lg.setLevel(lvl)
        if scvi is not None:
            scvi.settings.verbosity = saved_verbosity


@contextlib.contextmanager
def cpu_threads(n_threads: int | None) -> Iterator[None]:
    """The CPU threads of torch and of the native pools of the other methods (BLAS, OpenMP) inside the block.

    torch (and numba) through :func:`scsparse.utils.torch_threads`, the BLAS and OpenMP pools of NMF, cNMF, MOFA+
    and PCA through ``threadpoolctl``; both are restored after the block.

    Parameters
    ----------
    n_threads
        Threads per pool; ``None`` leaves the libraries' defaults.

    Examples
    --------
    >>> import torch
    >>> with cpu_threads(1):
    ...     torch.get_num_threads()
    1
    """
    from threadpoolctl import threadpool_limits

    with torch_threads(n_threads), threadpool_limits(n_threads):
        yield


# ---------------------------------------------------------------------------------------------- document benchmarks
def best_beta(df: pd.DataFrame) -> float | None:
    """The beta of the beta-VAE rows of ``df`` with the lowest mean held-out NLL (``None`` without such rows)."""
    bv = df[df["method"] == "beta-VAE"]
    if bv.empty:
        return None
    return float(bv.groupby("beta")["heldout_nll"].mean().idxmin())


def best_beta_rows(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with the beta-VAE reduced to the beta of lowest mean held-out NLL (the paper's Table 1 convention)."""
    best = best_beta(df)
    if best is None:
        return df
    return df[(df["method"] != "beta-VAE") | (df["beta"] == best)]


def method_label(df: pd.DataFrame, method: str) -> str:
    """``"beta-VAE (beta = b)"`` for the beta-VAE rows of ``df`` (one beta), else ``method``."""
    if method != "beta-VAE":
        return method
    betas = df.loc[df["method"] == method, "beta"].unique()
    return f"beta-VAE (beta = {betas[0]:g})" if len(betas) == 1 else method


def run_labels(df: pd.DataFrame) -> list[str]:
    """One label per row: the method, with the beta for the beta-VAE (``"beta-VAE (beta=2)"``)."""
    return [m if m != "beta-VAE" else f"beta-VAE (beta={b:g})" for m, b in zip(df["method"], df["beta"], strict=True)]


def paper_comparison_table(
    df: pd.DataFrame,
    paper: Mapping[str, Sequence[float]],
    setting_col: str | None = None,
    settings: Sequence[Any] = (None,),
    headers: Sequence[str] = ("NLL",),
) -> str:
    """Markdown table: our ``mean ± sd`` held-out NLL per setting (best beta only) beside the paper's numbers.

    Parameters
    ----------
    df
        Per-run results (``method``, ``beta``, ``seed``, ``heldout_nll`` and ``setting_col``).
    paper
        Method -> the paper's numbers, one per setting.
    setting_col, settings, headers
        Column holding the setting, its values in table order, and their column headers.
    """
    best = best_beta_rows(df)
    rows = []
    for method in dict.fromkeys(best["method"]):
        sub = best[best["method"] == method]
        ours = [format_mean_sd((sub if s is None else sub[sub[setting_col] == s])["heldout_nll"], 1) for s in settings]
        ref = paper.get(method)
        theirs = [f"{v:.1f}" for v in ref] if ref else ["n/a"] * len(headers)
        rows.append([method_label(best, method), *ours, *theirs, sub["seed"].nunique()])
    header = ["method", *(f"ours: {h}" for h in headers), *(f"paper: {h}" for h in headers), "n seeds"]
    return "\n".join(markdown_rows(header, rows))


def beaten_by(df: pd.DataFrame) -> str:
    """Which runs (method, beta) have a lower mean held-out NLL than the SparseVAE, and by how much."""
    means = df["heldout_nll"].groupby(run_labels(df), sort=False).mean()
    if "SparseVAE" not in means.index:
        return "no SparseVAE in this run"
    sv = float(means["SparseVAE"])
    better = means[means < sv].sort_values()
    if better.empty:
        return "no method has a lower mean NLL"
    return "lower mean NLL than SparseVAE: " + ", ".join(f"{m} by {sv - v:.2f} nats" for m, v in better.items())


def verdict_best(df: pd.DataFrame, setting_col: str | None = None) -> tuple[bool, str]:
    """Whether the SparseVAE's mean held-out NLL is below every other method's (every beta), per setting.

    Returns
    -------
    tuple
        ``(met, detail)`` with ``detail`` giving, per setting, the SparseVAE's mean and the best other one.
    """
    parts: list[str] = []
    met = True
    settings = [None] if setting_col is None else list(dict.fromkeys(df[setting_col]))
    for s in settings:
        sub = df if s is None else df[df[setting_col] == s]
        means = sub["heldout_nll"].groupby(run_labels(sub), sort=False).mean().sort_values()
        if "SparseVAE" not in means.index:
            return False, "no SparseVAE in this run"
        others = means.drop("SparseVAE")
        sv = float(means["SparseVAE"])
        prefix = "" if s is None else f"{setting_col} = {s}: "
        if others.empty:
            met = False
            parts.append(f"{prefix}SparseVAE {sv:.2f}, no other method in this run")
            continue
        met &= sv < float(others.iloc[0])
        parts.append(f"{prefix}SparseVAE {sv:.2f} vs best other {others.index[0]} {float(others.iloc[0]):.2f}")
    return met, "; ".join(parts)


def unigram_lines(df: pd.DataFrame, tolerance: float = 1.0) -> list[str]:
    """The unigram reference beside the methods: which ones are within ``tolerance`` nats of it (collapsed)."""
    if "unigram_nll" not in df or df["unigram_nll"].isna().all():
        return []
    ref = float(df["unigram_nll"].mean())
    means = df["heldout_nll"].groupby(run_labels(df), sort=False).mean()
    near = [m for m, v in means.items() if v > ref - tolerance]
    text = (
        f"- Reference without latent variables (unigram multinomial with the training word frequencies, same "
        f"documents): {ref:.1f}."
    )
    if near:
        text += (
            f" Within {tolerance:g} nat of it (or above): {', '.join(near)} -- these learned (almost) nothing "
            "from the documents in this run (posterior collapse or too little training)."
        )
    return [text]


def run_settings(
    defaults: Mapping[str, Any], quick_overrides: Mapping[str, Any], quick: bool, **counts: int | None
) -> dict[str, Any]:
    """Settings of a run: ``defaults``, then ``quick_overrides`` if ``quick``, then the ``counts`` not ``None``.

    Each count is checked (:func:`check_positive_int`, in the order given) and stored as an ``int``.

    Examples
    --------
    >>> run_settings({"n_hidden": 400, "lr": 0.1}, {"n_hidden": 64}, True, n_hidden=None, max_epochs=3)
    {'n_hidden': 64, 'lr': 0.1, 'max_epochs': 3}
    """
    cfg = dict(defaults)
    if quick:
        cfg.update(quick_overrides)
    for key, value in counts.items():
        if value is not None:
            check_positive_int(key, value)
            cfg[key] = int(value)
    return cfg


def resolve_settings(
    defaults: Mapping[str, Any],
    quick_overrides: Mapping[str, Any],
    quick: bool,
    max_epochs: int | None,
    **overrides: Any,
) -> dict[str, Any]:
    """Settings of a document benchmark: :func:`run_settings` with ``max_epochs``, then non-``None`` ``overrides``."""
    cfg = run_settings(defaults, quick_overrides, quick, max_epochs=max_epochs)
    for key, value in overrides.items():
        if value is not None:
            cfg[key] = tuple(value) if key == "betas" else value
    for key in ("n_is_samples", "vocab_size"):
        check_positive_int(key, cfg[key])
    for key in ("n_docs", "n_eval_docs"):
        if cfg[key] is not None and (int(cfg[key]) != cfg[key] or cfg[key] < 2):
            raise ValueError(f"{key} must be an integer >= 2 or None, got {cfg[key]}")
    if not cfg["betas"] or any(b <= 0 for b in cfg["betas"]):
        raise ValueError(f"betas must be positive numbers, got {cfg['betas']}")
    if not cfg["lambda0"] > cfg["lambda1"] > 0:
        raise ValueError(
            f"lambda1 must lie in (0, lambda0 = {cfg['lambda0']:g}) (the slab wider than the spike), "
            f"got {cfg['lambda1']}"
        )
    return cfg


def reduced_settings(cfg: Mapping[str, Any], defaults: Mapping[str, Any]) -> list[str]:
    """Summary text for each setting of a run that differs from the paper's / full default in ``defaults``."""
    return [
        f"{k} = {cfg[k]!r} (paper / full default: {defaults[k]!r})"
        for k in ("max_epochs", "n_docs", "vocab_size", "n_hidden", "n_is_samples", "n_eval_docs", "betas")
        if cfg[k] != defaults[k]
    ]


def check_corpus(corpus: TextCorpus, n_latent: int) -> None:
    """Raise a ``ValueError`` when the corpus is too small for ``n_latent`` factors (NMF needs ``K <= G, N``)."""
    if corpus.n_words < n_latent or corpus.n_docs < max(n_latent, 10):
        raise ValueError(
            f"The corpus has {corpus.n_docs} documents x {corpus.n_words} words: fewer words than the {n_latent} "
            f"factors, or fewer than max({n_latent}, 10) documents. Pass a larger corpus (source=...) or a larger "
            "vocab_size."
        )


def proc_status_mb(field: str) -> float:
    """A memory field of this process's ``/proc/self/status`` (``"VmRSS"``, ``"VmHWM"``) in MB; ``nan`` off Linux."""
    status = Path("/proc/self/status")
    if status.is_file():
        for line in status.read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024  # kB
    return math.nan


def variable_genes(adata: AnnData, n_genes: int, batch_key: str | None = None) -> AnnData:
    """The ``n_genes`` most variable genes of ``adata`` among genes seen in >= 3 cells, as a new AnnData.

    :func:`scanpy.pp.highly_variable_genes` with ``flavor="seurat_v3"`` on ``layers["counts"]`` (per batch with
    ``batch_key``).
    """
    import scanpy as sc

    adata = adata[:, np.asarray((adata.layers["counts"] > 0).sum(0)).ravel() >= 3].copy()
    with torch_threads(None):  # numba's OpenMP layer resets torch's thread count
        hvg = sc.pp.highly_variable_genes(
            adata, layer="counts", flavor="seurat_v3", n_top_genes=n_genes, batch_key=batch_key, inplace=False
        )
    return adata[:, np.asarray(hvg["highly_variable"], dtype=bool)].copy()


def quick_subsample(adata: AnnData, n_genes: int, seed: int = 0, n_cells: int = 300) -> AnnData:
    """The data of a quick smoke run: ``n_cells`` cells drawn with ``seed``, then their ``n_genes`` most variable
    genes (:func:`variable_genes`, without batches: about 100 cells per batch are too few for per-batch loess).
    """
    rng = np.random.default_rng(seed)
    adata = adata[np.sort(rng.choice(adata.n_obs, size=min(n_cells, adata.n_obs), replace=False))].copy()
    return variable_genes(adata, min(n_genes, adata.n_vars))
