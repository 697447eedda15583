"""Plots on AnnData (scanpy style) that read the results written by :func:`scsparse.tl.sparse_vae`.

- :func:`loadings_heatmap` — loadings ``W`` (or inclusion probabilities ``p*``) of each factor's top genes;
- :func:`factor_embedding` — each factor's activity on a UMAP (or any other embedding).

All take ``key=`` (the ``key_added`` of the fit), ``show=``, ``save=`` (a path; dpi 150) and ``ax=``, and
return the axes when ``show=False``.
"""

from ._embedding import factor_embedding
from ._loadings import MissingResultsError, loadings_heatmap, top_genes_per_factor

__all__ = ["MissingResultsError", "factor_embedding", "loadings_heatmap", "top_genes_per_factor"]
