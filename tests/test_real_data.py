"""Certificates against exact refits on the shared real datasets (skipped on a fresh clone)."""

import numpy as np
import pytest
from sklearn.datasets import load_svmlight_file
from sklearn.linear_model import LogisticRegression

import glru
from glru.datasets import load_arcene

from ._problems import exact_fit, reference_interval


def load_libsvm(data, name, rows, seed=0):
    X, y = load_svmlight_file(str(data / name))
    idx = np.random.default_rng(seed).choice(X.shape[0], size=min(rows, X.shape[0]), replace=False)
    return X[np.sort(idx)], y[np.sort(idx)]


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_arcene_leave_one_out_certificates(shared_data, fit_intercept):
    """The paper's setting: arcene, n = 200, d = 9,961, standardized, L2 logistic, λ = 1."""
    X, y = load_arcene(shared_data)
    assert X.shape == (200, 9961)
    lam = 1.0
    fit = glru.fit(X, y, lam=lam, fit_intercept=fit_intercept, tol=1e-10)
    certified = 0
    for i in np.random.default_rng(0).choice(200, size=8, replace=False):
        cert = fit.remove_samples([i])
        lo, hi = cert.decision_bounds(X[i:i + 1])
        ref = exact_fit(np.delete(X, i, axis=0), np.delete(y, i), "logistic", lam, 0.0, fit_intercept)
        ref_lo, ref_hi = reference_interval(ref, X[i:i + 1])
        assert lo[0] <= ref_hi[0] and ref_lo[0] <= hi[0]
        certified += int(lo[0] > 0 or hi[0] < 0)
    if not fit_intercept:
        assert certified >= 3  # the paper certifies 112 of 200 at λ = 1


@pytest.mark.parametrize("name,loss", [("mushrooms.gz", "squared_hinge"), ("a9a.t.gz", "logistic"),
                                       ("w8a.gz", "logistic"), ("madelon.t.gz", "smoothed_hinge")])
def test_libsvm_modifications(shared_data, name, loss):
    X, y = load_libsvm(shared_data, name, rows=1500)
    if name == "madelon.t.gz":
        X = X.toarray()
        X = (X - X.mean(axis=0)) / (X.std(axis=0) + 1e-12)
    lam = 1e-2
    fit = glru.fit(X, y, loss=loss, lam=lam, fit_intercept=True, tol=1e-10)
    rng = np.random.default_rng(1)
    rows = rng.choice(X.shape[0], size=5, replace=False)
    keep = np.setdiff1d(np.arange(X.shape[0]), rows)
    cert = fit.remove_samples(rows)
    ref = exact_fit(X[keep], y[keep], loss, lam, 0.0, True)
    X_eval = X[rows]
    for mode in ("fast", "exact"):
        lo, hi = cert.decision_bounds(X_eval, intercept=mode)
        ref_lo, ref_hi = reference_interval(ref, X_eval)
        assert np.all(lo <= ref_hi) and np.all(ref_lo <= hi)
    cols = rng.choice(X.shape[1], size=3, replace=False)
    keep_cols = np.setdiff1d(np.arange(X.shape[1]), cols)
    cert = fit.remove_features(cols)
    ref = exact_fit(X[:, keep_cols], y, loss, lam, 0.0, True)
    lo, hi = cert.decision_bounds(X[:20][:, keep_cols])
    ref_lo, ref_hi = reference_interval(ref, X[:20][:, keep_cols])
    assert np.all(lo <= ref_hi) and np.all(ref_lo <= hi)


def test_a9a_solver_matches_sklearn(shared_data):
    X, y = load_libsvm(shared_data, "a9a.t.gz", rows=4000)
    n, C = X.shape[0], 0.3
    ours = glru.fit(X, y, lam=1.0 / (n * C), fit_intercept=True, tol=1e-10)
    ref = LogisticRegression(C=C, tol=1e-12, max_iter=10000).fit(X, y)
    np.testing.assert_allclose(ours.coef_, ref.coef_.ravel(), atol=1e-4)
    assert ours.intercept_ == pytest.approx(ref.intercept_[0], abs=1e-4)
