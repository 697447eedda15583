"""The glossary (``docs/user-guide/glossary.md``): reachable from the pages a newcomer reads first, defining the
terms those pages use, saying what the code computes, and quoting the stability target from its record.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from scsparse.generic.metrics import matched_programme_agreement

REPO = Path(__file__).resolve().parents[2]
GLOSSARY = REPO / "docs" / "user-guide" / "glossary.md"
STABILITY = REPO / "docs" / "benchmarks" / "stability.md"

# the terms README.md, docs/index.md and docs/get-started.md use before explaining them in full
TERMS = (
    "spike and slab",
    "$p^*$, posterior inclusion probability",
    "active factor",
    "anchor gene",
    "identifiable",
    "KL warm-up",
    "settled",
    "consensus fit",
    "matched Jaccard index",
    "10 strongest genes",
    "the 0.6 target",
)


def flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


@pytest.fixture(scope="module")
def glossary() -> str:
    return flat(GLOSSARY.read_text(encoding="utf-8"))


def entry(glossary: str, term: str) -> str:
    """The text of one entry, from its bold term to the next bold term."""
    match = re.search(rf"\*\*{re.escape(term)}[^*]*\*\*:(.*?)(?= \*\*|$)", glossary)
    assert match, f"the glossary has no entry for {term!r}"
    return match.group(1)


def test_every_term_has_an_entry(glossary):
    for term in TERMS:
        assert entry(glossary, term).strip()


def test_the_glossary_is_in_the_user_guide_and_linked_from_the_first_pages():
    user_guide = (REPO / "docs" / "user-guide" / "index.md").read_text(encoding="utf-8")
    toctree = re.search(r"```\{toctree\}(.*?)```", user_guide, flags=re.S).group(1)
    assert "glossary" in toctree.split()
    assert "docs/user-guide/glossary.md" in (REPO / "README.md").read_text(encoding="utf-8")
    for page in ("index.md", "get-started.md"):
        assert "user-guide/glossary" in (REPO / "docs" / page).read_text(encoding="utf-8"), page


def test_the_glossary_quotes_no_measurement(glossary):
    """Measured figures live in the records and the What-to-expect sections, so that no two pages can disagree."""
    assert "±" not in glossary
    assert not re.search(r"\d+ (?:s|min|minutes|epochs|cells)\b", glossary)


def test_the_target_is_the_stability_records(glossary):
    target = re.search(r"programmes \(Jaccard\) >= (\d\.\d+)", STABILITY.read_text(encoding="utf-8")).group(1)
    text = entry(glossary, "the 0.6 target")
    assert f"matched Jaccard index of at least {target} between two seeds" in text
    assert "No data set measured reaches it" in text


def test_the_matched_jaccard_index_is_what_the_code_computes(glossary):
    text = entry(glossary, "matched Jaccard index")
    assert "averaged over the larger number of programmes" in text and "without a partner counts 0" in text
    # two programmes of four genes sharing three, each holding three quarters of the other's genes: 0.6
    assert matched_programme_agreement([[0, 1, 2, 3]], [[1, 2, 3, 4]], n_genes=5) == pytest.approx(0.6)
    assert "each holds three quarters of the other's genes" in entry(glossary, "the 0.6 target")
    # a programme without a partner counts 0 in a mean over the larger count
    assert matched_programme_agreement([[0, 1, 2, 3], [5, 6]], [[1, 2, 3, 4]], n_genes=7) == pytest.approx(0.3)
