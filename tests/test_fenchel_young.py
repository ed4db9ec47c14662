"""The Fenchel–Young form of the duality gap against exact arithmetic.

:func:`glru.duality.fenchel_young_gap` claims a bound on P(w, b) − D(α) whose rounding error is
first order in the distance to the optimum. Every piece is checked here against values computed
exactly (``fractions``) or to 60 digits (``decimal``) from the same floats: the per-row and
per-coordinate terms with their error bounds, the exact sum of the dual variables, and the whole
gap, including the shrink that makes Σα = 0 exact when an intercept is fitted.
"""

import math
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from glru.duality import enforce_zero_sum, exact_sum, fenchel_young_gap, margin_error
from glru.losses import Huber, Logistic, SmoothedHinge, Squared, SquaredHinge
from glru.penalties import get_penalty
from glru.problem import Problem, frobenius_bound
from glru.solver import polish, solve

LOSSES = [Squared(), Huber(0.7), SquaredHinge(), SmoothedHinge(0.4), Logistic()]
IDS = [repr(loss) for loss in LOSSES]
DIGITS = 60


def _exact_loss(loss, y, t):
    """ℓ_y(t) to DIGITS digits (Decimal y, t)."""
    if isinstance(loss, Squared):
        return (t - y) ** 2 / 2
    if isinstance(loss, Huber):
        r, g = abs(t - y), Decimal(loss.gamma)
        return r * r / 2 if r <= g else g * r - g * g / 2
    h = 1 - y * t
    if isinstance(loss, SquaredHinge):
        return max(h, Decimal(0)) ** 2
    if isinstance(loss, SmoothedHinge):
        g = Decimal(loss.gamma)
        return Decimal(0) if h <= 0 else h * h / (2 * g) if h <= g else h - g / 2
    return (1 + (-y * t).exp()).ln()


def _exact_conjugate(loss, y, s):
    """ℓ*_y(s) to DIGITS digits, or None outside its domain."""
    ys = y * s
    if isinstance(loss, Squared):
        return s * s / 2 + ys
    if isinstance(loss, Huber):
        return s * s / 2 + ys if abs(s) <= Decimal(loss.gamma) else None
    if isinstance(loss, SquaredHinge):
        return s * s / 4 + ys if ys <= 0 else None
    if isinstance(loss, SmoothedHinge):
        return ys + Decimal(loss.gamma) * s * s / 2 if -1 <= ys <= 0 else None
    if not -1 <= ys <= 0:
        return None
    xlogx = lambda x: Decimal(0) if x == 0 else x * x.ln()  # noqa: E731
    return xlogx(1 + ys) + xlogx(-ys)


def _exact_fenchel_young(loss, y, t, alpha, digits=DIGITS):
    """(ℓ + ℓ* + αt to ``digits`` digits, a bound on the reference's own rounding), None outside dom ℓ*."""
    conj = _exact_conjugate(loss, Decimal(y), -Decimal(alpha))
    if conj is None:
        return None, None
    value, cross = _exact_loss(loss, Decimal(y), Decimal(t)), Decimal(alpha) * Decimal(t)
    return value + conj + cross, Decimal(10) ** (8 - digits) * (abs(value) + abs(conj) + abs(cross))


def _dual_strategy(loss):
    """(y, t, α): α the natural dual point −ℓ'(t), nudged by a relative 10⁻¹⁶…10⁻², or anywhere."""
    y = st.sampled_from([-1.0, 1.0]) if loss.is_classification else st.floats(-5, 5, allow_subnormal=False)
    t = st.floats(-40, 40, allow_subnormal=False)
    nudge = st.one_of(st.just(0.0), st.floats(-1e-2, 1e-2, allow_subnormal=False),
                      st.floats(-1e-14, 1e-14, allow_subnormal=False))
    anywhere = st.floats(-3, 3, allow_subnormal=False)
    return st.tuples(y, t, nudge, st.one_of(st.none(), anywhere))


@pytest.mark.parametrize("loss", LOSSES, ids=IDS)
@settings(max_examples=300)
@given(data=st.data())
def test_row_terms_are_within_their_error_bound(loss, data):
    y, t, nudge, anywhere = data.draw(_dual_strategy(loss))
    alpha = -float(loss.derivative(np.float64(y), np.float64(t))) * (1 + nudge) if anywhere is None else anywhere
    _assert_row_term_within_its_bound(loss, y, t, alpha)


