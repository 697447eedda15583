"""How each gene's decoded expression responds to one factor: latent traversals averaged over cells.

``W`` says *which* genes a factor drives (``p*``) and how strongly it enters each gene's decoder input
(``|w_jk|``), but the decoder is nonlinear, so the *direction* and *shape* of a gene's response to the factor are
the decoder's. :func:`factor_response` traverses one factor at a time over a grid of values and decodes, keeping
each cell's other factors, batch and library as they are, and averages the decoded expression over the cells
(the partial dependence of each gene on the factor). A gene with ``w_jk = 0`` does not see factor ``k``: its
decoder output is unchanged along the traversal (for count likelihoods its normalised expression can still move
a little, because the expression of all genes sums to one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from scsparse.module import COUNT_LIKELIHOODS

from ._factors import resolve_factors
from ._validation import InvalidInputError

__all__ = ["FactorResponse", "factor_response"]

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
        The traversed model's likelihood; for count likelihoods (:attr:`is_counts`) :meth:`effects` are log2 fold
        changes, for ``"normal"`` differences.
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
    pip: pd.DataFrame
    model_factors: list[str]

    def __repr__(self) -> str:
        k, steps, genes = self.expression.shape
        cells = sorted(set(int(n) for n in self.n_cells))
        per = f"{cells[0]}" if len(cells) == 1 else f"{cells[0]}-{cells[-1]}"
        return (
            f"FactorResponse: {k} factor(s) x {steps} steps x {genes} genes ({self.unit}), {per} cells per factor; "
            ".effects(), .top_genes(factor), .curve(factor)"
        )

    @property
    def is_counts(self) -> bool:
        """Whether ``expression`` is normalised counts (a count likelihood) rather than decoder means."""
        return self.gene_likelihood in COUNT_LIKELIHOODS

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

    def top_genes(self, factor: str | int, n_top: int | None = 10, pip_threshold: float | None = 0.5) -> pd.DataFrame:
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
        order = np.argsort(-table["effect"].abs().to_numpy(), kind="stable")
        table = table.iloc[order if n_top is None else order[: int(n_top)]]
        table.insert(2, "direction", np.where(table["effect"] >= 0, "up", "down"))
        return table.reset_index(drop=True)


def _check_options(n_steps: int, span: tuple[float, float], n_cells: int | None, library_size: float) -> None:
    if isinstance(n_steps, bool) or not isinstance(n_steps, (int, np.integer)) or n_steps < 2:
        raise InvalidInputError(f"n_steps must be an integer >= 2 (the two ends of the traversal), got {n_steps!r}.")
    try:
        lo, hi = (float(v) for v in span)
    except (TypeError, ValueError):
        raise InvalidInputError(f"span must be two quantiles (low, high), got {span!r}.") from None
    if not 0.0 <= lo < hi <= 1.0:
        raise InvalidInputError(f"span must be two quantiles with 0 <= low < high <= 1, got {span!r}.")
    if n_cells is not None and (isinstance(n_cells, bool) or not isinstance(n_cells, (int, np.integer)) or n_cells < 1):
        raise InvalidInputError(f"n_cells must be a positive integer or None (all cells), got {n_cells!r}.")
    if not np.isfinite(library_size) or library_size <= 0:
        raise InvalidInputError(f"library_size must be a positive number, got {library_size!r}.")


def factor_response(
    model: Any,
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
    """Traverse factors of a trained sparse VAE and average the decoded expression over cells.

    See :meth:`scsparse.model.SparseVAE.get_factor_response`, which calls this with the model.
    """
    import torch

    if not model.is_trained_:
        raise InvalidInputError("The model is not trained yet: call model.train() first.")
    _check_options(n_steps, span, n_cells, float(library_size))
    names = list(model.factor_names)
    chosen = resolve_factors(names, model.active_factors(), factors, source="the model")
    adata = model.adata
    pool = np.arange(adata.n_obs) if indices is None else np.asarray(indices, dtype=int)
    if pool.size == 0 or pool.min() < 0 or pool.max() >= adata.n_obs:
        raise InvalidInputError(f"indices must be positions of cells in the model's AnnData (0 .. {adata.n_obs - 1}).")
    module = model.module
    is_count = module.gene_likelihood in COUNT_LIKELIHOODS
    Z, present = _posterior_means(model, pool, batch_size)
    rng = np.random.default_rng(seed)
    grid = np.zeros((len(chosen), n_steps))
    expression = np.zeros((len(chosen), n_steps, adata.n_vars))
    counts = []
    module.eval()
    for row, name in enumerate(chosen):
        k = names.index(name)
        eligible = np.flatnonzero(present[:, k])
        if eligible.size == 0:
            raise InvalidInputError(f"No cell among those given has factor {name!r} (it belongs to another study).")
        if n_cells is not None and eligible.size > n_cells:
            eligible = np.sort(rng.choice(eligible, size=n_cells, replace=False))
        grid[row] = np.quantile(Z[eligible, k], np.linspace(span[0], span[1], n_steps))
        values = torch.as_tensor(grid[row], dtype=torch.float32, device=module.device)
        total = torch.zeros(n_steps, adata.n_vars, dtype=torch.float64, device=module.device)
        loader = model._make_data_loader(adata=adata, indices=pool[eligible], batch_size=batch_size)
        with torch.inference_mode():
            for tensors in loader:
                inf = module.inference(**module._get_inference_input(tensors))
                z = inf["qz"].loc.unsqueeze(0).repeat(n_steps, 1, 1)  # (steps, cells, K)
                z[:, :, k] = values[:, None]
                if inf.get("latent_mask") is not None:
                    z = z * inf["latent_mask"]
                gen = module.generative(**module._get_generative_input(tensors, {**inf, "z": z}))
                value = gen["rho"] * float(library_size) if is_count else gen["logits"]
                total += value.sum(1, dtype=torch.float64)
        expression[row] = (total / eligible.size).cpu().numpy()
        counts.append(int(eligible.size))
    unit = f"counts per {library_size:g}" if is_count else "decoder mean"
    return FactorResponse(
        grid=pd.DataFrame(grid, index=chosen, columns=[f"step_{s}" for s in range(n_steps)]),
        expression=expression,
        genes=pd.Index(adata.var_names),
        n_cells=pd.Series(counts, index=chosen, name="n_cells"),
        unit=unit,
        gene_likelihood=module.gene_likelihood,
        pip=model._all_loadings()[1].loc[:, chosen].copy(),
        model_factors=names,
    )


def _posterior_means(model: Any, pool: np.ndarray, batch_size: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Posterior means of the cells in ``pool`` and which factors each cell has (multi-study: its own blocks)."""
    import torch

    module = model.module
    means, masks = [], []
    loader = model._make_data_loader(adata=model.adata, indices=pool, batch_size=batch_size)
    with torch.inference_mode():
        for tensors in loader:
            inf = module.inference(**module._get_inference_input(tensors))
            loc = inf["qz"].loc
            mask = inf.get("latent_mask")
            means.append(loc.cpu().numpy())
            masks.append(np.ones(loc.shape, dtype=bool) if mask is None else mask.cpu().numpy() > 0)
    return np.concatenate(means), np.concatenate(masks)
