"""Decision values that are exactly 0 at the optimum (by symmetry) must give label 0, as an exact
refit does, even when the engine reaches the optimum only to rounding level."""

import warnings

import numpy as np
from sklearn.exceptions import FitFailedWarning
from sklearn.model_selection import KFold
from sklearn.svm import LinearSVC

from glru.bounds import zero_band
from sklearn_ext import GLRUCrossValidator

from ._problems import random_problem
from .test_cross_validation import exact_scores, labels01


def test_balanced_fold_with_an_unseen_feature_scores_like_exact_refits():
    """Hypothesis found it (seed 1536, n 9, d 1, C 1, LinearSVC, 4-fold): the first fold's
    training rows all have x = 0 and three rows of each class, so its optimum is exactly 0 and
    every held-out value is 0 (label 0); chord steps from the full fit left ±1e-17."""
    X, y = random_problem(1536, 9, 1, "logistic", sparse=True)
    y = labels01(y)
    assert X.nnz == 1 and list(y) == [1, 0, 0, 1, 1, 0, 1, 0, 0]
    cv = KFold(4, shuffle=True, random_state=1536)
    est = LinearSVC(C=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitFailedWarning)
        got = GLRUCrossValidator(est, cv=cv).fit(X, y).scores_
    np.testing.assert_array_equal(got, exact_scores(est, X, y, cv))


def test_zero_band_scales_with_the_gradient_rounding_over_the_curvature():
    alpha, norms = np.array([1.0, -2.0, 0.5]), np.array([1.0, 2.0, 3.0])
    band = zero_band(np.array([1.0, 10.0]), alpha, norms, strength=2.0, n_features=4)
    assert band[1] == 10 * band[0] and 0 < band[0] < 1e-12
    with_b = zero_band(np.array([1.0]), alpha, norms, 2.0, 4, intercept_curvature=0.5)
    assert with_b[0] > zero_band(np.array([1.0]), alpha, norms, 2.0, 4)[0]
    assert np.all(zero_band(np.array([1.0]), alpha, norms, 0.0, 4) == 0)  # no strong convexity: no band


def test_early_stopped_solve_is_not_read_below_rounding_level():
    """Hypothesis found it (seed 391, n 8, d 8, C 250, 4-fold): a fold's solve stopped because the
    box bound certified a held-out sign; the engine's re-certification used the ball only, left
    the sign open and read it from the (unpolished) value, which had the wrong sign."""
    from sklearn.linear_model import LogisticRegression

    X, y = random_problem(391, 8, 8, "logistic", sparse=True)
    y = labels01(y)
    cv = KFold(4, shuffle=True, random_state=391)
    est = LogisticRegression(C=250.0, fit_intercept=False)
    got = GLRUCrossValidator(est, cv=cv).fit(X, y).scores_
    np.testing.assert_array_equal(got, exact_scores(est, X, y, cv))
