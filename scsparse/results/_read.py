"""Reading a fit back from AnnData: every ``tl`` and ``pl`` function goes through :func:`read_results`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from anndata import AnnData

from ._factors import resolve_factors
from ._keys import factors_key, loadings_key, pip_key, result_keys
from ._programmes import rank_genes

__all__ = ["FitResults", "MissingResultsError", "is_multistudy", "read_results", "study_cells"]


class MissingResultsError(KeyError):
    """Results of a sparse VAE (or an embedding) are missing from the AnnData; the message says what to run."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class FitResults:
    """A fit as stored in AnnData, shared and study-specific blocks side by side in the order of its factor names.

    Attributes
    ----------
    key
        The ``key_added`` the fit was written under.
    Z
        Cells x factors activities (posterior means).
    W, pip
        Genes x factors mask and inclusion probabilities ``p*``.
    factor_names, active_factors
        All factors, and those the prior kept.
    top_genes, anchor_genes
        Factor name -> gene names, as written by the model.
    eta
        Prior fraction of genes in each factor's slab (NaN when not recorded).
    pip_threshold
        The threshold that defined ``active_factors``, ``top_genes`` and ``anchor_genes``.
    cell_masks
        Factor name -> the cells it is defined on (``None``: all cells; a study's specific factor: that study's).
    studies
        The studies of a multi-study fit (empty for a single-study fit).
    setup_layer
        The layer the model was trained on (``None``: ``X`` or not recorded).
    genes
        The gene names (rows of ``W`` and ``pip``).
    consensus
        For a consensus fit (:meth:`SparseVAE.consensus <scsparse.model.SparseVAE.consensus>`), one row per
        programme of the reference restart: reproducibility, agreement, genes, anchor genes, identifiable, kept;
        ``None`` for a single fit.
    guided
        For a fit with gene sets (``SparseVAE(gene_sets=...)``), one row per guided factor
        (:func:`~scsparse.results.guided_table`: its set, the genes it kept, dropped and added, its fidelity and
        status); ``None`` otherwise.
    """

    key: str
    Z: np.ndarray
    W: np.ndarray
    pip: np.ndarray
    factor_names: list[str]
    active_factors: list[str]
    top_genes: dict[str, list[str]]
    anchor_genes: dict[str, list[str]]
    eta: np.ndarray
    pip_threshold: float
    cell_masks: dict[str, np.ndarray | None] = field(default_factory=dict)
    studies: list[str] = field(default_factory=list)
    setup_layer: str | None = None
    genes: list[str] = field(default_factory=list)
    consensus: pd.DataFrame | None = None
    guided: pd.DataFrame | None = None

    def resolve(self, factors: Sequence[str | int] | str | int | None) -> list[str]:
        """Factor names from names or positions; ``None`` gives the active factors (an error if there are none)."""
        return resolve_factors(
            self.factor_names, self.active_factors, factors, source=f"adata.uns[{self.key!r}]",
            pip_threshold=self.pip_threshold,
        )  # fmt: skip

    def programme_genes(self, factor: str, n_top: int | None = None, pip_threshold: float | None = None) -> list[str]:
        """A factor's genes (``p* > pip_threshold``, default the stored threshold) by decreasing ``|w|``.

        Parameters
        ----------
        factor
            A factor name.
        n_top
            Keep the first ``n_top`` genes (``None``: all of the programme).
        pip_threshold
            Inclusion threshold (default: :attr:`pip_threshold`, the one the fit was written with).

        Examples
        --------
        >>> read_results(adata, "sparsevae").programme_genes("factor_0", n_top=5)
        """
        k = self.factor_names.index(factor)
        threshold = self.pip_threshold if pip_threshold is None else float(pip_threshold)
        return [self.genes[j] for j in rank_genes(self.W[:, k], self.pip[:, k], threshold, n_top)]


