"""Group lasso on the columns of stacked latent-to-group matrices, and its proximal operator.

The oi-VAE (Ainsworth et al., 2018) inserts a matrix ``W^(g)`` (``p x K``) between the latent factors
``z`` (``K``) and the generator of feature group ``g``. Stacking the ``n_groups`` matrices gives a tensor
``W`` of shape ``(n_groups, p, K)``; column ``k`` of group ``g`` is ``W[g, :, k]``. The group lasso

    lambda * sum_{g, k} ||W[g, :, k]||_2

switches off whole (group, factor) pairs: when ``W[g, :, k] = 0`` factor ``k`` cannot reach group ``g``.
Its proximal operator (Parikh & Boyd, 2014) with step ``t = lr * lambda`` is the block soft-threshold

    W[g, :, k] <- W[g, :, k] / ||W[g, :, k]|| * max(0, ||W[g, :, k]|| - t)

which shrinks every column norm by ``t`` and sets the columns with norm ``<= t`` to exact zeros.
Everything here is vectorised over groups and factors; nothing loops in Python.
"""

from __future__ import annotations

import torch

__all__ = ["group_column_norms", "group_lasso_penalty", "group_lasso_prox"]


def group_column_norms(w: torch.Tensor, dim: int = -2) -> torch.Tensor:
    """Euclidean norms ``||W[g, :, k]||_2`` of the columns of every group's matrix.

    Parameters
    ----------
    w
        Stacked latent-to-group matrices, shape ``(n_groups, p, K)`` (any tensor: the norm is taken
        over ``dim``).
    dim
        The axis of length ``p`` that the norm runs over (default: the second-to-last).

    Returns
    -------
    torch.Tensor
        Shape of ``w`` without ``dim``: ``(n_groups, K)`` for the default layout.

    Examples
    --------
    >>> import torch
    >>> w = torch.tensor([[[3.0, 0.0], [4.0, 1.0]]])  # one group, p = 2, K = 2
    >>> group_column_norms(w)
    tensor([[5., 1.]])
    """
    return torch.linalg.vector_norm(w, ord=2, dim=dim)


def group_lasso_penalty(w: torch.Tensor, lambda_: float = 1.0, dim: int = -2) -> torch.Tensor:
    """Group-lasso penalty ``lambda * sum_{g, k} ||W[g, :, k]||_2`` (a scalar).

    This is the negative log-density, up to a constant, of the marginal prior obtained by integrating
    ``gamma_gk^2 ~ Gamma((p + 1) / 2, rate=lambda^2 / 2)`` out of ``W[g, :, k] ~ N(0, gamma_gk^2 I)``
    (Kyung et al., 2010), the prior of the oi-VAE.

    Parameters
    ----------
    w
        Stacked latent-to-group matrices, shape ``(n_groups, p, K)``.
    lambda_
        Penalty weight (the rate of the hierarchical prior).
    dim
        The axis the column norms run over.

    Returns
    -------
    torch.Tensor
        Scalar.

    Examples
    --------
    >>> import torch
    >>> w = torch.tensor([[[3.0, 0.0], [4.0, 1.0]]])
    >>> group_lasso_penalty(w, lambda_=2.0)  # 2 * (5 + 1)
    tensor(12.)
    """
    return lambda_ * group_column_norms(w, dim=dim).sum()


def group_lasso_prox(w: torch.Tensor, threshold: float | torch.Tensor, dim: int = -2) -> torch.Tensor:
    """Proximal operator of ``t * sum_{g, k} ||W[g, :, k]||_2`` (block soft-thresholding).

    ``prox(W)[g, :, k] = W[g, :, k] / ||W[g, :, k]|| * max(0, ||W[g, :, k]|| - t)``, computed as
    ``W[g, :, k] * max(0, 1 - t / ||W[g, :, k]||)``: columns whose norm is at most ``t`` become exact
    zeros, the others keep their direction and lose ``t`` of their norm. In proximal gradient descent
    ``t = lr * lambda`` after a gradient step of size ``lr`` on the smooth part of the objective.

    Parameters
    ----------
    w
        Stacked latent-to-group matrices, shape ``(n_groups, p, K)``. Not modified.
    threshold
        ``t = lr * lambda`` (non-negative).
    dim
        The axis the column norms run over.

    Returns
    -------
    torch.Tensor
        The thresholded tensor, same shape as ``w``. Use ``w.copy_(group_lasso_prox(w, t))`` under
        ``torch.no_grad()`` to update a parameter in place.

    Examples
    --------
    >>> import torch
    >>> w = torch.tensor([[[3.0, 0.3], [4.0, 0.4]]])  # column norms 5 and 0.5
    >>> group_lasso_prox(w, 1.0)  # norm 5 -> 4 (same direction); norm 0.5 <= 1 -> exactly 0
    tensor([[[2.4000, 0.0000],
             [3.2000, 0.0000]]])
    """
    if isinstance(threshold, float | int) and threshold < 0:
        raise ValueError(f"The proximal threshold must be non-negative, got {threshold}.")
    norms = group_column_norms(w, dim=dim).unsqueeze(dim)
    tiny = torch.finfo(w.dtype).tiny
    scale = torch.clamp(1.0 - threshold / norms.clamp_min(tiny), min=0.0)
    return w * scale
