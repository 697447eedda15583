"""Sparse coding with a linear generator: the objective, FISTA codes and dictionary learning.

The MAP reference of Fallah & Rozell (2022): codes minimising ``0.5 ||x - A z||^2 + lambda ||z||_1`` per row
(:func:`sparse_coding_objective`) found by FISTA (:func:`fista`), and the dictionary ``A`` learned by plain
gradient steps with the codes held fixed (:func:`init_dictionary`, :func:`dictionary_step`), as
:class:`~scsparse.generic.models.LinearSparseCodingVAE` learns its own.
"""

from __future__ import annotations

import math

import torch

__all__ = ["dictionary_step", "fista", "init_dictionary", "sparse_coding_objective"]


def sparse_coding_objective(x: torch.Tensor, A: torch.Tensor, z: torch.Tensor, lam: float) -> torch.Tensor:
    """Per-row ``0.5 ||x - A z||^2 + lam ||z||_1``: Table 1's validation loss (Eq. 10 less ``kappa ||A||_F^2``).

    Examples
    --------
    >>> import torch
    >>> x = torch.tensor([[1.0, 0.0]]); A = torch.eye(2); z = torch.tensor([[0.5, 0.0]])
    >>> sparse_coding_objective(x, A, z, 2.0)
    tensor([1.1250])
    """
    resid = x - z @ A.T
    return 0.5 * resid.pow(2).sum(-1) + lam * z.abs().sum(-1)


@torch.no_grad()
def fista(
    x: torch.Tensor, A: torch.Tensor, lam: float, n_iter: int = 200, z0: torch.Tensor | None = None
) -> torch.Tensor:
    """Codes minimising ``0.5 ||x - A z||^2 + lam ||z||_1`` per row by FISTA (Beck & Teboulle 2009).

    ISTA (gradient step on the quadratic, then soft-thresholding at ``lam / L``) with Nesterov momentum;
    the step is ``1 / L`` with ``L = sigma_max(A)^2`` the Lipschitz constant of the quadratic's gradient.

    Parameters
    ----------
    x
        Rows ``(B, G)``.
    A
        Dictionary ``(G, K)``.
    lam
        Weight of the l1 penalty.
    n_iter
        Iterations.
    z0
        Starting codes (default zeros).

    Returns
    -------
    torch.Tensor
        Codes ``(B, K)``.

    Examples
    --------
    >>> import torch
    >>> z = fista(torch.tensor([[3.0, 0.2]]), torch.eye(2), lam=1.0)  # soft-threshold at lam
    >>> torch.allclose(z, torch.tensor([[2.0, 0.0]]), atol=1e-4)
    True
    """
    if lam < 0:
        raise ValueError(f"lam must be non-negative, got {lam}.")
    gram = A.T @ A
    lipschitz = float(torch.linalg.matrix_norm(A, ord=2)) ** 2 + 1e-12
    atx = x @ A
    z = torch.zeros(x.shape[0], A.shape[1], dtype=x.dtype, device=x.device) if z0 is None else z0.clone()
    y, t = z.clone(), 1.0
    thr = lam / lipschitz
    for _ in range(int(n_iter)):
        grad = y @ gram - atx
        v = y - grad / lipschitz
        z_new = torch.sign(v) * torch.clamp(v.abs() - thr, min=0.0)
        t_new = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t * t))
        y = z_new + ((t - 1.0) / t_new) * (z_new - z)
        z, t = z_new, t_new
    return z


def init_dictionary(n_input: int, n_atoms: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """Random Gaussian atoms scaled to unit norm, ``(n_input, n_atoms)``.

    Examples
    --------
    >>> torch.linalg.vector_norm(init_dictionary(16, 4), dim=0)
    tensor([1.0000, 1.0000, 1.0000, 1.0000])
    """
    A = torch.randn(n_input, n_atoms, generator=generator)
    return A / torch.linalg.vector_norm(A, dim=0, keepdim=True)


@torch.no_grad()
def dictionary_step(A: torch.Tensor, x: torch.Tensor, z: torch.Tensor, lr: float, kappa: float) -> None:
    """One gradient step, in place, on ``0.5 mean_rows ||x - A z||^2 + kappa ||A||_F^2`` with ``z`` fixed.

    ``A <- A + lr ((x - A z)^T z / B - 2 kappa A)``: how every method of the benchmark learns its dictionary
    (FISTA codes, or the selected sample of a variational posterior).

    Examples
    --------
    >>> A = torch.zeros(2, 1); x = torch.tensor([[1.0, 0.0]]); z = torch.tensor([[1.0]])
    >>> dictionary_step(A, x, z, lr=0.5, kappa=0.0); A.T
    tensor([[0.5000, 0.0000]])
    """
    resid = x - z @ A.T
    A.add_(lr * (resid.T @ z / x.shape[0] - 2.0 * kappa * A))
