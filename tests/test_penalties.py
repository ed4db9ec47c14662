"""glru.penalties: L2(lam) and ElasticNet(lam, kappa), incl. lam = 0 (the lasso), checked
against their definition ρ(t) = (lam/2) t² + kappa |t| and numerically computed conjugates."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize_scalar

from glru.penalties import L2, ElasticNet, get_penalty

LAMS = (0.01, 0.5, 3.0)
KAPPAS = (0.0, 0.2, 1.5)
SMOOTH = [L2(lam) for lam in LAMS] + [ElasticNet(lam, kappa) for lam in LAMS for kappa in KAPPAS if kappa > 0]
LASSO = [ElasticNet(0.0, kappa) for kappa in (0.2, 1.5)]
ALL = SMOOTH + LASSO
SETTINGS = settings(max_examples=60, deadline=None)

reals = st.floats(-20.0, 20.0, allow_nan=False, allow_subnormal=False)


def rho(pen, t):
    """ρ(t) from its definition (independent of the class)."""
    return 0.5 * pen.lam * t * t + pen.kappa * abs(t)


def numerical_sup(pen, s, bound=1e4):
    """sup_{|t| ≤ bound} [s t − ρ(t)] by bounded Brent on the concave objective."""
    res = minimize_scalar(lambda t: -(s * t - rho(pen, t)), bounds=(-bound, bound), method="bounded",
                          options=dict(xatol=1e-12, maxiter=10_000))
    return max(-res.fun, 0.0 * s - rho(pen, 0.0), s * bound - rho(pen, bound), -s * bound - rho(pen, -bound))


def subdifferential(pen, s):
    """(inf, sup) of ∂ρ*(s) from the definition, or None when it is empty."""
    lam, kappa = pen.lam, pen.kappa
    if lam > 0:
        g = np.sign(s) * max(abs(s) - kappa, 0.0) / lam
        return g, g
    # ρ* = indicator of [−kappa, kappa]: ∂ρ*(s) is its normal cone
    if abs(s) > kappa:
        return None
    lo = -np.inf if s == -kappa else 0.0
    hi = np.inf if s == kappa else 0.0
    return lo, hi


# ------------------------------------------------------------------ value


@pytest.mark.parametrize("pen", ALL, ids=repr)
def test_value_matches_definition(pen):
    rng = np.random.default_rng(0)
    w = rng.normal(scale=3, size=40)
    expected = sum(rho(pen, t) for t in w)
    assert pen.value(w) == pytest.approx(expected, rel=1e-13)
    np.testing.assert_allclose(pen.value_terms(w), [rho(pen, t) for t in w], rtol=1e-14)
    assert pen.value(np.zeros(5)) == 0.0


def test_value_weights_l2_and_l1():
    pen = ElasticNet(2.0, 0.5)
    w = np.array([1.0, -3.0])
    # (2/2)(1 + 9) + 0.5 (1 + 3)
    assert pen.value(w) == pytest.approx(12.0)
    assert L2(4.0).value(w) == pytest.approx(20.0)


# ------------------------------------------------------------------ conjugate


@pytest.mark.parametrize("pen", SMOOTH, ids=repr)
def test_conjugate_terms_match_numerical_sup(pen):
    @SETTINGS
    @given(s=reals)
    def check(s):
        conj = float(pen.conjugate_terms(np.array([s]))[0])
        assert conj == pytest.approx(numerical_sup(pen, s), rel=1e-7, abs=1e-9)

    check()


@pytest.mark.parametrize("pen", LASSO, ids=repr)
def test_lasso_conjugate_is_indicator(pen):
    @SETTINGS
    @given(s=reals)
    def check(s):
        conj = float(pen.conjugate_terms(np.array([s]))[0])
        if abs(s) <= pen.kappa:
            assert conj == 0.0
            assert numerical_sup(pen, s) == pytest.approx(0.0, abs=1e-9)
        else:
            assert conj == np.inf
            # the numerical sup grows without bound: at rate |s| − kappa
            sups = [max(abs(s) * b - rho(pen, b), 0.0) for b in (10.0, 100.0, 1000.0)]
            excess = abs(s) - pen.kappa
            assert sups[2] - sups[1] >= 0.99 * 900 * excess
            assert sups[1] - sups[0] >= 0.99 * 90 * excess

    check()


def test_lasso_conjugate_at_kappa_endpoints_is_zero():
    pen = ElasticNet(0.0, 0.7)
    np.testing.assert_array_equal(pen.conjugate_terms(np.array([-0.7, 0.7, 0.0])), [0.0, 0.0, 0.0])
    assert pen.conjugate(np.array([0.7, 0.71])) == np.inf


@pytest.mark.parametrize("pen", ALL, ids=repr)
def test_conjugate_is_sum_of_terms(pen):
    rng = np.random.default_rng(3)
    s = rng.uniform(-1.4, 1.4, size=30) * max(pen.kappa, 1.0)
    terms = pen.conjugate_terms(s)
    assert terms.shape == s.shape
    assert pen.conjugate(s) == pytest.approx(terms.sum(), rel=1e-14)


def test_l2_conjugate_closed_form():
    s = np.array([-2.0, 0.5, 3.0])
    np.testing.assert_allclose(L2(0.5).conjugate_terms(s), s * s / 1.0)
    np.testing.assert_allclose(ElasticNet(2.0, 1.0).conjugate_terms(s), [0.25, 0.0, 1.0])


# ------------------------------------------------------------------ conjugate gradient


@pytest.mark.parametrize("pen", SMOOTH, ids=repr)
def test_conjugate_gradient_matches_finite_differences(pen):
    @SETTINGS
    @given(s=reals)
    def check(s):
        assume(abs(abs(s) - pen.kappa) > 1e-4)  # ρ*'' jumps at |s| = kappa
        h = 1e-6 * max(1.0, abs(s))
        fd = (pen.conjugate_terms(np.array([s + h]))[0] - pen.conjugate_terms(np.array([s - h]))[0]) / (2 * h)
        g = float(pen.conjugate_gradient(np.array([s]))[0])
        assert g == pytest.approx(fd, rel=1e-6, abs=1e-6)

    check()


@pytest.mark.parametrize("pen", SMOOTH, ids=repr)
def test_conjugate_gradient_is_the_maximiser(pen):
    """∇ρ*(s) = argmax_t [s t − ρ(t)] (checked against the numerical argmax)."""
    for s in (-7.0, -1.0, -0.1, 0.0, 0.15, 2.0, 9.0):
        g = float(pen.conjugate_gradient(np.array([s]))[0])
        res = minimize_scalar(lambda t: -(s * t - rho(pen, t)), bounds=(-1e4, 1e4), method="bounded",
                              options=dict(xatol=1e-12, maxiter=10_000))
        assert g == pytest.approx(res.x, abs=1e-5 * max(1.0, abs(g)))


@pytest.mark.parametrize("pen", LASSO + [L2(0.0)], ids=repr)
def test_conjugate_gradient_set_valued_when_lam_zero(pen):
    with pytest.raises(ValueError, match="lam = 0"):
        pen.conjugate_gradient(np.array([0.1]))


@pytest.mark.parametrize("pen", SMOOTH, ids=repr)
def test_fenchel_young_equality(pen):
    @SETTINGS
    @given(s=reals)
    def check(s):
        sv = np.array([s])
        w = pen.conjugate_gradient(sv)
        lhs = pen.value_terms(w)[0] + pen.conjugate_terms(sv)[0]
        assert lhs == pytest.approx(w[0] * s, rel=1e-12, abs=1e-14)

    check()


@pytest.mark.parametrize("pen", ALL, ids=repr)
def test_fenchel_young_inequality(pen):
    @SETTINGS
    @given(s=reals, w=reals)
    def check(s, w):
        conj = pen.conjugate_terms(np.array([s]))[0]
        val = pen.value_terms(np.array([w]))[0]
        assert val + conj >= w * s - 1e-12 * (1 + abs(w * s) + abs(val))

    check()


@pytest.mark.parametrize("pen", LASSO, ids=repr)
def test_fenchel_young_equality_lasso(pen):
    """With lam = 0 the pairs are (w, s) with s ∈ ∂ρ(w): w = 0 and |s| ≤ kappa, or
    s = kappa·sign(w)."""
    for s in np.linspace(-pen.kappa, pen.kappa, 11):
        assert pen.value_terms(np.array([0.0]))[0] + pen.conjugate_terms(np.array([s]))[0] == 0.0
    for w in (-3.0, 0.5, 8.0):
        s = pen.kappa * np.sign(w)
        lhs = pen.value_terms(np.array([w]))[0] + pen.conjugate_terms(np.array([s]))[0]
        assert lhs == pytest.approx(w * s, rel=1e-14)


# ------------------------------------------------------------------ gradient bounds


def _check_bounds_sound(pen, s_lower, s_upper):
    lower, upper = pen.conjugate_gradient_bounds(np.array([s_lower]), np.array([s_upper]))
    lower, upper = float(np.asarray(lower).ravel()[0]), float(np.asarray(upper).ravel()[0])
    assert lower <= upper
    grid = list(np.linspace(s_lower, s_upper, 41)) + [s for s in (-pen.kappa, 0.0, pen.kappa)
                                                       if s_lower <= s <= s_upper]
    for s in grid:
        sub = subdifferential(pen, s)
        if sub is None:
            continue
        assert lower <= sub[0] and sub[1] <= upper, (s, sub, lower, upper)
    return lower, upper


@pytest.mark.parametrize("pen", ALL, ids=repr)
def test_conjugate_gradient_bounds_sound(pen):
    @settings(max_examples=80, deadline=None)
    @given(a=reals, b=reals)
    def check(a, b):
        s_lower, s_upper = min(a, b), max(a, b)
        lower, upper = _check_bounds_sound(pen, s_lower, s_upper)
        if pen.lam > 0:
            # and tight: the ends are attained
            assert lower == subdifferential(pen, s_lower)[0]
            assert upper == subdifferential(pen, s_upper)[1]

    check()


@pytest.mark.parametrize("kappa", [0.2, 1.5])
@pytest.mark.parametrize("frac_lower, frac_upper, expected", [
    (-0.5, 0.5, (0.0, 0.0)),        # strictly inside: ∂ρ* = {0} throughout
    (-1.0, 0.5, (-np.inf, 0.0)),    # touches −kappa: (−∞, 0]
    (-0.5, 1.0, (0.0, np.inf)),     # touches +kappa: [0, ∞)
    (-1.0, 1.0, (-np.inf, np.inf)),
    (-3.0, 3.0, (-np.inf, np.inf)),  # beyond both ends
    (1.0, 1.0, (0.0, np.inf)),
    (-1.0, -1.0, (-np.inf, 0.0)),
    (1.5, 2.0, (0.0, np.inf)),      # entirely outside: ∂ρ* empty, any bounds are sound
    (-2.0, -1.5, (-np.inf, 0.0)),
])
def test_lasso_gradient_bounds_cases(kappa, frac_lower, frac_upper, expected):
    pen = ElasticNet(0.0, kappa)
    lower, upper = _check_bounds_sound(pen, frac_lower * kappa, frac_upper * kappa)
    if -1.0 <= frac_lower <= frac_upper <= 1.0:
        assert (lower, upper) == expected  # tight where ∂ρ* is non-empty


def test_gradient_bounds_vectorised():
    pen = ElasticNet(0.0, 1.0)
    lo, hi = pen.conjugate_gradient_bounds(np.array([-0.5, -1.0, 2.0]), np.array([0.5, 1.0, 3.0]))
    np.testing.assert_array_equal(lo, [0.0, -np.inf, 0.0])
    np.testing.assert_array_equal(hi, [0.0, np.inf, np.inf])
    pen = ElasticNet(2.0, 1.0)
    lo, hi = pen.conjugate_gradient_bounds(np.array([-3.0, 0.0]), np.array([0.5, 5.0]))
    np.testing.assert_allclose(lo, [-1.0, 0.0])
    np.testing.assert_allclose(hi, [0.0, 2.0])


@pytest.mark.parametrize("pen", [L2(0.0), ElasticNet(0.0, 0.0)], ids=repr)
@pytest.mark.parametrize("s_lower, s_upper", [(0.0, 0.0), (-1.0, 0.0), (0.0, 1.0)])
def test_unpenalized_gradient_bounds_at_zero(pen, s_lower, s_upper):
    _check_bounds_sound(pen, s_lower, s_upper)


@pytest.mark.parametrize("pen", [L2(0.0), ElasticNet(0.0, 0.0)], ids=repr)
def test_unpenalized_gradient_bounds_away_from_zero(pen):
    # away from s = 0 (where ∂ρ* is empty) and across it, the bounds are (−∞, ∞)-sound
    assert _check_bounds_sound(pen, -1.0, 1.0) == (-np.inf, np.inf)
    _check_bounds_sound(pen, 0.5, 1.0)
    _check_bounds_sound(pen, -1.0, -0.5)


# ------------------------------------------------------------------ construction


@pytest.mark.parametrize("lam", [0.0, 1e-8, 0.3, 7.0])
def test_strong_convexity_is_lam(lam):
    assert L2(lam).strong_convexity == lam
    assert ElasticNet(lam, 0.4).strong_convexity == lam


def test_attributes_and_get_penalty():
    pen = ElasticNet(0.5, 0.25)
    assert (pen.lam, pen.kappa) == (0.5, 0.25)
    assert L2(2.0).kappa == 0.0
    assert type(get_penalty(1.0)) is L2
    assert type(get_penalty(1.0, 0.0)) is L2
    got = get_penalty(1.0, 0.3)
    assert type(got) is ElasticNet and (got.lam, got.kappa) == (1.0, 0.3)
    assert type(get_penalty(0.0, 0.3)) is ElasticNet


@pytest.mark.parametrize("bad", [-1.0, -1e-12, np.nan, np.inf, -np.inf])
def test_invalid_lam_raises(bad):
    with pytest.raises(ValueError, match="lam"):
        L2(bad)
    with pytest.raises(ValueError, match="lam"):
        ElasticNet(bad, 0.1)
    with pytest.raises(ValueError, match="lam"):
        get_penalty(bad, 0.1)


@pytest.mark.parametrize("bad", [-1.0, -1e-12, np.nan, np.inf, -np.inf])
def test_invalid_kappa_raises(bad):
    with pytest.raises(ValueError, match="kappa"):
        ElasticNet(1.0, bad)
    with pytest.raises(ValueError, match="kappa"):
        ElasticNet(0.0, bad)
    with pytest.raises(ValueError, match="kappa"):
        get_penalty(1.0, bad)
