"""The sparse VAE as an scvi-tools module: inference, generative model, loss and EM update."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import torch
from scvi import REGISTRY_KEYS
from scvi.data._constants import ADATA_MINIFY_TYPE
from scvi.distributions import NegativeBinomial, Poisson, ZeroInflatedNegativeBinomial
from scvi.distributions import Normal as ExpressionNormal
from scvi.module.base import BaseMinifiedModeModuleClass, LossOutput, auto_move_data
from torch.distributions import Distribution, Normal

from scsparse._checks import check_integer
from scsparse._options import (
    COUNT_LIKELIHOODS,
    DEFAULT_LAMBDA0,
    DEFAULT_LAMBDA1,
    GENE_LIKELIHOODS,
    LATENT_PRIORS,
    GeneLikelihood,
    LatentPrior,
)
from scsparse.nn import (
    CorrelatedGaussianPrior,
    GaussianEncoder,
    MaskedDecoder,
    ObservationModel,
    SpikeSlabLasso,
    gaussian_kl,
    importance_sampled_log_likelihood,
    restore_gradient_masks_,
    sparse_vae_objective,
    sparse_vae_penalty,
    train_only_,
)

__all__ = ["COUNT_LIKELIHOODS", "GENE_LIKELIHOODS", "SparseVAEModule"]


class SparseVAEModule(BaseMinifiedModeModuleClass):
    """Sparse VAE module (Moran et al. 2022) with count and Gaussian likelihoods.

    Generative model for cell ``i`` and gene ``j``: ``z_i ~ N(0, I_K)``,
    ``x_ij ~ p(f_theta(w_j ⊙ z_i, s_i)_j)`` where ``s_i`` are covariates that enter the decoder outside
    the mask, and ``W`` has a Spike-and-Slab Lasso prior. For count likelihoods the decoder outputs pass
    through a softmax over genes and are multiplied by the library size.

    Parameters
    ----------
    n_input
        Number of genes ``G``.
    n_batch
        Number of batch categories (0 or 1 for none).
    n_latent
        Number of latent factors ``K`` (an upper bound: the prior switches unused factors off).
    n_hidden, n_layers
        Width and depth of the decoder (the encoder uses the same unless ``n_layers_encoder`` is given).
    gene_likelihood
        ``"nb"``, ``"zinb"``, ``"poisson"``, ``"multinomial"`` or ``"normal"``.
    lambda0, lambda1, a, b
        Spike-and-Slab Lasso hyper-parameters (``b=None`` means ``b = G``).
    max_prior_cells
        The prior on ``W`` is weighed against at most this many training cells: the loss divides the prior's
        penalty by ``min(n_obs, max_prior_cells)`` rather than by ``n_obs``. With more training cells this
        tempers the likelihood by ``max_prior_cells / n_obs``, so the evidence a gene needs to enter a factor's
        programme stops shrinking with the size of the data set. ``None``: every training cell (the objective of
        Moran et al. 2022), the module's default; the models pass their own, 10,000 unless told otherwise.
    sigma_prior_nu, sigma_prior_xi
        Inverse-gamma prior on the per-gene variances of the ``"normal"`` likelihood.
    dropout_rate
        Encoder dropout.
    log_variational
        Encode ``log1p(x)`` rather than ``x`` (count likelihoods).
    encode_covariates
        Feed the batch and the other covariates to the encoder too.
    n_cats_per_cov
        Category counts of the categorical covariates other than the batch (``categorical_covariate_keys``).
    n_continuous_cov
        Number of continuous covariates (``continuous_covariate_keys``). Covariates, like the batch, enter the
        decoder outside the mask: they explain expression without ever entering ``W``.
    n_batch_frozen
        A query module (:meth:`scsparse.model.SparseVAE.load_query_data`): the first ``n_batch_frozen`` batch
        categories are a reference model's, and every parameter but the decoder's weights of the new batch
        categories stays fixed (the encoder in evaluation mode, ``p*`` and ``eta`` without EM updates).
    fixed_support
        The mask's support and ``p*`` are fixed (:meth:`fix_support_`): no EM update, and the entries of ``W``
        outside the support stay zero. A consensus refit (:meth:`scsparse.model.SparseVAE.consensus`) is built so;
        the support and ``p*`` are saved with the module.
    n_layers_encoder, n_hidden_encoder
        Encoder depth and width (default: the decoder's).
    encoder_extra_cats
        Category counts of covariates that only the encoder sees, passed first (the study, in the
        multi-study model).
    decoder_kwargs
        Passed to :class:`~scsparse.nn.MaskedDecoder` (``chunk_size``, ``memory_budget_mb``, ``activation``,
        ``w_init`` ...). The decoder's first layer has a bias shared by all genes (the decoder's default)
        unless ``first_bias=False`` is given, which gives the paper's network (kept by :mod:`scsparse.generic`).
        Without the bias a gene driven by one factor is, at one hidden layer, a two-slope function with its kink
        fixed at ``z_k = 0``, and fits on real data keep near-constant factors with hundreds of genes as the missing
        offset (:doc:`/user-guide/settings`). With the bias the first-layer columns have norm 1/2 (``first_norm``),
        which keeps ``|w_jk|`` on the scale of the unbiased network, the one the prior's rates are set for.
        :class:`~scsparse.module.MultiStudySparseVAEModule` turns the bias off by default.
    latent_prior
        ``"identity"``: ``z ~ N(0, I)`` (the paper's choice); ``"correlated"``: ``z ~ N(0, Sigma_z)`` with a
        learned correlation matrix (:class:`~scsparse.nn.CorrelatedGaussianPrior`), for correlated factors.
    prior_members, member_prior
        Guided factors: a boolean ``(G, K)`` array whose ``True`` entries have the prior inclusion ``member_prior``
        instead of their factor's ``eta_k`` (``members`` of :class:`~scsparse.nn.SpikeSlabLasso`; a gene set's genes
        in its factor, :class:`~scsparse.model.SparseVAE`'s ``gene_sets``). ``None``: the plain prior.
    """

    def __init__(
        self,
        n_input: int,
        n_batch: int = 0,
        n_latent: int = 20,
        n_hidden: int = 128,
        n_layers: int = 1,
        gene_likelihood: GeneLikelihood = "nb",
        lambda0: float = DEFAULT_LAMBDA0,
        lambda1: float = DEFAULT_LAMBDA1,
        a: float = 1.0,
        b: float | None = None,
        max_prior_cells: int | None = None,
        sigma_prior_nu: float = 3.0,
        sigma_prior_xi: float = 1.0,
        dropout_rate: float = 0.1,
        log_variational: bool = True,
        encode_covariates: bool = False,
        n_layers_encoder: int | None = None,
        n_hidden_encoder: int | None = None,
        decoder_kwargs: dict | None = None,
        encoder_extra_cats: Sequence[int] = (),
        latent_prior: LatentPrior = "identity",
        n_cats_per_cov: Sequence[int] = (),
        n_continuous_cov: int = 0,
        n_batch_frozen: int = 0,
        fixed_support: bool = False,
        prior_members: torch.Tensor | None = None,
        member_prior: float = 0.5,
    ) -> None:
        super().__init__()
        if gene_likelihood not in GENE_LIKELIHOODS:
            raise ValueError(f"gene_likelihood must be one of {GENE_LIKELIHOODS}, got {gene_likelihood!r}.")
        if latent_prior not in LATENT_PRIORS:
            raise ValueError(f"latent_prior must be 'identity' or 'correlated', got {latent_prior!r}.")
        self.n_input, self.n_batch, self.n_latent = int(n_input), int(n_batch), int(n_latent)
        self.gene_likelihood = gene_likelihood
        self.log_variational = log_variational and gene_likelihood in COUNT_LIKELIHOODS
        self.encode_covariates = encode_covariates
        self.sigma_prior_nu, self.sigma_prior_xi = float(sigma_prior_nu), float(sigma_prior_xi)
        self.max_prior_cells = (
            None
            if max_prior_cells is None
            else check_integer("max_prior_cells", max_prior_cells, fix="None weighs the prior against every cell.")
        )

        self.n_cats_per_cov = [int(n) for n in n_cats_per_cov]
        self.n_continuous_cov = int(n_continuous_cov)
        covariate_cats = [*([self.n_batch] if self.n_batch > 1 else []), *self.n_cats_per_cov]
        #: inputs of the encoder: the genes, and the continuous covariates when it sees the covariates
        self.n_input_encoder = n_input + (self.n_continuous_cov if encode_covariates else 0)
        #: arguments of the encoder but its inputs and number of factors (subclasses build more encoders like it)
        self.encoder_kwargs = {
            "n_hidden": n_hidden_encoder or n_hidden,
            "n_layers": n_layers_encoder or n_layers,
            "n_cat_list": [*encoder_extra_cats, *(covariate_cats if encode_covariates else [])],
            "dropout_rate": dropout_rate,
        }
        self.encoder = GaussianEncoder(self.n_input_encoder, n_latent, **self.encoder_kwargs)
        self.decoder = MaskedDecoder(
            n_latent,
            n_input,
            n_hidden=n_hidden,
            n_layers=n_layers,
            n_heads=2 if gene_likelihood == "zinb" else 1,  # mean (and zero-inflation) logits
            n_cat_list=covariate_cats,
            n_continuous=self.n_continuous_cov,
            **(decoder_kwargs or {}),
        )
        self.prior = SpikeSlabLasso(
            n_input, n_latent, lambda0=lambda0, lambda1=lambda1, a=a, b=b, members=prior_members,
            member_prior=member_prior,
        )  # fmt: skip
        self.observation = ObservationModel(gene_likelihood, n_input)
        self.latent_prior = CorrelatedGaussianPrior(n_latent) if latent_prior == "correlated" else None
        #: decode the posterior mean instead of a sample when one code per cell is asked for (see
        #: :meth:`posterior_mean_codes`)
        self.use_posterior_mean = False
        self.n_batch_frozen = int(n_batch_frozen)
        if self.n_batch_frozen:
            self._freeze_all_but_new_batches()
        self.fixed_support = bool(fixed_support)
        # The running mean of W's data gradient by which exact zeros judge zero entries, and its weight per entry
        # (:class:`~scsparse.train.SparseVAETrainingPlan`'s ``zero_rule_decay``). It lives with the module, so a
        # second ``train(exact_zeros=True)`` goes on from the first's evidence instead of judging by one minibatch;
        # it is not saved (empty until a fit with exact zeros, see :meth:`forget_zero_rule_mean_`).
        self.register_buffer("zero_rule_mean", torch.zeros(0), persistent=False)
        self.register_buffer("zero_rule_weight", torch.zeros(0), persistent=False)

    def _freeze_all_but_new_batches(self) -> None:
        """A query module: only the decoder's first-layer weights of batch codes >= ``n_batch_frozen`` train."""
        if not 1 <= self.n_batch_frozen < self.n_batch:
            raise ValueError(
                f"n_batch_frozen must be in [1, n_batch={self.n_batch}): the reference's batches; a query adds more."
            )
        if self.encode_covariates:
            raise ValueError("n_batch_frozen needs encode_covariates=False (a new batch has no encoder input).")
        weight = self.decoder.covariates.weight  # (H, covariate columns): the batch's one-hot columns first
        new_batches = torch.zeros_like(weight, dtype=torch.bool)
        new_batches[:, self.n_batch_frozen : self.n_batch] = True
        train_only_(self, {"decoder.covariates.weight": new_batches})

    def __setstate__(self, state: dict) -> None:
        # pickling and deepcopy drop gradient hooks: put a query module's gradient masks back
        super().__setstate__(state)
        restore_gradient_masks_(self)

    def train(self, mode: bool = True) -> SparseVAEModule:
        """As :meth:`torch.nn.Module.train`; a query module's encoder (the reference's) stays in evaluation mode."""
        super().train(mode)
        if self.n_batch_frozen:
            self.encoder.eval()
        return self

    # ------------------------------------------------------------------ scvi-tools plumbing
    def _get_inference_input(
        self, tensors: dict[str, torch.Tensor], full_forward_pass: bool = False, **kwargs
    ) -> dict[str, torch.Tensor | None]:
        if not full_forward_pass and self.minified_data_type in (
            ADATA_MINIFY_TYPE.LATENT_POSTERIOR,
            ADATA_MINIFY_TYPE.LATENT_POSTERIOR_WITH_COUNTS,
        ):  # a minified AnnData: the stored posterior instead of the counts
            return {
                "qzm": tensors[REGISTRY_KEYS.LATENT_QZM_KEY],
                "qzv": tensors[REGISTRY_KEYS.LATENT_QZV_KEY],
                "observed_lib_size": tensors[REGISTRY_KEYS.OBSERVED_LIB_SIZE],
            }
        return {
            "x": tensors[REGISTRY_KEYS.X_KEY],
            "batch_index": tensors.get(REGISTRY_KEYS.BATCH_KEY),
            "size_factor": tensors.get(REGISTRY_KEYS.SIZE_FACTOR_KEY),
            "cont_covs": tensors.get(REGISTRY_KEYS.CONT_COVS_KEY),
            "cat_covs": tensors.get(REGISTRY_KEYS.CAT_COVS_KEY),
        }

    def _get_generative_input(
        self, tensors: dict[str, torch.Tensor], inference_outputs: dict[str, torch.Tensor], **kwargs
    ) -> dict[str, torch.Tensor | None]:
        return {
            "z": inference_outputs["z"],
            "library": inference_outputs["library"],
            "batch_index": tensors.get(REGISTRY_KEYS.BATCH_KEY),
            "cont_covs": tensors.get(REGISTRY_KEYS.CONT_COVS_KEY),
            "cat_covs": tensors.get(REGISTRY_KEYS.CAT_COVS_KEY),
        }

    def _batch_cats(self, batch_index: torch.Tensor | None) -> tuple[torch.Tensor, ...]:
        return (batch_index,) if (self.n_batch > 1 and batch_index is not None) else ()

    def _covariate_cats(
        self, batch_index: torch.Tensor | None, cat_covs: torch.Tensor | None
    ) -> tuple[torch.Tensor, ...]:
        """The batch and the categorical covariates, one index tensor each (as the decoder's ``n_cat_list``)."""
        extra = tuple(cat_covs[:, i] for i in range(cat_covs.shape[-1])) if self.n_cats_per_cov else ()
        return (*self._batch_cats(batch_index), *extra)

    def _encoder_input(self, x: torch.Tensor, cont_covs: torch.Tensor | None) -> torch.Tensor:
        x_enc = torch.log1p(x) if self.log_variational else x
        if self.encode_covariates and self.n_continuous_cov:
            x_enc = torch.cat([x_enc, cont_covs.to(x_enc.dtype)], dim=-1)
        return x_enc

    @auto_move_data
    def _cached_inference(
        self, qzm: torch.Tensor, qzv: torch.Tensor, observed_lib_size: torch.Tensor, n_samples: int = 1
    ) -> dict[str, torch.Tensor | Normal]:
        """``q(z | x)`` from the posterior stored in a minified AnnData, without the counts or the encoder."""
        qz = Normal(qzm, qzv.sqrt())
        if n_samples > 1:
            z = qz.sample((n_samples,))
        else:
            z = qzm if self.use_posterior_mean else qz.sample()
        return {"z": z, "qz": qz, "library": observed_lib_size.reshape(-1, 1)}

    @auto_move_data
    def _regular_inference(
        self,
        x: torch.Tensor,
        batch_index: torch.Tensor | None = None,
        size_factor: torch.Tensor | None = None,
        cont_covs: torch.Tensor | None = None,
        cat_covs: torch.Tensor | None = None,
        n_samples: int = 1,
    ) -> dict[str, torch.Tensor | Normal]:
        """Encode cells: ``q(z | x)``, a sample ``z`` and the library size."""
        cats = self._covariate_cats(batch_index, cat_covs) if self.encode_covariates else ()
        qz, z = self.encoder(self._encoder_input(x, cont_covs), *cats)
        if n_samples > 1:
            z = qz.rsample((n_samples,))
        elif self.use_posterior_mean:
            z = qz.loc
        library = size_factor if size_factor is not None else x.sum(-1, keepdim=True)
        return {"z": z, "qz": qz, "library": library}

    @auto_move_data
    def generative(
        self,
        z: torch.Tensor,
        library: torch.Tensor,
        batch_index: torch.Tensor | None = None,
        cont_covs: torch.Tensor | None = None,
        cat_covs: torch.Tensor | None = None,
        transform_batch: int | None = None,
    ) -> dict[str, torch.Tensor | Distribution]:
        """Decode ``z`` into ``p(x | z)``.

        Parameters
        ----------
        z
            Codes ``(..., K)`` (``(S, B, K)`` for several samples per cell).
        library
            Library sizes ``(B, 1)``.
        batch_index
            Batch codes ``(B, 1)``.
        cont_covs, cat_covs
            Continuous ``(B, n_continuous_cov)`` and categorical ``(B, len(n_cats_per_cov))`` covariates.
        transform_batch
            Decode every cell as if it came from this batch code (scvi-tools' batch correction).

        Returns
        -------
        dict
            ``"px"``: ``p(x | z)`` as a scvi-tools distribution (:meth:`expression_distribution`);
            ``"heads"``: the decoder outputs ``(n_heads, ..., G)``; ``"library"``.
        """
        if transform_batch is not None and batch_index is not None:
            batch_index = torch.full_like(batch_index, int(transform_batch))
        lead = z.shape[:-1]
        z_flat = z.reshape(-1, self.n_latent)
        cats = self._covariate_cats(batch_index, cat_covs)
        continuous = cont_covs if self.n_continuous_cov else None
        if z.dim() == 3:  # several samples per cell: repeat the covariates
            cats = tuple(c.reshape(1, -1).expand(z.shape[0], -1).reshape(-1) for c in cats)
            if continuous is not None:
                continuous = continuous.unsqueeze(0).expand(z.shape[0], -1, -1).reshape(-1, self.n_continuous_cov)
        heads = self.decoder(z_flat, *cats, continuous=continuous).reshape(self.decoder.n_heads, *lead, self.n_input)
        return {"px": self.expression_distribution(heads, library), "heads": heads, "library": library}

    def expression_distribution(self, heads: torch.Tensor, library: torch.Tensor) -> Distribution:
        """``p(x | z)`` as the scvi-tools distribution that :class:`scvi.model.base.RNASeqMixin` reads.

        ``"nb"``: :class:`scvi.distributions.NegativeBinomial` (``mu = library * rho``, per-gene ``theta``,
        ``scale = rho``, the normalised expression ``softmax`` of the decoder output); ``"zinb"``:
        :class:`scvi.distributions.ZeroInflatedNegativeBinomial` with the second head as ``zi_logits``;
        ``"poisson"``: :class:`scvi.distributions.Poisson`; ``"multinomial"``: the Poisson with the same means
        (the multinomial is that Poisson conditioned on the cell's total count, so normalised expression and
        differential expression are the same; posterior predictive samples then have Poisson totals);
        ``"normal"``: :class:`scvi.distributions.Normal` with the per-gene standard deviations. The training
        loss uses :meth:`log_likelihood`, which keeps every normalising constant.

        Parameters
        ----------
        heads
            Decoder outputs ``(n_heads, ..., G)``.
        library
            Library sizes, broadcastable to ``(..., 1)``.
        """
        observation = self.observation
        if not observation.is_count:
            mean = heads[0]
            sd = torch.exp(0.5 * observation.log_var).expand_as(mean)
            return ExpressionNormal(mean, sd, validate_args=False, normal_mu=mean)
        rho = observation.mean(heads)
        mu = library * rho
        if self.gene_likelihood in ("poisson", "multinomial"):
            return Poisson(rate=mu, scale=rho, validate_args=False)
        theta = torch.exp(observation.log_theta)
        if self.gene_likelihood == "nb":
            return NegativeBinomial(mu=mu, theta=theta, scale=rho, validate_args=False)
        return ZeroInflatedNegativeBinomial(mu=mu, theta=theta, zi_logits=heads[1], scale=rho, validate_args=False)

    @contextmanager
    def posterior_mean_codes(self, enabled: bool = True) -> Iterator[None]:
        """Within the block, :meth:`inference` with ``n_samples=1`` returns the posterior mean as ``z``.

        Examples
        --------
        >>> with module.posterior_mean_codes():
        ...     outputs = module.inference(x)  # outputs["z"] is outputs["qz"].loc
        """
        before = self.use_posterior_mean
        self.use_posterior_mean = bool(enabled)
        try:
            yield
        finally:
            self.use_posterior_mean = before

    @torch.inference_mode()
    def sample(
        self,
        tensors: dict[str, torch.Tensor],
        n_samples: int = 1,
        max_poisson_rate: float = 1e8,
        generative_kwargs: dict | None = None,
    ) -> torch.Tensor:
        """Posterior predictive samples: ``z ~ q(z | x)``, then ``x ~ p(x | z)``, ``n_samples`` times per cell.

        Parameters
        ----------
        tensors
            A minibatch of the model's data loader.
        n_samples
            Samples per cell.
        max_poisson_rate
            Poisson rates are clipped here (sampling very large rates is numerically unstable).
        generative_kwargs
            Passed to :meth:`generative` (e.g. ``{"transform_batch": 0}``).

        Returns
        -------
        torch.Tensor
            On the CPU, ``(cells, genes)`` for one sample, else ``(cells, genes, n_samples)``.
        """
        _, generative_outputs = self.forward(
            tensors, inference_kwargs={"n_samples": n_samples}, generative_kwargs=generative_kwargs, compute_loss=False
        )
        px = generative_outputs["px"]
        if isinstance(px, Poisson):
            px = torch.distributions.Poisson(torch.clamp(px.rate, max=max_poisson_rate))
        samples = px.sample()
        return (samples.permute(1, 2, 0) if n_samples > 1 else samples).cpu()

    # ------------------------------------------------------------------ likelihood and loss
    def log_likelihood(self, x: torch.Tensor, generative_outputs: dict[str, torch.Tensor]) -> torch.Tensor:
        """``log p(x | z)`` per cell (summed over genes), with all normalising constants."""
        return self.observation.log_prob(x, generative_outputs["heads"], generative_outputs["library"])

    def global_penalty(self) -> torch.Tensor:
        """Negative log-prior of the global parameters that receive gradients: SSL on ``W``, variance prior."""
        log_var = self.observation.log_var if self.gene_likelihood == "normal" else None
        w = self.decoder.masked_W()
        return sparse_vae_penalty(self.prior, w, log_var, self.sigma_prior_nu, self.sigma_prior_xi)

    def prior_cells(self, n_obs: int) -> int:
        """The number of cells the prior on ``W`` is weighed against: ``min(n_obs, max_prior_cells)``."""
        return n_obs if self.max_prior_cells is None else min(n_obs, self.max_prior_cells)

    def loss(
        self,
        tensors: dict[str, torch.Tensor],
        inference_outputs: dict[str, torch.Tensor],
        generative_outputs: dict[str, torch.Tensor],
        kl_weight: float = 1.0,
        n_obs: int = 1,
        guided_codes: int = 0,
        guided_kl_weight: float = 1.0,
    ) -> LossOutput:
        """Per-cell negative ELBO plus the global prior terms scaled by the number of training cells.

        ``loss = mean_i[-log p(x_i | z_i) + kl_weight * KL(q(z_i | x_i) || N(0, I))] + penalty / n``, with
        ``n = min(n_obs, max_prior_cells)``. The global penalty is divided by the number of training cells (the
        data term is a sum over all of them), not by the minibatch size, and it is not multiplied by
        ``kl_weight``. The first ``guided_codes`` codes have the KL weight ``guided_kl_weight`` instead (the guided
        factors during the KL warm-up, :class:`~scsparse.train.SparseVAETrainingPlan`'s ``guided_kl_free``); the
        ``kl_local`` reported is every code's whole KL, so the ELBO logged is the model's.
        """
        x = tensors[REGISTRY_KEYS.X_KEY]
        rec = -self.log_likelihood(x, generative_outputs)
        qz, mask = inference_outputs["qz"], inference_outputs.get("latent_mask")
        kl_z = gaussian_kl(qz, mask) if self.latent_prior is None else self.latent_prior.kl(qz)
        penalty = self.global_penalty()
        if guided_codes:
            kl_loss = self._weighted_kl(qz, mask, int(guided_codes), guided_kl_weight, kl_weight)
            loss = sparse_vae_objective(rec, kl_loss, penalty, self.prior_cells(n_obs))
        else:
            loss = sparse_vae_objective(rec, kl_z, penalty, self.prior_cells(n_obs), kl_weight)
        return LossOutput(loss=loss, reconstruction_loss=rec, kl_local=kl_z, kl_global=penalty)

    def _weighted_kl(
        self, qz: Normal, mask: torch.Tensor | None, n_first: int, first_weight: float, weight: float
    ) -> torch.Tensor:
        """``KL(q(z | x) || N(0, I))`` per cell, the first ``n_first`` codes weighed by ``first_weight`` and the
        others by ``weight``.
        """
        if self.latent_prior is not None:
            raise ValueError(
                "guided_codes needs the identity latent prior: the correlated prior's KL does not split by code."
            )
        weights = torch.full((qz.loc.shape[-1],), float(weight), dtype=qz.loc.dtype, device=qz.loc.device)
        weights[:n_first] = float(first_weight)
        return gaussian_kl(qz, weights if mask is None else mask * weights)

    # ------------------------------------------------------------------ exact zeros
    @property
    def trains_w_freely(self) -> bool:
        """Whether every entry of ``W`` trains and may leave or enter the support (not a query, not a fixed
        support): what exact zeros and the active set of ``W`` need.
        """
        return not (self.n_batch_frozen or self.fixed_support or getattr(self, "n_latent_frozen", 0))

    def rates_over_cells(self, n_obs: int) -> torch.Tensor:
        """Each entry's Laplace rate over :meth:`prior_cells` (``(G, K)``): the prior's weight in the per-cell loss."""
        return self.prior.rates() / self.prior_cells(n_obs)

    @torch.no_grad()
    def data_gradient(self, n_obs: int) -> torch.Tensor:
        """The gradient of the loss without the prior on ``W`` (``(G, K)``), after a backward pass.

        The prior's part of ``W.grad`` is ``sign(w_jk)`` times the entry's rate over :meth:`prior_cells` (zero at a
        zero entry, whose subgradient :meth:`zero_rule_gradient_` takes apart); this takes it away.

        Parameters
        ----------
        n_obs
            Number of training cells.
        """
        w, grad = self.decoder.W, self.decoder.W.grad
        if grad is None:
            return torch.zeros_like(w)
        return grad - torch.sign(w) * self.rates_over_cells(n_obs)

    def forget_zero_rule_mean_(self) -> None:
        """Empty the zero rule's running mean of ``W``'s data gradient and its weights, in place (a fit that moves ``W``
        without updating them leaves them describing another ``W``); the next fit with exact zeros starts them afresh.
        """
        empty = torch.zeros(0, device=self.zero_rule_mean.device)
        self.zero_rule_mean, self.zero_rule_weight = empty, empty.clone()

    @torch.no_grad()
    def zero_rule_gradient_(self, n_obs: int, zero_grad: torch.Tensor | None = None) -> torch.Tensor:
        """Before an optimiser step with exact zeros: the zero entries of ``W`` get the lasso's least subgradient.

        At ``w_jk = 0`` the prior's subgradient can cancel any data gradient up to the entry's rate over the cells
        (:meth:`entries_to_readmit`), so the gradient of a zero entry becomes ``sign(g) max(|g| - rate, 0)``: zero
        while the data do not call the entry back (as orthant-wise L1 methods, OWL-QN, take it). Call
        :meth:`zero_rule_step_` with the result after the step.

        Parameters
        ----------
        n_obs
            Number of training cells.
        zero_grad
            The data gradient the zero entries are judged by (``(G, K)``); ``None``: ``W.grad``, the minibatch's
            own. :class:`~scsparse.train.SparseVAETrainingPlan` passes a running mean (its ``zero_rule_decay``).

        Returns
        -------
        torch.Tensor
            The state :meth:`zero_rule_step_` needs: ``W`` before the step, ``(2, G, K)`` with the sign of the new
            gradient.
        """
        w, grad = self.decoder.W, self.decoder.W.grad
        if grad is None:  # no gradient reached W: every sign is 0
            return torch.stack([w.detach().clone(), torch.zeros_like(w)])
        rates = self.rates_over_cells(n_obs)
        judged = grad if zero_grad is None else zero_grad
        least = torch.sign(judged) * (judged.abs() - rates).clamp_min(0.0)
        grad.copy_(torch.where(w == 0, least, grad))
        return torch.stack([w.detach().clone(), torch.sign(grad)])

    @torch.no_grad()
    def zero_rule_step_(self, before: torch.Tensor) -> None:
        """After an optimiser step with exact zeros: an entry whose step crossed zero stops at zero, in place.

        An entry that was nonzero and changed sign, or was zero and moved against its least subgradient (momentum
        of earlier steps), is set to exactly zero; entries fixed at zero (:meth:`~scsparse.nn.MaskedDecoder.prune_`)
        stay zero.

        Parameters
        ----------
        before
            What :meth:`zero_rule_gradient_` returned before the step.
        """
        w = self.decoder.W
        w_before, grad_sign = before[0], before[1]
        sign = torch.sign(w)
        crossed = (w_before != 0) & (sign != torch.sign(w_before))
        wrong_way = (w_before == 0) & (sign != -grad_sign)
        w.masked_fill_(crossed | wrong_way, 0.0)
        if self.decoder.is_pruned:
            w.mul_(self.decoder.prune_mask)

    @torch.no_grad()
    def entries_to_readmit(self, w_grad: torch.Tensor, n_obs: int) -> torch.Tensor:
        """Zero entries of ``W`` that the data call back: ``|d data / d w_jk|`` above their rate over the cells.

        At ``w_jk = 0`` the loss is at a minimum in ``w_jk`` exactly when the gradient of the rest of the loss is
        at most the entry's Laplace rate ``lambda1 p*_jk + lambda0 (1 - p*_jk)`` over :meth:`prior_cells` (the
        lasso's optimality condition); a zero entry that breaks it belongs in the active set of ``W``.

        Parameters
        ----------
        w_grad
            Gradient of the loss without the prior on ``W`` (``(G, K)``).
        n_obs
            Number of training cells.

        Returns
        -------
        torch.Tensor
            Boolean ``(G, K)``.
        """
        rates = self.rates_over_cells(n_obs)
        return (self.decoder.W == 0) & (w_grad.abs() > rates)

    # ------------------------------------------------------------------ EM
    @torch.no_grad()
    def em_update(self) -> None:
        """E-step (``p*``) and ``eta`` update of the Spike-and-Slab Lasso, from the current ``W`` (none in a query
        or with a fixed support).
        """
        if not (self.n_batch_frozen or self.fixed_support):
            self.prior.em_update(self.decoder.masked_W())

    @torch.no_grad()
    def fix_support_(self, pip: torch.Tensor, start: torch.Tensor) -> None:
        """Hold the mask's support at ``pip > 0.5`` and its inclusion probabilities at ``pip``, in place.

        ``W`` starts at ``start`` and its entries outside the support are pruned (:meth:`MaskedDecoder.prune_
        <scsparse.nn.MaskedDecoder.prune_>`: zero, without gradient); ``p*`` is set to ``pip`` and ``eta`` to its
        closed-form update. Training then moves the weights on the support, the network and the encoder, never
        the support or ``p*``.

        Parameters
        ----------
        pip
            ``(G, K)`` inclusion probabilities in [0, 1].
        start
            ``(G, K)`` initial ``W``.
        """
        if not self.fixed_support:
            raise ValueError("fix_support_ needs a module built with fixed_support=True (EM would move the support).")
        shape = tuple(self.prior.p_star.shape)
        if tuple(pip.shape) != shape or tuple(start.shape) != shape:
            raise ValueError(f"pip and start must have shape {shape}, got {tuple(pip.shape)}, {tuple(start.shape)}.")
        if not bool(((pip >= 0) & (pip <= 1)).all()):
            raise ValueError("pip must lie in [0, 1].")
        pip = pip.to(self.prior.p_star)
        self.decoder.W.copy_(start.to(self.decoder.W))
        self.decoder.prune_(pip > 0.5)
        self.prior.p_star.copy_(pip)
        self.prior.eta.copy_(self.prior.eta_update(pip))

    @torch.no_grad()
    def prune_spike(self, pip_threshold: float = 0.5) -> int:
        """Fix the entries of ``W`` in the spike (``p* <= pip_threshold``) at zero; see ``MaskedDecoder.prune_``.

        Returns the number of entries newly pruned.
        """
        return self.decoder.prune_(self.prior.p_star > pip_threshold)

    @torch.no_grad()
    def flip_factors(self, signs: torch.Tensor) -> None:
        """Replace factor ``z_k`` by ``signs[k] z_k`` (``+1`` or ``-1``) without changing the model, in place.

        Flips the encoder's posterior means, the columns of ``W`` and, with a learned ``Sigma_z``, its rows and
        columns; the likelihood, the KL and the Spike-and-Slab Lasso prior (hence ``p*`` and ``eta``) are
        unchanged. Used to orient the factors (:meth:`scsparse.model.SparseVAE.orient_factors`).

        Parameters
        ----------
        signs
            ``(K,)`` tensor of ``+1`` and ``-1``.
        """
        signs = torch.as_tensor(signs, dtype=torch.float32)
        if signs.shape != (self.n_latent,) or not bool(((signs == 1) | (signs == -1)).all()):
            raise ValueError(f"signs must be a ({self.n_latent},) tensor of +1 and -1, got {signs}.")
        self.encoder.flip_(signs)
        self.decoder.flip_(signs)
        if self.latent_prior is not None:
            self.latent_prior.flip_(signs)

    def active_factor_mask(self, pip_threshold: float = 0.5, min_genes: int = 1) -> torch.Tensor:
        """Boolean mask of the factors the prior kept (see :meth:`SpikeSlabLasso.active_mask`)."""
        return self.prior.active_mask(pip_threshold, min_genes)

    # ------------------------------------------------------------------ evaluation
    @torch.inference_mode()
    @auto_move_data
    def marginal_ll(
        self, tensors: dict[str, torch.Tensor], n_mc_samples: int = 100, return_mean: bool = False
    ) -> torch.Tensor | float:
        """Importance-sampled ``log p(x)`` per cell with ``q(z | x)`` as the proposal.

        ``log p(x) ~= logsumexp_s[log p(x | z_s) + log p(z_s) - log q(z_s | x)] - log S``.
        """
        inf = self.inference(**self._get_inference_input(tensors))
        qz, mask = inf["qz"], inf.get("latent_mask")
        z = qz.sample((n_mc_samples,))  # (S, B, K)
        if mask is not None:
            z = z * mask
        gen = self.generative(**self._get_generative_input(tensors, {**inf, "z": z}))
        x = tensors[REGISTRY_KEYS.X_KEY]
        log_px_z = self.log_likelihood(x.unsqueeze(0).expand(n_mc_samples, *x.shape), gen)
        ll = importance_sampled_log_likelihood(log_px_z, z, qz, mask, self.latent_prior)
        return ll.mean().item() if return_mean else ll
