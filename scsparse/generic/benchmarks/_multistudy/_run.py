"""Multi-study benchmark: shared and study-specific programmes of simulated counts.

:func:`run_multistudy` simulates three studies with shared and study-specific nonlinear programmes
(:func:`scsparse.data._simulate_multistudy.simulate_multistudy`) and compares the multi-study sparse VAE with
two single-study sparse VAE baselines on support recovery. The real-data checks of the multi-study model are
in ``_multistudy_real``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from scsparse.data import MultiStudyData, simulate_multistudy
from scsparse.results import match_pairs
from scsparse.utils import check_integer, torch_threads

from .. import _report as report
from .._fits import paper_model_kwargs, train_fixed_epochs
from .._process import quiet_training_logs
from .._restarts import best_of_restarts
from ._scoring import (
    EstimatedBlock,
    MultiStudyFit,
    block_correlation,
    score_multistudy,
    true_support,
)
from ._settings import TARGET_FSCORE
from ._summary import summary_lines

if TYPE_CHECKING:  # pragma: no cover
    from anndata import AnnData

__all__ = [
    "MULTISTUDY_METHODS",
    "MULTISTUDY_RESULT_COLUMNS",
    "MULTISTUDY_SETTINGS",
    "QUICK_MULTISTUDY_SETTINGS",
    "fit_mssvae",
    "fit_sparsevae_batch",
    "fit_sparsevae_per_study",
    "run_multistudy",
]

#: Columns of ``results.csv`` of :func:`run_multistudy`, in order.
MULTISTUDY_RESULT_COLUMNS: tuple[str, ...] = (
    "method",
    "seed",
    "shared_fscore",
    "specific_fscore",
    "factor_corr",
    "n_active_shared",
    "n_active_specific",
    "fit_seconds",
)

#: Full-mode settings of :func:`run_multistudy`: data (``simulate_*``), models and training.
MULTISTUDY_SETTINGS: dict[str, Any] = {
    "simulate": {
        "n_studies": 3,
        "n_cells_per_study": 500,
        "n_genes": 200,
        "n_shared": 5,
        "n_specific": 2,
        "genes_per_programme": 20,
        "overlap": 2,
        "library_size": 2000.0,
        "likelihood": "nb",
        "theta": 10.0,
    },
    "n_latent_shared": 8,
    "n_latent_specific": 4,
    "gene_likelihood": "nb",
    "n_hidden": 16,
    "n_layers": 1,
    "lambda0": 10.0,
    "lambda1": 1.0,
    "dropout_rate": 0.1,
    "w_init": 0.1,
    # one network for every method: MultiStudySparseVAE's default (SparseVAE's default has the bias)
    "first_bias": False,
    "encode_study": False,  # MultiStudySparseVAE only (its default)
    "lr": 0.01,
    "batch_size": 256,
    "max_epochs": 200,
    "em_every": "step",
    "n_restarts": 4,
}

#: Settings of ``quick=True`` (a smoke run of about a minute): smaller data, fewer epochs.
QUICK_MULTISTUDY_SETTINGS: dict[str, Any] = {
    **MULTISTUDY_SETTINGS,
    "simulate": {
        **MULTISTUDY_SETTINGS["simulate"],
        "n_cells_per_study": 120,
        "n_genes": 90,
        "genes_per_programme": 8,
        "overlap": 1,
    },
    "batch_size": 64,
    "max_epochs": 30,
    "n_restarts": 1,
}


#: A method: ``fit_fn(data, adata, settings, seed) -> MultiStudyFit``.
MultiStudyFitFn = Callable[[MultiStudyData, "AnnData", Mapping[str, Any], int], MultiStudyFit]


def _fit_best(make: Callable[[int], Any], settings: Mapping[str, Any], seed: int) -> Any:
    """Best of ``settings["n_restarts"]`` trained fits of ``make(seed)`` (:func:`._restarts.best_of_restarts`)."""

    def fit(s: int) -> Any:
        model = make(s)
        train_fixed_epochs(model, settings)
        return model

    return best_of_restarts(fit, seed, int(settings.get("n_restarts", 1)))


def _specific_names(data: MultiStudyData, study: str) -> list[str]:
    return [f"{study}_{k}" for k in range(data.n_specific[study])]


def _shared_names(data: MultiStudyData) -> list[str]:
    return [f"shared_{k}" for k in range(data.n_shared)]


def fit_mssvae(data: MultiStudyData, adata: AnnData, settings: Mapping[str, Any], seed: int) -> MultiStudyFit:
    """(a) :class:`~scsparse.model.MultiStudySparseVAE` with the study as study key.

    Blocks: the shared block (all cells, compared with the shared programmes, scored as shared) and each
    study's specific block (that study's cells, compared with that study's specific programmes, scored as
    specific).
    """
    adata = adata.copy()
    t0 = time.perf_counter()
    model = _fit_mssvae_best(adata, settings, seed, encode_study=settings["encode_study"])
    fit_seconds = time.perf_counter() - t0
    return MultiStudyFit(blocks=_mssvae_blocks(data, model, adata), fit_seconds=fit_seconds, extra={"model": model})


def _fit_mssvae_best(adata: AnnData, settings: Mapping[str, Any], seed: int, encode_study: bool) -> Any:
    """Set up ``adata`` (study key ``"study"``) and keep the best of the restarts of (a)'s model on it."""
    from scsparse.model import MultiStudySparseVAE

    MultiStudySparseVAE.setup_anndata(adata, study_key="study", layer="counts")
    return _fit_best(
        lambda sd: MultiStudySparseVAE(
            adata,
            n_latent_shared=settings["n_latent_shared"],
            n_latent_specific=settings["n_latent_specific"],
            seed=sd,
            encode_study=encode_study,
            **paper_model_kwargs(settings),
        ),
        settings,
        seed,
    )


