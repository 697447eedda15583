"""Tools on AnnData (scanpy style).

- :func:`sparse_vae` — fit a :class:`~scsparse.model.SparseVAE` and write factors, loadings and inclusion
  probabilities into the AnnData.
- :func:`multistudy_sparse_vae` — fit a :class:`~scsparse.model.MultiStudySparseVAE` and write shared and
  study-specific factors, masks and inclusion probabilities into the AnnData.
- :func:`result_keys` — the keys a fit writes for a given ``key_added``.
- :func:`top_genes` — tidy table of each factor's top genes, with ``p*``, anchor status and direction;
  :func:`factor_gene_correlation` — the data-defined direction of every gene in every factor.
- :func:`enrich` — gene-set enrichment (ORA or preranked GSEA) of each programme, up- and down-going genes
  separately; :func:`load_gene_sets`, :func:`read_gmt`, :func:`read_panglaodb`, :func:`read_cellmarker` — gene-set
  libraries (GMT, registry names, PanglaoDB, CellMarker); :func:`programme_genes` — the gene lists that
  :func:`enrich` tests; :func:`enrich_gene_lists` — the same test on any named gene lists (another method's
  programmes, marker lists).
- :func:`factor_association` — factor activity by group (effect size and tests).
- :func:`describe_factors` — what each factor is, one row per factor: genes up and down with it, best gene sets,
  the groups where it is highest and lowest; :func:`factor_report` says it in words (Markdown);
  :func:`short_term` — a gene-set name shortened for display.
- :func:`fit_report` — a fit's Markdown report: settings and provenance, active factors, diagnostics and what each
  factor is (used by ``scsparse demo`` and ``scsparse fit --figures``); :func:`diagnostics_report` — the
  diagnostics in words.
- :func:`factor_diagnostics` — programme size relative to the genes, best gene set, and flags for broad factors
  without any enriched gene set and for factors that overlap another one.
- :func:`stability` — how much each factor's loadings agree across seeds (``loadings_corr``).
- :func:`label_accuracy`, :func:`predict_labels` — how well factors (e.g. ``adata.obsm["X_sparsevae"]``) predict
  labels such as cell types: a logistic regression on held-out cells.

**What a tool returns** (scanpy's convention). A tool that fits a model (:func:`sparse_vae`,
:func:`multistudy_sparse_vae`) writes its results into the AnnData and returns the model. A tool that computes a table
to keep (:func:`enrich`, :func:`factor_association`, :func:`stability`) writes it to ``adata.uns[key_added]`` and
returns ``None``, or, with ``copy=True``, a copy of the AnnData holding it. The other functions read a fit and return
a table or text, writing nothing.

All of them read multi-study results too (:class:`~scsparse.model.MultiStudySparseVAE`): shared and study-specific
factors under their factor-table names, specific factors analysed within their own study's cells.
"""

from scsparse.data._genesets import (
    GENE_SET_LIBRARIES,
    GeneSetError,
    load_gene_sets,
    read_cellmarker,
    read_gmt,
    read_panglaodb,
    short_term,
)
from scsparse.results import OVERLAP_FRACTION, result_keys

from ._association import factor_association
from ._describe import describe_factors, factor_report
from ._diagnostics import BROAD_FRACTION, STUDY_SHIFT, factor_diagnostics
from ._enrich import DEFAULT_N_TOP, bh_adjust, enrich, enrich_gene_lists, programme_genes
from ._labels import label_accuracy, predict_labels
from ._report import diagnostics_report, fit_report
from ._sparse_vae import multistudy_sparse_vae, sparse_vae
from ._stability import stability
from ._top_genes import factor_gene_correlation, top_genes

__all__ = [
    "BROAD_FRACTION",
    "DEFAULT_N_TOP",
    "GENE_SET_LIBRARIES",
    "GeneSetError",
    "OVERLAP_FRACTION",
    "STUDY_SHIFT",
    "bh_adjust",
    "describe_factors",
    "diagnostics_report",
    "enrich",
    "enrich_gene_lists",
    "factor_association",
    "factor_diagnostics",
    "factor_gene_correlation",
    "factor_report",
    "fit_report",
    "label_accuracy",
    "load_gene_sets",
    "multistudy_sparse_vae",
    "predict_labels",
    "programme_genes",
    "read_cellmarker",
    "read_gmt",
    "read_panglaodb",
    "result_keys",
    "short_term",
    "sparse_vae",
    "stability",
    "top_genes",
]
