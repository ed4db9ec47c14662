"""Chord steps certified by curvature for a fold held as data of its own (glru.chord), against
exact fold optima."""

import numpy as np
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import glru
import glru.chord as chord
from glru.bounds import signs_decided
from glru.chord import chord_applies, chord_outcome
from glru.fold_refit import refit_fold
from glru.losses import Logistic, SquaredHinge
from glru.penalties import L2, ElasticNet
from glru.problem import Problem
from glru.solver import polish
from tests._problems import random_problem


def _exact(X, y, lam, fit_intercept):
    """The optimum to rounding."""
    fit = glru.fit(X, y, loss="logistic", lam=lam, fit_intercept=fit_intercept, tol=1e-14)
    return polish(fit.problem, fit.coef_, fit.intercept_)


def _fold(seed, n, d, sparse, fit_intercept, C):
    """(problem of the training rows, held-out rows, the full fit as start, the fold's exact
    held-out values) of a random logistic fold with a quarter of the rows held out."""
    rng = np.random.default_rng(seed)
    X, y = random_problem(seed, n, d, "logistic", sparse=sparse)
    test = rng.choice(n, size=max(2, n // 4), replace=False)
    train = np.setdiff1d(np.arange(n), test)
    if np.unique(y[train]).size < 2:
        return None
    full = glru.fit(X, y, loss="logistic", lam=1.0 / (C * n), fit_intercept=fit_intercept, tol=1e-14)
    problem = Problem(X[train], y[train], Logistic(), L2(1.0 / (C * train.size)), fit_intercept)
    coef, intercept = _exact(X[train], y[train], problem.penalty.lam, fit_intercept)
    exact = np.asarray(X[test] @ coef).ravel() + intercept
    return problem, X[test], (full.coef_, full.intercept_ if fit_intercept else 0.0), exact


def _narrower_than(rtol):
    """A still_open rule that keeps the chord going until every bound is this tight."""
    return lambda lower, upper: ~(upper - lower <= rtol * np.maximum(1.0, np.abs(0.5 * (lower + upper))))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(20, 120), d=st.integers(1, 12), sparse=st.booleans(),
       fit_intercept=st.booleans(), C=st.floats(1e-2, 1e3))
def test_property_chord_bounds_contain_the_exact_held_out_values(seed, n, d, sparse, fit_intercept, C):
    fold = _fold(seed, n, d, sparse, fit_intercept, C)
    if fold is None:
        return
    problem, X_test, start, exact = fold
    outcome, _ = chord_outcome(problem, *start, X_test, _narrower_than(1e-6))
    if outcome is None:
        return
    slack = 1e-11 * np.maximum(1.0, np.abs(exact))  # the reference optimum's own rounding
    assert np.all(outcome.lower <= exact + slack) and np.all(exact - slack <= outcome.upper)
    assert np.all(outcome.lower <= outcome.values) and np.all(outcome.values <= outcome.upper)


def test_chord_bounds_are_tight_and_decide_the_labels():
    """Not vacuous: most random folds are certified to 1e-6 within the step budget, and with the
    sign rule every label is the exact optimum's."""
    certified = 0
    for seed in range(30):
        fold = _fold(seed, 200, 8, seed % 2 == 0, seed % 3 > 0, 1.0)
        if fold is None:
            continue
        problem, X_test, start, exact = fold
        tight, _ = chord_outcome(problem, *start, X_test, _narrower_than(1e-6))
        certified += tight is not None
        labels, _ = chord_outcome(problem, *start, X_test, lambda lower, upper: ~signs_decided(lower, upper))
        if labels is not None:
            np.testing.assert_array_equal(labels.lower > 0, exact > 0)
    assert certified >= 25


def test_refit_fold_labels_with_and_without_chord_steps(monkeypatch):
    """refit_fold's labels and certified bounds by chord steps agree with a solve to rounding."""
    for seed in range(12):
        fold = _fold(seed, 300, 10, seed % 2 == 1, True, 10.0)
        if fold is None:
            continue
        problem, X_test, start, exact = fold
        args = (problem.X, problem.y, X_test, problem.loss, problem.penalty, True, [start])
        by_chord = refit_fold(*args)
        with monkeypatch.context() as patched:
            patched.setattr("glru.fold_refit.chord_applies", lambda problem: False)
            solved = refit_fold(*args)
        np.testing.assert_array_equal(by_chord.labels, solved.labels)
        np.testing.assert_array_equal(by_chord.labels, (exact > 0).astype(int))
        assert np.all(by_chord.lower <= exact + 1e-11) and np.all(exact - 1e-11 <= by_chord.upper)


def test_chord_applies_only_where_the_theorem_holds_and_the_hessian_is_cheap():
    X, y = random_problem(0, 2000, 20, "logistic", sparse=True, density=0.2)
    assert chord_applies(Problem(X, y, Logistic(), L2(1e-3), True))
    assert not chord_applies(Problem(X, y, SquaredHinge(), L2(1e-3), True))  # |ℓ‴| ≤ νℓ″ fails at the kink
    assert not chord_applies(Problem(X, y, Logistic(), ElasticNet(1e-3, 1e-3), True))
    wide, y_wide = random_problem(0, 600, 500, "logistic")  # n ≈ d, dense: a Hessian costs ~600 products
    assert not chord_applies(Problem(wide, y_wide, Logistic(), L2(1e-3), True))


def test_steps_together_replace_the_chord_where_dense_hessians_cost_many_products():
    """Where the chord applies, the folds' Newton–CG steps together pay off on dense rows whose
    Gram matrix costs at least STEP_GRAM_PRODUCTS products (d ≥ 60), not on fewer columns, nor
    on sparse rows; without the chord, wherever Newton–CG would solve a fold."""
    from glru.fold_refit import steps_together_pay_off

    def problem(n, d, sparse=False):
        X, y = random_problem(0, n, d, "logistic", sparse=sparse, density=0.1)
        made = Problem(X, y, Logistic(), L2(1e-3), True)
        assert chord_applies(made)
        return made
    assert steps_together_pay_off(problem(2000, 200))
    assert steps_together_pay_off(problem(500, 60))
    assert not steps_together_pay_off(problem(1000, 40))
    assert not steps_together_pay_off(problem(2000, 200, sparse=True))
    wide, y_wide = random_problem(0, 600, 500, "logistic")
    assert steps_together_pay_off(Problem(wide, y_wide, Logistic(), L2(1e-3), True))
    assert not steps_together_pay_off(Problem(wide, y_wide, SquaredHinge(), L2(1e-3), True))


def test_out_of_reach_folds_are_left_to_the_solve(monkeypatch):
    """Where the bounds cannot exist within reach of the gradient's rounding, nothing is stepped:
    the start comes back for the solve."""
    problem, X_test, start, _ = _fold(1, 100, 5, False, True, 1.0)
    monkeypatch.setattr(chord, "REACH", np.inf)
    outcome, point = chord_outcome(problem, *start, X_test, lambda lower, upper: ~signs_decided(lower, upper))
    assert outcome is None
    np.testing.assert_array_equal(point[0], start[0])
    assert point[1] == start[1]


def test_unseen_columns_get_exact_zero_weights_in_the_bounds():
    """A column no training row holds: the held-out rows made only of it are bounded by the
    intercept's interval (its weight is exactly 0 at the optimum), not left open."""
    rng = np.random.default_rng(3)
    X, y = random_problem(3, 150, 6, "logistic")
    X = np.hstack([X, np.zeros((150, 1))])
    test = np.arange(120, 150)
    X[test[:5]] = 0.0
    X[test[:5], -1] = 50.0  # only the held-out rows hold the last column
    problem = Problem(X[:120], y[:120], Logistic(), L2(1e-2), True)
    start = (rng.standard_normal(7) * 0.1, 0.0)
    outcome, _ = chord_outcome(problem, *start, X[test], _narrower_than(1e-6))
    assert outcome is not None
    coef, intercept = _exact(X[:120], y[:120], 1e-2, True)
    exact = X[test] @ coef + intercept
    assert np.all(outcome.lower <= exact + 1e-11) and np.all(exact - 1e-11 <= outcome.upper)
    assert np.all(outcome.upper[:5] - outcome.lower[:5] <= 1e-5)


def test_fold_rows_that_follow_each_other_are_stacked_without_a_copy():
    """A fold's training and held-out rows as the Pipeline adapter takes them (adjacent blocks of
    one array) are stacked as a view of it; rows from elsewhere, or sparse ones, are copied. The
    bounds' |X|·v, a block of rows at a time, is that of the copy |X|."""
    from glru.problem import absolute_times

    rng = np.random.default_rng(0)
    rows = rng.standard_normal((70000 // 50, 50))
    X, X_test = rows[:1200], rows[1200:]
    stacked = chord._stacked(X, X_test)
    assert np.shares_memory(stacked, rows) and not stacked.flags.writeable
    np.testing.assert_array_equal(stacked, rows)
    apart = chord._stacked(X, X_test.copy())
    assert not np.shares_memory(apart, rows)
    np.testing.assert_array_equal(apart, rows)
    np.testing.assert_array_equal(chord._stacked(sp.csr_matrix(X), sp.csr_matrix(X_test)).toarray(), rows)
    v = rng.random(50)
    for matrix in (rows, np.abs(rows), sp.csr_matrix(rows * (rng.random(rows.shape) < 0.1))):
        dense = matrix.toarray() if sp.issparse(matrix) else matrix
        np.testing.assert_allclose(absolute_times(matrix, v), np.abs(dense) @ v, rtol=1e-14)
