"""Checks of glru.multinomial: the softmax loss against its definition (finite differences, a
numerical supremum for the conjugate), duality (Fenchel–Young, weak duality, zero gap at the
optimum), the solver against scikit-learn, and the certified regions against exact refits of
modified problems (rows removed), including a property test over random small problems."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize
from scipy.special import logsumexp
from sklearn.datasets import load_digits, load_iris
from sklearn.linear_model import LogisticRegression

from glru.multinomial import (
    Multinomial,
    MultinomialCertificate,
    MultinomialProblem,
    certified_argmax,
    enforce_zero_class_sums,
    log_ratio_lower_bounds,
    optimal_intercept,
    per_class_through,
    polish_multinomial,
    solve_multinomial,
)

LOSS = Multinomial()


def _random_scores(rng, n, K, scale=3.0):
    return rng.normal(scale=scale, size=(n, K)), rng.integers(0, K, size=n)


def _random_simplex(rng, n, K, concentration=1.0):
    return rng.dirichlet(np.full(K, concentration), size=n)


def _labelled_data(rng, n, d, K, noise=1.0):
    """Rows with labels that depend on them; every class appears at least twice."""
    X = rng.normal(size=(n, d))
    y = (X @ rng.normal(size=(d, K)) + noise * rng.gumbel(size=(n, K))).argmax(axis=1)
    y[:2 * K] = np.repeat(np.arange(K), 2)
    return X, y


def _exact(X, y, K, lam, fit_intercept, W0=None, b0=None):
    """An exact refit: solved to relative gap 1e-13 and polished to rounding level (near
    separation with a tiny lam the polished point's gap can stay a little above 1e-13)."""
    result = solve_multinomial(X, y, K, lam, fit_intercept, W0, b0, tol=1e-13)
    assert result.converged or result.evaluation.relative_gap < 1e-11
    return result


def _differences(X_eval, coef, intercept):
    S = np.asarray(X_eval @ coef.T) + intercept
    return S[:, :, None] - S[:, None, :], S


def _contains(lower, upper, D, slack=1e-9):
    """lower ≤ D ≤ upper up to the exact refit's own rounding (``slack``·(1 + |D|))."""
    tol = slack * (1.0 + np.abs(D))
    return bool(np.all(lower <= D + tol) and np.all(D - tol <= upper))


# --------------------------------------------------------------------------- loss
def test_value_matches_definition_and_never_overflows(rng):
    T, y = _random_scores(rng, 50, 4)
    expected = logsumexp(T, axis=1) - T[np.arange(50), y]
    np.testing.assert_allclose(LOSS.value(y, T), expected, rtol=1e-13, atol=1e-14)
    big = np.array([[1e4, -1e4, 0.0], [-800.0, 800.0, 0.0], [0.0, 0.0, 0.0]])
    values = LOSS.value(np.array([0, 0, 2]), big)
    np.testing.assert_allclose(values, [0.0, 1600.0, np.log(3.0)], rtol=1e-15)
    # accurate where the loss is tiny (a naive logsumexp − t_y rounds to 0)
    tiny = LOSS.value(np.array([0]), np.array([[40.0, 0.0, 0.0]]))
    np.testing.assert_allclose(tiny, 2 * np.exp(-40.0), rtol=1e-14)
    P = LOSS.probabilities(big)
    assert np.all(np.isfinite(P)) and np.allclose(P.sum(axis=1), 1.0)


def test_gradient_and_hessp_by_finite_differences(rng):
    T, y = _random_scores(rng, 20, 5)
    h = 1e-6
    G = LOSS.gradient(y, T)
    V = rng.normal(size=T.shape)
    fd = (LOSS.value(y, T + h * V) - LOSS.value(y, T - h * V)) / (2 * h)
    np.testing.assert_allclose((G * V).sum(axis=1), fd, rtol=1e-7, atol=1e-8)
    fd_h = (LOSS.gradient(y, T + h * V) - LOSS.gradient(y, T - h * V)) / (2 * h)
    np.testing.assert_allclose(LOSS.hessp(y, T, V), fd_h, rtol=1e-6, atol=1e-8)
    # the gradient is softmax − onehot: its rows sum to 0
    np.testing.assert_allclose(G.sum(axis=1), 0.0, atol=1e-15)


def test_smoothness_constant_is_one_half_and_tight(rng):
    worst = 0.0
    for concentration in (0.05, 0.5, 5.0):
        for p in _random_simplex(rng, 200, 4, concentration):
            H = np.diag(p) - np.outer(p, p)
            worst = max(worst, np.linalg.eigvalsh(H).max())
    assert worst <= LOSS.smoothness + 1e-15
    p = np.array([0.5, 0.5, 0.0, 0.0])
    assert np.linalg.eigvalsh(np.diag(p) - np.outer(p, p)).max() == pytest.approx(0.5, rel=1e-14)


def test_conjugate_is_the_supremum(rng):
    for _ in range(8):
        K = rng.integers(3, 6)
        y = np.array([rng.integers(0, K)])
        q = _random_simplex(rng, 1, K, 2.0)
        s = q - np.eye(K)[y]
        res = minimize(lambda t, s=s, y=y: -(s[0] @ t - LOSS.value(y, t[None])[0]), np.zeros(K),
                       jac=lambda t, s=s, y=y: -(s[0] - LOSS.gradient(y, t[None])[0]), method="BFGS",
                       options=dict(gtol=1e-12))
        assert LOSS.conjugate(y, s)[0] == pytest.approx(-res.fun, abs=1e-9)
    # outside the domain: a negative entry, or q not summing to 1
    y = np.array([0, 0])
    S = np.array([[-1.0, 1.1, -0.1], [-0.5, 0.25, 0.3]])
    assert np.all(np.isinf(LOSS.conjugate(y, S)))


def test_fenchel_young_equality_at_kkt_pairs_and_inequality_elsewhere(rng):
    T, y = _random_scores(rng, 200, 4)
    S = LOSS.gradient(y, T)  # s = ∇ℓ(t)
    lhs = LOSS.value(y, T) + LOSS.conjugate(y, S)
    np.testing.assert_allclose(lhs, (S * T).sum(axis=1), rtol=1e-12, atol=1e-12)
    S_other = _random_simplex(rng, 200, 4, 0.7) - np.eye(4)[y]
    excess = LOSS.value(y, T) + LOSS.conjugate(y, S_other) - (S_other * T).sum(axis=1)
    assert np.all(excess >= -1e-12) and excess.max() > 1e-3


def test_conjugate_is_two_strongly_convex_on_its_domain(rng):
    """ℓ* ≥ linearisation + (1/(2μ))‖Δ‖² with μ = ½: what the dual radius uses."""
    y = np.zeros(400, dtype=int)
    Q1, Q2 = _random_simplex(rng, 400, 4, 0.5), _random_simplex(rng, 400, 4, 0.5)
    Q1 = np.clip(Q1, 1e-12, None)
    Q1 /= Q1.sum(axis=1, keepdims=True)
    e = np.eye(4)[y]
    f1, f2 = LOSS.conjugate(y, Q1 - e), LOSS.conjugate(y, Q2 - e)
    linear = (np.log(Q1) * (Q2 - Q1)).sum(axis=1)  # ∇(Σ q log q) = log q + 1, and Σ(Q2 − Q1) = 0
    ratio = (f2 - f1 - linear) / ((Q2 - Q1) ** 2).sum(axis=1)
    assert ratio.min() >= 1.0 / (2 * LOSS.smoothness) - 1e-9
    # and the constant cannot be raised: q = (½, ½, 0, 0), a small step along (1, −1, 0, 0)
    q = np.array([[0.5, 0.5, 0, 0]])
    step = 1e-4 * np.array([[1.0, -1.0, 0, 0]])
    gain = LOSS.conjugate(y[:1], q + step - e[:1]) - LOSS.conjugate(y[:1], q - e[:1])
    assert gain[0] / (step ** 2).sum() == pytest.approx(1.0 / (2 * LOSS.smoothness), rel=1e-3)


# --------------------------------------------------------------------------- dual
def test_enforce_zero_class_sums(rng):
    n, K = 30, 4
    y = rng.integers(0, K, size=n)
    y[:K] = np.arange(K)
    Q = _random_simplex(rng, n, K, 0.8)
    alpha = enforce_zero_class_sums(np.eye(K)[y] - Q, y)
    R = np.eye(K)[y] - alpha
    assert np.all(R >= 0)
    np.testing.assert_allclose(R.sum(axis=1), 1.0, atol=1e-14)
    np.testing.assert_allclose(alpha.sum(axis=0), 0.0, atol=1e-13)
    assert np.abs(alpha - (np.eye(K)[y] - Q)).max() > 1e-3  # it did move something
    # already balanced: nothing moves
    np.testing.assert_allclose(enforce_zero_class_sums(alpha, y), alpha, atol=1e-15)
    # near an optimum α is tiny: the residual is relative to |α|, not to the class counts
    T = 30.0 * (np.eye(K)[y] - 0.5) + 0.01 * rng.normal(size=(n, K))
    P = LOSS.probabilities(T)
    off = P * (1 - np.eye(K)[y])
    alpha = -off + np.eye(K)[y] * off.sum(axis=1, keepdims=True)  # α_iy = Σ_{k≠y} p_ik: rows sum to 0
    alpha = enforce_zero_class_sums(alpha, y)
    assert np.abs(alpha).sum() < 1e-9
    assert np.all(np.abs(alpha.sum(axis=0)) <= 4 * n * np.finfo(float).eps * np.abs(alpha).sum(axis=0))
    assert np.all(np.eye(K)[y] - alpha >= 0)


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("sparse", [False, True])
def test_problem_gradient_and_hessp(rng, fit_intercept, sparse):
    X, y = _labelled_data(rng, 30, 5, 3)
    X[X < -0.5] = 0.0
    problem = MultinomialProblem(sp.csr_matrix(X) if sparse else X, y, 3, 0.05, fit_intercept)
    z = rng.normal(size=problem.pack(np.zeros((3, 5)), np.zeros(3)).size)
    v = rng.normal(size=z.size)
    h = 1e-6
    fd = (problem.fun(z + h * v) - problem.fun(z - h * v)) / (2 * h)
    assert problem.grad(z) @ v == pytest.approx(fd, rel=1e-7, abs=1e-9)
    fd_h = (problem.grad(z + h * v) - problem.grad(z - h * v)) / (2 * h)
    np.testing.assert_allclose(problem.hessp(z, v), fd_h, rtol=1e-6, atol=1e-8)
    coef, b = problem.unpack(z)
    assert problem.fun(z) == pytest.approx(problem.primal(coef, b), rel=1e-14)
    if fit_intercept:
        assert abs(b.sum()) < 1e-14  # symmetric intercept


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_weak_duality_and_zero_gap_at_the_optimum(rng, fit_intercept):
    X, y = _labelled_data(rng, 40, 4, 4)
    lam = 0.02
    problem = MultinomialProblem(X, y, 4, lam, fit_intercept)
    for _ in range(20):
        coef, b = rng.normal(scale=2, size=(4, 4)), rng.normal(size=4)
        ev = problem.duality_gap(coef, b)
        assert ev.gap >= ev.primal - ev.dual >= 0
        assert problem.dual(ev.alpha) == pytest.approx(ev.dual, rel=1e-12, abs=1e-14)
        # any feasible dual point, not only the KKT one
        alpha = np.eye(4)[y] - _random_simplex(rng, 40, 4)
        if fit_intercept:
            alpha = enforce_zero_class_sums(alpha, y)
        assert np.isfinite(problem.dual(alpha)) and problem.dual(alpha) <= problem.primal(coef, b)
    result = solve_multinomial(X, y, 4, lam, fit_intercept, tol=1e-12)
    ev = result.evaluation
    assert result.converged and ev.gap <= 1e-12 * ev.primal
    assert ev.primal - ev.dual <= ev.allowance
    # the dual's KKT primal point is the solution
    np.testing.assert_allclose(problem.coef_from_dual(ev.alpha), result.coef, atol=1e-9)
    # the certificate at the optimum is at rounding level
    cert = MultinomialCertificate(problem, result.coef, result.intercept)
    assert cert.primal_radius < 1e-5 and cert.dual_radius < 1e-5


def test_infeasible_dual_point_is_minus_infinity(rng):
    X, y = _labelled_data(rng, 20, 3, 3)
    problem = MultinomialProblem(X, y, 3, 0.1, True)
    Q = _random_simplex(rng, 20, 3)  # class totals ≠ counts
    assert problem.dual(np.eye(3)[y] - Q) == -np.inf
    with pytest.raises(ValueError, match="every class"):
        MultinomialProblem(X, np.where(y == 2, 0, y), 3, 0.1, True)


# --------------------------------------------------------------------------- solver vs scikit-learn
def _dataset(name):
    if name == "iris":
        X, y = load_iris(return_X_y=True)
        return X, y, 3
    X, y = load_digits(return_X_y=True)
    return X[:250] / 16.0, y[:250], 10


@pytest.mark.parametrize("name,sparse", [("iris", False), ("iris", True), ("digits", False), ("digits", True)])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_solver_matches_sklearn(name, sparse, fit_intercept):
    X, y, K = _dataset(name)
    X = sp.csr_matrix(X) if sparse else X
    C = 0.5
    lam = 1.0 / (X.shape[0] * C)
    result = solve_multinomial(X, y, K, lam, fit_intercept, tol=1e-12)
    assert result.converged
    ref = LogisticRegression(C=C, tol=1e-12, max_iter=10_000, fit_intercept=fit_intercept).fit(X, y)
    problem = result.problem
    # same objective: sklearn's point is no better than ours, and at most a rounding-level worse
    p_ours, p_sk = problem.primal(result.coef, result.intercept), problem.primal(ref.coef_, ref.intercept_)
    assert p_ours <= p_sk + 1e-14 and p_sk - p_ours < 1e-9 * p_ours
    scale = np.abs(ref.coef_).max()
    np.testing.assert_allclose(result.coef, ref.coef_, atol=1e-4 * scale)
    np.testing.assert_allclose(result.intercept, ref.intercept_, atol=1e-4 * max(scale, 1.0))
    # a second-order sklearn solver agrees to near rounding
    tight = LogisticRegression(C=C, tol=1e-12, max_iter=10_000, fit_intercept=fit_intercept,
                               solver="newton-cg").fit(X, y)
    np.testing.assert_allclose(result.coef, tight.coef_, atol=1e-8 * scale)
    np.testing.assert_allclose(result.intercept, tight.intercept_, atol=1e-8 * max(scale, 1.0))
    assert np.array_equal(result.problem.scores(result.coef, result.intercept).argmax(axis=1), tight.predict(X))


def test_warm_start_and_polish(rng):
    X, y = _labelled_data(rng, 60, 5, 3)
    cold = solve_multinomial(X, y, 3, 0.01, True, tol=1e-6, polish=False)
    warm = solve_multinomial(X, y, 3, 0.01, True, cold.coef, cold.intercept, tol=1e-12)
    assert warm.converged and warm.n_iter <= cold.n_iter
    W, b = polish_multinomial(warm.problem, cold.coef, cold.intercept)
    np.testing.assert_allclose(W, warm.coef, atol=1e-10)
    np.testing.assert_allclose(b, warm.intercept, atol=1e-10)
    # optimal_intercept at the optimum's W recovers its b
    np.testing.assert_allclose(optimal_intercept(warm.problem, warm.coef), warm.intercept, atol=1e-9)


# --------------------------------------------------------------------------- certificates
def test_log_ratio_bounds_are_sound_and_nearly_tight(rng):
    K, r = 4, 0.05
    Q = _random_simplex(rng, 50, K, 3.0)
    L = log_ratio_lower_bounds(Q, r)
    off = ~np.eye(K, dtype=bool)
    # sound: points of the sphere ‖δ‖ = r, Σδ = 0, that stay in the simplex
    for _ in range(200):
        delta = rng.normal(size=(50, K))
        delta -= delta.mean(axis=1, keepdims=True)
        delta *= r / np.linalg.norm(delta, axis=1, keepdims=True)
        Qs = (Q + delta)[np.all(Q + delta > 0, axis=1)]
        ratio = np.log(Qs[:, :, None]) - np.log(Qs[:, None, :])
        assert np.all(L[np.all(Q + delta > 0, axis=1)][:, off] <= ratio[:, off])
    # nearly tight: against a fine scan of the quarter circle the proof relaxes to
    theta = np.linspace(0, np.pi / 2, 20_001)
    r_c = r * np.sqrt((K - 1) / K)
    a, c = np.minimum(r * np.cos(theta), r_c), np.minimum(r * np.sin(theta), r_c)
    with np.errstate(invalid="ignore", divide="ignore"):
        num = np.log(np.maximum(Q[:, :, None] - a, 0))
        den = np.log(np.minimum(Q[:, :, None] + c, 1))
        scan = (num[:, :, None, :] - den[:, None, :, :]).min(axis=3)
    centre = np.log(Q[:, :, None]) - np.log(Q[:, None, :])
    finite = np.isfinite(scan) & off
    assert finite.sum() > 0.5 * off.sum() * 50
    assert np.all(L[finite] <= scan[finite] + 1e-12)
    assert np.all(scan[finite] - L[finite] <= 0.1 * (centre[finite] - scan[finite]))
    assert np.all(np.isneginf(L[~np.isfinite(scan) & off]))


def _certificate_case(C, fit_intercept, removed, sparse=False):
    X, y = load_digits(return_X_y=True)
    X_new_pts = X[300:360] / 16.0
    X, y = X[:300] / 16.0, y[:300]
    K, n = 10, X.shape[0]
    if sparse:
        X, X_new_pts = sp.csr_matrix(X), sp.csr_matrix(X_new_pts)
    old = _exact(X, y, K, 1.0 / (n * C), fit_intercept)
    keep = np.setdiff1d(np.arange(n), removed)
    X_keep = X[keep]
    new = _exact(X_keep, y[keep], K, 1.0 / (keep.size * C), fit_intercept, old.coef, old.intercept)
    X_eval = sp.vstack([X[removed], X_new_pts]).tocsr() if sparse else np.vstack([X[removed], X_new_pts])
    return old, new, X_eval


def _check_certificate(cert, new, X_eval, slack=1e-9):
    """Every region contains the exact refit; returns the number of certified rows."""
    problem = new.problem
    assert np.linalg.norm(new.coef - cert.coef) <= cert.primal_radius
    alpha_star = problem.dual_point(problem.scores(new.coef, new.intercept))
    assert np.linalg.norm(alpha_star - cert.alpha) <= cert.dual_radius
    lower, upper = cert.pairwise_bounds(X_eval)
    D, S = _differences(X_eval, new.coef, new.intercept)
    assert _contains(lower, upper, D, slack)
    lower5, upper5 = cert.pairwise_bounds(X_eval, candidates=3)
    assert _contains(lower5, upper5, D, slack)
    # a subset of the rows is never tighter, up to the rounding of the distances ‖x − x_i‖: the pools
    # group the evaluation rows by predicted class, so their products differ from those of all rows
    # at once in the last bits, which the square root amplifies where x is a training row (each
    # computation's allowance covers its own rounding; seed 752005 differed by 5e-10)
    dense = X_eval.toarray() if sp.issparse(X_eval) else X_eval
    reach = np.linalg.norm(dense, axis=1) + np.sqrt(problem.X.multiply(problem.X).sum(axis=1)).max() \
        if sp.issparse(problem.X) else np.linalg.norm(dense, axis=1) + np.linalg.norm(problem.X, axis=1).max()
    rounding = 4 * cert.primal_radius * np.sqrt(8 * (dense.shape[1] + 16) * np.finfo(float).eps) * reach
    assert np.all(lower5 <= lower + 1e-12 + rounding[:, None, None])
    # the pairs through the predicted class only (the others chained through it): sound, and never
    # tighter than all pairs through the union of the rows picked, for the pairs they compute
    lower_top, upper_top = cert.pairwise_bounds(X_eval, candidates=3, pairs="top")
    assert _contains(lower_top, upper_top, D, slack)
    top = (X_eval @ cert.coef.T + cert.intercept).argmax(axis=1)
    rows = np.arange(top.size)
    assert np.all(lower_top[rows, top, :] <= lower5[rows, top, :] + 1e-12 + rounding[:, None])
    assert np.all(lower_top[rows, :, top] <= lower5[rows, :, top] + 1e-12 + rounding[:, None])
    # per-class bounds through any class (Σ_k s*_k = 0 for the symmetric optimum)
    for through in (top, (top + 1) % problem.K):
        low, up = per_class_through(lower_top, through)
        tol = slack * (1.0 + np.abs(S))
        assert np.all(low <= S + tol) and np.all(S - tol <= up)
    pred = certified_argmax(lower, upper)
    decided = pred >= 0
    assert np.array_equal(pred[decided], S.argmax(axis=1)[decided])
    pred_top = certified_argmax(lower_top, upper_top)
    assert np.array_equal(pred_top[pred_top >= 0], S.argmax(axis=1)[pred_top >= 0])
    return int(decided.sum())


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("removed", [[7], list(range(40, 55))], ids=["one row", "block"])
def test_certificates_contain_the_refit(rng, fit_intercept, removed):
    C = 0.1
    old, new, X_eval = _certificate_case(C, fit_intercept, removed)
    problem = new.problem
    # centre 1: the old optimum (the paper's choice), with and without re-fitting its intercept
    certified = []
    for refit in (False, True):
        cert = MultinomialCertificate(problem, old.coef, old.intercept, refit_intercept=refit)
        certified.append(_check_certificate(cert, new, X_eval))
    # centre 2: a perturbed point (the theorem holds for any centre)
    W = old.coef + 0.02 * rng.normal(size=old.coef.shape)
    b = old.intercept + 0.05 * rng.normal(size=old.intercept.shape)
    _check_certificate(MultinomialCertificate(problem, W, b), new, X_eval)
    # centre 3: one Newton step on the new problem from the old optimum (notes §6): tight
    W1, b1 = polish_multinomial(problem, old.coef, old.intercept, max_steps=1)
    cert = MultinomialCertificate(problem, W1, b1, refit_intercept=True)
    n_newton = _check_certificate(cert, new, X_eval)
    assert n_newton >= 0.8 * X_eval.shape[0]
    assert cert.primal_radius < 0.1 * MultinomialCertificate(problem, old.coef, old.intercept).primal_radius


def test_certificates_sparse_and_weak_regularization():
    old, new, X_eval = _certificate_case(2.0, True, [3, 150, 299], sparse=True)
    problem = new.problem
    _check_certificate(MultinomialCertificate(problem, old.coef, old.intercept), new, X_eval)
    W1, b1 = polish_multinomial(problem, old.coef, old.intercept, max_steps=2)
    n = _check_certificate(MultinomialCertificate(problem, W1, b1), new, X_eval)
    assert n >= 0.8 * X_eval.shape[0]


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("centre", ["solution", "old optimum"])
def test_candidate_pools_keep_the_narrowest_rows(fit_intercept, centre):
    """``candidates=q`` ranks only the pools of :meth:`MultinomialCertificate._candidate_pools`:
    for every pair (k̂, l ≠ k̂) its bounds are as tight as those through the q narrowest rows
    among all training rows (ranked here by brute force), and still contain the refit. At the
    refit itself (r_P at rounding level) the pools are a small part of the rows."""
    old, new, X_eval = _certificate_case(0.1, fit_intercept, list(range(40, 55)))
    problem = new.problem
    coef, intercept = (new.coef, new.intercept) if centre == "solution" else (old.coef, old.intercept)
    cert = MultinomialCertificate(problem, coef, intercept)
    q, K = 2, problem.K
    lower, upper = cert.pairwise_bounds(X_eval, candidates=q)
    assert _contains(lower, upper, _differences(X_eval, new.coef, new.intercept)[0])
    top = (X_eval @ cert.coef.T + cert.intercept).argmax(axis=1)
    with np.errstate(invalid="ignore"):
        width = -cert.log_ratio_lower - cert.log_ratio_lower.transpose(0, 2, 1)
    for m in range(X_eval.shape[0]):
        k = top[m]
        score = 2 * np.sqrt(2) * cert.primal_radius * cert._distances(X_eval[m:m + 1])[0][:, None] + width[:, k, :]
        others = [l for l in range(K) if l != k]
        rows = np.unique(np.argpartition(score[:, others], q - 1, axis=0)[:q])
        brute = cert.pairwise_bounds(X_eval[m:m + 1], candidates=rows)[0][0]
        assert np.all(lower[m, k, others] >= brute[k, others] - 1e-12)
    pools = [pool.size for _, pool, _ in cert._candidate_pools(X_eval, top, q)]
    if centre == "solution":
        assert max(pools) < problem.n / 2

def test_too_narrow_regions_are_detected():
    """The containment checks above can fail: shrinking the radii 20-fold makes them fail."""
    old, new, X_eval = _certificate_case(0.1, True, [7])
    cert = MultinomialCertificate(new.problem, old.coef, old.intercept)
    cert.primal_radius /= 20
    cert.dual_radius /= 20
    cert._log_lower = None
    with pytest.raises(AssertionError):
        _check_certificate(cert, new, X_eval)


def test_certified_argmax_ties_follow_the_first_index():
    lower = np.zeros((4, 3, 3))
    # row 0: class 0 ties class 1 exactly and beats class 2 → numpy's argmax picks 0
    lower[0] = [[0, 0, 1], [0, 0, 1], [-1, -1, 0]]
    # row 1: class 2 beats both strictly
    lower[1] = [[0, 0, -2], [0, 0, -1], [1, 0.5, 0]]
    # row 2: classes 1 and 2 tie exactly: the tie goes to 1, which beats 0
    lower[2] = [[0, -1, -1], [1, 0, 0], [1, 0, 0]]
    # row 3: 0 ≤ s_1 − s_0 with an upper bound > 0: may tie, may win: class 0 cannot be
    # certified, nor class 1 (a tie would go to class 0)
    lower[3] = [[0, -0.5, 1], [0, 0, 1], [-1, -1, 0]]
    upper = -lower.transpose(0, 2, 1)
    assert certified_argmax(lower, upper).tolist() == [0, 2, 1, -1]


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_zero_row_without_intercept_is_a_tie_won_by_class_zero(rng, fit_intercept):
    X, y = _labelled_data(rng, 40, 3, 3)
    result = _exact(X, y, 3, 0.05, fit_intercept)
    cert = MultinomialCertificate(result.problem, result.coef, result.intercept)
    lower, upper = cert.pairwise_bounds(np.zeros((1, 3)))
    _, S = _differences(np.zeros((1, 3)), result.coef, result.intercept)
    if not fit_intercept:
        assert np.all(lower == 0) and np.all(upper == 0)
        assert certified_argmax(lower, upper)[0] == 0 == S.argmax()
    else:
        assert certified_argmax(lower, upper)[0] in (-1, S.argmax())


# --------------------------------------------------------------------------- property test
@settings(max_examples=40, deadline=None)
@given(
    K=st.integers(3, 5),
    n=st.integers(10, 40),
    d=st.integers(1, 8),
    log10_C=st.floats(-2.0, 2.0),
    fit_intercept=st.booleans(),
    block=st.booleans(),
    newton_centre=st.booleans(),
    sparse=st.booleans(),
    seed=st.integers(0, 2**31 - 1),
)
# an evaluation row that is a training row: the candidate pools' distances to it rounded otherwise
@example(K=4, n=15, d=2, log10_C=0.0, fit_intercept=False, block=False, newton_centre=False, sparse=False, seed=752005)
def test_property_certificates_hold_on_random_problems(K, n, d, log10_C, fit_intercept, block, newton_centre,
                                                       sparse, seed):
    rng = np.random.default_rng(seed)
    n = max(n, 2 * K + 2)
    X, y = _labelled_data(rng, n, d, K, noise=rng.choice([0.3, 2.0]))
    if sparse:
        X[rng.random(X.shape) < 0.5] = 0.0
    C = 10.0 ** log10_C
    old = _exact(sp.csr_matrix(X) if sparse else X, y, K, 1.0 / (n * C), fit_intercept)
    size = int(rng.integers(2, max(3, n // 4))) if block else 1
    removed = rng.choice(n, size=size, replace=False)
    keep = np.setdiff1d(np.arange(n), removed)
    if fit_intercept and np.unique(y[keep]).size < K:  # no optimum without every class
        keep = np.union1d(keep, [np.flatnonzero(y == k)[0] for k in range(K)])
        removed = np.setdiff1d(np.arange(n), keep)
    X_keep = sp.csr_matrix(X[keep]) if sparse else X[keep]
    new = _exact(X_keep, y[keep], K, 1.0 / (keep.size * C), fit_intercept, old.coef, old.intercept)
    problem = new.problem
    W, b = old.coef, old.intercept
    if newton_centre:
        W, b = polish_multinomial(problem, W, b, max_steps=1)
    cert = MultinomialCertificate(problem, W, b, refit_intercept=bool(rng.integers(2)))
    X_eval = np.vstack([X[removed], rng.normal(size=(5, d)), X[keep][:5]])
    _check_certificate(cert, new, sp.csr_matrix(X_eval) if sparse else X_eval)
