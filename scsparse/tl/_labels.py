"""How well factors predict labels: a multinomial logistic regression on standardised factors, on held-out rows."""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["label_accuracy", "predict_labels"]


def predict_labels(
    train_factors: np.ndarray, train_labels: np.ndarray, test_factors: np.ndarray, *, max_iter: int = 5000
) -> np.ndarray:
    """Labels of held-out rows predicted from their factors.

    The factors are standardised with the training rows' mean and sd, then scikit-learn's ``LogisticRegression``
    (lbfgs, multinomial, L2 with ``C = 1``) is fitted on the training rows.

    Parameters
    ----------
    train_factors, train_labels
        Rows x factors and the labels of the training rows.
    test_factors
        Rows x factors of the rows to label.
    max_iter
        Iterations of the solver.

    Raises
    ------
    ValueError
        When the factors hold NaN or infinite values (a fit that did not train properly).

    Examples
    --------
    >>> import numpy as np
    >>> z = np.array([[0.0], [0.1], [1.0], [1.1]])
    >>> predict_labels(z, np.array(["a", "a", "b", "b"]), np.array([[0.05], [1.05]])).tolist()
    ['a', 'b']
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    train_factors = np.asarray(train_factors, dtype=np.float64)
    test_factors = np.asarray(test_factors, dtype=np.float64)
    if not (np.all(np.isfinite(train_factors)) and np.all(np.isfinite(test_factors))):
        raise ValueError("The factors contain NaN or infinite values; the model did not train properly.")
    classifier = make_pipeline(StandardScaler(), LogisticRegression(max_iter=max_iter))
    return classifier.fit(train_factors, np.asarray(train_labels)).predict(test_factors)


def label_accuracy(factors: np.ndarray, labels: np.ndarray, seed: int = 0, test_size: float = 0.3) -> dict[str, float]:
    """Held-out accuracy of :func:`predict_labels` on a stratified split of the rows.

    Parameters
    ----------
    factors
        Rows x factors (e.g. cells x factors).
    labels
        Row labels (e.g. cell types).
    seed
        Seed of the split.
    test_size
        Fraction of rows held out.

    Returns
    -------
    dict
        ``accuracy``, ``balanced_accuracy`` and ``chance`` (the majority-class frequency among the held-out rows).

    Examples
    --------
    >>> import numpy as np
    >>> z = np.r_[np.zeros((20, 1)), np.ones((20, 1))] + 0.01 * np.arange(40)[:, None]
    >>> label_accuracy(z, np.array(["a"] * 20 + ["b"] * 20))
    {'accuracy': 1.0, 'balanced_accuracy': 1.0, 'chance': 0.5}
    """
    from sklearn.metrics import balanced_accuracy_score
    from sklearn.model_selection import train_test_split

    labels = np.asarray(labels).astype(str)
    stratify = labels if pd.Series(labels).value_counts().min() >= 2 else None
    x_tr, x_te, y_tr, y_te = train_test_split(
        np.asarray(factors), labels, test_size=test_size, stratify=stratify, random_state=seed
    )
    pred = predict_labels(x_tr, y_tr, x_te)
    return {
        "accuracy": float(np.mean(pred == y_te)),
        "balanced_accuracy": float(balanced_accuracy_score(y_te, pred)),
        "chance": float(pd.Series(y_te).value_counts(normalize=True).iloc[0]),
    }
