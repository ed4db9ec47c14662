"""The solvers reach the same optimum as scikit-learn and LIBLINEAR, stop on the duality gap,
warm-start, and exit early when asked (Remark 3)."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import ElasticNet, LogisticRegression, Ridge
from sklearn.svm import LinearSVC

import glru
from glru.solver import FORMED_MAX_DIM, FORMED_MIN_PRODUCTS, SEMISMOOTH_CHEAP_DIM, _products_budget, curvature_sample

from ._problems import random_problem


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("solver", ["newton", "liblinear"])
def test_logistic_matches_sklearn(sparse, fit_intercept, solver):
    X, y = random_problem(0, 120, 7, "logistic", sparse=sparse)
    n, C = X.shape[0], 0.7
    ours = glru.fit(X, y, loss="logistic", lam=1.0 / (n * C), fit_intercept=fit_intercept, tol=1e-10, solver=solver)
    ref = LogisticRegression(C=C, fit_intercept=fit_intercept, tol=1e-12, max_iter=10000).fit(X, y)
    np.testing.assert_allclose(ours.coef_, ref.coef_.ravel(), atol=2e-5)
    assert ours.intercept_ == pytest.approx(float(np.ravel(ref.intercept_)[0]), abs=2e-5)
    assert ours.relative_gap() <= 1e-10


@pytest.mark.parametrize("solver", ["newton", "liblinear", "liblinear-dual", "semismooth"])
@pytest.mark.parametrize("shape, sparse", [((150, 6), False), ((60, 200), True)], ids=["n>d dense", "n<d sparse"])
def test_squared_hinge_matches_linear_svc(solver, shape, sparse):
    X, y = random_problem(1, *shape, "squared_hinge", sparse=sparse)
    n, C = X.shape[0], 0.5
    ours = glru.fit(X, y, loss="squared_hinge", lam=1.0 / (n * C), tol=1e-10, solver=solver)
    ref = LinearSVC(C=C, loss="squared_hinge", dual=False, fit_intercept=False, tol=1e-12, max_iter=100000).fit(X, y)
    np.testing.assert_allclose(ours.coef_, ref.coef_.ravel(), atol=1e-5)
    assert ours.solver_.startswith(solver) and ours.relative_gap() <= 1e-10


@pytest.mark.parametrize("solver", ["newton", "liblinear", "liblinear-dual", "semismooth"])
def test_no_iteration_budget_warns_instead_of_failing(solver):
    X, y = random_problem(16, 50, 5, "squared_hinge")
    with pytest.warns(ConvergenceWarning):
        fit = glru.fit(X, y, loss="squared_hinge", lam=0.1, max_iter=0, solver=solver)
    assert not fit.converged_


@pytest.mark.parametrize("loss", ["squared_hinge", "smoothed_hinge", "huber"])
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("sparse", [False, True])
def test_semismooth_newton_reaches_the_optimum(loss, fit_intercept, sparse):
    X, y = random_problem(17, 160, 12, loss, sparse=sparse)
    ours = glru.fit(X, y, loss=loss, lam=1e-3, fit_intercept=fit_intercept, tol=1e-12, solver="semismooth")
    ref = glru.fit(X, y, loss=loss, lam=1e-3, fit_intercept=fit_intercept, tol=1e-12, solver="newton")
    assert ours.solver_ == "semismooth" and ours.relative_gap() <= 1e-12
    np.testing.assert_allclose(ours.coef_, ref.coef_, atol=1e-6 * (1 + np.abs(ref.coef_).max()))
    assert ours.intercept_ == pytest.approx(ref.intercept_, abs=1e-6)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(8, 80), d=st.integers(1, 30), log_lam=st.floats(-5, 0),
       fit_intercept=st.booleans(), warm=st.booleans())
def test_property_semismooth_newton_stops_at_a_certified_optimum(seed, n, d, log_lam, fit_intercept, warm):
    """From a cold start or a neighbouring problem's optimum, on any shape (n < d included, where
    the generalized Hessian is only positive definite through λ), the solve ends at a point whose
    sound gap is below tol, and at the same point as trust-region Newton's."""
    X, y = random_problem(seed, n, d, "squared_hinge")
    lam = 10.0 ** log_lam
    start = glru.fit(X, y, loss="squared_hinge", lam=2 * lam, fit_intercept=fit_intercept, tol=1e-8) if warm else None
    ours = glru.fit(X, y, loss="squared_hinge", lam=lam, fit_intercept=fit_intercept, tol=1e-11, solver="semismooth",
                    coef_init=start.coef_ if warm else None, intercept_init=start.intercept_ if warm else 0.0)
    assert ours.converged_ and ours.relative_gap() <= 1e-11
    ref = glru.fit(X, y, loss="squared_hinge", lam=lam, fit_intercept=fit_intercept, tol=1e-12, solver="newton")
    # both within √(2·gap/λ) of the optimum (strong convexity)
    radius = np.sqrt(2 * (ours.gap() + ref.gap()) / lam)
    assert np.linalg.norm(np.append(ours.coef_ - ref.coef_, ours.intercept_ - ref.intercept_)) <= 2 * radius + 1e-12


@pytest.mark.parametrize("solver", ["newton", "liblinear"])
def test_squared_loss_matches_ridge(solver):
    X, y = random_problem(2, 80, 5, "squared")
    n, alpha = X.shape[0], 3.0
    ours = glru.fit(X, y, loss="squared", lam=alpha / n, fit_intercept=True, tol=1e-12, solver=solver)
    ref = Ridge(alpha=alpha).fit(X, y)
    np.testing.assert_allclose(ours.coef_, ref.coef_, atol=1e-6)
    assert ours.intercept_ == pytest.approx(ref.intercept_, abs=1e-6)


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_elastic_net_matches_sklearn(fit_intercept):
    X, y = random_problem(3, 100, 12, "squared")
    alpha, l1_ratio = 0.2, 0.6
    ours = glru.fit(X, y, loss="squared", lam=alpha * (1 - l1_ratio), kappa=alpha * l1_ratio,
                    fit_intercept=fit_intercept, tol=1e-12)
    ref = ElasticNet(alpha=alpha, l1_ratio=l1_ratio, fit_intercept=fit_intercept, tol=1e-14, max_iter=100000).fit(X, y)
    np.testing.assert_allclose(ours.coef_, ref.coef_, atol=1e-6)
    assert np.array_equal(ours.coef_ == 0, ref.coef_ == 0)
    assert ours.solver_ == "l-bfgs-b"


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge", "smoothed_hinge", "huber"])
def test_elastic_net_satisfies_kkt(loss):
    X, y = random_problem(4, 90, 15, loss)
    lam, kappa = 0.01, 0.05
    fit = glru.fit(X, y, loss=loss, lam=lam, kappa=kappa, fit_intercept=True, tol=1e-12)
    grad = fit.problem.grad(fit.problem.join(fit.coef_, fit.intercept_))
    g, g_b = grad[:-1], grad[-1]
    nz = fit.coef_ != 0
    np.testing.assert_allclose(g[nz] + kappa * np.sign(fit.coef_[nz]), 0.0, atol=1e-6)
    assert np.all(np.abs(g[~nz]) <= kappa + 1e-6)
    assert abs(g_b) < 1e-6
    assert (~nz).any(), "kappa this large should zero some coefficients"


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge", "squared"])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_newton_and_liblinear_agree(loss, fit_intercept):
    X, y = random_problem(5, 200, 10, loss, sparse=True)
    a = glru.fit(X, y, loss=loss, lam=1e-3, fit_intercept=fit_intercept, tol=1e-11, solver="newton")
    b = glru.fit(X, y, loss=loss, lam=1e-3, fit_intercept=fit_intercept, tol=1e-11, solver="liblinear")
    assert a.solver_ == "newton" and b.solver_ == "liblinear"
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-5 * (1 + np.abs(a.coef_).max()))
    assert a.intercept_ == pytest.approx(b.intercept_, abs=1e-5)


