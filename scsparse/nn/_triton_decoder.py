"""The one-hidden-layer ReLU masked decoder as two Triton kernels, for CUDA GPUs.

The function is :class:`~scsparse.nn._fused_decoder.FusedMaskedLayer`'s (see there for the notation):

    u[g, b, :] = A (w_g ⊙ z_b) (+ s_b),    out[n, b, g] = V[n, g, :] · relu(u[g, b, :]) + c[n, g].

On a GPU the autograd path writes the ``(genes, cells, hidden)`` activations to memory and reads them back, and is
bound by that traffic (:doc:`/benchmarks/speed`). Here a program holds a tile of cells and walks over a group of
genes; for each gene it forms ``u`` of its tile in registers (one ``(cells, factors) x (factors, hidden)`` product)
and writes only the gene's outputs. The backward kernel recomputes ``u`` the same way and forms every gradient from
it while it is in registers:

    du = relu'(u) ⊙ (sum_n dout[n] V[n]),   dV[n, g] = sum_b dout[n, b, g] relu(u[g, b]),
    dA = sum_{g,b} du[g, b] (w_g ⊙ z_b)^T,   d(w_g ⊙ z_b) = A^T du[g, b],   ds_b = sum_g du[g, b].

Sums over genes are kept per gene group and sums over cells per cell tile, in buffers that torch adds up after
the kernel: no atomic additions, so a step gives the same numbers every time. Nothing of size
``genes x cells x hidden`` is ever stored; the buffers hold ``(cell tiles) x genes x hidden`` and
``(gene groups) x cells x hidden`` floats.

The matrix products run as three TF32 tensor-core products each (``input_precision="tf32x3"``), as accurate as
float32 against a float64 reference, or in plain TF32 where torch allows it for its own float32 matrix products
(``torch.backends.cuda.matmul.allow_tf32``): the kernels compute what the autograd path computes, up to rounding.
Triton's float32 FMA products (``"ieee"``) were faster but gave gradients 1,000 times less accurate in one
measured case (:doc:`/benchmarks/speed`), so they are not used. Only float32 inputs are taken; shapes whose offsets
would not fit 32-bit integers (:func:`kernel_fits`) are left to the chunked path. Triton's interpreter
(``TRITON_INTERPRET=1`` before the kernels are first built) runs the same kernels on CPU tensors, which is how the
test suite checks them without a GPU.
"""

from __future__ import annotations

import functools
import importlib.util
import math
import os

import torch

from ._fused_decoder import genes_last

__all__ = ["TritonMaskedLayer", "kernel_fits", "triton_available"]

#: Cells per program (at most; fewer, down to 16, for a smaller batch).
BLOCK_CELLS = 64
#: Programs to aim for per kernel launch (cell tiles x gene groups), enough to fill a large GPU several times over.
TARGET_PROGRAMS = 1024
#: Warps per program of the forward and the backward kernel (the backward holds more tiles of cells x hidden units).
FORWARD_WARPS, BACKWARD_WARPS = 4, 8


def triton_available(device: torch.device | str) -> bool:
    """Whether the Triton kernels can run on ``device``: a CUDA device with Triton installed.

    Examples
    --------
    >>> triton_available("cpu")
    False
    """
    device = torch.device(device)
    return device.type == "cuda" and torch.cuda.is_available() and importlib.util.find_spec("triton") is not None


def _interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "yes", "on")