def fit_mssvae_query(
    data: MultiStudyData, adata: AnnData, settings: Mapping[str, Any], seed: int, freeze_encoder: bool = True
) -> MultiStudyFit:
    """(d) The last study mapped as a query: a reference on the other studies, then ``load_query_data``.

    The reference :class:`~scsparse.model.MultiStudySparseVAE` (encoder without the study, as query mapping
    needs) is fitted on every study but the last; the last study's cells then train only their new specific
    block (:meth:`~scsparse.model.MultiStudySparseVAE.load_query_data`), the reference fixed. Scored as (a):
    the shared block on all cells (the query's shared factors come from the reference's encoder), each
    study's block on its cells. ``freeze_encoder=False`` lets the reference's encoder adapt to the query
    (``functools.partial(fit_mssvae_query, freeze_encoder=False)`` as a method).
    """
    from scsparse.model import MultiStudySparseVAE

    adata = adata.copy()
    is_query = (adata.obs["study"].astype(str) == str(data.studies[-1])).to_numpy()
    ref, query = adata[~is_query].copy(), adata[is_query].copy()
    t0 = time.perf_counter()
    reference = _fit_mssvae_best(ref, settings, seed, encode_study=False)
    model = _fit_best(
        lambda sd: MultiStudySparseVAE.load_query_data(
            query, reference, n_latent_specific=settings["n_latent_specific"], seed=sd, freeze_encoder=freeze_encoder
        ),
        settings,
        seed,
    )
    fit_seconds = time.perf_counter() - t0
    return MultiStudyFit(blocks=_mssvae_blocks(data, model, adata), fit_seconds=fit_seconds, extra={"model": model})


def _mssvae_blocks(data: MultiStudyData, model: Any, adata: AnnData) -> list[EstimatedBlock]:
    """The shared block (all cells) and each study's specific block (its cells) of a multi-study model."""
    z = np.asarray(model.get_latent_representation(adata, kind="all"), dtype=np.float64)
    blocks = [
        EstimatedBlock(
            cells=np.arange(adata.n_obs),
            z=z[:, model._columns("shared")],
            W=model.get_loadings("shared").to_numpy(dtype=np.float64),
            pip=model.get_inclusion_probabilities("shared").to_numpy(dtype=np.float64),
            candidates=_shared_names(data),
            kind="shared",
        )
    ]
    for s in data.studies:
        cells = data.study_indices(s)
        blocks.append(
            EstimatedBlock(
                cells=cells,
                z=z[cells][:, model._columns(s)],
                W=model.get_loadings(s).to_numpy(dtype=np.float64),
                pip=model.get_inclusion_probabilities(s).to_numpy(dtype=np.float64),
                candidates=_specific_names(data, s),
                kind="specific",
            )
        )
    return blocks


