"""Soundness: the exact optimum of every modified problem lies inside every certified interval.

Random dense and sparse problems, every loss × penalty × intercept mode, all four
modifications with 1–5 changes. The reference is an independent cold solve of the modified
problem to a relative gap ≤ 1e-10; to make the comparison rigorous despite the reference's own
inexactness, a certified interval must intersect the reference's own (very narrow) certified
interval, and must contain the reference value up to that interval's width.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import glru
from glru.losses import get_loss
from glru.problem import dual_domain_terms

from ._problems import LOSSES, dense, exact_fit, random_problem, random_targets, reference_interval

MODIFICATIONS = ("remove_samples", "add_samples", "remove_features", "add_features")


def modify(fit, X, y, kind, k, rng, loss):
    """Apply a modification through the engine and the same change to the data directly.

    Returns (certificate, X_new, y_new, X_eval) with X_eval in the modified feature space."""
    n, d = X.shape
    Xd = dense(X)
    if kind == "remove_samples":
        rows = rng.choice(n, size=k, replace=False)
        keep = np.setdiff1d(np.arange(n), rows)
        cert = fit.remove_samples(rows)
        return cert, X[keep], y[keep], np.vstack([Xd[rows], Xd[keep[:5]]])
    if kind == "add_samples":
        X_add = rng.standard_normal((k, d))
        y_add = random_targets(rng, k, loss)
        cert = fit.add_samples(X_add, y_add)
        X_new = sp.vstack([X, X_add], format="csr") if sp.issparse(X) else np.vstack([X, X_add])
        return cert, X_new, np.concatenate([y, y_add]), np.vstack([X_add, Xd[:5]])
    if kind == "remove_features":
        k = min(k, d - 1)
        cols = rng.choice(d, size=k, replace=False)
        keep = np.setdiff1d(np.arange(d), cols)
        cert = fit.remove_features(cols)
        return cert, X[:, keep], y, Xd[:8][:, keep]
    X_cols = rng.standard_normal((n, k))
    cert = fit.add_features(X_cols)
    X_new = sp.hstack([X, X_cols], format="csr") if sp.issparse(X) else np.hstack([X, X_cols])
    return cert, X_new, y, dense(X_new)[:8]


def assert_contains(lo, hi, ref_lo, ref_hi, what):
    assert np.all(lo <= hi), f"{what}: empty interval"
    missed = (hi < ref_lo) | (lo > ref_hi)
    assert not missed.any(), (
        f"{what}: certified interval misses the exact optimum: "
        f"lo={lo[missed][:3]}, hi={hi[missed][:3]}, exact within [{ref_lo[missed][:3]}, {ref_hi[missed][:3]}]"
    )


problem_params = st.fixed_dictionaries(dict(
    seed=st.integers(0, 2**31 - 1),
    n=st.integers(10, 40),
    d=st.integers(2, 8),
    loss=st.sampled_from(LOSSES),
    sparse=st.booleans(),
    fit_intercept=st.booleans(),
    log_lam=st.floats(-3.0, 0.5),
    elastic=st.booleans(),
    kind=st.sampled_from(MODIFICATIONS),
    k=st.integers(1, 5),
    intercept_mode=st.sampled_from(("fast", "exact")),
))


def modified_problem(p, seed_offset):
    """Fit the random problem described by ``p``, then apply its modification."""
    X, y = random_problem(p["seed"], p["n"], p["d"], p["loss"], sparse=p["sparse"])
    lam = 10.0 ** p["log_lam"]
    kappa = 0.3 * lam if p["elastic"] else 0.0
    fit = glru.fit(X, y, loss=p["loss"], lam=lam, kappa=kappa, fit_intercept=p["fit_intercept"], tol=1e-10)
    rng = np.random.default_rng(p["seed"] + seed_offset)
    return (lam, kappa) + modify(fit, X, y, p["kind"], p["k"], rng, p["loss"])


def loses_a_class(p, y_new):
    """With an intercept, a classification problem left with one class has no finite optimum."""
    return p["fit_intercept"] and p["loss"] not in ("squared", "huber") and np.unique(y_new).shape[0] < 2


@given(problem_params)
def test_decision_bounds_contain_exact_optimum(params):
    p = params
    lam, kappa, cert, X_new, y_new, X_eval = modified_problem(p, seed_offset=1)
    if loses_a_class(p, y_new):
        return  # no finite intercept exists; covered by test_single_class_after_removal
    ref = exact_fit(X_new, y_new, p["loss"], lam, kappa, p["fit_intercept"])
    ref_lo, ref_hi = reference_interval(ref, X_eval)

    lo, hi = cert.decision_bounds(X_eval, intercept=p["intercept_mode"])
    assert_contains(lo, hi, ref_lo, ref_hi, "decision_bounds")

    c_lo, c_hi = cert.coef_bounds()
    r_lo, r_hi = ref.certificate().coef_bounds()
    assert_contains(c_lo, c_hi, r_lo, r_hi, "coef_bounds")

    slack = ref.certificate().radius
    assert np.linalg.norm(ref.coef_ - cert.coef_centre) <= cert.radius + slack

    if p["fit_intercept"]:
        b_lo, b_hi = cert.intercept_bounds(p["intercept_mode"])
        rb_lo, rb_hi = ref.certificate().intercept_bounds("exact")
        assert_contains(np.array([b_lo]), np.array([b_hi]), np.array([rb_lo]), np.array([rb_hi]), "intercept")


@given(problem_params)
def test_incremental_gap_bounds_suboptimality(params):
    """The O(change) gap (18)–(21) bounds the primal suboptimality of its centre on the modified
    data, and for row changes without intercept (same centre, same dual point) it equals the
    gap recomputed from scratch."""
    p = params
    lam, kappa, cert, _, y_new, _ = modified_problem(p, seed_offset=2)
    if loses_a_class(p, y_new):
        with pytest.raises(ValueError, match="single class"):
            cert.problem()  # no finite intercept exists: the engine refuses, never guesses
        return
    problem = cert.problem()
    ref = exact_fit(problem.X, problem.y, p["loss"], lam, kappa, p["fit_intercept"])
    suboptimality = problem.primal(cert.coef_centre, cert.intercept_centre) - ref.primal_
    assert cert.gap >= suboptimality - ref.gap()
    if not p["fit_intercept"] and p["kind"] in ("remove_samples", "add_samples"):
        scratch = problem.duality_gap(cert.coef_centre, cert.intercept_centre).gap
        assert cert.gap == pytest.approx(scratch, rel=1e-6, abs=1e-11)


def test_refit_equals_cold_fit():
    X, y = random_problem(3, 60, 6, "logistic")
    for fit_intercept in (False, True):
        fit = glru.fit(X, y, lam=0.05, fit_intercept=fit_intercept, tol=1e-10)
        cert = fit.remove_samples([0, 5, 7])
        warm = cert.refit(tol=1e-10)
        cold = exact_fit(np.delete(X, [0, 5, 7], axis=0), np.delete(y, [0, 5, 7]), "logistic", 0.05, 0.0, fit_intercept)
        np.testing.assert_allclose(warm.coef_, cold.coef_, atol=1e-5)
        assert warm.intercept_ == pytest.approx(cold.intercept_, abs=1e-5)


def test_recentre_at_new_optimum_gives_tiny_interval():
    """Theorem 1 holds for any centre: at the exact new optimum the certificate collapses."""
    X, y = random_problem(4, 50, 5, "logistic")
    fit = glru.fit(X, y, lam=0.1, tol=1e-10)
    cert = fit.remove_samples([1, 2])
    new = cert.refit(tol=1e-12)
    tight = cert.recentre(new.coef_)
    lo, hi = tight.decision_bounds(X[:5])
    loose_lo, loose_hi = cert.decision_bounds(X[:5])
    assert np.all(hi - lo < 1e-4)
    assert np.all(hi - lo < loose_hi - loose_lo)
    truth = new.decision_function(X[:5])
    assert np.all((lo <= truth + 1e-9) & (truth <= hi + 1e-9))


def test_single_class_after_removal_gives_infinite_intercept_bounds():
    X, y = random_problem(5, 20, 3, "logistic")
    y = np.ones(20)
    y[:2] = -1.0
    fit = glru.fit(X, y, lam=0.1, fit_intercept=True)
    cert = fit.remove_samples([0, 1])
    lo, hi = cert.decision_bounds(X[:3], intercept="exact")
    assert np.all(np.isinf(lo) | np.isinf(hi))
    with pytest.raises(ValueError, match="single class"):
        cert.refit()


def test_unchanged_problem_has_zero_width_up_to_rounding():
    """Removing an all-zero feature that the optimum ignores changes nothing: gap ≈ 0."""
    X, y = random_problem(6, 40, 4, "logistic")
    X = np.hstack([X, np.zeros((40, 1))])
    fit = glru.fit(X, y, lam=0.1, tol=1e-12)
    cert = fit.remove_features([4])
    assert cert.gap < 1e-10
    lo, hi = cert.decision_bounds(X[:5, :4])
    assert np.all(hi - lo < 1e-4)


def test_lasso_certificate_uses_dual_box_only():
    X, y = random_problem(7, 40, 5, "logistic")
    fit = glru.fit(X, y, lam=0.0, kappa=0.05, tol=1e-10)
    cert = fit.remove_samples([3])
    with pytest.raises(ValueError, match="lam"):
        cert.radius
    lo, hi = cert.decision_bounds(X[:5])
    ref = exact_fit(np.delete(X, 3, axis=0), np.delete(y, 3), "logistic", 0.0, 0.05, False)
    v = ref.decision_function(X[:5])
    assert np.all((lo <= v + 1e-6) & (v <= hi + 1e-6))


@given(seed=st.integers(0, 10_000), n=st.integers(1, 30), d=st.integers(1, 8), loss=st.sampled_from(LOSSES),
       density=st.sampled_from([0.0, 0.3, 1.0]))
def test_dual_domain_sums_of_sparse_and_dense_rows_agree(seed, n, d, loss, density):
    """The box's column sums (Remark 2) computed from CSR rows equal those from the same rows
    dense, infinite ends counted alike, for values of both signs."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * (rng.random((n, d)) < density)
    y = random_targets(rng, n, loss)
    loss = get_loss(loss)
    from_dense = dual_domain_terms(X, loss, y)
    from_sparse = dual_domain_terms(sp.csr_matrix(X), loss, y)
    # the same rows with every entry stored twice, as halves of opposite signs where possible
    once = sp.csr_matrix(X)
    rows = np.repeat(np.arange(n), np.diff(once.indptr))
    order = np.argsort(np.concatenate([rows, rows]), kind="stable")
    halves = sp.csr_matrix((np.concatenate([2 * once.data, -once.data])[order],
                            np.concatenate([once.indices, once.indices])[order], 2 * once.indptr), shape=X.shape)
    assert halves.nnz == 2 * once.nnz  # stored twice, not summed
    for sums in (from_sparse, dual_domain_terms(halves, loss, y)):
        for key, value in from_dense.items():
            np.testing.assert_allclose(sums[key], value, rtol=1e-12, atol=1e-12, err_msg=key)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(10, 80), d=st.integers(1, 12), log_lam=st.floats(-4, 0),
       sparse=st.booleans(), steps=st.integers(0, 3))
