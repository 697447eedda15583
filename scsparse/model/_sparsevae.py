"""SparseVAE: the sparse VAE (Moran et al., TMLR 2022) as an scvi-tools model on AnnData."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Literal

import numpy as np
import pandas as pd
import rich.pretty  # noqa: F401 - scvi-tools' view_anndata_setup calls rich.pretty without importing it
import torch
from anndata import AnnData
from scvi import REGISTRY_KEYS, settings
from scvi.model.base import BaseMinifiedModeModelClass, RNASeqMixin, UnsupervisedTrainingMixin, VAEMixin
from scvi.utils import unsupported_if_adata_minified

from scsparse._checks import InvalidInputError, accepted_keywords, check_choice, check_integer, check_keywords
from scsparse._matrix import column_variances, get_matrix, iter_row_chunks, raw_counts_hint
from scsparse._options import (
    COUNT_LIKELIHOODS,
    DEFAULT_LAMBDA0,
    DEFAULT_LAMBDA1,
    DEFAULT_MAX_PRIOR_CELLS,
    LATENT_PRIORS,
    MASK_INITS,
    GeneLikelihood,
    LatentPrior,
    MaskInit,
)
from scsparse.module import SparseVAEModule
from scsparse.nn import MaskedDecoder, calibrate_inverse_gamma
from scsparse.results import FactorResponse
from scsparse.train import SparseVAETrainingPlan

from ._base import SparseFactorMixin
from ._batch_query import BatchQueryMixin
from ._consensus import check_consensus_options, fit_consensus
from ._de import CheckedDEMixin
from ._gene_sets import DEFAULT_MIN_SET_GENES, DEFAULT_SET_PRIOR, GeneSetsArgument, GuidedFactorsMixin
from ._response import factor_response
from ._seeding import seeded
from ._sparsevae_io import SaveLoadMixin
from ._sparsevae_setup import SetupMixin
from ._sparsevae_train import TrainMixin
from ._validation import check_counts, check_float32_default, check_model_arguments

__all__ = ["SparseVAE"]

logger = logging.getLogger(__name__)


class SparseVAE(
    GuidedFactorsMixin,
    SparseFactorMixin,
    CheckedDEMixin,
    BatchQueryMixin,
    SetupMixin,
    TrainMixin,
    SaveLoadMixin,
    RNASeqMixin,
    VAEMixin,
    UnsupervisedTrainingMixin,
    BaseMinifiedModeModelClass,
):
    """Sparse VAE: identifiable gene programmes with a Spike-and-Slab Lasso mask on the decoder.

    Every gene ``j`` has a mask row ``w_j`` over the ``K`` latent factors and the decoder sees
    ``w_j ⊙ z_i``. The Spike-and-Slab Lasso prior on ``W`` picks the few factors that drive each gene,
    switches unused factors off (``n_latent`` is an upper bound) and makes the factors identifiable
    under the anchor-gene condition (Moran et al. 2022, Theorems 1-2).

    Parameters
    ----------
    adata
        AnnData registered with :meth:`setup_anndata`.
    n_latent
        Number of latent factors ``K`` (an upper bound).
    n_hidden
        Width of the decoder and encoder hidden layers.
    n_layers
        Number of hidden layers of the decoder and encoder.
    gene_likelihood
        ``"nb"`` (default), ``"zinb"``, ``"poisson"``, ``"multinomial"`` for counts; ``"normal"`` (Gaussian
        with per-gene variances and an inverse-gamma prior) for normalised data. With ``"normal"``, put the
        genes on a common scale first (e.g. ``scanpy.pp.scale``): ``|w_jk|`` is the amplitude of gene ``j``'s
        response in data units, and the spike/slab boundary (about 0.26 for the default lambdas) is only
        meaningful on unit-scale features.
    lambda0, lambda1
        Spike and slab Laplace rates of the prior on ``W`` (``lambda0 >> lambda1``). An entry is in the slab
        (``p* > 0.5``) once ``|w_jk|`` exceeds :func:`scsparse.nn.slab_threshold` (0.26 here at ``eta = 0.5``);
        a very small ``lambda1`` moves that boundary out (1.70 at ``lambda0 = 5``, ``lambda1 = 0.001``), so
        values tuned for implementations that drop the Laplace normalisers do not carry over.
    a, b
        Beta(a, b) prior on the fraction of genes each factor drives; ``b=None`` means ``b = n_genes``.
    max_prior_cells
        The most training cells the prior on ``W`` is weighed against (default 10,000). The loss divides the
        prior's penalty by ``min(n_train, max_prior_cells)``; on more cells the likelihood is tempered by
        ``max_prior_cells / n_train``, so a gene needs the evidence 10,000 cells would give it to enter a
        programme, and programmes keep their size as the data grow, while the factors and weights are still
        fitted to every cell. On 50,000 simulated cells with planted programmes of 20 genes this gave a median
        programme of 20 genes, against 44.5 with ``None`` (:doc:`/benchmarks/programme-size`). A population counts
        as its share of ``max_prior_cells`` cells (1% of the cells as 100 cells): a smaller value is stricter
        and less sensitive to rare cell types. ``None``: every training cell (the objective of Moran et al. 2022),
        under which programmes lengthen with the number of cells. Fits on up to ``max_prior_cells`` training cells
        are the same either way.
    dropout_rate
        Encoder dropout.
    seed
        Seed of the initial weights (drawn without touching the global random generators), the
        train/validation split and training; recorded in the results. Default: ``scvi.settings.seed``.
    mask_init
        How ``W`` starts. ``"nmf"``: from the gene loadings of an NMF of the normalised data (deterministic, so
        every seed starts each factor from the same genes; computed when training starts, on at most 10,000
        evenly spaced cells). ``"constant"``: every ``w_jk`` at ``decoder_kwargs["w_init"]`` (0.3) plus small
        noise, which leaves the choice of programme per factor to the random draw of the other weights.
    latent_prior
        ``"identity"`` (default, the paper's): ``z ~ N(0, I)``. ``"correlated"``: ``z ~ N(0, Sigma_z)`` with a
        learned correlation matrix (:meth:`get_latent_correlation`). Under ``N(0, I)`` codes as correlated as
        the true factors cost KL, and on strongly correlated factors the model may prefer decorrelated codes
        with a dense mask; a learned ``Sigma_z`` removes that cost (it also makes a duplicated column cheap).
    gene_sets
        Guided factors: a dict ``{name: genes}``, a GMT file or a gene-set library name
        (:func:`scsparse.tl.load_gene_sets`, e.g. ``"hallmark_human"``). Each set gets a factor of its own, placed
        before the ``n_latent`` free factors (``model.guided_factors``), in which its genes have the prior
        inclusion ``set_prior`` instead of the factor's ``eta_k``: they enter the programme at a smaller ``|w|``, yet
        a set gene the data do not support still goes to the spike, and genes outside the set still enter. Genes
        are matched to ``adata.var_names`` exactly (case-sensitive). :meth:`guided_table` says what each guided
        factor kept, dropped and added (:doc:`/user-guide/gene-sets`).
    min_set_genes
        A set with fewer of its genes in the data is refused (all such sets are named in the error).
    set_prior
        The prior inclusion of a set's genes in its factor, in (0, 1). At the default 0.5 a set gene enters the slab
        at ``|w| = slab_threshold(lambda0, lambda1, 0.5)`` (0.26 for the default rates) and a set gene at ``w = 0``
        has ``p* = lambda1 / (lambda0 + lambda1)`` (0.09), so the data can always drop it; values of
        ``lambda0 / (lambda0 + lambda1)`` or more, which would hold set genes whatever the data, are refused.
    **module_kwargs
        Passed to :class:`~scsparse.module.SparseVAEModule` (e.g. ``encode_covariates``,
        ``decoder_kwargs={"chunk_size": 512}``; ``decoder_kwargs={"first_bias": False}`` drops the decoder's
        first-layer bias, which is on by default, to get the paper's network).

    Examples
    --------
    >>> import scsparse
    >>> adata = scsparse.data.kang_pbmc()
    >>> scsparse.model.SparseVAE.setup_anndata(adata, layer="counts")
    >>> model = scsparse.model.SparseVAE(adata, n_latent=20)
    >>> model.train(max_epochs=100)
    >>> model.active_factors()
    >>> model.write_results(adata, key_added="sparsevae")
    """

    _module_cls = SparseVAEModule
    _training_plan_cls = SparseVAETrainingPlan
    #: Module arguments the model sets itself (from the AnnData or its own arguments), not options.
    _managed_module_kwargs = frozenset(
        {"adata", "n_input", "n_batch", "sigma_prior_xi", "n_cats_per_cov", "n_continuous_cov"}
        | {"prior_members", "member_prior"}  # set by gene_sets
    )
    _default_key = "sparsevae"
    #: where a minified AnnData keeps each cell's posterior (:meth:`minify_adata`)
    _LATENT_QZM_KEY = "sparsevae_latent_qzm"
    _LATENT_QZV_KEY = "sparsevae_latent_qzv"

    def __init__(
        self,
        adata: AnnData | None = None,
        n_latent: int = 20,
        n_hidden: int = 128,
        n_layers: int = 1,
        gene_likelihood: GeneLikelihood = "nb",
        lambda0: float = DEFAULT_LAMBDA0,
        lambda1: float = DEFAULT_LAMBDA1,
        a: float = 1.0,
        b: float | None = None,
        max_prior_cells: int | None = DEFAULT_MAX_PRIOR_CELLS,
        dropout_rate: float = 0.1,
        seed: int | None = None,
        latent_prior: LatentPrior = "identity",
        mask_init: MaskInit = "constant",
        registry: dict | None = None,
        gene_sets: GeneSetsArgument | None = None,
        min_set_genes: int = DEFAULT_MIN_SET_GENES,
        set_prior: float = DEFAULT_SET_PRIOR,
        **module_kwargs: Any,
    ) -> None:
        check_integer("n_latent", n_latent, fix="It is the upper bound on the number of factors (e.g. 20).")
        check_float32_default()
        check_model_arguments(
            n_hidden=n_hidden, n_layers=n_layers, gene_likelihood=gene_likelihood, lambda0=lambda0,
            lambda1=lambda1, a=a, b=b, dropout_rate=dropout_rate, seed=seed, max_prior_cells=max_prior_cells,
        )  # fmt: skip
        check_choice("latent_prior", latent_prior, LATENT_PRIORS)
        check_choice("mask_init", mask_init, MASK_INITS)
        super().__init__(adata, registry)
        self.mask_init = mask_init
        self._check_module_kwargs(module_kwargs)
        sigma_prior_xi = self._check_data_and_seed(gene_likelihood, seed)
        gene_sets = self._resolve_guide(gene_sets, min_set_genes, set_prior, (lambda0, lambda1))  # recorded resolved
        n_factors = len(self.gene_sets_) + n_latent
        with self._initialisation_rng():
            self.module = self._build_module(
                n_latent=n_factors,
                latent_prior=latent_prior,
                n_hidden=n_hidden,
                n_layers=n_layers,
                gene_likelihood=gene_likelihood,
                lambda0=lambda0,
                lambda1=lambda1,
                a=a,
                b=b,
                max_prior_cells=max_prior_cells,
                dropout_rate=dropout_rate,
                sigma_prior_xi=sigma_prior_xi,
                **self._guided_prior(n_factors, set_prior),
                **module_kwargs,
            )
        self.module.minified_data_type = self.minified_data_type  # a model loaded on a minified AnnData
        self._model_summary_string = (
            f"SparseVAE with n_latent={n_latent} (upper bound)"
            + (f" and {len(self.gene_sets_)} guided factors" if self.gene_sets_ else "")
            + f", n_hidden={n_hidden}, n_layers={n_layers}, "
            f"latent_prior={latent_prior!r}, "
            f"gene_likelihood={gene_likelihood!r}, lambda0={lambda0}, lambda1={lambda1}, a={a}, "
            f"b={'n_genes' if b is None else b}, n_genes={self.summary_stats.n_vars}, "
            f"n_batch={self.summary_stats.n_batch}"
        )
        self.init_params_ = self._get_init_params(locals())

    def _build_module(self, *, n_latent: int, latent_prior: str, **module_kwargs: Any) -> SparseVAEModule:
        """The module, sized from the registered data: the hook a subclass with other factor blocks overrides.

        Called by the constructor under the model's seed, after the data checks, with the constructor's module
        arguments (``n_latent``, ``latent_prior``, ``n_hidden``, ``gene_likelihood``, the prior's rates ...).
        """
        return self._module_cls(
            n_input=self.summary_stats.n_vars,
            n_batch=self.summary_stats.n_batch,
            **self._covariate_sizes(),
            n_latent=n_latent,
            latent_prior=latent_prior,
            **module_kwargs,
        )

    def _check_module_kwargs(self, module_kwargs: dict[str, Any]) -> None:
        """Refuse a misspelt option before the data are checked, naming the closest option of the model."""
        owner = f"{type(self).__name__}()"
        # the model's own arguments (its **module_kwargs go to the module, not to scvi-tools' base classes)
        accepted = accepted_keywords(type(self), follow_var_keyword=False) | accepted_keywords(self._module_cls)
        decoder_only = accepted_keywords(MaskedDecoder) - accepted - {"n_input", "n_output"}
        for_decoder = sorted(decoder_only & set(module_kwargs))
        if for_decoder:
            example = ", ".join(f"{k!r}: {module_kwargs[k]!r}" for k in for_decoder)
            raise TypeError(
                f"{owner}: {', '.join(for_decoder)} {'is an option' if len(for_decoder) == 1 else 'are options'} "
                f"of the decoder; pass decoder_kwargs={{{example}}} instead."
            )
        check_keywords(owner, module_kwargs, accepted - self._managed_module_kwargs)

    def _check_data_and_seed(self, gene_likelihood: str, seed: int | None) -> float:
        """Check the registered data suit the likelihood, record the seed, and calibrate the variance prior.

        Returns the scale ``xi`` of the inverse-gamma prior on per-gene variances (``"normal"`` only).
        """
        layer = self._layer()
        self.seed = int(settings.seed or 0) if seed is None else int(seed)
        self.init_seed = self.seed  # the initial weights' seed; train(seed=) may later change self.seed
        if self.adata is None:
            self.data_checks_ = (
                "not run: the model was built from a registry (registry=), without an AnnData to scan"
                + ("; the variance prior has its default scale" if gene_likelihood == "normal" else "")
            )
            return 1.0
        if self.minified_data_type is not None:  # a model rebuilt on a minified AnnData: no counts to check
            self.data_checks_ = "not run: the AnnData is minified (no counts)"
            return 1.0
        self.data_checks_ = "passed"
        if gene_likelihood in COUNT_LIKELIHOODS:
            check_counts(self._data_scan(), self.adata.obs_names, gene_likelihood, hint=raw_counts_hint(self.adata))
        if gene_likelihood == "normal":
            return calibrate_inverse_gamma(column_variances(iter_row_chunks(get_matrix(self.adata, layer))))
        return 1.0

    @contextmanager
    def _initialisation_rng(self) -> Iterator[None]:
        """Draw the module's initial weights from the model's seed, leaving the global generators as they were."""
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            yield

    @classmethod
    def consensus(
        cls,
        adata: AnnData,
        n_restarts: int = 10,
        *,
        seeds: Sequence[int] | None = None,
        min_share: float = 0.5,
        distance: float = 0.6,
        max_density: float | None = None,
        train_kwargs: dict[str, Any] | None = None,
        **model_kwargs: Any,
    ) -> SparseVAE:
        """Fit several restarts, pool their programmes, and refit one model on the programmes they agree on.

        ``n_restarts`` models are fitted one after another, each with its own seed (initial weights, split and
        training), as separate refits by a user would be. Every active programme of every restart is pooled
        (:func:`~scsparse.model.consensus_programmes`): outliers (programmes no other restart comes near) are
        dropped, the rest grouped by the cosine similarity of their loadings, and a group is kept when at least
        ``min_share`` of the restarts contribute to it. A kept programme's genes are those more than half of its
        members hold; its ``p*`` is the share of members holding each gene. One model is then refitted with one
        factor per kept programme and those supports held fixed (``W`` zero outside them, ``p*`` not updated; the
        weights, the network and the encoder trained, with the first seed): its latent representation,
        differential expression, normalised expression, :meth:`write_results`, ``save`` and ``load`` are the
        consensus's own, not one restart's.

        On :class:`~scsparse.model.MultiStudySparseVAE` (``MultiStudySparseVAE.consensus(...)``) the blocks are
        grouped apart: a shared programme only with the shared programmes of other restarts, a study's specific
        programme only with that study's; the refit has as many shared and specific factors as each block keeps.

        The returned model's ``consensus_`` table has one row per group of programmes: its ``factor`` in the refit
        (empty when not kept), ``reproducibility`` (share of restarts with a programme in the group),
        ``agreement`` (mean Jaccard index of the members' genes with the consensus genes), ``n_members``,
        ``n_genes``, ``n_anchor_genes`` (genes in no other kept programme), ``identifiable`` (at least two anchor
        genes) and ``kept``. ``consensus_members_`` has one row per pooled programme (its restart, group, local
        density, whether an outlier), ``consensus_selection_`` the number of programmes at each cut distance
        (:func:`scsparse.pl.consensus_selection`), ``restarts_`` one row per restart. :meth:`write_results` stores
        them in ``uns[key]``.

        Parameters
        ----------
        adata
            AnnData registered with :meth:`setup_anndata`.
        n_restarts
            Number of restarts (at least 2). The cost is that of ``n_restarts`` single fits, run one after another,
            plus one refit.
        seeds
            The restarts' seeds (default: ``seed, seed + 1, ...`` from ``model_kwargs["seed"]``, else
            ``scvi.settings.seed``); the refit uses the first. Two consensus fits with disjoint seeds test the
            consensus itself.
        min_share
            Share of the restarts that must contribute a programme to a group for it to be kept.
        distance
            Cosine distance at which the grouping tree (average linkage) is cut.
        max_density
            Mean distance to the nearest other programmes above which a programme is an outlier (default:
            ``distance``).
        train_kwargs
            Passed to every restart's :meth:`train` and to the refit's.
        **model_kwargs
            Passed to every restart's constructor (``n_latent``, ``gene_likelihood`` ...; ``n_latent_shared``,
            ``n_latent_specific`` ... for the multi-study model); the refit's numbers of factors are the
            consensus's.

        Returns
        -------
        SparseVAE
            The refit (of the class the method is called on).

        Examples
        --------
        >>> scsparse.model.SparseVAE.setup_anndata(adata, layer="counts")
        >>> model = scsparse.model.SparseVAE.consensus(adata, n_restarts=10, n_latent=20)
        >>> model.consensus_[["factor", "reproducibility", "n_genes", "identifiable", "kept"]]
        >>> model.write_results(adata)
        """
        if isinstance(n_restarts, bool) or not isinstance(n_restarts, int | np.integer) or n_restarts < 2:
            raise InvalidInputError(f"n_restarts must be an integer of at least 2, got {n_restarts!r}.")
        check_consensus_options(min_share=min_share, distance=distance, max_density=max_density)
        if model_kwargs.get("gene_sets") is not None:
            raise InvalidInputError(
                "consensus does not take gene_sets: its refit holds the pooled supports fixed, so no prior guides "
                "it. Fit guided models with different seeds and compare their guided_table(), or run consensus "
                "without gene_sets."
            )
        seed = model_kwargs.pop("seed", None)
        first = int(settings.seed or 0) if seed is None else int(seed)
        if seeds is None:
            seeds = list(range(first, first + int(n_restarts)))
        elif any(isinstance(s, bool) or not isinstance(s, int | np.integer) for s in seeds):
            raise InvalidInputError(f"seeds must be integers, got {list(seeds)}.")
        seeds = [int(s) for s in seeds]
        if len(seeds) != n_restarts or len(set(seeds)) != len(seeds):
            raise InvalidInputError(f"seeds must be {n_restarts} distinct integers (one per restart), got {seeds}.")
        return fit_consensus(
            cls, adata, seeds=seeds, min_share=float(min_share), distance=float(distance),
            max_density=None if max_density is None else float(max_density),
            train_kwargs=dict(train_kwargs or {}), model_kwargs=model_kwargs,
        )  # fmt: skip

    @classmethod
    def _consensus_factor_kwargs(cls, consensus: Any) -> dict[str, Any]:
        """The constructor's numbers of factors for a refit of ``consensus`` (one factor per kept programme)."""
        return {"n_latent": consensus.n_programmes}

    # ------------------------------------------------------------------ results
    def get_normalized_expression(
        self,
        adata: AnnData | None = None,
        indices: Sequence[int] | None = None,
        transform_batch: str | int | Sequence[str | int] | None = None,
        gene_list: Sequence[str] | None = None,
        library_size: float | Literal["latent"] = 1,
        n_samples: int = 1,
        n_samples_overall: int | None = None,
        weights: Literal["uniform", "importance"] | None = None,
        batch_size: int | None = None,
        return_mean: bool = True,
        return_numpy: bool | None = None,
        silent: bool = True,
        dataloader: Any = None,
        data_loader_kwargs: dict | None = None,
        **importance_weighting_kwargs: Any,
    ) -> pd.DataFrame | np.ndarray:
        """Denoised expression from the decoder, as :meth:`scvi.model.base.RNASeqMixin.get_normalized_expression`.

        For count likelihoods ``library_size * softmax(f(W ⊙ z))`` (``library_size=1``: proportions;
        ``"latent"``: each cell's observed library size); for ``"normal"`` the decoder mean. Same arguments and
        results as scvi-tools' method (``n_samples``, ``n_samples_overall``, ``return_mean``, a list of batches
        for ``transform_batch`` averages over them), with two differences: with one code per cell
        (``n_samples=1`` and no ``n_samples_overall``) the decoder sees each cell's posterior mean rather than
        one random draw, so the result is deterministic; and a ``gene_list`` or ``transform_batch`` naming a
        gene or a batch the model does not have raises :class:`~scsparse.model.InvalidInputError` instead of
        being ignored. Columns follow ``gene_list``'s order.

        Parameters
        ----------
        adata, indices
            Cells (default: all cells of the model's AnnData).
        transform_batch
            Decode every cell as if it came from this category of the model's ``batch_key`` (its factors are
            still inferred from its own batch), or average over several: expression with the batch effect
            removed. ``None``: each cell's own batch.
        gene_list
            Only these genes.
        library_size
            Scale of the count likelihoods' expression (see above).
        n_samples
            Posterior samples of ``z`` per cell (1: the posterior mean).
        n_samples_overall, weights, return_mean, silent, dataloader, data_loader_kwargs
            As in scvi-tools.
        batch_size
            Minibatch size (default: scvi-tools' ``settings.batch_size``).
        return_numpy
            Return an array instead of a DataFrame.
        **importance_weighting_kwargs
            Passed to scvi-tools' ``get_importance_weights`` (``weights="importance"``).

        Returns
        -------
        Cells x genes DataFrame (or array; ``(n_samples, cells, genes)`` with ``return_mean=False``).

        Examples
        --------
        >>> expr = model.get_normalized_expression(gene_list=["IFIT1", "ISG15"], library_size=1e4)
        >>> corrected = model.get_normalized_expression(transform_batch=["ctrl", "stim"], library_size=1e4)
        """
        check_integer("n_samples", n_samples, fix="Posterior samples per cell (1: the posterior mean).")
        columns = self._gene_columns(gene_list)
        batches = [transform_batch] if isinstance(transform_batch, str | int) else list(transform_batch or [])
        for batch in batches:
            if isinstance(batch, str):
                self._batch_code(batch)
        one_code = n_samples == 1 and n_samples_overall is None
        with self.module.posterior_mean_codes(one_code):  # scvi-tools runs it under inference mode
            values = super().get_normalized_expression(
                adata=adata, indices=indices, transform_batch=transform_batch, gene_list=gene_list,
                library_size=library_size, n_samples=n_samples, n_samples_overall=n_samples_overall,
                weights=weights, batch_size=batch_size, return_mean=return_mean, return_numpy=return_numpy,
                silent=silent, dataloader=dataloader, data_loader_kwargs=data_loader_kwargs,
                **importance_weighting_kwargs,
            )  # fmt: skip
        if columns is None:
            return values
        order = np.argsort(np.argsort(columns))  # gene_list's genes among the returned (var-ordered) columns
        if isinstance(values, pd.DataFrame):
            return values.iloc[:, order]
        return values[..., order]

    def _gene_columns(self, gene_list: Sequence[str] | None) -> np.ndarray | None:
        """Positions of ``gene_list`` among the model's genes (``None``: all genes)."""
        if gene_list is None:
            return None
        genes = [gene_list] if isinstance(gene_list, str) else [str(g) for g in gene_list]
        names = self._gene_names
        missing = [g for g in genes if g not in names]
        if missing or not genes:
            raise InvalidInputError(
                f"gene_list must name genes of the model; not found: {missing[:5]}"
                + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
                + ". Use names from adata.var_names."
            )
        return names.get_indexer(genes)

    def _batch_code(self, transform_batch: str | None) -> int | None:
        """The code of a category of the registered ``batch_key`` (``None`` when not transforming)."""
        if transform_batch is None:
            return None
        state = self.adata_manager.get_state_registry(REGISTRY_KEYS.BATCH_KEY)
        categories = [str(c) for c in state.categorical_mapping]
        if state.original_key != "_scvi_batch" and self.module.n_batch <= 1:
            raise InvalidInputError(
                f"transform_batch needs at least two batches; adata.obs[{state.original_key!r}] had a single category "
                f"({categories[0]!r}) when the model was set up, so there is no batch effect to remove."
            )
        if state.original_key == "_scvi_batch":
            raise InvalidInputError(
                "transform_batch needs a batch covariate: set up the AnnData with batch_key=... "
                "(e.g. SparseVAE.setup_anndata(adata, layer='counts', batch_key='sample')) and train again."
            )
        if str(transform_batch) not in categories:
            raise InvalidInputError(
                f"transform_batch={transform_batch!r} is not a category of adata.obs[{state.original_key!r}] "
                f"(categories: {categories})."
            )
        return categories.index(str(transform_batch))

    def get_factor_response(
        self,
        factors: Sequence[str | int] | str | int | None = None,
        *,
        n_steps: int = 9,
        span: tuple[float, float] = (0.02, 0.98),
        indices: Sequence[int] | None = None,
        n_cells: int | None = 500,
        library_size: float = 1e4,
        batch_size: int | None = None,
        seed: int = 0,
    ) -> FactorResponse:
        """How each gene's decoded expression changes along each factor (latent traversals averaged over cells).

        ``W`` and ``p*`` say which genes a factor drives; the decoder is nonlinear, so whether a gene goes up or
        down with the factor, and how, is the decoder's. For each factor, its value is set in turn to each of
        ``n_steps`` quantiles of its posterior means (from ``span[0]`` to ``span[1]``), every other factor, the
        batch and the library of each cell kept at their own values, and the decoded expression is averaged over
        the cells (a partial-dependence curve per gene). Genes with ``w_jk = 0`` have the same decoder output
        along factor ``k``'s traversal (for count likelihoods their normalised expression still shifts slightly,
        as all genes' expression sums to one). Cells are streamed in minibatches; the result holds
        ``n_factors x n_steps x n_genes`` numbers.

        Parameters
        ----------
        factors
            Names or positions of the factors to traverse; ``None``: the active factors.
        n_steps
            Number of values per traversal (at least 2: the two ends).
        span
            Quantiles of the factor's posterior means at the two ends of the traversal.
        indices
            Cells of the model's AnnData to average over (default: all); a multi-study model's study-specific
            factors use only the cells of their study among them.
        n_cells
            At most this many of those cells per factor, drawn with ``seed`` (``None``: all of them).
        library_size
            For count likelihoods, expression is reported as counts per ``library_size`` (``rho * library_size``);
            ignored for ``"normal"``, where the decoder mean is reported.
        batch_size
            Minibatch size (default: scvi-tools' ``settings.batch_size``).
        seed
            Seed of the draw of cells.

        Returns
        -------
        FactorResponse
            ``grid`` (factors x steps), ``expression`` (factors x steps x genes), ``n_cells``, ``unit``;
            ``.curve(factor)`` gives one traversal as a steps x genes DataFrame and ``.effects()`` the log2 fold
            change from the low to the high end (genes x factors; the difference for ``"normal"``).

        Examples
        --------
        >>> response = model.get_factor_response()
        >>> response.effects()["factor_3"].sort_values().tail(10)  # the genes that rise most with factor 3
        >>> scsparse.pl.factor_response(response, "factor_3", save="factor_3.png")
        """
        return factor_response(
            self, factors, n_steps=n_steps, span=span, indices=indices, n_cells=n_cells,
            library_size=library_size, batch_size=batch_size, seed=seed,
        )  # fmt: skip

    @unsupported_if_adata_minified
    def get_heldout_nll(
        self, adata: AnnData | None = None, indices: Sequence[int] | None = None, n_mc_samples: int = 100
    ) -> float:
        """Negative log-likelihood per cell, ``-log p(x)``, importance-sampled with ``q(z | x)``.

        Defaults to the cells held out from training (``model.validation_indices``) when neither
        ``adata`` nor ``indices`` is given. This is a true likelihood (all normalising constants kept),
        comparable across models with the same likelihood. The importance samples are drawn from the model's
        seed, so the same model and cells give the same value every time, and the global random generators are
        left as they were.
        """
        check_integer("n_mc_samples", n_mc_samples, fix="Importance samples per cell (default 100).")
        if adata is None and indices is None:
            indices = self.validation_indices
            if indices is None or len(indices) == 0:
                raise InvalidInputError("No held-out cells: train with train_size < 1 or pass indices=.")
        with seeded(self.seed):
            return -float(self.get_marginal_ll(adata=adata, indices=indices, n_mc_samples=n_mc_samples))

    @unsupported_if_adata_minified
    def get_latent_library_size(
        self,
        adata: AnnData | None = None,
        indices: Sequence[int] | None = None,
        give_mean: bool = True,
        batch_size: int | None = None,
        dataloader: Any = None,
        **data_loader_kwargs: Any,
    ) -> np.ndarray:
        """Each cell's library size, as scvi-tools' method returns it (cells x 1).

        The model does not infer a library size: it uses each cell's observed total counts (or its
        ``size_factor_key`` value), which this returns; ``give_mean`` is accepted for scvi-tools' signature and has
        no effect, as the value is not a random variable. ``dataloader`` and ``**data_loader_kwargs`` are as in
        scvi-tools.

        Examples
        --------
        >>> model.get_latent_library_size()[:3]
        """
        if dataloader is None:
            adata = self._validate_anndata(adata)
            dataloader = self._make_data_loader(
                adata=adata, indices=indices, batch_size=batch_size, **data_loader_kwargs
            )
        sizes = []
        with torch.inference_mode():
            for tensors in dataloader:
                inference_inputs = self.module._get_inference_input(tensors)
                library = self.module.inference(**inference_inputs)["library"]
                sizes.append(library.reshape(-1, 1).float().cpu().numpy())
        return np.concatenate(sizes, axis=0)
