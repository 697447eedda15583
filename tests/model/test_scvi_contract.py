"""scvi-tools conventions: overridden methods keep their parents' parameters; set-up views work."""

from __future__ import annotations

import inspect

import pytest
from scvi.model.base import BaseModelClass, RNASeqMixin, VAEMixin

from scsparse.model import MultiStudySparseVAE, SparseVAE

PARENTS = (RNASeqMixin, VAEMixin, BaseModelClass)


def _overrides(cls: type) -> list[tuple[str, type]]:
    found = []
    for name in vars(cls):
        if name.startswith("_") or not callable(getattr(cls, name, None)):
            continue
        for parent in PARENTS:
            if name in vars(parent):
                found.append((name, parent))
                break
    return found


@pytest.mark.parametrize("cls", [SparseVAE, MultiStudySparseVAE])
def test_overridden_methods_keep_their_parents_parameters(cls):
    overrides = _overrides(cls)
    assert overrides, "expected overrides of scvi-tools methods"
    for name, parent in overrides:
        ours = inspect.signature(getattr(cls, name)).parameters
        theirs = inspect.signature(getattr(parent, name)).parameters
        positional = [p for p, v in theirs.items() if v.kind in (v.POSITIONAL_ONLY, v.POSITIONAL_OR_KEYWORD)]
        assert list(ours)[: len(positional)] == positional, (name, list(ours), positional)
        named = [p for p, v in theirs.items() if v.kind not in (v.VAR_POSITIONAL, v.VAR_KEYWORD)]
        assert set(named) <= set(ours), (name, set(named) - set(ours))


def test_view_anndata_setup(counts_adata, capsys):
    SparseVAE.setup_anndata(counts_adata, layer="counts", batch_key="batch")
    model = SparseVAE(counts_adata, n_latent=3, n_hidden=8)
    model.view_anndata_setup()
    out = capsys.readouterr().out
    assert "counts" in out and "batch" in out