def test_dense_and_sparse_agree():
    X, y = random_problem(6, 100, 8, "logistic", sparse=True)
    a = glru.fit(X, y, lam=1e-2, fit_intercept=True, tol=1e-12, solver="newton")
    b = glru.fit(X.toarray(), y, lam=1e-2, fit_intercept=True, tol=1e-12, solver="newton")
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-8)


@pytest.mark.parametrize("solver", ["newton", "liblinear"])
def test_stops_on_relative_gap(solver):
    X, y = random_problem(7, 300, 20, "logistic")
    for tol in (1e-2, 1e-5, 1e-9):
        fit = glru.fit(X, y, lam=1e-3, tol=tol, solver=solver)
        assert fit.converged_
        assert fit.relative_gap() <= tol or fit.gap() - fit.problem.duality_gap(fit.coef_).allowance <= tol * fit.primal_


def test_warm_start_needs_fewer_iterations():
    X, y = random_problem(8, 400, 30, "logistic")
    fit = glru.fit(X, y, lam=1e-3, tol=1e-8, solver="newton")
    cold = glru.fit(X[5:], y[5:], lam=1e-3, tol=1e-8, solver="newton")
    warm = fit.remove_samples(range(5)).refit(tol=1e-8, solver="newton")
    assert warm.n_iter_ < cold.n_iter_
    np.testing.assert_allclose(warm.coef_, cold.coef_, atol=1e-4)


def test_early_exit_stops_once_sign_is_certified():
    """Remark 3: a retrain can stop as soon as the held-out prediction's sign is certified."""
    X, y = random_problem(9, 300, 40, "logistic")
    held_out = X[:1]
    seen = []

    def sign_decided(cert):
        lo, hi = cert.decision_bounds(held_out)
        seen.append(cert.gap)
        return lo[0] > 0 or hi[0] < 0

    early = glru.fit(X[1:], y[1:], lam=1e-3, tol=1e-12, stop_when=sign_decided)
    full = glru.fit(X[1:], y[1:], lam=1e-3, tol=1e-12, solver="newton")
    assert early.stopped_early_ and not early.converged_
    assert early.n_iter_ < full.n_iter_
    assert np.sign(early.decision_function(held_out)) == np.sign(full.decision_function(held_out))
    assert len(seen) >= 1


def test_early_exit_predicate_false_runs_to_tolerance():
    X, y = random_problem(10, 100, 5, "logistic")
    fit = glru.fit(X, y, lam=1e-2, tol=1e-9, stop_when=lambda cert: False)
    assert fit.converged_ and not fit.stopped_early_
    assert fit.solver_ == "newton"


@pytest.mark.parametrize("solver, loss, options, match", [
    ("liblinear", "huber", {}, "liblinear"),
    ("liblinear", "logistic", dict(kappa=0.1), "liblinear"),
    ("liblinear-dual", "squared_hinge", dict(fit_intercept=True), "liblinear-dual"),
    ("liblinear-dual", "logistic", {}, "liblinear-dual"),
    ("semismooth", "logistic", {}, "semismooth"),
    ("semismooth", "squared_hinge", dict(kappa=0.1), "semismooth"),
    ("formed-newton", "logistic", dict(kappa=0.1), "formed-newton"),
], ids=repr)
def test_solver_rejects_what_it_cannot_solve(solver, loss, options, match):
    X, y = random_problem(11, 50, 4, loss)
    with pytest.raises(ValueError, match=match):
        glru.fit(X, y, loss=loss, lam=0.1, solver=solver, **options)


def test_warns_when_max_iter_is_too_small():
    X, y = random_problem(12, 300, 30, "logistic")
    with pytest.warns(ConvergenceWarning, match="relative gap"):
        fit = glru.fit(X, y, lam=1e-5, tol=1e-12, max_iter=1, solver="newton")
    assert not fit.converged_


def test_auto_follows_the_benchmark():
    """docs/benchmarks.md: trust-region Newton unless kappa > 0, or semismooth Newton for a
    piecewise quadratic loss where its factorizations are cheap (on sparse rows from a cold
    start, trust-region Newton within its budget of products, unless whole steps apply: at most
    two rows a feature); dual coordinate descent, faster on cold squared-hinge fits, is only taken
    when asked for: its row order is random."""
    X, y = random_problem(13, 60, 4, "logistic")
    assert glru.fit(X, y, lam=0.1).solver_ == "newton"
    for loss in ("squared_hinge", "smoothed_hinge"):
        assert glru.fit(X, y, loss=loss, lam=0.1).solver_ == "semismooth"
        cold = glru.fit(sp.csr_matrix(X), y, loss=loss, lam=0.1)
        assert cold.solver_ == "newton"
        warm = glru.fit(sp.csr_matrix(X), y, loss=loss, lam=0.05, coef_init=cold.coef_, intercept_init=cold.intercept_)
        assert warm.solver_ == "semismooth"
    assert glru.fit(X, y, lam=0.1, kappa=0.01).solver_ == "l-bfgs-b"
    few, y_few = random_problem(13, 30, 20, "logistic", sparse=True)  # whole steps from 0
    assert glru.fit(few, y_few, loss="squared_hinge", lam=0.1).solver_ == "semismooth"
    wide, y = random_problem(13, 60, SEMISMOOTH_CHEAP_DIM + 1, "logistic", sparse=True, density=0.02)
    assert glru.fit(wide, y, loss="squared_hinge", lam=0.1).solver_ == "newton"