def fit_sparsevae_batch(data: MultiStudyData, adata: AnnData, settings: Mapping[str, Any], seed: int) -> MultiStudyFit:
    """(b) One :class:`~scsparse.model.SparseVAE` on all cells, the study as batch covariate.

    ``n_latent = K_S + M K_m`` (the multi-study model's total). One block: all columns, all cells, compared
    with every true programme (shared ones on all cells, each specific one on its study's cells).
    """
    from scsparse.model import SparseVAE

    adata = adata.copy()
    n_latent = int(settings["n_latent_shared"]) + len(data.studies) * int(settings["n_latent_specific"])
    t0 = time.perf_counter()
    SparseVAE.setup_anndata(adata, layer="counts", batch_key="study")
    model = _fit_best(
        lambda sd: SparseVAE(adata, n_latent=n_latent, seed=sd, **paper_model_kwargs(settings)), settings, seed
    )
    fit_seconds = time.perf_counter() - t0
    block = EstimatedBlock(
        cells=np.arange(adata.n_obs),
        z=np.asarray(model.get_latent_representation(), dtype=np.float64),
        W=model.get_loadings().to_numpy(dtype=np.float64),
        pip=model.get_inclusion_probabilities().to_numpy(dtype=np.float64),
        candidates=list(data.programme_names),
        kind=None,
    )
    return MultiStudyFit(blocks=[block], fit_seconds=fit_seconds, extra={"model": model})


def fit_sparsevae_per_study(
    data: MultiStudyData, adata: AnnData, settings: Mapping[str, Any], seed: int
) -> MultiStudyFit:
    """(c) One :class:`~scsparse.model.SparseVAE` per study, ``n_latent = K_S + K_m`` each.

    One block per study: that model's columns on that study's cells, compared with the shared programmes and
    that study's specific programmes. ``fit_seconds`` is the sum over the studies.
    """
    from scsparse.model import SparseVAE

    n_latent = int(settings["n_latent_shared"]) + int(settings["n_latent_specific"])
    blocks, total = [], 0.0
    for m, s in enumerate(data.studies):
        cells = data.study_indices(s)
        sub = adata[cells].copy()
        t0 = time.perf_counter()
        SparseVAE.setup_anndata(sub, layer="counts")
        model = _fit_best(
            lambda sd, sub=sub: SparseVAE(sub, n_latent=n_latent, seed=sd, **paper_model_kwargs(settings)),
            settings,
            seed * 100 + m,
        )
        total += time.perf_counter() - t0
        blocks.append(
            EstimatedBlock(
                cells=cells,
                z=np.asarray(model.get_latent_representation(), dtype=np.float64),
                W=model.get_loadings().to_numpy(dtype=np.float64),
                pip=model.get_inclusion_probabilities().to_numpy(dtype=np.float64),
                candidates=_shared_names(data) + _specific_names(data, s),
                kind=None,
            )
        )
    return MultiStudyFit(blocks=blocks, fit_seconds=total)


#: Methods compared, as ``(name, fit_fn)`` pairs.
MULTISTUDY_METHODS: list[tuple[str, MultiStudyFitFn]] = [
    ("MultiStudySparseVAE", fit_mssvae),
    ("SparseVAE (study as batch)", fit_sparsevae_batch),
    ("SparseVAE (per study)", fit_sparsevae_per_study),
    ("MultiStudySparseVAE (last study as query)", fit_mssvae_query),
]


# ---------------------------------------------------------------------------------------------- outputs


def _support_panel(data: MultiStudyData, fit: MultiStudyFit) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """True support and the matched estimated ``|W| * [p* >= 0.5]`` of the multi-study model, side by side."""
    truth_cols, est_cols, labels = [], [], []
    for block in fit.blocks:
        C = block_correlation(data, block)
        rows, cols = match_pairs(C)
        order = np.argsort(cols)
        sel = np.abs(block.W) * (block.pip >= 0.5)
        for r, c in zip(rows[order], cols[order], strict=True):
            truth_cols.append(true_support(data, block.candidates[c]))
            est_cols.append(sel[:, r])
            labels.append(block.candidates[c])
        for r in sorted(set(range(block.z.shape[1])) - set(rows.tolist())):
            truth_cols.append(np.zeros(data.n_genes, dtype=bool))
            est_cols.append(sel[:, r])
            labels.append("extra")
    return np.column_stack(truth_cols), np.column_stack(est_cols), labels


