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


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_a9a_ten_fold_scores_equal_exact_refits(shared_data, fit_intercept):
    """The issue's K-fold benchmark task; with the intercept it holds a held-out decision value of
    2e-6 that no certificate can decide (a relative gap of 1e-10 puts it at ±6e-3)."""
    from sklearn.model_selection import StratifiedKFold

    from sklearn_ext import GLRUCrossValidator

    from .test_cross_validation import exact_scores

    X, y = load_svmlight_file(str(shared_data / "a9a.t.gz"))
    est, cv = LogisticRegression(C=1.0, fit_intercept=fit_intercept), StratifiedKFold(10)
    np.testing.assert_array_equal(GLRUCrossValidator(est, cv=cv).fit(X, y).scores_, exact_scores(est, X, y, cv))


@pytest.mark.parametrize("name", ["mushrooms.gz", "a9a.t.gz"])
def test_linear_svc_ten_fold_scores_equal_exact_refits(shared_data, name):
    """Squared hinge folds iterated by semismooth Newton steps (their Hessians refreshed where rows
    cross the hinge) to the exact refits' scores."""
    from sklearn.model_selection import StratifiedKFold
    from sklearn.svm import LinearSVC

    from sklearn_ext import GLRUCrossValidator

    from .test_cross_validation import exact_scores

    X, y = load_svmlight_file(str(shared_data / name))
    est, cv = LinearSVC(C=1.0), StratifiedKFold(10)
    np.testing.assert_array_equal(GLRUCrossValidator(est, cv=cv).fit(X, y).scores_, exact_scores(est, X, y, cv))


@pytest.mark.parametrize("C", [1.0, 10.0])
@pytest.mark.parametrize("scoring", [None, "roc_auc"])
def test_standardized_w8a_folds_equal_exact_refits(shared_data, C, scoring):
    """A StandardScaler before LogisticRegression on w8a's rare binary features: the folds'
    Hessians are ill-conditioned, and their solves finish with the Hessian formed
    (glru.solver._products_budget); their scores are the exact refits'."""
    from sklearn.model_selection import StratifiedKFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from sklearn_ext import GLRUCrossValidator

    from .test_cross_validation import exact_scores

    X, y = load_libsvm(shared_data, "w8a.gz", rows=6000, seed=6000)
    est = make_pipeline(StandardScaler(with_mean=False), LogisticRegression(C=C))
    cv = StratifiedKFold(5, shuffle=True, random_state=3)
    got = GLRUCrossValidator(est, cv=cv, scoring=scoring).fit(X, y).scores_
    np.testing.assert_array_equal(got, exact_scores(est, X, y, cv, scoring=scoring))


@pytest.mark.parametrize("name", ["a9a.t.gz", "mushrooms.gz"])
def test_standardized_folds_certified_by_chord_steps_equal_exact_refits(shared_data, name, monkeypatch):
    """A StandardScaler before LogisticRegression, 10-fold: the folds are decided by chord steps
    (glru.chord) long before rounding level; their scores are the exact refits'."""
    from sklearn.model_selection import StratifiedKFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    import glru.fold_refit
    from sklearn_ext import GLRUCrossValidator

    from .test_cross_validation import exact_scores

    decided = []
    chord_outcome = glru.fold_refit.chord_outcome

    def counted(*args):
        outcome, point = chord_outcome(*args)
        decided.append(outcome is not None)
        return outcome, point

    monkeypatch.setattr(glru.fold_refit, "chord_outcome", counted)
    X, y = load_libsvm(shared_data, name, rows=6000, seed=7)
    est, cv = make_pipeline(StandardScaler(with_mean=False), LogisticRegression()), StratifiedKFold(10)
    got = GLRUCrossValidator(est, cv=cv).fit(X, y).scores_
    np.testing.assert_array_equal(got, exact_scores(est, X, y, cv))
    assert sum(decided) >= 8


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_arcene_leave_one_out_labels_and_intervals(shared_data, fit_intercept):
    """The paper's setting at λ = 2^-10: every certified interval checked on a sample of exact refits."""
    from sklearn.model_selection import LeaveOneOut

    from sklearn_ext import GLRUCrossValidator

    from .test_cross_validation import exact_fold_estimator

    X, y = load_arcene(shared_data)
    est = LogisticRegression(C=1.0 / (X.shape[0] * 2.0 ** -10), fit_intercept=fit_intercept)
    validator = GLRUCrossValidator(est, cv=LeaveOneOut()).fit(X, y)
    assert validator.n_retrained_ < 40  # the paper retrains 97 of 200 here
    for k in np.random.default_rng(0).choice(X.shape[0], size=6, replace=False):
        i = validator.held_out_indices_[k]
        train = np.flatnonzero(np.arange(X.shape[0]) != i)
        exact = exact_fold_estimator(est, X, y, train)
        value = exact.decision_function(X[i:i + 1])[0]
        lower, upper = validator.decision_bounds_[k]
        assert lower - 1e-9 <= value <= upper + 1e-9
        assert validator.scores_[k] == exact.score(X[i:i + 1], y[i:i + 1])
