"""Regression cross-validation: Ridge through the drop-in cross_val_score (closed form), and
certified intervals of the cross-validation error of Huber (and squared-loss) regression."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import example, given, settings
from hypothesis import strategies as st
from sklearn import model_selection
from sklearn.base import clone
from sklearn.linear_model import Ridge, RidgeCV
from sklearn.model_selection import KFold, LeaveOneOut
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import Normalizer, StandardScaler

import glru
from glru.cross_validation import Fold
from glru.cv_error import cross_validation_error
from glru.losses import Huber, Squared
from glru.penalties import get_penalty
from glru.solver import polish
from sklearn_ext import FallbackWarning, GLRUCrossValidator, cross_val_score


def regression_problem(seed, n, d, sparse=False, heavy_tails=False):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * rng.uniform(0.2, 2.0, size=d)
    if sparse:
        X[rng.random((n, d)) > 0.5] = 0.0
    noise = rng.standard_t(2, size=n) if heavy_tails else rng.standard_normal(n)
    y = X @ rng.standard_normal(d) + noise + 3.0
    return (sp.csr_matrix(X) if sparse else X), y


def sklearn_exact(estimator, X, y, cv, scoring=None):
    """scikit-learn's own loop with a direct solver (its Ridge solves are exact)."""
    dense = X.toarray() if sp.issparse(X) else X
    return model_selection.cross_val_score(clone(estimator).set_params(solver="cholesky"), dense, y, cv=cv,
                                           scoring=scoring)


@pytest.mark.parametrize("estimator", [Ridge(alpha=0.5), Ridge(alpha=20.0, fit_intercept=False)], ids=repr)
@pytest.mark.parametrize("cv", [KFold(5, shuffle=True, random_state=0), LeaveOneOut()], ids=["kfold", "loo"])
@pytest.mark.parametrize("shape", [(50, 6), (20, 40)], ids=["n>d", "n<d"])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_ridge_scores_equal_exact_refits(estimator, cv, shape, sparse):
    X, y = regression_problem(1, *shape, sparse=sparse)
    got = cross_val_score(estimator, X, y, cv=cv, scoring="neg_mean_squared_error")
    np.testing.assert_allclose(got, sklearn_exact(estimator, X, y, cv, "neg_mean_squared_error"), rtol=1e-9,
                               atol=1e-12)


def test_ridge_default_score_is_r2_and_multi_target_works():
    X, y = regression_problem(2, 60, 5)
    Y = np.column_stack([y, 2 * y - X[:, 0]])
    cv = KFold(4)
    np.testing.assert_allclose(cross_val_score(Ridge(1.0), X, y, cv=cv), sklearn_exact(Ridge(1.0), X, y, cv),
                               rtol=1e-10)
    np.testing.assert_allclose(cross_val_score(Ridge(1.0), X, Y, cv=cv), sklearn_exact(Ridge(1.0), X, Y, cv),
                               rtol=1e-10)


def test_ridge_leave_one_out_matches_ridgecv():
    X, y = regression_problem(3, 40, 7)
    for alpha in (1e-3, 1.0, 1e3):
        errors = -cross_val_score(Ridge(alpha), X, y, cv=LeaveOneOut(), scoring="neg_mean_squared_error")
        reference = RidgeCV(alphas=[alpha], store_cv_results=True).fit(X, y).cv_results_[:, 0]
        np.testing.assert_allclose(errors, reference, rtol=1e-8)


def test_ridge_pipeline_and_fallbacks():
    X, y = regression_problem(4, 40, 5)
    cv = KFold(4)
    pipe = make_pipeline(Normalizer(), Ridge(0.3))
    np.testing.assert_allclose(cross_val_score(pipe, X, y, cv=cv), model_selection.cross_val_score(
        make_pipeline(Normalizer(), Ridge(0.3, solver="cholesky")), X, y, cv=cv), rtol=1e-10)
    with pytest.warns(FallbackWarning, match="StandardScaler"):
        cross_val_score(make_pipeline(StandardScaler(), Ridge(0.3)), X, y, cv=cv)
    with pytest.warns(FallbackWarning, match="positive"):
        GLRUCrossValidator(Ridge(positive=True), cv=cv).fit(X, y)


