"""Plots on AnnData (scanpy style) that read the results written by :func:`scsparse.tl.sparse_vae`.

- :func:`loadings_heatmap` — loadings ``W`` (or inclusion probabilities ``p*``) of each factor's top genes;
- :func:`top_genes` — each factor's top genes as bars, coloured by direction (up or down with the factor);
- :func:`factor_embedding` — each factor's activity on a UMAP (or any other embedding);
- :func:`factor_activity` — each factor's activity by group (violins or boxes);
- :func:`enrichment_dotplot` — gene-set enrichment of the programmes (from :func:`scsparse.tl.enrich`);
- :func:`factor_response` — decoded expression of a factor's genes along its traversal (from
  ``model.get_factor_response()``);
- :func:`guided_factors` — the genes each factor guided by a gene set kept of its set, dropped and added;
- :func:`training_history` — ELBO and number of active factors over the epochs;
- :func:`multistudy_overview` — shared vs study-specific factors of a multi-study fit;
- :func:`stability` — how much each factor's loadings agree across seeds (``loadings_corr``, from
  :func:`scsparse.tl.stability`);
  :func:`reproducibility` — the share of a consensus fit's restarts that hold each programme (its
  ``reproducibility``);
  :func:`consensus_selection` — how the consensus chose its programmes (the cut, the groups' restarts).

All take ``show=``, ``save=`` (a path; dpi 150) and ``ax=``, those reading a fit take ``key=`` (its
``key_added``), and all return the axes when ``show=False``.
"""

from scsparse.results import MissingResultsError

from ._activity import factor_activity
from ._embedding import factor_embedding
from ._enrichment import enrichment_dotplot
from ._guided import guided_factors
from ._history import training_history
from ._loadings import loadings_heatmap
from ._multistudy import multistudy_overview
from ._reproducibility import consensus_selection, reproducibility
from ._response import factor_response
from ._stability import stability
from ._top_genes import top_genes

__all__ = [
    "MissingResultsError",
    "consensus_selection",
    "enrichment_dotplot",
    "factor_activity",
    "factor_embedding",
    "factor_response",
    "guided_factors",
    "loadings_heatmap",
    "multistudy_overview",
    "reproducibility",
    "stability",
    "top_genes",
    "training_history",
]
