"""The common interface of the generic (array) models and the small trainer they share."""

from __future__ import annotations

import abc
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Self

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from scsparse.nn import flush_denormals

__all__ = ["ArrayModel", "TorchArrayModel", "TrainHistory", "as_loader", "check_option", "check_rows", "train_module"]


def check_option(name: str, value: Any, options: Sequence[Any]) -> None:
    """Raise a ``ValueError`` unless ``value`` is one of ``options`` (a likelihood, a base distribution ...).

    Examples
    --------
    >>> check_option("likelihood", "normal", ("normal", "bernoulli"))
    >>> check_option("likelihood", "gamma", ("normal", "bernoulli"))
    Traceback (most recent call last):
    ...
    ValueError: likelihood must be one of ('normal', 'bernoulli'), got 'gamma'.
    """
    if value not in options:
        raise ValueError(f"{name} must be one of {options}, got {value!r}.")


@dataclass
class TrainHistory:
    """Per-epoch training losses (mean per row) and wall-clock time."""

    loss: list[float] = field(default_factory=list)
    seconds: float = 0.0
    extra: dict[str, list[float]] = field(default_factory=dict)


def check_rows(x: np.ndarray) -> None:
    """Raise a ``ValueError`` unless ``x`` is a finite 2-d array (rows x features).

    Examples
    --------
    >>> import numpy as np
    >>> check_rows(np.zeros((2, 3)))
    >>> check_rows(np.array([[0.0, np.nan]]))
    Traceback (most recent call last):
    ...
    ValueError: The data contain NaN or infinite values; remove or impute them first.
    """
    if x.ndim != 2:
        raise ValueError(f"Expected a 2-d array (rows x features), got shape {tuple(x.shape)}.")
    if not np.all(np.isfinite(x)):
        raise ValueError("The data contain NaN or infinite values; remove or impute them first.")


def as_loader(
    data: np.ndarray | torch.Tensor | DataLoader, batch_size: int = 128, shuffle: bool = True, seed: int = 0
) -> DataLoader:
    """A DataLoader over rows of ``data`` (returned unchanged if it already is one).

    Each batch is a 1-tuple ``(x,)`` of float32 rows.
    """
    if isinstance(data, DataLoader):
        return data
    rows = np.asarray(data, dtype=np.float32)
    check_rows(rows)
    x = torch.as_tensor(rows)
    generator = torch.Generator().manual_seed(seed)
    return DataLoader(TensorDataset(x), batch_size=batch_size, shuffle=shuffle, generator=generator)


def train_module(
    module: nn.Module,
    loader: DataLoader,
    *,
    max_epochs: int,
    lr: float,
    n_obs: int,
    weight_decay: float = 0.0,
    after_step: Callable[[nn.Module, torch.optim.Optimizer], None] | None = None,
    after_epoch: Callable[[nn.Module, int], None] | None = None,
    verbose: bool = False,
) -> TrainHistory:
    """Adam on ``module.loss(x, n_obs=n_obs, epoch=epoch)`` over ``max_epochs`` passes.

    ``module.loss`` returns a scalar per-row objective (global terms already divided by ``n_obs``).
    ``after_step`` runs after every optimiser step (EM updates, proximal steps); ``after_epoch`` after
    every epoch (schedules, warm-ups).
    """
    opt = torch.optim.Adam([p for p in module.parameters() if p.requires_grad], lr=lr, weight_decay=weight_decay)
    history = TrainHistory()
    start = time.perf_counter()
    with flush_denormals():  # as scsparse.model's train(): denormals slow CPU training late in a fit
        for epoch in range(max_epochs):
            module.train()
            total, rows = 0.0, 0
            for (x,) in loader:
                loss = module.loss(x, n_obs=n_obs, epoch=epoch)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                if after_step is not None:
                    with torch.no_grad():
                        after_step(module, opt)
                total += float(loss.detach()) * x.shape[0]
                rows += x.shape[0]
            history.loss.append(total / max(rows, 1))
            if after_epoch is not None:
                after_epoch(module, epoch)
            if verbose:
                print(f"epoch {epoch + 1}/{max_epochs}: loss {history.loss[-1]:.4f}")
    module.eval()
    history.seconds = time.perf_counter() - start
    return history


