"""The figures the README and the documentation's index quote under "What to expect", and the default fit's time
wherever it is quoted, against the records they cite: the stability record's tables
(``docs/benchmarks/stability.md``), the peers record (``docs/benchmarks/peers-record/results.csv``), the speed page
and the demo's settings. Two pages cannot drift apart: each quotes the record, not the other page.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from scsparse import _demo

REPO = Path(__file__).resolve().parents[2]
PAGES = {"README.md": REPO / "README.md", "docs/index.md": REPO / "docs" / "index.md"}
STABILITY = REPO / "docs" / "benchmarks" / "stability.md"
SPEED = REPO / "docs" / "benchmarks" / "speed.md"
RESULTS = REPO / "docs" / "benchmarks" / "peers-record" / "results.csv"
NUMBER = r"\d[\d,]*(?:\.\d+)?"


def flat(text: str) -> str:
    """``text`` with every run of white space one space (sentences wrap across lines)."""
    return re.sub(r"\s+", " ", text)


def what_to_expect(path: Path) -> str:
    """The "What to expect" section of a page, flattened."""
    text = path.read_text(encoding="utf-8")
    match = re.search(r"^## What to expect\n(.*?)(?=^## )", text, flags=re.S | re.M)
    assert match, f"{path.name} has no '## What to expect' section"
    return flat(match.group(1))


def find(pattern: str, text: str) -> tuple[str, ...]:
    match = re.search(pattern, text)
    assert match, f"not quoted as expected: {pattern!r}"
    return match.groups()


def num(value: str) -> float:
    return float(value.replace(",", ""))


def table(text: str, header: str) -> list[list[str]]:
    """The rows (lists of cells) of the first markdown table whose header line starts with ``| header``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {header}"))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def mean_sd(cell: str) -> tuple[float, float]:
    mean, sd = find(rf"({NUMBER}) ± ({NUMBER})", cell)
    return num(mean), num(sd)


@pytest.fixture(scope="module")
def stability() -> str:
    return STABILITY.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def kang() -> pd.DataFrame:
    df = pd.read_csv(RESULTS)
    return df[(df["dataset"] == "kang") & (df["status"] == "ok")]


@pytest.fixture(scope="module", params=sorted(PAGES))
def page(request) -> str:
    return what_to_expect(PAGES[request.param])


def test_both_pages_quote_the_same_figures():
    figures = {name: re.findall(NUMBER, what_to_expect(path)) for name, path in PAGES.items()}
    assert figures["README.md"] == figures["docs/index.md"]


def test_seed_agreement_is_the_stability_records(page, stability):
    row = next(r for r in table(stability, "fits | jaccard") if r[0].startswith("default, seeds 0-5"))
    jaccard, top10 = mean_sd(row[1]), mean_sd(row[2])
    assert tuple(map(num, find(rf"matched Jaccard index ({NUMBER}) ± ({NUMBER})", page))) == jaccard
    assert tuple(map(num, find(rf"10 strongest genes \(({NUMBER}) ± ({NUMBER})\)", page))) == top10
    # "about a quarter" and "3 of its 10 strongest genes" are the plain words for those means
    assert round(jaccard[0] * 4) == 1 and "about a quarter" in page
    assert round(top10[0] * 10) == int(find(r"and (\d+) of its 10 strongest genes", page)[0])


def test_every_data_set_of_the_targets_table(page, stability):
    targets = next(r for r in table(stability, "target |") if r[0].startswith("default single fit: programmes"))
    values = [num(find(rf"not met: ({NUMBER}) ±", cell)[0]) for cell in targets[1:]]
    lo, hi = map(num, find(rf"give the same picture \(({NUMBER})-({NUMBER})\)", page))
    assert (lo, hi) == (min(values), max(values))
    # the targets table has six columns: five data sets and Kang again as two studies
    assert len(values) == 6 and "All five data sets measured, and Kang again as two studies" in page
    assert num(find(rf"short of the ({NUMBER}) the project aims for", page)[0]) == num(
        find(rf"programmes \(Jaccard\) >= ({NUMBER})", targets[0])[0]
    )


def test_factor_count_is_the_records(page, kang, stability):
    single = kang[kang["method"] == "SparseVAE"]["factors_kept"]
    lo, hi = map(int, find(r"numbers of factors \((\d+)-(\d+) of 20\)", page))
    assert (lo, hi) == (int(single.min()), int(single.max()))
    assert f"{lo}-{hi} active factors" in flat(stability)


