"""The per-gene loop of the sparse VAE's reference code, as a baseline for the speed benchmark.

The authors' implementation runs the decoder network once per gene on ``w_j ⊙ z``. :class:`PerGeneLoopDecoder`
does exactly that with the weights of a :class:`~scsparse.nn.MaskedDecoder` (same parameters, same
normalisation, same output layout), so the two compute the same function and differ only in how: one
Python iteration and a handful of small matmuls per gene against scsparse's batched products.
"""

from __future__ import annotations

import torch
from torch.nn import functional as F

from scsparse.nn import MaskedDecoder

__all__ = ["PerGeneLoopDecoder", "per_gene_loop_copy"]


class PerGeneLoopDecoder(MaskedDecoder):
    """A :class:`~scsparse.nn.MaskedDecoder` whose forward pass loops over genes (the reference algorithm).

    Examples
    --------
    >>> import torch
    >>> from scsparse.nn import MaskedDecoder
    >>> dec = MaskedDecoder(n_latent=3, n_output=5, n_hidden=8, first_bias=True)
    >>> loop = per_gene_loop_copy(dec)
    >>> z = torch.randn(4, 3)
    >>> torch.allclose(dec(z), loop(z), atol=1e-6)
    True
    """

    def forward(
        self, z: torch.Tensor, *cat_list: torch.Tensor | None, continuous: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Decode ``z`` (``(B, K)``) gene by gene to outputs of shape ``(n_heads, B, G)``."""
        cov_term = self.covariate_term(cat_list, continuous, z.dtype)
        first, hidden, head = self.network_weights()
        outs = []
        for j in range(self.n_output):
            h = F.linear(z * self.W[j], first, self.first_bias)  # (B, H): the network on w_j ⊙ z
            if cov_term is not None:
                h = h + cov_term
            h = self.dropout(self.activation(h))
            for layer, weight in zip(self.hidden, hidden, strict=True):
                h = self.dropout(self.activation(F.linear(h, weight, layer.bias)))
            outs.append(F.linear(h, head[:, j], self.head_bias[:, j]))  # (B, n_heads)
        return torch.stack(outs, dim=-1).transpose(0, 1)


def per_gene_loop_copy(decoder: MaskedDecoder) -> PerGeneLoopDecoder:
    """A :class:`PerGeneLoopDecoder` with the architecture and current weights of ``decoder``."""
    loop = PerGeneLoopDecoder(
        decoder.n_latent,
        decoder.n_output,
        n_hidden=decoder.n_hidden,
        n_layers=len(decoder.hidden) + 1,
        n_heads=decoder.n_heads,
        n_cat_list=decoder.n_cat_list,
        n_continuous=decoder.n_continuous,
        normalize_weights=decoder.normalize_weights,
        first_bias=decoder.first_bias is not None,
    )
    loop.activation = decoder.activation
    loop.dropout = decoder.dropout
    loop.load_state_dict(decoder.state_dict())
    return loop.to(decoder.W.device)
