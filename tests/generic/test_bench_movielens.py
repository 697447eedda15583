"""Tests of the MovieLens benchmark: split, scoring pipeline, Table 1a / 3a reporting, the must-show verdict."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from scsparse.generic.benchmarks import BENCHMARKS
from scsparse.generic.benchmarks._movielens import _factors as ml_factors
from scsparse.generic.benchmarks._movielens import _run as ml
from scsparse.generic.benchmarks._movielens import _summary as ml_summary
from scsparse.generic.datasets import MovieLensData, split_rows

SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"


def _toy_data(name: str = "movielens_small", n_users: int = 90, n_movies: int = 16) -> MovieLensData:
    """Two taste groups, each liking its own half of the movies (plus noise)."""
    rng = np.random.default_rng(0)
    group = rng.integers(0, 2, n_users)
    like = np.zeros((n_users, n_movies))
    like[group == 0, : n_movies // 2] = 0.7
    like[group == 1, n_movies // 2 :] = 0.7
    X = (rng.random((n_users, n_movies)) < like + 0.05).astype(np.float32)
    X[X.sum(1) == 0, 0] = 1.0
    return MovieLensData(
        X=X,
        user_ids=np.arange(n_users),
        movie_ids=np.arange(n_movies) + 1,
        titles=np.array([f"Movie {j}" for j in range(n_movies)], dtype=object),
        name=name,
        n_ratings=np.arange(n_movies, 0, -1) + 100,
    )


def test_registered() -> None:
    assert "movielens" in BENCHMARKS
    assert BENCHMARKS["movielens"] is ml.run_movielens


def test_split_users_disjoint_and_reproducible() -> None:
    tr, te = split_rows(100, seed=3, unit="users")
    assert len(te) == 20 and len(tr) == 80
    assert not set(tr) & set(te)
    tr2, te2 = split_rows(100, seed=3, unit="users")
    np.testing.assert_array_equal(te, te2)
    assert not np.array_equal(te, split_rows(100, seed=4, unit="users")[1])
    with pytest.raises(ValueError, match="at least 2 users"):
        split_rows(1, seed=0, unit="users")


def test_factor_top_movies_orders_by_abs_weight_among_selected() -> None:
    W = np.array([[0.2, 0.0], [-0.9, 0.0], [0.5, 0.3], [0.01, 0.8]])
    pip = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.1, 1.0]])
    out = ml_factors.factor_top_movies(W, pip, ["a", "b", "c", "d"], [0, 1], n_top=2)
    assert out[0]["movies"] == ["b", "c"] and out[0]["n_selected"] == 3
    assert out[1]["movies"] == ["d", "c"]
    assert out[0]["weights"][0] == pytest.approx(-0.9)


def _fake_results(sv_nll: float) -> pd.DataFrame:
    rows = []
    for seed in (0, 1):
        for method, beta, nll in [
            ("SparseVAE", 1.0, sv_nll),
            ("VAE", 1.0, 30.0),
            ("beta-VAE", 2.0, 31.0),
            ("beta-VAE", 4.0, 33.0),
            ("NMF", math.nan, 32.0),
        ]:
            rows.append({"dataset": "d", "method": method, "beta": beta, "seed": seed, "heldout_nll": nll + 0.1 * seed})
    return pd.DataFrame(rows)


def test_claims_verdict_and_best_beta() -> None:
    met = "\n".join(ml_summary._claims(_fake_results(29.0)))
    assert "| met |" in met and "2/2 seeds" in met
    not_met = "\n".join(ml_summary._claims(_fake_results(30.5)))
    assert "not met" in not_met and "VAE 30.05" in not_met
    table, best = ml_summary.table_frame(_fake_results(29.0))
    assert best == {"d": 2.0}
    assert sorted(table.loc[table["method"] == "beta-VAE", "beta"].unique()) == [2.0]
    assert list(dict.fromkeys(table["method"])) == ["SparseVAE", "VAE", "beta-VAE", "NMF"]


def test_quick_pipeline_on_toy_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ml, "load_movielens", lambda name, n_movies: _toy_data(name, n_movies=n_movies))
    df = ml.run_movielens(tmp_path, seeds=2, quick=True, n_movies=16, verbose=False)
    assert list(df.columns) == list(ml.RESULT_COLUMNS)
    assert len(df) == 2 * len(ml.METHODS)  # one beta in quick mode
    assert set(df["method"]) == set(ml.METHODS)
    assert df["heldout_nll"].notna().all() and (df["heldout_nll"] > 0).all()
    assert df["recall_at_5"].between(0, 1).all() and df["ndcg_at_10"].between(0, 1).all()
    # every method of a seed sees the same split
    assert df.groupby("seed")["n_test"].nunique().eq(1).all()
    assert (df["n_train"] + df["n_test"] == 90).all()
    for name in ("results.csv", "summary.md", "factors.csv", "movielens.png"):
        assert (tmp_path / name).is_file(), name
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert "170.9" in summary and "Table 3a" in summary and "## Must show" in summary
    assert "met" in summary and "quick smoke run" in summary
    assert "## Provenance" in summary and "ML-25M" in summary
    assert "Paper's ranking numbers for the sparse VAE" in summary and "not reached" in summary
    assert pd.read_csv(tmp_path / "results.csv").shape == df.shape
    _assert_tables_well_formed(summary)


def test_runs_on_a_movielens_folder_of_ones_own(tmp_path: Path) -> None:
    """A path in ``datasets`` is read as an unpacked MovieLens folder (how a user runs the paper's ML-25M)."""
    toy = _toy_data(n_movies=24)
    folder = tmp_path / "ml-mine"
    folder.mkdir()
    users, movies = np.nonzero(np.ones_like(toy.X))  # every user rated every movie: 24 > 20 ratings each
    ratings = np.where(toy.X[users, movies] > 0, 5.0, 1.0)
    pd.DataFrame({"userId": users + 1, "movieId": movies + 1, "rating": ratings, "timestamp": 0}).to_csv(
        folder / "ratings.csv", index=False
    )
    pd.DataFrame({"movieId": np.arange(24) + 1, "title": [f"Film {j}" for j in range(24)], "genres": "Drama"}).to_csv(
        folder / "movies.csv", index=False
    )
    df = ml.run_movielens(
        tmp_path / "out", datasets=[str(folder)], seeds=1, quick=True, n_movies=16, methods=["NMF"], verbose=False
    )
    assert df["dataset"].unique().tolist() == ["ml-mine"]
    assert (df["n_train"] + df["n_test"] == 90).all()
    summary = (tmp_path / "out" / "summary.md").read_text(encoding="utf-8")
    assert "`ml-mine`: 90 users x 16 movies" in summary and "folders given by path" in summary
    assert "stand-ins" not in summary
    with pytest.raises(ValueError, match="neither a registry name .* nor an existing folder"):
        ml.run_movielens(tmp_path / "out2", datasets=[str(tmp_path / "ml-25m")], quick=True, verbose=False)


def _assert_tables_well_formed(markdown: str) -> None:
    """Every row of every markdown table has as many cells as its header (no stray '|' in a cell)."""
    header_bars = None
    for line in markdown.splitlines():
        if not line.startswith("|"):
            header_bars = None
            continue
        if header_bars is None:
            header_bars = line.count("|")
        assert line.count("|") == header_bars, line


def test_bad_options(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="methods"):
        ml.run_movielens(tmp_path, methods=["PCA"], verbose=False)
    with pytest.raises(ValueError, match="seeds"):
        ml.run_movielens(tmp_path, seeds=0, verbose=False)
    with pytest.raises(ValueError, match="Unknown method"):
        ml.build_model("PCA", None, 10, 0)  # type: ignore[arg-type]


def test_w_init_reaches_the_sparse_vae_and_the_summary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = ml.RunConfig(
        n_latent=3,
        n_hidden=8,
        n_layers=1,
        oivae_n_layers=1,
        lr=1e-3,
        epochs=1,
        batch_size=10,
        betas=(2.0,),
        n_samples=2,
        w_init=1.0,
    )
    model = ml.build_model("SparseVAE", cfg, n_features=6, seed=0)
    assert model.decoder_kwargs == {"w_init": 1.0}
    default = ml.build_model("SparseVAE", ml.RunConfig(**{**cfg.__dict__, "w_init": None}), n_features=6, seed=0)
    assert default.decoder_kwargs == {}
    model.fit(np.eye(6, dtype=np.float32)[np.arange(20) % 6] * 3)
    # every entry started near 1 (the initial noise is small; one epoch of lr 1e-3 moves it little)
    assert np.abs(model.loadings()).min() > 0.7
    monkeypatch.setattr(ml, "load_movielens", lambda name, n_movies: _toy_data(name, n_movies=n_movies))
    ml.run_movielens(tmp_path, seeds=1, quick=True, n_movies=16, verbose=False, methods=["SparseVAE"], w_init=1.0)
    assert "w_init = 1 for every entry" in (tmp_path / "summary.md").read_text(encoding="utf-8")
    with pytest.raises(ValueError, match="w_init must be a positive number"):
        ml.run_movielens(tmp_path, quick=True, verbose=False, w_init=0.0)


def test_quick_on_real_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"offline data copy not found at {SHARED_DATA}")
    monkeypatch.setenv("SCSPARSE_DATA_DIR", str(SHARED_DATA))
    monkeypatch.setenv("SCSPARSE_OFFLINE", "1")
    df = ml.run_movielens(tmp_path, seeds=1, quick=True, verbose=False)
    assert set(df["dataset"]) == {"movielens_small"}
    assert set(df["method"]) == set(ml.METHODS)
    assert (df["n_movies"] == 40).all() and (df["n_train"] + df["n_test"] == 150).all()
    factors = pd.read_csv(tmp_path / "factors.csv")
    assert list(factors.columns) == ["dataset", "factor", "selection", "n_selected", "top_movies", "weights", "pips"]
    assert len(factors) >= 1  # active factors, or every factor ranked by |w| when none is active


