"""Tests of the MovieLens loader: both file layouts, the paper's filtering, clear errors, the real files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from scsparse.generic.datasets import MovieLensData, binarise_ratings, load_movielens, read_movielens

# user -> {movie: rating}; users 1-3 have > 3 ratings, user 4 has 3 (dropped with min_user_ratings=3).
RATINGS = {
    1: {10: 5.0, 20: 4.0, 30: 1.0, 40: 2.0},
    2: {10: 4.5, 20: 2.0, 30: 3.0, 50: 5.0},
    3: {10: 3.0, 20: 4.0, 30: 2.5, 40: 4.0, 60: 5.0},
    4: {10: 5.0, 20: 5.0, 30: 5.0},
}
TITLES = {10: "Café Society (1995)", 20: "Alien (1979)", 30: "Heat (1995)", 40: "Fargo (1996)", 50: "Up (2009)"}


def _rows() -> list[tuple[int, int, float, int]]:
    return [(u, m, r, 900000000 + i) for i, (u, d) in enumerate(RATINGS.items()) for m, r in d.items()]


@pytest.fixture
def csv_dir(tmp_path: Path) -> Path:
    """An ml-latest-small style folder (ratings.csv, movies.csv, UTF-8)."""
    pd.DataFrame(_rows(), columns=["userId", "movieId", "rating", "timestamp"]).to_csv(
        tmp_path / "ratings.csv", index=False
    )
    movies = pd.DataFrame({"movieId": list(TITLES), "title": list(TITLES.values()), "genres": "Drama"})
    movies.to_csv(tmp_path / "movies.csv", index=False)
    return tmp_path


@pytest.fixture
def ml100k_dir(tmp_path: Path) -> Path:
    """An ml-100k style folder (u.data tab-separated, u.item |-separated latin-1)."""
    lines = [f"{u}\t{m}\t{int(r)}\t{t}" for u, m, r, t in _rows()]
    (tmp_path / "u.data").write_text("\n".join(lines) + "\n", encoding="ascii")
    items = [f"{m}|{t}|01-Jan-1995||http://x|0|1|0" for m, t in TITLES.items()]
    (tmp_path / "u.item").write_bytes(("\n".join(items) + "\n").encode("latin-1"))
    return tmp_path


def test_read_csv_layout(csv_dir: Path) -> None:
    ratings, titles = read_movielens(csv_dir)
    assert list(ratings.columns) == ["user", "movie", "rating"]
    assert len(ratings) == sum(len(d) for d in RATINGS.values())
    assert ratings["rating"].dtype == np.float64
    assert titles[10] == "Café Society (1995)"


def test_read_ml100k_layout_latin1(ml100k_dir: Path) -> None:
    ratings, titles = read_movielens(ml100k_dir)
    assert len(ratings) == sum(len(d) for d in RATINGS.values())
    assert ratings.loc[(ratings["user"] == 3) & (ratings["movie"] == 60), "rating"].item() == 5.0
    assert titles[10] == "Café Society (1995)"  # decoded from latin-1, not mangled


def test_binarise_filters_users_and_keeps_top_movies(csv_dir: Path) -> None:
    ratings, titles = read_movielens(csv_dir)
    data = binarise_ratings(ratings, titles, n_movies=3, min_user_ratings=3)
    assert isinstance(data, MovieLensData)
    # user 4 (3 ratings) is dropped; movie counts among users 1-3: 10:3, 20:3, 30:3, 40:2 -> top 3 by id tie-break
    assert data.user_ids.tolist() == [1, 2, 3]
    assert data.movie_ids.tolist() == [10, 20, 30]
    assert data.n_ratings.tolist() == [3, 3, 3]
    assert data.titles.tolist() == ["Café Society (1995)", "Alien (1979)", "Heat (1995)"]
    expected = np.array([[1, 1, 0], [1, 0, 0], [0, 1, 0]], dtype=np.float32)  # ratings >= 4 -> 1 (4.5 counts)
    np.testing.assert_array_equal(data.X, expected)
    assert data.X.dtype == np.float32 and data.shape == (3, 3)


def test_binarise_same_result_from_both_layouts(csv_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    other = tmp_path_factory.mktemp("ml100k")
    lines = [f"{u}\t{m}\t{r}\t{t}" for u, m, r, t in _rows()]
    (other / "u.data").write_text("\n".join(lines) + "\n")
    (other / "u.item").write_bytes(("\n".join(f"{m}|{t}|x" for m, t in TITLES.items()) + "\n").encode("latin-1"))
    a = binarise_ratings(*read_movielens(csv_dir), n_movies=4, min_user_ratings=2)
    b = binarise_ratings(*read_movielens(other), n_movies=4, min_user_ratings=2)
    np.testing.assert_array_equal(a.X, b.X)
    assert a.titles.tolist() == b.titles.tolist()


def test_binarise_drops_users_without_positives_and_names_missing_titles() -> None:
    r = pd.DataFrame({"user": [1, 1, 2, 2], "movie": [7, 8, 7, 8], "rating": [5.0, 1.0, 2.0, 3.0]})
    data = binarise_ratings(r, None, n_movies=2, min_user_ratings=1)
    assert data.user_ids.tolist() == [1]  # user 2 has no rating >= 4
    assert data.titles.tolist() == ["movie 7", "movie 8"]
    kept = binarise_ratings(r, None, n_movies=2, min_user_ratings=1, min_positives=0)
    assert kept.user_ids.tolist() == [1, 2]


def test_binarise_duplicate_pairs_count_once() -> None:
    r = pd.DataFrame({"user": [1, 1, 1], "movie": [7, 7, 8], "rating": [2.0, 4.0, 5.0]})
    data = binarise_ratings(r, None, n_movies=2, min_user_ratings=1)
    assert data.n_ratings.tolist() == [1, 1]
    np.testing.assert_array_equal(data.X, [[1.0, 1.0]])


def test_errors_name_the_problem(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="ratings.csv"):
        read_movielens(tmp_path)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_movielens(tmp_path / "nope")
    r = pd.DataFrame({"user": [1], "movie": [2], "rating": [5.0]})
    with pytest.raises(ValueError, match="min_user_ratings"):
        binarise_ratings(r, n_movies=1, min_user_ratings=20)
    with pytest.raises(ValueError, match="n_movies"):
        binarise_ratings(r, n_movies=0, min_user_ratings=0)
    with pytest.raises(ValueError, match="lacks the columns"):
        binarise_ratings(r.rename(columns={"rating": "stars"}))
    with pytest.raises(ValueError, match="Unknown MovieLens"):
        load_movielens("ml-25m")
    (tmp_path / "ratings.csv").write_text("user,item\n1,2\n")
    (tmp_path / "movies.csv").write_text("movieId,title\n2,x\n")
    with pytest.raises(ValueError, match="userId"):
        read_movielens(tmp_path)


@pytest.mark.parametrize(("name", "n_users"), [("movielens_small", 579), ("ml-100k", 910)])
def test_real_files(shared_data: Path, name: str, n_users: int) -> None:
    data = load_movielens(name, n_movies=100)
    assert data.shape == (n_users, 100)
    assert set(np.unique(data.X)) == {0.0, 1.0}
    assert (data.X.sum(1) >= 1).all()
    assert np.all(np.diff(data.n_ratings) <= 0)  # most rated first
    assert data.n_ratings.min() > 100
    assert any("Star Wars" in t for t in data.titles)