@functools.cache
def _kernels(interpret: bool):
    """The two kernels, built on first use (``interpret``: the state of ``TRITON_INTERPRET`` they were built under)."""
    import triton
    import triton.language as tl

    @triton.jit
    def forward_kernel(
        z_ptr, w_ptr, a_ptr, s_ptr, v_ptr, out_ptr,
        n_cells, n_genes, n_factors, n_hidden,
        HAS_COV: tl.constexpr, N_HEADS: tl.constexpr, PRECISION: tl.constexpr,
        BLOCK_B: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_H: tl.constexpr, GENES_PER_GROUP: tl.constexpr,
    ):  # fmt: skip
        tile, group = tl.program_id(0), tl.program_id(1)
        rb = tile * BLOCK_B + tl.arange(0, BLOCK_B)
        rk = tl.arange(0, BLOCK_K)
        rh = tl.arange(0, BLOCK_H)
        mb, mk, mh = rb < n_cells, rk < n_factors, rh < n_hidden
        z = tl.load(z_ptr + rb[:, None] * n_factors + rk[None, :], mask=mb[:, None] & mk[None, :], other=0.0)
        a_t = tl.load(a_ptr + rh[None, :] * n_factors + rk[:, None], mask=mk[:, None] & mh[None, :], other=0.0)
        if HAS_COV:
            s = tl.load(s_ptr + rb[:, None] * n_hidden + rh[None, :], mask=mb[:, None] & mh[None, :], other=0.0)
        for i in range(0, GENES_PER_GROUP):  # the last group can be short: its missing genes are masked
            g = group * GENES_PER_GROUP + i
            here = g < n_genes
            w = tl.load(w_ptr + g * n_factors + rk, mask=mk & here, other=0.0)
            u = tl.dot(z * w[None, :], a_t, input_precision=PRECISION)  # (cells, hidden)
            if HAS_COV:
                u += s
            r = tl.maximum(u, 0.0)
            for n in tl.static_range(N_HEADS):
                v = tl.load(v_ptr + (n * n_genes + g) * n_hidden + rh, mask=mh & here, other=0.0)
                o = tl.sum(r * v[None, :], axis=1)
                tl.store(out_ptr + (n * n_genes + g) * n_cells + rb, o, mask=mb & here)

    @triton.jit
    def backward_kernel(
        z_ptr, w_ptr, a_ptr, s_ptr, v_ptr, d_ptr,
        dz_ptr, ds_ptr, da_ptr, dv_ptr, dw_ptr,
        n_cells, n_genes, n_factors, n_hidden,
        HAS_COV: tl.constexpr, N_HEADS: tl.constexpr, PRECISION: tl.constexpr,
        BLOCK_B: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_H: tl.constexpr, GENES_PER_GROUP: tl.constexpr,
    ):  # fmt: skip
        tile, group = tl.program_id(0), tl.program_id(1)
        n_groups = tl.num_programs(1)
        rb = tile * BLOCK_B + tl.arange(0, BLOCK_B)
        rk = tl.arange(0, BLOCK_K)
        rh = tl.arange(0, BLOCK_H)
        mb, mk, mh = rb < n_cells, rk < n_factors, rh < n_hidden
        m_bk, m_bh, m_hk = mb[:, None] & mk[None, :], mb[:, None] & mh[None, :], mh[:, None] & mk[None, :]
        z = tl.load(z_ptr + rb[:, None] * n_factors + rk[None, :], mask=m_bk, other=0.0)
        a_t = tl.load(a_ptr + rh[None, :] * n_factors + rk[:, None], mask=mk[:, None] & mh[None, :], other=0.0)
        a = tl.load(a_ptr + rh[:, None] * n_factors + rk[None, :], mask=m_hk, other=0.0)
        if HAS_COV:
            s = tl.load(s_ptr + rb[:, None] * n_hidden + rh[None, :], mask=m_bh, other=0.0)
        grad_z = tl.zeros((BLOCK_B, BLOCK_K), dtype=tl.float32)
        grad_s = tl.zeros((BLOCK_B, BLOCK_H), dtype=tl.float32)
        grad_a = tl.zeros((BLOCK_H, BLOCK_K), dtype=tl.float32)
        for i in range(0, GENES_PER_GROUP):  # a missing gene of a short last group: zero w and dout, no stores
            g = group * GENES_PER_GROUP + i
            here = g < n_genes
            w = tl.load(w_ptr + g * n_factors + rk, mask=mk & here, other=0.0)
            x = z * w[None, :]
            u = tl.dot(x, a_t, input_precision=PRECISION)
            if HAS_COV:
                u += s
            active = u > 0.0
            r = tl.where(active, u, 0.0)
            grad_r = tl.zeros((BLOCK_B, BLOCK_H), dtype=tl.float32)
            for n in tl.static_range(N_HEADS):
                v = tl.load(v_ptr + (n * n_genes + g) * n_hidden + rh, mask=mh & here, other=0.0)
                d = tl.load(d_ptr + (n * n_genes + g) * n_cells + rb, mask=mb & here, other=0.0)
                grad_v = tl.sum(r * d[:, None], axis=0)  # this tile's share of dV[n, g]
                tl.store(dv_ptr + ((tile * N_HEADS + n) * n_genes + g) * n_hidden + rh, grad_v, mask=mh & here)
                grad_r += d[:, None] * v[None, :]
            grad_u = tl.where(active, grad_r, 0.0)
            grad_x = tl.dot(grad_u, a, input_precision=PRECISION)  # (cells, factors)
            tl.store(dw_ptr + (tile * n_genes + g) * n_factors + rk, tl.sum(grad_x * z, axis=0), mask=mk & here)
            grad_z += grad_x * w[None, :]
            grad_a += tl.dot(tl.trans(grad_u), x, input_precision=PRECISION)
            if HAS_COV:
                grad_s += grad_u
        tl.store(dz_ptr + (group * n_cells + rb[:, None]) * n_factors + rk[None, :], grad_z, mask=m_bk)
        if HAS_COV:
            tl.store(ds_ptr + (group * n_cells + rb[:, None]) * n_hidden + rh[None, :], grad_s, mask=m_bh)
        program = tile * n_groups + group
        tl.store(da_ptr + (program * n_hidden + rh[:, None]) * n_factors + rk[None, :], grad_a, mask=m_hk)

    return forward_kernel, backward_kernel