def test_unshifted_decision_bounds_lie_within_the_certified_ones(seed, n, d, log_lam, sparse, steps):
    """At a centre whose intercept is optimal for its coef (a solver's checks take it), the
    bounds before the intercept's bracket are narrower than the certified bounds: a sign they
    leave open, the certified bounds leave open too (SignsDecided's first test)."""
    from glru.certificate import certificate_at
    from glru.losses import Logistic
    from glru.penalties import L2
    from glru.problem import Problem
    from glru.solver import optimal_intercept

    X, y = random_problem(seed, n, d, "logistic", sparse=sparse)
    problem = Problem(X[: n - 3], y[: n - 3], Logistic(), L2(10.0 ** log_lam), True)
    coef = np.random.default_rng(seed).standard_normal(d) * 0.3 * steps  # anywhere, the optimum's neighbourhood too
    intercept = optimal_intercept(problem, coef, 0.0)
    cert = certificate_at(problem, coef, intercept)
    lower, upper = cert.decision_bounds(X[n - 3:], intercept="exact")
    inner_lower, inner_upper = cert.unshifted_decision_bounds(X[n - 3:])
    tolerance = 1e-9 * (1 + np.abs(inner_lower) + np.abs(inner_upper))
    assert np.all(lower <= inner_lower + tolerance) and np.all(inner_upper <= upper + tolerance)


