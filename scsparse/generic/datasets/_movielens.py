"""MovieLens ratings as a binary users x movies matrix (the MovieLens experiment of Moran et al. 2022).

The paper (Appendix C.1) follows Liang et al. (2018): ratings of four or more become 1, the rest 0; users
who rated more than 20 movies are kept; the G = 300 most rated movies are the features (on ML-25M,
subsampled to 100,000 users). ML-25M is not available offline; the registry's stand-ins are
``movielens_small`` (ml-latest-small, 610 users) and ``movielens_100k`` (ml-100k, 943 users). With a few
hundred users, 300 movies would leave two or three users per feature (the paper had about 330), so the
default here keeps the :data:`DEFAULT_N_MOVIES` = 100 most rated movies (each rated by at least 112 of
the kept users in ml-latest-small and 215 in ml-100k).

Two file layouts are read:

- ml-latest-small / ml-20m / ml-25m: ``ratings.csv`` (``userId,movieId,rating,timestamp``) and
  ``movies.csv`` (``movieId,title,genres``), UTF-8 with a header;
- ml-100k: ``u.data`` (``user item rating timestamp``, tab-separated, no header) and ``u.item``
  (``|``-separated, latin-1: id, title, release date, ...).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from scsparse.data import fetch

__all__ = [
    "DEFAULT_N_MOVIES",
    "MOVIELENS_DATASETS",
    "MovieLensData",
    "binarise_ratings",
    "describe_movielens",
    "load_movielens",
    "read_movielens",
    "subsample_users",
]

#: Movies kept by default (the paper kept 300 of ML-25M's; see the module docstring).
DEFAULT_N_MOVIES = 100
#: Users need strictly more ratings than this (the paper: "users who have rated more than 20 movies").
DEFAULT_MIN_USER_RATINGS = 20
#: Ratings at or above this become 1 (Liang et al. 2018; Moran et al. 2022).
DEFAULT_THRESHOLD = 4.0

#: Registry names of the stand-in data sets, with the accepted aliases.
MOVIELENS_DATASETS: dict[str, str] = {
    "movielens_small": "movielens_small",
    "ml-latest-small": "movielens_small",
    "small": "movielens_small",
    "movielens_100k": "movielens_100k",
    "ml-100k": "movielens_100k",
    "100k": "movielens_100k",
}

_CSV_FILES = ("ratings.csv", "movies.csv")
_ML100K_FILES = ("u.data", "u.item")


@dataclass(frozen=True, eq=False)
class MovieLensData:
    """A binary users x movies matrix with the movies' titles.

    Attributes
    ----------
    X
        ``(n_users, n_movies)`` float32 array of 0/1: 1 when the user rated the movie at or above the
        threshold. Columns are ordered by decreasing number of ratings (most rated first).
    user_ids
        Source user id of every row.
    movie_ids
        Source movie id of every column.
    titles
        Title of every column (``str``), as in the source files.
    name
        Data set name (registry name, or the folder it was read from).
    n_ratings
        Number of ratings (of any value) of every kept movie among the kept users.
    """

    X: np.ndarray
    user_ids: np.ndarray
    movie_ids: np.ndarray
    titles: np.ndarray
    name: str
    n_ratings: np.ndarray

    @property
    def shape(self) -> tuple[int, int]:
        """``(n_users, n_movies)``."""
        return (int(self.X.shape[0]), int(self.X.shape[1]))


def _layout(directory: Path) -> str:
    if all((directory / f).is_file() for f in _CSV_FILES):
        return "csv"
    if all((directory / f).is_file() for f in _ML100K_FILES):
        return "ml100k"
    raise FileNotFoundError(
        f"{directory} holds neither {' + '.join(_CSV_FILES)} (ml-latest-small / ml-25m layout) nor "
        f"{' + '.join(_ML100K_FILES)} (ml-100k layout). Point read_movielens at the unpacked MovieLens folder."
    )


def read_movielens(directory: str | os.PathLike[str]) -> tuple[pd.DataFrame, pd.Series]:
    """Read the ratings and titles of a MovieLens folder in either layout.

    Parameters
    ----------
    directory
        Folder with ``ratings.csv`` and ``movies.csv`` (ml-latest-small, ml-20m, ml-25m), or with
        ``u.data`` and ``u.item`` (ml-100k, latin-1 encoded).

    Returns
    -------
    ratings : pandas.DataFrame
        Columns ``user`` (int64), ``movie`` (int64) and ``rating`` (float64), one row per rating.
    titles : pandas.Series
        Title (``str``) indexed by movie id.

    Raises
    ------
    FileNotFoundError
        The folder holds neither layout.
    ValueError
        A file lacks the expected columns, or a rating or id is not numeric.

    Examples
    --------
    >>> ratings, titles = read_movielens("ml-latest-small")  # doctest: +SKIP
    >>> list(ratings.columns)  # doctest: +SKIP
    ['user', 'movie', 'rating']
    """
    root = Path(directory)
    if not root.is_dir():
        raise FileNotFoundError(f"MovieLens folder {root} does not exist.")
    if _layout(root) == "csv":
        ratings = pd.read_csv(root / "ratings.csv")
        missing = {"userId", "movieId", "rating"} - set(ratings.columns)
        if missing:
            raise ValueError(
                f"{root / 'ratings.csv'} lacks the columns {sorted(missing)} (need userId, movieId, rating)."
            )
        ratings = ratings.rename(columns={"userId": "user", "movieId": "movie"})
        movies = pd.read_csv(root / "movies.csv")
        if not {"movieId", "title"} <= set(movies.columns):
            raise ValueError(f"{root / 'movies.csv'} lacks the columns movieId and title.")
        titles = pd.Series(movies["title"].astype(str).to_numpy(), index=movies["movieId"].astype(np.int64))
    else:
        ratings = pd.read_csv(
            root / "u.data", sep="\t", header=None, names=["user", "movie", "rating", "timestamp"], engine="c"
        )
        items = pd.read_csv(
            root / "u.item", sep="|", header=None, encoding="latin-1", usecols=[0, 1], names=["movie", "title"]
        )
        titles = pd.Series(items["title"].astype(str).to_numpy(), index=items["movie"].astype(np.int64))
    try:
        out = pd.DataFrame(
            {
                "user": pd.to_numeric(ratings["user"], errors="raise").astype(np.int64),
                "movie": pd.to_numeric(ratings["movie"], errors="raise").astype(np.int64),
                "rating": pd.to_numeric(ratings["rating"], errors="raise").astype(np.float64),
            }
        )
    except (ValueError, TypeError) as exc:
        raise ValueError(f"Non-numeric user, movie or rating in the ratings of {root}: {exc}") from exc
    titles.index.name = "movie"
    return out, titles


def binarise_ratings(
    ratings: pd.DataFrame,
    titles: pd.Series | None = None,
    *,
    n_movies: int = DEFAULT_N_MOVIES,
    min_user_ratings: int = DEFAULT_MIN_USER_RATINGS,
    threshold: float = DEFAULT_THRESHOLD,
    min_positives: int = 1,
    name: str = "movielens",
) -> MovieLensData:
    """Binary users x movies matrix with the filtering of Moran et al. (2022), Appendix C.1.

    1. keep users with more than ``min_user_ratings`` ratings (of any value, any movie);
    2. keep the ``n_movies`` movies with the most ratings among those users (ties: smaller id first);
    3. ``x_um = 1`` when user ``u`` rated movie ``m`` at least ``threshold``, else 0 (a repeated
       (user, movie) pair counts once, with its highest rating);
    4. drop users with fewer than ``min_positives`` ones among the kept movies (an all-zero row carries
       no information under the multinomial likelihood).

    Parameters
    ----------
    ratings
        Columns ``user``, ``movie``, ``rating`` (see :func:`read_movielens`).
    titles
        Titles indexed by movie id; movies without one get ``"movie <id>"``.
    n_movies
        Number of movies (columns) kept.
    min_user_ratings
        Users need strictly more ratings than this.
    threshold
        Ratings ``>= threshold`` become 1.
    min_positives
        Users need at least this many ones among the kept movies.
    name
        Stored in :attr:`MovieLensData.name`.

    Returns
    -------
    MovieLensData
        Rows sorted by user id; columns by decreasing number of ratings.

    Raises
    ------
    ValueError
        Missing columns, a non-positive ``n_movies``, or no user left after filtering.

    Examples
    --------
    >>> import pandas as pd
    >>> r = pd.DataFrame({"user": [1, 1, 1, 2, 2], "movie": [10, 20, 30, 10, 20], "rating": [5, 3, 4, 4, 1]})
    >>> d = binarise_ratings(r, n_movies=2, min_user_ratings=1)
    >>> d.movie_ids.tolist(), d.X.tolist()
    ([10, 20], [[1.0, 0.0], [1.0, 0.0]])
    """
    missing = {"user", "movie", "rating"} - set(ratings.columns)
    if missing:
        raise ValueError(f"ratings lacks the columns {sorted(missing)}; read the files with read_movielens.")
    if int(n_movies) != n_movies or n_movies < 1:
        raise ValueError(f"n_movies must be a positive integer, got {n_movies}.")
    if min_user_ratings < 0 or min_positives < 0:
        raise ValueError("min_user_ratings and min_positives must be non-negative.")
    r = ratings.loc[:, ["user", "movie", "rating"]]
    r = r.groupby(["user", "movie"], as_index=False, sort=False)["rating"].max()
    per_user = r["user"].value_counts()
    r = r[r["user"].isin(per_user.index[per_user > min_user_ratings])]
    if r.empty:
        raise ValueError(
            f"No user has more than {min_user_ratings} ratings; lower min_user_ratings (the paper uses 20)."
        )
    per_movie = r.groupby("movie").size()
    order = sorted(per_movie.items(), key=lambda kv: (-kv[1], kv[0]))[: int(n_movies)]
    movie_ids = np.array([m for m, _ in order], dtype=np.int64)
    n_ratings = np.array([c for _, c in order], dtype=np.int64)
    col = pd.Series(np.arange(movie_ids.size), index=movie_ids)
    pos = r[r["movie"].isin(movie_ids) & (r["rating"] >= threshold)]
    users = np.sort(r["user"].unique())
    row = pd.Series(np.arange(users.size), index=users)
    X = np.zeros((users.size, movie_ids.size), dtype=np.float32)
    X[row[pos["user"]].to_numpy(), col[pos["movie"]].to_numpy()] = 1.0
    keep = X.sum(1) >= min_positives
    if not keep.any():
        raise ValueError(
            f"No user has {min_positives} or more ratings >= {threshold:g} among the {movie_ids.size} kept movies; "
            "raise n_movies or lower min_positives."
        )
    if titles is None:
        titles = pd.Series(dtype=object)
    names = np.array([str(titles.get(m, f"movie {m}")) for m in movie_ids], dtype=object)
    return MovieLensData(
        X=X[keep], user_ids=users[keep], movie_ids=movie_ids, titles=names, name=name, n_ratings=n_ratings
    )


def load_movielens(
    name: str = "movielens_small",
    *,
    n_movies: int = DEFAULT_N_MOVIES,
    min_user_ratings: int = DEFAULT_MIN_USER_RATINGS,
    threshold: float = DEFAULT_THRESHOLD,
    min_positives: int = 1,
) -> MovieLensData:
    """Load a MovieLens data set as a binary users x movies matrix.

    Registry data sets come from :func:`scsparse.data.fetch` (offline cache first, verified by sha256); a
    folder of your own (e.g. the unpacked ML-25M of the paper, which the registry does not ship) is read as it
    is. Either is read by :func:`read_movielens` and filtered by :func:`binarise_ratings`.

    Parameters
    ----------
    name
        ``"movielens_small"`` (ml-latest-small; also ``"ml-latest-small"``, ``"small"``) or
        ``"movielens_100k"`` (ml-100k; also ``"ml-100k"``, ``"100k"``), or the path of an unpacked MovieLens
        folder in either layout (``ratings.csv`` + ``movies.csv``, or ``u.data`` + ``u.item``); the data set
        is then named after the folder.
    n_movies, min_user_ratings, threshold, min_positives
        See :func:`binarise_ratings`.

    Returns
    -------
    MovieLensData
        ``X`` (users x movies, 0/1), ids and titles.

    Raises
    ------
    ValueError
        For a ``name`` that is neither a registry name nor an existing folder.
    scsparse.data.DataNotAvailableError
        The files are neither cached nor downloadable.

    Examples
    --------
    >>> from scsparse.generic.datasets import load_movielens
    >>> data = load_movielens("movielens_100k")  # doctest: +SKIP
    >>> data.X.shape  # doctest: +SKIP
    (910, 100)
    >>> paper = load_movielens("/data/ml-25m", n_movies=300)  # your own copy of the paper's data  # doctest: +SKIP
    """
    if name in MOVIELENS_DATASETS:
        reg_name = MOVIELENS_DATASETS[name]
        wanted = _CSV_FILES if reg_name == "movielens_small" else _ML100K_FILES
        paths = fetch(reg_name, list(wanted))
        folder = next(iter(paths.values())).parent
    elif Path(name).is_dir():
        folder = Path(name)
        reg_name = folder.resolve().name
    else:
        raise ValueError(
            f"Unknown MovieLens data set {name!r}: neither a registry name ({', '.join(sorted(MOVIELENS_DATASETS))}) "
            "nor an existing folder. Pass the path of an unpacked MovieLens folder (e.g. ml-25m) to use your own copy."
        )
    ratings, titles = read_movielens(folder)
    return binarise_ratings(
        ratings,
        titles,
        n_movies=n_movies,
        min_user_ratings=min_user_ratings,
        threshold=threshold,
        min_positives=min_positives,
        name=reg_name,
    )


def subsample_users(data: MovieLensData, max_users: int | None, seed: int = 0) -> MovieLensData:
    """``data`` restricted to a random subset of at most ``max_users`` users (drawn with ``seed``, rows kept in order).

    ``None``, or no more users than ``max_users``, returns ``data`` itself.

    Examples
    --------
    >>> import numpy as np
    >>> ids = np.arange(4)
    >>> d = MovieLensData(np.eye(4, dtype=np.float32), ids, ids, np.array(list("abcd")), "toy", np.ones(4))
    >>> subsample_users(d, 2).user_ids.shape, subsample_users(d, None) is d
    ((2,), True)
    """
    if max_users is None or data.X.shape[0] <= max_users:
        return data
    keep = np.sort(np.random.default_rng(seed).choice(data.X.shape[0], int(max_users), replace=False))
    return MovieLensData(
        X=data.X[keep],
        user_ids=data.user_ids[keep],
        movie_ids=data.movie_ids,
        titles=data.titles,
        name=data.name,
        n_ratings=data.n_ratings,
    )


def describe_movielens(data: MovieLensData) -> dict[str, Any]:
    """Users, movies, density, mean positives per user and the fewest ratings of a kept movie, for a summary.

    Examples
    --------
    >>> import numpy as np
    >>> ids = np.arange(2)
    >>> d = MovieLensData(np.array([[1.0, 0.0], [1.0, 1.0]]), ids, ids, np.array(["a", "b"]), "toy", np.array([5, 3]))
    >>> describe_movielens(d)
    {'n_users': 2, 'n_movies': 2, 'density': 0.75, 'mean_pos': 1.5, 'min_movie_ratings': 3}
    """
    pos = data.X.sum(1)
    return {
        "n_users": int(data.X.shape[0]),
        "n_movies": int(data.X.shape[1]),
        "density": float(data.X.mean()),
        "mean_pos": float(pos.mean()),
        "min_movie_ratings": int(data.n_ratings.min()),
    }
