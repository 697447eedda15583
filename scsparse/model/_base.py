"""Results shared by the scsparse models: loadings, inclusion probabilities, active factors, AnnData export."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from anndata import AnnData
from scvi import REGISTRY_KEYS
from scvi.data._utils import _get_adata_minify_type
from scvi.utils import unsupported_if_adata_minified

from scsparse._checks import InvalidInputError, check_integer, check_key_added, check_pip_threshold
from scsparse._matrix import get_matrix, iter_row_chunks, raw_counts_hint
from scsparse._options import COUNT_LIKELIHOODS
from scsparse._provenance import package_versions
from scsparse.nn import warn_no_active_factor
from scsparse.results import (
    CorrelationSums,
    check_keys_free,
    h5ad_safe,
    rank_genes,
    result_keys,
    write_sparse_vae_results,
)
from scsparse.train import without_log_lines

from ._orientation import orientation_signs
from ._validation import (
    SETUP_SCANS,
    DataScan,
    ScanStore,
    check_anndata,
    check_counts,
    check_finite,
    conform_genes,
    scan_anndata,
)

if TYPE_CHECKING:
    from scsparse.train import SettledStopping

__all__ = ["SparseFactorMixin"]


#: scvi-tools' logger of its base model, and its notes on setting up cells a method is given.
_SCVI_MODEL_LOGGER = "scvi.model.base._base_model"
_SCVI_TRANSFER_NOTES = ("Input AnnData not setup with scvi-tools", "AnnData object appears to be a copy")


@contextmanager
def unseen_categories(model_name: str) -> Iterator[None]:
    """Say what to do when cells have a batch, covariate or label category the model was not trained with
    (scvi-tools advises an option, ``extend_categories``, that its callers do not take).
    """
    try:
        yield
    except ValueError as exc:
        message = str(exc)
        if "not found in source registry" not in message:
            raise
        category = message.split(" not found in source registry", 1)[0].removeprefix("Category ")
        raise InvalidInputError(
            f"The cells have the category {category!r} (of the batch, a covariate or the labels), which the model "
            "was not trained with: it has no weights for it. Give cells of the training categories only, or map "
            f"cells of a new batch as a query: `{model_name}.prepare_query_anndata(adata, model)`, then "
            f"`{model_name}.load_query_data(adata, model)`."
        ) from None


class SparseFactorMixin:
    """Methods on the mask ``W`` and its Spike-and-Slab Lasso state.

    For models whose module has ``decoder.W`` and ``prior`` (:class:`~scsparse.nn.SpikeSlabLasso`).
    """

    _default_key = "sparsevae"

    # ------------------------------------------------------------------ objective
    @unsupported_if_adata_minified
    def training_objective(self, batch_size: int = 1024) -> float:
        """The fitted model's training objective per cell, evaluated at the final weights (lower is better).

        ``mean_i[-log p(x_i | z_i) + KL(q(z_i | x_i) || p(z))] + penalty / N`` over the ``N`` training cells
        (``model.train_indices``), in eval mode, with ``z_i`` drawn once per cell from ``q(z | x_i)`` under a
        torch generator seeded with the model's seed (so the value is reproducible), the KL at full weight
        and the Spike-and-Slab Lasso (and variance) prior terms as in training. This is the quantity training
        minimises, so it compares fits of the same data and model from different seeds (see
        :func:`scsparse.model.select_best`); it uses no labels.

        Examples
        --------
        >>> model.train(max_epochs=100)
        >>> model.training_objective()
        """
        import torch

        check_integer("batch_size", batch_size, fix="Cells per minibatch of the evaluation (default 1024).")
        if not self.is_trained_:
            raise InvalidInputError("The model is not trained yet: call model.train() first.")
        indices = self.train_indices
        if indices is None or len(indices) == 0:
            indices = np.arange(self.adata.n_obs)
        n_obs = len(indices)
        self.module.eval()
        loader = self._make_data_loader(adata=self.adata, indices=indices, batch_size=batch_size)
        total = 0.0
        with torch.random.fork_rng(devices=[]), torch.inference_mode():
            torch.manual_seed(int(getattr(self, "seed", 0)))
            for tensors in loader:
                _, _, loss = self.module(tensors, loss_kwargs={"kl_weight": 1.0, "n_obs": n_obs})
                total += float((loss.reconstruction_loss_sum + loss.kl_local_sum).item())
            penalty = float(self.module.global_penalty())
        return total / n_obs + penalty / n_obs

    def _result_key(self, key_added: str | None) -> str:
        """``key_added``, or the model's default key when it is ``None``; a key a file cannot hold is refused."""
        if key_added is None:
            return self._default_key
        return check_key_added(key_added, fix=f"None writes under {self._default_key!r}.")

    # ------------------------------------------------------------------ new data
    def _validate_anndata(self, adata: AnnData | None = None, copy_if_view: bool = True) -> AnnData:
        """scvi-tools' check of an AnnData given to a method, after ours: genes by name, counts checked.

        An AnnData other than the model's own is read with the model's genes in the model's order (a copy
        when they are ordered otherwise or there are more; an error when some are missing), and one that is
        not set up yet gets the set-up checks of its counts before scvi-tools transfers the set-up to it.
        """
        if adata is not None and adata is not self.adata:
            adata = conform_genes(adata, self._gene_names, type(self).__name__)
            self._check_new_counts(adata)
        with without_log_lines(_SCVI_MODEL_LOGGER, *_SCVI_TRANSFER_NOTES), unseen_categories(type(self).__name__):
            return super()._validate_anndata(adata, copy_if_view=copy_if_view)

    def _check_new_counts(self, adata: AnnData) -> None:
        """The set-up checks of the counts, once per AnnData object and matrix (methods validate their AnnData
        repeatedly; a matrix replaced since is checked again).
        """
        checked = self.__dict__.setdefault("_new_data_scans", ScanStore())
        if _get_adata_minify_type(adata) is not None:
            return
        known = checked.recall(id(adata))
        if known is not None and known.describes(adata, self._layer()):
            return
        scan = check_anndata(adata, self._layer(), allow_zero_genes=True)
        if self.module.gene_likelihood in COUNT_LIKELIHOODS:
            check_counts(scan, adata.obs_names, self.module.gene_likelihood)
        checked.remember(id(adata), adata, scan)

    # ------------------------------------------------------------------ accessors
    def _layer(self) -> str | None:
        return self.registry_["setup_args"].get("layer")

    def _data_scan(self) -> DataScan:
        """The pass over the registered matrix: that of the last training, else the one made at set-up, if it was
        made of the matrix the AnnData holds now; otherwise made now.
        """
        for scan in (getattr(self, "_training_scan", None), SETUP_SCANS.recall(self.adata_manager.id)):
            if scan is not None and scan.describes(self.adata, self._layer()):
                return scan
        return scan_anndata(self.adata, self._layer())

    def _check_training_data(self) -> None:
        """Scan the registered matrix again when training starts: the checks and the provenance's data hash then
        describe the data trained on, even when they were replaced or changed in place after set-up.
        """
        scan = scan_anndata(self.adata, self._layer())
        check_finite(scan)
        if self.module.gene_likelihood in COUNT_LIKELIHOODS:
            check_counts(scan, self.adata.obs_names, self.module.gene_likelihood, hint=raw_counts_hint(self.adata))
        self._training_scan = scan

    @property
    def factor_names(self) -> list[str]:
        """Names of the latent factors, ``factor_0`` ... ``factor_{K-1}``."""
        return [f"factor_{k}" for k in range(self.module.n_latent)]

    @property
    def _gene_names(self) -> pd.Index:
        state = self.registry_["field_registries"][REGISTRY_KEYS.X_KEY]["state_registry"]
        return pd.Index(state["column_names"]) if "column_names" in state else pd.Index(self.adata.var_names)

    def get_loadings(self) -> pd.DataFrame:
        """The mask ``W`` as a genes x factors DataFrame (``w_jk`` scales factor ``k``'s input to gene ``j``).

        Examples
        --------
        >>> W = model.get_loadings()
        >>> W[model.active_factors()].abs().idxmax()  # the gene each active factor drives most
        """
        return pd.DataFrame(
            self.module.decoder.masked_W().detach().cpu().numpy().copy(),
            index=self._gene_names,
            columns=self.factor_names,
        )

    def get_inclusion_probabilities(self) -> pd.DataFrame:
        """Posterior inclusion probabilities ``p*_jk = P(gamma_jk = 1 | w_jk, eta_k)`` (genes x factors).

        ``p*_jk`` is the probability that ``w_jk`` comes from the slab, i.e. that gene ``j`` belongs to
        programme ``k``. Values come from the last EM update of training.
        """
        return pd.DataFrame(
            self.module.prior.p_star.detach().cpu().numpy().copy(),
            index=self._gene_names,
            columns=self.factor_names,
        )

    def get_factor_weights(self) -> pd.Series:
        """``eta_k``, the prior fraction of genes in each factor's slab (small for switched-off factors)."""
        return pd.Series(self.module.prior.eta.detach().cpu().numpy().copy(), index=self.factor_names, name="eta")

    def get_latent_correlation(self) -> pd.DataFrame:
        """The prior correlation matrix ``Sigma_z`` of the factors (the identity unless ``latent_prior="correlated"``).

        Examples
        --------
        >>> model = scsparse.model.SparseVAE(adata, n_latent=5, latent_prior="correlated")
        >>> model.train(max_epochs=50)
        >>> model.get_latent_correlation().loc[model.active_factors(), model.active_factors()]
        """
        prior = self.module.latent_prior
        k = self.module.n_latent
        corr = np.eye(k) if prior is None else prior.correlation().detach().cpu().numpy().astype(np.float64)
        return pd.DataFrame(corr, index=self.factor_names, columns=self.factor_names)

    def active_factors(self, pip_threshold: float = 0.5, min_genes: int = 1) -> list[str]:
        """Factors the prior kept: those with at least ``min_genes`` genes with ``p* > pip_threshold``.

        Examples
        --------
        >>> model.active_factors()  # doctest: +SKIP
        ['factor_0', 'factor_3', 'factor_7']
        """
        check_pip_threshold(pip_threshold)
        check_integer("min_genes", min_genes, fix="A factor is active with at least this many genes (default 1).")
        mask = self.module.active_factor_mask(pip_threshold, min_genes).cpu().numpy()
        return [name for name, keep in zip(self.factor_names, mask, strict=True) if keep]

    # ------------------------------------------------------------------ orientation
    def _orientation_groups(self) -> list[tuple[slice, np.ndarray | None]]:
        """``(factor columns, cells)`` over which the factors' directions are defined (``None``: all cells)."""
        return [(slice(0, self.module.n_latent), None)]

    @unsupported_if_adata_minified
    def orient_factors(
        self, pip_threshold: float = 0.5, n_top: int | None = 10, batch_size: int | None = None
    ) -> pd.Series:
        """Flip the sign of factors so that each programme's top genes go up with its factor (in place).

        The model is unchanged by a flip of ``z_k`` together with ``W[:, k]`` (see
        :mod:`scsparse.model._orientation`), so each factor's sign is arbitrary until it is fixed. Factor ``k`` is
        flipped when ``sum_j |w_jk| r_jk < 0`` over its top genes: the ``n_top`` genes of largest ``|w_jk|`` with
        ``p*_jk > pip_threshold`` (those of :meth:`get_top_genes` and ``uns[key]["top_genes"]``), ``r_jk`` being the
        correlation across the training AnnData's cells between the factor's posterior mean and the gene's
        normalised expression (``log1p`` of counts per 10,000 for count likelihoods, the values as registered for
        ``"normal"``). Afterwards a factor's high values mean its top genes are high, and the ``direction`` of
        :func:`scsparse.tl.top_genes` is ``"positive"`` for most of them; a factor that contrasts two programmes
        keeps the other programme's genes going down. :meth:`train` calls this at the end unless
        ``orient=False``; calling it again flips nothing.

        Parameters
        ----------
        pip_threshold
            Genes with ``p* > pip_threshold`` are a factor's candidates; factors without one keep their sign.
        n_top
            Number of candidates, by decreasing ``|w_jk|``, that orient a factor (``None``: all of them, i.e. the
            ``|w|``-weighted majority of the programme).
        batch_size
            Minibatch size for the factors.

        Returns
        -------
        pandas.Series
            ``+1`` or ``-1`` per factor: the sign each factor was multiplied by.

        Examples
        --------
        >>> model.train(max_epochs=100, orient=False)
        >>> model.orient_factors()  # -1 for the factors that were flipped
        """
        import torch

        if not self.is_trained_:
            raise InvalidInputError("The model is not trained yet: call model.train() first.")
        module = self.module
        W = module.decoder.masked_W().detach().cpu().numpy()
        pip = module.prior.p_star.detach().cpu().numpy()
        signs = np.ones(module.n_latent)
        # only factors with a candidate gene can flip: the others need neither the factors nor a data pass
        has_genes = (pip > pip_threshold).any(0)
        groups = [(cols, cells) for cols, cells in self._orientation_groups() if has_genes[cols].any()]
        if groups:
            for (cols, _), corr in zip(groups, self._factor_gene_correlations(groups, batch_size), strict=True):
                signs[cols] = orientation_signs(corr, W[:, cols], pip[:, cols], pip_threshold, n_top)
        if (signs < 0).any():
            module.flip_factors(torch.as_tensor(signs, dtype=torch.float32))
        self.factors_oriented_ = True
        return pd.Series(signs.astype(int), index=self.factor_names, name="sign")

    def _factor_gene_correlations(
        self, groups: list[tuple[slice, np.ndarray | None]], batch_size: int | None
    ) -> list[np.ndarray]:
        """Correlations (genes x factors) of the training data's expression with each group's factors over the
        group's cells, in one pass: the factors are computed block by block of cells beside the block's counts, so
        neither the factors of all cells nor the matrix are held at once.
        """
        mat = get_matrix(self.adata, self._layer())
        normalize = self.module.gene_likelihood != "normal"
        sums = [CorrelationSums(mat.shape[1], len(range(self.module.n_latent)[cols]), normalize) for cols, _ in groups]
        start = 0
        for block in iter_row_chunks(mat):
            stop = start + block.shape[0]
            z = self.get_latent_representation(self.adata, indices=np.arange(start, stop), batch_size=batch_size)
            for total, (cols, cells) in zip(sums, groups, strict=True):
                total.add(block, z[:, cols], None if cells is None else cells[start:stop])
            start = stop
        return [total.correlation() for total in sums]

    def _stop_reason(self) -> str:
        """Why the last training stopped (``model.history["stopping"]``), or ``""`` when that was not recorded."""
        history = getattr(self, "history_", None)
        if not isinstance(history, dict) or "stopping" not in history or not len(history["stopping"]):
            return ""
        return str(history["stopping"]["stopping"].iloc[-1])

    def _record_stopping(self, settle: SettledStopping) -> None:
        """Add why training stopped to ``model.history["stopping"]``; warn if the fit had not settled."""
        if isinstance(self.history_, dict):  # no history without a logger
            frame = settle.history_frame()
            if "elbo_train" in self.history_:  # a further train() call continues the epoch count
                frame.index = pd.Index([len(self.history_["elbo_train"]) - 1], name="epoch")
            previous = self.history_.get("stopping")
            self.history_["stopping"] = frame if previous is None else pd.concat([previous, frame])
        if self.active_factors():  # with none, the no-active-factor warning has said what to do
            settle.warn_if_not_settled(stacklevel=5)

    def _warn_if_no_active_factor(self) -> None:
        """Warn when training left no factor active (``p* <= 0.5`` for every gene and factor)."""
        if self.active_factors():
            return
        indices = self.train_indices
        trainer = getattr(self, "trainer", None)
        if indices is not None and len(indices):
            n_cells = len(indices)
        elif self.adata is not None:
            n_cells = self.adata.n_obs
        else:  # trained from a datamodule
            n_cells = int(getattr(getattr(trainer, "lightning_module", None), "n_obs_training", 0) or 0)
        prior = self.module.prior
        warn_no_active_factor(
            n_cells,
            trainer.global_step if trainer is not None else None,
            stacklevel=4,
            lambda0=prior.lambda0,
            lambda1=prior.lambda1,
        )

    def get_anchor_genes(self, pip_threshold: float = 0.5) -> dict[str, list[str]]:
        """Anchor genes per active factor: genes whose only included factor (``p* > pip_threshold``) it is.

        Anchor genes are what makes the factors identifiable (Moran et al. 2022, assumption A1); a factor
        with at least two anchors is identified up to a coordinate-wise transform. Genes are sorted by
        decreasing ``|w_jk|``.
        """
        check_pip_threshold(pip_threshold)
        W, P = self.get_loadings(), self.get_inclusion_probabilities()
        anchor = (P > pip_threshold).sum(1).to_numpy() == 1
        return {
            f: list(W.index[rank_genes(W[f].to_numpy(), P[f].to_numpy(), pip_threshold, among=anchor)])
            for f in self.active_factors(pip_threshold)
        }

    def get_top_genes(self, n_top: int = 10, pip_threshold: float = 0.5) -> dict[str, list[str]]:
        """Top genes of each active factor by ``|w_jk|`` among genes with ``p*_jk > pip_threshold``."""
        check_integer("n_top", n_top, fix="It is the number of genes per factor (e.g. 10).")
        check_pip_threshold(pip_threshold)
        W, P = self.get_loadings(), self.get_inclusion_probabilities()
        return {
            f: list(W.index[rank_genes(W[f].to_numpy(), P[f].to_numpy(), pip_threshold, n_top)])
            for f in self.active_factors(pip_threshold)
        }

    # ------------------------------------------------------------------ provenance and export
    def _provenance(self) -> dict[str, Any]:
        init = {k: v for k, v in self.init_params_.get("non_kwargs", {}).items()}
        init.update(self.init_params_.get("kwargs", {}).get("module_kwargs", {}))
        if isinstance(init.get("gene_sets"), dict):  # the sets' genes are in uns[key]["guided_factors"]
            init["gene_sets"] = list(init["gene_sets"])
        decoder = self.module.decoder
        # the defaults differ between the two models, so record what the decoder has; the first-layer norm
        # only exists under normalize_weights
        norm = {"decoder_first_norm": float(decoder.first_norm)} if decoder.normalize_weights else {}
        return {
            "model": type(self).__name__,
            "seed": int(getattr(self, "seed", -1)),
            "params": h5ad_safe(init),
            "decoder_first_bias": decoder.first_bias is not None,
            # whether the factors' signs were fixed by orient_factors (a programme's genes go up with its factor)
            "factors_oriented": bool(getattr(self, "factors_oriented_", False)),
            **norm,
            "train_params": h5ad_safe(getattr(self, "train_kwargs_", {})),
            "setup_args": h5ad_safe(dict(self.registry_["setup_args"])),
            "n_epochs_trained": int(len(self.history["elbo_train"])) if self.is_trained_ else 0,
            "stopping": self._stop_reason(),
            "versions": package_versions(),
            # the data a model built from a registry (a datamodule) was trained on were never here to hash
            "data_hash": self._trained_data_hash() if self._trained_on_its_anndata() else "",
            "data_checks": str(getattr(self, "data_checks_", "passed")),
        }

    def _trained_data_hash(self) -> str:
        """The hash of the data the last training read (scanned when it started), else of the registered data."""
        scan = getattr(self, "_training_scan", None)
        return (scan if scan is not None else self._data_scan()).data_hash

    def _consensus_results(self) -> dict[str, Any]:
        """``uns`` entries of a consensus fit (:meth:`SparseVAE.consensus`): its per-programme and per-restart
        tables and settings; nothing for a single fit.
        """
        table = getattr(self, "consensus_", None)
        if table is None:
            return {}
        return {
            "consensus": table.copy(),
            "consensus_members": self.consensus_members_.copy(),
            "consensus_selection": self.consensus_selection_.copy(),
            "consensus_restarts": self.restarts_.copy(),
            "consensus_params": h5ad_safe(dict(self.consensus_params_)),
        }

    def _guided_results(self, pip_threshold: float) -> dict[str, Any]:
        """``uns`` entries of the factors guided by gene sets; none here (:class:`~scsparse.model.SparseVAE` has
        them).
        """
        return {}

    def _trained_on_its_anndata(self) -> bool:
        """Whether the model's AnnData is the one it was built (and checked) on, not one attached later."""
        return self.adata is not None and getattr(self, "data_checks_", "passed") == "passed"

    def _check_same_genes(self, adata: AnnData) -> None:
        if not np.array_equal(np.asarray(adata.var_names, dtype=str), np.asarray(self._gene_names, dtype=str)):
            raise InvalidInputError(
                "The AnnData's genes differ from the model's (names or order). Write results into the "
                "AnnData the model was trained on, or subset it to the model's genes in the same order."
            )

    def result_keys(self, key_added: str | None = None) -> dict[str, list[str]]:
        """The AnnData keys :meth:`write_results` writes.

        Parameters
        ----------
        key_added
            Prefix of the keys (default: the model's, ``"sparsevae"`` or ``"mssvae"``).

        Returns
        -------
        dict
            Attribute name (``"obsm"``, ``"varm"``, ``"uns"``) -> list of keys.

        Examples
        --------
        >>> model.result_keys("svae")  # doctest: +SKIP
        {'obsm': ['X_svae'], 'varm': ['svae_W', 'svae_pip'], 'uns': ['svae']}
        """
        return result_keys(self._result_key(key_added))

    def _result_blocks(
        self, adata: AnnData, pip_threshold: float, batch_size: int | None
    ) -> tuple[Callable[..., None], dict[str, np.ndarray], dict[str, Any]]:
        """What :meth:`write_results` writes beyond the ``uns`` entries every model has: the writer of the model's key
        layout (:mod:`scsparse.results`), the factors, masks and ``p*`` of its blocks as that writer takes them, and
        the model's own ``uns`` entries. One block here; a model with factor blocks overrides it.
        """
        arrays = {
            "Z": self.get_latent_representation(adata, batch_size=batch_size),
            "W": self.get_loadings().to_numpy(),
            "pip": self.get_inclusion_probabilities().to_numpy(),
        }
        return write_sparse_vae_results, arrays, {}

    @unsupported_if_adata_minified
    def write_results(
        self,
        adata: AnnData | None = None,
        key_added: str | None = None,
        overwrite: bool = False,
        pip_threshold: float = 0.5,
        batch_size: int | None = None,
    ) -> None:
        """Write factors, loadings and run metadata into ``adata`` (h5ad-writable).

        Writes, with ``key = key_added`` (the keys :meth:`result_keys` lists), for a
        :class:`~scsparse.model.SparseVAE`:

        - ``adata.obsm[f"X_{key}"]``: posterior mean factors, cells x K (all K columns; see
          ``uns[key]["active"]`` for the ones the prior kept);
        - ``adata.varm[f"{key}_W"]``: the mask ``W``, genes x K;
        - ``adata.varm[f"{key}_pip"]``: inclusion probabilities ``p*``, genes x K;

        for a :class:`~scsparse.model.MultiStudySparseVAE`, one pair of keys per block instead:

        - ``obsm[f"X_{key}_shared"]``: shared factors (cells x K_S);
        - ``obsm[f"X_{key}_specific"]``: specific factors (cells x sum K_m), each cell's own study's block
          filled and zeros in the other studies' blocks (column names in ``uns[key]["specific_factors"]``);
        - ``varm[f"{key}_W_shared"]``, ``varm[f"{key}_pip_shared"]``: shared mask and its ``p*``;
        - ``varm[f"{key}_W_<study>"]``, ``varm[f"{key}_pip_<study>"]``: each study's specific mask and ``p*``;

        and for both ``adata.uns[key]``: ``factor_names``, ``active`` (bool per factor), ``active_factors``, ``eta``,
        ``latent_correlation`` (with ``latent_prior="correlated"``),
        ``anchor_genes`` (dict of arrays), ``top_genes``, ``factors_oriented`` (whether the factors' signs were
        fixed by :meth:`orient_factors`; a multi-study model orients specific factors within their study's cells),
        hyper-parameters, seed, package versions and a hash of the training data; for a multi-study model also
        ``studies``, ``shared_factors``, ``specific_factors`` and the ``factor_table``; for a consensus fit
        (:meth:`SparseVAE.consensus`) also ``consensus`` (one row per group of the restarts' programmes: its factor,
        reproducibility, agreement, genes, anchor genes, identifiable, kept), ``consensus_members``,
        ``consensus_selection``, ``consensus_restarts`` and ``consensus_params``; for a model with ``gene_sets``
        also ``guided_factors`` (:meth:`SparseVAE.guided_table`: one row per set, with its genes kept, dropped
        and added).

        Existing keys are not overwritten unless ``overwrite=True``; nothing is written if any key is taken.

        Parameters
        ----------
        adata
            Target AnnData (default: the one the model was set up with). It must have the model's genes.
        key_added
            Prefix of the keys (default: the model's, ``"sparsevae"`` or ``"mssvae"``).
        overwrite
            Replace existing keys.
        pip_threshold
            Inclusion threshold used for ``active``, ``anchor_genes`` and ``top_genes``.
        batch_size
            Minibatch size for the factors.

        Raises
        ------
        InvalidInputError
            A model built from a registry without ``adata``, genes that differ from the model's, or a key that is
            taken (without ``overwrite``).

        Examples
        --------
        >>> model.write_results(adata, key_added="sparsevae")
        >>> adata.obsm["X_sparsevae"].shape
        """
        key = self._result_key(key_added)
        adata = self.adata if adata is None else adata
        if adata is None:
            raise InvalidInputError(
                "The model was built from a registry and has no AnnData: pass the cells to write into, "
                "model.write_results(adata), set up like the training data."
            )
        self._check_same_genes(adata)
        check_keys_free(adata, self.result_keys(key), overwrite)
        write, arrays, own = self._result_blocks(adata, pip_threshold, batch_size)
        active = self.active_factors(pip_threshold)
        uns = {
            "factor_names": np.asarray(self.factor_names, dtype=object),
            "active": np.asarray([f in active for f in self.factor_names]),
            "active_factors": np.asarray(active, dtype=object),
            "eta": self.get_factor_weights().to_numpy(),
            "pip_threshold": float(pip_threshold),
            "anchor_genes": {f: np.asarray(g, dtype=object) for f, g in self.get_anchor_genes(pip_threshold).items()},
            "top_genes": {f: np.asarray(g, dtype=object) for f, g in self.get_top_genes(10, pip_threshold).items()},
            **own,
            **self._provenance(),
        }
        if self.module.latent_prior is not None:  # learned prior correlation of the factors
            uns["latent_correlation"] = self.get_latent_correlation().to_numpy()
        uns.update(self._consensus_results())
        uns.update(self._guided_results(pip_threshold))
        write(adata, key, **arrays, uns=uns, overwrite=overwrite)