def _assert_row_term_within_its_bound(loss, y, t, alpha, digits=DIGITS):
    """ℓ + ℓ* + αt of one row within its error bound of the value to ``digits`` digits (+inf outside
    dom ℓ*)."""
    value, error = loss.fenchel_young(np.array([y]), np.array([t]), np.array([alpha]))
    with localcontext() as context:
        context.prec = digits
        exact, slack = _exact_fenchel_young(loss, y, t, alpha, digits)
        if exact is None:
            assert value[0] == np.inf
            return
        assert exact >= -slack  # Fenchel–Young (the reference itself is sound)
        assert abs(Decimal(float(value[0])) - exact) <= Decimal(float(error[0])) + slack


@settings(max_examples=300)
@given(y=st.sampled_from([-1.0, 1.0]), t=st.floats(650, 760, allow_subnormal=False), sign=st.sampled_from([-1.0, 1.0]),
       nudge=st.floats(-1e-2, 1e-2, allow_subnormal=False), scale=st.sampled_from([1.0, 0.0, 2.0]))
def test_logistic_row_terms_within_their_bound_where_the_sigmoid_underflows(y, t, sign, nudge, scale):
    """Margins of ±650 to ±760, where σ(−|z|) goes subnormal and then to 0 (beyond the largest float's
    logarithm, as SciPy's expit): the natural dual point nudged, 0, or twice it; within the bound (the
    reference to 400 digits: log(1 + e^{−650}) needs 300 to be told from 0)."""
    loss = Logistic()
    t = sign * t
    natural = -float(loss.derivative(np.float64(y), np.float64(t)))
    _assert_row_term_within_its_bound(loss, y, t, natural * (1 + nudge) * scale, digits=400)


@pytest.mark.parametrize("loss", LOSSES, ids=IDS)
def test_row_terms_vanish_to_rounding_at_the_natural_dual_point(loss):
    """The point of the divergence forms: at −α = ℓ'(t) the value and its error bound are far
    below u·ℓ(t), which is all that ℓ + ℓ* + αt could resolve."""
    y = np.tile([-1.0, 1.0], 50) if loss.is_classification else np.linspace(-2, 2, 100)
    t = np.linspace(-3, 3, 100)
    value, error = loss.fenchel_young(y, t, -loss.derivative(y, t))
    assert np.all(np.abs(value) + error <= 1e-3 * np.finfo(float).eps * (loss.value(y, t) + 1.0))


@pytest.mark.parametrize("kappa", [0.0, 0.3])
@settings(max_examples=300)
@given(w=st.floats(-50, 50, allow_subnormal=False), s=st.floats(-50, 50, allow_subnormal=False),
       lam=st.floats(1e-6, 10, allow_subnormal=False), subgradient=st.booleans())
def test_penalty_terms_are_within_their_error_bound(kappa, w, s, lam, subgradient):
    penalty = get_penalty(lam, kappa)
    if subgradient:  # s at (a float next to) ∂ρ(w): the terms' cancelling case
        s = lam * w + kappa * np.sign(w)
    value, error = penalty.fenchel_young(np.array([w]), np.array([s]))
    W, S, L, K = map(Fraction, (w, s, lam, kappa))
    exact = L * W * W / 2 + K * abs(W) + max(abs(S) - K, 0) ** 2 / (2 * L) - W * S
    assert exact >= 0
    assert abs(Fraction(float(value[0])) - exact) <= Fraction(float(error[0]))


@settings(max_examples=200)
@given(values=st.lists(st.one_of(st.floats(-1, 1, allow_subnormal=False),
                                 st.floats(-1e-20, 1e-20, allow_subnormal=True)), min_size=1, max_size=300),
       balance=st.booleans())
def test_exact_sum_is_within_its_bound(values, balance):
    alpha = np.array(values)
    if balance:  # the case it is used in: Σα = 0 up to rounding
        alpha = enforce_zero_sum(alpha)[0]
    total, error = exact_sum(alpha)
    exact = sum(Fraction(a) for a in alpha.tolist())
    assert abs(Fraction(float(total)) - exact) <= Fraction(float(error))
    # far below the γ_n·Σ|α| of a plain sum: the grid parts differ from Σα by at most n·2⁻³¹
    eps = np.finfo(float).eps
    assert error <= alpha.size * (2.0 ** -89 + 8 * eps * 2.0 ** -31) + 8 * eps * abs(math.fsum(alpha.tolist()))