class _StubSparseVAE:
    """Just what ``describe_factors`` reads from a fitted sparse VAE."""

    def __init__(self, W: np.ndarray, pip: np.ndarray) -> None:
        self.W, self.pip = W, pip

    def loadings(self) -> np.ndarray:
        return self.W

    def inclusion_probabilities(self) -> np.ndarray:
        return self.pip

    def active_factors(self) -> np.ndarray:
        return np.flatnonzero((self.pip > 0.5).any(0))


def test_describe_factors_active_and_fallback() -> None:
    data = _toy_data(n_movies=4)
    W = np.array([[0.1, 0.9], [0.3, 0.0], [0.2, 0.8], [0.0, 0.1]])
    active = ml_factors.describe_factors(_StubSparseVAE(W, (np.abs(W) > 0.5).astype(float)), data)
    assert [f["factor"] for f in active] == [1] and active[0]["selection"] == "p* > 0.5"
    assert active[0]["movies"] == ["Movie 0", "Movie 2"] and active[0]["pips"] == [1.0, 1.0]
    none = ml_factors.describe_factors(_StubSparseVAE(W, np.zeros_like(W)), data)
    assert [f["factor"] for f in none] == [1, 0]  # by sum |w|
    assert none[0]["selection"].startswith("none active") and "|" not in none[0]["selection"]
    assert none[1]["movies"][:2] == ["Movie 1", "Movie 2"] and none[1]["n_selected"] == 0
