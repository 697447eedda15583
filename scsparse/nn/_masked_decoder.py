"""The per-feature masked decoder of the sparse VAE, computed for all features at once.

Feature ``j`` of cell ``i`` is ``f_theta(w_j ⊙ z_i)_j``: the same network ``f_theta`` sees a different,
sparse view of the latent factors for every feature. The first layer ``A`` (``H x K``) has at most a bias
``b`` shared by all features, so its pre-activation for every (cell, feature) pair is

    u[i, j, :] = sum_k z_ik w_jk A[:, k] (+ b)

which is one batched product over ``(B, G, H)``. The remaining ``H x H`` layers are one large matmul
over ``B * G`` rows, and the feature-specific output units (row ``j`` of the last layer) are an einsum
with a ``(G, H)`` weight. There is no Python loop over features.

Features are processed in chunks. On the CPU a chunk's ``(chunk, B, H)`` activations are sized to stay in
the last-level cache (``cache_chunk_mb``): the step is bound by memory traffic on these tensors, and
cache-sized chunks make a training step several times faster than one pass over all genes
(:doc:`/benchmarks/speed`). On a GPU one chunk holds as many features as the activation
budget allows (``memory_budget_mb``; by default a quarter of the GPU's memory, 512 MB elsewhere). When the
activations of all features together exceed the budget, each chunk is recomputed in the backward pass
(activation checkpointing), so peak memory is ``O(B * chunk * H)`` rather than ``O(B * G * H)``.

With one hidden layer and ReLU (the default network) the CPU runs the decoder as one autograd function,
``FusedMaskedLayer``, which recomputes each chunk in the backward pass and computes all its
gradients while the chunk is in the cache (``fused``). A CUDA GPU with Triton runs the same function as two
Triton kernels, ``TritonMaskedLayer``, which keep each gene's activations in registers and never write them to
memory.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from ._compact_decoder import CompactMaskedLayer, compact_index
from ._fused_decoder import FusedMaskedLayer, FusedWorkspace, genes_last, padded_width
from ._mlp import make_activation, one_hot_covariates
from ._one_factor import one_factor_outputs
from ._triton_decoder import TritonMaskedLayer, kernel_fits, triton_available

#: Activation budget (MB) on the CPU, and on any device without an explicit ``memory_budget_mb`` but a GPU.
DEFAULT_MEMORY_BUDGET_MB = 512.0
#: Without an explicit ``memory_budget_mb``, the activation budget on a CUDA GPU is this fraction of its memory.
GPU_MEMORY_FRACTION = 0.25

__all__ = ["DEFAULT_MEMORY_BUDGET_MB", "GPU_MEMORY_FRACTION", "MaskedDecoder", "default_memory_budget_mb"]

#: CPU chunk size per torch thread (MB of one chunk's activations) when ``cache_chunk_mb`` is not given.
CACHE_CHUNK_MB_PER_THREAD = 8.0
#: The largest CPU chunk (MB) chosen by default, whatever the number of threads.
CACHE_CHUNK_MB_MAX = 32.0


def default_memory_budget_mb(device: torch.device | str) -> float:
    """The activation budget (MB) of a decoder without an explicit one, on ``device``.

    A quarter (:data:`GPU_MEMORY_FRACTION`) of a CUDA GPU's memory, :data:`DEFAULT_MEMORY_BUDGET_MB` elsewhere. On a
    GPU a budget that holds all activations avoids recomputing chunks, which a small fixed budget forces at large
    batches (the cost is measured in :doc:`/benchmarks/speed`).

    Examples
    --------
    >>> default_memory_budget_mb("cpu")
    512.0
    """
    device = torch.device(device)
    if device.type == "cuda" and torch.cuda.is_available():
        total = torch.cuda.get_device_properties(device).total_memory
        return GPU_MEMORY_FRACTION * total / 2**20
    return DEFAULT_MEMORY_BUDGET_MB


def _kernels_here(device: torch.device) -> bool:
    """Whether the Triton kernels can run on ``device`` now: not while ``torch.compile`` traces the model, which
    gets the op-by-op path to fuse itself.
    """
    return triton_available(device) and not torch.compiler.is_compiling()


def _invalidate_after_load(module: MaskedDecoder, incompatible_keys: object) -> None:
    """Load hook (module level, so that models pickle for ``ddp_spawn``): regroup genes after a new mask."""
    module._invalidate_groups()


class MaskedDecoder(nn.Module):
    """Decoder ``x_ij ~ p(f_theta(w_j ⊙ z_i)_j)`` with a learnable mask ``W`` (``G x K``).

    Parameters
    ----------
    n_latent
        Number of latent factors ``K`` (columns of ``W``).
    n_output
        Number of features ``G`` (rows of ``W``).
    n_hidden
        Width ``H`` of the hidden layers.
    n_layers
        Number of hidden layers (>= 1). The first maps ``K -> H`` (with a bias only under ``first_bias``);
        the others are ``H -> H``.
    n_heads
        Number of per-feature outputs (1 for a mean; 2 for a mean and zero-inflation logits).
    n_cat_list
        Category counts of categorical covariates (e.g. batch). Covariates enter the first hidden layer as an
        additive per-cell term, outside the mask, so they can never be absorbed into ``W``.
    n_continuous
        Number of continuous covariates (e.g. percent mitochondrial counts), entering the first hidden layer
        like the categorical ones, outside the mask.
    activation
        Activation of the hidden layers.
    dropout_rate
        Dropout after each hidden layer.
    w_init
        Initial value of every ``w_jk`` (plus small noise, see ``w_init_noise``). The default, 0.3, sits
        just above the spike/slab boundary of the default prior (about 0.26), so the Spike-and-Slab Lasso
        can select from the start; with ``w_init=1`` every entry starts deep in the slab, where the prior
        barely acts, and on real data ``W`` stays dense.
    w_init_noise
        Standard deviation of the Gaussian noise added to the initial ``W``.
    chunk_size
        Features per chunk. ``None`` chooses it at run time from the batch size and the device: on the CPU
        from ``cache_chunk_mb``, elsewhere from ``memory_budget_mb``.
    memory_budget_mb
        Budget (MB) for the activations kept for the backward pass; above it, chunks are checkpointed. ``None``:
        :func:`default_memory_budget_mb` of the device the decoder runs on (a quarter of a GPU's memory, 512 MB
        on the CPU).
    cache_chunk_mb
        On the CPU, target size of one chunk's activations, small enough to stay in the cache while its gradients
        are computed. ``None``: ``CACHE_CHUNK_MB_PER_THREAD`` for each of torch's threads, at most
        ``CACHE_CHUNK_MB_MAX`` (8 MB, 128 genes at batch 128 and 128 hidden units, on one thread; the choice
        is measured in :doc:`/benchmarks/speed`).
    checkpoint_chunks
        Allow recomputing chunk activations in the backward pass when all features' activations together
        exceed ``memory_budget_mb`` (``False``: never recompute).
    fused
        Run a one-hidden-layer ReLU network without dropout as one function with its own backward pass (the
        same function and gradients, the hidden layer recomputed in the backward pass): on a CUDA GPU with Triton
        installed as ``TritonMaskedLayer`` (float32), elsewhere as ``FusedMaskedLayer``, chunk by chunk.
        ``None``: on the CPU, where it makes the decoder's training step about twice as fast, and on a CUDA GPU
        with Triton, where it keeps the activations out of memory (both measured in :doc:`/benchmarks/speed`);
        ``True``: on every device; ``False``: never. Other networks, and any network under mixed precision
        (autocast), run through autograd.
    normalize_weights
        Give the first-layer columns norm ``first_norm`` and the hidden rows and each feature's output vector
        unit norm (see :meth:`network_weights`).
    first_bias
        Add a bias ``b`` (shared by all features) to the first layer. Without it, with one hidden layer and
        ReLU, a feature driven by one factor is a two-slope linear function of that factor with its kink at
        ``z_k = 0``; with it the kinks sit at ``-b_h / (A_hk w_jk)``, so the response can bend and saturate
        where the data say. Without the bias a fit can keep a nearly constant factor with hundreds of genes
        to serve as the missing offset (:doc:`/user-guide/settings`). On by default, as
        :class:`scsparse.module.SparseVAEModule` uses it; the papers' network has no bias, and the models
        that follow the papers' protocols (the multi-study module, the array models of :mod:`scsparse.generic`)
        turn it off.
    first_norm
        Norm of the first-layer columns under ``normalize_weights``. ``None``: 1 without ``first_bias``, 1/2
        with it, so that ``|w_jk|`` measures the same effect in both networks. Without the bias a ReLU unit
        is off on one side of ``z_k = 0``, so a gene that responds linearly to a factor gets a slope of at
        most ``|w_jk| / 2`` (each unit carries one side, and the two sides share the column's norm); with
        the bias every unit can stay in its linear range and the slope reaches ``|w_jk|``. At unit norm the
        biased network therefore fitted the same programmes with half the ``|w|``, under the Spike-and-Slab
        Lasso's slab threshold (about 0.26 at ``eta = 0.5`` and 0.58 at ``eta = 0.05`` for the default
        rates), so weak programmes could stay in the spike (:doc:`/user-guide/settings`). The half norm keeps
        the prior's rates and ``w_init`` meaning the same for both networks.

    Examples
    --------
    >>> import torch
    >>> dec = MaskedDecoder(n_latent=3, n_output=5, n_hidden=8)
    >>> out = dec(torch.randn(4, 3))
    >>> out.shape  # (n_heads, batch, features)
    torch.Size([1, 4, 5])
    >>> with torch.no_grad():
    ...     _ = dec.W.zero_()
    >>> torch.allclose(dec(torch.randn(4, 3)), dec(torch.randn(4, 3)))  # no factor reaches any feature
    True
    """

    def __init__(
        self,
        n_latent: int,
        n_output: int,
        n_hidden: int = 128,
        n_layers: int = 1,
        n_heads: int = 1,
        n_cat_list: Sequence[int] = (),
        n_continuous: int = 0,
        activation: str = "relu",
        dropout_rate: float = 0.0,
        w_init: float = 0.3,
        w_init_noise: float = 0.05,
        chunk_size: int | None = None,
        memory_budget_mb: float | None = None,
        cache_chunk_mb: float | None = None,
        checkpoint_chunks: bool = True,
        fused: bool | None = None,
        normalize_weights: bool = True,
        first_bias: bool = True,
        first_norm: float | None = None,
    ) -> None:
        super().__init__()
        if n_layers < 1:
            raise ValueError(f"The masked decoder needs at least one hidden layer, got n_layers={n_layers}.")
        self.n_latent, self.n_output, self.n_hidden = int(n_latent), int(n_output), int(n_hidden)
        self.n_heads = int(n_heads)
        self.n_cat_list = [int(n) if n > 1 else 0 for n in n_cat_list]
        self.chunk_size = chunk_size
        self.memory_budget_mb = None if memory_budget_mb is None else float(memory_budget_mb)
        self.cache_chunk_mb = None if cache_chunk_mb is None else float(cache_chunk_mb)
        if (self.memory_budget_mb is not None and self.memory_budget_mb <= 0) or (
            self.cache_chunk_mb is not None and self.cache_chunk_mb <= 0
        ):
            raise ValueError("memory_budget_mb and cache_chunk_mb must be positive.")
        self.checkpoint_chunks = checkpoint_chunks
        self.fused = fused
        self.normalize_weights = normalize_weights
        self.first_norm = float(first_norm if first_norm is not None else (0.5 if first_bias else 1.0))
        if self.first_norm <= 0:
            raise ValueError(f"first_norm must be positive, got {first_norm}.")

        self.W = nn.Parameter(w_init + w_init_noise * torch.randn(n_output, n_latent))
        self.first = nn.Parameter(torch.empty(n_hidden, n_latent))
        nn.init.kaiming_uniform_(self.first, a=math.sqrt(5))
        self.first_bias = (
            nn.Parameter(torch.empty(n_hidden).uniform_(-1 / math.sqrt(n_latent), 1 / math.sqrt(n_latent)))
            if first_bias
            else None
        )
        self.n_continuous = int(n_continuous)
        n_cov = sum(self.n_cat_list) + self.n_continuous
        self.covariates = nn.Linear(n_cov, n_hidden, bias=False) if n_cov > 0 else None
        self.hidden = nn.ModuleList(nn.Linear(n_hidden, n_hidden) for _ in range(n_layers - 1))
        self.activation = make_activation(activation)
        self.dropout = nn.Dropout(dropout_rate) if dropout_rate > 0 else nn.Identity()
        bound = 1.0 / math.sqrt(n_hidden)
        self.head_weight = nn.Parameter(torch.empty(n_heads, n_output, n_hidden).uniform_(-bound, bound))
        self.head_bias = nn.Parameter(torch.zeros(n_heads, n_output))
        # Entries of W fixed at exactly zero (see prune_); saved with the model.
        self.register_buffer("prune_mask", torch.ones(n_output, n_latent, dtype=torch.bool))
        self._groups_cache: dict[str, torch.Tensor] | None = None
        self._groups_valid = False
        self._pruned: bool | None = None  # cached: whether prune_mask has a False entry
        self._workspace = FusedWorkspace()  # the fused path's chunk buffers, kept between calls
        self.register_load_state_dict_post_hook(_invalidate_after_load)

    def activation_bytes_per_feature(self, batch_size: int) -> int:
        """Bytes of float32 activations kept per feature for a batch (pre- and post-activation per layer)."""
        return batch_size * self.n_hidden * 4 * 2 * (len(self.hidden) + 1)

    def resolve_chunk_size(self, batch_size: int, device: torch.device | str | None = None) -> int:
        """Features per chunk: ``chunk_size`` if set, else from the cache (CPU) or memory budget (others).

        Parameters
        ----------
        batch_size
            Number of cells in the batch.
        device
            Where the computation runs (default: the device of ``W``).
        """
        if self.chunk_size is not None:
            return max(1, min(int(self.chunk_size), self.n_output))
        device = torch.device(device) if device is not None else self.W.device
        budget_mb = self.budget_mb(device)
        budget_mb = min(self.chunk_mb_on_cpu(), budget_mb) if device.type == "cpu" else budget_mb
        per_feature = self.activation_bytes_per_feature(batch_size) // 2  # one tensor of the chunk
        fit = int(budget_mb * 2**20 // max(per_feature, 1))
        return max(1, min(fit, self.n_output))

    def chunk_mb_on_cpu(self) -> float:
        """The CPU chunk's target size in MB: ``cache_chunk_mb``, else 8 MB per torch thread, at most 32 MB.

        Each of torch's threads works on its share of a chunk, so the chunk that keeps every thread's share in
        its cache grows with the threads; the sizes are measured ones, and a cache of another size may be served
        better by ``cache_chunk_mb`` (:doc:`/benchmarks/speed`).

        Examples
        --------
        >>> from scsparse._threads import torch_threads
        >>> with torch_threads(2):
        ...     MaskedDecoder(n_latent=3, n_output=5).chunk_mb_on_cpu()
        16.0
        """
        if self.cache_chunk_mb is not None:
            return self.cache_chunk_mb
        return min(CACHE_CHUNK_MB_PER_THREAD * torch.get_num_threads(), CACHE_CHUNK_MB_MAX)

    def budget_mb(self, device: torch.device | str | None = None) -> float:
        """The activation budget (MB) on ``device`` (default: the device of ``W``): ``memory_budget_mb`` if set,
        else :func:`default_memory_budget_mb`.
        """
        if self.memory_budget_mb is not None:
            return self.memory_budget_mb
        return default_memory_budget_mb(device if device is not None else self.W.device)

    def uses_checkpointing(self, batch_size: int, device: torch.device | str | None = None) -> bool:
        """Whether a training step recomputes chunks: all activations together exceed the budget on ``device``."""
        total = self.activation_bytes_per_feature(batch_size) * self.n_output
        return self.checkpoint_chunks and total > self.budget_mb(device) * 2**20

    def network_weights(self) -> tuple[torch.Tensor, list[torch.Tensor], torch.Tensor]:
        """The first-layer, hidden and output weights as used in the forward pass.

        With ``normalize_weights`` the columns of the first layer have norm ``first_norm`` and the rows of the
        hidden layers and each feature's output vector unit norm, so the amplitude of feature ``j``'s response
        to factor ``k`` is carried by ``|w_jk|`` alone. Without it, any row of ``W`` could shrink while the network
        grows to compensate, and the spike-and-slab threshold on ``|w_jk|`` would be arbitrary.
        """
        if not self.normalize_weights:
            return self.first, [layer.weight for layer in self.hidden], self.head_weight
        first = self.first * (self.first_norm / self.first.norm(dim=0, keepdim=True).clamp_min(1e-8))
        hidden = [layer.weight / layer.weight.norm(dim=1, keepdim=True).clamp_min(1e-8) for layer in self.hidden]
        head = self.head_weight / self.head_weight.norm(dim=-1, keepdim=True).clamp_min(1e-8)
        return first, hidden, head

    # ------------------------------------------------------------------ pruning: exploit the sparsity of W
    @property
    def is_pruned(self) -> bool:
        """Whether some entries of ``W`` are fixed at zero (see :meth:`prune_`).

        Cached until the mask changes, so the forward pass does not reduce (or synchronise on) the mask.
        """
        if self._pruned is None:
            self._pruned = not bool(self.prune_mask.all())
        return self._pruned

    @property
    def supports_sparse_path(self) -> bool:
        """Whether the decoder can skip the work of the entries fixed at zero (see :meth:`prune_`).

        True for one hidden layer without dropout. Genes without an active factor then skip the per-gene network
        (one hidden state per cell serves them all); genes with one active factor have a closed form without
        covariates, with a positively homogeneous activation (no first-layer bias) or ReLU (with it); the other
        genes run the network on the factors active in them.
        """
        return not self.hidden and isinstance(self.dropout, nn.Identity)

    @property
    def supports_fused_path(self) -> bool:
        """Whether the network can run as ``FusedMaskedLayer``: one hidden layer, ReLU, no
        dropout in the decoder.
        """
        return not self.hidden and type(self.activation) is nn.ReLU and isinstance(self.dropout, nn.Identity)

    def uses_fused_path(self, device: torch.device | str | None = None) -> bool:
        """Whether the decoder runs as ``FusedMaskedLayer`` on ``device`` (default: that of ``W``).

        Examples
        --------
        >>> MaskedDecoder(n_latent=3, n_output=5).uses_fused_path("cpu")
        True
        >>> MaskedDecoder(n_latent=3, n_output=5, n_layers=2).uses_fused_path("cpu")
        False
        """
        if self.fused is False or not self.supports_fused_path:
            return False
        device = torch.device(device) if device is not None else self.W.device
        if torch.is_autocast_enabled(device.type):  # mixed precision: autograd's ops cast their inputs themselves
            return False
        return self.fused is True or device.type == "cpu" or _kernels_here(device)

    def uses_triton_kernel(self, device: torch.device | str | None = None) -> bool:
        """Whether the decoder runs as the Triton kernels ``TritonMaskedLayer`` on ``device`` (float32 inputs).

        Not while ``torch.compile`` traces the model: the compiler gets the op-by-op path, which it fuses itself.

        Examples
        --------
        >>> MaskedDecoder(n_latent=3, n_output=5).uses_triton_kernel("cpu")
        False
        """
        device = torch.device(device) if device is not None else self.W.device
        return self.uses_fused_path(device) and _kernels_here(device)

    @torch.no_grad()
    def prune_(self, keep: torch.Tensor) -> int:
        """Fix the entries of ``W`` outside ``keep`` at exactly zero from now on (in place).

        Pruned entries are set to zero, get no gradient and stay pruned until :meth:`readmit_` lets them train
        again. The decoder then computes each gene from its active factors: a gene with no active factor needs no
        per-gene network (without covariates it is a constant); a gene with one active factor ``k`` is exact in
        closed form without covariates — without a first-layer bias because a positively homogeneous activation
        gives ``act(c * a) = max(c, 0) act(a) + max(-c, 0) act(-a)`` for the scalar ``c = z_k w_jk``, with the
        bias and ReLU through the kink tables of :func:`~scsparse.nn.one_factor_outputs` — so no ``(cells,
        hidden)`` work at all; genes with several active factors run the network on their active factors. With
        the Spike-and-Slab Lasso prior, ``keep = p* > 0.5`` after the warm-up prunes the spike; training with
        exact zeros (:class:`~scsparse.train.SparseVAETrainingPlan`'s ``w_step="proximal"``) keeps the nonzero
        entries.

        Parameters
        ----------
        keep
            Boolean ``(G, K)`` tensor: entries to keep.

        Returns
        -------
        int
            Number of entries newly pruned.

        Examples
        --------
        >>> import torch
        >>> dec = MaskedDecoder(n_latent=3, n_output=4, n_hidden=8)
        >>> keep = torch.tensor([[1, 0, 0], [0, 0, 0], [1, 1, 0], [0, 1, 0]], dtype=torch.bool)
        >>> dec.prune_(keep)
        8
        >>> int((dec.W != 0).sum())
        4
        """
        keep = keep.to(device=self.prune_mask.device, dtype=torch.bool)
        if keep.shape != self.prune_mask.shape:
            raise ValueError(f"keep must have shape {tuple(self.prune_mask.shape)}, got {tuple(keep.shape)}.")
        before = int(self.prune_mask.sum())
        self.prune_mask &= keep
        self.W.mul_(self.prune_mask)
        if self.W.grad is not None:
            self.W.grad.mul_(self.prune_mask)
        self._invalidate_groups()
        return before - int(self.prune_mask.sum())

    @torch.no_grad()
    def readmit_(self, entries: torch.Tensor) -> int:
        """Let pruned entries of ``W`` train again, from zero (in place); the counterpart of :meth:`prune_`.

        Parameters
        ----------
        entries
            Boolean ``(G, K)`` tensor: entries to readmit (entries not pruned are left as they are).

        Returns
        -------
        int
            Number of entries readmitted.

        Examples
        --------
        >>> import torch
        >>> dec = MaskedDecoder(n_latent=2, n_output=2, n_hidden=8)
        >>> dec.prune_(torch.tensor([[1, 0], [0, 0]], dtype=torch.bool))
        3
        >>> dec.readmit_(torch.tensor([[0, 1], [0, 0]], dtype=torch.bool))
        1
        >>> dec.W.detach()[0, 1].item()
        0.0
        """
        entries = entries.to(device=self.prune_mask.device, dtype=torch.bool)
        if entries.shape != self.prune_mask.shape:
            raise ValueError(f"entries must have shape {tuple(self.prune_mask.shape)}, got {tuple(entries.shape)}.")
        new = entries & ~self.prune_mask
        n_new = int(new.sum())
        if n_new:
            self.prune_mask |= new
            self._invalidate_groups()
        return n_new

    @torch.no_grad()
    def flip_(self, signs: torch.Tensor) -> None:
        """Multiply column ``k`` of ``W`` by ``signs[k]`` (``+1`` or ``-1``), in place.

        With the factors flipped the same way (``z_k -> signs[k] z_k``) the decoder's output is unchanged, since
        it sees ``w_j ⊙ z`` only.

        Examples
        --------
        >>> import torch
        >>> dec = MaskedDecoder(n_latent=2, n_output=3, n_hidden=8).eval()
        >>> z, signs = torch.randn(5, 2), torch.tensor([-1.0, 1.0])
        >>> before = dec(z)
        >>> dec.flip_(signs)
        >>> torch.allclose(dec(z * signs), before, atol=1e-6)
        True
        """
        self.W.mul_(signs.to(self.W)[None, :])

    def _invalidate_groups(self) -> None:
        self._groups_valid = False
        self._groups_cache = None
        self._pruned = None

    def _gene_groups(self) -> dict[str, torch.Tensor] | None:
        """Genes grouped by their number of active factors (cached until the mask changes)."""
        stale = self._groups_cache is not None and self._groups_cache["inverse"].device != self.prune_mask.device
        if not self._groups_valid or stale:
            self._groups_valid = True
            self._groups_cache = None
            # normal (not inference-mode) index tensors, so that training after evaluation can use them
            with torch.inference_mode(False), torch.no_grad():
                self._groups_cache = self._group_genes() if self.is_pruned and self.supports_sparse_path else None
        return self._groups_cache

    def _group_genes(self) -> dict[str, torch.Tensor]:
        """Genes by the work their outputs need: none (constants), one factor in closed form, the network.

        ``idx1`` are the genes with one active factor that have a closed form: without a first-layer bias the
        homogeneous activation's, with it and ReLU the kink tables of :func:`one_factor_outputs` (neither with
        covariates, whose term moves the kinks cell by cell). ``idx2`` run the network on ``cols2``, the factors
        active in any of them.
        """
        n_active = self.prune_mask.sum(dim=1)
        if self.covariates is not None:
            closed_form = False
        elif self.first_bias is None:
            closed_form = isinstance(self.activation, nn.ReLU | nn.LeakyReLU)
        else:
            closed_form = type(self.activation) is nn.ReLU
        single = (n_active == 1) if closed_form else torch.zeros_like(n_active, dtype=torch.bool)
        idx0 = torch.nonzero(n_active == 0).flatten()
        idx1 = torch.nonzero(single).flatten()
        idx2 = torch.nonzero((n_active >= 1) & ~single).flatten()
        # the network's genes by padded number of inputs, each group a run of idx2 (see CompactMaskedLayer)
        compact, start = [], 0
        by_width = compact_index(self.prune_mask[idx2], always=int(self.first_bias is not None))
        idx2 = torch.cat([idx2[genes] for genes, _ in by_width]) if by_width else idx2
        for genes, index in by_width:
            compact.append((start, start + genes.numel(), index))
            start += genes.numel()
        return {
            "idx0": idx0,
            "idx1": idx1,
            "k1": self.prune_mask[idx1].float().argmax(dim=1),
            "idx2": idx2,
            "cols2": torch.nonzero(self.prune_mask[idx2].any(dim=0)).flatten(),
            "compact": compact,
            "inverse": torch.argsort(torch.cat([idx0, idx1, idx2])),
        }

    def masked_W(self) -> torch.Tensor:
        """``W`` with the pruned entries at zero (gradients of pruned entries are zero)."""
        return self.W * self.prune_mask if self.is_pruned else self.W

    # ------------------------------------------------------------------ forward
    def _bias_as_input(
        self, z: torch.Tensor, w: torch.Tensor, first: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``z``, ``w`` and the first layer with the first-layer bias as the weight of a constant input 1.

        A column of ones in ``w`` and in ``z`` makes the first layer's product compute the bias, and its gradient
        comes out of the first layer's weight gradient, with no extra pass over the ``(Gc, B, H)`` tensor
        forward or backward. Without a bias the inputs are returned as they are.
        """
        if self.first_bias is None:
            return z, w, first
        w = torch.cat([w, w.new_ones(w.shape[0], 1)], dim=1)
        z = torch.cat([z, z.new_ones(z.shape[0], 1)], dim=1)
        return z, w, torch.cat([first, self.first_bias[:, None]], dim=1)

    def _covariates_as_input(
        self, z: torch.Tensor, w: torch.Tensor, first: torch.Tensor, cov_inputs: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """Fold the covariates into the first layer's inputs unless that widens them by over half; else their term.

        The covariates' term ``C x_b`` is linear in the covariates ``x_b``, so columns ``x_b`` in ``z``, ones in
        ``w`` and ``C`` in the first layer compute it inside the first layer's product, as ``_bias_as_input``
        does for the bias, and the fused backward pass keeps its one-head form (see
        :mod:`scsparse.nn._fused_decoder`). Only while the padded input width grows by at most half: wider
        inputs make every gene's product longer, which costs more than the separate term saves (measured in
        :doc:`/benchmarks/speed`). Returns ``z``, ``w``, ``first`` and the
        covariates' ``(B, H)`` term, ``None`` when folded or without covariates.
        """
        if cov_inputs is None:
            return z, w, first, None
        n_in, n_cov = z.shape[1], cov_inputs.shape[1]
        if padded_width(n_in + n_cov) > 1.5 * padded_width(n_in):
            return z, w, first, self._covariate_term_of(cov_inputs)
        z = torch.cat([z, cov_inputs], dim=1)
        w = torch.cat([w, w.new_ones(w.shape[0], n_cov)], dim=1)
        return z, w, torch.cat([first, self.covariates.weight], dim=1), None

    def _decode_rows(
        self,
        z: torch.Tensor,
        cov_term: torch.Tensor | None,
        w: torch.Tensor,
        head: torch.Tensor,
        bias: torch.Tensor,
        first: torch.Tensor,
        hidden: list[torch.Tensor],
    ) -> torch.Tensor:
        """The network for the genes whose mask rows are ``w`` (``(Gc, K)``): outputs ``(n_heads, B, Gc)``."""
        # Work in a (genes, cells, hidden) layout so the per-gene output units are one batched matmul
        # without copies: u[g, b, h] = sum_k w[g, k] z[b, k] A[h, k].
        z, w, first = self._bias_as_input(z, w, first)
        h = torch.matmul(w.unsqueeze(1) * z.unsqueeze(0), first.t())  # (Gc, B, H)
        if cov_term is not None:
            h = h + cov_term.unsqueeze(0)
        h = self.dropout(self.activation(h))
        for layer, weight in zip(self.hidden, hidden, strict=True):
            h = self.dropout(self.activation(torch.nn.functional.linear(h, weight, layer.bias)))
        # per-feature output units: out[n, b, g] = sum_h h[g, b, h] V[n, g, h] + c[n, g]
        out = torch.bmm(h, head.permute(1, 2, 0))  # (Gc, B, n_heads)
        return genes_last(out.permute(2, 1, 0), bias)

    def _decode_genes(
        self,
        z: torch.Tensor,
        cov_inputs: torch.Tensor | None,
        w: torch.Tensor,
        head: torch.Tensor,
        bias: torch.Tensor,
        first: torch.Tensor,
        hidden: list[torch.Tensor],
    ) -> torch.Tensor:
        """The genes whose mask rows are ``w`` through the network, chunk by chunk: ``(n_heads, B, Gc)``.

        ``cov_inputs`` are the covariates, ``(B, n_cov)`` (see :meth:`covariate_inputs`), or ``None``.
        """
        chunk = self.resolve_chunk_size(z.shape[0], z.device)
        if self.uses_fused_path(z.device):
            z, w, first = self._bias_as_input(z, w, first)
            shape = (z.shape[0], w.shape[0], z.shape[1], first.shape[0], head.shape[0])
            if z.dtype == torch.float32 and self.uses_triton_kernel(z.device) and kernel_fits(*shape):
                cov_term = self._covariate_term_of(cov_inputs)
                return TritonMaskedLayer.apply(z, w, first, cov_term, head, bias)
            z, w, first, cov_term = self._covariates_as_input(z, w, first, cov_inputs)
            return FusedMaskedLayer.apply(z, w, first, cov_term, head, bias, chunk, self._workspace)
        cov_term = self._covariate_term_of(cov_inputs)
        n_genes = w.shape[0]
        if chunk >= n_genes:
            return self._decode_rows(z, cov_term, w, head, bias, first, hidden)
        use_checkpoint = torch.is_grad_enabled() and self.training and self.uses_checkpointing(z.shape[0], z.device)
        outs = []
        for start in range(0, n_genes, chunk):
            rows = slice(start, min(start + chunk, n_genes))
            args = (z, cov_term, w[rows], head[:, rows], bias[:, rows], first, hidden)
            if use_checkpoint:
                outs.append(checkpoint(self._decode_rows, *args, use_reentrant=False))
            else:
                outs.append(self._decode_rows(*args))
        return torch.cat(outs, dim=-1)

    def _decode_dense(self, z: torch.Tensor, cov_inputs: torch.Tensor | None) -> torch.Tensor:
        """All genes through the network (normalised weights computed once per call)."""
        first, hidden, head = self.network_weights()
        return self._decode_genes(z, cov_inputs, self.masked_W(), head, self.head_bias, first, hidden)

    def _decode_sparse(
        self, z: torch.Tensor, cov_inputs: torch.Tensor | None, groups: dict[str, torch.Tensor]
    ) -> torch.Tensor:
        """Decoder with entries fixed at zero: constants, closed-form one-factor genes, the network for the rest.

        The network runs on the factors active in its genes only (``cols2``), so its first layer sums over them.
        """
        first, hidden, head = self.network_weights()
        w = self.masked_W()
        idx0, idx1, k1, idx2 = groups["idx0"], groups["idx1"], groups["k1"], groups["idx2"]
        parts = [self._constant_genes(z, cov_inputs, idx0, head)]
        if idx1.numel():
            t = z[:, k1] * w[idx1, k1]  # (B, G1)
            if self.first_bias is None:  # act(c a) = max(c, 0) act(a) + max(-c, 0) act(-a) for the scalar c
                a = first[:, k1].t()  # (G1, H): the first-layer column of each gene's factor
                v = head[:, idx1]  # (n_heads, G1, H)
                pos = (v * self.activation(a)).sum(-1)  # (n_heads, G1)
                neg = (v * self.activation(-a)).sum(-1)
                out1 = torch.relu(t) * pos[:, None, :] + torch.relu(-t) * neg[:, None, :]
            else:
                out1 = one_factor_outputs(t, k1, first, self.first_bias, head[:, idx1])
            parts.append(out1 + self.head_bias[:, None, idx1])
        if idx2.numel():
            parts.append(self._network_genes(z, cov_inputs, w, first, hidden, head, groups))
        return torch.cat(parts, dim=-1).index_select(-1, groups["inverse"])

    def _network_genes(
        self,
        z: torch.Tensor,
        cov_inputs: torch.Tensor | None,
        w: torch.Tensor,
        first: torch.Tensor,
        hidden: list[torch.Tensor],
        head: torch.Tensor,
        groups: dict,
    ) -> torch.Tensor:
        """The genes with several active factors (``idx2``) through the network, ``(n_heads, B, G2)``.

        On the fused CPU path each gene's first layer sums over its own active factors (``CompactMaskedLayer``, by
        groups of genes with the same padded number of them); elsewhere the genes share the factors active in any
        of them (``cols2``).
        """
        idx2 = groups["idx2"]
        if not self.uses_fused_path(z.device) or self.uses_triton_kernel(z.device):
            cols = groups["cols2"]
            return self._decode_genes(
                z[:, cols], cov_inputs, w[idx2][:, cols], head[:, idx2], self.head_bias[:, idx2], first[:, cols], hidden
            )
        z, w2, first = self._bias_as_input(z, w[idx2], first)
        w2 = torch.nn.functional.pad(w2, (0, 1))  # the zero column the padding reads
        cov_term = self._covariate_term_of(cov_inputs)
        chunk = self.resolve_chunk_size(z.shape[0], z.device)
        outs = []
        for start, stop, index in groups["compact"]:
            genes = idx2[start:stop]
            w_genes = torch.gather(w2[start:stop], 1, index)
            args = (z, w_genes, index, first, cov_term, head[:, genes], self.head_bias[:, genes], chunk)
            outs.append(CompactMaskedLayer.apply(*args, self._workspace))
        return torch.cat(outs, dim=-1)

    def _constant_genes(
        self, z: torch.Tensor, cov_inputs: torch.Tensor | None, idx0: torch.Tensor, head: torch.Tensor
    ) -> torch.Tensor:
        """Genes without an active factor, ``(n_heads, B, G0)``: the network of the covariates (or a constant)."""
        bias = self.head_bias[:, idx0]
        cov_term = self._covariate_term_of(cov_inputs)
        base = self.first_bias if self.first_bias is not None else head.new_zeros(self.n_hidden)
        if cov_term is None:  # act(b): the same hidden state for every such gene and cell
            const = bias + (head[:, idx0] * self.activation(base)).sum(-1)
            return const[:, None, :].expand(-1, z.shape[0], -1)
        hidden = self.activation(cov_term + base)  # (B, H): one hidden state per cell, shared by these genes
        return torch.einsum("bh,ngh->nbg", hidden, head[:, idx0]) + bias[:, None, :]

    def forward(
        self, z: torch.Tensor, *cat_list: torch.Tensor | None, continuous: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Decode ``z`` (``(B, K)``) to per-feature outputs of shape ``(n_heads, B, G)``.

        ``cat_list`` holds one ``(B,)`` or ``(B, 1)`` index tensor per categorical covariate (``n_cat_list``),
        ``continuous`` the ``(B, n_continuous)`` continuous covariates.
        """
        cov_inputs = self.covariate_inputs(cat_list, continuous, z.dtype)
        groups = self._gene_groups()
        if groups is not None:
            return self._decode_sparse(z, cov_inputs, groups)
        return self._decode_dense(z, cov_inputs)

    def covariate_term(
        self, cat_list: Sequence[torch.Tensor | None], continuous: torch.Tensor | None, dtype: torch.dtype
    ) -> torch.Tensor | None:
        """The covariates' additive term in the first hidden layer, ``(B, H)`` (``None`` without covariates)."""
        return self._covariate_term_of(self.covariate_inputs(cat_list, continuous, dtype))

    def _covariate_term_of(self, cov_inputs: torch.Tensor | None) -> torch.Tensor | None:
        """``C x`` for the covariates ``x`` of :meth:`covariate_inputs` (``None`` for ``None``)."""
        return None if cov_inputs is None else self.covariates(cov_inputs)

    def covariate_inputs(
        self, cat_list: Sequence[torch.Tensor | None], continuous: torch.Tensor | None, dtype: torch.dtype
    ) -> torch.Tensor | None:
        """The covariates as one ``(B, n_cov)`` input: one-hot categories, then the continuous ones (or ``None``)."""
        parts = [one_hot_covariates(cat_list, self.n_cat_list) if cat_list else None]
        if self.n_continuous:
            if continuous is None or continuous.shape[-1] != self.n_continuous:
                raise ValueError(f"The decoder needs {self.n_continuous} continuous covariates per cell.")
            parts.append(continuous.reshape(-1, self.n_continuous).to(dtype))
        parts = [p for p in parts if p is not None]
        if not parts or self.covariates is None:
            return None
        return torch.cat(parts, dim=-1).to(dtype)  # the one-hot codes are float32