@pytest.mark.parametrize("loss", ["logistic", "squared", "squared_hinge"])
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("sparse", [False, True])
def test_formed_newton_reaches_the_optimum(loss, fit_intercept, sparse):
    """Damped Newton steps with the Hessian formed at each, any loss with an L2 penalty: the
    optimum trust-region Newton reaches, from a cold start and from a neighbouring one."""
    X, y = random_problem(19, 200, 15, loss, sparse=sparse)
    ref = glru.fit(X, y, loss=loss, lam=1e-3, fit_intercept=fit_intercept, tol=1e-13, solver="newton")
    for start in (None, glru.fit(X, y, loss=loss, lam=3e-3, fit_intercept=fit_intercept, tol=1e-8)):
        ours = glru.fit(X, y, loss=loss, lam=1e-3, fit_intercept=fit_intercept, tol=1e-12, solver="formed-newton",
                        coef_init=None if start is None else start.coef_,
                        intercept_init=0.0 if start is None else start.intercept_)
        assert ours.converged_ and ours.relative_gap() <= 1e-12 and ours.solver_.startswith(
            "semismooth" if loss == "squared_hinge" else "formed-newton")
        radius = np.sqrt(2 * (ours.gap() + ref.gap()) / 1e-3)
        assert np.linalg.norm(np.append(ours.coef_ - ref.coef_, ours.intercept_ - ref.intercept_)) <= 2 * radius + 1e-12


def test_line_search_extends_a_whole_step_into_the_logistic_tail():
    """Where the logistic loss's tail makes Newton's quadratic model stop short (a separable
    direction, tiny λ), the step is extended past 1 to φ's minimizer: φ'(t) ≈ 0 there and φ is
    lower than after the whole step; near the optimum a step stays whole."""
    from glru.losses import Logistic
    from glru.penalties import L2
    from glru.problem import Problem
    from glru.semismooth import _curvatures, _search

    rng = np.random.default_rng(3)
    X = rng.standard_normal((200, 3))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)  # separable along the first column
    problem = Problem(X, y, Logistic(), L2(1e-6), False)
    z = np.array([2.0, 0.0, 0.0])
    gradient = problem.grad(z)
    step = -np.linalg.solve(problem.hessian(_curvatures(problem, z)), gradient)
    t, resolved = _search(problem, z, step, float(gradient @ step))
    assert resolved and t > 1.5
    assert problem.fun(z + t * step) < problem.fun(z + step)
    moved = problem.grad(z + t * step) @ step
    assert abs(moved) <= 1e-3 * abs(gradient @ step)
    solved = glru.fit(X[:, 1:], y, lam=1e-2, tol=1e-14, solver="newton").problem  # (a non-separable problem)
    fit = glru.fit(X[:, 1:], y, lam=1e-2, tol=1e-6, solver="newton")
    z = fit.coef_
    gradient = solved.grad(z)
    step = -np.linalg.solve(solved.hessian(_curvatures(solved, z)), gradient)
    assert _search(solved, z, step, float(gradient @ step)) == (1.0, True)


def scaled_problem(seed, n, d, sparse):
    """Columns scaled over six decades (unstandardized features of mixed units)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * 10.0 ** rng.uniform(-3, 3, size=d)
    if sparse:
        X[rng.random((n, d)) < 0.5] = 0.0
    y = np.where(rng.standard_normal(n) + X @ rng.standard_normal(d) / np.linalg.norm(X, axis=0).mean() > 0, 1, -1)
    return (sp.csr_matrix(X) if sparse else X), y


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("method", ["auto", "liblinear-dual"])
def test_squared_hinge_on_badly_scaled_columns_converges(seed, method):
    """Trust-region Newton and then LIBLINEAR's primal Newton stopped at relative gaps of 0.01
    to 0.6 on 5 of these 6 (1000 iterations); LIBLINEAR's dual crawls on such columns and, at
    its iteration limit, switches to that primal Newton. Semismooth Newton (the default's finish
    once trust-region Newton has spent its products, and the dual's) converges in a few steps."""
    X, y = scaled_problem(seed, 24, 155, seed % 2 == 0)
    fit = glru.fit(X, y, loss="squared_hinge", lam=1 / (24 * 5.0), tol=1e-12, solver=method)
    assert fit.converged_ and fit.relative_gap() <= 1e-12 and "semismooth" in fit.solver_


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("lam", [1e-2, 1e-4])
def test_logistic_on_badly_scaled_columns_finishes_with_the_hessian_formed(seed, lam):
    """Trust-region Newton–CG's products pass their budget on these columns; damped Newton with
    the Hessian formed takes over and reaches the gap, at the optimum trust-region Newton alone
    reaches with many more products."""
    X, y = scaled_problem(seed, 600, 60, seed % 2 == 0)
    fit = glru.fit(X, y, lam=lam, tol=1e-12)
    assert fit.converged_ and fit.relative_gap() <= 1e-12 and "formed-newton" in fit.solver_
    alone = glru.fit(X, y, lam=lam, tol=1e-12, solver="newton", max_iter=5000)
    assert alone.solver_ == "newton"
    # two points at relative gap 1e-12: their margins agree to the ball's width, not to rounding
    np.testing.assert_allclose(fit.decision_function(X), alone.decision_function(X), rtol=1e-5, atol=1e-5)


def test_products_budget_only_where_the_hessian_can_be_formed():
    """An L2 penalty and d̃ ≤ FORMED_MAX_DIM (a smooth loss or a piecewise quadratic one); at
    least FORMED_MIN_PRODUCTS."""
    from glru.losses import Logistic, SquaredHinge
    from glru.penalties import L2, ElasticNet
    from glru.problem import Problem

    X, y = random_problem(14, 50, 6, "logistic", sparse=True)
    assert _products_budget(Problem(X, y, Logistic(), L2(0.1), True)) >= FORMED_MIN_PRODUCTS
    assert _products_budget(Problem(X, y, SquaredHinge(), L2(0.1), True)) >= FORMED_MIN_PRODUCTS
    assert _products_budget(Problem(X, y, Logistic(), ElasticNet(0.1, 0.1), True)) is None
    wide, y = random_problem(14, 20, FORMED_MAX_DIM, "logistic", sparse=True, density=0.01)
    assert _products_budget(Problem(wide, y, Logistic(), L2(0.1), True)) is None
    empty = sp.csr_matrix((20, 3))
    assert _products_budget(Problem(empty, y, Logistic(), L2(0.1), False)) == FORMED_MIN_PRODUCTS


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 5])
def test_elastic_net_on_badly_scaled_columns_converges(seed):
    """L-BFGS-B on w stopped at relative gaps of 2.9 to 112 on these five (1000 iterations); on
    the Jacobi-scaled variables it converges."""
    X, y = scaled_problem(seed, 95, 48, seed % 2 == 0)
    fit = glru.fit(X, y, lam=0.8 / (95 * 18), kappa=0.2 / (95 * 18), tol=1e-12)
    assert fit.converged_ and fit.relative_gap() <= 1e-12


def test_stalled_trust_region_is_finished_exactly(shared_data):
    """madelon, squared hinge, lam = 1e-4: trust-ncg alone crawls; the finish reaches the gap."""
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(str(shared_data / "madelon.t.gz"))
    X = X.toarray()
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    for loss in ("squared_hinge", "smoothed_hinge"):
        fit = glru.fit(X, y, loss=loss, lam=1e-4, solver="newton", tol=1e-6)
        assert fit.converged_ and fit.relative_gap() <= 1e-6


