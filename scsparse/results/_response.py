"""The result of a latent traversal: decoded expression of each gene along one factor, averaged over cells.

Computed by :meth:`scsparse.model.SparseVAE.get_factor_response` (see :mod:`scsparse.model._response` for the
method), drawn by :func:`scsparse.pl.factor_response`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from scsparse._checks import InvalidInputError

from ._factors import resolve_factors

__all__ = ["LOG2FC_EPS", "FactorResponse"]

#: Added to the expression at both ends before the log2 fold change of count likelihoods (as scanpy does).
LOG2FC_EPS = 1e-9


@dataclass(repr=False)
class FactorResponse:
    """Decoded expression along traversals of factors (from :meth:`scsparse.model.SparseVAE.get_factor_response`).

    Attributes
    ----------
    grid
        Factors x steps: the value given to the factor at each step (quantiles of its posterior means).
    expression
        ``(n_factors, n_steps, n_genes)`` mean decoded expression at each step, over the cells in ``n_cells``.
    genes
        Gene names (the columns of the last axis of ``expression``).
    n_cells
        Number of cells averaged per factor.
    unit
        What ``expression`` is: ``"counts per <library_size>"`` for count likelihoods, ``"decoder mean"`` for
        ``"normal"``.
    gene_likelihood
        The traversed model's likelihood.
    is_counts
        Whether ``expression`` is normalised counts (a count likelihood) rather than decoder means: then
        :meth:`effects` are log2 fold changes, otherwise differences.
    pip
        Genes x traversed factors: the inclusion probabilities ``p*`` of the model that was traversed.
    model_factors
        All the model's factor names, in order: an integer ``factor`` is a position among them, as everywhere in
        scsparse (``1`` is the model's second factor, traversed or not).
    """

    grid: pd.DataFrame
    expression: np.ndarray
    genes: pd.Index
    n_cells: pd.Series
    unit: str
    gene_likelihood: str
    is_counts: bool
    pip: pd.DataFrame
    model_factors: list[str]

    def __repr__(self) -> str:
        k, steps, genes = self.expression.shape
        cells = sorted(set(int(n) for n in self.n_cells))
        per = f"{cells[0]}" if len(cells) == 1 else f"{cells[0]}-{cells[-1]}"
        return (
            f"FactorResponse: {k} factor(s) x {steps} steps x {genes} genes ({self.unit}), {per} cells per factor; "
            ".effects(), .top_genes(factor), .programmes(), .curve(factor)"
        )

    @property
    def factors(self) -> list[str]:
        """The traversed factors."""
        return list(self.grid.index)

    def factor_name(self, factor: str | int) -> str:
        """The name of a traversed factor given by its name or its position among the model's factors."""
        return self.factors[self._row(factor)]

    def _row(self, factor: str | int) -> int:
        (name,) = resolve_factors(self.model_factors, self.factors, [factor], source="the model")
        if name not in self.factors:
            raise InvalidInputError(
                f"Factor {name!r} was not traversed; traversed factors: {self.factors}. Pass it to "
                "get_factor_response(factors=...)."
            )
        return self.factors.index(name)

    def curve(self, factor: str | int) -> pd.DataFrame:
        """One factor's traversal: steps x genes, indexed by the factor's value at each step.

        Examples
        --------
        >>> response = model.get_factor_response()
        >>> response.curve("factor_3")[["IFIT1", "ISG15"]]
        """
        row = self._row(factor)
        index = pd.Index(self.grid.iloc[row].to_numpy(), name=self.factors[row])
        return pd.DataFrame(self.expression[row], index=index, columns=self.genes)

    def effects(self) -> pd.DataFrame:
        """Change of each gene from the low to the high end of each traversal (genes x factors).

        The log2 fold change of the mean expression at the last step over the first for count likelihoods
        (``LOG2FC_EPS`` added to both), the difference of the decoder means for ``"normal"``. Positive: the gene
        goes up with the factor. A gene whose response is not monotone can have a small end-to-end change; see
        :meth:`curve` for the whole path.

        Examples
        --------
        >>> effects = model.get_factor_response().effects()
        >>> effects["factor_3"].sort_values().tail(10)  # the genes that rise most with factor 3
        """
        low, high = self.expression[:, 0, :], self.expression[:, -1, :]
        if self.is_counts:
            change = np.log2(high + LOG2FC_EPS) - np.log2(low + LOG2FC_EPS)
        else:
            change = high - low
        return pd.DataFrame(change.T, index=self.genes, columns=self.factors)

    def top_genes(
        self,
        factor: str | int,
        n_top: int | None = 10,
        pip_threshold: float | None = 0.5,
        min_effect: float | None = None,
    ) -> pd.DataFrame:
        """The genes that change most along a factor's traversal, by decreasing ``|effect|``.

        Parameters
        ----------
        factor
            Name or position (among the model's factors) of a traversed factor.
        n_top
            Number of genes (``None``: all that pass ``pip_threshold``).
        pip_threshold
            Only genes of the factor's programme, ``p* > pip_threshold`` (``None``: every gene; genes in the spike
            have small but non-zero ``w_jk`` and can still move).
        min_effect
            Only genes whose ``|effect|`` is at least this (a log2 fold change for count likelihoods: ``1`` keeps
            the genes that at least double or halve from one end of the traversal to the other); ``None``: no cut.

        Returns
        -------
        pandas.DataFrame
            ``gene``, ``effect`` (as in :meth:`effects`), ``direction`` (``"up"`` or ``"down"`` with the factor)
            and ``pip``.

        Examples
        --------
        >>> model.get_factor_response().top_genes("factor_3", n_top=5)
        """
        name = self.factor_name(factor)
        table = pd.DataFrame(
            {"gene": self.genes, "effect": self.effects()[name].to_numpy(), "pip": self.pip[name].to_numpy()}
        )
        if pip_threshold is not None:
            table = table[table["pip"] > pip_threshold]
        if min_effect is not None:
            table = table[table["effect"].abs() >= float(min_effect)]
        order = np.argsort(-table["effect"].abs().to_numpy(), kind="stable")
        table = table.iloc[order if n_top is None else order[: int(n_top)]]
        table.insert(2, "direction", np.where(table["effect"] >= 0, "up", "down"))
        return table.reset_index(drop=True)

    def programmes(self, min_effect: float = 1.0, pip_threshold: float | None = 0.5) -> dict[str, list[str]]:
        """Each traversed factor's programme read by effect size: its genes with ``p* > pip_threshold`` whose
        expression changes by at least ``min_effect`` along the factor, largest change first.

        The programme of ``p* > 0.5`` alone grows with the number of cells: the more cells, the smaller the effect
        the likelihood can tell from zero, and with ``10^4``-``10^5`` cells a factor takes in genes it moves only
        a little (on simulated programmes at 50,000 cells, genes of other programmes that change at most 1.8-fold
        along the factor, where its own genes change at least five-fold; see the programme-size benchmark). A cut
        in the units of the effect does not move with the number of cells.

        Parameters
        ----------
        min_effect
            Least ``|effect|`` (:meth:`effects`; a log2 fold change for count likelihoods, so ``1`` is a doubling
            or halving from the low to the high end of the traversal).
        pip_threshold
            As in :meth:`top_genes`.

        Returns
        -------
        dict
            Factor name -> gene names; factors whose programme is empty are left out.

        Examples
        --------
        >>> model.get_factor_response().programmes(min_effect=1.0)["factor_3"][:5]
        """
        if not min_effect >= 0:
            raise InvalidInputError(f"min_effect must be a number >= 0, got {min_effect!r}.")
        tables = {
            f: self.top_genes(f, n_top=None, pip_threshold=pip_threshold, min_effect=min_effect) for f in self.factors
        }
        return {f: table["gene"].tolist() for f, table in tables.items() if len(table)}
