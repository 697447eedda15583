"""Multi-study count data from a sparse nonlinear factor model with shared and study-specific programmes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    import anndata

__all__ = ["NONLINEARITIES", "MultiStudyData", "simulate_multistudy"]


def _softplus(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, x)


#: The programme nonlinearities ``h(z)``, each with ``h(0) = 0`` (an inactive programme leaves the gene at its
#: baseline): ``"softplus"`` ``h(z) = softplus(1.5 z) - log 2`` (convex, switched on for positive z) and
#: ``"tanh"`` ``h(z) = 1.2 tanh(z)`` (saturating). Programme ``p`` (in the order shared, then the specific
#: programmes of each study) uses ``"softplus"`` for even ``p`` and ``"tanh"`` for odd ``p``.
NONLINEARITIES: dict[str, Any] = {
    "softplus": lambda z: _softplus(1.5 * z) - np.log(2.0),
    "tanh": lambda z: 1.2 * np.tanh(z),
}


@dataclass(frozen=True, eq=False)
class MultiStudyData:
    """Simulated multi-study counts with known shared and study-specific programmes.

    Column order of the programmes everywhere: the ``K_S`` shared programmes, then the ``K_m`` specific
    programmes of each study in the order of :attr:`studies` (the order of the columns of
    :class:`~scsparse.model.MultiStudySparseVAE`).

    Attributes
    ----------
    counts
        Counts, ``(n_cells, n_genes)`` float32 holding integers; cells of study 0 first, then study 1, ...
    study
        Study name of every cell, ``(n_cells,)``.
    studies
        Study names, in order.
    Z_shared
        True shared factors of every cell, ``(n_cells, K_S)``, i.i.d. N(0, 1).
    Z_specific
        ``{study: (n_cells_of_study, K_m)}``: the true specific factors of that study's cells (rows in the order
        of the study's cells); they are not defined (inactive) in the other studies.
    W_shared
        True amplitudes ``a_jk`` of the shared programmes on the genes' log-rates, ``(n_genes, K_S)``;
        zero where the programme does not drive the gene (with ``background_sd > 0``: the small background
        effects there).
    W_specific
        ``{study: (n_genes, K_m)}``: the same for each study's specific programmes.
    W_shared_support
        The genes each shared programme drives (its planted amplitudes), boolean ``(n_genes, K_S)``: ``W_shared
        != 0`` without a background.
    W_specific_support
        The same for each study's specific programmes, ``{study: (n_genes, K_m)}``.
    base
        Baseline log-rate of every gene (before the library size), ``(n_genes,)``.
    library
        Expected total count of every cell at baseline, ``(n_cells,)``.
    log_rate
        ``log E[x_ij]``, ``(n_cells, n_genes)``.
    nonlinearity
        Nonlinearity of every programme (keys of :data:`NONLINEARITIES`), in programme column order.
    gene_names, cell_names
        Names of the genes and cells.
    likelihood
        ``"nb"`` or ``"poisson"``.
    theta
        Inverse dispersion of the negative binomial (variance ``mu + mu^2 / theta``).
    seed
        Seed given to :func:`numpy.random.default_rng`.
    settings
        The arguments of :func:`simulate_multistudy`.
    """

    counts: np.ndarray
    study: np.ndarray
    studies: tuple[str, ...]
    Z_shared: np.ndarray
    Z_specific: dict[str, np.ndarray]
    W_shared: np.ndarray
    W_specific: dict[str, np.ndarray]
    W_shared_support: np.ndarray
    W_specific_support: dict[str, np.ndarray]
    base: np.ndarray
    library: np.ndarray
    log_rate: np.ndarray
    nonlinearity: tuple[str, ...]
    gene_names: tuple[str, ...]
    cell_names: tuple[str, ...]
    likelihood: str
    theta: float
    seed: int | None
    settings: dict[str, Any] = field(default_factory=dict)

    # ------------------------------------------------------------------ views
    @property
    def n_cells(self) -> int:
        """Number of cells."""
        return int(self.counts.shape[0])

    @property
    def n_genes(self) -> int:
        """Number of genes."""
        return int(self.counts.shape[1])

    @property
    def n_shared(self) -> int:
        """Number of shared programmes ``K_S``."""
        return int(self.W_shared_support.shape[1])

    @property
    def n_specific(self) -> dict[str, int]:
        """Number of specific programmes of each study, ``{study: K_m}``."""
        return {s: int(self.W_specific_support[s].shape[1]) for s in self.studies}

    @property
    def programme_names(self) -> list[str]:
        """``shared_0`` ... then ``<study>_0`` ... (the column names of :class:`MultiStudySparseVAE`)."""
        names = [f"shared_{k}" for k in range(self.n_shared)]
        for s in self.studies:
            names += [f"{s}_{k}" for k in range(self.n_specific[s])]
        return names

    def study_indices(self, study: str) -> np.ndarray:
        """Row indices of the cells of ``study``."""
        if study not in self.studies:
            raise KeyError(f"Unknown study {study!r}; the studies are {list(self.studies)}.")
        return np.flatnonzero(self.study == study)

    @property
    def W_support(self) -> np.ndarray:
        """All supports side by side, ``(n_genes, K_S + sum K_m)``, in programme column order."""
        return np.concatenate([self.W_shared_support, *(self.W_specific_support[s] for s in self.studies)], axis=1)

    @property
    def Z_specific_padded(self) -> np.ndarray:
        """Specific factors of all cells, ``(n_cells, sum K_m)``: each cell's own study's block, zeros elsewhere.

        The layout of ``MultiStudySparseVAE.get_latent_representation(kind="specific")``.
        """
        blocks = []
        for s in self.studies:
            block = np.zeros((self.n_cells, self.n_specific[s]))
            block[self.study_indices(s)] = self.Z_specific[s]
            blocks.append(block)
        return np.concatenate(blocks, axis=1)

    def anchor_genes(self) -> dict[str, np.ndarray]:
        """Anchor genes of every programme: indices of the genes driven by that programme alone."""
        support = self.W_support
        single = support.sum(1) == 1
        return {name: np.flatnonzero(single & support[:, p]) for p, name in enumerate(self.programme_names)}

    # ------------------------------------------------------------------ export
    def to_anndata(self) -> anndata.AnnData:
        """Wrap the data in an :class:`anndata.AnnData` (h5ad-writable).

        Returns
        -------
        anndata.AnnData
            ``X`` and ``layers["counts"]``: the counts (CSR float32, separate copies). ``obs``: ``study``
            (categorical, in :attr:`studies` order), ``library`` (expected baseline total count).
            ``obsm["Z_shared"]`` ``(n_cells, K_S)``; ``obsm["Z_specific"]`` ``(n_cells, sum K_m)`` with each
            cell's own study's block filled and zeros elsewhere (see :attr:`Z_specific_padded`).
            ``varm["W_shared_support"]``, ``varm["W_shared"]`` and, per study ``s``,
            ``varm[f"W_specific_support_{s}"]``, ``varm[f"W_specific_{s}"]``; ``var["base"]``,
            ``var["n_programmes"]`` and ``var["programmes"]`` (comma-separated programme names).
            ``uns["simulation"]``: the settings, studies, programme names and nonlinearities.
        """
        import anndata as ad
        import pandas as pd
        import scipy.sparse as sp

        obs = pd.DataFrame(index=pd.Index(list(self.cell_names)))
        obs["study"] = pd.Categorical(self.study, categories=list(self.studies))
        obs["library"] = self.library.astype(np.float64)
        var = pd.DataFrame(index=pd.Index(list(self.gene_names)))
        support = self.W_support
        names = np.asarray(self.programme_names, dtype=object)
        var["base"] = self.base
        var["n_programmes"] = support.sum(1).astype(np.int64)
        var["programmes"] = [",".join(names[row]) for row in support]
        counts = sp.csr_matrix(self.counts.astype(np.float32))
        adata = ad.AnnData(X=counts.copy(), obs=obs, var=var)
        adata.layers["counts"] = counts
        adata.obsm["Z_shared"] = self.Z_shared.copy()
        adata.obsm["Z_specific"] = self.Z_specific_padded
        adata.varm["W_shared_support"] = self.W_shared_support.copy()
        adata.varm["W_shared"] = self.W_shared.copy()
        for s in self.studies:
            adata.varm[f"W_specific_support_{s}"] = self.W_specific_support[s].copy()
            adata.varm[f"W_specific_{s}"] = self.W_specific[s].copy()
        adata.uns["simulation"] = {
            **{k: v for k, v in self.settings.items() if v is not None},
            "studies": np.asarray(self.studies, dtype=object),
            "programme_names": names,
            "nonlinearity": np.asarray(self.nonlinearity, dtype=object),
            "theta": float(self.theta),
        }
        return adata


def _layout(n_programmes: int, n_genes: int, genes_per_programme: int, overlap: int) -> list[np.ndarray]:
    """Gene indices of every programme: consecutive blocks, neighbours sharing ``overlap`` genes."""
    stride = genes_per_programme - overlap
    needed = n_programmes * stride + overlap
    if needed > n_genes:
        raise ValueError(
            f"{n_programmes} programmes of {genes_per_programme} genes with {overlap} shared between neighbours "
            f"need {needed} genes, but n_genes={n_genes}: raise n_genes or lower genes_per_programme."
        )
    return [np.arange(p * stride, p * stride + genes_per_programme) for p in range(n_programmes)]


def simulate_multistudy(
    n_studies: int = 3,
    n_cells_per_study: int | Mapping[str, int] = 500,
    n_genes: int = 200,
    n_shared: int = 5,
    n_specific: int = 2,
    genes_per_programme: int = 20,
    overlap: int = 2,
    library_size: float = 2000.0,
    amplitude: tuple[float, float] = (0.8, 1.3),
    likelihood: Literal["nb", "poisson"] = "nb",
    theta: float = 10.0,
    background_sd: float = 0.0,
    seed: int | None = 0,
) -> MultiStudyData:
    """Simulate counts of several studies from a sparse nonlinear model with shared and specific programmes.

    Every programme (``n_shared`` shared ones, used by all studies, and ``n_specific`` per study, active in
    that study only) drives its own set of ``genes_per_programme`` genes; neighbouring programmes share
    ``overlap`` genes, every other gene of a programme is an anchor gene (driven by it alone), and genes left
    over are driven by no programme.

    Parameters
    ----------
    n_studies
        Number of studies ``M`` (>= 2), named ``study0``, ``study1``, ...
    n_cells_per_study
        Cells per study: one number for all, or ``{study: n}`` for every study.
    n_genes
        Number of genes ``G``.
    n_shared
        Number of shared programmes ``K_S``.
    n_specific
        Number of specific programmes per study ``K_m``.
    genes_per_programme
        Genes driven by each programme.
    overlap
        Genes shared by each pair of neighbouring programmes (in the order shared, then each study's
        specific ones); at most ``(genes_per_programme - 2) // 2`` so every programme keeps >= 2 anchors.
    library_size
        Mean expected total count per cell at baseline.
    amplitude
        Range of the per-gene amplitudes ``|a_jp|`` (drawn uniformly; the sign is + or - with equal odds).
    likelihood
        ``"nb"`` (negative binomial with inverse dispersion ``theta``) or ``"poisson"``.
    theta
        Inverse dispersion of the negative binomial.
    background_sd
        Standard deviation of small effects that every programme has on every gene besides its planted ones (a
        dense background of small effects, ``N(0, background_sd^2)`` added to every amplitude; 0: none). The
        supports stay the planted genes. Drawn from a generator of their own, so data with and without the
        background share everything else (factors, baselines, libraries, planted amplitudes).
    seed
        Seed of :func:`numpy.random.default_rng`; the same arguments and seed give the same data.

    Returns
    -------
    MultiStudyData
        Counts, studies, true factors, amplitudes and supports (see :class:`MultiStudyData`);
        ``.to_anndata()`` gives an AnnData with counts in ``layers["counts"]`` and ``X``.

    Notes
    -----
    Exactly as simulated, with ``rng = numpy.random.default_rng(seed)`` and programmes ``p = 0 .. P-1`` in
    column order (shared first, then each study's specific ones), ``P = K_S + M K_m``:

    1. Programme ``p`` drives genes ``p * (genes_per_programme - overlap)`` up to
       ``+ genes_per_programme - 1``; ``h_p`` is ``"softplus"`` for even ``p`` and ``"tanh"`` for odd ``p``
       (see :data:`NONLINEARITIES`; both have ``h(0) = 0``).
    2. Amplitudes ``a_jp = s_jp u_jp`` for the genes ``j`` that programme ``p`` drives, ``u ~ U(amplitude)``,
       ``s = +-1``; ``W_shared``/``W_specific`` hold them, zero elsewhere.
    3. Gene baselines ``base_j ~ N(0, 0.5^2)``, shifted so ``sum_j exp(base_j) = 1`` (proportions).
    4. Cells: the shared factors ``z_i ~ N(0, I_{K_S})`` for every cell; the specific factors
       ``zeta_i ~ N(0, I_{K_m})`` for the cells of study ``m`` only; library ``l_i = library_size * exp(e_i -
       0.045)``, ``e_i ~ N(0, 0.3^2)``. With ``background_sd > 0``, every ``a_jp`` then gets ``+ N(0,
       background_sd^2)`` from ``numpy.random.default_rng([seed, 1])``.
    5. ``log mu_ij = log l_i + base_j + sum_{shared k} a_jk h_k(z_ik) + sum_{specific k of m(i)} a_jk
       h_k(zeta_ik)``.
    6. ``x_ij ~ NB(mean mu_ij, inverse dispersion theta)`` (Gamma-Poisson) or ``Poisson(mu_ij)``.

    Examples
    --------
    >>> from scsparse.data import simulate_multistudy
    >>> data = simulate_multistudy(n_cells_per_study=100, seed=1)
    >>> data.counts.shape, data.W_shared_support.shape, data.W_specific_support["study0"].shape
    ((300, 200), (200, 5), (200, 2))
    >>> adata = data.to_anndata()
    >>> adata.obs["study"].value_counts().to_dict()
    {'study0': 100, 'study1': 100, 'study2': 100}
    """
    if int(n_studies) != n_studies or n_studies < 2:
        raise ValueError(f"n_studies must be an integer >= 2, got {n_studies}")
    n_studies = int(n_studies)
    studies = tuple(f"study{m}" for m in range(n_studies))
    if isinstance(n_cells_per_study, Mapping):
        if set(n_cells_per_study) != set(studies):
            raise ValueError(f"n_cells_per_study must give a number for every study {list(studies)}")
        sizes = [int(n_cells_per_study[s]) for s in studies]
    else:
        sizes = [int(n_cells_per_study)] * n_studies
    if min(sizes) < 1:
        raise ValueError(f"every study needs at least one cell, got {sizes}")
    for name, value in (("n_genes", n_genes), ("genes_per_programme", genes_per_programme)):
        if int(value) != value or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value}")
    for name, value in (("n_shared", n_shared), ("n_specific", n_specific), ("overlap", overlap)):
        if int(value) != value or value < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {value}")
    if n_shared + n_specific == 0:
        raise ValueError("need at least one programme (n_shared + n_specific > 0)")
    if genes_per_programme - 2 * overlap < 2:
        raise ValueError(
            f"overlap={overlap} leaves fewer than 2 anchor genes in programmes of {genes_per_programme} genes; "
            "need genes_per_programme - 2 * overlap >= 2"
        )
    if likelihood not in ("nb", "poisson"):
        raise ValueError(f"likelihood must be 'nb' or 'poisson', got {likelihood!r}")
    if not (theta > 0 and np.isfinite(theta)):
        raise ValueError(f"theta must be positive and finite, got {theta}")
    if not (background_sd >= 0 and np.isfinite(background_sd)):
        raise ValueError(f"background_sd must be >= 0 and finite, got {background_sd}")
    if not (library_size > 0 and np.isfinite(library_size)):
        raise ValueError(f"library_size must be positive and finite, got {library_size}")
    lo, hi = (float(a) for a in amplitude)
    if not 0 < lo <= hi:
        raise ValueError(f"amplitude must be (low, high) with 0 < low <= high, got {amplitude}")

    n_programmes = n_shared + n_studies * n_specific
    blocks = _layout(n_programmes, int(n_genes), int(genes_per_programme), int(overlap))
    nonlin = tuple("softplus" if p % 2 == 0 else "tanh" for p in range(n_programmes))

    rng = np.random.default_rng(seed)
    A = np.zeros((n_genes, n_programmes))
    for p, genes in enumerate(blocks):
        A[genes, p] = rng.choice([-1.0, 1.0], size=genes.size) * rng.uniform(lo, hi, size=genes.size)
    support = A != 0
    base = rng.normal(0.0, 0.5, size=n_genes)
    base = base - np.log(np.exp(base).sum())

    n_cells = sum(sizes)
    study = np.repeat(np.asarray(studies, dtype=object), sizes)
    Z_shared = rng.standard_normal((n_cells, n_shared))
    Z_specific: dict[str, np.ndarray] = {}
    starts = np.concatenate([[0], np.cumsum(sizes)])
    for m, s in enumerate(studies):
        Z_specific[s] = rng.standard_normal((sizes[m], n_specific))
    library = library_size * np.exp(rng.normal(0.0, 0.3, size=n_cells) - 0.045)
    if background_sd > 0:
        background = np.random.default_rng(None if seed is None else [int(seed), 1])
        A = A + background.normal(0.0, background_sd, size=A.shape)

    effects = np.zeros((n_cells, n_genes))
    for k in range(n_shared):
        effects += NONLINEARITIES[nonlin[k]](Z_shared[:, k])[:, None] * A[:, k][None, :]
    for m, s in enumerate(studies):
        rows = slice(starts[m], starts[m + 1])
        for k in range(n_specific):
            p = n_shared + m * n_specific + k
            effects[rows] += NONLINEARITIES[nonlin[p]](Z_specific[s][:, k])[:, None] * A[:, p][None, :]
    log_rate = np.log(library)[:, None] + base[None, :] + effects
    mu = np.exp(log_rate)
    if likelihood == "nb":
        mu = rng.gamma(shape=theta, scale=mu / theta)
    counts = rng.poisson(mu).astype(np.float32)

    W_shared = A[:, :n_shared].copy()
    W_specific = {
        s: A[:, n_shared + m * n_specific : n_shared + (m + 1) * n_specific].copy() for m, s in enumerate(studies)
    }
    settings = {
        "n_studies": n_studies,
        "n_cells_per_study": sizes,
        "n_genes": int(n_genes),
        "n_shared": int(n_shared),
        "n_specific": int(n_specific),
        "genes_per_programme": int(genes_per_programme),
        "overlap": int(overlap),
        "library_size": float(library_size),
        "amplitude": [lo, hi],
        "likelihood": likelihood,
        "theta": float(theta),
        "background_sd": float(background_sd),
        "seed": None if seed is None else int(seed),
    }
    return MultiStudyData(
        counts=counts,
        study=study,
        studies=studies,
        Z_shared=Z_shared,
        Z_specific=Z_specific,
        W_shared=W_shared,
        W_specific=W_specific,
        W_shared_support=support[:, :n_shared].copy(),
        W_specific_support={
            s: support[:, n_shared + m * n_specific : n_shared + (m + 1) * n_specific].copy()
            for m, s in enumerate(studies)
        },
        base=base,
        library=library,
        log_rate=log_rate,
        nonlinearity=nonlin,
        gene_names=tuple(f"gene{j}" for j in range(n_genes)),
        cell_names=tuple(f"{study[i]}_cell{i}" for i in range(n_cells)),
        likelihood=likelihood,
        theta=float(theta),
        seed=None if seed is None else int(seed),
        settings=settings,
    )
