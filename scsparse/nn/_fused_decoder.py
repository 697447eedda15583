"""A one-hidden-layer ReLU masked decoder as one autograd function, recomputing its activations by chunk.

For gene ``g`` and cell ``b`` the network of :class:`~scsparse.nn.MaskedDecoder` with one hidden layer is

    u[g, b, :] = A (w_g ⊙ z_b) (+ s_b),    out[n, b, g] = V[n, g, :] · relu(u[g, b, :]) + c[n, g]

with ``A`` the first layer (its bias as the weight of a constant input, see ``MaskedDecoder._decode_rows``),
``s_b`` the covariates' term, ``V`` the per-gene output units and ``c`` their biases. Through autograd every
chunk of genes keeps its ``(genes, cells, hidden)`` activations until the backward pass, so a training step
writes them all to memory and reads them back, and runs a batched matrix-vector product per gene for the
output units. ``FusedMaskedLayer`` keeps nothing of that size: the forward pass computes each chunk's
output and drops its activations; the backward pass recomputes them chunk by chunk and, while the chunk is in
the cache, computes every gradient from it:

    du = relu'(u) ⊙ (sum_n dout[n] V[n]),   dV[n, g] = sum_b dout[n, b, g] relu(u[g, b]),
    dA = sum_{g,b} du[g, b] (w_g ⊙ z_b)^T,   d(w_g ⊙ z_b) = A^T du[g, b],   ds_b = sum_g du[g, b].

The output units and their gradient are computed per gene as a row vector times the activations,
``V[n, g] a[g]^T`` and ``dout[n, g] a[g]``, in batched products that read the chunk once; an elementwise product
and a sum would write and read it twice more, which measured as long as the chunk's first-layer product.

With one output head and no covariates (the default negative binomial decoder), ``du`` has rank one per gene and
cell, ``du[g, b] = dout[g, b] (relu'(u[g, b]) ⊙ V[g])``, so the backward pass never forms it: every gradient is
one of two batched products with the ReLU's 0/1 derivative (``_rank_one_chunk``), and the chunk's activations are
read three times instead of six. Several heads or covariates take the general path, ``_general_chunk``.

One extra matrix product per chunk (the recomputation) buys a step whose memory traffic stays within a chunk, which
makes the CPU step faster than the autograd path's (``scsparse bench speed`` measures both side by side; figures
with their hardware in :doc:`/benchmarks/speed`). The result is the same function with the same gradients as the
autograd path, up to float rounding (tested).
"""

from __future__ import annotations

import torch

__all__ = ["FusedMaskedLayer", "FusedWorkspace", "genes_last", "padded_width"]

_relu_backward = torch.ops.aten.threshold_backward.grad_input
#: The factor dimension is padded with zeros to a multiple of this: CPU matrix kernels are much slower on odd
#: inner or outer dimensions than on multiples of 8 (measured in :doc:`/benchmarks/speed`); the zeros add nothing.
PAD_FACTORS_TO = 8