def _exact_gap(loss, penalty, X, y, w, b, alpha, fit_intercept):
    """P(w, b) − D(α'), α' = α with its surplus side shrunk so that Σα' = 0 exactly (or α)."""
    n, d = X.shape
    A = [Fraction(a) for a in alpha.tolist()]
    total = sum(A)
    if fit_intercept and total != 0:
        side = [a for a in A if (a > 0) == (total > 0) and a != 0]
        theta = total / sum(side)
        A = [a * (1 - theta) if (a > 0) == (total > 0) and a != 0 else a for a in A]
        assert sum(A) == 0
    Xf = [[Fraction(v) for v in row] for row in X.tolist()]
    W = [Fraction(v) for v in w.tolist()]
    margins = [sum(x * c for x, c in zip(row, W)) + Fraction(b) for row in Xf]
    v = [sum(Xf[i][j] * A[i] for i in range(n)) / n for j in range(d)]
    lam, kappa = Fraction(penalty.lam), Fraction(penalty.kappa)
    rho = sum(lam * c * c / 2 + kappa * abs(c) for c in W)
    rho_conj = sum(max(abs(s) - kappa, 0) ** 2 / (2 * lam) for s in v)
    with localcontext() as context:
        context.prec = DIGITS
        decimal = lambda q: Decimal(q.numerator) / Decimal(q.denominator)  # noqa: E731
        losses = sum(_exact_loss(loss, Decimal(yi), decimal(m)) for yi, m in zip(y.tolist(), margins))
        conjugates = [_exact_conjugate(loss, Decimal(yi), -decimal(a)) for yi, a in zip(y.tolist(), A)]
        assert all(c is not None for c in conjugates)
        return (losses + sum(conjugates)) / n + decimal(rho + rho_conj)


@pytest.mark.parametrize("loss", [Logistic(), SquaredHinge(), Huber(0.7)], ids=repr)
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("kappa", [0.0, 0.05])
@settings(max_examples=12)
@given(seed=st.integers(0, 2 ** 32 - 1), scale=st.sampled_from([1e-12, 1e-6, 1e-2, 1.0]))
def test_gap_bounds_the_exact_gap(loss, fit_intercept, kappa, seed, scale):
    """At the optimum and at points ``scale`` away from it, the bound is at least the exact
    P − D of the feasible dual point it is stated for (and at least 0)."""
    rng = np.random.default_rng(seed)
    n, d = 14, 4
    X = rng.standard_normal((n, d)) * rng.choice([1e-3, 1.0, 1e3])
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0) if loss.is_classification else rng.standard_normal(n) * 3
    penalty = get_penalty(rng.choice([1e-3, 0.1]), kappa)
    problem = Problem(X, y, loss, penalty, fit_intercept)
    fit = solve(problem, tol=1e-14)
    w = fit.coef + scale * rng.standard_normal(d)
    b = fit.intercept + scale * rng.standard_normal() if fit_intercept else 0.0
    margins = X @ w + b
    alpha = problem.dual_point(margins)
    abs_margins = np.abs(X) @ np.abs(w) + abs(b)
    gap, allowance, floor = fenchel_young_gap(loss, penalty, y, w, margins, alpha, X.T @ alpha,
                                              margin_error(abs_margins, d), frobenius_bound((X * X).sum(axis=1), d),
                                              fit_intercept)
    exact = _exact_gap(loss, penalty, X, y, w, b, alpha, fit_intercept)
    assert gap >= 0 and 0 <= floor <= allowance <= gap
    assert Decimal(float(gap)) >= exact


def test_gap_resolves_far_below_the_classic_allowance(rng):
    """On a 400 × 200 logistic fit polished to rounding level the classic allowance γ_{n+d}·|P|
    alone leaves a radius √(2G/λ) of 10⁻⁵; the Fenchel–Young gap's is over 300 times smaller."""
    X = rng.standard_normal((400, 200))
    y = np.where(X @ rng.standard_normal(200) + rng.standard_normal(400) > 0, 1.0, -1.0)
    for fit_intercept in (False, True):
        problem = Problem(X, y, Logistic(), get_penalty(1.0 / 400), fit_intercept)
        fit = solve(problem, tol=1e-15)
        ev = problem.duality_gap(*polish(problem, fit.coef, fit.intercept))
        classic = 2 * (400 + 200 + 32) * np.finfo(float).eps * ev.magnitude
        assert ev.gap < 1e-5 * classic
