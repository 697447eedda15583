"""tl.programme_genes (the lists that tl.enrich tests) and tl.enrich_gene_lists (the same test on any gene lists)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

import scsparse

_spec = importlib.util.spec_from_file_location("planted", Path(__file__).with_name("test_enrich.py"))
planted = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(planted)


def test_programme_genes_are_the_lists_enrich_tests():
    adata = planted.planted_adata()
    progs = scsparse.tl.programme_genes(adata, key=planted.KEY)
    by = {(r.factor, r.direction): r for r in progs.itertuples()}
    assert set(by) == {("factor_0", "positive"), ("factor_0", "negative"), ("factor_1", "positive")}
    assert by["factor_0", "positive"].genes == planted.UP  # strongest |w| first; direction from the data
    assert by["factor_0", "negative"].genes == planted.DN
    assert by["factor_1", "positive"].size == 10 and by["factor_1", "positive"].selection == "p* > 0.5"
    top = scsparse.tl.programme_genes(adata, key=planted.KEY, n_top=3, direction="negative")
    assert top["genes"].tolist() == [planted.DN[:3]]


def test_enrich_gene_lists_matches_enrich_on_the_same_programmes():
    adata = planted.planted_adata()
    sets = planted.planted_sets()
    scsparse.tl.enrich(adata, sets, key=planted.KEY, min_size=3)
    ours = adata.uns[f"{planted.KEY}_enrichment"]
    progs = scsparse.tl.programme_genes(adata, key=planted.KEY)
    lists = {f"{r.factor}{'+' if r.direction == 'positive' else '-'}": r.genes for r in progs.itertuples()}
    theirs = scsparse.tl.enrich_gene_lists(lists, sets, background=adata.var_names, min_size=3)
    cols = ["factor", "direction", "term", "overlap", "programme_size", "p", "p_adj", "p_adj_all", "genes"]
    assert theirs[cols].equals(ours[cols])
    assert set(theirs["selection"]) == {"given list"}


def test_enrich_gene_lists_errors():
    sets = planted.planted_sets()
    with pytest.raises(ValueError, match="not in background"):
        scsparse.tl.enrich_gene_lists({"a": ["UP0", "ABSENT"]}, sets, background=planted.GENES)
    with pytest.raises(ValueError, match="is empty"):
        scsparse.tl.enrich_gene_lists({"a": []}, sets, background=planted.GENES)
    with pytest.raises(ValueError, match="duplicate"):
        scsparse.tl.enrich_gene_lists({"a": ["UP0"]}, sets, background=["UP0", "UP0"])
    with pytest.raises(ValueError, match="min_size"):
        scsparse.tl.enrich_gene_lists({"a": ["UP0"]}, sets, background=planted.GENES, min_size=0)