def padded_width(n_inputs: int) -> int:
    """The factor dimension ``FusedMaskedLayer`` computes with for ``n_inputs`` inputs.

    Examples
    --------
    >>> padded_width(21), padded_width(24), padded_width(25)
    (24, 24, 32)
    """
    return -(-n_inputs // PAD_FACTORS_TO) * PAD_FACTORS_TO


def genes_last(out: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """``out`` ``(n_heads, B, G)``, a view in any layout, plus ``bias`` ``(n_heads, G)``, as a new contiguous tensor.

    The decoders compute gene by gene, so their outputs are laid out genes first; the softmax over genes and the
    likelihood that follow run several times slower on that layout than on a contiguous one, since each of their
    reductions then reads memory with a stride of the batch instead of in order (measured in
    :doc:`/benchmarks/speed`). The result never shares memory with ``out``, which may be a workspace buffer.
    Differentiable.

    Examples
    --------
    >>> import torch
    >>> out = genes_last(torch.zeros(1, 3, 2).transpose(1, 2), torch.ones(1, 3))
    >>> out.shape, out.is_contiguous()
    (torch.Size([1, 2, 3]), True)
    """
    return out.clone(memory_format=torch.contiguous_format).add_(bias[:, None, :])


def _pad_factors(t: torch.Tensor) -> torch.Tensor:
    """``t`` with zero columns appended up to :func:`padded_width` (zeros add nothing)."""
    extra = padded_width(t.shape[1]) - t.shape[1]
    return torch.nn.functional.pad(t, (0, extra)) if extra else t


class FusedWorkspace:
    """Buffers for one chunk of ``FusedMaskedLayer``, reused by every chunk and, when kept, by every call.

    A fresh multi-megabyte tensor per operation and chunk comes from the system allocator on the CPU, which
    hands back new pages (zeroed on first touch) often enough to cost as much as the arithmetic; allocating the
    buffers afresh at every call fragmented the heap, so that the peak memory of a long run grew with the number
    of steps. :class:`~scsparse.nn.MaskedDecoder` keeps one workspace and passes it to every call; a buffer is
    reallocated only when a call needs a larger one or another device or dtype. Nothing of it is saved or pickled.

    Examples
    --------
    >>> import torch
    >>> ws = FusedWorkspace()
    >>> ws.prepare(torch.zeros(1), chunk=2, n_cells=3, n_factors=4, n_hidden=5).hidden.shape
    torch.Size([2, 3, 5])
    """

    def __init__(self) -> None:
        self._flat: dict[str, torch.Tensor] = {}

    def __getstate__(self) -> dict:
        return {"_flat": {}}  # scratch space: never saved, pickled or copied

    def _buffer(self, name: str, like: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
        """A ``shape`` view of buffer ``name``, grown (never shrunk) when it is too small or elsewhere."""
        flat = self._flat.get(name)
        numel = int(torch.Size(shape).numel())
        if flat is None or flat.numel() < numel or flat.device != like.device or flat.dtype != like.dtype:
            # a normal tensor even when the first call runs under inference mode, so training can write into it
            with torch.inference_mode(False):
                flat = self._flat[name] = torch.empty(numel, device=like.device, dtype=like.dtype)
        return flat[:numel].view(shape)

    def prepare(
        self,
        like: torch.Tensor,
        chunk: int,
        n_cells: int,
        n_factors: int,
        n_hidden: int,
        backward: str | None = None,
    ) -> FusedWorkspace:
        """Views of the buffers for chunks of ``chunk`` genes (allocated or grown as needed); returns self.

        The forward pass needs ``wz`` and ``hidden``; ``backward="general"`` adds ``grad_wz`` and the
        ``(Gc, B, H)`` ``scratch``, ``backward="rank_one"`` adds ``grad_wz`` and the small ``per_factor`` and
        ``per_factor_t`` (see ``_general_chunk`` and ``_rank_one_chunk``), so no path allocates another's buffers.
        """
        self.wz = self._buffer("wz", like, (chunk, n_cells, n_factors))
        self.hidden = self._buffer("hidden", like, (chunk, n_cells, n_hidden))
        if backward is not None:
            self.grad_wz = self._buffer("grad_wz", like, (chunk, n_cells, n_factors))
        if backward == "general":
            self.scratch = self._buffer("scratch", like, (chunk, n_cells, n_hidden))
        elif backward == "rank_one":
            self.per_factor = self._buffer("per_factor", like, (chunk, n_factors, n_hidden))
            self.per_factor_t = self._buffer("per_factor_t", like, (chunk, n_hidden, n_factors))
        return self

    def genes_first(self, like: torch.Tensor, n_heads: int, n_genes: int, n_cells: int) -> torch.Tensor:
        """A ``(n_heads, G, B)`` buffer for the outputs, or their gradient, laid out genes first.

        The forward pass writes its outputs here and returns them cells by genes (:func:`genes_last`); the
        backward pass copies the outputs' gradient here genes first. Neither keeps it beyond the call.
        """
        return self._buffer("genes_first", like, (n_heads, n_genes, n_cells))

    def pre_activation(
        self, z: torch.Tensor, w: torch.Tensor, first_t: torch.Tensor, cov_term: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``w ⊙ z`` and ``u = (w ⊙ z) A^T + s`` for the chunk of genes ``w``: ``(Gc, B, K)``, ``(Gc, B, H)``."""
        n = w.shape[0]
        wz = torch.mul(w[:, None, :], z[None], out=self.wz[:n])
        u = self.hidden[:n]
        torch.mm(wz.view(-1, wz.shape[-1]), first_t, out=u.view(-1, u.shape[-1]))
        if cov_term is not None:
            u += cov_term
        return wz, u

    def hidden_layer(
        self, z: torch.Tensor, w: torch.Tensor, first_t: torch.Tensor, cov_term: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``w ⊙ z`` and ``relu(u)`` (see :meth:`pre_activation`), the latter in place of ``u``."""
        wz, u = self.pre_activation(z, w, first_t, cov_term)
        return wz, u.relu_()


class FusedMaskedLayer(torch.autograd.Function):
    """``out[n, b, g] = V[n, g] · relu(A (w_g ⊙ z_b) + s_b) + c[n, g]`` by chunks of genes, recomputed backward.

    Inputs: ``z`` ``(B, K)``, ``w`` ``(G, K)``, ``first`` ``A`` ``(H, K)``, ``cov_term`` ``s`` ``(B, H)`` or
    ``None``, ``head`` ``V`` ``(n_heads, G, H)``, ``head_bias`` ``c`` ``(n_heads, G)``, the number of genes
    per chunk and optionally a ``FusedWorkspace`` to keep the buffers in between calls. Output:
    ``(n_heads, B, G)``. Peak memory is one chunk's activations, ``chunk x B x H`` floats.

    Examples
    --------
    >>> import torch
    >>> z, w, first = torch.randn(4, 3), torch.randn(5, 3), torch.randn(8, 3)
    >>> head, bias = torch.randn(1, 5, 8), torch.zeros(1, 5)
    >>> out = FusedMaskedLayer.apply(z, w, first, None, head, bias, 2)
    >>> reference = torch.einsum("gbh,ngh->nbg", torch.relu((w[:, None] * z[None]) @ first.t()), head)
    >>> torch.allclose(out, reference, atol=1e-5)
    True
    """

    @staticmethod
    def forward(
        ctx,
        z: torch.Tensor,
        w: torch.Tensor,
        first: torch.Tensor,
        cov_term: torch.Tensor | None,
        head: torch.Tensor,
        head_bias: torch.Tensor,
        chunk: int,
        workspace: FusedWorkspace | None = None,
    ) -> torch.Tensor:
        n_factors = z.shape[1]
        z, w, first = _pad_factors(z), _pad_factors(w), _pad_factors(first)
        n_genes = w.shape[0]
        first_t = first.t()
        workspace = FusedWorkspace() if workspace is None else workspace
        out = workspace.genes_first(z, head.shape[0], n_genes, z.shape[0])
        work = workspace.prepare(z, min(chunk, n_genes), z.shape[0], z.shape[1], first.shape[0])
        for start in range(0, n_genes, chunk):
            rows = slice(start, min(start + chunk, n_genes))
            _, a = work.hidden_layer(z, w[rows], first_t, cov_term)  # (Gc, B, H)
            for n in range(head.shape[0]):  # out[n, g] = V[n, g] a[g]^T: (1, H) x (H, B) per gene
                torch.bmm(head[n, rows, None, :], a.transpose(1, 2), out=out[n, rows, None, :])
        ctx.save_for_backward(z, w, first, cov_term, head)
        ctx.chunk, ctx.n_factors, ctx.workspace = chunk, n_factors, workspace
        return genes_last(out.transpose(1, 2), head_bias)

    @staticmethod
    def backward(ctx, dout: torch.Tensor):
        z, w, first, cov_term, head = ctx.saved_tensors
        chunk, n_genes, n_heads = ctx.chunk, w.shape[0], head.shape[0]
        n_cells, n_in, n_hidden = z.shape[0], z.shape[1], first.shape[0]
        d = ctx.workspace.genes_first(z, n_heads, n_genes, n_cells).copy_(dout.transpose(1, 2))  # (n_heads, G, B)
        grads = _Gradients(
            w=torch.empty_like(w),
            z=torch.zeros_like(z),
            first_t=first.new_zeros(n_in, n_hidden),
            head=torch.empty_like(head),
            cov=None if cov_term is None else torch.zeros_like(cov_term),
        )
        rank_one = n_heads == 1 and cov_term is None
        chunk_gradients = _rank_one_chunk if rank_one else _general_chunk
        path = "rank_one" if rank_one else "general"
        work = ctx.workspace.prepare(z, min(chunk, n_genes), n_cells, n_in, n_hidden, backward=path)
        first_t = first.t().contiguous()  # A^T, contiguous for the elementwise products with it
        for start in range(0, n_genes, chunk):
            rows = slice(start, min(start + chunk, n_genes))
            chunk_gradients(work, grads, rows, z, w, first, first_t, cov_term, head, d)
        k = ctx.n_factors
        first_grad = grads.first_t.t()[:, :k]
        return grads.z[:, :k], grads.w[:, :k], first_grad, grads.cov, grads.head, dout.sum(1), None, None


class _Gradients:
    """The gradients ``FusedMaskedLayer.backward`` accumulates chunk by chunk (``first_t``: of ``A^T``)."""

    def __init__(self, w, z, first_t, head, cov) -> None:
        self.w, self.z, self.first_t, self.head, self.cov = w, z, first_t, head, cov


def _general_chunk(work, grads, rows, z, w, first, first_t, cov_term, head, d) -> None:
    """One chunk's gradients from ``du = relu'(u) ⊙ (sum_n dout[n] V[n])``, formed in full (any heads, covariates)."""
    n_rows, n_in, n_hidden = rows.stop - rows.start, z.shape[1], first.shape[0]
    wz, a = work.hidden_layer(z, w[rows], first_t, cov_term)  # recomputed: (Gc, B, K), (Gc, B, H)
    for n in range(head.shape[0]):  # dV[n, g] = dout[n, g] a[g]: (1, B) x (B, H) per gene
        torch.bmm(d[n, rows, None, :], a, out=grads.head[n, rows, None, :])
    grad_u = torch.mul(d[0, rows, :, None], head[0, rows, None, :], out=work.scratch[:n_rows])  # d out / d a
    for n in range(1, head.shape[0]):
        grad_u.addcmul_(d[n, rows, :, None], head[n, rows, None, :])
    _relu_backward(grad_u, a, 0, grad_input=grad_u)  # d out / d u, in place
    flat_u = grad_u.view(-1, n_hidden)
    grads.first_t.addmm_(wz.view(-1, n_in).t(), flat_u)
    grad_wz = work.grad_wz[:n_rows]
    torch.mm(flat_u, first, out=grad_wz.view(-1, n_in))
    _input_gradients(grads, rows, z, w, wz, grad_wz)
    if grads.cov is not None:
        grads.cov += grad_u.sum(0)


def _rank_one_chunk(work, grads, rows, z, w, first, first_t, cov_term, head, d) -> None:
    """One chunk's gradients for one output head without covariates, never forming ``du`` (see the module notes).

    With one head, ``du[g, b] = dout[g, b] (r[g, b] ⊙ V[g])`` for the ReLU's derivative ``r`` (0 or 1), and since
    ``u[g, b] = A (w_g ⊙ z_b)`` every gradient is a product with ``r`` alone:

        m[g] = sum_b dout[g, b] (w_g ⊙ z_b) r[g, b]^T                       (K x H per gene)
        dV[g, h] = sum_k A[h, k] m[g, k, h],    dA^T = sum_g m[g] ⊙ V[g],
        d(w_g ⊙ z_b) = dout[g, b] (r[g, b] (V[g] ⊙ A)).

    Two batched products with ``r`` replace the output weights' product with ``relu(u)``, the outer product, the
    ReLU's gradient and the two products with ``du``: the chunk's activations are read three times, not six.
    """
    n_rows = rows.stop - rows.start
    wz, u = work.pre_activation(z, w[rows], first_t, None)  # recomputed: (Gc, B, K), (Gc, B, H)
    relu_grad = u.gt_(0)  # r, in place of u
    d_rows, v = d[0, rows, :, None], head[0, rows]  # (Gc, B, 1), (Gc, H)
    m = torch.bmm(wz.mul_(d_rows).transpose(1, 2), relu_grad, out=work.per_factor[:n_rows])  # (Gc, K, H)
    torch.sum(torch.mul(m, first_t, out=work.per_factor_t[:n_rows].view_as(m)), dim=1, out=grads.head[0, rows])
    grads.first_t += m.mul_(v[:, None, :]).sum(0)
    v_first = torch.mul(v[:, :, None], first, out=work.per_factor_t[:n_rows])  # V[g] ⊙ A: (Gc, H, K)
    grad_wz = torch.bmm(relu_grad, v_first, out=work.grad_wz[:n_rows]).mul_(d_rows)  # (Gc, B, K)
    _input_gradients(grads, rows, z, w, wz, grad_wz)


def _input_gradients(grads, rows, z, w, wz, grad_wz) -> None:
    """``dw_g = sum_b d(w_g ⊙ z_b) ⊙ z_b`` and ``dz_b += sum_g d(w_g ⊙ z_b) ⊙ w_g``; overwrites ``wz``, ``grad_wz``."""
    torch.sum(torch.mul(grad_wz, z, out=wz), dim=1, out=grads.w[rows])
    grads.z += grad_wz.mul_(w[rows, None, :]).sum(0)
