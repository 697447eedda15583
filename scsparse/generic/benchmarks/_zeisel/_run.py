"""Zeisel benchmark of Moran et al. (2022), Table 4: predicting cell types from the learned factors.

Two settings on the same cells, genes, splits and seeds:

- ``"normalised"`` (the paper's): quantile-normalised log expression of the most variable genes, Gaussian
  likelihood; the array models of :mod:`scsparse.generic.models` (SparseVAE, VAE, NMF, VSC, OI-VAE).
- ``"counts"``: the raw UMI counts of the same genes with count likelihoods: :class:`scsparse.model.SparseVAE`
  (negative binomial, the scvi-tools model), :class:`scvi.model.SCVI` (its dense counterpart) and NMF
  (generalised KL, the Poisson likelihood).

Every model is fitted on the training cells only, without the labels; the training and test cells are
then encoded, and a multinomial logistic regression fitted on the training cells' factors predicts the
test cells' level-1 class (held-out accuracy and macro-F1).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from scsparse.tl import predict_labels
from scsparse.utils import check_integer, torch_threads

from .. import _report as report
from .._fits import scvi_tools_fit
from .._process import quiet_training_logs
from ._prep import prepare_zeisel, split_cells
from ._settings import (
    DEFAULT_SEEDS,
    GENES_REFERENCE,
    PAPER_ACCURACY,
    TARGET_ACCURACY,
    VSC_ACTIVE_FRACTION,
    ZEISEL_SETTINGS,
)
from ._summary import results_table, summary_lines

if TYPE_CHECKING:  # pragma: no cover
    from anndata import AnnData

__all__ = [
    "METHODS",
    "PAPER_ACCURACY",
    "RESULT_COLUMNS",
    "SETTINGS",
    "ZEISEL_SETTINGS",
    "FactorOutput",
    "classify_cell_types",
    "run_zeisel",
]

#: Columns of ``results.csv``, in order.
RESULT_COLUMNS: tuple[str, ...] = (
    "setting",
    "method",
    "seed",
    "accuracy",
    "macro_f1",
    "n_active",
    "fit_seconds",
    "epochs",
    "n_train",
    "n_test",
    "n_genes",
)

#: The two settings: ``"normalised"`` (the paper's, Gaussian) and ``"counts"`` (raw UMI, count likelihoods).
SETTINGS: tuple[str, ...] = ("normalised", "counts")


#: Quick mode: cells, genes, epochs.
QUICK_CELLS, QUICK_GENES, QUICK_EPOCHS = 600, 200, 2


# ---------------------------------------------------------------------------------------------- metric
def classify_cell_types(
    f_train: np.ndarray, y_train: np.ndarray, f_test: np.ndarray, y_test: np.ndarray
) -> dict[str, float]:
    """Held-out accuracy and macro-F1 of a multinomial logistic regression on the factors.

    The factors are standardised with the training cells' mean and sd; the regression is scikit-learn's
    ``LogisticRegression`` (lbfgs, multinomial, L2 with ``C = 1``), fitted on the training cells.

    Examples
    --------
    >>> import numpy as np
    >>> f = np.r_[np.zeros((20, 1)), np.ones((20, 1))] + 0.01 * np.arange(40)[:, None]
    >>> y = np.array(["a"] * 20 + ["b"] * 20)
    >>> classify_cell_types(f[::2], y[::2], f[1::2], y[1::2])["accuracy"]
    1.0
    """
    from sklearn.metrics import accuracy_score, f1_score

    pred = predict_labels(f_train, y_train, f_test)
    return {
        "accuracy": float(accuracy_score(y_test, pred)),
        "macro_f1": float(f1_score(y_test, pred, average="macro")),
    }


# ---------------------------------------------------------------------------------------------- methods
@dataclass(eq=False)
class FactorOutput:
    """Factors of the training and test cells from one fitted method.

    Attributes
    ----------
    f_train, f_test
        Factors (posterior means / codes), shapes ``(n_train, K)`` and ``(n_test, K)``.
    fit_seconds
        Wall-clock seconds to build and train the model.
    n_active
        Active factors where the method defines them (``nan`` otherwise).
    """

    f_train: np.ndarray
    f_test: np.ndarray
    fit_seconds: float
    n_active: float = math.nan


#: A method: ``fit_fn(x_train, x_test, epochs, seed, settings) -> FactorOutput``.
FitFn = Callable[[np.ndarray, np.ndarray, int, int, dict[str, Any]], FactorOutput]


def _fit_array_model(model: Any, x_train: np.ndarray, x_test: np.ndarray) -> tuple[Any, FactorOutput]:
    t0 = time.perf_counter()
    model.fit(x_train)
    seconds = time.perf_counter() - t0
    return model, FactorOutput(model.transform(x_train), model.transform(x_test), seconds)


def _array_kwargs(epochs: int, seed: int, s: dict[str, Any]) -> dict[str, Any]:
    """Constructor arguments shared by the generic models of the normalised setting (Gaussian likelihood)."""
    return {
        "n_latent": s["n_latent"],
        "n_hidden": s["n_hidden"],
        "n_layers": s["n_layers"],
        "likelihood": "normal",
        "lr": s["lr"],
        "max_epochs": epochs,
        "batch_size": s["batch_size"],
        "seed": seed,
    }


def _fit_sparsevae(x_train: np.ndarray, x_test: np.ndarray, epochs: int, seed: int, s: dict[str, Any]) -> FactorOutput:
    from scsparse.generic.models import ArraySparseVAE

    model = ArraySparseVAE(
        lambda0=s["lambda0"],
        lambda1=s["lambda1"],
        decoder_kwargs={"memory_budget_mb": 2048.0},
        **_array_kwargs(epochs, seed, s),
    )
    model, out = _fit_array_model(model, x_train, x_test)
    out.n_active = float(len(model.active_factors()))
    return out


def _fit_vae(x_train: np.ndarray, x_test: np.ndarray, epochs: int, seed: int, s: dict[str, Any]) -> FactorOutput:
    from scsparse.generic.models import VAE

    model = VAE(**_array_kwargs(epochs, seed, s))
    return _fit_array_model(model, x_train, x_test)[1]


def _fit_vsc(x_train: np.ndarray, x_test: np.ndarray, epochs: int, seed: int, s: dict[str, Any]) -> FactorOutput:
    from scsparse.generic.models import VSC

    model = VSC(alpha=s["vsc_alpha"], **_array_kwargs(epochs, seed, s))
    model, out = _fit_array_model(model, x_train, x_test)
    gamma = model.spike_probabilities(x_train)
    out.n_active = float(((gamma > 0.5).mean(axis=0) >= VSC_ACTIVE_FRACTION).sum())
    return out


def _fit_oivae(x_train: np.ndarray, x_test: np.ndarray, epochs: int, seed: int, s: dict[str, Any]) -> FactorOutput:
    from scsparse.generic.models import OIVAE

    model = OIVAE(
        groups=np.arange(x_train.shape[1]),
        p=s["oivae_p"],
        lambda_=s["oivae_lambda"],
        **_array_kwargs(epochs, seed, s),
    )
    model, out = _fit_array_model(model, x_train, x_test)
    out.n_active = float(np.sum(model.active_factors()))
    return out


def _nmf_alpha(n_features: int) -> float:
    """The paper's NMF ``alpha=1`` (scikit-learn < 1.0, unscaled penalty) in current scikit-learn.

    Current scikit-learn multiplies the penalty on the codes by ``n_features`` (and on the components by
    ``n_samples``), so ``alpha_W = 1 / n_features`` gives the codes the paper's penalty.
    """
    return 1.0 / n_features


def _fit_nmf_normal(x_train: np.ndarray, x_test: np.ndarray, epochs: int, seed: int, s: dict[str, Any]) -> FactorOutput:
    from scsparse.generic.models import NMF

    model = NMF(n_components=s["n_latent"], likelihood="normal", alpha=_nmf_alpha(x_train.shape[1]), seed=seed)
    return _fit_array_model(model, x_train, x_test)[1]


def _fit_nmf_counts(x_train: np.ndarray, x_test: np.ndarray, epochs: int, seed: int, s: dict[str, Any]) -> FactorOutput:
    from scsparse.generic.models import NMF

    model = NMF(n_components=s["n_latent"], likelihood="poisson", alpha=_nmf_alpha(x_train.shape[1]), seed=seed)
    return _fit_array_model(model, x_train, x_test)[1]


def _count_adata(x: np.ndarray) -> AnnData:
    import anndata as ad

    return ad.AnnData(X=np.asarray(x, dtype=np.float32), layers={"counts": np.asarray(x, dtype=np.float32)})


def _fit_scvi_model(model: Any, train_kwargs: dict[str, Any], x_test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    model.train(**train_kwargs, train_size=1.0, enable_progress_bar=False)
    return _latent_factors(model, x_test)


def _latent_factors(model: Any, x_test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The trained model's latent representation of the training cells and of ``x_test``, in eval mode."""
    model.module.eval()
    f_train = np.asarray(model.get_latent_representation(model.adata), dtype=np.float64)
    f_test = np.asarray(model.get_latent_representation(_count_adata(x_test)), dtype=np.float64)
    return f_train, f_test


