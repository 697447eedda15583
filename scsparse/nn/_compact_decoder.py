"""The fused one-hidden-layer decoder on each gene's own inputs: a gene's first layer sums over its active factors.

A decoder with entries of ``W`` fixed at zero (:meth:`~scsparse.nn.MaskedDecoder.prune_`) computes each gene from
the factors active in it. :class:`~scsparse.nn._fused_decoder.FusedMaskedLayer` gives every gene of a call the
same inputs, so a group of genes pays for the union of their factors. ``CompactMaskedLayer`` takes, for each gene,
the list of its input columns ``index[g]`` (padded with the index of a column of zeros) and their weights ``w[g]``:

    u[g, b, :] = sum_j w[g, j] z[b, index[g, j]] A[:, index[g, j]] (+ s_b),
    out[n, b, g] = V[n, g, :] · relu(u[g, b, :]) + c[n, g],

so a gene with ``m`` inputs costs ``m`` multiply-adds per hidden unit in its first layer and in every gradient
that goes through it, whatever the number of factors. It recomputes each chunk's activations in the backward pass
as ``FusedMaskedLayer`` does, in the same :class:`~scsparse.nn._fused_decoder.FusedWorkspace`, with the same two
backward forms (one head without covariates never forms ``du``; see ``FusedMaskedLayer``'s module notes); the
first layer's gradient of each gene is added to the columns it read. The same function with the same gradients as
the op-by-op network on the active entries, up to float rounding (tested in float64).
"""

from __future__ import annotations

import torch

from ._fused_decoder import FusedWorkspace, genes_last

__all__ = ["COMPACT_PAD_TO", "CompactMaskedLayer", "compact_index"]

_relu_backward = torch.ops.aten.threshold_backward.grad_input
#: A gene's list of inputs is padded to a multiple of this many columns; genes of one padded width run together.
COMPACT_PAD_TO = 4


