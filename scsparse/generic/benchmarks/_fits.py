"""How the benchmarks fit scsparse's models, and how they measure a fit.

Every benchmark that trains a :class:`~scsparse.model.SparseVAE` or :class:`~scsparse.model.MultiStudySparseVAE`
trains it by one of two protocols, each written once here:

- **as a user fits** (:func:`fit_sparsevae`, with a study key the multi-study model): ``train(max_epochs, seed=...)``
  with the model's defaults, the train/validation split and the stop once the fit has settled (``bench peers``,
  ``bench stability``);
- **the papers' fixed epochs** (:func:`paper_model_kwargs`, :func:`train_fixed_epochs`): the settings dict of a
  benchmark that follows a paper (``lr``, ``batch_size``, ``max_epochs``, the network and the prior), every cell
  in training, no stop (``bench multistudy``, ``bench multistudy_real``, ``bench synthetic``).

scvi-tools' own models (``SCVI``, ``LinearSCVI``, ``DRVI``), the peers of several benchmarks, are fitted by
:func:`scvi_tools_fit`: registered, built and trained inside :func:`scsparse.model.seeded`, so a peer's fit follows
its seed and leaves the process's random state and ``scvi.settings.seed`` as they were.

:func:`measured` gives the wall time and the peak resident-memory growth of a block (one fit);
:class:`ModelStore` keeps a long run's user-style fits on disk, so that a resumed run loads them instead of fitting
them again.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import json
import math
import time
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scsparse.utils import write_text

from ._process import proc_status_mb

if TYPE_CHECKING:  # pragma: no cover
    from anndata import AnnData

__all__ = [
    "MULTISTUDY_SPECIFIC",
    "ModelStore",
    "ScviToolsFit",
    "StoredFit",
    "bias_words",
    "fit_sparsevae",
    "measured",
    "multistudy_factors",
    "paper_model_kwargs",
    "scvi_tools_fit",
    "train_fixed_epochs",
    "user_model",
]

#: Specific factors per study of a MultiStudySparseVAE fitted as a user fits it (at most a quarter of ``K``).
MULTISTUDY_SPECIFIC = 5


# ---------------------------------------------------------------------------------------------- as a user fits
def user_model(
    adata: AnnData, n_latent: int, *, batch_key: str | None = None, study_key: str | None = None
) -> tuple[type, dict[str, int]]:
    """Register ``adata`` as a user registers it and give the model class with its numbers of factors.

    With a ``study_key``: :class:`~scsparse.model.MultiStudySparseVAE`, ``n_latent`` factors a cell split as
    :func:`multistudy_factors` says; otherwise :class:`~scsparse.model.SparseVAE` with ``n_latent`` factors and the
    ``batch_key``. Both register the ``"counts"`` layer.
    """
    from scsparse.model import MultiStudySparseVAE, SparseVAE

    if study_key is not None:
        MultiStudySparseVAE.setup_anndata(adata, layer="counts", study_key=study_key)
        shared, specific = multistudy_factors(n_latent)
        return MultiStudySparseVAE, {"n_latent_shared": shared, "n_latent_specific": specific}
    SparseVAE.setup_anndata(adata, layer="counts", batch_key=batch_key)
    return SparseVAE, {"n_latent": n_latent}


def fit_sparsevae(
    adata: AnnData,
    n_latent: int,
    max_epochs: int,
    seed: int,
    batch_key: str | None,
    init_seed: int | None = None,
    train_kwargs: Mapping[str, Any] | None = None,
    *,
    study_key: str | None = None,
    **model_kwargs: Any,
):
    """A SparseVAE trained as a user trains it: the model's defaults, its split and its settled stop.

    With a ``study_key`` a :class:`~scsparse.model.MultiStudySparseVAE` instead, ``n_latent`` factors a cell
    (:func:`user_model`). ``init_seed`` draws the initial weights (default ``seed``), ``seed`` the split and the
    minibatches, so restarts of one seed train on the same cells (as :func:`scsparse.model.select_best` needs).
    ``model_kwargs`` go to the model and ``train_kwargs`` to ``train()`` beyond their defaults. A fit that reaches
    ``max_epochs`` before it settles is kept without a warning (the caller reads ``model.history["stopping"]``).
    """
    from scsparse.train import FitNotSettledWarning

    model_class, factors = user_model(adata, n_latent, batch_key=batch_key, study_key=study_key)
    model = model_class(adata, **factors, seed=seed if init_seed is None else init_seed, **model_kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitNotSettledWarning)
        model.train(max_epochs=max_epochs, seed=seed, enable_progress_bar=False, **(train_kwargs or {}))
    return model


@dataclass
class StoredFit:
    """A trained model with the wall time and peak memory growth of the fit that made it."""

    model: Any
    seconds: float
    peak_mb: float


class ModelStore:
    """SparseVAE fits made as a user makes them (:func:`fit_sparsevae`), each saved to ``folder`` as it ends.

    A long benchmark fits the same model more than once: a seed's plain fit is restart 0 of its consensus. The
    store fits each (cells, ``K``, epochs, seed, initial-weights seed) once and loads it afterwards, with the
    seconds and peak memory of the fit that made it. With ``reuse`` it also loads the fits an earlier run saved
    to ``folder`` (a resumed run, which has checked that the earlier run used the same settings), so a run stopped
    in the middle of a consensus loses at most the fit in progress; without it, only this store's own fits are
    loaded and the earlier ones are overwritten. ``folder=None`` keeps the fits in memory only.

    Examples
    --------
    >>> store = ModelStore(Path("bench_out/peers/models/kang"), reuse=True)
    >>> fit = store.fit_sparsevae(adata, 20, 400, seed=0, batch_key=None)
    >>> fit.model, fit.seconds
    """

    _COST = "fit.json"  # written after the model: its presence says the saved fit is whole

    def __init__(self, folder: str | Path | None = None, *, reuse: bool = False) -> None:
        self.folder = None if folder is None else Path(folder)
        self.reuse = reuse
        self._made: set[str] = set()  # keys fitted by this store
        self._in_memory: dict[str, StoredFit] = {}  # without a folder: the fits themselves

    def _key(self, adata: AnnData, n_latent: int, max_epochs: int, seed: int, init_seed: int) -> str:
        return f"cells{adata.n_obs}-genes{adata.n_vars}-K{n_latent}-epochs{max_epochs}-seed{seed}-init{init_seed}"

    def fit_sparsevae(
        self,
        adata: AnnData,
        n_latent: int,
        max_epochs: int,
        seed: int,
        batch_key: str | None,
        init_seed: int | None = None,
    ) -> StoredFit:
        """:func:`fit_sparsevae` on ``adata`` (registered as a user registers it), or the stored fit of the same
        settings, loaded with ``adata``.
        """
        from scsparse.model import SparseVAE

        init_seed = seed if init_seed is None else init_seed
        key = self._key(adata, n_latent, max_epochs, seed, init_seed)
        if key in self._in_memory:
            return self._in_memory[key]
        path = None if self.folder is None else self.folder / key
        if path is not None and (path / self._COST).is_file() and (self.reuse or key in self._made):
            user_model(adata, n_latent, batch_key=batch_key)  # register as the fit did
            cost = json.loads((path / self._COST).read_text())
            return StoredFit(SparseVAE.load(str(path), adata=adata), cost["seconds"], cost["peak_mb"])
        with measured() as m:
            model = fit_sparsevae(adata, n_latent, max_epochs, seed, batch_key, init_seed=init_seed)
        made = StoredFit(model, m["seconds"], m["peak_mb"])
        if path is not None:
            (path / self._COST).unlink(missing_ok=True)
            model.save(str(path), overwrite=True)
            write_text(path / self._COST, json.dumps({"seconds": made.seconds, "peak_mb": made.peak_mb}))
        self._made.add(key)
        if path is None:
            self._in_memory[key] = made
        return made


def multistudy_factors(n_latent: int) -> tuple[int, int]:
    """``K`` factors of a cell as ``(shared, specific per study)``: :data:`MULTISTUDY_SPECIFIC`, at most ``K // 4``."""
    specific = max(1, min(MULTISTUDY_SPECIFIC, n_latent // 4))
    return n_latent - specific, specific


# ---------------------------------------------------------------------------------------------- scvi-tools' models
@dataclass
class ScviToolsFit:
    """A trained scvi-tools model and the wall time of its ``train()``."""

    model: Any
    seconds: float


@contextlib.contextmanager
def scvi_tools_fit(
    model_class: type,
    adata: AnnData,
    seed: int,
    *,
    setup: Mapping[str, Any] | None = None,
    model: Mapping[str, Any] | None = None,
    train: Mapping[str, Any] | None = None,
) -> Iterator[ScviToolsFit]:
    """A scvi-tools model registered, built and trained under ``seed``; the block reads it under the same seed.

    ``model_class.setup_anndata(adata, **setup)``, ``model_class(adata, **model)`` and ``train(**train)`` run inside
    :func:`scsparse.model.seeded`, and so does the block, so that what it draws from the model (a sampled
    likelihood, interpretability scores) follows the seed too. After the block the caller's random state and
    ``scvi.settings.seed`` are as they were.

    Parameters
    ----------
    model_class
        A scvi-tools model class (``scvi.model.SCVI``, ``scvi.model.LinearSCVI``, ``scvi.external.DRVI``).
    adata
        The data, registered with ``setup``.
    seed
        Seed of the weights, the split, the minibatches and the block.
    setup, model, train
        Keyword arguments of ``setup_anndata``, of the model and of ``train``.

    Examples
    --------
    >>> import scvi
    >>> with scvi_tools_fit(scvi.model.SCVI, adata, 0, setup={"layer": "counts"}, train={"max_epochs": 5}) as fit:
    ...     z = fit.model.get_latent_representation()
    """
    from scsparse.model import seeded

    with seeded(seed):
        model_class.setup_anndata(adata, **(setup or {}))
        fitted = model_class(adata, **(model or {}))
        start = time.perf_counter()
        fitted.train(**(train or {}))
        yield ScviToolsFit(fitted, time.perf_counter() - start)


# ---------------------------------------------------------------------------------------------- the papers' protocol
def paper_model_kwargs(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The model's keyword arguments from a benchmark's settings: likelihood, network, prior and decoder.

    ``settings`` holds ``gene_likelihood``, ``n_hidden``, ``n_layers``, ``lambda0``, ``lambda1``, ``dropout_rate``
    and ``first_bias``, and ``w_init`` where the benchmark sets the decoder's initial loadings.
    """
    decoder = {"first_bias": settings["first_bias"]}
    if "w_init" in settings:
        decoder = {"w_init": settings["w_init"], **decoder}
    return {
        "gene_likelihood": settings["gene_likelihood"],
        "n_hidden": settings["n_hidden"],
        "n_layers": settings["n_layers"],
        "lambda0": settings["lambda0"],
        "lambda1": settings["lambda1"],
        "dropout_rate": settings["dropout_rate"],
        "decoder_kwargs": decoder,
    }


def bias_words(settings: Mapping[str, Any]) -> str:
    """How the summaries name the decoder's first layer."""
    return " (first layer with a bias)" if settings["first_bias"] else " (first layer without a bias)"


def train_fixed_epochs(model: Any, settings: Mapping[str, Any]) -> None:
    """Train for ``settings["max_epochs"]`` epochs on every cell (no validation split, no stop), then set eval mode.

    ``settings`` holds ``max_epochs``, ``lr`` and ``batch_size``, and ``em_every`` where the benchmark sets when the
    mask's EM update runs (default ``"step"``, the model's).
    """
    model.train(
        max_epochs=int(settings["max_epochs"]),
        lr=settings["lr"],
        batch_size=settings["batch_size"],
        train_size=1.0,
        em_every=settings.get("em_every", "step"),
        stop_when_settled=False,  # the papers' protocol: a fixed number of epochs
        enable_progress_bar=False,
    )
    model.module.eval()


# ---------------------------------------------------------------------------------------------- measurement
def _release_freed_memory() -> None:
    """Collect garbage and hand freed heap pages back to the system (glibc), so that memory an earlier fit freed
    but the allocator kept does not hide the next fit's growth.
    """
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def _reset_peak() -> bool:
    """Reset this process's resident-memory high-water mark (Linux ``clear_refs``); ``False`` where it cannot."""
    _release_freed_memory()
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


@contextlib.contextmanager
def measured() -> Iterator[dict[str, float]]:
    """Wall time and peak resident-memory growth (MB) of the block, filled into the yielded dict after it."""
    out: dict[str, float] = {}
    reset = _reset_peak()
    before = proc_status_mb("VmRSS")
    start = time.perf_counter()
    yield out
    out["seconds"] = time.perf_counter() - start
    out["peak_mb"] = max(proc_status_mb("VmHWM") - before, 0.0) if reset else math.nan
