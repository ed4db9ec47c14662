"""Damped Newton–CG steps of many folds at once (glru.fold_steps) against dense references."""

from unittest import mock

import numpy as np
import pytest
import scipy.linalg
import scipy.sparse as sp
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from glru import fold_steps
from glru.fold_steps import (FoldBlock, FoldPreconditioner, ScaledFoldBlock, fold_preconditioner,
                             full_fit_preconditioner, scaled_fold_starts, single_precision)
from glru.newton_centres import weighted_gram
from glru.losses import get_loss
from glru.penalties import L2
from glru.problem import Problem
from glru.solver import polish, solve

from ._problems import random_problem


def _block(seed, n, d, loss, fit_intercept, sparse, m=3):
    """A FoldBlock of m folds (each without a few rows) at random points, with its data."""
    X, y = random_problem(seed, n, d, loss, sparse=sparse)
    rng = np.random.default_rng(seed + 1)
    dropped = [np.sort(rng.choice(n, size=max(1, n // 5), replace=False)) for _ in range(m)]
    Z = rng.standard_normal((d + fit_intercept, m)) * 0.3
    U = np.asarray(X @ Z[:d]) + (Z[d] if fit_intercept else 0.0)
    strengths = rng.uniform(0.1, 2.0, size=m)
    block = FoldBlock(X, X.T, y, get_loss(loss), fit_intercept, Z, U, dropped, strengths)
    return block, X, y, dropped, strengths


def _dense_hessian(X, y, loss, fit_intercept, z, rows, strength):
    """The fold's Hessian in sum form, from the dense rows."""
    Xd = X.toarray() if sp.issparse(X) else X
    Xt = np.hstack([Xd, np.ones((Xd.shape[0], 1))]) if fit_intercept else Xd
    margins = Xt @ z
    curvatures = get_loss(loss).second_derivative(y, margins)
    H = Xt[rows].T @ (curvatures[rows, None] * Xt[rows])
    penalty = np.full(Xt.shape[1], strength)
    if fit_intercept:
        penalty[-1] = 0.0
    return H + np.diag(penalty)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(6, 40), d=st.integers(1, 12),
       loss=st.sampled_from(["logistic", "squared", "squared_hinge", "huber"]),
       fit_intercept=st.booleans(), sparse=st.booleans())
def test_hessian_products_and_steps_match_dense_algebra(seed, n, d, loss, fit_intercept, sparse):
    block, X, y, dropped, strengths = _block(seed, n, d, loss, fit_intercept, sparse)
    rng = np.random.default_rng(seed)
    V = rng.standard_normal(block.Z.shape)
    G = rng.standard_normal(block.Z.shape)
    HV = block.hessian_times(V)
    S = block.newton_steps(G, np.full(G.shape[1], 1e-12))
    for j, rows in enumerate(dropped):
        training = np.setdiff1d(np.arange(n), rows)
        H = _dense_hessian(X, y, loss, fit_intercept, block.Z[:, j], training, strengths[j])
        np.testing.assert_allclose(HV[:, j], H @ V[:, j], rtol=1e-10, atol=1e-10 * np.abs(H).max())
        if np.linalg.eigvalsh(H).min() > 1e-8 * np.abs(H).max():  # CG solves the system where it is one
            np.testing.assert_allclose(H @ S[:, j], -G[:, j], rtol=0, atol=1e-8 * np.linalg.norm(G[:, j]))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(8, 40), d=st.integers(1, 12), fit_intercept=st.booleans(),
       sparse=st.booleans(), scaled=st.booleans())
def test_products_skip_only_the_rows_no_fold_curves_at(seed, n, d, fit_intercept, sparse, scaled):
    """Squared-hinge folds at points that leave most rows past their margin: the Hessian products
    (float64 and float32, of a FoldBlock or a ScaledFoldBlock) and Problem.hessp run on the rows
    some fold curves at, fewer than n, and equal the products on every row."""
    X, y = random_problem(seed, n, d, "squared_hinge", sparse=sparse)
    rng = np.random.default_rng(seed + 1)
    loss, m = get_loss("squared_hinge"), 2
    dropped = [np.sort(rng.choice(n, size=max(1, n // 5), replace=False)) for _ in range(m)]
    coef, _ = scipy.linalg.lstsq(X.toarray() if sp.issparse(X) else X, 4.0 * y)[:2]  # margins near 4y
    Z = np.column_stack([np.append(coef * rng.uniform(0.8, 1.2), 0.0) if fit_intercept else coef * 1.1,
                         np.append(coef, 0.1) if fit_intercept else coef])
    strengths = rng.uniform(0.1, 2.0, size=m)
    if scaled:
        scales, shifts = rng.uniform(0.5, 2.0, (d, m)), np.zeros((d, m))
        block = ScaledFoldBlock(X, X.T, y, loss, fit_intercept, Z, dropped, strengths, scales, shifts,
                                single_precision(X))
    else:
        block = FoldBlock(X, X.T, y, loss, fit_intercept, Z, None, dropped, strengths, single_precision(X))
    curved = np.any(block.curvatures != 0, axis=1)
    assume(curved.sum() <= 0.75 * n)
    V = rng.standard_normal(Z.shape)
    HV, rough = block.hessian_times(V), block.hessian_times(V, rough=True)
    assert block._curved_rows(False)[0].shape[0] == curved.sum() < n
    dense = X.toarray() if sp.issparse(X) else X
    for j, rows in enumerate(dropped):
        training = np.setdiff1d(np.arange(n), rows)
        rows_j = dense * scales[:, j] if scaled else dense
        H = _dense_hessian(rows_j, y, "squared_hinge", fit_intercept, Z[:, j], training, strengths[j])
        expected = H @ V[:, j]
        np.testing.assert_allclose(HV[:, j], expected, rtol=1e-12, atol=1e-12 * (1 + np.abs(expected).max()))
        np.testing.assert_allclose(rough[:, j], expected, rtol=0, atol=1e-5 * (1 + np.abs(expected).max()))
    problem = Problem(X, y, loss, L2(strengths[0] / n), fit_intercept)
    H = _dense_hessian(dense, y, "squared_hinge", fit_intercept, Z[:, 0], np.arange(n), strengths[0]) / n
    for v in V.T:  # (twice at one point: the curved rows are sliced once)
        expected = H @ v
        np.testing.assert_allclose(problem.hessp(Z[:, 0], v), expected, rtol=1e-12,
                                   atol=1e-12 * (1 + np.abs(expected).max()))


def test_coarse_forcing_leaves_the_residual_it_allows():
    block, *_ = _block(3, 60, 20, "logistic", True, False)
    G = np.random.default_rng(0).standard_normal(block.Z.shape)
    forcing = np.array([0.5, 1e-3, 1e-9])
    S = block.newton_steps(G, forcing)
    residuals = np.linalg.norm(block.hessian_times(S) + G, axis=0)
    assert np.all(residuals <= forcing * np.linalg.norm(G, axis=0) * (1 + 1e-9))
    assert residuals[0] > residuals[2]  # the coarse column stopped early
    # each column's count of the iterations it took part in: fewer for the coarse one
    iterations = block.cg_iterations
    assert 1 <= iterations[0] < iterations[1] <= iterations[2] <= fold_steps.CG_MAX_ITER


@pytest.mark.parametrize("sparse", [False, True])
def test_float32_products_serve_coarse_steps_only(sparse):
    """With float32 products the coarse steps still meet their forcing terms (up to the products'
    rounding), and a fine forcing term gets float64 products: a residual far below float32's."""
    block, X, y, dropped, strengths = _block(8, 80, 30, "logistic", True, sparse)
    rough = FoldBlock(X, X.T, y, get_loss("logistic"), True, block.Z, block.U, dropped, strengths,
                      single_precision(X))
    V = np.random.default_rng(2).standard_normal(block.Z.shape)
    exact = block.hessian_times(V)
    assert 0 < np.abs(rough.hessian_times(V, rough=True) - exact).max() <= 1e-5 * np.abs(exact).max()
    G = np.random.default_rng(3).standard_normal(block.Z.shape)
    for forcing in (0.5, 1e-2, 1e-10):
        S = rough.newton_steps(G, np.full(G.shape[1], forcing))
        residuals = np.linalg.norm(block.hessian_times(S) + G, axis=0)
        assert np.all(residuals <= 1.5 * forcing * np.linalg.norm(G, axis=0))


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("sparse", [False, True])
def test_damped_steps_reach_each_fold_optimum(fit_intercept, sparse):
    """From far away (each fold's optimum is at distance ~10), damped Newton–CG steps decrease
    every fold's objective and land on the optimum of an independent solve."""
    n, d = 50, 45  # n ≈ d: the fold optima are far from one another
    X, y = random_problem(11, n, d, "logistic", sparse=sparse)
    loss = get_loss("logistic")
    dropped = [np.arange(k, n, 5) for k in range(5)]
    strengths = np.full(5, 0.5)
    Z = np.zeros((d + fit_intercept, 5))
    reference = None
    for _ in range(60):
        U = np.asarray(X @ Z[:d]) + (Z[d] if fit_intercept else 0.0)
        block = FoldBlock(X, X.T, y, loss, fit_intercept, Z, U, dropped, strengths)
        if reference is not None:  # never up, but for the rounding of the sums at the optimum
            assert np.all(block.objective <= reference * (1 + 1e-14))
        reference = block.objective
        G = block.gradients()
        if np.all(np.linalg.norm(G, axis=0) < 1e-11):
            break
        S = block.newton_steps(G, np.minimum(0.5, np.sqrt(np.linalg.norm(G, axis=0))))
        Z = Z + block.line_search(S, G) * S
    for j, rows in enumerate(dropped):
        training = np.setdiff1d(np.arange(n), rows)
        problem = Problem(X[training], y[training], loss, L2(strengths[j] / training.size), fit_intercept)
        exact = solve(problem, tol=1e-14)
        coef, intercept = polish(problem, exact.coef, exact.intercept)
        np.testing.assert_allclose(Z[:d, j], coef, rtol=1e-7, atol=1e-9)
        if fit_intercept:
            np.testing.assert_allclose(Z[d, j], intercept, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge", "huber"])
def test_line_search_takes_the_minimizer_along_a_long_step(loss):
    block, X, y, _, _ = _block(5, 40, 6, loss, True, False)
    G = block.gradients()
    np.testing.assert_array_equal(block.line_search(G, G), 0.0)  # +g is an ascent direction
    np.testing.assert_array_equal(block.line_search(-1e-3 * G, G), 1.0)  # a short descent step is taken whole
    S = 3 * block.newton_steps(G, np.full(G.shape[1], 1e-10))  # three Newton steps long: t ≈ ⅓
    t = block.line_search(S, G)
    assert np.all((0 < t) & (t < 1))
    moves = block._margins(S)

    def objective(lengths):
        return block._objective(block.U + lengths * moves, block.Z + lengths * S)
    best = np.min([objective(np.full(t.shape, s)) for s in np.linspace(0, 1, 4097)], axis=0)
    # φ convex: φ(t) − φ(t*) ≤ |φ'(t)|·|t − t*| ≤ |φ'(t)|, which the search brings to 1e-3·|φ'(0)|
    slope = np.abs(np.einsum("ij,ij->j", G, S))
    assert np.all(objective(t) <= best + 1e-3 * slope + 1e-12 * np.abs(best))



def _scaled_folds(seed, n, d, fit_intercept, sparse, m=3):
    """(X, y, dropped, strengths, scales, shifts, Z) of m folds scaled each its own way (no shift
    for sparse X, as a scaler that keeps it sparse), at random points."""
    X, y = random_problem(seed, n, d, "logistic", sparse=sparse)
    rng = np.random.default_rng(seed + 2)
    dropped = [np.sort(rng.choice(n, size=max(1, n // 5), replace=False)) for _ in range(m)]
    scales = np.exp(rng.uniform(-2, 2, size=(d, m)))
    shifts = np.zeros((d, m)) if sparse else rng.standard_normal((d, m))
    Z = rng.standard_normal((d + fit_intercept, m)) * 0.3
    return X, y, dropped, rng.uniform(0.1, 2.0, size=m), scales, shifts, Z


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(6, 40), d=st.integers(1, 12), fit_intercept=st.booleans(),
       sparse=st.booleans())
def test_scaled_block_matches_each_folds_scaled_data(seed, n, d, fit_intercept, sparse):
    """Margins, gradients and Hessian products of a ScaledFoldBlock, computed on X as it is, are
    those of a FoldBlock on each fold's scaled rows a_j∘x + c_j."""
    X, y, dropped, strengths, scales, shifts, Z = _scaled_folds(seed, n, d, fit_intercept, sparse)
    loss = get_loss("logistic")
    block = ScaledFoldBlock(X, X.T, y, loss, fit_intercept, Z, dropped, strengths, scales, shifts)
    V = np.random.default_rng(seed).standard_normal(Z.shape)
    HV, G = block.hessian_times(V), block.gradients()
    dense = X.toarray() if sp.issparse(X) else X
    for j in range(Z.shape[1]):
        scaled = dense * scales[:, j] + shifts[:, j]
        U = scaled @ Z[:d, j] + (Z[d, j] if fit_intercept else 0.0)
        one = FoldBlock(scaled, scaled.T, y, loss, fit_intercept, Z[:, [j]], U[:, None], [dropped[j]], strengths[[j]])
        np.testing.assert_allclose(block.U[:, j], U, rtol=1e-12, atol=1e-12 * (1 + np.abs(U).max()))
        np.testing.assert_allclose(G[:, j], one.gradients()[:, 0], rtol=1e-10, atol=1e-10 * (1 + np.abs(G).max()))
        expected = one.hessian_times(V[:, [j]])[:, 0]
        np.testing.assert_allclose(HV[:, j], expected, rtol=1e-10, atol=1e-10 * (1 + np.abs(expected).max()))


def _independent_optima(X, y, loss, fit_intercept, dropped, strengths, scales, shifts):
    """(problem, its optimum polished to rounding) of each fold on its own scaled training rows."""
    dense = X.toarray() if sp.issparse(X) else X
    for j, rows in enumerate(dropped):
        training = np.setdiff1d(np.arange(X.shape[0]), rows)
        scaled = dense[training] * scales[:, j] + shifts[:, j]
        problem = Problem(scaled, y[training], loss, L2(strengths[j] / training.size), fit_intercept)
        exact = solve(problem, tol=1e-14)
        yield problem, polish(problem, exact.coef, exact.intercept)


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("blocks", ["one", "of_one_fold"])
def test_scaled_fold_starts_reach_each_folds_optimum(monkeypatch, fit_intercept, sparse, blocks):
    """From points far from their optima, the steps taken together (in one block, or a block a
    fold) land every fold on the optimum of an independent solve on its scaled training rows
    (n < d: the folds' Hessians far from one another), to the relative gap the steps stop at."""
    if blocks == "of_one_fold":
        monkeypatch.setattr(fold_steps, "block_columns", lambda X, floats=None: 1)
    n, d = 40, 60
    X, y, dropped, strengths, scales, shifts, Z = _scaled_folds(17, n, d, fit_intercept, sparse, m=4)
    loss = get_loss("logistic")
    Z, _ = scaled_fold_starts(X, y, loss, fit_intercept, dropped, strengths, scales, shifts, 10 * Z)
    for j, (problem, optimum) in enumerate(_independent_optima(X, y, loss, fit_intercept, dropped, strengths,
                                                                scales, shifts)):
        _assert_within_start_gap(problem, Z[:, j], optimum)


def _assert_within_start_gap(problem, z, optimum):
    """What the steps promise: a point whose objective is within the relative gap ``START_GAP``
    of the optimum's (ten times it: their estimate ‖g‖²/(2a) leaves out the unpenalized
    intercept's own curvature; plus rounding), hence within √(2·gap/λ) of it in w."""
    coef, intercept = optimum
    best = problem.primal(coef, intercept)
    excess = problem.primal(*problem.split(z)) - best
    assert excess <= (10 * fold_steps.START_GAP + 1e-14) * abs(best), (excess, best)
    rounding = 1e-14 * abs(best)  # (of the two objectives: a closer point's excess is rounding only)
    assert np.linalg.norm(problem.split(z)[0] - coef) <= np.sqrt(2 * (max(excess, 0.0) + rounding) / problem.penalty.lam)


def _full_scaling(rng, d, sparse):
    """(a, c) of the full data's scaling: folds' scalings near it, as a scaler's on most rows."""
    return np.exp(rng.uniform(-1, 1, size=d)), np.zeros(d) if sparse else rng.standard_normal(d)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(6, 40), d=st.integers(1, 12), fit_intercept=st.booleans(),
       sparse=st.booleans())
def test_fold_preconditioner_inverts_the_hessian_it_is_derived_from(seed, n, d, fit_intercept, sparse):
    """The identity behind FoldPreconditioner: with fold j's own curvatures and strength on the
    full data's scaled rows, K = Z̃ᵀD_jZ̃ + a_j diag(ρ_j⁻², 0), R_j K R_jᵀ is fold j's Hessian in
    its own scaling, so the preconditioner built from K undoes the block's Hessian products."""
    X, y, dropped, strengths, scales, shifts, Z = _scaled_folds(seed, n, d, fit_intercept, sparse)
    rng = np.random.default_rng(seed + 3)
    a, c = _full_scaling(rng, d, sparse)
    if not fit_intercept:
        shifts, c = np.zeros_like(shifts), np.zeros(d)  # (R_j is diagonal without an intercept)
    block = ScaledFoldBlock(X, X.T, y, get_loss("logistic"), fit_intercept, Z, dropped, strengths, scales, shifts)
    V = rng.standard_normal(Z.shape)
    HV = block.hessian_times(V)
    dense = X.toarray() if sp.issparse(X) else X
    full = dense * a + c
    ratios, offsets = scales / a[:, None], shifts - scales / a[:, None] * c[:, None]
    for j in range(Z.shape[1]):
        K = weighted_gram(full, block.curvatures[:, j], fit_intercept)
        K[np.arange(d), np.arange(d)] += strengths[j] / ratios[:, j] ** 2
        eigenvalues = np.linalg.eigvalsh(K)
        if eigenvalues.min() <= 1e-9 * eigenvalues.max():  # (no curvature for the intercept)
            continue
        one = FoldPreconditioner(scipy.linalg.cho_factor(K), ratios[:, [j]], offsets[:, [j]])
        got = one.solve(HV[:, [j]], np.ones(1, dtype=bool))[:, 0]
        condition = np.linalg.cond(_dense_hessian_scaled(dense, y, fit_intercept, Z[:, j], dropped[j],
                                                         strengths[j], scales[:, j], shifts[:, j]))
        np.testing.assert_allclose(got, V[:, j], rtol=0, atol=1e-13 * condition * (1 + np.abs(V[:, j]).max()))


def _dense_hessian_scaled(dense, y, fit_intercept, z, dropped, strength, scale, shift):
    scaled = dense * scale + shift
    training = np.setdiff1d(np.arange(dense.shape[0]), dropped)
    return _dense_hessian(scaled, y, "logistic", fit_intercept, z, training, strength)


def test_fold_preconditioner_refuses_what_it_cannot_express(monkeypatch):
    """None where a fold's scaling is no invertible R_j (a zero scale, or shifts without an
    intercept), and where it does not pay off."""
    X, y, dropped, strengths, scales, shifts, Z = _scaled_folds(3, 30, 4, True, False)
    loss, old = get_loss("logistic"), (np.ones(4), np.zeros(4))
    monkeypatch.setattr(fold_steps, "preconditioning_pays_off", lambda *args: True)
    assert fold_preconditioner(X, y, loss, True, np.zeros(4), 0.0, 1.0, scales, shifts, old) is not None
    assert fold_preconditioner(X, y, loss, False, np.zeros(4), 0.0, 1.0, scales, shifts, old) is None
    zero = scales.copy()
    zero[1, 0] = 0.0
    assert fold_preconditioner(X, y, loss, True, np.zeros(4), 0.0, 1.0, zero, shifts, old) is None
    monkeypatch.setattr(fold_steps, "preconditioning_pays_off", lambda *args: False)
    assert fold_preconditioner(X, y, loss, True, np.zeros(4), 0.0, 1.0, scales, shifts, old) is None


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(6, 40), d=st.integers(1, 12),
       loss=st.sampled_from(["logistic", "squared_hinge"]), fit_intercept=st.booleans(), sparse=st.booleans())
def test_full_fit_preconditioner_inverts_the_full_hessian(seed, n, d, loss, fit_intercept, sparse):
    """The engine's folds of X as it is (no scaling): every fold's preconditioner is the full
    data's sum-form Hessian at the full fit, X̃ᵀDX̃ + aP, inverted (its Gram matrix in float32 for
    dense rows: to a float32 rounding times its condition); None where it does not pay off."""
    X, y = random_problem(seed, n, d, loss, sparse=sparse)
    rng = np.random.default_rng(seed + 5)
    z = 0.3 * rng.standard_normal(d + fit_intercept)
    coef, intercept = (z[:-1], float(z[-1])) if fit_intercept else (z, 0.0)
    strength = float(rng.uniform(0.1, 2.0))
    with mock.patch.object(fold_steps, "preconditioning_pays_off", lambda *args: False):
        assert full_fit_preconditioner(X, y, get_loss(loss), fit_intercept, coef, intercept, strength, 3) is None
    with mock.patch.object(fold_steps, "preconditioning_pays_off", lambda *args: True):
        preconditioner = full_fit_preconditioner(X, y, get_loss(loss), fit_intercept, coef, intercept, strength, 3)
    dense = X.toarray() if sp.issparse(X) else X
    curved = np.count_nonzero(get_loss(loss).second_derivative(y, dense @ coef + intercept))
    if loss == "squared_hinge" and curved < d + fit_intercept:  # (near a hard margin: none)
        assert preconditioner is None
        return
    H = _dense_hessian(X, y, loss, fit_intercept, z, np.arange(n), strength)
    eigenvalues = np.linalg.eigvalsh(H)
    assume(eigenvalues.min() > 1e-6 * eigenvalues.max())  # (no curvature for the intercept: singular)
    V = rng.standard_normal((d + fit_intercept, 2))
    got = preconditioner.of([0, 2]).solve(H @ V, np.ones(2, dtype=bool))
    rounding = np.finfo(np.float32 if not sparse else float).eps * n
    np.testing.assert_allclose(got, V, rtol=0, atol=rounding * np.linalg.cond(H) * (1 + np.abs(V).max()))


@pytest.mark.parametrize("sparse", [False, True])
def test_full_fit_preconditioner_refuses_a_squared_hinge_curved_at_fewer_rows_than_coordinates(monkeypatch, sparse):
    """Near a hard margin (the squared hinge curved at fewer than d̃ rows at the full fit) there is
    no preconditioner; curved at d̃ rows, and for the logistic loss at the same point, there is."""
    monkeypatch.setattr(fold_steps, "preconditioning_pays_off", lambda *args: True)
    X, y = random_problem(4, 60, 10, "squared_hinge", sparse=False)
    coef = np.eye(10)[0]  # margins y_i·x_i0: 0 (curved) on the first rows, 2 (flat) on the others
    for curved in (10, 11):  # d̃ = 11 with the intercept
        X[:, 0] = np.where(np.arange(60) < curved, 0.0, 2.0 * y)
        rows = sp.csr_matrix(X) if sparse else X
        formed = full_fit_preconditioner(rows, y, get_loss("squared_hinge"), True, coef, 0.0, 1.0, 5)
        assert (formed is not None) == (curved >= 11)
        assert full_fit_preconditioner(rows, y, get_loss("logistic"), True, coef, 0.0, 1.0, 5) is not None


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("sparse", [False, True])
def test_preconditioned_steps_reach_each_folds_optimum_in_fewer_products(monkeypatch, fit_intercept, sparse):
    """Many rows per feature, ill-conditioned columns, folds scaled near the full data's scaling:
    the steps preconditioned by the full fit's Hessian land every fold on the optimum of an
    independent solve (to the relative gap the steps stop at), with under half the Hessian products of plain conjugate gradients."""
    n, d = 400, 12
    X, y, dropped, strengths, _, _, _ = _scaled_folds(5, n, d, fit_intercept, sparse, m=5)
    X = sp.csr_matrix(X.multiply(np.logspace(-1, 1, d))) if sparse else X * np.logspace(-1, 1, d)
    rng = np.random.default_rng(6)
    a, c = _full_scaling(rng, d, sparse)
    scales = a[:, None] * np.exp(rng.uniform(-0.05, 0.05, size=(d, 5)))
    shifts = c[:, None] + (np.zeros((d, 5)) if sparse else 0.05 * rng.standard_normal((d, 5)))
    if not fit_intercept:
        c, shifts = np.zeros(d), np.zeros((d, 5))
    strength = 1.0
    full = (X.toarray() if sp.issparse(X) else X) * a + c
    loss = get_loss("logistic")
    fit = solve(Problem(full, y, loss, L2(strength / n), fit_intercept), tol=1e-8)
    start = np.vstack([np.column_stack([fit.coef * a / scales[:, j] for j in range(5)])]
                      + ([np.full((1, 5), fit.intercept)] if fit_intercept else []))
    monkeypatch.setattr(fold_steps, "preconditioning_pays_off", lambda *args: True)
    preconditioner = fold_preconditioner(X, y, loss, fit_intercept, fit.coef, fit.intercept, strength, scales,
                                         shifts, (a, c))
    strengths = np.full(5, strength)
    products, counted, original = {}, [], FoldBlock.hessian_times
    monkeypatch.setattr(FoldBlock, "hessian_times", lambda self, V, *args: counted.append(V.shape[1])
                        or original(self, V, *args))
    optima = list(_independent_optima(X, y, loss, fit_intercept, dropped, strengths, scales, shifts))
    for name, given in (("plain", None), ("preconditioned", preconditioner)):
        counted.clear()
        Z, _ = scaled_fold_starts(X, y, loss, fit_intercept, dropped, strengths, scales, shifts, start, given)
        products[name] = sum(counted)
        for j, (problem, optimum) in enumerate(optima):
            _assert_within_start_gap(problem, Z[:, j], optimum)
    assert products["preconditioned"] < products["plain"] / 2, products


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("sparse", [False, True])
def test_polished_fold_starts_reach_rounding_level(fit_intercept, sparse):
    """With ``polish`` the steps go on past the start gap to where the gradient stops shrinking:
    every fold settles at the point glru.solver.polish reaches from an independent solve, to
    rounding (far inside the start gap's radius)."""
    n, d = 40, 60
    X, y, dropped, strengths, scales, shifts, Z = _scaled_folds(17, n, d, fit_intercept, sparse, m=4)
    loss = get_loss("logistic")
    Z, settled = scaled_fold_starts(X, y, loss, fit_intercept, dropped, strengths, scales, shifts, 10 * Z,
                                    polish=True)
    assert settled.all()
    for j, (problem, optimum) in enumerate(_independent_optima(X, y, loss, fit_intercept, dropped, strengths,
                                                                scales, shifts)):
        optimum = problem.join(*optimum)
        scale = 1 + np.abs(optimum).max()
        np.testing.assert_allclose(Z[:, j], optimum, rtol=0, atol=1e-10 * scale / problem.penalty.lam ** 0.5)
        assert np.linalg.norm(problem.grad(Z[:, j])) <= 10 * np.linalg.norm(problem.grad(optimum)) + 1e-15


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_fold_polish_preconditioned_by_the_full_fit(monkeypatch, fit_intercept):
    """A fold's own polish (glru.fold_refit.refit_fold, values) with the conjugate gradients
    preconditioned by its FoldPreconditioner reaches the same rounding-level point as without,
    in fewer Hessian-vector products (its Hessian, cheap to form here, forced unformed)."""
    import glru.fold_refit
    import glru.solver
    from glru.fold_refit import refit_fold

    monkeypatch.setattr(glru.fold_refit, "fold_method", lambda problem: "auto")
    monkeypatch.setattr(glru.solver, "_formed_polish_pays", lambda problem: False)
    n, d = 400, 12
    X, y, dropped, _, _, _, _ = _scaled_folds(5, n, d, fit_intercept, False, m=2)
    X = X * np.logspace(-1, 1, d)
    rng = np.random.default_rng(6)
    a, c = _full_scaling(rng, d, False)
    scales = a[:, None] * np.exp(rng.uniform(-0.05, 0.05, size=(d, 2)))
    shifts = c[:, None] + 0.05 * rng.standard_normal((d, 2)) if fit_intercept else np.zeros((d, 2))
    c = c if fit_intercept else np.zeros(d)
    loss, strength = get_loss("logistic"), 1.0
    fit = solve(Problem(X * a + c, y, loss, L2(strength / n), fit_intercept), tol=1e-8)
    monkeypatch.setattr(fold_steps, "preconditioning_pays_off", lambda *args: True)
    preconditioner = fold_preconditioner(X, y, loss, fit_intercept, fit.coef, fit.intercept, strength,
                                         scales, shifts, (a, c))
    products, hessp = [], Problem.hessp
    monkeypatch.setattr(Problem, "hessp", lambda self, z, v: products.append(1) or hessp(self, z, v))
    for j, (problem, optimum) in enumerate(_independent_optima(X, y, loss, fit_intercept, dropped,
                                                               np.full(2, strength), scales, shifts)):
        training = np.setdiff1d(np.arange(n), dropped[j])
        X_test = X[dropped[j]] * scales[:, j] + shifts[:, j]
        start = (fit.coef * a / scales[:, j], fit.intercept)  # (a start the solve must leave)
        counts = []
        for given in (None, preconditioner.of_fold(j)):
            products.clear()
            outcome = refit_fold(problem.X, y[training], X_test, loss, problem.penalty, fit_intercept, [start],
                                 "values", preconditioner=given)
            counts.append(len(products))
            assert outcome.rounded
            scale = 1 + np.abs(optimum[0]).max()
            np.testing.assert_allclose(outcome.coef, optimum[0], rtol=0, atol=1e-10 * scale)
        assert counts[1] < counts[0], counts


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("sparse", [False, True])
def test_fold_starts_polished_where_held_out_signs_look_open(monkeypatch, fit_intercept, sparse):
    """With ``held_out`` (labels only), a fold one of whose held-out rows lies 1e-9 from its
    decision boundary goes on past the start gap to rounding level (settled), and refit_fold reads
    its label there (1: the exact optimum's), without a solve of its own; folds with nothing
    to decide stop at the start gap, unpolished. The row is held out of every fold: no fold's
    optimum moves with it."""
    import glru.fold_refit
    from glru.fold_refit import refit_fold

    n, d = 40, 60
    X, y, dropped, strengths, scales, shifts, Z = _scaled_folds(17, n, d, fit_intercept, sparse, m=4)
    loss = get_loss("logistic")
    problem, (coef, intercept) = next(_independent_optima(X, y, loss, fit_intercept, dropped, strengths, scales,
                                                          shifts))
    # a row x of X moved along a∘w until (a∘x + c)·w + b = 1e-9, fold 0's scaling (a, c) and optimum (w, b)
    direction, row = coef * scales[:, 0], (X[[0]].toarray() if sparse else X[[0]]).ravel()
    row = row + (1e-9 - intercept - (row * scales[:, 0] + shifts[:, 0]) @ coef) * direction / (direction @ direction)
    X = sp.vstack([X, sp.csr_matrix(row)], format="csr") if sparse else np.vstack([X, row])
    y = np.append(y, 1.0)
    dropped = [np.append(rows, n) for rows in dropped]
    runs = {name: scaled_fold_starts(X, y, loss, fit_intercept, dropped, strengths, scales, shifts, 10 * Z,
                                     held_out=held_out)
            for name, held_out in (("open", [[n], [], [], []]), ("nothing to decide", [[]] * 4))}
    assert runs["open"][1].tolist() == [True, False, False, False]
    assert not runs["nothing to decide"][1].any()
    monkeypatch.setattr(glru.fold_refit, "solve_held_out", lambda *args: pytest.fail("the fold was solved anew"))
    z = runs["open"][0][:, 0]
    X_test = (X[[n]].toarray() if sparse else X[[n]]) * scales[:, 0] + shifts[:, 0]
    outcome = refit_fold(problem.X, problem.y, X_test, loss, problem.penalty, fit_intercept,
                         [problem.split(z)], "labels", polished=True)
    assert outcome.labels.tolist() == [1.0]
