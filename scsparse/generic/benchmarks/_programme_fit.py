"""A fit read as gene programmes: what the benchmarks on real data fit, read and score.

``bench peers`` and ``bench stability`` give every method a :class:`FitBudget`, and every fit becomes a
:class:`ProgrammeFit`: the cells x factors representation, the programmes (gene lists, strongest gene first) with
each programme's activity in every cell, and the factors the method kept. :func:`read_sparsevae` reads a trained
SparseVAE or MultiStudySparseVAE so (its programmes are :func:`scsparse.tl.programme_genes`); the equal-size
reading (:meth:`ProgrammeFit.cut`, sizes :data:`EQUAL_SIZES`) cuts every method's programmes to the same number of
genes by the method's own ranking.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from anndata import AnnData

from scsparse.utils import check_integer

__all__ = ["EQUAL_SIZES", "FitBudget", "ProgrammeFit", "extended_ranking", "read_sparsevae"]

#: Programme sizes of the equal-size reading: every method's programmes cut to the same number of genes.
EQUAL_SIZES: tuple[int, ...] = (20, 50)


@dataclass(frozen=True)
class FitBudget:
    """What every method is given.

    Attributes
    ----------
    n_factors
        The (maximum) number of factors ``K``.
    max_epochs
        Epochs for the neural methods (SparseVAE may stop earlier once its fit has settled).
    n_top
        Programme size for the methods whose programmes are the top genes of a weight vector.
    restarts
        Fits of SparseVAE (best of N).
    consensus_restarts
        Fits of SparseVAE in its consensus.
    cnmf_iterations
        NMF replicates of cNMF's consensus (cNMF's own default, 100).
    mofa_iterations
        Most iterations of MOFA+ (it stops earlier once converged, mofapy2's "fast" mode).
    """

    n_factors: int = 20
    max_epochs: int = 400
    n_top: int = 50
    restarts: int = 3
    consensus_restarts: int = 5
    cnmf_iterations: int = 100
    mofa_iterations: int = 1000

    def with_max_epochs(self, max_epochs: int | None) -> FitBudget:
        """The budget with ``max_epochs`` epochs (a whole number of at least 1) instead; ``None`` keeps its own.

        Examples
        --------
        >>> FitBudget(max_epochs=60).with_max_epochs(None).max_epochs, FitBudget().with_max_epochs(5).max_epochs
        (60, 5)
        """
        if max_epochs is None:
            return self
        check_integer("max_epochs", max_epochs)
        return replace(self, max_epochs=max_epochs)


@dataclass
class ProgrammeFit:
    """One method's fit to one data set and seed.

    Attributes
    ----------
    method
        The method's name (``bench peers``: one of its ``PEER_METHODS``).
    factors
        Cells x factors representation (every factor the method returns; the input of the label classifier);
        ``None`` where the method has no one representation of all cells (one fit per study).
    programmes
        Programme name (``"<factor>+"`` / ``"<factor>-"``) -> gene indices, strongest first.
    activity
        Programme name -> its activity in every cell (higher: the programme's genes are more expressed).
    n_kept
        Factors the method kept (SparseVAE: active factors; DRVI: not vanished; the others: all non-empty).
    seconds, peak_mb
        Wall time of fitting and reading the programmes, and the growth of the peak resident memory while doing
        it (MB; ``nan`` where the peak cannot be reset, outside Linux).
    extra
        Method-specific facts for the summary (e.g. whether SparseVAE settled).
    scope
        Multi-study methods: programme name -> ``"shared"`` or the study it belongs to (empty for the others).
    rankings
        Programme name -> its genes in the method's own order, beyond the method's own cut where the reading has
        one (SparseVAE: the genes with ``p* > 0.5`` by ``|w|``, then the other genes of the direction by ``p*``),
        up to ``max(EQUAL_SIZES)`` genes: what the equal-size reading cuts. Empty: the programmes themselves.
    transfer
        Multi-study methods: the cells x factors representation common to all studies, on which a classifier
        trained on one study's cells is tested on the others' (``None``: the method has none).
    """

    method: str
    factors: np.ndarray | None
    programmes: dict[str, np.ndarray]
    activity: dict[str, np.ndarray]
    n_kept: int
    seconds: float = math.nan
    peak_mb: float = math.nan
    extra: dict[str, Any] = field(default_factory=dict)
    scope: dict[str, str] = field(default_factory=dict)
    rankings: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    transfer: np.ndarray | None = field(default=None, repr=False)

    def cut(self, n_genes: int) -> dict[str, np.ndarray]:
        """Every programme cut to its ``n_genes`` strongest genes by the method's own ranking (the equal-size
        reading; a programme whose ranking is shorter keeps all it has).
        """
        return {name: self.rankings.get(name, genes)[:n_genes] for name, genes in self.programmes.items()}


def read_sparsevae(model, adata: AnnData, method: str) -> ProgrammeFit:
    """The programmes of a trained SparseVAE or MultiStudySparseVAE (``scope``: the block of each programme)."""
    from scsparse.results import read_results
    from scsparse.tl import factor_gene_correlation, programme_genes

    key = "programmes"
    model.write_results(adata, key_added=key, overwrite=True)
    res = read_results(adata, key)
    z = np.asarray(res.Z, dtype=np.float64)
    index = {g: j for j, g in enumerate(adata.var_names)}
    programmes, activity, scope, rankings = {}, {}, {}, {}
    study: dict[str, str] = {}  # factor -> its study ("all": shared), for a multi-study fit
    if res.studies:
        factors = model.factor_table()
        study = dict(zip(factors["factor"], factors["study"].astype(str), strict=True))
    table = programme_genes(adata, key=key) if res.active_factors else []  # no active factor: no programme
    corr = factor_gene_correlation(adata, key=key) if len(table) else None
    for row in table.itertuples() if len(table) else ():
        sign = 1.0 if row.direction == "positive" else -1.0
        name = f"{row.factor}{'+' if sign > 0 else '-'}"
        k = res.factor_names.index(row.factor)
        programmes[name] = np.asarray([index[g] for g in row.genes], dtype=np.int64)
        activity[name] = sign * z[:, k]
        same_direction = sign * corr[row.factor].to_numpy() > 0
        rankings[name] = extended_ranking(programmes[name], res.pip[:, k], res.W[:, k], same_direction)
        if res.studies:
            scope[name] = "shared" if study[row.factor] == "all" else study[row.factor]
    stopping = model.history.get("stopping")
    settled = float(stopping["stopping"].iloc[-1] == "settled") if stopping is not None else math.nan
    return ProgrammeFit(
        method,
        z,
        programmes,
        activity,
        n_kept=len(res.active_factors),
        extra={"settled": settled, "epochs": float(len(model.history["elbo_train"]))},
        scope=scope,
        rankings=rankings,
    )


def extended_ranking(programme: np.ndarray, pip: np.ndarray, w: np.ndarray, same_direction: np.ndarray) -> np.ndarray:
    """A SparseVAE programme (genes with ``p* > 0.5``, by ``|w|``) followed by the other genes of its direction
    by decreasing ``p*`` (then ``|w|``), up to ``max(EQUAL_SIZES)`` genes.
    """
    size = max(EQUAL_SIZES)
    if programme.size >= size:
        return programme[:size]
    rest = np.flatnonzero(same_direction)
    rest = rest[~np.isin(rest, programme)]
    rest = rest[np.lexsort((-np.abs(w[rest]), -pip[rest]))]
    return np.concatenate([programme, rest[: size - programme.size]]).astype(np.int64)
