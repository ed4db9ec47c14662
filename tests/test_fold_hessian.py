"""A fold's first Hessian from one Gram matrix of the full data (glru.fold_hessian)."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import MaxAbsScaler, MinMaxScaler, StandardScaler
from sklearn.svm import LinearSVC

from glru.fold_hessian import StartGram, mapped_gram
from glru.problem import Problem
from sklearn_ext._adapters import affine_scaling, linear_model

from ._problems import scaled_problem


@given(seed=st.integers(0, 10_000), m=st.integers(1, 30), d=st.integers(1, 8), shifted=st.booleans())
def test_mapped_gram_is_the_gram_of_the_mapped_rows(seed, m, d, shifted):
    rng = np.random.default_rng(seed)
    rows = rng.standard_normal((m, d + 1)) * np.logspace(-3, 3, d + 1)
    rows[:, d] = rng.uniform(0.1, 10.0)  # the constant coordinate
    weights = rng.standard_normal(m)
    scales, shifts = np.append(rng.uniform(0.0, 3.0, d), 1.0), np.append(rng.standard_normal(d), 0.0)
    if not shifted:
        shifts[:] = 0.0
    mapped = rows * scales + np.outer(rows[:, d], shifts)
    expected = mapped.T @ (weights[:, None] * mapped)
    got = mapped_gram(rows.T @ (weights[:, None] * rows), scales, shifts, d if shifted else None)
    scale = (np.abs(mapped).T @ (np.abs(weights)[:, None] * np.abs(mapped))).max()
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12 * scale)


def test_mapped_gram_refuses_a_constant_that_moves():
    with pytest.raises(ValueError, match="constant coordinate"):
        mapped_gram(np.eye(2), np.ones(2), np.array([0.5, 0.5]), 1)


# (scaler, sparse rows): those a scaler takes
SCALED = [(StandardScaler(), False), (StandardScaler(with_mean=False), False), (StandardScaler(with_mean=False), True),
          (MinMaxScaler(), False), (MaxAbsScaler(), False), (MaxAbsScaler(), True)]
MODELS = [LinearSVC(C=0.7), LinearSVC(C=3.0, intercept_scaling=2.5), LinearSVC(C=0.2, fit_intercept=False),
          LogisticRegression(C=1.5), LogisticRegression(C=0.4, fit_intercept=False)]


@pytest.mark.parametrize("scaler, sparse", SCALED, ids=lambda v: repr(v) if not isinstance(v, bool) else
                         "sparse" if v else "dense")
@pytest.mark.parametrize("final", MODELS, ids=repr)
def test_fold_hessian_is_the_folds_own_at_the_carried_over_start(scaler, sparse, final):
    """At any point of the full problem carried over to a fold's scaling, the fold's training rows
    have the full rows' curvatures, and the Hessian from the full data's Gram matrix is the one
    formed from the fold's own rows (a shift with no intercept to carry it: no map)."""
    X, y = scaled_problem(5, 60, 7, sparse)
    rng = np.random.default_rng(1)
    test = np.sort(rng.choice(60, size=12, replace=False))
    train = np.setdiff1d(np.arange(60), test)
    model = linear_model(final)
    full, fold = clone(scaler).fit(X), clone(scaler).fit(X[train])
    old, new = affine_scaling(full), affine_scaling(fold)
    mapping = model.fold_mapping(old, new)
    if mapping is None:
        assert not final.fit_intercept and np.any(new[1] - new[0] / old[0] * old[1])
        return
    X_full = model.design(sp.csr_matrix(full.transform(X)) if sparse else full.transform(X))
    X_train = model.design(sp.csr_matrix(fold.transform(X[train])) if sparse else fold.transform(X[train]))
    X_test = model.design(sp.csr_matrix(fold.transform(X[test])) if sparse else fold.transform(X[test]))
    targets = np.where(y == 1, 1.0, -1.0)
    coef, intercept = rng.standard_normal(X_full.shape[1]), float(rng.standard_normal()) * final.fit_intercept
    penalty = model.penalty_for(train.size)
    reference, hessian = StartGram(X_full, targets, model.loss, coef, intercept, model.fit_intercept).fold_hessian(
        train, test, X_test, penalty, *mapping)
    problem = Problem(X_train, targets[train], model.loss, penalty, model.fit_intercept)
    carried = model.carried_over(coef, intercept, old, new)
    own = model.loss.second_derivative(problem.y, problem.margins(*carried)) / train.size
    if isinstance(final, LinearSVC):  # (piecewise constant: the same values, bit for bit)
        np.testing.assert_array_equal(reference, own)
    else:
        np.testing.assert_allclose(reference, own, rtol=1e-9)
    formed = problem.hessian(reference)
    np.testing.assert_allclose(hessian, formed, rtol=0, atol=1e-11 * np.abs(formed).max())


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_start_gram_takes_the_hessian_the_full_fit_left(monkeypatch, fit_intercept):
    """Semismooth Newton leaves its last Hessian on the problem; a StartGram at the point it
    returned takes it (no Gram matrix formed) and equals the one formed, and forms its own where
    the Hessian is for other curvatures."""
    import glru.fold_hessian
    from glru.losses import get_loss
    from glru.penalties import L2
    from glru.solver import solve

    X, y = scaled_problem(9, 200, 12, True)
    targets, loss, penalty = np.where(y == 1, 1.0, -1.0), get_loss("squared_hinge"), L2(0.01)
    problem = Problem(X, targets, loss, penalty, fit_intercept)
    fit = solve(problem, tol=1e-10, method="semismooth")
    formed = StartGram(X, targets, loss, fit.coef, fit.intercept, fit_intercept).gram
    grams, gram = [], glru.fold_hessian.weighted_gram
    monkeypatch.setattr(glru.fold_hessian, "weighted_gram", lambda *args: grams.append(1) or gram(*args))
    taken = StartGram(X, targets, loss, fit.coef, fit.intercept, fit_intercept, problem.known_hessian, penalty)
    assert not grams
    np.testing.assert_allclose(taken.gram, formed, rtol=0, atol=1e-10 * np.abs(formed).max())
    elsewhere = StartGram(X, targets, loss, np.zeros_like(fit.coef), 0.0, fit_intercept, problem.known_hessian,
                          penalty)
    assert grams == [1]
    np.testing.assert_allclose(elsewhere.gram, StartGram(X, targets, loss, np.zeros_like(fit.coef), 0.0,
                                                         fit_intercept).gram)
