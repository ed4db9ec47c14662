"""The intercept's shift interval (:mod:`glru.intercept`) against 50-digit arithmetic.

Both brackets, the exact one (all rows) and the Taylor one (cached sums), claim points τ_lo, τ_hi
with H⁺(τ_lo) < 0 < H⁻(τ_hi), H±(τ) = Σ_i ℓ'(û_i ± r s_i + τ). That is checked here with the
sums computed to 50 digits from the same floats, and the exact bracket is checked to sit at the
true crossings (its root finder must not stop early).
"""

from decimal import Decimal, localcontext

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import expit

from glru.intercept import RowSums, approximate_root, exact_shift_interval, first_order_width, taylor_shift_interval
from glru.losses import Huber, Logistic, Squared, SquaredHinge

DIGITS = 50
LOSSES = [Logistic(), Squared(), SquaredHinge(), Huber(0.7)]


def _derivative(loss, y, t):
    """ℓ'_y(t) to DIGITS digits (Decimal y, t)."""
    if isinstance(loss, Logistic):
        return -y / (1 + (y * t).exp())
    if isinstance(loss, Squared):
        return t - y
    if isinstance(loss, Huber):
        g = Decimal(loss.gamma)
        return max(-g, min(g, t - y))
    return -2 * y * max(1 - y * t, Decimal(0))


def _exact_h(loss, y, shifted, tau):
    """Σ_i ℓ'(shifted_i + τ) to DIGITS digits."""
    with localcontext() as ctx:
        ctx.prec = DIGITS
        tau = Decimal(float(tau))
        return sum(_derivative(loss, Decimal(float(a)), Decimal(float(b)) + tau) for a, b in zip(y, shifted))


def _exact_crossing(loss, y, shifted, lo, hi):
    """The crossing of the nondecreasing Σℓ'(shifted + τ) in [lo, hi], by bisection to 1e-15."""
    for _ in range(200):
        middle = 0.5 * (lo + hi)
        if hi - lo <= 1e-15 * (1 + abs(middle)):
            break
        lo, hi = (middle, hi) if _exact_h(loss, y, shifted, middle) < 0 else (lo, middle)
    return 0.5 * (lo + hi)


def _rows(loss, seed, n, scale):
    """(y, margins, deviation norms, margin errors) at a centre whose intercept is optimal up to
    rounding: the plain margins shifted by their own root."""
    rng = np.random.default_rng(seed)
    y = rng.standard_normal(n) if isinstance(loss, (Squared, Huber)) else rng.choice([-1.0, 1.0], n)
    if isinstance(loss, (Logistic, SquaredHinge)):
        y[:2] = 1.0, -1.0  # both classes: the intercept has a finite optimum
    margins = scale * rng.standard_normal(n)
    root = approximate_root(lambda t: loss.derivative(y, margins + t).sum(),
                            lambda t: loss.second_derivative(y, margins + t).sum(), 1.0)
    if root is not None:
        margins = margins + root
    deviations = np.abs(rng.standard_normal(n)) * rng.uniform(0.1, 30.0)
    return y, margins, deviations, np.full(n, 1e-15) * (1 + np.abs(margins))


@pytest.mark.parametrize("loss", LOSSES, ids=repr)
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1), n=st.integers(2, 40), scale=st.sampled_from([0.1, 1.0, 5.0]),
       log_radius=st.floats(-12, 0))
def test_brackets_certify_the_signs_they_claim(loss, seed, n, scale, log_radius):
    y, margins, deviations, errors = _rows(loss, seed, n, scale)
    r = 10.0 ** log_radius
    brackets = [exact_shift_interval(loss, r, y, margins, deviations, errors)]
    if np.isfinite(loss.curvature_lipschitz):
        brackets.append(taylor_shift_interval(loss, RowSums.of(loss, y, margins, deviations, errors), r))
    for bracket in brackets:
        if bracket is None:  # the Taylor bound certified nothing: the caller falls back to exact
            continue
        lo, hi = bracket
        assert lo <= hi
        if np.isfinite(lo):
            assert _exact_h(loss, y, margins + r * deviations, lo) < 0
        if np.isfinite(hi):
            assert _exact_h(loss, y, margins - r * deviations, hi) > 0


@pytest.mark.parametrize("loss", [Logistic(), Squared()], ids=repr)
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1), n=st.integers(2, 40), log_radius=st.floats(-12, -1))
def test_exact_bracket_sits_at_the_true_crossings(loss, seed, n, log_radius):
    y, margins, deviations, errors = _rows(loss, seed, n, 1.0)
    r = 10.0 ** log_radius
    lo, hi = exact_shift_interval(loss, r, y, margins, deviations, errors)
    slope = loss.second_derivative(y, margins).sum()
    for shifted, edge in ((margins + r * deviations, lo), (margins - r * deviations, hi)):
        true = _exact_crossing(loss, y, shifted, edge - 1.0, edge + 1.0)
        # the certified point steps past the rounding bound of the sums: n·u of their size
        allowance = 1e-12 * (1 + abs(true)) + 64 * n * 2.0 ** -52 * (n + np.abs(shifted).sum()) / slope
        assert abs(edge - true) <= allowance


@pytest.mark.parametrize("loss", [Logistic(), Squared()], ids=repr)
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1), n=st.integers(2, 40), scale=st.sampled_from([0.1, 1.0, 5.0]))
def test_first_order_width_is_the_exact_brackets_half_width_per_unit_radius_as_it_vanishes(loss, seed, n, scale):
    """(τ_hi − τ_lo)/(2r) → Σℓ''s/Σℓ'' as r → 0: within O(r‖s‖_∞), the curvature's change over the
    ball's spread (none for the squared loss), and the sums' rounding."""
    y, margins, deviations, errors = _rows(loss, seed, n, scale)
    r = 1e-6 / deviations.max()
    lo, hi = exact_shift_interval(loss, r, y, margins, deviations, np.zeros(n))
    # each certified edge steps past the sums' rounding bound, as in test_exact_bracket_sits_at_the_true_crossings
    # (flat where every margin is far out: two rows at margins near ±10, 2e-4 of the width at r = 1e-6)
    slope = loss.second_derivative(y, margins).sum()
    rounding = 64 * n * 2.0 ** -52 * (n + np.abs(margins).sum() + r * deviations.sum()) / slope
    width = first_order_width(loss, y, margins, deviations)
    assert abs((hi - lo) / (2 * r) - width) <= 1e-4 * width + rounding / r


def test_approximate_root_handles_flat_tails_kinks_and_no_root():
    centres = np.linspace(990.0, 1010.0, 7)
    expit_sum = lambda t: expit(t - centres).sum() - 3.2  # noqa: E731
    expit_slope = lambda t: (expit(t - centres) * expit(centres - t)).sum()  # noqa: E731
    root = approximate_root(expit_sum, expit_slope, 1.0)
    assert abs(expit_sum(root)) < 1e-12
    hinge_sum = lambda t: np.maximum(t - centres, 0).sum() - 5.0  # noqa: E731
    hinge_slope = lambda t: float((t > centres).sum())  # noqa: E731
    root = approximate_root(hinge_sum, hinge_slope, 1.0)
    assert abs(hinge_sum(root)) < 1e-9
    assert approximate_root(lambda t: 1.0 + np.exp(t), np.exp, 1.0) is None
    assert approximate_root(lambda t: t - 3.0, lambda t: 1.0, 1.0) == pytest.approx(3.0, abs=1e-15)
