"""A plain multi-layer perceptron with optional one-hot covariates, shared by encoders and baselines."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

__all__ = ["MLP", "make_activation", "one_hot_covariates"]

_ACTIVATIONS = {
    "relu": nn.ReLU,
    "leaky_relu": nn.LeakyReLU,
    "elu": nn.ELU,
    "softplus": nn.Softplus,
    "tanh": nn.Tanh,
    "gelu": nn.GELU,
}


def make_activation(name: str) -> nn.Module:
    """Build an activation module by name (``relu``, ``leaky_relu``, ``elu``, ``softplus``, ``tanh``, ``gelu``).

    Examples
    --------
    >>> make_activation("relu")
    ReLU()
    """
    try:
        return _ACTIVATIONS[name]()
    except KeyError:
        raise ValueError(f"Unknown activation {name!r}; choose one of {sorted(_ACTIVATIONS)}.") from None


def one_hot_covariates(cat_list: Sequence[torch.Tensor | None], n_cat_list: Sequence[int]) -> torch.Tensor | None:
    """Concatenate one-hot encodings of categorical covariates.

    Parameters
    ----------
    cat_list
        One integer tensor of shape ``(B,)`` or ``(B, 1)`` per covariate (``None`` entries are skipped).
    n_cat_list
        Number of categories of each covariate; covariates with one category are skipped.

    Returns
    -------
    ``(B, sum n_cat)`` float tensor, or ``None`` when there is no covariate.

    Examples
    --------
    >>> import torch
    >>> one_hot_covariates([torch.tensor([0, 2])], [3])
    tensor([[1., 0., 0.],
            [0., 0., 1.]])
    """
    parts = []
    for cat, n_cat in zip(cat_list, n_cat_list, strict=True):
        if cat is None or n_cat <= 1:
            continue
        parts.append(nn.functional.one_hot(cat.reshape(-1).long(), n_cat).float())
    return torch.cat(parts, dim=-1) if parts else None


class MLP(nn.Module):
    """Fully connected layers ``n_in -> n_hidden x n_layers -> n_out`` with covariates injected per layer.

    Each hidden layer is ``activation(norm(Linear([h, covariates])))`` followed by dropout; the output
    layer is linear. Covariates (one-hot) are concatenated to the input of every layer, as in scVI.

    Parameters
    ----------
    n_in, n_out
        Input and output widths.
    n_hidden
        Width of the hidden layers.
    n_layers
        Number of hidden layers (0 gives a linear map).
    n_cat_list
        Category counts of the covariates.
    activation
        Activation name, see :func:`make_activation`.
    dropout_rate
        Dropout after each hidden layer.
    norm
        ``"batch"``, ``"layer"`` or ``None``.

    Examples
    --------
    >>> import torch
    >>> mlp = MLP(5, 3, n_hidden=8, n_layers=2)
    >>> mlp(torch.zeros(4, 5)).shape
    torch.Size([4, 3])
    """

    def __init__(
        self,
        n_in: int,
        n_out: int,
        n_hidden: int = 128,
        n_layers: int = 1,
        n_cat_list: Sequence[int] = (),
        activation: str = "relu",
        dropout_rate: float = 0.0,
        norm: str | None = None,
    ) -> None:
        super().__init__()
        self.n_cat_list = [int(n) if n > 1 else 0 for n in n_cat_list]
        n_cov = sum(self.n_cat_list)
        widths = [n_in] + [n_hidden] * n_layers
        self.hidden = nn.ModuleList()
        for w_in, w_out in zip(widths[:-1], widths[1:], strict=True):
            block: list[nn.Module] = [nn.Linear(w_in + n_cov, w_out)]
            if norm == "batch":
                block.append(nn.BatchNorm1d(w_out, momentum=0.01, eps=1e-3))
            elif norm == "layer":
                block.append(nn.LayerNorm(w_out, elementwise_affine=False))
            elif norm is not None:
                raise ValueError(f"norm must be 'batch', 'layer' or None, got {norm!r}.")
            block.append(make_activation(activation))
            if dropout_rate > 0:
                block.append(nn.Dropout(dropout_rate))
            self.hidden.append(nn.Sequential(*block))
        self.out = nn.Linear(widths[-1] + n_cov, n_out)

    def forward(self, x: torch.Tensor, *cat_list: torch.Tensor | None) -> torch.Tensor:
        """Map ``x`` (``(B, n_in)``) and covariate indices to ``(B, n_out)``."""
        cov = one_hot_covariates(cat_list, self.n_cat_list) if cat_list else None
        h = x
        for layer in self.hidden:
            h = layer(h if cov is None else torch.cat([h, cov], dim=-1))
        return self.out(h if cov is None else torch.cat([h, cov], dim=-1))