def _block(n: int) -> int:
    """A power of two >= ``n`` and >= 16 (Triton's matrix products need at least 16 along each side)."""
    return max(16, 1 << max(0, math.ceil(math.log2(max(n, 1)))))


def _layout(n_cells: int, n_genes: int, n_factors: int, n_hidden: int) -> dict[str, int]:
    """Tile sizes and the split of the genes into groups: about :data:`TARGET_PROGRAMS` programs per launch."""
    block_b = min(BLOCK_CELLS, _block(n_cells))
    n_tiles = math.ceil(n_cells / block_b)
    n_groups = max(1, min(n_genes, math.ceil(TARGET_PROGRAMS / n_tiles)))
    # a power of two: the kernels are compiled for each value, so few values keep recompilation rare
    genes_per_group = 1 << math.ceil(math.log2(math.ceil(n_genes / n_groups)))
    return {
        "BLOCK_B": block_b,
        "BLOCK_K": _block(n_factors),
        "BLOCK_H": _block(n_hidden),
        "n_tiles": n_tiles,
        "n_groups": math.ceil(n_genes / genes_per_group),
        "genes_per_group": genes_per_group,
    }


#: How the kernels multiply float32 matrices where torch does not allow TF32: ``"tf32x3"``, float32 accuracy from
#: three TF32 tensor-core products (:doc:`/benchmarks/speed` compares it with a float64 reference).
FLOAT32_PRECISION = "tf32x3"


def kernel_fits(n_cells: int, n_genes: int, n_factors: int, n_hidden: int, n_heads: int) -> bool:
    """Whether every offset the kernels compute fits their 32-bit integers (else the caller takes another path).

    Examples
    --------
    >>> kernel_fits(1_024, 20_000, 21, 128, 1)
    True
    >>> kernel_fits(65_536, 200_000, 21, 128, 2)
    False
    """
    layout = _layout(n_cells, n_genes, n_factors, n_hidden)
    largest = max(
        n_heads * n_genes * n_cells,  # outputs and their gradients
        layout["n_tiles"] * n_heads * n_genes * n_hidden,  # the output units' gradients, per cell tile
        layout["n_tiles"] * n_genes * n_factors,  # the mask's gradients, per cell tile
        layout["n_groups"] * n_cells * max(n_hidden, n_factors),  # the covariates' and cells' gradients, per group
        layout["n_tiles"] * layout["n_groups"] * n_hidden * n_factors,  # the first layer's, per program
    )
    return largest < 2**31


def _precision() -> str:
    return "tf32" if torch.backends.cuda.matmul.allow_tf32 else FLOAT32_PRECISION