def is_multistudy(adata: AnnData, key: str) -> bool:
    """Whether ``key`` holds the results of :meth:`MultiStudySparseVAE.write_results
    <scsparse.model.MultiStudySparseVAE.write_results>`.
    """
    uns = adata.uns.get(key)
    return (
        isinstance(uns, dict)
        and "shared_factors" in uns
        and "studies" in uns
        and loadings_key(key, "shared") in adata.varm
        and factors_key(key, "shared") in adata.obsm
    )


def study_cells(adata: AnnData, key: str) -> dict[str, np.ndarray]:
    """Boolean cell masks of each study of a multi-study fit under ``key``.

    The study of a cell is read from the ``obs`` column the model was set up with
    (``uns[key]["setup_args"]["study_key"]``); when that column is gone, from the study-specific factors (a cell's
    own study's block of ``obsm[f"X_{key}_specific"]`` is its only non-zero block).

    Parameters
    ----------
    adata
        AnnData with the results of ``MultiStudySparseVAE.write_results(adata, key_added=key)``.
    key
        The ``key_added`` of the multi-study fit.

    Returns
    -------
    dict
        Study name -> boolean array over ``adata.obs_names``.

    Examples
    --------
    >>> masks = study_cells(adata, "mssvae")
    >>> {s: int(m.sum()) for s, m in masks.items()}
    """
    uns = adata.uns[key]
    studies = [str(s) for s in np.atleast_1d(uns["studies"])]
    column = dict(uns.get("setup_args", {})).get("study_key")
    if column is not None and str(column) in adata.obs.columns:
        labels = adata.obs[str(column)].astype(str).to_numpy()
        return {s: labels == s for s in studies}
    spec = np.asarray(adata.obsm[factors_key(key, "specific")])
    names = [str(f) for f in np.atleast_1d(uns["specific_factors"])]
    out = {}
    for s in studies:
        cols = [i for i, f in enumerate(names) if f.rsplit("_", 1)[0] == s]
        out[s] = np.abs(spec[:, cols]).sum(1) > 0 if cols else np.zeros(adata.n_obs, dtype=bool)
    return out


def _multistudy_blocks(adata: AnnData, key: str) -> dict:
    """Shared and study-specific blocks of a multi-study fit side by side, in the order of its factor names."""
    uns = adata.uns[key]
    studies = [str(s) for s in np.atleast_1d(uns["studies"])]
    safe = {str(s): str(k) for s, k in dict(uns.get("study_keys", {})).items()}
    W = [np.asarray(adata.varm[loadings_key(key, "shared")])]
    pip = [np.asarray(adata.varm[pip_key(key, "shared")])]
    for s in studies:
        name = safe.get(s, s)
        w_key, p_key = loadings_key(key, name), pip_key(key, name)
        if w_key not in adata.varm or p_key not in adata.varm:
            raise MissingResultsError(
                f"adata.varm[{w_key!r}] or [{p_key!r}] (study {s!r}) is missing: write the results again with "
                f"`model.write_results(adata, key_added={key!r}, overwrite=True)`."
            )
        W.append(np.asarray(adata.varm[w_key]))
        pip.append(np.asarray(adata.varm[p_key]))
    shared = [str(f) for f in np.atleast_1d(uns["shared_factors"])]
    specific = [str(f) for f in np.atleast_1d(uns["specific_factors"])]
    masks = study_cells(adata, key)
    cell_masks: dict[str, np.ndarray | None] = {f: None for f in shared}
    for f in specific:
        cell_masks[f] = masks[f.rsplit("_", 1)[0]]
    Z = np.hstack(
        [np.asarray(adata.obsm[factors_key(key, "shared")]), np.asarray(adata.obsm[factors_key(key, "specific")])]
    )
    return {"Z": Z, "W": np.hstack(W), "pip": np.hstack(pip), "cell_masks": cell_masks, "studies": studies}


