"""Semismooth Newton's whole steps (block principal pivoting, :func:`glru.semismooth._pivot`),
taken in the primal or through the dual, reach the exact optimum near a hard margin, where
damped steps crawl; where whole steps cycle, the damped steps take over and still get there."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_classification

from glru import semismooth
from glru.losses import SquaredHinge
from glru.penalties import L2
from glru.problem import Problem

from ._exact import squared_hinge_by_nnls


def _linear_svc_problem(X, y, C):
    """LinearSVC's primal as glru states it: its intercept a column of ones, penalized."""
    ones = np.ones((X.shape[0], 1))
    Z = sp.hstack([X, ones], format="csr") if sp.issparse(X) else np.hstack([X, ones])
    t = np.where(y > 0, 1.0, -1.0)
    return Problem(Z, t, SquaredHinge(), L2(1.0 / (C * X.shape[0])), False), t


def _solve(problem, monkeypatch=None, pivots=True):
    """(z, steps) of semismooth_newton from 0 to a relative gap of 1e-13, with or without the
    whole steps."""
    if not pivots:
        monkeypatch.setattr(semismooth, "_pivot", lambda problem, z, check, max_steps: (z, 0, False))
    found = {}

    def check(coef, intercept):
        found["z"] = coef
        return problem.duality_gap(coef, intercept).converged(1e-13)
    steps = semismooth.semismooth_newton(problem, np.zeros(problem.d), check, 500)
    return found["z"], steps


def test_whole_steps_reach_the_optimum_near_a_hard_margin(monkeypatch):
    """make_classification 548 × 289 (redundant features), LinearSVC(C=29): the whole steps
    find the optimum's piece in a few steps, where damped steps stop at row after row's kink;
    the point is the dual's exact optimum (Lawson–Hanson NNLS)."""
    X, y = make_classification(n_samples=548, n_features=289, n_informative=144, random_state=680)
    problem, t = _linear_svc_problem(X, y, 29.0)
    z, steps = _solve(problem)
    _, damped_steps = _solve(problem, monkeypatch, pivots=False)
    assert steps <= 20 < 2 * steps <= damped_steps
    exact = squared_hinge_by_nnls(problem.X, t, 29.0)
    np.testing.assert_allclose(problem.X @ z, problem.X @ exact, rtol=0, atol=1e-8)


@pytest.mark.parametrize("sparse", [False, True])
def test_the_dual_gives_the_primal_whole_step(sparse):
    """With no more rows than features, the whole step is taken through the dual (an |I| × |I|
    system on the rows with curvature): the same point as the primal's d̃ × d̃ Newton step."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((120, 200)) * (rng.random((120, 200)) < (0.1 if sparse else 1.0))
    y = np.where(X @ rng.standard_normal(200) + 0.3 * rng.standard_normal(120) > 0, 1, -1)
    problem, _ = _linear_svc_problem(sp.csr_matrix(X) if sparse else X, y, 3.0)
    assert semismooth.dual_pieces_apply(problem)
    z = 0.1 * rng.standard_normal(problem.d)
    curvatures = semismooth._curvatures(problem, z)
    assert 0 < np.count_nonzero(curvatures) < problem.n
    dual = semismooth._DualPieces(problem).minimizer(z, curvatures)
    primal = semismooth._PrimalPieces(problem, curvatures).minimizer(z, curvatures)
    np.testing.assert_allclose(dual, primal, rtol=1e-9, atol=1e-9 * np.abs(primal).max())


def test_damped_steps_take_over_where_whole_steps_cycle():
    """With many rows a feature, whole steps keep changing as many rows as ever: after their
    allowance the pivoting gives up (and semismooth Newton does not try it there, past
    PIVOT_MAX_ROWS_PER_FEATURE); the damped steps reach the exact optimum."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((600, 150))
    y = np.where(X @ rng.standard_normal(150) + 0.5 * rng.standard_normal(600) > 0, 1, -1)
    problem, t = _linear_svc_problem(X, y, 1.0)
    assert problem.n > semismooth.PIVOT_MAX_ROWS_PER_FEATURE * problem.d
    _, pivoted, done = semismooth._pivot(problem, np.zeros(problem.d), lambda coef, intercept: False, 500)
    assert not done and pivoted < 20
    z, _ = _solve(problem)
    exact = squared_hinge_by_nnls(problem.X, t, 1.0)
    np.testing.assert_allclose(problem.X @ z, problem.X @ exact, rtol=0, atol=1e-8)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("changed", [5, 400])
def test_hessian_updates_equal_the_hessian_formed_afresh(sparse, fit_intercept, changed):
    """The Hessian corrected by the rows whose curvature changed, a few by one dense product or
    many by :func:`glru.newton_centres.weighted_gram` (sparse rows kept sparse), is the Hessian
    formed at the new curvatures, to rounding."""
    rng = np.random.default_rng(changed)
    X = sp.random(2000, 40, density=0.1, format="csr", random_state=rng) if sparse else rng.standard_normal((2000, 40))
    problem = Problem(X, np.where(rng.random(2000) < 0.5, 1.0, -1.0), SquaredHinge(), L2(1e-3), fit_intercept)
    old = (rng.random(2000) < 0.5) / 2000.0
    rows = np.sort(rng.choice(2000, changed, replace=False))
    new = old.copy()
    new[rows] = np.where(old[rows] > 0, 0.0, 1 / 2000.0)
    assert changed <= semismooth.REFORM_SHARE * 2000  # corrected, not formed again
    updated = semismooth._updated(problem.hessian(old), problem, rows, new, old)
    expected = problem.hessian(new)
    np.testing.assert_allclose(updated, expected, rtol=0, atol=1e-12 * np.abs(expected).max())