def _fit_sparsevae_nb(
    x_train: np.ndarray, x_test: np.ndarray, epochs: int, seed: int, s: dict[str, Any]
) -> FactorOutput:
    from scsparse.model import SparseVAE

    adata = _count_adata(x_train)
    t0 = time.perf_counter()
    SparseVAE.setup_anndata(adata, layer="counts")
    model = SparseVAE(
        adata,
        n_latent=s["n_latent"],
        n_hidden=s["n_hidden"],
        n_layers=s["n_layers"],
        gene_likelihood="nb",
        lambda0=s["lambda0"],
        lambda1=s["lambda1"],
        seed=seed,
        decoder_kwargs={"memory_budget_mb": 2048.0},
    )
    f_train, f_test = _fit_scvi_model(
        # the paper's protocol: a fixed number of epochs
        model,
        {"max_epochs": epochs, "lr": s["lr"], "batch_size": s["batch_size"], "stop_when_settled": False},
        x_test,
    )
    return FactorOutput(f_train, f_test, time.perf_counter() - t0, float(len(model.active_factors())))


def _fit_scvi(x_train: np.ndarray, x_test: np.ndarray, epochs: int, seed: int, s: dict[str, Any]) -> FactorOutput:
    import scvi

    adata = _count_adata(x_train)
    t0 = time.perf_counter()
    network = {"n_latent": s["n_latent"], "n_hidden": s["n_hidden"], "n_layers": s["n_layers"], "gene_likelihood": "nb"}
    plan = {"lr": s["lr"], "n_epochs_kl_warmup": max(1, round(0.25 * epochs))}
    train = {
        "max_epochs": epochs,
        "batch_size": s["batch_size"],
        "plan_kwargs": plan,
        "train_size": 1.0,
        "enable_progress_bar": False,
    }
    with scvi_tools_fit(scvi.model.SCVI, adata, seed, setup={"layer": "counts"}, model=network, train=train) as fit:
        f_train, f_test = _latent_factors(fit.model, x_test)
    return FactorOutput(f_train, f_test, time.perf_counter() - t0)


