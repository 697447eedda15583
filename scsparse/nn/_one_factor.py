"""Genes driven by one factor through a one-hidden-layer ReLU network with a first-layer bias, without the network.

A gene ``g`` whose row of ``W`` has one nonzero entry ``w_gk`` sees the scalar ``t = z_k w_gk`` only, and its output

    f_g(t) = sum_h V[g, h] relu(A[h, k] t + b[h]) + c[g]

is piecewise linear in ``t`` with its kinks at ``t_h = -b[h] / A[h, k]``. The kinks depend on the factor, not on the
gene, so for every factor they are sorted once; between two neighbouring kinks the same hidden units are on and
``f_g(t) = alpha[g, i] t + beta[g, i]``, where ``alpha`` and ``beta`` sum ``V[g, h] A[h, k]`` and ``V[g, h] b[h]`` over
the units that are on in interval ``i`` (cumulative sums over the sorted kinks). A (cell, gene) pair then costs a
binary search among ``H`` kinks and one multiply-add instead of ``H`` hidden units, and the tables cost ``H`` per gene,
not ``H`` per cell and gene. The result is the network's function exactly (up to float rounding: the sums run in
another order), and autograd differentiates it through the tables: the gradients in ``t``, ``A``, ``b``, ``V`` and
``c`` are the network's, except at a kink, where ReLU has none.
"""

from __future__ import annotations

import torch

__all__ = ["one_factor_outputs"]


def _interval_sums(contrib: torch.Tensor, on_above: torch.Tensor) -> torch.Tensor:
    """``(G, H + 1)``: for each interval ``i`` between sorted kinks, ``contrib`` summed over the units on in it.

    Units ``on_above`` are on above their kink, i.e. in the intervals after their rank; the others below it.
    """
    pad = contrib.new_zeros(contrib.shape[0], 1)
    rising = torch.where(on_above, contrib, 0.0)
    falling = contrib - rising
    rising_on = torch.cat([pad, rising.cumsum(1)], dim=1)  # units ranked before interval i
    falling_on = falling.sum(1, keepdim=True) - torch.cat([pad, falling.cumsum(1)], dim=1)  # ranked from i on
    return rising_on + falling_on


def one_factor_outputs(
    t: torch.Tensor, factor: torch.Tensor, first: torch.Tensor, bias: torch.Tensor, head: torch.Tensor
) -> torch.Tensor:
    """Outputs ``V[n, g] · relu(A[:, k_g] t[b, g] + b)`` of genes with one active factor, ``(n_heads, B, G1)``.

    Parameters
    ----------
    t
        ``(B, G1)``: ``z[b, k_g] w[g, k_g]`` for each cell and gene.
    factor
        ``(G1,)`` long: each gene's factor ``k_g``.
    first
        ``(H, K)``: the first layer ``A``.
    bias
        ``(H,)``: the first layer's bias ``b``.
    head
        ``(n_heads, G1, H)``: the genes' output units ``V``.

    Returns
    -------
    torch.Tensor
        ``(n_heads, B, G1)``, without the output biases.

    Examples
    --------
    >>> import torch
    >>> t, factor = torch.randn(4, 3), torch.tensor([0, 1, 0])
    >>> first, bias, head = torch.randn(8, 2), torch.randn(8), torch.randn(1, 3, 8)
    >>> out = one_factor_outputs(t, factor, first, bias, head)
    >>> hidden = torch.relu(t[:, :, None] * first.t()[factor][None] + bias)  # (B, G1, H)
    >>> torch.allclose(out, torch.einsum("bgh,ngh->nbg", hidden, head), atol=1e-5)
    True
    """
    with torch.no_grad():
        slope = first.t()  # (K, H)
        flat = slope == 0
        # a unit with A[h, k] = 0 is on everywhere (b > 0) or nowhere: its kink at -inf or +inf, on above it
        kinks = torch.where(flat, torch.where(bias > 0, -torch.inf, torch.inf), -bias / torch.where(flat, 1.0, slope))
        kinks, order = kinks.sort(dim=1)  # (K, H)
        gene_order = order[factor]  # (G1, H): each gene's units in the order of its factor's kinks
        on_above = (slope >= 0)[factor].gather(1, gene_order)
        interval = torch.searchsorted(kinks[factor], t.t().contiguous())  # (G1, B): kinks below t
    a = first.t()[factor].gather(1, gene_order)  # (G1, H), differentiable in A
    b = bias[gene_order]
    outs = []
    for n in range(head.shape[0]):
        v = head[n].gather(1, gene_order)
        alpha = _interval_sums(v * a, on_above).gather(1, interval)  # (G1, B)
        beta = _interval_sums(v * b, on_above).gather(1, interval)
        outs.append((alpha * t.t() + beta).t())
    return torch.stack(outs)