def _single_blocks(adata: AnnData, key: str) -> dict:
    """The factors, mask and ``p*`` of a :class:`~scsparse.model.SparseVAE` fit; a clear error when one is missing."""
    wanted = result_keys(key)
    missing = [
        f"adata.{attr}[{name!r}]"
        for attr, names in wanted.items()
        for name in names
        if name not in getattr(adata, attr)
    ]
    if missing:
        found = sorted(k for k in adata.uns if isinstance(adata.uns[k], dict) and "factor_names" in adata.uns[k])
        hint = f" Results found under key(s): {found}." if found else ""
        raise MissingResultsError(
            f"No sparse VAE results under key={key!r} (missing {', '.join(missing)}). Run "
            f"`scsparse.tl.sparse_vae(adata, key_added={key!r}, ...)` or "
            f"`model.write_results(adata, key_added={key!r})` first, or pass the key you used.{hint}"
        )
    return {
        "Z": np.asarray(adata.obsm[factors_key(key)]),
        "W": np.asarray(adata.varm[loadings_key(key)]),
        "pip": np.asarray(adata.varm[pip_key(key)]),
        "cell_masks": {},
        "studies": [],
    }


def read_results(adata: AnnData, key: str) -> FitResults:
    """The fit written by ``write_results(adata, key_added=key)``, with a clear error when any part is missing.

    Reads a :class:`~scsparse.model.SparseVAE` and a :class:`~scsparse.model.MultiStudySparseVAE` fit alike: the
    latter's shared and specific blocks are put side by side in the order of its factor names, and a specific
    factor's ``cell_masks`` entry is its study's cells.

    Parameters
    ----------
    adata
        AnnData with a fit under ``key``.
    key
        The ``key_added`` of the fit.

    Returns
    -------
    FitResults
        The stored arrays and metadata.

    Raises
    ------
    MissingResultsError
        A key is missing, or the stored parts do not fit together; the message says what to run.

    Examples
    --------
    >>> res = read_results(adata, "sparsevae")
    >>> res.W[:, res.factor_names.index(res.active_factors[0])]  # the first active factor's mask
    """
    if not isinstance(adata, AnnData):
        raise TypeError(f"Expected an AnnData object, got {type(adata).__name__}.")
    blocks = _multistudy_blocks(adata, key) if is_multistudy(adata, key) else _single_blocks(adata, key)
    uns = adata.uns[key]
    for name in ("factor_names", "active_factors", "top_genes"):
        if name not in uns:
            raise MissingResultsError(
                f"adata.uns[{key!r}] has no {name!r}: it was not written by write_results. "
                f"Run `scsparse.tl.sparse_vae(adata, key_added={key!r}, overwrite=True)` again."
            )
    names = [str(f) for f in uns["factor_names"]]
    if blocks["W"].shape[1] != len(names) or blocks["Z"].shape[1] != len(names):
        raise MissingResultsError(
            f"The results under key={key!r} do not fit together: {len(names)} factor names, W with "
            f"{blocks['W'].shape[1]} and the factors with {blocks['Z'].shape[1]} columns. Write the results again "
            "with overwrite=True."
        )

    def gene_lists(value) -> dict[str, list[str]]:
        return {str(f): [str(g) for g in np.atleast_1d(v)] for f, v in dict(value).items()}

    return FitResults(
        key=key,
        Z=blocks["Z"],
        W=blocks["W"],
        pip=blocks["pip"],
        factor_names=names,
        active_factors=[str(f) for f in np.atleast_1d(uns["active_factors"])],
        top_genes=gene_lists(uns["top_genes"]),
        anchor_genes=gene_lists(uns.get("anchor_genes", {})),
        eta=np.asarray(uns.get("eta", np.full(len(names), np.nan))),
        pip_threshold=float(uns.get("pip_threshold", 0.5)),
        cell_masks={f: blocks["cell_masks"].get(f) for f in names},
        studies=blocks["studies"],
        setup_layer=dict(uns.get("setup_args", {})).get("layer"),
        genes=[str(g) for g in adata.var_names],
        consensus=pd.DataFrame(uns["consensus"]) if "consensus" in uns else None,
        guided=pd.DataFrame(uns["guided_factors"]) if "guided_factors" in uns else None,
    )
