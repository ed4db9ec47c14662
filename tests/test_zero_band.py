"""Decision values that are exactly 0 at the optimum (by symmetry) must give label 0, as an exact
refit does, even when the engine reaches the optimum only to rounding level."""

import warnings

import numpy as np
from sklearn.exceptions import FitFailedWarning
from sklearn.model_selection import KFold, check_cv
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


def test_zero_band_is_capped_at_rounding_of_a_unit_margin():
    """The worst-case gradient rounding over the curvature grows with |α| and ‖x‖ (squared hinge at
    C = 100, columns up to 300); the band never exceeds ``ZERO_BAND_CAP``."""
    from glru.bounds import ZERO_BAND_CAP

    alpha, norms = np.full(1000, 200.0), np.full(1000, 300.0)
    assert np.all(zero_band(np.array([300.0]), alpha, norms, strength=1.0, n_features=176) == ZERO_BAND_CAP)


def test_badly_scaled_squared_hinge_scores_like_exact_refits():
    """Found by a sweep (1400 × 176, columns scaled over four decades, LinearSVC(C=100,
    intercept_scaling=10), 5-fold): the uncapped zero band reached 8.7e-3 and turned held-out
    values of 2.7e-4 and 6.7e-3 into 0, one wrong label in each of two folds."""
    rng = np.random.default_rng(1220)
    X = rng.standard_normal((1400, 176)) * 10.0 ** rng.uniform(-2, 2, size=176)
    score = X @ rng.standard_normal(176)
    score = score / np.std(score) + rng.standard_normal(1400)
    y = (score > np.median(score) + rng.uniform(-0.3, 0.3)).astype(int)
    est = LinearSVC(C=100.0, intercept_scaling=10.0)
    cv = KFold(5)
    np.testing.assert_array_equal(GLRUCrossValidator(est, cv=cv).fit(X, y).scores_, exact_scores(est, X, y, cv))


def test_fold_solve_that_stalls_from_its_centre_starts_again():
    """Found by a sweep (sparse 385 × 85, columns scaled over four decades, two constant, three
    near-separable classes, one-vs-rest LinearSVC(C=100), 60 %/25 % splits): one class's fold
    solve stalled at relative gap 1.0 from its centre (trust-region Newton, then LIBLINEAR) and
    its values were read there, two wrong labels; from 0 it converges."""
    import scipy.sparse as sp

    rng = np.random.default_rng(1213)
    X = sp.random(385, 85, density=0.2, format="csr", random_state=1213, data_rvs=rng.standard_normal).toarray()
    X = X * 10.0 ** rng.uniform(-2, 2, size=85)
    score = X @ rng.standard_normal(85)
    score = score / np.std(score) + 0.05 * rng.standard_normal(385)
    X[:, 0], X[:, 1] = 0.0, 3.0
    y = np.array(["neg", "pos", "zzz"], dtype=object)[np.digitize(score, np.quantile(score, [0.33, 0.66]))]
    X = sp.csr_matrix(X)
    rng = np.random.default_rng(1213)
    splits = []
    for _ in range(4):
        perm = rng.permutation(385)
        splits.append((np.sort(perm[:231]), np.sort(perm[231:327])))
    est = LinearSVC(C=100.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # and no fold left unsettled
        got = GLRUCrossValidator(est, cv=splits).fit(X, y).scores_
    np.testing.assert_array_equal(got, exact_scores(est, X, y, check_cv(splits)))
