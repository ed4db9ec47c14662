"""Random problems and exact references shared by the tests."""

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin

import glru

LOSSES = ("squared", "huber", "squared_hinge", "smoothed_hinge", "logistic")
REGRESSION = ("squared", "huber")


def random_problem(seed, n, d, loss, sparse=False, density=0.5, scale=1.0):
    """Dense or CSR X with a mix of scales, y matching the loss (both classes present)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * scale * rng.uniform(0.2, 2.0, size=d)
    if sparse:
        X[rng.random((n, d)) > density] = 0.0
    w = rng.standard_normal(d)
    if loss in REGRESSION:
        y = X @ w + rng.standard_normal(n) * rng.uniform(0.1, 2.0)
    else:
        y = np.where(X @ w + rng.standard_normal(n) > 0, 1.0, -1.0)
        y[0], y[1] = 1.0, -1.0
    return (sp.csr_matrix(X) if sparse else X), y


def scaled_problem(seed, n, d, sparse):
    """Columns scaled over four decades and (dense) shifted, labels 0/1: what a StandardScaler
    is for."""
    X, y = random_problem(seed, n, d, "logistic", sparse=sparse)
    scales = np.logspace(-2, 2, d)
    X = sp.csr_matrix(X.multiply(scales)) if sparse else X * scales + 3.0
    return X, np.where(y > 0, 1, 0)


def collinear_problem(seed, n=300, d=100):
    """``make_classification`` with a quarter of its columns redundant (linear combinations of the
    informative ones), values below 1 in magnitude dropped (CSR, about half stored), labels 0/1:
    near a hard margin (a large C) fewer rows lie inside it than there are coordinates, and
    LIBLINEAR's primal crawls (glru.solver.primal_crawls)."""
    from sklearn.datasets import make_classification

    X, y = make_classification(n, d, n_informative=30 * d // 100, n_redundant=d // 4, flip_y=0.01, class_sep=1.0,
                               random_state=seed)
    return sp.csr_matrix(np.where(np.abs(X) > 1.0, X, 0.0)), y


def random_targets(rng, m, loss, d=None):
    if loss in REGRESSION:
        return rng.standard_normal(m) * 2.0
    return np.where(rng.random(m) < 0.5, 1.0, -1.0)


def exact_fit(X, y, loss, lam, kappa, fit_intercept):
    """An independent solve of the modified problem to a relative gap ≤ 1e-10 (Newton, cold).

    A row removal can leave a single class, which ``glru.fit`` rejects as user input but which
    is a well-posed problem without an intercept: solve that one through its Problem."""
    if loss not in REGRESSION and np.unique(y).shape[0] < 2:
        problem = glru.Problem(X, np.asarray(y, dtype=float), glru.losses.get_loss(loss),
                               glru.penalties.get_penalty(lam, kappa), fit_intercept)
        return glru.Fit.from_problem(problem, tol=1e-12, max_iter=2000, solver="newton")
    return glru.fit(X, y, loss=loss, lam=lam, kappa=kappa, fit_intercept=fit_intercept, tol=1e-12,
                    max_iter=2000, solver="newton")


def reference_interval(ref, X_eval):
    """The reference's own certified interval around its (inexact) decision values: the exact
    optimum lies in it, so an interval that misses it is a true violation."""
    lo, hi = ref.certificate().decision_bounds(X_eval, intercept="exact")
    return lo, hi


def dense(X):
    return X.toarray() if sp.issparse(X) else np.asarray(X)


class RefusingStep(TransformerMixin, BaseEstimator):
    """A Pipeline step that passes rows through, but whose fit raises on fewer than
    ``min_rows`` rows, or on rows whose first column stays below ``largest`` (the training rows
    of the fold that holds out the largest value)."""

    def __init__(self, min_rows=0, largest=-np.inf):
        self.min_rows, self.largest = min_rows, largest

    def fit(self, X, y=None):
        if X.shape[0] < self.min_rows:
            raise ValueError(f"fewer than {self.min_rows} rows")
        if X[:, 0].max() < self.largest:
            raise ValueError("the largest row is missing")
        return self

    def transform(self, X):
        return X