def test_consensus_figures_are_the_records(page, kang, stability):
    halves = table(stability, "fits | R | same cells: programmes (Jaccard)")
    single = halves[0]
    assert single[:2] == ["single fits", "1"]
    pooled = halves[1:]
    assert pooled[0][0] == "pooled consensus" and all(r[0] in ("", "pooled consensus") for r in pooled)
    by_r = {r[1]: r for r in pooled}
    ten, single_across = find(
        rf"reach ({NUMBER}) on the same index read by factor \(one pair\), against ({NUMBER} ± {NUMBER})", page
    )
    assert (num(ten), single_across) == (num(by_r["10"][3]), single[3])
    assert find(rf"With 5 restarts on each set they reach ({NUMBER} ± {NUMBER}): a tie", page)[0] == by_r["5"][3]
    # the ties are ties: the mean ± sd ranges of consensus and single fits overlap
    for consensus, one in ((by_r["5"][3], single[3]), (by_r["5"][2], single[2])):
        (m, sd), (m1, sd1) = mean_sd(consensus), mean_sd(one)
        assert m - sd < m1 + sd1
    same = find(rf"different seeds agree at ({NUMBER} ± {NUMBER}), against ({NUMBER} ± {NUMBER}) for two single", page)
    assert same == (by_r["5"][2], single[2])
    kept = find(r"\((\d+) of 20 with 10 restarts on those cells\)", page)[0]
    assert kept == by_r["10"][-1]
    # single fits on all the cells: the default's row of the Kang record
    targets = next(r for r in table(stability, "target |") if r[0].startswith("default single fit: programmes"))
    by_factor = find(rf"({NUMBER} ± {NUMBER}) \(by factor, seeds 0-9\)", targets[1])[0]
    assert find(rf"single fits read by factor agree at ({NUMBER} ± {NUMBER})\)", page)[0] == by_factor
    cnmf = kang[kang["method"] == "cNMF"]["stability"]
    assert find(rf"cNMF's consensus agrees with itself at ({NUMBER}) over seeds", page)[0] == f"{cnmf.mean():.3f}"
    refit, single_nll = find(rf"held-out NLL ({NUMBER}) per cell against ({NUMBER}) for a single fit", page)
    assert f"{refit} per cell against {single_nll} for the single fit" in flat(stability)
    # cNMF and single fits on two random halves of all the cells: the record's resampling table, other half
    resampled = {r[0]: r for r in table(stability, "method | same cells: Jaccard | other half: Jaccard")}
    quoted = find(rf"share ({NUMBER} ± {NUMBER}) of their genes with the other half's, a tie with single SparseVAE "
                  rf"fits \(({NUMBER} ± {NUMBER})\)", page)  # fmt: skip
    assert quoted == (resampled["cNMF"][2], resampled["SparseVAE, single fits"][2])
    (m, sd), (m1, sd1) = mean_sd(quoted[0]), mean_sd(quoted[1])
    assert m - sd <= m1 + sd1 and m1 - sd1 <= m + sd  # a tie: the ranges overlap, the rule the pages state


def test_consensus_figures_are_one_sentence_each(page):
    """The consensus's figures sit in one sentence each, so that a redesign replaces them sentence by sentence."""
    bullet = next(b for b in page.split(" - ") if "One pair of consensus fits of 10 restarts" in b)
    sentences = re.split(r"(?<=[.)])\s+(?=[A-Z])", bullet)
    topics = (
        "(one pair)",
        "With 5 restarts",
        "agree at",
        "agrees with itself",
        "halves of the Kang cells",
        "restarts on those cells",
        "costs R fits",
    )
    for topic in topics:
        assert sum(topic in s for s in sentences) == 1, topic


def default_fit_times() -> dict[int, tuple[float, int]]:
    """The speed record's default Kang fit: torch threads -> (seconds, epochs)."""
    section = flat(SPEED.read_text("utf-8").split("## A default fit, one and two threads")[1].split("\n## ")[0])
    rows = re.findall(rf"\| (\d) \| ({NUMBER}) \| (\d+) \| 9 \|", section)
    assert len(rows) == 2, rows
    return {int(t): (num(s), int(e)) for t, s, e in rows}


def test_default_fit_time_is_the_speed_records(page, kang):
    times = default_fit_times()
    one, two = round(times[1][0]), round(times[2][0])
    quoted = find(
        rf"took ({NUMBER}) s, about (\d+) minutes, on one thread of a 2-vCPU Intel Xeon virtual machine .*? and "
        rf"({NUMBER}) s on two threads of the same machine \(seed 0, settled after (\d+) and (\d+) epochs\)",
        page,
    )
    assert tuple(int(num(q)) for q in quoted) == (one, round(one / 60), two, times[1][1], times[2][1])
    # the spread over seeds: the epochs the peers record's three fits settled after
    single = kang[kang["method"] == "SparseVAE"]
    assert len(single) == 3
    spread = find(r"The time moves with the epochs a fit needs to settle, (\d+)-(\d+) over three seeds", page)
    assert tuple(map(int, spread)) == (int(single["epochs"].min()), int(single["epochs"].max()))
    assert "Intel(R) Xeon(R)" in flat(SPEED.read_text("utf-8"))