@given(problem_params)
def test_sign_bounds_decide_the_signs_the_full_bounds_decide(params):
    """sign_bounds: the ball's bounds where they decide a sign, the full (ball ∩ box) bounds
    where they do not (to rounding: a product with fewer rows may sum in another order); sound,
    and deciding the signs decision_bounds decides."""
    from glru.bounds import signs_decided

    p = params
    lam, kappa, cert, X_new, y_new, X_eval = modified_problem(p, seed_offset=3)
    if loses_a_class(p, y_new):
        return
    X_eval = np.vstack([X_eval, X_eval[:2] * 1e-3])  # rows near 0, whose signs the ball leaves open
    lower, upper = cert.sign_bounds(X_eval, intercept=p["intercept_mode"])
    full_lower, full_upper = cert.decision_bounds(X_eval, intercept=p["intercept_mode"])
    ball_lower, ball_upper = cert.decision_bounds(X_eval, intercept=p["intercept_mode"], box=False)
    by_ball = signs_decided(ball_lower, ball_upper)
    np.testing.assert_array_equal(lower[by_ball], ball_lower[by_ball])
    np.testing.assert_allclose(lower[~by_ball], full_lower[~by_ball], rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(upper[~by_ball], full_upper[~by_ball], rtol=1e-13, atol=1e-13)
    np.testing.assert_array_equal(signs_decided(lower, upper), signs_decided(full_lower, full_upper))
    ref = exact_fit(X_new, y_new, p["loss"], lam, kappa, p["fit_intercept"])
    assert_contains(lower, upper, *reference_interval(ref, X_eval), "sign_bounds")


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(8, 60), d=st.integers(1, 10), share=st.floats(0.01, 1.0),
       steps=st.floats(0.0, 3.0))