def _write_figure(out_dir: Path, df: pd.DataFrame, panel: tuple[np.ndarray, np.ndarray, list[str]] | None) -> Path:
    """Strip/box plots of the metrics per method, and seed 0's support of the multi-study model."""
    methods = list(dict.fromkeys(df["method"]))
    fig = report.new_figure((15.0, 9.5))
    grid = fig.add_gridspec(2, 3)
    colours = ["tab:blue", "tab:orange", "tab:green", "tab:red"]
    rng = np.random.default_rng(0)
    metrics = [
        ("shared_fscore", "shared-support F-score"),
        ("specific_fscore", "specific-support F-score"),
        ("factor_corr", "mean |corr| matched factors"),
    ]
    for i, (metric, title) in enumerate(metrics):
        ax = fig.add_subplot(grid[0, i])
        vals = [df.loc[df["method"] == m, metric].to_numpy(dtype=np.float64) for m in methods]
        vals = [v[np.isfinite(v)] for v in vals]
        for m_i, v in enumerate(vals):
            c = colours[m_i % len(colours)]
            if v.size:
                ax.boxplot(
                    [v],
                    positions=[m_i],
                    widths=0.5,
                    patch_artist=True,
                    boxprops={"facecolor": c, "alpha": 0.3},
                    medianprops={"color": c},
                    showfliers=False,
                )
                ax.scatter(m_i + rng.uniform(-0.1, 0.1, v.size), v, color=c, s=22, zorder=3)
        ax.set_xticks(range(len(methods)), [m.replace(" (", "\n(") for m in methods], fontsize=8)
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(title)
        if metric != "factor_corr":
            ax.axhline(TARGET_FSCORE, color="grey", ls="--", lw=1)
    if panel is not None:
        truth, est, labels = panel
        for j, (mat, title) in enumerate([(truth.astype(float), "true support"), (est, "estimated |W| (p* >= 0.5)")]):
            ax = fig.add_subplot(grid[1, 0] if j == 0 else grid[1, 1:])
            im = ax.imshow(mat, aspect="auto", cmap="Greys" if j == 0 else "viridis", interpolation="nearest")
            ax.set_xticks(range(len(labels)), labels, rotation=90, fontsize=7)
            ax.set_ylabel("gene")
            ax.set_title(f"{methods[0]}, seed 0: {title}", fontsize=10)
            if j == 1:
                fig.colorbar(im, ax=ax, shrink=0.8, label="|w|")
    fig.suptitle("Multi-study simulation: recovery of shared and study-specific programmes")
    return report.save_figure(fig, out_dir / "multistudy.png")


