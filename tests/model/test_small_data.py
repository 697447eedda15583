"""A few hundred cells, as a user tries the tool first: the defaults find the strong programmes."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import scsparse
from scsparse.model import SparseVAE

#: Interferon-stimulated genes of the Kang data's IFN-beta response.
INTERFERON_GENES = {"ISG15", "IFIT1", "IFIT2", "IFIT3", "IFI6", "MX1", "LY6E", "ISG20", "OAS1", "IFITM3", "RSAD2"}


@pytest.mark.slow
def test_defaults_on_500_kang_cells_keep_factors_with_the_interferon_programme():
    full = scsparse.data.kang_pbmc()
    cells = np.sort(np.random.default_rng(0).choice(full.n_obs, 500, replace=False))
    adata = full[cells].copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # genes no sampled cell expresses are kept, with a warning
        SparseVAE.setup_anndata(adata, layer="counts")
        model = SparseVAE(adata, seed=0)
        model.train()  # the defaults: epochs from the number of cells, stopped once settled
    active = model.active_factors()
    top = model.get_top_genes(n_top=10)
    interferon = [f for f in active if len(set(top[f]) & INTERFERON_GENES) >= 3]
    assert len(active) >= 3, active
    assert interferon, {f: top[f] for f in active}