def test_squared_hinge_box_holds_the_ball_interval(seed, n, d, share, steps):
    """SquaredHinge.box_narrows_ball: where no column's box is clipped (its x_ij·y_i of both signs)
    and μ‖X_j‖² ≥ 4nλ for every column, the box's interval on a decision value holds the ball's,
    at any centre with its KKT dual point: their intersection is the ball's interval."""
    from glru.bounds import ball_decision_bounds, box_decision_bounds
    from glru.certificate import certificate_at
    from glru.losses import SquaredHinge
    from glru.penalties import L2
    from glru.problem import Problem, row_norms_sq

    X, y = random_problem(seed, n, d, "squared_hinge")
    loss = SquaredHinge()
    lam = share * loss.smoothness * float(np.min(np.sum(X * X, axis=0))) / (4 * n)  # μ‖X_j‖² ≥ 4nλ
    problem = Problem(X, y, loss, L2(lam), False)
    lower_ends, upper_ends = problem.dual_domain
    if not (np.all(np.isinf(lower_ends)) and np.all(np.isinf(upper_ends))):  # a clipped column
        return
    coef = np.random.default_rng(seed).standard_normal(d) * steps
    cert = certificate_at(problem, coef)
    X_eval = np.random.default_rng(seed + 1).standard_normal((6, d))
    ball_lower, ball_upper = ball_decision_bounds(X_eval, coef, cert.radius, np.sqrt(row_norms_sq(X_eval)))
    box_lower, box_upper = box_decision_bounds(X_eval, *cert.coef_bounds())
    scale = 1e-9 * (1 + np.abs(ball_lower) + np.abs(ball_upper))
    assert np.all(box_lower <= ball_lower + scale) and np.all(ball_upper <= box_upper + scale)


def test_squared_hinge_bounds_leave_the_box_out():
    """The squared hinge's bounds are the ball's, with or without ``box``, and never build the
    dual domain's sums (a pass over the rows) for it."""
    from glru.certificate import certificate_at
    from glru.losses import SquaredHinge
    from glru.penalties import L2
    from glru.problem import Problem

    X, y = random_problem(5, 60, 6, "squared_hinge", sparse=True)
    problem = Problem(X[:50], y[:50], SquaredHinge(), L2(0.01), False)
    cert = certificate_at(problem, np.full(6, 0.1))
    with_box = cert.decision_bounds(X[50:])
    np.testing.assert_array_equal(with_box, cert.decision_bounds(X[50:], box=False))
    np.testing.assert_array_equal(cert.sign_bounds(X[50:]), with_box)
    assert "dual_domain" not in vars(problem) and "dual_domain_terms" not in vars(problem)