@pytest.mark.parametrize("size", [1, 7, 40, 99])
def test_curvature_sample_is_a_systematic_pps_sample(size):
    rng = np.random.default_rng(size)
    scores = rng.pareto(1.0, 200)  # heavy tail: some rows must be taken surely
    scores[rng.choice(200, 20, replace=False)] = 0.0
    rows, weights = curvature_sample(scores, size)
    assert np.all(np.diff(rows) > 0) and abs(rows.size - size) <= 1
    assert np.all(scores[rows] > 0) and np.all(weights >= 1.0)
    sure = rows[weights == 1.0]
    rest = np.setdiff1d(np.flatnonzero(scores > 0), sure)
    if rest.size:  # every row left out scores below every row taken surely
        assert scores[rest].max() <= scores[sure].min(initial=np.inf)
    # p_i ∝ scores (uncapped): each taken row stands for the same share of the total
    estimate = weights * scores[rows]
    uncapped = weights > 1.0
    if uncapped.any():
        assert np.ptp(estimate[uncapped]) <= 1e-12 * estimate[uncapped].max()
    # an unbiased total: off by at most one uncapped row's estimate
    assert abs(estimate.sum() - scores.sum()) <= estimate[uncapped].max(initial=0.0) * (1 + 1e-12) + 1e-12 * scores.sum()


def test_curvature_sample_takes_every_row_when_the_budget_allows():
    scores = np.array([0.0, 1.0, 5.0, 2.0])
    rows, weights = curvature_sample(scores, 10)
    np.testing.assert_array_equal(rows, [1, 2, 3])
    np.testing.assert_array_equal(weights, 1.0)


@pytest.mark.parametrize("loss", ["squared_hinge", "huber"])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_damped_semismooth_newton_reaches_the_optimum_from_zero(loss, fit_intercept):
    """Piecewise-quadratic losses: Newton steps whose Hessian is re-evaluated at the rows that
    crossed a kink (NewtonCentres.reevaluate), damped until the objective decreases, go from a
    cold start to the optimum, and leave the exact Hessian of the final point."""
    from glru.losses import get_loss
    from glru.newton_centres import NewtonCentres, weighted_gram
    from glru.penalties import L2
    from glru.problem import Problem
    from glru.solver import polish

    X, y = random_problem(7, 300, 12, "squared" if loss == "huber" else "logistic", scale=3.0)
    n, lam = X.shape[0], 1e-3
    problem = Problem(X, y, get_loss(loss), L2(lam), fit_intercept)
    hessian = NewtonCentres(X, y, problem.loss, fit_intercept, np.zeros(12), 0.0, n * lam)

    def newton_solve(g, z):
        hessian.reevaluate(problem.margins(*problem.split(z)))
        return n * hessian.full_solver(g)
    coef, intercept = polish(problem, np.zeros(12), 0.0, max_steps=50, newton_solve=newton_solve,
                             objective=problem.fun)
    assert problem.duality_gap(coef, intercept).converged(1e-10)
    hessian.reevaluate(problem.margins(coef, intercept))
    curvatures = problem.loss.second_derivative(y, problem.margins(coef, intercept))
    exact = weighted_gram(X, curvatures, fit_intercept) + np.diag(n * lam * hessian.mask)
    np.testing.assert_allclose(hessian.hessian, exact, rtol=0, atol=1e-9 * np.abs(exact).max())


@pytest.mark.parametrize("signs, tol, first", [(False, 1e-14, 1e-9), (True, 1e-14, 1e-7), (False, 1e-4, 1e-4)],
                         ids=["values", "signs", "start"])
def test_dual_solve_for_signs_starts_looser(monkeypatch, signs, tol, first):
    """LIBLINEAR's dual for held-out signs (``stop_when``) runs at 1e-7 first, for a gap at
    1e-9 (d̃ beyond SEMISMOOTH_CHEAP_DIM: no semismooth finish), and for a loose gap (a start)
    at scikit-learn's 1e-4; either way the signs it stops at are those of the optimum (to the
    gap asked for: a start's, here, too)."""
    import glru.solver as solver
    from glru.losses import get_loss
    from glru.penalties import L2
    from glru.problem import Problem

    rng = np.random.default_rng(7)
    X = sp.random(60, 3000, density=0.01, format="csr", random_state=rng, data_rvs=rng.standard_normal)
    y = np.where(X @ rng.standard_normal(3000) + 0.3 * rng.standard_normal(60) > 0, 1.0, -1.0)
    problem, X_test = Problem(X[:50], y[:50], get_loss("squared_hinge"), L2(1 / 50), False), X[50:]
    runs, train = [], solver._liblinear_train
    monkeypatch.setattr(solver, "_liblinear_train", lambda ll_problem, options, init=None:
                        runs.append(float(options.split("-e ")[1])) or train(ll_problem, options, init))
    result = solver.solve(problem, tol=tol, method="liblinear-dual",
                          stop_when=solver.SignsDecided(X_test) if signs else None)
    assert runs[0] == first and (result.converged or result.stopped_early)
    optimum = solver.solve(problem, tol=1e-14, method="newton")
    values = np.asarray(X_test @ result.coef).ravel()
    np.testing.assert_array_equal(values > 0, np.asarray(X_test @ optimum.coef).ravel() > 0)


@pytest.mark.parametrize("C", [1.0, 10.0, 100.0])
def test_dual_solve_for_signs_with_half_as_many_rows_as_features_finishes_by_the_primal(monkeypatch, C):
    """With at least half as many rows as features (d̃ beyond SEMISMOOTH_CHEAP_DIM), LIBLINEAR's
    dual for held-out signs runs once at 1e-4; where its point leaves signs open (here at C = 10
    and 100, in 40 of 40 repeats; the dual visits rows in a random order), it is finished by
    LIBLINEAR's primal from there, 1e-6 first, a hundredfold tighter each next run: the signs of
    the optimum either way."""
    import glru.solver as solver
    from glru.losses import get_loss
    from glru.penalties import L2
    from glru.problem import Problem

    rng = np.random.default_rng(9)
    X = sp.random(400, 600, density=0.02, format="csr", random_state=rng, data_rvs=rng.standard_normal)
    y = np.where(X @ rng.standard_normal(600) + 0.3 * rng.standard_normal(400) > 0, 1.0, -1.0)
    problem, X_test = Problem(X[:350], y[:350], get_loss("squared_hinge"), L2(1 / (350 * C)), False), X[350:]
    runs, train = [], solver._liblinear_train
    monkeypatch.setattr(solver, "_liblinear_train", lambda ll_problem, options, init=None: runs.append(
        (int(options.split("-s ")[1].split()[0]), float(options.split("-e ")[1]))) or train(ll_problem, options, init))
    result = solver.solve(problem, tol=1e-14, method="liblinear-dual", stop_when=solver.SignsDecided(X_test))
    assert runs == [(1, 1e-4)] + [(2, pytest.approx(1e-6 * 1e-2 ** k)) for k in range(len(runs) - 1)]
    assert len(runs) > 1 or C == 1.0
    assert result.stopped_early or result.converged
    optimum = solver.solve(problem, tol=1e-14, method="newton")
    values = np.asarray(X_test @ result.coef).ravel()
    np.testing.assert_array_equal(values > 0, np.asarray(X_test @ optimum.coef).ravel() > 0)