def test_fit_time_is_the_same_wherever_it_is_quoted():
    seconds = round(default_fit_times()[1][0])
    minutes = round(seconds / 60)
    texts = {
        "README.md": flat((REPO / "README.md").read_text(encoding="utf-8")),
        "docs/index.md": flat((REPO / "docs" / "index.md").read_text(encoding="utf-8")),
        "docs/get-started.md": flat((REPO / "docs" / "get-started.md").read_text(encoding="utf-8")),
    }
    notebook = json.loads((REPO / "tutorials" / "quickstart.ipynb").read_text(encoding="utf-8"))
    texts["tutorials/quickstart.ipynb"] = flat(
        " ".join("".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "markdown")
    )
    quoted = 0
    for name, text in texts.items():
        for value in re.findall(r"about (\d+)(?: minutes)?,? on one (?:CPU )?thread", text):
            assert int(value) == minutes, name
            quoted += 1
        for value in re.findall(rf"took ({NUMBER}) s, about", text):
            assert num(value) == seconds, name
            quoted += 1
    assert quoted >= 6  # the captions, get-started and the tutorial quote it too


def test_gpu_time_is_the_speed_records(page):
    epochs, seconds = find(r"On one NVIDIA H100, (\d+) epochs on the same cells took (\d+) s", page)
    assert f"trained {epochs} epochs on the embedded Kang data in {seconds} s" in flat(SPEED.read_text("utf-8"))


def test_the_demo_is_named_with_its_settings(page, kang):
    epochs, hidden = map(int, find(r"`make demo` is a short preview\*?\*?:? (\d+) epochs at (\d+) hidden units", page))
    assert (epochs, hidden) == (_demo.DEFAULT_MAX_EPOCHS, _demo.DEFAULT_N_HIDDEN)
    factors = kang[kang["method"] == "SparseVAE"]["factors_kept"]
    for path in PAGES.values():  # and in the caption of its figure, beside a default fit's factors
        caption = flat(path.read_text(encoding="utf-8").split("## What to expect")[0])
        assert f"{epochs} epochs at {hidden} hidden units" in caption
        assert f"keeps {int(factors.min())}-{int(factors.max())} factors" in caption


def test_demo_time_is_the_speed_records(page):
    seconds = find(rf"its fit and report took ({NUMBER}) s on two threads", page)[0]
    record = flat(SPEED.read_text("utf-8"))
    assert f"`scsparse demo` (60 epochs at 64 hidden units, a preview; 8 active factors) took {seconds} s" in record
    two_threads = default_fit_times()[2][0]
    assert find(rf"against ({NUMBER}) s for a default fit's training alone", page)[0] == f"{two_threads:.0f}"


def test_settle_ranges_in_the_settings_guide_are_the_peers_records():
    df = pd.read_csv(RESULTS)
    single = df[(df["method"] == "SparseVAE") & (df["status"] == "ok")]
    text = flat((REPO / "docs" / "user-guide" / "settings.md").read_text(encoding="utf-8"))
    quoted = find(r"settled after (\d+)-(\d+) epochs on Kang, (\d+)-(\d+) on PBMC 3k and (\d+)-(\d+) on the PBMC", text)
    expected = []
    for dataset in ("kang", "pbmc3k", "pbmc_3batch"):
        epochs = single[single["dataset"] == dataset]["epochs"]
        expected += [int(epochs.min()), int(epochs.max())]
    assert list(map(int, quoted)) == expected


def python_block(text: str, after: str) -> str:
    section = text[text.index(after) :]
    return re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)


def test_one_quick_start():
    readme = python_block((REPO / "README.md").read_text(encoding="utf-8"), "## Quick start")
    started = python_block((REPO / "docs" / "get-started.md").read_text(encoding="utf-8"), "## Quick start")
    notebook = json.loads((REPO / "tutorials" / "quickstart.ipynb").read_text(encoding="utf-8"))
    cells = ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "markdown"]
    tutorial = python_block(next(c for c in cells if "```python" in c), "```python")
    assert readme == started == tutorial
    assert "model.train()" in readme  # the defaults: no max_epochs, whose quarter is the KL warm-up
