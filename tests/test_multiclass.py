"""Multiclass cross-validation and stepwise selection against exact refits of every fold:
one-vs-rest (LinearSVC)."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn import model_selection
from sklearn.datasets import load_digits
from sklearn.exceptions import FitFailedWarning
from sklearn.feature_selection import SequentialFeatureSelector
from sklearn.metrics import check_scoring
from sklearn.model_selection import KFold, LeaveOneOut, StratifiedKFold
from sklearn.svm import LinearSVC

from sklearn_ext import GLRUCrossValidator, GLRUStepwiseSelector, cross_val_score

from ._exact import ExactRefit, TiesToFirstClass, exact_estimator


def multiclass_problem(seed, n, d, n_classes, sparse=False):
    """Classes from the arg-max of noisy linear scores; every class present."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * rng.uniform(0.2, 2.0, size=d)
    if sparse:
        X[rng.random((n, d)) > 0.5] = 0.0
    scores = X @ rng.standard_normal((d, n_classes)) + rng.standard_normal((n, n_classes))
    y = np.argmax(scores, axis=1)
    y[:n_classes] = np.arange(n_classes)
    return (sp.csr_matrix(X) if sparse else X), y


def exact_scores(estimator, X, y, splits, scoring=None):
    scorer = check_scoring(estimator, scoring=scoring)
    return np.array([scorer(TiesToFirstClass(exact_estimator(estimator, X[train], y[train])), X[test], y[test])
                     for train, test in splits])


@pytest.mark.parametrize("estimator", [LinearSVC(C=0.5), LinearSVC(C=0.1, fit_intercept=False),
                                       LinearSVC(C=2.0, intercept_scaling=3.0)], ids=repr)
@pytest.mark.parametrize("cv", [LeaveOneOut(), StratifiedKFold(4, shuffle=True, random_state=0)],
                         ids=["loo", "kfold"])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("scoring", ["accuracy", "f1_macro"])
def test_one_vs_rest_scores_equal_exact_refits(estimator, cv, sparse, scoring):
    X, y = multiclass_problem(3, 45, 6, 4, sparse=sparse)
    validator = GLRUCrossValidator(estimator, cv=cv, scoring=scoring).fit(X, y)
    splits = list(cv.split(X, y))
    np.testing.assert_array_equal(validator.scores_, exact_scores(estimator, X, y, splits, scoring))
    assert validator.fallback_reason_ is None


def test_one_vs_rest_certifies_most_leave_one_out_folds():
    X, y = load_digits(return_X_y=True)
    X, y = X[:150] / 16.0, y[:150]
    validator = GLRUCrossValidator(LinearSVC(C=0.1), cv=LeaveOneOut()).fit(X, y)
    assert validator.n_certified_ >= 120
    assert validator.n_retrained_ <= 30
    expected = model_selection.cross_val_score(ExactRefit(LinearSVC(C=0.1)), X, y, cv=LeaveOneOut())
    np.testing.assert_array_equal(validator.scores_, expected)


def test_decision_value_scorer_gets_exact_fold_models():
    X, y = multiclass_problem(5, 60, 5, 3)
    cv = StratifiedKFold(3, shuffle=True, random_state=1)
    got = cross_val_score(LinearSVC(C=0.3), X, y, cv=cv, scoring="top_k_accuracy")
    np.testing.assert_allclose(got, exact_scores(LinearSVC(C=0.3), X, y, list(cv.split(X, y)), "top_k_accuracy"))


def test_decision_bounds_contain_exact_values_per_class():
    X, y = multiclass_problem(8, 40, 5, 3)
    validator = GLRUCrossValidator(LinearSVC(C=0.4), cv=LeaveOneOut()).fit(X, y)
    assert validator.decision_bounds_.shape == (40, 3, 2)
    for (bounds, i) in zip(validator.decision_bounds_, validator.held_out_indices_):
        train = np.flatnonzero(np.arange(40) != i)
        values = exact_estimator(LinearSVC(C=0.4), X[train], y[train]).decision_function(X[i:i + 1])[0]
        assert np.all(bounds[:, 0] - 1e-9 <= values) and np.all(values <= bounds[:, 1] + 1e-9)


def test_class_missing_from_a_training_fold():
    """Leave-one-out on a class with one row: that fold's model knows the other classes only,
    as scikit-learn's would."""
    X, y = multiclass_problem(2, 30, 4, 3)
    y[y == 2] = 1
    y[5] = 2
    got = cross_val_score(LinearSVC(C=0.5), X, y, cv=LeaveOneOut())
    expected = exact_scores(LinearSVC(C=0.5), X, y, list(LeaveOneOut().split(X, y)))
    np.testing.assert_array_equal(got, expected)
    assert got[5] == 0.0


@settings(max_examples=25)
@given(seed=st.integers(0, 10_000), n=st.integers(9, 30), d=st.integers(1, 12), n_classes=st.integers(3, 5),
       C=st.floats(1e-3, 1e2), fit_intercept=st.booleans(), sparse=st.booleans(), loo=st.booleans())
def test_property_one_vs_rest_equals_exact_refits(seed, n, d, n_classes, C, fit_intercept, sparse, loo):
    X, y = multiclass_problem(seed, n, d, n_classes, sparse=sparse)
    est = LinearSVC(C=C, fit_intercept=fit_intercept)
    cv = LeaveOneOut() if loo else KFold(4, shuffle=True, random_state=seed)
    splits = [(train, test) for train, test in cv.split(X, y)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitFailedWarning)
        got = GLRUCrossValidator(est, cv=cv).fit(X, y).scores_
    ok = np.array([np.unique(y[train]).size >= 2 for train, _ in splits])
    expected = exact_scores(est, X, y, [s for s, keep in zip(splits, ok) if keep])
    np.testing.assert_array_equal(got[ok], expected)


def test_one_vs_rest_tie_goes_to_the_first_class():
    # one feature, no intercept: with row 4 held out, the rows of classes 1 and 2 all have x = 0, so
    # "1 against the rest" and "2 against the rest" have the same optimum and row 4 ties exactly;
    # the computed values differ in the last bits, and the tie must go to class 1 (numpy's arg-max)
    X, y = multiclass_problem(0, 14, 1, 3, sparse=True)
    est = LinearSVC(C=1.0, fit_intercept=False)
    got = GLRUCrossValidator(est, cv=LeaveOneOut()).fit(X, y).scores_
    np.testing.assert_array_equal(got, exact_scores(est, X, y, list(LeaveOneOut().split(X, y))))
    assert got[4] == 0.0  # class 1 predicted for a row of class 2


@pytest.mark.parametrize("direction", ["backward", "forward"])
@pytest.mark.parametrize("params", [dict(n_features_to_select=3), dict(n_features_to_select="auto", tol=0.01)],
                         ids=["count", "tol"])
@pytest.mark.parametrize("scoring", [None, "f1_macro"])
def test_stepwise_selection_matches_sequential_feature_selector(direction, params, scoring):
    X, y = multiclass_problem(0, 60, 6, 3)
    if direction == "backward" and "tol" in params:
        params = dict(params, tol=-0.02)
    got = GLRUStepwiseSelector(LinearSVC(C=0.5), direction=direction, scoring=scoring, cv=3, **params).fit(X, y)
    expected = SequentialFeatureSelector(ExactRefit(LinearSVC(C=0.5)), direction=direction, scoring=scoring, cv=3,
                                         **params).fit(X, y)
    np.testing.assert_array_equal(got.support_, expected.support_)
    assert got.fallback_reason_ is None and len(got.history_) >= 1