# ---------------------------------------------------------------------------------------------- runner
def run_multistudy(
    out: str | os.PathLike[str],
    *,
    seeds: int | None = None,
    quick: bool = False,
    max_epochs: int | None = None,
    methods: Sequence[tuple[str, MultiStudyFitFn]] | None = None,
    settings: Mapping[str, Any] | None = None,
    n_threads: int | None = 1,
    verbose: bool = True,
) -> pd.DataFrame:
    """Recover shared and study-specific programmes of simulated multi-study counts.

    For every seed ``s``: simulate three studies (:func:`~scsparse.data._simulate_multistudy.simulate_multistudy`
    with ``seed=s``; 5 shared and 2 specific programmes per study), fit every method and score it with
    :func:`score_multistudy`.

    Parameters
    ----------
    out
        Output folder; receives ``results.csv``, ``summary.md`` and ``multistudy.png``.
    seeds
        Number of seeds (datasets): ``0 .. seeds - 1`` (default 5; quick: 2).
    quick
        A smoke run (:data:`QUICK_MULTISTUDY_SETTINGS`: 120 cells per study, 90 genes, programmes of 8 genes,
        minibatches of 64, 30 epochs; about 15 s per seed on one CPU thread).
    max_epochs
        Epochs, overriding the settings' (full mode, :data:`MULTISTUDY_SETTINGS`: 200 epochs, minibatches of
        256, a decoder with one hidden layer of 16 units; about 2 minutes per seed on one CPU thread).
    methods
        ``(name, fit_fn)`` pairs; default :data:`MULTISTUDY_METHODS` ((a) the multi-study sparse VAE, (b) a
        sparse VAE with the study as batch, (c) a sparse VAE per study). The first is the method judged
        against the targets.
    settings
        Overrides of the settings (top-level keys; ``"simulate"`` is merged key by key).
    n_threads
        Torch intra-op threads while fitting (restored afterwards); ``None`` leaves the setting alone.
    verbose
        Print progress and the final table.

    Returns
    -------
    pandas.DataFrame
        One row per method and seed with the columns of :data:`MULTISTUDY_RESULT_COLUMNS`.

    Examples
    --------
    >>> from scsparse.generic.benchmarks import run
    >>> df = run("multistudy", out="bench_ms", seeds=5)  # doctest: +SKIP
    """
    seeds = (2 if quick else 5) if seeds is None else seeds
    check_integer("seeds", seeds)
    if max_epochs is not None:
        check_integer("max_epochs", max_epochs)
    seeds = int(seeds)
    base = QUICK_MULTISTUDY_SETTINGS if quick else MULTISTUDY_SETTINGS
    cfg: dict[str, Any] = {**base, "simulate": dict(base["simulate"])}
    for key, value in (settings or {}).items():
        if key == "simulate":
            cfg["simulate"].update(value)
        elif key in cfg:
            cfg[key] = value
        else:
            raise ValueError(f"unknown setting {key!r}; known: {sorted(cfg)}")
    if max_epochs is not None:
        cfg["max_epochs"] = int(max_epochs)
    methods = list(MULTISTUDY_METHODS if methods is None else methods)
    if not methods:
        raise ValueError("methods must contain at least one (name, fit_fn) pair")
    out_dir = report.make_output_dir(out)
    options = report.run_options(out_dir, seeds, quick, max_epochs, epochs_used=cfg["max_epochs"],
                                 methods=[name for name, _ in methods], n_threads=n_threads)  # fmt: skip

    t_start = time.perf_counter()
    rows: list[dict[str, Any]] = []
    panel = None
    with torch_threads(n_threads), quiet_training_logs():
        prov = report.provenance("multistudy", options)
        for s in range(seeds):
            data = simulate_multistudy(**cfg["simulate"], seed=s)
            adata = data.to_anndata()
            for m_i, (name, fit_fn) in enumerate(methods):
                fit = fit_fn(data, adata, cfg, s)
                scores = score_multistudy(data, fit)
                rows.append({"method": name, "seed": s, **scores, "fit_seconds": float(fit.fit_seconds)})
                if s == 0 and m_i == 0:
                    panel = _support_panel(data, fit)
                if verbose:
                    print(
                        f"[multistudy] {name} seed={s}: shared F={scores['shared_fscore']:.3f} "
                        f"specific F={scores['specific_fscore']:.3f} corr={scores['factor_corr']:.3f} "
                        f"active {scores['n_active_shared']:g}+{scores['n_active_specific']:g} "
                        f"({fit.fit_seconds:.1f} s)",
                        flush=True,
                    )
    total = time.perf_counter() - t_start
    df = pd.DataFrame(rows)
    report.write_results(df, out_dir, MULTISTUDY_RESULT_COLUMNS)
    df = df.loc[:, list(MULTISTUDY_RESULT_COLUMNS)]
    baselines = [name for name, fn in MULTISTUDY_METHODS if fn in (fit_sparsevae_batch, fit_sparsevae_per_study)]
    report.write_summary(
        out_dir,
        summary_lines(
            df,
            prov,
            settings=cfg,
            seeds=seeds,
            quick=quick,
            total_seconds=total,
            ours_name=MULTISTUDY_METHODS[0][0],
            baselines=baselines,
        ),
    )
    _write_figure(out_dir, df, panel)
    files = [out_dir / "results.csv", "summary.md", "multistudy.png"]
    return report.finish_run(df, out_dir, report.wrote_line("multistudy", files, seconds=total), verbose=verbose)