@pytest.mark.parametrize("loss", ["squared_hinge", "logistic"])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_primal_liblinear_for_signs_stops_once_they_are_certified(monkeypatch, loss, fit_intercept):
    """LIBLINEAR's trust-region Newton for held-out signs (``stop_when``) runs warm from the
    start at 1e-6 first, then a hundredfold tighter each run, and stops at the first point that
    satisfies ``stop_when`` (or the gap): the signs of the optimum."""
    import glru.solver as solver
    from glru.losses import get_loss
    from glru.penalties import L2
    from glru.problem import Problem

    rng = np.random.default_rng(8)
    X = sp.random(400, 100, density=0.05, format="csr", random_state=rng, data_rvs=rng.standard_normal)
    y = np.where(X @ rng.standard_normal(100) + 0.3 * rng.standard_normal(400) > 0, 1.0, -1.0)
    problem, X_test = Problem(X[:360], y[:360], get_loss(loss), L2(1 / 360), fit_intercept), X[360:]
    start = solver.solve(Problem(X, y, get_loss(loss), L2(1 / 400), fit_intercept), tol=1e-12)
    runs, train = [], solver._liblinear_train
    monkeypatch.setattr(solver, "_liblinear_train", lambda ll_problem, options, init=None:
                        runs.append(float(options.split("-e ")[1])) or train(ll_problem, options, init))
    result = solver.solve(problem, start.coef, start.intercept, tol=1e-15, method="liblinear",
                          stop_when=solver.SignsDecided(X_test))
    assert runs[0] == 1e-6 and (result.stopped_early or result.converged)
    optimum = solver.solve(problem, tol=1e-15, method="newton")
    margins = lambda fit: np.asarray(X_test @ fit.coef).ravel() + fit.intercept
    np.testing.assert_array_equal(margins(result) > 0, margins(optimum) > 0)
    assert np.all(np.abs(margins(optimum)) > 1e-9)  # (no tie the test could not see)
    # C = 10⁴: the first run is still short of the gap's rounding level. A question answered at the second
    # point it is asked at stops there; one never answered goes on, a hundredfold tighter, to the gap
    problem = Problem(X[:360], y[:360], get_loss(loss), L2(1e-4 / 360), fit_intercept)
    for answered_at in (2, None):
        runs.clear()
        asked = []
        result = solver.solve(problem, start.coef, start.intercept, tol=1e-15, method="liblinear",
                              stop_when=lambda cert: asked.append(cert) or len(asked) == answered_at)
        if answered_at:
            assert result.stopped_early and runs == [1e-6]
        else:
            assert result.converged and len(runs) >= 2 and runs[0] == 1e-6
            np.testing.assert_allclose(np.array(runs[1:]) / runs[:-1], 1e-2)


def test_primal_liblinear_goes_on_where_it_converged_with_a_sign_open(monkeypatch):
    """A held-out row whose value at the optimum is 2.4e-7: LIBLINEAR's primal reaches P − D's
    rounding (a relative gap of 2e-15) at its second run with that sign open; the Fenchel–Young
    gap is above its own rounding and still falling, so a third run, a hundredfold tighter, takes
    it to 1e-19, where the certificate decides the sign. No Newton polish follows, and the sign is
    the optimum's. A start the caller found open (``start_open``) is not evaluated again: one
    check a run."""
    import glru.solver as solver
    from glru.losses import get_loss
    from glru.penalties import L2
    from glru.problem import Problem

    rng = np.random.default_rng(8)
    X = sp.random(400, 100, density=0.05, format="csr", random_state=rng, data_rvs=rng.standard_normal)
    y = np.where(X @ rng.standard_normal(100) + 0.3 * rng.standard_normal(400) > 0, 1.0, -1.0)
    hinge, lam = get_loss("squared_hinge"), L2(1 / 360)
    problem = Problem(X[:360], y[:360], hinge, lam, False)
    optimum = solver.solve(problem, tol=1e-15, method="newton")
    w = solver.polish(problem, optimum.coef, 0.0)[0]
    v = X[360].toarray().ravel()
    X_test = sp.csr_matrix(v - (v @ w - 1e-7 * np.linalg.norm(v)) / (w @ w) * w)  # x·w = 1e-7‖v‖
    start = solver.solve(Problem(X, y, hinge, L2(1 / 400), False), tol=1e-12)
    runs, checks, train, check = [], [], solver._liblinear_train, solver._GapMonitor._evaluate
    monkeypatch.setattr(solver, "_liblinear_train", lambda ll_problem, options, init=None:
                        runs.append(float(options.split("-e ")[1])) or train(ll_problem, options, init))
    monkeypatch.setattr(solver._GapMonitor, "_evaluate", lambda self, *point: checks.append(1) or check(self, *point))
    monkeypatch.setattr(solver, "polish", lambda *args, **kwargs: pytest.fail("polished"))
    coef, _ = solver.solve_held_out(X[:360], y[:360], hinge, lam, False, start.coef, 0.0, X_test, 1e-15, "liblinear",
                                    start_open=True)
    assert runs == [1e-6, pytest.approx(1e-8), pytest.approx(1e-10)] and len(checks) == len(runs)
    assert (X_test @ coef)[0] > 0 and (X_test @ w)[0] > 0
    runs.clear(), checks.clear()
    result = solver.solve(problem, start.coef, 0.0, tol=1e-15, method="liblinear",
                          stop_when=solver.SignsDecided(X_test))
    assert result.converged and result.signs_decided and len(runs) == 3 and len(checks) == 4  # (the start's too)