def compact_index(active: torch.Tensor, always: int = 0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Genes by padded number of inputs, with each gene's input columns: ``[(genes, index), ...]``.

    Parameters
    ----------
    active
        Boolean ``(G, K)``: the factors active in each gene.
    always
        Inputs every gene reads after its factors (the first-layer bias as a constant input): columns
        ``K, ..., K + always - 1``.

    Returns
    -------
    list of (genes, index)
        For each padded width ``m`` (a multiple of :data:`COMPACT_PAD_TO`), the genes with that width and their
        ``(n_genes, m)`` input columns in increasing order, padded with ``K + always``, the index of a zero column.

    Examples
    --------
    >>> import torch
    >>> [(g.tolist(), i.tolist()) for g, i in compact_index(torch.tensor([[1, 0, 1], [0, 1, 0]]).bool(), always=1)]
    [([0, 1], [[0, 2, 3, 4], [1, 3, 4, 4]])]
    """
    n_genes, n_factors = active.shape
    columns = torch.cat([active, active.new_ones(n_genes, always)], dim=1)
    counts = columns.sum(dim=1)
    widths = (counts + COMPACT_PAD_TO - 1) // COMPACT_PAD_TO * COMPACT_PAD_TO
    # active columns first, in order: a stable sort of "inactive" puts them ahead of the inactive ones
    order = torch.argsort((~columns).to(torch.int8), dim=1, stable=True)
    zero_column = n_factors + always
    widest = int(widths.max()) if n_genes else 0
    order = torch.nn.functional.pad(order, (0, max(0, widest - order.shape[1])), value=zero_column)
    groups = []
    for width in torch.unique(widths).tolist():
        genes = torch.nonzero(widths == width).flatten()
        index = order[genes, :width]
        valid = torch.arange(width, device=active.device)[None, :] < counts[genes, None]
        groups.append((genes, torch.where(valid, index, torch.full_like(index, zero_column))))
    return groups


class CompactMaskedLayer(torch.autograd.Function):
    """``out[n, b, g] = V[n, g] · relu(sum_j w[g, j] z[b, i_gj] A[:, i_gj] + s_b) + c[n, g]``, chunked, recomputed.

    Inputs: ``z`` ``(B, n_in)``, ``w`` ``(G, m)`` the weights of each gene's inputs, ``index`` ``(G, m)`` their
    columns in ``[0, n_in]`` (``n_in`` reads a column of zeros), ``first`` ``A`` ``(H, n_in)``, ``cov_term`` ``s``
    ``(B, H)`` or ``None``, ``head`` ``V`` ``(n_heads, G, H)``, ``head_bias`` ``c`` ``(n_heads, G)``, the genes per
    chunk and optionally a ``FusedWorkspace``. Output ``(n_heads, B, G)``. ``index`` gets no gradient.

    Examples
    --------
    >>> import torch
    >>> z, first = torch.randn(4, 3), torch.randn(8, 3)
    >>> index = torch.tensor([[0, 2], [1, 3]])  # gene 1 reads factor 1 and the zero column
    >>> w = torch.tensor([[0.5, -1.0], [2.0, 0.0]])
    >>> head, bias = torch.randn(1, 2, 8), torch.zeros(1, 2)
    >>> out = CompactMaskedLayer.apply(z, w, index, first, None, head, bias, 1)
    >>> dense_w = torch.tensor([[0.5, 0.0, -1.0], [0.0, 2.0, 0.0]])
    >>> reference = torch.einsum("gbh,ngh->nbg", torch.relu((dense_w[:, None] * z[None]) @ first.t()), head)
    >>> torch.allclose(out, reference, atol=1e-5)
    True
    """

    @staticmethod
    def forward(
        ctx,
        z: torch.Tensor,
        w: torch.Tensor,
        index: torch.Tensor,
        first: torch.Tensor,
        cov_term: torch.Tensor | None,
        head: torch.Tensor,
        head_bias: torch.Tensor,
        chunk: int,
        workspace: FusedWorkspace | None = None,
    ) -> torch.Tensor:
        z_ext = torch.nn.functional.pad(z, (0, 1))  # the zero column the padding reads
        first_t = torch.nn.functional.pad(first, (0, 1)).t().contiguous()  # (n_in + 1, H)
        n_genes, width = w.shape
        workspace = FusedWorkspace() if workspace is None else workspace
        out = workspace.genes_first(z, head.shape[0], n_genes, z.shape[0])
        work = workspace.prepare(z, min(chunk, n_genes), z.shape[0], width, first.shape[0])
        for start in range(0, n_genes, chunk):
            rows = slice(start, min(start + chunk, n_genes))
            *_, u = _pre_activation(work, z_ext, w[rows], index[rows], first_t, cov_term)
            a = u.relu_()
            for n in range(head.shape[0]):  # out[n, g] = V[n, g] a[g]^T: (1, H) x (H, B) per gene
                torch.bmm(head[n, rows, None, :], a.transpose(1, 2), out=out[n, rows, None, :])
        ctx.save_for_backward(z_ext, w, index, first_t, cov_term, head)
        ctx.chunk, ctx.workspace = chunk, workspace
        return genes_last(out.transpose(1, 2), head_bias)

    @staticmethod
    def backward(ctx, dout: torch.Tensor):
        z_ext, w, index, first_t, cov_term, head = ctx.saved_tensors
        chunk, (n_genes, width), n_heads = ctx.chunk, w.shape, head.shape[0]
        n_cells, n_hidden = z_ext.shape[0], first_t.shape[1]
        d = ctx.workspace.genes_first(z_ext, n_heads, n_genes, n_cells).copy_(dout.transpose(1, 2))
        grads = {
            "z": torch.zeros_like(z_ext),
            "w": torch.empty_like(w),
            "first_t": torch.zeros_like(first_t),
            "head": torch.empty_like(head),
            "cov": None if cov_term is None else torch.zeros_like(cov_term),
        }
        rank_one = n_heads == 1 and cov_term is None
        path = "rank_one" if rank_one else "general"
        work = ctx.workspace.prepare(z_ext, min(chunk, n_genes), n_cells, width, n_hidden, backward=path)
        chunk_gradients = _rank_one_chunk if rank_one else _general_chunk
        for start in range(0, n_genes, chunk):
            rows = slice(start, min(start + chunk, n_genes))
            chunk_gradients(work, grads, rows, z_ext, w, index, first_t, cov_term, head, d)
        first_grad = grads["first_t"][:-1].t()
        return grads["z"][:, :-1], grads["w"], None, first_grad, grads["cov"], grads["head"], dout.sum(1), None, None


def _pre_activation(work, z_ext, w_rows, index_rows, first_t, cov_term):
    """A chunk's inputs ``z[b, i_gj]`` ``(Gc, B, m)``, ``w ⊙`` them (in ``work.wz``), its first-layer rows
    ``A[:, i_gj]^T`` ``(Gc, m, H)`` and ``u`` ``(Gc, B, H)`` (in ``work.hidden``).
    """
    n = index_rows.shape[0]
    inputs = z_ext[:, index_rows].permute(1, 0, 2)  # (Gc, B, m)
    wz = torch.mul(inputs, w_rows[:, None, :], out=work.wz[:n])
    rows_t = first_t[index_rows]  # (Gc, m, H)
    u = torch.bmm(wz, rows_t, out=work.hidden[:n])
    if cov_term is not None:
        u += cov_term
    return inputs, wz, rows_t, u


def _rank_one_chunk(work, grads, rows, z_ext, w, index, first_t, cov_term, head, d) -> None:
    """One head without covariates: ``FusedMaskedLayer``'s rank-one gradients on each gene's own inputs."""
    n, n_hidden = rows.stop - rows.start, first_t.shape[1]
    inputs, wz, rows_t, u = _pre_activation(work, z_ext, w[rows], index[rows], first_t, None)
    relu_grad = u.gt_(0)  # r, in place of u
    d_rows, v = d[0, rows, :, None], head[0, rows]  # (Gc, B, 1), (Gc, H)
    m = torch.bmm(wz.mul_(d_rows).transpose(1, 2), relu_grad, out=work.per_factor[:n])  # (Gc, m, H)
    torch.sum(torch.mul(m, rows_t, out=work.per_factor_t[:n].view_as(m)), dim=1, out=grads["head"][0, rows])
    grads["first_t"].index_add_(0, index[rows].flatten(), m.mul_(v[:, None, :]).view(-1, n_hidden))
    v_first = torch.mul(rows_t, v[:, None, :], out=work.per_factor_t[:n].view_as(m))  # V[g] ⊙ A rows: (Gc, m, H)
    grad_wz = torch.bmm(relu_grad, v_first.transpose(1, 2), out=work.grad_wz[:n]).mul_(d_rows)  # (Gc, B, m)
    _input_gradients(grads, rows, w, index, inputs, grad_wz)


def _general_chunk(work, grads, rows, z_ext, w, index, first_t, cov_term, head, d) -> None:
    """Any heads, covariates' term: ``du = relu'(u) ⊙ (sum_n dout[n] V[n])`` formed in full."""
    n, n_hidden = rows.stop - rows.start, first_t.shape[1]
    inputs, wz, rows_t, a = _pre_activation(work, z_ext, w[rows], index[rows], first_t, cov_term)
    a = a.relu_()
    for h in range(head.shape[0]):  # dV[h, g] = dout[h, g] a[g]: (1, B) x (B, H) per gene
        torch.bmm(d[h, rows, None, :], a, out=grads["head"][h, rows, None, :])
    grad_u = torch.mul(d[0, rows, :, None], head[0, rows, None, :], out=work.scratch[:n])
    for h in range(1, head.shape[0]):
        grad_u.addcmul_(d[h, rows, :, None], head[h, rows, None, :])
    _relu_backward(grad_u, a, 0, grad_input=grad_u)
    first_rows = torch.bmm(wz.transpose(1, 2), grad_u)  # (Gc, m, H)
    grads["first_t"].index_add_(0, index[rows].flatten(), first_rows.view(-1, n_hidden))
    grad_wz = torch.bmm(grad_u, rows_t.transpose(1, 2), out=work.grad_wz[:n])  # (Gc, B, m)
    _input_gradients(grads, rows, w, index, inputs, grad_wz)
    if grads["cov"] is not None:
        grads["cov"] += grad_u.sum(0)


def _input_gradients(grads, rows, w, index, inputs, grad_wz) -> None:
    """``dw[g, j] = sum_b d(w ⊙ z)[g, b, j] z[b, i_gj]`` and ``dz[b, i_gj] += d(w ⊙ z)[g, b, j] w[g, j]``."""
    torch.sum(grad_wz * inputs, dim=1, out=grads["w"][rows])
    per_input = grad_wz.mul_(w[rows, None, :]).permute(1, 0, 2).reshape(grad_wz.shape[1], -1)  # (B, Gc * m)
    grads["z"].index_add_(1, index[rows].flatten(), per_input)
