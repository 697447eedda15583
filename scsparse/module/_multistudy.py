"""The multi-study sparse VAE module: shared and study-specific factors with their own masks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from scvi.module.base import auto_move_data
from torch.distributions import Normal

from scsparse.nn import GaussianEncoder, StackedEncoder, copy_into_grown_, train_only_

from ._sparsevae import SparseVAEModule

__all__ = ["STUDY_KEY", "MultiStudySparseVAEModule"]

#: Registry key of the study covariate.
STUDY_KEY = "study"


def _refresh_after_load(module: MultiStudySparseVAEModule, incompatible_keys: object) -> None:
    """Load-state hook (a function, so the module pickles): which genes' output units train follows ``p*``."""
    module._refresh_free_genes()


class MultiStudySparseVAEModule(SparseVAEModule):
    """Multi-study sparse VAE (Moran & Krishnan 2026): shared factors plus per-study factors.

    Cell ``i`` of study ``m`` has shared factors ``z_i`` (``K_S``) and specific factors ``zeta_i`` (``K_m``).
    They are stacked into one latent vector of length ``K_S + sum_m K_m`` with zeros in the blocks of the
    other studies, so one masked decoder with mask ``[W_shared | W_1 | ... | W_M]`` computes
    ``x_ij ~ p(f_theta([w_j^shared ⊙ z_i, w_j^(m) ⊙ zeta_i])_j)`` with a shared network ``f_theta``. The
    Spike-and-Slab Lasso prior has one ``eta`` per column, so every mask (shared and per study) has its
    own prior with the same Beta(a, b) hyper-prior. The KL term and the importance weights only involve
    the blocks a cell uses.

    Parameters
    ----------
    n_input
        Number of genes.
    n_latent_shared
        Number of shared factors ``K_S``.
    n_latent_specific
        Number of specific factors of each study, in study-code order.
    n_batch
        Number of batch categories (a covariate outside the mask, in addition to the study).
    encode_study
        Whether the encoder also takes the study as input. The blocks of the other studies are zeroed by
        ``latent_mask`` either way, so the encoder does not need the study to fill the right block. Without it
        (the default) the shared factors of every study come from one function of the expression, so a study
        cannot move its cells' shared codes by itself; with it, each study gets its own offset in the
        encoder. Without the study the shared programmes are recovered at least as well, and cell types transfer
        better across studies (comparison: :doc:`/user-guide/multistudy`).
    **kwargs
        Passed to :class:`SparseVAEModule` (likelihood, SSL hyper-parameters, widths ...). Unlike
        :class:`SparseVAEModule`, the decoder has no first-layer bias unless ``decoder_kwargs`` has
        ``first_bias=True``: with the bias, a programme present in one condition only (the interferon response
        of stimulated cells) lands in a shared factor more often, which answers the model's question, shared or
        specific, wrongly (measurements: :doc:`/user-guide/multistudy`).
    n_latent_frozen
        Query mapping (:meth:`scsparse.model.MultiStudySparseVAE.load_query_data`): the first
        ``n_latent_frozen`` factors and every weight but those of the other factors are a reference model's and
        stay fixed. The encoder is the reference's (in evaluation mode: its batch-norm statistics stay the
        reference's) stacked with a new encoder for the factors after them (:class:`~scsparse.nn.StackedEncoder`);
        only that encoder, the new factors' first-layer and mask columns (``W``) of the decoder and the output
        units of the genes that no reference programme selects (``p* <= 0.5`` in every frozen column; never
        fitted to a response) train, and the EM update leaves the frozen columns' ``p*`` and ``eta`` alone.
        Needs ``encode_study=False`` and an optimiser without weight decay. 0 (default): everything trains.
    freeze_reference_encoder
        With ``n_latent_frozen``: keep the reference's encoder fixed (default). ``False`` lets it adapt to the
        query cells (the programmes, defined by the decoder, stay fixed either way).
    """

    block_mask: torch.Tensor

    def __init__(
        self,
        n_input: int,
        n_latent_shared: int,
        n_latent_specific: Sequence[int],
        n_batch: int = 0,
        encode_study: bool = False,
        n_latent_frozen: int = 0,
        freeze_reference_encoder: bool = True,
        **kwargs: Any,
    ) -> None:
        n_latent_specific = [int(k) for k in n_latent_specific]
        if len(n_latent_specific) < 2:
            raise ValueError("A multi-study model needs at least two studies.")
        if kwargs.get("latent_prior", "identity") != "identity":
            raise ValueError(
                "latent_prior='correlated' is not available for the multi-study model: its zero-padded latent "
                "blocks have no joint prior across studies. Use the default latent_prior='identity'."
            )
        n_latent = int(n_latent_shared) + sum(n_latent_specific)
        kwargs["decoder_kwargs"] = {"first_bias": False, **(kwargs.get("decoder_kwargs") or {})}
        # The decoder never sees the study (only through the specific blocks); the encoder does if asked.
        study_cats = [len(n_latent_specific)] if encode_study else []
        super().__init__(n_input, n_batch=n_batch, n_latent=n_latent, encoder_extra_cats=study_cats, **kwargs)
        self.encode_study = bool(encode_study)
        self.n_latent_shared = int(n_latent_shared)
        self.n_latent_specific = n_latent_specific
        self.n_study = len(n_latent_specific)
        mask = torch.zeros(self.n_study, n_latent)
        for _, m, cols in self.block_slices():
            if m < 0:
                mask[:, cols] = 1.0
            else:
                mask[m, cols] = 1.0
        self.register_buffer("block_mask", mask)
        self.n_latent_frozen = int(n_latent_frozen)
        self.freeze_reference_encoder = bool(freeze_reference_encoder)
        if not 0 <= self.n_latent_frozen < n_latent:
            raise ValueError(f"n_latent_frozen must be in [0, {n_latent}), got {n_latent_frozen}.")
        if self.n_latent_frozen:
            if self.encode_study:
                raise ValueError("n_latent_frozen needs encode_study=False (a new study has no encoder input).")
            self._freeze_reference()

    # ------------------------------------------------------------------ query mapping
    def _freeze_reference(self) -> None:
        """Encoder: the reference's (fixed, evaluation mode) stacked with a new one; decoder: new columns train."""
        k = self.n_latent_frozen
        self.encoder = StackedEncoder(
            GaussianEncoder(self.n_input_encoder, k, **self.encoder_kwargs),
            GaussianEncoder(self.n_input_encoder, self.n_latent - k, **self.encoder_kwargs),
        )
        cols = torch.zeros(self.n_latent, dtype=torch.bool)
        cols[k:] = True
        trainable_encoder = self.encoder if not self.freeze_reference_encoder else self.encoder.second
        prefix = "encoder" if not self.freeze_reference_encoder else "encoder.second"
        trainable: dict[str, torch.Tensor | None] = {
            name: None for name, _ in trainable_encoder.named_parameters(prefix=prefix)
        }
        trainable["decoder.W"] = cols[None, :].expand_as(self.decoder.W)
        trainable["decoder.first"] = cols[None, :].expand_as(self.decoder.first)
        # output units of the genes no reference programme selects (set by _refresh_free_genes)
        trainable["decoder.head_weight"] = torch.zeros_like(self.decoder.head_weight, dtype=torch.bool)
        train_only_(self, trainable)
        self.register_load_state_dict_post_hook(_refresh_after_load)
        if self.freeze_reference_encoder:
            self.encoder.first.eval()  # Lightning keeps the modes it finds; train() below keeps it so

    @torch.no_grad()
    def _refresh_free_genes(self, pip_threshold: float = 0.5) -> None:
        """Let the output units of genes outside every reference programme train (``p* <= 0.5`` in all).

        Such a gene is (nearly) constant in the reference, so its per-gene output weights were never fitted to
        a response; a programme new in the query could not drive it through them. Its baseline (output bias)
        and every weight of the genes the reference's programmes select stay fixed.
        """
        if not self.n_latent_frozen:
            return
        free = (self.prior.p_star[:, : self.n_latent_frozen] <= pip_threshold).all(dim=1)
        mask = self._trainable_decoder_head_weight
        mask.zero_()
        mask[:, free, :] = 1.0

    @torch.no_grad()
    def load_reference_(self, reference: MultiStudySparseVAEModule) -> None:
        """Copy a trained reference module into this one, which has the reference's studies first and more after.

        The reference's factors become this module's first ``reference.n_latent`` factors (shared, then each
        reference study's block), with its encoder, masks, ``p*``, ``eta``, decoder network and likelihood
        parameters; the new factors keep their initial values.

        Parameters
        ----------
        reference
            Module with the same genes, widths and hyper-parameters and a prefix of this module's studies.
        """
        if (
            self.n_latent_frozen != reference.n_latent
            or reference.n_latent_shared != self.n_latent_shared
            or list(reference.n_latent_specific) != list(self.n_latent_specific[: reference.n_study])
        ):
            raise ValueError("The reference's factors must be this module's frozen leading blocks.")
        self.encoder.first.load_state_dict(reference.encoder.state_dict())
        for name in ("decoder", "prior", "observation"):
            copy_into_grown_(getattr(self, name), getattr(reference, name).state_dict())
        self._refresh_free_genes()

    def train(self, mode: bool = True) -> MultiStudySparseVAEModule:
        """As :meth:`torch.nn.Module.train`; with frozen reference factors the encoder stays in evaluation mode."""
        super().train(mode)
        if self.n_latent_frozen and self.freeze_reference_encoder:
            self.encoder.first.eval()
        return self

    @torch.no_grad()
    def em_update(self) -> None:
        """The EM update of :class:`SparseVAEModule`, leaving the frozen columns' ``p*`` and ``eta`` as they are."""
        k = self.n_latent_frozen
        if not k:
            return super().em_update()
        eta, p_star = self.prior.eta[:k].clone(), self.prior.p_star[:, :k].clone()
        super().em_update()
        self.prior.eta[:k] = eta
        self.prior.p_star[:, :k] = p_star

    @torch.no_grad()
    def prune_spike(self, pip_threshold: float = 0.5) -> int:
        """As :meth:`SparseVAEModule.prune_spike`, on the trainable columns only."""
        keep = self.prior.p_star > pip_threshold
        keep[:, : self.n_latent_frozen] = True
        return self.decoder.prune_(keep)

    def block_slices(self) -> list[tuple[str, int, slice]]:
        """``(kind, study, columns)`` for the shared block (study ``-1``) and each study's block."""
        out = [("shared", -1, slice(0, self.n_latent_shared))]
        start = self.n_latent_shared
        for m, k in enumerate(self.n_latent_specific):
            out.append(("specific", m, slice(start, start + k)))
            start += k
        return out

    def _get_inference_input(self, tensors: dict[str, torch.Tensor], **kwargs) -> dict[str, torch.Tensor | None]:
        out = super()._get_inference_input(tensors, **kwargs)
        out["study_index"] = tensors[STUDY_KEY]
        return out

    @auto_move_data
    def _cached_inference(
        self,
        qzm: torch.Tensor,
        qzv: torch.Tensor,
        observed_lib_size: torch.Tensor,
        study_index: torch.Tensor,
        n_samples: int = 1,
    ) -> dict[str, Any]:
        """``q(z | x)`` from the posterior a minified AnnData stores, with the means and draws zero outside a cell's
        blocks (``latent_mask``), as in :meth:`_regular_inference`.
        """
        out = super()._cached_inference(qzm, qzv, observed_lib_size, n_samples=n_samples)
        mask = self.block_mask[study_index.reshape(-1).long()]
        qz = Normal(out["qz"].loc * mask, out["qz"].scale)
        return {**out, "qz": qz, "z": out["z"] * mask, "latent_mask": mask}

    @auto_move_data
    def _regular_inference(
        self,
        x: torch.Tensor,
        study_index: torch.Tensor,
        batch_index: torch.Tensor | None = None,
        size_factor: torch.Tensor | None = None,
        cont_covs: torch.Tensor | None = None,
        cat_covs: torch.Tensor | None = None,
        n_samples: int = 1,
    ) -> dict[str, Any]:
        """Encode cells; the factors of other studies' blocks are exactly zero (``latent_mask``)."""
        cats = ([study_index] if self.encode_study else []) + (
            list(self._covariate_cats(batch_index, cat_covs)) if self.encode_covariates else []
        )
        qz_raw, _ = self.encoder(self._encoder_input(x, cont_covs), *cats)
        mask = self.block_mask[study_index.reshape(-1).long()]  # (B, K)
        qz = Normal(qz_raw.loc * mask, qz_raw.scale)
        if n_samples > 1:
            z = qz.rsample((n_samples,)) * mask
        else:
            z = qz.loc if self.use_posterior_mean else qz.rsample() * mask
        library = size_factor if size_factor is not None else x.sum(-1, keepdim=True)
        return {"z": z, "qz": qz, "library": library, "latent_mask": mask}