@pytest.mark.parametrize("seed", [0, 2, 4])
def test_dual_runs_tighten_to_the_radius_the_open_signs_need(monkeypatch, seed):
    """LIBLINEAR's dual, after a run that leaves held-out signs open, runs next at the tolerance that
    brings its certified radius (which falls in proportion to the tolerance) to half what the open
    signs were seen to need, not 1e-4 times tighter: a fold of sparse 600 × 1600 (2.5 %) with a
    StandardScaler, squared hinge at C = 45, where 1e-7 leaves signs open and 1e-11 followed. The
    second run decides them, and they are the optimum's, computed apart."""
    import glru.solver as solver
    from glru.losses import get_loss
    from glru.penalties import L2
    from glru.problem import Problem, with_constant_column
    from sklearn.model_selection import StratifiedKFold
    from sklearn.preprocessing import StandardScaler

    from ._exact import squared_hinge_optimum

    rng = np.random.default_rng(seed)
    X = sp.random(600, 1600, density=0.025, random_state=rng, data_rvs=rng.standard_normal, format="csr")
    y = np.where(X @ rng.standard_normal(1600) + 0.3 * rng.standard_normal(600) > 0, 1.0, -1.0)
    train, test = list(StratifiedKFold(5).split(X, y))[0]
    scaler = StandardScaler(with_mean=False).fit(X[train])
    Z, Z_test = (with_constant_column(scaler.transform(X[rows]), 1.0) for rows in (train, test))
    tolerances, train_liblinear = [], solver._liblinear_train
    monkeypatch.setattr(solver, "_liblinear_train", lambda ll_problem, options, init=None:
                        tolerances.append(float(options.split("-e ")[1])) or train_liblinear(ll_problem, options, init))
    problem = Problem(Z, y[train], get_loss("squared_hinge"), L2(1 / (45.0 * train.size)), False)
    result = solver.solve(problem, tol=1e-15, stop_when=solver.SignsDecided(Z_test), method="liblinear-dual")
    assert result.stopped_early and len(tolerances) == 2 and tolerances[0] == solver._DUAL_EPS_SIGNS
    assert solver._DUAL_EPS_FACTOR < tolerances[1] / tolerances[0] <= 0.1
    optimum = squared_hinge_optimum(Z.toarray(), y[train], 45.0)
    np.testing.assert_array_equal(Z_test @ result.coef > 0, Z_test @ optimum > 0)


@pytest.mark.parametrize("seed, fold", [(3, 1), (85, 0), (103, 0)])
def test_primal_liblinear_that_stalls_is_finished_by_semismooth_newton(monkeypatch, seed, fold):
    """LIBLINEAR's primal stops where a step's decrease is within 1e-12 of the objective, short of
    rounding level: on a fold of sparse Gaussian rows scaled by a StandardScaler, C from 55 to 60,
    a run leaves its open point's gap about where the run before left it (relative 1e-11), held-out
    signs open. No tighter run follows, and semismooth Newton (d̃ ≤ SEMISMOOTH_CHEAP_DIM) finishes
    from that point, not trust-region Newton–CG, which crawls at the squared hinge's kinks (on a
    fold of 6086 × 306, 46 iterations left the gap where it was). The signs are those of the
    optimum, computed apart (Mangasarian's finite Newton method)."""
    import glru.solver as solver
    from glru.losses import get_loss
    from glru.penalties import L2
    from glru.problem import with_constant_column
    from sklearn.model_selection import StratifiedKFold
    from sklearn.preprocessing import StandardScaler

    from ._exact import squared_hinge_optimum

    rng = np.random.default_rng(seed)
    n, d, density = int(rng.integers(300, 3000)), int(rng.integers(20, 300)), float(rng.uniform(0.02, 0.1))
    X = sp.random(n, d, density=density, random_state=rng, data_rvs=rng.standard_normal, format="csr")
    y = np.where(X @ rng.standard_normal(d) + 0.5 * np.sqrt(density * d) * rng.standard_normal(n) > 0, 1.0, -1.0)
    C = float(np.exp(rng.uniform(np.log(5), np.log(100))))
    train, test = list(StratifiedKFold(5).split(X, y))[fold]
    scaler = StandardScaler(with_mean=False).fit(X[train])
    Z, Z_test = (with_constant_column(scaler.transform(X[rows]), 1.0) for rows in (train, test))
    gaps, evaluate = [], solver._GapMonitor._evaluate

    def evaluated(monitor, *point):
        done = evaluate(monitor, *point)
        gaps.append(monitor.best[2].gap)
        return done

    monkeypatch.setattr(solver._GapMonitor, "_evaluate", evaluated)
    runs, train_liblinear = [], solver._liblinear_train
    monkeypatch.setattr(solver, "_liblinear_train", lambda ll_problem, options, init=None:
                        runs.append(len(gaps)) or train_liblinear(ll_problem, options, init))
    monkeypatch.setattr(solver, "_solve_newton", lambda *args, **kwargs: pytest.fail("trust-region Newton–CG"))
    coef, _ = solver.solve_held_out(Z, y[train], get_loss("squared_hinge"), L2(1 / (C * train.size)), False,
                                    np.zeros(Z.shape[1]), 0.0, Z_test, 1e-15, "liblinear")
    # (the best gap after each run: one check a run, but for the loose first run from 0, which tells
    # whether the runs would crawl: glru.solver.primal_crawls)
    after_runs = [gaps[k] for k in sorted(set(runs))]
    assert after_runs[-1] >= solver.STALLED_GAP_CUT * after_runs[-2]  # the last run stalled ...
    assert all(b < solver.STALLED_GAP_CUT * a for a, b in zip(after_runs[:-2], after_runs[1:-1]))  # ... the others not
    assert len(gaps) > runs[-1] + 1  # (semismooth Newton's checks followed)
    optimum = squared_hinge_optimum(Z.toarray(), y[train], C)
    np.testing.assert_array_equal(Z_test @ coef > 0, Z_test @ optimum > 0)


def _fold_of(X, y, C):
    """The first fold (of 5, stratified) of (X, y) with LinearSVC's penalized intercept column, as
    a squared-hinge Problem at C, and its held-out rows."""
    from glru.losses import get_loss
    from glru.penalties import L2
    from glru.problem import Problem, with_constant_column
    from sklearn.model_selection import StratifiedKFold

    train, test = next(iter(StratifiedKFold(5).split(X, y)))
    Z = with_constant_column(X, 1.0)
    t = np.where(y > 0, 1.0, -1.0)
    return Problem(Z[train], t[train], get_loss("squared_hinge"), L2(1 / (C * train.size)), False), Z[test]


@pytest.mark.parametrize("seed", [2, 3])
def test_liblinear_primal_that_would_crawl_hands_over_to_semismooth_newton(monkeypatch, seed):
    """A cold solve by LIBLINEAR's primal for held-out signs takes a loose run first
    (``CRAWL_PROBE_EPS``); where the Hessian of the rows inside the margin there is near-singular
    (fewer of them than coordinates, its Jacobi condition above ``CRAWL_CONDITION``:
    ``primal_crawls``), semismooth Newton finishes from that point, with no other run: a fold of
    collinear columns at C = 300, where a run to 1e-6 takes LIBLINEAR ten times semismooth Newton's
    whole solve. Its held-out signs are the optimum's, computed apart."""
    import glru.solver as solver
    from glru.hessian import jacobi_condition

    from ._exact import squared_hinge_optimum
    from ._problems import collinear_problem

    problem, X_test = _fold_of(*collinear_problem(seed), 300.0)
    tolerances, train_liblinear = [], solver._liblinear_train
    monkeypatch.setattr(solver, "_liblinear_train", lambda ll_problem, options, init=None:
                        tolerances.append(float(options.split("-e ")[1])) or train_liblinear(ll_problem, options, init))
    result = solver.solve(problem, tol=1e-15, stop_when=solver.SignsDecided(X_test), method="liblinear")
    assert tolerances == [solver.CRAWL_PROBE_EPS] and result.method == "liblinear+semismooth"
    # (what primal_crawls judged: the point of that run)
    loose = train_liblinear(solver._liblinear_problem(problem),
                            f"-s 2 -c {solver._liblinear_C(problem, 2)!r} -q -e {solver.CRAWL_PROBE_EPS!r}")
    curvatures = problem.loss.second_derivative(problem.y, problem.margins(loose, 0.0)) / problem.n
    assert np.count_nonzero(curvatures) < problem.d
    assert jacobi_condition(problem.hessian(curvatures)) > solver.CRAWL_CONDITION
    optimum = squared_hinge_optimum(problem.X.toarray(), problem.y, 300.0)
    np.testing.assert_array_equal(X_test @ result.coef > 0, X_test @ optimum > 0)