def exact_huber_values(X, y, loss, lam, fit_intercept, fold):
    """Held-out values of an exact refit, and whether that refit is the only optimum: with an
    unpenalized intercept and every training residual in Huber's linear zone, every intercept
    of an interval is optimal."""
    fit = glru.fit(X[fold.train], y[fold.train], loss=loss, lam=lam, fit_intercept=fit_intercept, tol=1e-14)
    coef, intercept = polish(fit.problem, fit.coef_, fit.intercept_)
    residuals = np.asarray(X[fold.train] @ coef).ravel() + intercept - y[fold.train]
    unique = not fit_intercept or np.any(np.abs(residuals) < loss.gamma * (1 - 1e-6))
    return np.asarray(X[fold.test] @ coef).ravel() + intercept, unique


@settings(max_examples=30)
@given(seed=st.integers(0, 10_000), n=st.integers(8, 40), d=st.integers(1, 10), lam=st.floats(1e-3, 10.0),
       gamma=st.floats(0.1, 5.0), fit_intercept=st.booleans(), loo=st.booleans(), sparse=st.booleans(),
       error=st.sampled_from(["squared", "absolute"]))
# a fold whose polish meets a Hessian with no curvature for the intercept (every residual on Huber's linear
# piece): its factorization failed and the solve raised
@example(seed=0, n=8, d=3, lam=4.0, gamma=0.25, fit_intercept=True, loo=False, sparse=False, error="squared")
def test_huber_error_bounds_contain_the_exact_error(seed, n, d, lam, gamma, fit_intercept, loo, sparse, error):
    X, y = regression_problem(seed, n, d, sparse=sparse, heavy_tails=True)
    cv = LeaveOneOut() if loo else KFold(4, shuffle=True, random_state=seed)
    folds = [Fold(train, test) for train, test in cv.split(X)]
    loss = Huber(gamma)
    bounds = cross_validation_error(X, y, loss, folds, lambda m: get_penalty(lam, 0.0), fit_intercept, error=error)
    exact = cross_validation_error(X, y, loss, folds, lambda m: get_penalty(lam, 0.0), fit_intercept, error=error,
                                   exact=True)
    power = 2 if error == "squared" else 1
    refits = [exact_huber_values(X, y, loss, lam, fit_intercept, f) for f in folds]
    truth = np.array([np.mean(np.abs(values - y[f.test]) ** power) for f, (values, _) in zip(folds, refits)])
    unique = np.array([u for _, u in refits])
    # the bounds hold for every optimum; the exact error is one number only where the optimum is
    assert np.all(bounds.lower <= truth * (1 + 1e-9) + 1e-12) and np.all(truth <= bounds.upper * (1 + 1e-9) + 1e-12)
    np.testing.assert_allclose(exact.lower[unique], truth[unique], rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(exact.upper[unique], truth[unique], rtol=1e-7, atol=1e-10)


def test_huber_leave_one_out_bounds_are_informative():
    X, y = regression_problem(5, 120, 5, heavy_tails=True)
    folds = [Fold(train, test) for train, test in LeaveOneOut().split(X)]
    bounds = cross_validation_error(X, y, Huber(1.0), folds, lambda m: get_penalty(0.1, 0.0), True)
    assert bounds.n_retrained == 0
    assert bounds.mean_upper - bounds.mean_lower < 0.2 * bounds.mean_upper


def test_squared_loss_bounds_and_bad_error():
    X, y = regression_problem(6, 30, 4)
    folds = [Fold(train, test) for train, test in KFold(3).split(X)]
    with pytest.raises(ValueError, match="error must be"):
        cross_validation_error(X, y, Squared(), folds, lambda m: get_penalty(0.1, 0.0), True, error="cubic")