class ArrayModel(abc.ABC):
    """What every generic model offers: ``fit``, ``transform``, ``loadings``, ``heldout_nll``.

    Models are fitted on a rows x features array (or a DataLoader of ``(x,)`` batches); ``transform``
    returns the factors (posterior means) of new rows; ``loadings`` the feature x factor matrix where the
    model has one (``None`` otherwise); ``heldout_nll`` the mean negative log-likelihood per row of new data,
    a true likelihood with all normalising constants.
    """

    likelihood: str

    @abc.abstractmethod
    def fit(self, X: np.ndarray | DataLoader, **kwargs: Any) -> ArrayModel:
        """Fit the model and return it."""

    @abc.abstractmethod
    def transform(self, X: np.ndarray) -> np.ndarray:
        """Factors of the rows of ``X``, shape ``(n_rows, n_factors)``."""

    def loadings(self) -> np.ndarray | None:
        """Feature x factor loadings, or ``None`` for models without them."""
        return None

    @abc.abstractmethod
    def heldout_nll(self, X: np.ndarray, **kwargs: Any) -> float:
        """Mean ``-log p(x)`` per row of ``X``."""

    def predict_mean(self, X: np.ndarray) -> np.ndarray:
        """Model mean of the rows of ``X`` given their factors, shape ``(n_rows, n_features)``.

        For the autoencoders: the decoder mean at the posterior mean of the factors (proportions for
        ``"multinomial"``, probabilities for ``"bernoulli"``); for NMF: the reconstruction. Used to rank
        items in the fold-in protocol (:func:`scsparse.generic.metrics.fold_in_evaluate`).
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement predict_mean.")

    def fit_transform(self, X: np.ndarray, **kwargs: Any) -> np.ndarray:
        """``fit`` then ``transform`` on the same rows."""
        return self.fit(X, **kwargs).transform(X)


class TorchArrayModel(ArrayModel):
    """Shared plumbing of the torch models: seeding, training with :func:`train_module`, batched inference.

    Subclasses set ``self.module`` in :meth:`build` (called by ``fit`` once the number of features is known);
    the module implements ``loss(x, n_obs, epoch)``, ``encode(x) -> (mean, ...)`` and
    ``marginal_ll(x, n_samples) -> (B,)``.
    """

    module: nn.Module

    def __init__(self, *, seed: int = 0, lr: float = 1e-3, max_epochs: int = 100, batch_size: int = 128) -> None:
        self.seed, self.lr, self.max_epochs, self.batch_size = int(seed), float(lr), int(max_epochs), int(batch_size)
        self.history_: TrainHistory | None = None
        self._fit_epochs = self.max_epochs  # epochs of the current (or last) fit, for the schedules of build

    @abc.abstractmethod
    def build(self, n_features: int, data: torch.Tensor | None) -> nn.Module:
        """Create the torch module for ``n_features`` (``data``: the training rows when available)."""

    def _hooks(self) -> dict[str, Callable | None]:
        return {"after_step": None, "after_epoch": None}

    def fit(self, X: np.ndarray | DataLoader, *, max_epochs: int | None = None, verbose: bool = False) -> Self:
        """Fit on the rows of ``X`` (or a DataLoader of ``(x,)`` batches) and return the model.

        ``max_epochs`` overrides the model's setting for this fit; the schedules that :meth:`build` sets up
        (warm-ups, relaxation temperatures) follow the number of epochs actually run (``self._fit_epochs``).
        """
        self._fit_epochs = self.max_epochs if max_epochs is None else int(max_epochs)
        torch.manual_seed(self.seed)
        loader = as_loader(X, self.batch_size, shuffle=True, seed=self.seed)
        data = loader.dataset.tensors[0] if isinstance(loader.dataset, TensorDataset) else None
        n_features = next(iter(loader))[0].shape[1]
        self.n_features_in_ = int(n_features)
        self.module = self.build(n_features, data)
        self.history_ = train_module(
            self.module,
            loader,
            max_epochs=self._fit_epochs,
            lr=self.lr,
            n_obs=len(loader.dataset),
            verbose=verbose,
            **self._hooks(),
        )
        return self

    def _check_fitted(self) -> None:
        if getattr(self, "module", None) is None:
            raise RuntimeError(f"{type(self).__name__} is not fitted yet; call fit(X) first.")

    def _rows(self, X: np.ndarray, batch_size: int) -> DataLoader:
        """Batches of the rows of ``X`` in order, once the model is fitted and ``X`` has its features."""
        self._check_fitted()
        loader = as_loader(X, batch_size, shuffle=False)
        n_features = next(iter(loader))[0].shape[1]
        expected = getattr(self, "n_features_in_", n_features)
        if n_features != expected:
            raise ValueError(
                f"X has {n_features} features but {type(self).__name__} was fitted on {expected}; pass the same "
                "features, in the same order, as in fit."
            )
        return loader

    @torch.no_grad()
    def _map_rows(
        self, X: np.ndarray, fn: Callable[[torch.Tensor], torch.Tensor], batch_size: int = 1024
    ) -> torch.Tensor:
        """``fn`` of the module in eval mode on batches of the rows of ``X`` in order, concatenated along rows."""
        loader = self._rows(X, batch_size)
        self.module.eval()
        return torch.cat([fn(x) for (x,) in loader])

    def transform(self, X: np.ndarray) -> np.ndarray:
        """Posterior means of the factors."""
        return self._map_rows(X, lambda x: self.module.encode(x)[0]).numpy()

    def predict_mean(self, X: np.ndarray) -> np.ndarray:
        """Decoder mean at the posterior mean of the factors (``module.predict_mean``)."""
        self._check_fitted()
        if not hasattr(self.module, "predict_mean"):
            raise NotImplementedError(f"The module of {type(self).__name__} has no predict_mean.")
        return self._map_rows(X, self.module.predict_mean).numpy()

    @torch.no_grad()
    def training_objective(self, X: np.ndarray, n_passes: int = 10) -> float:
        """The objective training minimised, per row of ``X`` (the training rows), at the final weights.

        ``module.loss`` over all rows of ``X`` in eval mode, at the schedules of the last training epoch
        (warm-ups finished), averaged over ``n_passes`` passes with the latent samples drawn under a torch
        generator seeded with the model's seed (reproducible, and the global RNG is left as it was). Lower is
        better. It compares fits of the same data from different seeds without labels, like
        :meth:`scsparse.model.SparseVAE.training_objective`.

        Parameters
        ----------
        X
            The rows the model was fitted on.
        n_passes
            Passes over ``X`` to average (each draws one latent sample per row).

        Returns
        -------
        float
            Mean objective per row.

        Examples
        --------
        >>> import numpy as np
        >>> from scsparse.generic.models import VAE
        >>> X = np.random.default_rng(0).normal(size=(64, 5)).astype("float32")
        >>> model = VAE(n_latent=2, max_epochs=2).fit(X)
        >>> bool(np.isfinite(model.training_objective(X)))
        True
        """
        loader = self._rows(X, 1024)
        if int(n_passes) < 1:
            raise ValueError(f"n_passes must be a positive integer, got {n_passes}")
        epoch = max(len(self.history_.loss) - 1, 0) if self.history_ is not None else 0
        n_obs = len(loader.dataset)
        self.module.eval()
        total = 0.0
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            for _ in range(int(n_passes)):
                for (x,) in loader:
                    total += float(self.module.loss(x, n_obs=n_obs, epoch=epoch)) * x.shape[0]
        return total / (n_obs * int(n_passes))

    @torch.no_grad()
    def heldout_nll(self, X: np.ndarray, n_samples: int = 100) -> float:
        """Mean ``-log p(x)`` per row, importance-sampled with the encoder as proposal."""
        return -float(self._map_rows(X, lambda x: self.module.marginal_ll(x, n_samples=n_samples), 256).mean())