def test_liblinear_primal_that_would_not_crawl_runs_its_schedule(monkeypatch):
    """Sparse Gaussian rows (independent columns): the cold solve's loose run is not checked, its point
    does not crawl, and LIBLINEAR's runs go on from 1e-6 (``_PRIMAL_EPS_SIGNS``), as from 0 before.
    The held-out signs are the optimum's."""
    import glru.solver as solver

    from ._exact import squared_hinge_optimum

    rng = np.random.default_rng(0)
    X = sp.random(600, 100, density=0.1, random_state=rng, data_rvs=rng.standard_normal, format="csr")
    y = np.where(X @ rng.standard_normal(100) + 0.5 * rng.standard_normal(600) > 0, 1.0, -1.0)
    problem, X_test = _fold_of(X, y, 5.0)
    tolerances, train_liblinear = [], solver._liblinear_train
    monkeypatch.setattr(solver, "_liblinear_train", lambda ll_problem, options, init=None:
                        tolerances.append(float(options.split("-e ")[1])) or train_liblinear(ll_problem, options, init))
    checks, evaluate = [], solver._GapMonitor._evaluate
    monkeypatch.setattr(solver._GapMonitor, "_evaluate", lambda monitor, *point: checks.append(len(tolerances)) or
                        evaluate(monitor, *point))
    result = solver.solve(problem, tol=1e-15, stop_when=solver.SignsDecided(X_test), method="liblinear")
    assert result.method == "liblinear" and tolerances[:2] == [solver.CRAWL_PROBE_EPS, solver._PRIMAL_EPS_SIGNS]
    assert 1 not in checks  # (no check after the loose run)
    optimum = squared_hinge_optimum(problem.X.toarray(), problem.y, 5.0)
    np.testing.assert_array_equal(X_test @ result.coef > 0, X_test @ optimum > 0)


@pytest.mark.parametrize("decades", [0, 4])
def test_dual_starts_semismooth_newton_only_where_it_may_crawl(monkeypatch, decades):
    """With d̃ ≤ SEMISMOOTH_CHEAP_DIM, LIBLINEAR's dual for held-out signs hands over to
    semismooth Newton after one run at 1e-3 only where X's columns spread over more than two
    decades of scale (``_dual_may_crawl``); elsewhere it runs at 1e-4 and LIBLINEAR's primal
    finishes, as for more features. The signs are the optimum's either way."""
    import glru.solver as solver
    from glru.losses import get_loss
    from glru.penalties import L2
    from glru.problem import Problem

    rng = np.random.default_rng(4)
    X = rng.standard_normal((330, 300)) * 10.0 ** rng.uniform(-decades / 2, decades / 2, size=300)
    y = np.where(X @ (rng.standard_normal(300) / np.linalg.norm(X, axis=0)) + 0.1 * rng.standard_normal(330) > 0,
                 1.0, -1.0)
    problem, X_test = Problem(X[:300], y[:300], get_loss("squared_hinge"), L2(1 / 300), False), X[300:]
    assert solver._dual_may_crawl(problem) == (decades > 0)
    runs, train = [], solver._liblinear_train
    monkeypatch.setattr(solver, "_liblinear_train", lambda ll_problem, options, init=None: runs.append(
        (int(options.split("-s ")[1].split()[0]), float(options.split("-e ")[1]))) or train(ll_problem, options, init))
    result = solver.solve(problem, tol=1e-14, method="liblinear-dual", stop_when=solver.SignsDecided(X_test))
    assert runs[0] == ((1, 1e-3) if decades else (1, 1e-4))
    assert result.method.startswith("liblinear-dual") and (result.stopped_early or result.converged)
    if decades:
        assert runs == [(1, 1e-3)] and result.method in ("liblinear-dual", "liblinear-dual+semismooth")
    else:
        assert all(s == 2 for s, _ in runs[1:]) and result.method in ("liblinear-dual", "liblinear-dual+liblinear")
    optimum = solver.solve(problem, tol=1e-15, method="semismooth")
    np.testing.assert_array_equal(X_test @ result.coef > 0, X_test @ optimum.coef > 0)


@pytest.mark.parametrize("signs", [True, False], ids=["signs", "start"])
def test_dual_hands_a_crawl_to_semismooth_newton(monkeypatch, signs):
    """Near a hard margin (make_classification 300 × 400, C = 100: redundant features, most rows
    on the margin) LIBLINEAR's dual run at 1e-4 (for held-out signs, or for a start: a gap of
    1e-4) leaves a relative gap above ``_DUAL_CRAWL_GAP``; no other run follows, and semismooth
    Newton finishes from its point: to the signs of the dual's exact optimum (Lawson–Hanson
    NNLS), or to the gap asked for."""
    import glru.solver as solver
    from sklearn.datasets import make_classification

    from glru.losses import get_loss
    from glru.penalties import L2
    from glru.problem import Problem

    from ._exact import squared_hinge_by_nnls

    X, y = make_classification(n_samples=320, n_features=400, n_informative=200, random_state=0)
    Z, t = np.hstack([X, np.ones((320, 1))]), np.where(y > 0, 1.0, -1.0)
    problem, Z_test = Problem(Z[:300], t[:300], get_loss("squared_hinge"), L2(1 / (100 * 300)), False), Z[300:]
    runs, train = [], solver._liblinear_train
    monkeypatch.setattr(solver, "_liblinear_train", lambda ll_problem, options, init=None: runs.append(
        (options, train(ll_problem, options, init))) or runs[-1][1])
    result = solver.solve(problem, tol=1e-14 if signs else 1e-4, method="liblinear-dual",
                          stop_when=solver.SignsDecided(Z_test) if signs else None)
    assert [options for options, _ in runs] == ["-s 1 -c 100.0 -q -e 0.0001"]
    assert problem.duality_gap(runs[0][1], 0.0).relative_gap > solver._DUAL_CRAWL_GAP
    assert result.method == "liblinear-dual+semismooth"
    if signs:
        exact = squared_hinge_by_nnls(problem.X, problem.y, 100.0)
        np.testing.assert_array_equal(Z_test @ result.coef > 0, Z_test @ exact > 0)
    else:
        assert result.converged and result.evaluation.relative_gap <= 1e-4


