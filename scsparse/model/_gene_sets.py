"""Guided factors: gene sets that raise the prior inclusion of their genes in a factor of their own.

:class:`~scsparse.model.SparseVAE` with ``gene_sets=`` gives each set one factor, placed before the ``n_latent`` free
factors. In a set's factor its genes have the prior inclusion ``set_prior`` (0.5 by default) instead of the factor's
``eta_k`` (:class:`~scsparse.nn.SpikeSlabLasso`'s ``members``); every other gene keeps ``eta_k``. The data still
decide: a set gene whose weight the data do not hold goes to the spike, and a gene outside the set enters when the
data call for it, as in a free factor. :func:`scsparse.results.guided_table` reads how far each guided factor went
from its set.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from os import PathLike
from typing import Any

import numpy as np
import pandas as pd
import torch
from scvi import REGISTRY_KEYS

from scsparse._checks import InvalidInputError, check_integer, check_pip_threshold, check_real
from scsparse._options import COUNT_LIKELIHOODS
from scsparse.data._genesets import GeneSetError, load_gene_sets
from scsparse.results import MIN_KEPT, guided_table

__all__ = [
    "DEFAULT_MIN_SET_GENES",
    "DEFAULT_SET_PRIOR",
    "GuidedFactorsMixin",
    "GUIDED_CODE_LR",
    "GUIDED_CODE_STEPS",
    "GUIDED_KL_DELAY",
    "check_set_prior",
    "guided_members",
    "resolve_gene_sets",
    "set_scores",
]

#: The fewest of a set's genes the data must have for the set to guide a factor (``min_set_genes``).
DEFAULT_MIN_SET_GENES = 5
#: The prior inclusion of a set's genes in the set's factor (``set_prior``).
DEFAULT_SET_PRIOR = 0.5
#: Where a guided factor's set genes start in ``W``: in the slab (``p* = 0.90`` at ``set_prior = 0.5`` and the default
#: rates), so the factor begins as its set's programme and the data, not the race with the free factors, decide
#: which set genes it keeps. A start at 1.0 (``p* = 0.999``) kept a decoy set whole in a 60-epoch fit of a planted
#: simulation.
GUIDED_START = 0.5

#: Adam steps (learning rate :data:`GUIDED_CODE_LR`, the training minibatches) that start a guided model's encoder
#: on its sets' scores before the first fit (``train(guided_start=True)``): after them each guided code follows its
#: set's score in every cell, so the factor starts carrying its set's signal whatever the random draw.
GUIDED_CODE_STEPS = 500
#: The learning rate of the encoder's start on the sets' scores.
GUIDED_CODE_LR = 1e-3
#: The share of the KL warm-up through which the guided codes have no KL term (``train(guided_start=True)``;
#: :class:`~scsparse.train.SparseVAETrainingPlan`'s ``guided_kl_delay``); their weight then rises to the full one at
#: the warm-up's end.
GUIDED_KL_DELAY = 0.25

GeneSetsArgument = str | PathLike[str] | Mapping[str, Iterable[str]]


def check_set_prior(set_prior: float, lambda0: float, lambda1: float) -> float:
    """``set_prior`` as a float in ``(0, lambda0 / (lambda0 + lambda1))``, or a clear error.

    At ``set_prior >= lambda0 / (lambda0 + lambda1)`` a set gene at ``w = 0`` would have ``p* >= 0.5``: it would stay
    in its factor's programme whatever the data say.
    """
    fix = "It is the prior inclusion of a set's genes in the set's factor (default 0.5)."
    value = check_real("set_prior", set_prior, low=0, high=1, low_open=True, high_open=True, fix=fix)
    ceiling = lambda0 / (lambda0 + lambda1)
    if value >= ceiling:
        raise InvalidInputError(
            f"set_prior={value} is too high for lambda0={lambda0}, lambda1={lambda1}: a set gene at w = 0 would keep "
            f"p* >= 0.5, so the data could never drop it. Give set_prior below lambda0 / (lambda0 + lambda1) = "
            f"{ceiling:.3f} (default 0.5)."
        )
    return value


def resolve_gene_sets(
    gene_sets: GeneSetsArgument, gene_names: Sequence[str], min_set_genes: int = DEFAULT_MIN_SET_GENES
) -> dict[str, list[str]]:
    """The sets as ``{name: genes of the data}``, each set's genes in the data's order; short sets refused by name.

    Genes are matched to the data's gene names exactly (case-sensitive: ``"Ifit1"`` is not ``"IFIT1"``; convert the
    sets or the names first, e.g. ``{k: [g.upper() for g in v] ...}``).

    Parameters
    ----------
    gene_sets
        A dict ``{name: genes}``, a GMT file, or a gene-set library name of :func:`scsparse.tl.load_gene_sets`.
    gene_names
        The data's genes (``adata.var_names``).
    min_set_genes
        The fewest genes of a set the data must have.

    Returns
    -------
    dict
        Set name -> its genes found in the data.

    Raises
    ------
    InvalidInputError
        A set argument that cannot be read, no set, or sets with fewer than ``min_set_genes`` genes in the data
        (all of them named).
    """
    min_set_genes = check_integer(
        "min_set_genes", min_set_genes, minimum=1, fix="The fewest genes of a set the data must have (default 5)."
    )
    try:
        sets = load_gene_sets(gene_sets)
    except (GeneSetError, FileNotFoundError) as exc:
        raise InvalidInputError(f"gene_sets cannot be read: {exc}") from exc
    names = pd.Index([str(g) for g in gene_names])
    kept: dict[str, list[str]] = {}
    short: list[str] = []
    for name, genes in sets.items():
        present = names.isin(set(genes))
        if int(present.sum()) < min_set_genes:
            short.append(f"{name} ({int(present.sum())} of {len(genes)})")
        kept[name] = list(names[present])
    if short:
        shown = ", ".join(short[:10]) + (f" and {len(short) - 10} more" if len(short) > 10 else "")
        raise InvalidInputError(
            f"{len(short)} gene set(s) have fewer than min_set_genes={min_set_genes} genes in the data (genes "
            f"matched to adata.var_names, case-sensitive): {shown}. Leave them out, match the gene symbols' case "
            "and names to adata.var_names, or lower min_set_genes."
        )
    return kept


def guided_members(gene_sets: Mapping[str, Sequence[str]], gene_names: Sequence[str], n_factors: int) -> np.ndarray:
    """The boolean ``(genes, n_factors)`` membership of the guided prior: set ``s``'s genes in column ``s``.

    The sets take the first columns, in their order; the other columns (the free factors) have no member.
    """
    index = pd.Index([str(g) for g in gene_names])
    members = np.zeros((len(index), int(n_factors)), dtype=bool)
    for column, genes in enumerate(gene_sets.values()):
        members[index.get_indexer(list(genes)), column] = True
    return members


def set_scores(x: torch.Tensor, members: torch.Tensor, counts: bool = True) -> torch.Tensor:
    """Each set's score in each cell: the mean ``log(1 + x)`` of its genes at 10,000 counts per cell.

    Parameters
    ----------
    x
        The cells' values, shape ``(cells, genes)``: counts, or (``counts=False``) values on their own scale, which are
        averaged as they are.
    members
        Boolean ``(genes, sets)`` membership, each set with at least one gene.
    counts
        Whether ``x`` holds counts (normalised to 10,000 per cell and log-transformed first).

    Returns
    -------
    torch.Tensor
        Shape ``(cells, sets)``.

    Examples
    --------
    >>> x = torch.tensor([[9.0, 1.0, 0.0], [0.0, 0.0, 10.0]])
    >>> members = torch.tensor([[True, False], [True, False], [False, True]])
    >>> set_scores(x, members, counts=False)
    tensor([[ 5.,  0.],
            [ 0., 10.]])
    """
    if counts:
        x = torch.log1p(x / x.sum(-1, keepdim=True).clamp_min(1.0) * 1e4)
    weights = members.to(x.dtype)
    return x @ (weights / weights.sum(0))


class GuidedFactorsMixin:
    """Gene-set guided factors of :class:`~scsparse.model.SparseVAE`: the sets' resolution and their reading."""

    #: the guided factors' sets, ``{name: genes of the data}`` in factor order (empty: no guided factor)
    gene_sets_: dict[str, list[str]]

    def _resolve_guide(
        self, gene_sets: GeneSetsArgument | None, min_set_genes: int, set_prior: float, lambdas: tuple[float, float]
    ) -> dict[str, list[str]] | None:
        """Resolve ``gene_sets`` against the model's genes into :attr:`gene_sets_` (``None`` when not guided);
        ``lambdas`` are the prior's ``(lambda0, lambda1)``, which bound ``set_prior``.
        """
        check_set_prior(set_prior, *lambdas)
        if gene_sets is None:
            self.gene_sets_ = {}
            return None
        self.gene_sets_ = resolve_gene_sets(gene_sets, list(self._gene_names), min_set_genes)
        return self.gene_sets_

    def _guided_prior(self, n_factors: int, set_prior: float) -> dict[str, Any]:
        """The module's ``prior_members`` and ``member_prior`` for ``n_factors`` factors (none when not guided)."""
        if not self.gene_sets_:
            return {}
        members = guided_members(self.gene_sets_, list(self._gene_names), n_factors)
        return {"prior_members": torch.as_tensor(members), "member_prior": float(set_prior)}

    @torch.no_grad()
    def _start_guided_columns(self) -> None:
        """Start each guided factor on its set, in place: its set genes at :data:`GUIDED_START`, its other entries at
        zero (over the start of ``mask_init``), so the factor begins as its set's programme, as Spectra's factors do.
        """
        if not self.gene_sets_ or self._is_query():
            return
        members = self.module.prior.members[:, : len(self.gene_sets_)]
        guided = self.module.decoder.W[:, : len(self.gene_sets_)]
        guided.copy_(torch.where(members, torch.full_like(guided, GUIDED_START), torch.zeros_like(guided)))

    def _start_guided_codes(self, batch_size: int) -> int:
        """Start the encoder of a guided model on its sets' scores; the number of steps taken (0: not guided, a query
        or no AnnData).

        :data:`GUIDED_CODE_STEPS` Adam steps on the encoder alone fit each guided factor's posterior mean to its set's
        score (:func:`set_scores`), standardised over the cells, on shuffled minibatches of every cell (as the mask's
        NMF start reads every cell). The decoder, ``W`` and the prior are untouched.
        """
        if not self.gene_sets_ or self._is_query() or self.adata is None:
            return 0
        module = self.module
        n_sets = len(self.gene_sets_)
        counts = module.gene_likelihood in COUNT_LIKELIHOODS
        members = module.prior.members[:, :n_sets]
        every = np.arange(self.adata.n_obs)

        def scores(tensors: dict[str, torch.Tensor]) -> torch.Tensor:
            x = tensors[REGISTRY_KEYS.X_KEY].to(members.device, torch.float64)
            return set_scores(x, members, counts)

        with torch.no_grad():  # each set's mean and spread over the cells
            total = square = torch.zeros(n_sets, dtype=torch.float64, device=members.device)
            for tensors in self._make_data_loader(adata=self.adata, indices=every, batch_size=max(batch_size, 1024)):
                s = scores(tensors)
                total, square = total + s.sum(0), square + (s**2).sum(0)
            mean = total / len(every)
            sd = (square / len(every) - mean**2).clamp_min(0).sqrt()
            sd = torch.where(sd > 0, sd, torch.ones_like(sd))  # a set silent in every cell scores 0 everywhere
        optimiser = torch.optim.Adam(module.encoder.parameters(), lr=GUIDED_CODE_LR)
        steps = 0
        while steps < GUIDED_CODE_STEPS:
            for tensors in self._make_data_loader(adata=self.adata, indices=every, batch_size=batch_size, shuffle=True):
                loc = module.inference(**module._get_inference_input(tensors))["qz"].loc[..., :n_sets]
                target = ((scores(tensors) - mean) / sd).to(loc.device, loc.dtype)
                optimiser.zero_grad()
                torch.nn.functional.mse_loss(loc, target).backward()
                optimiser.step()
                steps += 1
                if steps == GUIDED_CODE_STEPS:
                    break
        optimiser.zero_grad(set_to_none=True)
        return steps

    @property
    def guided_factors(self) -> list[str]:
        """The names of the factors guided by a gene set (the first ones), in the order of :attr:`gene_sets_`."""
        return self.factor_names[: len(self.gene_sets_)]

    def guided_table(self, pip_threshold: float = 0.5, min_kept: int = MIN_KEPT) -> pd.DataFrame:
        """How far each guided factor went from its gene set: one row per set (:func:`scsparse.results.guided_table`).

        Columns: ``factor``, ``gene_set``, ``set_size`` (its genes in the data), ``n_set_genes_kept``,
        ``n_set_genes_dropped``, ``n_genes_added`` (genes outside the set in the programme), ``n_genes``,
        ``retention`` (share of the set kept), ``share_in_set`` (share of the programme inside the set), ``jaccard``
        (the fidelity score: 1 when the programme is the set), ``status`` (``"kept"``; ``"extended"`` when it kept at
        least half of its set but most of its programme is outside it; ``"departed"`` when it kept under half of its
        set and most of its programme is outside it; ``"not supported"`` when fewer than ``min_kept`` set genes are
        kept; ``"switched off"`` when the data keep no gene), and the genes kept, dropped and added.

        Parameters
        ----------
        pip_threshold
            A gene is in a programme when ``p* > pip_threshold``.
        min_kept
            The fewest set genes a factor keeps for its set to count as supported.

        Raises
        ------
        InvalidInputError
            The model has no guided factor (built without ``gene_sets``).

        Examples
        --------
        >>> model = scsparse.model.SparseVAE(adata, n_latent=10, gene_sets="hallmark_human")  # doctest: +SKIP
        >>> model.train(max_epochs=100)  # doctest: +SKIP
        >>> model.guided_table()[["gene_set", "status", "jaccard", "n_genes_added"]]  # doctest: +SKIP
        """
        check_pip_threshold(pip_threshold)
        if not self.gene_sets_:
            raise InvalidInputError(
                "The model has no guided factor: build it with gene_sets= (a dict, a GMT file or a library name)."
            )
        check_integer("min_kept", min_kept, fix="The fewest set genes kept for a supported set (default 3).")
        return guided_table(self.gene_sets_, self.get_inclusion_probabilities(), pip_threshold, min_kept)

    def _guided_results(self, pip_threshold: float) -> dict[str, Any]:
        """``uns`` entries of a guided fit: :meth:`guided_table` (its set genes kept and dropped are the sets' genes
        in the data); nothing when not guided.
        """
        if not self.gene_sets_:
            return {}
        return {"guided_factors": self.guided_table(pip_threshold)}