#: Methods per setting, as ``(name, fit_fn)`` pairs; the input is ``ZeiselData.normalised`` or ``.counts``.
METHODS: dict[str, list[tuple[str, FitFn]]] = {
    "normalised": [
        ("SparseVAE", _fit_sparsevae),
        ("VAE", _fit_vae),
        ("NMF", _fit_nmf_normal),
        ("VSC", _fit_vsc),
        ("OI-VAE", _fit_oivae),
    ],
    "counts": [
        ("SparseVAE (NB, scvi-tools)", _fit_sparsevae_nb),
        ("scVI (NB)", _fit_scvi),
        ("NMF (KL)", _fit_nmf_counts),
    ],
}


# ---------------------------------------------------------------------------------------------- outputs


def _write_figure(out_dir: Path, df: pd.DataFrame, settings: Sequence[str]) -> Path:
    """Held-out accuracy per method (dots: seeds; bar: mean), the paper's values as black diamonds."""
    present = [s for s in settings if (df["setting"] == s).any()]
    n = max(len(present), 1)
    widths = [max(len(df[df["setting"] == s]["method"].unique()), 1) for s in present] or [1]
    fig = report.new_figure((3.0 + 1.5 * sum(widths), 5.0))
    axes = fig.subplots(1, n, squeeze=False, width_ratios=widths)[0]
    rng = np.random.default_rng(0)
    for ax, setting in zip(axes, present, strict=False):
        sub = df[df["setting"] == setting]
        methods = list(dict.fromkeys(sub["method"]))
        for i, method in enumerate(methods):
            v = sub[sub["method"] == method]["accuracy"].to_numpy(dtype=np.float64)
            ax.bar(i, float(np.mean(v)), color="tab:blue" if "reference" not in method else "lightgrey", alpha=0.5)
            ax.scatter(i + rng.uniform(-0.15, 0.15, v.size), v, color="tab:blue", s=20, zorder=3)
            paper = PAPER_ACCURACY.get(method) if setting == "normalised" else None
            if paper is not None:
                ax.errorbar(
                    i,
                    paper[0],
                    yerr=paper[1],
                    fmt="D",
                    color="black",
                    ms=6,
                    zorder=4,
                    label="paper (Table 4)" if i == 0 else None,
                )
        ax.axhline(TARGET_ACCURACY, color="grey", ls="--", lw=1, label=f"target {TARGET_ACCURACY}")
        ax.set_xticks(range(len(methods)), [m.replace(" (", "\n(") for m in methods], fontsize=9)
        low = float(np.nanmin(sub["accuracy"])) if len(sub) else 0.0
        ax.set_ylim(max(0.0, min(low, 0.75) - 0.05), 1.0)
        ax.set_ylabel("held-out cell-type accuracy")
        ax.set_title(f"{setting} setting")
        ax.legend(loc="lower left", fontsize=8)
    fig.suptitle("Zeisel: multinomial logistic regression on the factors (test cells)")
    return report.save_figure(fig, out_dir / "zeisel_accuracy.png", dpi=120)