@pytest.mark.parametrize("method", ["semismooth", "formed-newton", "newton", "liblinear"])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_an_open_start_is_not_evaluated_again(monkeypatch, method, fit_intercept):
    """A start the caller found open (``start_open``, with its gap evaluation) is not evaluated
    again by any method, and the solve reaches the optimum a cold one does; with no step to
    take (``max_iter`` 0) the result is that start and its evaluation."""
    import glru.solver as solver
    from glru.losses import get_loss
    from glru.penalties import L2
    from glru.problem import Problem

    loss = "squared_hinge" if method == "semismooth" else "logistic"
    X, y = random_problem(23, 300, 12, loss, sparse=True)
    problem = Problem(X, y, get_loss(loss), L2(1e-2), fit_intercept)
    start = solver.solve(problem, tol=1e-2)
    evaluation = problem.duality_gap(start.coef, start.intercept)
    points, evaluate = [], solver._GapMonitor._evaluate
    monkeypatch.setattr(solver._GapMonitor, "_evaluate",
                        lambda self, coef, intercept: points.append((coef.copy(), intercept)) or
                        evaluate(self, coef, intercept))
    result = solver.solve(problem, start.coef, start.intercept, tol=1e-12, method=method, start_open=True,
                          start_evaluation=evaluation)
    assert points and not any(np.array_equal(c, start.coef) and b == start.intercept for c, b in points)
    cold = solver.solve(Problem(X, y, get_loss(loss), L2(1e-2), fit_intercept), tol=1e-13, method="newton")
    assert result.converged
    radius = np.sqrt(2 * (result.evaluation.gap + cold.evaluation.gap) / 1e-2)
    assert np.linalg.norm(np.append(result.coef - cold.coef, result.intercept - cold.intercept)) <= 2 * radius + 1e-12
    if method in ("semismooth", "formed-newton"):  # (no step: nothing else is evaluated)
        points.clear()
        result = solver.solve(problem, start.coef, start.intercept, tol=1e-12, method=method, max_iter=0,
                              start_open=True, start_evaluation=evaluation)
        assert not points and result.evaluation is evaluation and np.array_equal(result.coef, start.coef)


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_liblinear_returning_an_open_start_unevaluated_evaluates_it_once(monkeypatch, fit_intercept):
    """An open start given without its evaluation, at which LIBLINEAR's first run stops at once
    (its own criterion met there): the solve evaluates that start once, when it needs its gap,
    and goes on to the optimum (hypothesis found a fold of LinearSVC where it failed instead)."""
    import glru.solver as solver
    from glru.losses import get_loss
    from glru.penalties import L2
    from glru.problem import Problem

    X, y = random_problem(5, 200, 8, "squared_hinge", sparse=True)
    problem = Problem(X, y, get_loss("squared_hinge"), L2(1e-2), fit_intercept)
    start = solver.solve(problem, tol=1e-9, method="newton")
    points, evaluate = [], solver._GapMonitor._evaluate
    monkeypatch.setattr(solver._GapMonitor, "_evaluate",
                        lambda self, coef, intercept: points.append((coef.copy(), intercept)) or
                        evaluate(self, coef, intercept))
    result = solver.solve(problem, start.coef, start.intercept, tol=1e-14, method="liblinear", start_open=True)
    assert sum(np.array_equal(c, start.coef) for c, _ in points) == 1
    assert result.converged


@pytest.mark.parametrize("loss, fit_intercept, method", [("squared_hinge", False, "liblinear-dual"),
                                                          ("logistic", True, "auto")])
def test_sign_bounds_at_a_stopped_solve_reuse_its_checks_bounds(loss, fit_intercept, method):
    """``sign_bounds_at`` of a solve stopped by its held-out signs returns the bounds its
    ``SignsDecided`` certified there, equal to the ones computed afresh at the solve's gap
    evaluation; at another point it computes them (the check's are not that point's)."""
    from glru.held_out import certified_bounds
    from glru.losses import get_loss
    from glru.penalties import L2
    from glru.problem import Problem
    from glru.solver import SignsDecided, sign_bounds_at, solve

    X, y = random_problem(21, 160, 12, loss, sparse=True)
    problem = Problem(sp.csr_matrix(X[:120]), y[:120], get_loss(loss), L2(1.0 / 120), fit_intercept)
    X_test = sp.csr_matrix(X[120:])
    signs = SignsDecided(X_test)
    result = solve(problem, tol=1e-15, stop_when=signs, method=method)
    assert (result.stopped_early or result.signs_decided) and signs.bounds is not None
    fresh = certified_bounds(problem, result.coef, result.intercept, X_test, signs_only=True,
                             evaluation=result.evaluation)[:3]
    reused = sign_bounds_at(problem, result, X_test, signs)
    assert reused[0] is signs.bounds[2] and reused[1] is signs.bounds[3]
    for a, b in zip(reused, fresh):
        np.testing.assert_array_equal(a, b)
    signs.bounds = (signs.bounds[0] + 1.0, *signs.bounds[1:])  # another point's
    moved = sign_bounds_at(problem, result, X_test, signs)
    assert moved[0] is not signs.bounds[2]
    for a, b in zip(moved, fresh):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("method", ["auto", "semismooth", "liblinear", "newton"])
def test_a_solve_where_every_method_stalls_hands_each_on_once(monkeypatch, method):
    """LinearSVC(C = 38, intercept_scaling = 10) on 22 rows of 371 columns scaled over six decades: a
    gap of 1e-14 is below what semismooth Newton, trust-region Newton and LIBLINEAR's primal can reach
    (their points stall at 3e-12, the gap's rounding), and each hands on to the others where it stalls.
    The chain takes each method once: it went round 40 times and more (0.6–1.3 s), and a fold's
    cross-validation 10 times as long (20 s for 10 folds of 28 rows). The point is the best found."""
    import glru.solver as solver
    from glru.losses import SquaredHinge
    from glru.penalties import L2
    from glru.problem import Problem

    rng = np.random.default_rng(0)
    X = rng.standard_normal((28, 371)) * 10.0 ** rng.uniform(-3, 3, 371)
    margins = X @ rng.standard_normal(371)
    y = np.where((margins - margins.mean()) / margins.std() + 0.5 * rng.standard_normal(28) > 0, 1.0, -1.0)
    X = np.hstack([X, np.full((28, 1), 10.0)])[:22]  # (the intercept's column, intercept_scaling = 10)
    problem = Problem(X, y[:22], SquaredHinge(), L2(1.0 / (22 * 38.0)), False)
    runs = {name: 0 for name in ("_solve_semismooth", "_solve_newton", "_solve_liblinear")}
    for name in runs:
        def counted(*args, _name=name, _original=getattr(solver, name), **kwargs):
            runs[_name] += 1
            return _original(*args, **kwargs)
        monkeypatch.setattr(solver, name, counted)
    result = solver.solve(problem, tol=1e-14, method=method)
    assert not result.converged and result.evaluation.relative_gap < 1e-11
    assert max(runs.values()) <= 2 and sum(runs.values()) <= 4  # (trust-region Newton may finish each of the others)