class TritonMaskedLayer(torch.autograd.Function):
    """``out[n, b, g] = V[n, g] · relu(A (w_g ⊙ z_b) + s_b) + c[n, g]`` as Triton kernels (CUDA, float32).

    The inputs and output of :class:`~scsparse.nn._fused_decoder.FusedMaskedLayer` without the chunk size: ``z``
    ``(B, K)``, ``w`` ``(G, K)``, ``first`` ``A`` ``(H, K)``, ``cov_term`` ``s`` ``(B, H)`` or ``None``, ``head``
    ``V`` ``(n_heads, G, H)``, ``head_bias`` ``c`` ``(n_heads, G)``; output ``(n_heads, B, G)``. The backward pass
    recomputes the hidden layer; it needs ``(cell tiles x n_heads x G + gene groups x B) x H`` floats of buffers.

    Examples
    --------
    >>> import torch
    >>> z, w, first = torch.randn(4, 3), torch.randn(5, 3), torch.randn(8, 3)
    >>> head, bias = torch.randn(1, 5, 8), torch.zeros(1, 5)
    >>> z, w, first, head, bias = (t.cuda() for t in (z, w, first, head, bias))  # doctest: +SKIP
    >>> out = TritonMaskedLayer.apply(z, w, first, None, head, bias)  # doctest: +SKIP
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
    ) -> torch.Tensor:
        tensors = (z, w, first, head) + (() if cov_term is None else (cov_term,))
        if any(t.dtype != torch.float32 for t in tensors):
            raise TypeError("TritonMaskedLayer takes float32 tensors only.")
        z, w, first, head = z.contiguous(), w.contiguous(), first.contiguous(), head.contiguous()
        cov_term = None if cov_term is None else cov_term.contiguous()
        (n_cells, n_factors), n_genes, n_hidden, n_heads = z.shape, w.shape[0], first.shape[0], head.shape[0]
        layout = _layout(n_cells, n_genes, n_factors, n_hidden)
        forward_kernel, _ = _kernels(_interpreting())
        out = z.new_empty(n_heads, n_genes, n_cells)
        forward_kernel[(layout["n_tiles"], layout["n_groups"])](
            z, w, first, z if cov_term is None else cov_term, head, out,
            n_cells, n_genes, n_factors, n_hidden,
            HAS_COV=cov_term is not None, N_HEADS=n_heads, PRECISION=_precision(),
            BLOCK_B=layout["BLOCK_B"], BLOCK_K=layout["BLOCK_K"], BLOCK_H=layout["BLOCK_H"],
            GENES_PER_GROUP=layout["genes_per_group"], num_warps=FORWARD_WARPS,
        )  # fmt: skip
        ctx.save_for_backward(z, w, first, cov_term, head)
        ctx.layout = layout
        return genes_last(out.transpose(1, 2), head_bias)

    @staticmethod
    def backward(ctx, dout: torch.Tensor):
        z, w, first, cov_term, head = ctx.saved_tensors
        layout = ctx.layout
        (n_cells, n_factors), n_genes, n_hidden, n_heads = z.shape, w.shape[0], first.shape[0], head.shape[0]
        n_tiles, n_groups = layout["n_tiles"], layout["n_groups"]
        d = dout.transpose(1, 2).contiguous()  # (n_heads, G, B)
        grad_z = z.new_empty(n_groups, n_cells, n_factors)
        grad_s = z.new_empty(n_groups, n_cells, n_hidden) if cov_term is not None else z.new_empty(0)
        grad_a = z.new_empty(n_tiles * n_groups, n_hidden, n_factors)
        grad_v = z.new_empty(n_tiles, n_heads, n_genes, n_hidden)
        grad_w = z.new_empty(n_tiles, n_genes, n_factors)
        _, backward_kernel = _kernels(_interpreting())
        backward_kernel[(n_tiles, n_groups)](
            z, w, first, z if cov_term is None else cov_term, head, d,
            grad_z, grad_s, grad_a, grad_v, grad_w,
            n_cells, n_genes, n_factors, n_hidden,
            HAS_COV=cov_term is not None, N_HEADS=n_heads, PRECISION=_precision(),
            BLOCK_B=layout["BLOCK_B"], BLOCK_K=layout["BLOCK_K"], BLOCK_H=layout["BLOCK_H"],
            GENES_PER_GROUP=layout["genes_per_group"], num_warps=BACKWARD_WARPS,
        )  # fmt: skip
        return (
            grad_z.sum(0),
            grad_w.sum(0),
            grad_a.sum(0),
            grad_s.sum(0) if cov_term is not None else None,
            grad_v.sum(0),
            dout.sum(1),
        )
