"""MultiStudySparseVAE: shared and study-specific sparse gene programmes across studies or conditions."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd
from anndata import AnnData
from scvi import REGISTRY_KEYS
from scvi.data.fields import CategoricalObsField

from scsparse._checks import InvalidInputError, accepted_keywords, check_integer, check_keywords
from scsparse._options import DEFAULT_LAMBDA0, DEFAULT_LAMBDA1, DEFAULT_MAX_PRIOR_CELLS, GeneLikelihood
from scsparse.module import STUDY_KEY, MultiStudySparseVAEModule
from scsparse.results import result_keys, write_multistudy_results

from ._sparsevae import SparseVAE
from ._validation import (
    check_anndata,
    check_query_genes,
    check_study_key,
    check_study_names,
)

__all__ = ["MultiStudySparseVAE"]


def _check_query(
    adata: AnnData, reference: MultiStudySparseVAE, n_latent_specific: int | Mapping[str, int]
) -> tuple[dict[str, Any], dict[str, int]]:
    """Check that ``adata`` can be mapped onto ``reference`` as new studies; name the fix when it cannot.

    Parameters
    ----------
    adata
        Query cells.
    reference
        The trained reference model.
    n_latent_specific
        Specific factors per new study (one int, or ``{study: K}``).

    Returns
    -------
    tuple
        The reference's setup arguments (to register the query with) and ``{new study: K}``.

    Raises
    ------
    InvalidInputError
        Untrained reference, a query model or a study-encoding reference as reference, genes that differ,
        no study column, studies already in the reference or named so that their keys would clash with the
        reference's, batches the reference never saw, no new factor.
    """
    if not reference.is_trained_:
        raise InvalidInputError("The reference model is not trained; train it before mapping a query onto it.")
    if reference.module.n_latent_frozen:
        raise InvalidInputError(
            "The reference is itself a query model; map further studies onto its own reference (each query "
            "then has its own model), or fit one MultiStudySparseVAE on all the studies you have."
        )
    if reference.module.encode_study:
        raise InvalidInputError(
            "The reference encodes the study (encode_study=True), so its encoder has no input for a new "
            "study. Map queries onto a reference fitted with encode_study=False (the default)."
        )
    check_anndata(adata, reference._layer(), allow_zero_genes=True)  # the reference's genes, measured or not
    check_query_genes(adata, reference._gene_names, type(reference).__name__)
    registry = reference.adata_manager.registry
    setup = dict(registry["setup_args"])
    study_key, batch_key = setup["study_key"], setup.get("batch_key")
    if study_key not in adata.obs:
        raise InvalidInputError(
            f"The query has no column adata.obs[{study_key!r}], the reference's study column; add it with "
            "the query's study name(s)."
        )
    query_studies = [str(s) for s in pd.unique(adata.obs[study_key].astype(str))]
    known = sorted(set(query_studies) & set(reference.studies))
    if known:
        raise InvalidInputError(
            f"Studies {known} are already in the reference; their cells need no new factors: use "
            "reference.get_latent_representation(adata). A query names new studies only."
        )
    check_study_names([*reference.studies, *query_studies], f"the reference's studies and adata.obs[{study_key!r}]")
    if batch_key is not None and batch_key in adata.obs:
        ref_batches = reference.adata_manager.get_state_registry(REGISTRY_KEYS.BATCH_KEY).categorical_mapping
        new_batches = sorted(set(adata.obs[batch_key].astype(str)) - {str(b) for b in ref_batches})
        if new_batches:
            raise InvalidInputError(
                f"Batches {new_batches} of adata.obs[{batch_key!r}] are not in the reference: the decoder has "
                "no weights for them. Map batches the reference was trained with."
            )
    if isinstance(n_latent_specific, Mapping):
        unknown = sorted(set(map(str, n_latent_specific)) - set(query_studies))
        if unknown:
            raise InvalidInputError(
                f"n_latent_specific names studies {unknown} that are not in the query {query_studies}."
            )
        new_blocks = {s: int(n_latent_specific.get(s, 0)) for s in query_studies}
    else:
        new_blocks = dict.fromkeys(query_studies, int(n_latent_specific))
    if min(new_blocks.values()) < 0 or sum(new_blocks.values()) == 0:
        raise InvalidInputError("A query needs at least one new specific factor (n_latent_specific >= 1).")
    return setup, new_blocks


class MultiStudySparseVAE(SparseVAE):
    """Multi-study sparse VAE: programmes shared by all studies and programmes specific to one.

    Cells of study ``m`` have shared factors (mask ``W_shared``, used by every study) and specific factors
    (mask ``W_m``, used by study ``m`` only), decoded by one shared network from the stacked, zero-padded
    latent vector. Each mask has a Spike-and-Slab Lasso prior; because a programme duplicated into every
    study's specific block costs more under the sparse prior than one shared column, shared and
    study-specific programmes separate, and unused columns switch off.

    Parameters
    ----------
    adata
        AnnData registered with :meth:`setup_anndata` (or ``None`` with ``registry``).
    n_latent_shared
        Number of shared factors (an upper bound).
    n_latent_specific
        Number of specific factors per study: one int for every study, or a dict ``{study: K_m}``
        (studies not in the dict get none).
    n_hidden, n_layers, gene_likelihood, lambda0, lambda1, a, b, max_prior_cells, dropout_rate, seed
        As in :class:`~scsparse.model.SparseVAE` (the model is built by its constructor, through the
        ``_build_module`` hook).
    registry, **module_kwargs
        As in :class:`~scsparse.model.SparseVAE`, except that the decoder has no first-layer bias unless
        ``decoder_kwargs={"first_bias": True}`` is given: with it, a programme present in one study only lands in
        a shared factor more often (:doc:`/user-guide/multistudy`).
        ``module_kwargs`` also takes ``encode_study`` (default ``False``: the encoder does not see the study,
        so every study's shared factors come from one function of the expression; see
        :class:`~scsparse.module.MultiStudySparseVAEModule`).

    Examples
    --------
    >>> adata = scsparse.data.kang_pbmc()
    >>> scsparse.model.MultiStudySparseVAE.setup_anndata(adata, study_key="condition", layer="counts")
    >>> model = scsparse.model.MultiStudySparseVAE(adata, n_latent_shared=10, n_latent_specific=3)
    >>> model.train(max_epochs=100)
    >>> model.factor_table()
    >>> model.write_results(adata, key_added="mssvae")
    """

    _module_cls = MultiStudySparseVAEModule
    _managed_module_kwargs = SparseVAE._managed_module_kwargs | {"n_latent"}
    _default_key = "mssvae"

    def __init__(
        self,
        adata: AnnData | None = None,
        n_latent_shared: int = 10,
        n_latent_specific: int | Mapping[str, int] = 5,
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
        registry: dict | None = None,
        **module_kwargs: Any,
    ) -> None:
        check_integer("n_latent_shared", n_latent_shared, minimum=0, fix="The number of shared factors (e.g. 10).")
        guide = sorted({"gene_sets", "min_set_genes", "set_prior"} & set(module_kwargs))
        if guide:
            raise InvalidInputError(
                f"MultiStudySparseVAE does not take {', '.join(guide)}: guided factors are a SparseVAE option. Fit "
                "scsparse.model.SparseVAE(adata, gene_sets=...) on all the studies (set up with batch_key= the study "
                "column) for gene-set guided programmes, or the multi-study model without gene sets."
            )
        self._refuse_single_study_arguments(module_kwargs)
        # the factor request goes to _build_module with the module's options, sized per study there
        super().__init__(
            adata, n_hidden=n_hidden, n_layers=n_layers, gene_likelihood=gene_likelihood, lambda0=lambda0,
            lambda1=lambda1, a=a, b=b, max_prior_cells=max_prior_cells, dropout_rate=dropout_rate, seed=seed,
            registry=registry, n_latent_shared=n_latent_shared, n_latent_specific=n_latent_specific,
            **module_kwargs,
        )  # fmt: skip
        studies, per_study = self.studies, list(self.module.n_latent_specific)
        self._model_summary_string = (
            f"MultiStudySparseVAE with {len(studies)} studies {studies}, n_latent_shared={n_latent_shared}, "
            f"n_latent_specific={dict(zip(studies, per_study, strict=True))}, n_hidden={n_hidden}, "
            f"n_layers={n_layers}, gene_likelihood={gene_likelihood!r}, lambda0={lambda0}, lambda1={lambda1}"
        )
        self.init_params_ = self._get_init_params(locals())

    @classmethod
    def _consensus_factor_kwargs(cls, consensus: Any) -> dict[str, Any]:
        """The numbers of shared and specific factors of a consensus refit: one per kept programme of each block."""
        specific = consensus.block_counts(list(dict.fromkeys(["shared", *consensus.blocks])))
        return {"n_latent_shared": specific.pop("shared"), "n_latent_specific": specific}

    def _refuse_single_study_arguments(self, module_kwargs: dict[str, Any]) -> None:
        """Refuse the single-study model's own arguments that this model does not take (``n_latent``,
        ``mask_init``): passed on to :class:`SparseVAE`'s constructor they would take its parameters of the same
        name unseen. Its other options, misspelt ones included, the parent's ``_check_module_kwargs`` checks.
        """
        options = accepted_keywords(type(self), follow_var_keyword=False) | accepted_keywords(self._module_cls)
        options -= self._managed_module_kwargs
        taken = accepted_keywords(SparseVAE, follow_var_keyword=False) - options
        check_keywords(f"{type(self).__name__}()", [k for k in module_kwargs if k in taken], options)

    def _build_module(
        self,
        *,
        n_latent: int,
        latent_prior: str,
        n_latent_shared: int,
        n_latent_specific: int | Mapping[str, int],
        **module_kwargs: Any,
    ) -> MultiStudySparseVAEModule:
        """The module with a shared block of ``n_latent_shared`` factors and one block per study
        (``n_latent_specific``); ``n_latent`` is the single-study model's and does not apply, and the module refuses
        ``latent_prior="correlated"`` with the reason.
        """
        studies = self.studies
        if isinstance(n_latent_specific, Mapping):
            unknown = sorted(set(map(str, n_latent_specific)) - set(studies))
            if unknown:
                raise InvalidInputError(
                    f"n_latent_specific names unknown studies {unknown}; the studies are {studies}."
                )
            per_study = [
                check_integer(f"n_latent_specific[{s!r}]", n_latent_specific.get(s, 0), minimum=0) for s in studies
            ]
        else:
            fix = "It is the number of factors specific to each study (e.g. 5), or a dict study -> number."
            per_study = [check_integer("n_latent_specific", n_latent_specific, minimum=0, fix=fix)] * len(studies)
        if n_latent_shared + sum(per_study) == 0:
            raise InvalidInputError(
                "n_latent_shared and n_latent_specific are all 0: the model has no factor. Give at least one "
                "(e.g. n_latent_shared=10)."
            )
        return self._module_cls(
            n_input=self.summary_stats.n_vars,
            n_batch=self.summary_stats.n_batch,
            **self._covariate_sizes(),
            n_latent_shared=n_latent_shared,
            n_latent_specific=per_study,
            latent_prior=latent_prior,
            **module_kwargs,
        )

    @classmethod
    def setup_anndata(
        cls,
        adata: AnnData,
        study_key: str,
        layer: str | None = None,
        batch_key: str | None = None,
        size_factor_key: str | None = None,
        min_cells_per_study: int = 10,
        labels_key: str | None = None,
        categorical_covariate_keys: list[str] | None = None,
        continuous_covariate_keys: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        """Register an AnnData whose cells come from several studies (or conditions, cohorts).

        Parameters
        ----------
        adata
            AnnData with the same genes measured in every study.
        study_key
            Column of ``adata.obs`` naming each cell's study; at least two studies, no missing labels,
            at least ``min_cells_per_study`` cells each.
        layer
            Layer with the data (raw counts for count likelihoods); ``None`` uses ``adata.X``.
        batch_key
            Optional technical covariate entering the decoder outside the masks. When the studies are technical
            batches (chemistries, platforms), pass ``study_key``'s column here too, so that each study has its own
            offset outside the masks; without it, what differs between studies on average goes into the
            study-specific factors as a study-wide shift (:func:`scsparse.tl.factor_diagnostics`).
        size_factor_key
            Optional per-cell size factors.
        min_cells_per_study
            Smallest study size accepted.
        labels_key, categorical_covariate_keys, continuous_covariate_keys
            As in :meth:`SparseVAE.setup_anndata`: covariates enter the decoder outside every mask.

        Examples
        --------
        >>> scsparse.model.MultiStudySparseVAE.setup_anndata(adata, study_key="condition", layer="counts")
        """
        setup_method_args = cls._get_setup_method_args(**locals())

        def check_studies(query: bool) -> None:
            # a query (load_query_data) registers against its reference's studies and genes: one new study is enough
            check_study_key(adata, study_key, min_cells=min_cells_per_study, min_studies=1 if query else 2)

        cls._register_anndata(
            adata, setup_method_args, layer=layer, batch_key=batch_key, labels_key=labels_key,
            size_factor_key=size_factor_key, categorical_covariate_keys=categorical_covariate_keys,
            continuous_covariate_keys=continuous_covariate_keys,
            block_fields=[CategoricalObsField(STUDY_KEY, study_key)], check_blocks=check_studies, reserved=[study_key],
            **kwargs,
        )  # fmt: skip

    # ------------------------------------------------------------------ names and blocks
    @property
    def studies(self) -> list[str]:
        """Study names in the order of their codes."""
        mapping = self.registry_["field_registries"][STUDY_KEY]["state_registry"]["categorical_mapping"]
        return [str(s) for s in mapping]

    @property
    def factor_names(self) -> list[str]:
        """``shared_0`` ... then ``<study>_0`` ... for each study's specific factors."""
        names = [f"shared_{k}" for k in range(self.module.n_latent_shared)]
        for study, k_m in zip(self.studies, self.module.n_latent_specific, strict=True):
            names += [f"{study}_{k}" for k in range(k_m)]
        return names

    def _columns(self, study: str | None) -> slice:
        """The factors of a block: all (``None``), the shared ones (``"shared"``) or a study's specific ones."""
        blocks = self.module.block_slices()
        if study is None:
            return slice(None)
        if study == "shared":
            return blocks[0][2]
        if study not in self.studies:
            raise InvalidInputError(
                f"Unknown study {study!r}; pass None (every factor), 'shared' (the shared factors) or one of the "
                f"studies {self.studies}."
            )
        return blocks[1 + self.studies.index(study)][2]

    def _orientation_groups(self) -> list[tuple[slice, np.ndarray | None]]:
        """Shared factors are oriented over all cells, a study's specific factors over that study's cells.

        A query model (:meth:`load_query_data`) orients only its new factors: the reference's keep their signs.
        """
        codes = np.asarray(self.adata_manager.get_from_registry(STUDY_KEY)).reshape(-1)
        frozen = self.module.n_latent_frozen
        return [
            (cols, None if m < 0 else codes == m) for _, m, cols in self.module.block_slices() if cols.start >= frozen
        ]

    def _expected_training_warnings(self) -> list[str]:
        expected = super()._expected_training_warnings()
        if self.module.n_latent_frozen and self.module.freeze_reference_encoder:
            # a query model's reference encoder is in eval mode on purpose; Lightning warns about it
            expected.append(r".*module\(s\) in eval mode.*")
        return expected

    # ------------------------------------------------------------------ query mapping
    @classmethod
    def load_query_data(
        cls,
        adata: AnnData,
        reference_model: MultiStudySparseVAE,
        n_latent_specific: int | Mapping[str, int] = 5,
        seed: int | None = None,
        freeze_encoder: bool = True,
    ) -> MultiStudySparseVAE:
        """A model for new studies built on a trained reference: the reference's factors fixed, new ones added.

        The query model has every factor of ``reference`` (shared and study-specific, with their masks,
        ``p*`` and ``eta``) and a block of specific factors for each new study. Training it on the query cells
        (:meth:`train`) fits only what is new: an encoder for the new blocks, their mask and first-layer
        columns, and the output units of the genes that no reference programme selects (their response was
        never fitted; their baselines stay). Everything else stays exactly the reference's, including the
        encoder that computes the shared factors, so a query cell's shared factors are the reference's
        programmes, comparable with the reference cells', while each new study's own programmes go into its new
        block (as in scArches, but with sparse masks). The reference must not encode the study
        (``encode_study=False``, the default).

        Parameters
        ----------
        adata
            Query cells: the reference's genes in the same order, raw counts where the reference had them (same
            layer), the study column the reference was set up with, naming studies the reference does not
            have. Registered here (no :meth:`setup_anndata` needed); only registry columns are added to it.
        reference_model
            A trained :class:`MultiStudySparseVAE` (not changed).
        n_latent_specific
            Specific factors per new study: one int for every new study, or ``{study: K}``.
        seed
            Seed of the new factors' initialisation and of training (default: the reference's).
        freeze_encoder
            Keep the reference's encoder fixed (default): query and reference cells are then encoded by the
            same function. ``False`` lets it adapt to the query cells; the programmes stay fixed either way
            (the decoder defines them), but the query model then encodes reference cells differently from the
            reference. The adapted encoder recovers the query's own programmes a little better, but its codes
            follow the true factors less closely (measurements: :doc:`/user-guide/multistudy`).

        Returns
        -------
        MultiStudySparseVAE
            Untrained query model; its studies are the reference's followed by the new ones.

        Raises
        ------
        InvalidInputError
            If the reference is not trained or encodes the study, the genes differ, a query study is already in
            the reference, the query has a batch the reference does not, or the data fail the usual checks.

        Examples
        --------
        >>> query = scsparse.model.MultiStudySparseVAE.load_query_data(adata_query, reference, n_latent_specific=3)
        >>> query.train(max_epochs=100)
        >>> query.get_latent_representation(adata_query, kind="shared")  # the reference's shared programmes
        """
        reference = reference_model
        if not isinstance(reference, MultiStudySparseVAE):
            raise InvalidInputError(f"reference must be a MultiStudySparseVAE, got {type(reference).__name__}.")
        setup, new_blocks = _check_query(adata, reference, n_latent_specific)
        registry = reference.adata_manager.registry
        cls.setup_anndata(adata, source_registry=registry, extend_categories=True, **setup)
        init = dict(reference.init_params_.get("non_kwargs", {}))
        module_kwargs = dict(reference.init_params_.get("kwargs", {}).get("module_kwargs", {}))
        init["n_latent_specific"] = {
            **dict(zip(reference.studies, reference.module.n_latent_specific, strict=True)),
            **new_blocks,
        }
        init["seed"] = reference.seed if seed is None else int(seed)
        module_kwargs["n_latent_frozen"] = reference.module.n_latent
        module_kwargs["freeze_reference_encoder"] = bool(freeze_encoder)
        model = cls(adata, **init, **module_kwargs)
        if model.studies[: len(reference.studies)] != reference.studies:  # pragma: no cover - scvi's contract
            raise RuntimeError("The query's study codes do not extend the reference's.")
        model.module.load_reference_(reference.module)
        model.is_trained_ = False
        return model

    # ------------------------------------------------------------------ results
    def get_latent_representation(
        self,
        adata: AnnData | None = None,
        indices: Sequence[int] | None = None,
        give_mean: bool = True,
        mc_samples: int = 5000,
        batch_size: int | None = None,
        return_dist: bool = False,
        dataloader: Any = None,
        *,
        kind: Literal["shared", "specific", "all"] = "all",
        **data_loader_kwargs: Any,
    ) -> np.ndarray:
        """Posterior factors, as :meth:`scvi.model.base.VAEMixin.get_latent_representation`, by block.

        ``kind="shared"``: the shared factors of every cell (cells x K_S); ``"specific"``: the specific
        blocks of all studies side by side (cells x sum K_m), with each cell's own study's block filled
        and zeros in the other studies' blocks; ``"all"``: both, stacked (cells x (K_S + sum K_m)). The other
        arguments are scvi-tools' (``return_dist=True`` returns the posterior's mean and variance of every
        factor, whatever ``kind``).

        Examples
        --------
        >>> shared = model.get_latent_representation(kind="shared")
        """
        if kind not in ("shared", "specific", "all"):
            raise ValueError(f"kind must be 'shared', 'specific' or 'all', got {kind!r}.")
        z = super().get_latent_representation(
            adata, indices, give_mean=give_mean, mc_samples=mc_samples, batch_size=batch_size,
            return_dist=return_dist, dataloader=dataloader, **data_loader_kwargs,
        )  # fmt: skip
        if return_dist:
            return z
        k_s = self.module.n_latent_shared
        if kind == "all":
            return z
        if kind == "shared":
            return z[:, :k_s]
        return z[:, k_s:]

    def get_loadings(self, study: str | None = None) -> pd.DataFrame:
        """The masks as genes x factors: every factor (``study=None``, as :meth:`SparseVAE.get_loadings`), the shared
        block ``W_shared`` (``study="shared"``) or a study's specific mask ``W_m`` (``study=<name>``).

        Examples
        --------
        >>> model.get_loadings().columns  # shared_0 ... then <study>_0 ... for each study
        >>> model.get_loadings("shared")  # W_shared
        >>> model.get_loadings("stimulated")  # the stimulated study's specific factors
        """
        return super().get_loadings().iloc[:, self._columns(study)]

    def get_inclusion_probabilities(self, study: str | None = None) -> pd.DataFrame:
        """``p*`` of every factor (``study=None``), of the shared block (``"shared"``) or of a study's specific
        mask, as :meth:`get_loadings` selects them.
        """
        return super().get_inclusion_probabilities().iloc[:, self._columns(study)]

    def _start_mask(self) -> None:
        """The multi-study masks start from their constant (``decoder_kwargs["w_init"]``); the data-driven start
        (``mask_init="nmf"``) is the single-study model's.
        """
        self.mask_init_used_ = "constant"

    def factor_table(self, n_top: int = 10, pip_threshold: float = 0.5) -> pd.DataFrame:
        """One row per factor: kind (shared/specific), study, active, eta, number of genes, top genes."""
        P = self.get_inclusion_probabilities()
        active = set(self.active_factors(pip_threshold))
        top = self.get_top_genes(n_top, pip_threshold)
        eta = self.get_factor_weights()
        rows = []
        for kind, m, cols in self.module.block_slices():
            for name in self.factor_names[cols]:
                rows.append(
                    {
                        "factor": name,
                        "kind": kind,
                        "study": "all" if m < 0 else self.studies[m],
                        "active": name in active,
                        "eta": float(eta[name]),
                        "n_genes": int((P[name] > pip_threshold).sum()),
                        "top_genes": ", ".join(top.get(name, [])),
                    }
                )
        return pd.DataFrame(rows)

    @classmethod
    def load(
        cls,
        dir_path: str,
        adata: AnnData | None = None,
        accelerator: str = "auto",
        device: int | str = "auto",
        prefix: str | None = None,
        backup_url: str | None = None,
        datamodule: Any = None,
        allowed_classes_names_list: list[str] | None = None,
    ):
        """Load a saved model (:meth:`SparseVAE.load`); ``adata`` must have the genes the model was trained on,
        in the same order.

        Examples
        --------
        >>> model.save("my_model/")
        >>> model = scsparse.model.MultiStudySparseVAE.load("my_model/", adata=adata)
        """
        try:
            return super().load(
                dir_path, adata=adata, accelerator=accelerator, device=device, prefix=prefix, backup_url=backup_url,
                datamodule=datamodule, allowed_classes_names_list=allowed_classes_names_list,
            )  # fmt: skip
        except RuntimeError as exc:
            if "size mismatch" in str(exc) and "encoder" in str(exc):
                raise InvalidInputError(
                    "The saved model's encoder does not match this version's: it was most likely saved by a "
                    "scsparse version whose multi-study encoder took the study as an input (encode_study=True "
                    "was the default then; it is False now). Refit the model with this version, or refit with "
                    "MultiStudySparseVAE(..., encode_study=True) to keep the old encoder."
                ) from exc
            raise

    def _provenance(self) -> dict[str, Any]:
        # which encoder the fit used: whether it saw the study (encode_study)
        return {**super()._provenance(), "encoder_sees_study": bool(self.module.encode_study)}

    def result_keys(self, key_added: str | None = None) -> dict[str, list[str]]:
        """The AnnData keys :meth:`write_results` writes (one pair of ``varm`` keys per study).

        Examples
        --------
        >>> model.result_keys()["varm"][:4]  # doctest: +SKIP
        ['mssvae_W_shared', 'mssvae_pip_shared', 'mssvae_W_control', 'mssvae_pip_control']
        """
        return result_keys(self._result_key(key_added), self.studies)

    def _result_blocks(
        self, adata: AnnData, pip_threshold: float, batch_size: int | None
    ) -> tuple[Callable[..., None], dict[str, Any], dict[str, Any]]:
        """The shared block and each study's block, and the studies, the blocks' factors and the factor table."""
        z = self.get_latent_representation(adata, kind="all", batch_size=batch_size)
        k_s = self.module.n_latent_shared
        arrays = {
            "Z_shared": z[:, :k_s],
            "Z_specific": z[:, k_s:],
            "W_shared": self.get_loadings("shared").to_numpy(),
            "pip_shared": self.get_inclusion_probabilities("shared").to_numpy(),
            "W_studies": {s: self.get_loadings(s).to_numpy() for s in self.studies},
            "pip_studies": {s: self.get_inclusion_probabilities(s).to_numpy() for s in self.studies},
        }
        own = {
            "studies": np.asarray(self.studies, dtype=object),
            "shared_factors": np.asarray(self.factor_names[:k_s], dtype=object),
            "specific_factors": np.asarray(self.factor_names[k_s:], dtype=object),
            "factor_table": self.factor_table(pip_threshold=pip_threshold),
        }
        return write_multistudy_results, arrays, own