# ---------------------------------------------------------------------------------------------- runner
def _import_models(settings: Sequence[str]) -> None:
    """Import every model a run needs before the first fit, so that a long run uses one version of the code."""
    import scsparse.generic.models  # noqa: F401

    if "counts" in settings:
        import scvi  # noqa: F401

        import scsparse.model  # noqa: F401


def run_zeisel(
    out: str | os.PathLike[str],
    *,
    seeds: int | None = None,
    quick: bool = False,
    max_epochs: int | None = None,
    n_threads: int | None = 1,
    verbose: bool = True,
    settings: Sequence[str] = SETTINGS,
    methods: Sequence[str] | None = None,
    n_cells: int | None = None,
    n_genes: int | None = None,
    adata: AnnData | None = None,
) -> pd.DataFrame:
    """Cell-type prediction from the factors on the Zeisel data (Moran et al. 2022, Table 4).

    Preprocess once (:func:`prepare_zeisel`); for every seed draw a stratified 20% test set
    (:func:`split_cells`), fit every method of every setting on the training cells, encode all cells and
    score a multinomial logistic regression on the factors (:func:`classify_cell_types`).

    Parameters
    ----------
    out
        Output folder; receives ``results.csv``, ``summary.md`` and ``zeisel_accuracy.png``.
    seeds
        Number of seeds (splits and model initialisations) ``0 .. seeds - 1``; default 5 (1 with ``quick``).
    quick
        Smoke run: 600 cells, 200 genes, 2 epochs (unless ``n_cells``, ``n_genes``, ``max_epochs`` say
        otherwise).
    max_epochs
        Training epochs, overriding ``quick`` and the paper's 100.
    n_threads
        Torch intra-op threads while fitting (restored afterwards); ``None`` leaves the setting alone.
    verbose
        Print progress and the final table.
    settings
        Any of :data:`SETTINGS` (``"normalised"``, ``"counts"``).
    methods
        Names of the methods to run (default: all of :data:`METHODS` for the chosen settings).
    n_cells, n_genes
        Cells (stratified subsample) and genes to use; default all 3005 cells and 558 genes (quick: 600, 200).
    adata
        The data (default ``scsparse.data.load("zeisel_full")``); raw counts in ``layers["counts"]`` and
        ``obs["level1class"]``.

    Returns
    -------
    pandas.DataFrame
        One row per setting, method and seed with the columns of :data:`RESULT_COLUMNS`.

    Examples
    --------
    >>> from scsparse.generic.benchmarks import run
    >>> df = run("zeisel", out="bench_zeisel", seeds=5)  # doctest: +SKIP
    """
    if seeds is None:
        seeds = 1 if quick else DEFAULT_SEEDS
    check_integer("seeds", seeds)
    if max_epochs is not None:
        check_integer("max_epochs", max_epochs)
    settings = [str(s) for s in ([settings] if isinstance(settings, str) else settings)]
    unknown = [s for s in settings if s not in SETTINGS]
    if not settings or unknown:
        raise ValueError(f"settings must be a non-empty subset of {SETTINGS}, got {settings}")
    known = {name for s in settings for name, _ in METHODS[s]} | {GENES_REFERENCE}
    if methods is not None:
        bad = [m for m in methods if m not in known]
        if bad:
            raise ValueError(f"Unknown method(s) {bad} for settings {settings}; available: {sorted(known)}")
    chosen = set(known if methods is None else methods)
    seeds = int(seeds)
    epochs = int(max_epochs) if max_epochs is not None else (QUICK_EPOCHS if quick else ZEISEL_SETTINGS["max_epochs"])
    n_genes = int(n_genes) if n_genes is not None else (QUICK_GENES if quick else ZEISEL_SETTINGS["n_genes"])
    n_cells = n_cells if n_cells is not None else (QUICK_CELLS if quick else None)
    out_dir = report.make_output_dir(out)
    options = report.run_options(out_dir, seeds, quick, max_epochs, epochs_used=epochs, settings=settings,
                                 methods=sorted(chosen), n_cells=n_cells, n_genes=n_genes,
                                 n_threads=n_threads)  # fmt: skip
    _import_models(settings)
    data = prepare_zeisel(adata, n_genes=n_genes, n_cells=n_cells)
    full_data = n_cells is None and n_genes == ZEISEL_SETTINGS["n_genes"]
    rows: list[dict[str, Any]] = []
    with torch_threads(n_threads), quiet_training_logs():
        prov = report.provenance("zeisel", options)
        for seed in range(seeds):
            train, test = split_cells(data.labels, seed)
            y_train, y_test = data.labels[train], data.labels[test]
            common = {"seed": seed, "n_train": train.size, "n_test": test.size, "n_genes": data.gene_names.size}
            for setting in settings:
                x = data.normalised if setting == "normalised" else data.counts
                todo = [(n, f) for n, f in METHODS[setting] if n in chosen]
                if setting == "normalised" and GENES_REFERENCE in chosen:
                    todo.append((GENES_REFERENCE, None))
                for name, fit_fn in todo:
                    if fit_fn is None:
                        res = FactorOutput(x[train], x[test], 0.0)
                    else:
                        res = fit_fn(x[train], x[test], epochs, seed, dict(ZEISEL_SETTINGS))
                    scores = classify_cell_types(res.f_train, y_train, res.f_test, y_test)
                    rows.append(
                        {
                            "setting": setting,
                            "method": name,
                            **scores,
                            "n_active": float(res.n_active),
                            "fit_seconds": float(res.fit_seconds),
                            "epochs": epochs if fit_fn is not None else 0,
                            **common,
                        }
                    )
                    if verbose:
                        print(
                            f"[zeisel] {setting} {name} seed={seed}: accuracy={scores['accuracy']:.3f} "
                            f"macro-F1={scores['macro_f1']:.3f} n_active={res.n_active:g} "
                            f"({res.fit_seconds:.1f} s)",
                            flush=True,
                        )
            # keep what is done so far, in case a long run is stopped
            report.write_results(pd.DataFrame(rows, columns=list(RESULT_COLUMNS)), out_dir, RESULT_COLUMNS)
    df = pd.DataFrame(rows, columns=list(RESULT_COLUMNS))
    report.write_results(df, out_dir, RESULT_COLUMNS)
    fig_path = _write_figure(out_dir, df, settings)
    report.write_summary(
        out_dir,
        summary_lines(
            df,
            prov,
            data=data,
            seeds=seeds,
            epochs=epochs,
            settings=settings,
            full_data=full_data,
            figure=fig_path.name,
        ),
    )
    done = report.wrote_line("zeisel", [out_dir / "results.csv", out_dir / "summary.md", fig_path])
    return report.finish_run(df, out_dir, results_table(df), done, verbose=verbose)
