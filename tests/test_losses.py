"""Numerical checks of every loss in glru.losses against its own definition.

Each closed form (derivative, second derivative, conjugate, domain, smoothness constants) is
compared with something computed independently from ``value`` (or from ``derivative`` /
``second_derivative`` for the higher-order constants): finite differences, a numerical
supremum, or a dense scan.
"""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize_scalar

from glru import losses
from glru.losses import Huber, Logistic, Loss, SmoothedHinge, Squared, SquaredHinge, get_loss

GAMMAS = (0.3, 1.0, 2.5)
LOSSES = (
    [Squared()]
    + [Huber(g) for g in GAMMAS]
    + [SquaredHinge()]
    + [SmoothedHinge(g) for g in GAMMAS]
    + [Logistic()]
)
IDS = [repr(loss) for loss in LOSSES]
CLASSIFICATION = [loss for loss in LOSSES if loss.is_classification]

KINK_SKIP = 1e-4
SETTINGS = settings(max_examples=60, deadline=None)


def _t_strategy(lim=6.0):
    return st.floats(-lim, lim, allow_nan=False, allow_subnormal=False)


def _y_strategy(loss):
    if loss.is_classification:
        return st.sampled_from([-1.0, 1.0])
    return st.floats(-5.0, 5.0, allow_nan=False, allow_subnormal=False)


def near_kink(loss, y, t, eps=KINK_SKIP):
    """Whether t is within eps of a point where ℓ'' jumps (ℓ' has a kink)."""
    if isinstance(loss, Huber):
        return abs(abs(t - y) - loss.gamma) < eps
    if isinstance(loss, SquaredHinge):
        return abs(y * t - 1.0) < eps
    if isinstance(loss, SmoothedHinge):
        return abs(y * t - 1.0) < eps or abs(y * t - (1.0 - loss.gamma)) < eps
    return False


def kinks(loss, y):
    """The t-locations of the kinks of ℓ'_y."""
    if isinstance(loss, Huber):
        return [y - loss.gamma, y + loss.gamma]
    if isinstance(loss, SquaredHinge):
        return [1.0 / y]
    if isinstance(loss, SmoothedHinge):
        return [1.0 / y, (1.0 - loss.gamma) / y]
    return []


def f(loss, method, y, t):
    """Scalar evaluation through the vectorised API."""
    return float(getattr(loss, method)(np.array([y]), np.array([t]))[0])


def numerical_sup(loss, y, s, bound=100.0):
    """sup_{|t| ≤ bound} [s t − ℓ_y(t)] by bounded Brent on the concave objective."""
    res = minimize_scalar(
        lambda t: -(s * t - f(loss, "value", y, t)),
        bounds=(-bound, bound), method="bounded", options=dict(xatol=1e-12, maxiter=10_000),
    )
    # the objective is concave: also look at the ends in case the sup is approached there
    return max(-res.fun, s * bound - f(loss, "value", y, bound), -s * bound - f(loss, "value", y, -bound))


def domain(loss, y):
    lo, hi = loss.conjugate_domain(np.array([y]))
    return float(lo[0]), float(hi[0])


# ------------------------------------------------------------------ derivatives


@pytest.mark.parametrize("function,derivative", [("value", "derivative"), ("derivative", "second_derivative")])
@pytest.mark.parametrize("loss", LOSSES, ids=IDS)
def test_derivatives_match_finite_differences(loss, function, derivative):
    @SETTINGS
    @given(y=_y_strategy(loss), t=_t_strategy())
    def check(y, t):
        assume(not near_kink(loss, y, t))
        h = 1e-6 * max(1.0, abs(t))
        fd = (f(loss, function, y, t + h) - f(loss, function, y, t - h)) / (2 * h)
        assert f(loss, derivative, y, t) == pytest.approx(fd, rel=1e-6, abs=1e-6)

    check()


KINKED = [(lo, y) for lo in LOSSES if not isinstance(lo, (Squared, Logistic))
          for y in ([-1.0, 1.0] if lo.is_classification else [-1.0, 1.0, 2.7])]


@pytest.mark.parametrize("loss, y", KINKED, ids=[f"{lo!r}-y={y}" for lo, y in KINKED])
def test_second_derivative_at_kink_is_a_one_sided_limit(loss, y):
    """The generalised ℓ'' at a kink of ℓ' must be one of the one-sided values there."""
    assert kinks(loss, y)
    for k in kinks(loss, y):
        at = f(loss, "second_derivative", y, k)
        left = f(loss, "second_derivative", y, k - 1e-3)
        right = f(loss, "second_derivative", y, k + 1e-3)
        assert left != right  # it really is a jump
        assert at in (left, right)


def test_vectorised_over_arrays():
    """Array y and t give the elementwise scalar results (the engine relies on it)."""
    rng = np.random.default_rng(1)
    for loss in LOSSES:
        y = np.where(rng.random(50) < 0.5, -1.0, 1.0) if loss.is_classification else rng.normal(size=50)
        t = rng.normal(scale=2, size=50)
        for method in ("value", "derivative", "second_derivative"):
            out = getattr(loss, method)(y, t)
            assert out.shape == (50,)
            np.testing.assert_array_equal(out, [f(loss, method, a, b) for a, b in zip(y, t)])
        s = loss.derivative(y, t)
        np.testing.assert_array_equal(loss.conjugate(y, s), [float(loss.conjugate(np.array([a]), np.array([b]))[0])
                                                             for a, b in zip(y, s)])


# ------------------------------------------------------------------ conjugate


def _s_in_domain(loss, y, raw):
    lo, hi = domain(loss, y)
    return float(np.clip(raw, lo, hi))


@pytest.mark.parametrize("loss", LOSSES, ids=IDS)
def test_conjugate_matches_numerical_sup_inside_domain(loss):
    @settings(max_examples=40, deadline=None)
    @given(y=_y_strategy(loss), raw=st.floats(-10.0, 10.0, allow_nan=False, allow_subnormal=False))
    def check(y, raw):
        s = _s_in_domain(loss, y, raw)
        conj = f(loss, "conjugate", y, s)
        assert np.isfinite(conj)
        num = numerical_sup(loss, y, s)
        assert conj == pytest.approx(num, rel=1e-7, abs=1e-9)

    check()


@pytest.mark.parametrize("loss", LOSSES, ids=IDS)
def test_conjugate_at_domain_ends_and_zero(loss):
    """dom ℓ* is closed (finite ends included, matching the numerical sup) and ℓ*(0) = 0."""
    for y in ([-1.0, 1.0] if loss.is_classification else [-2.0, 0.0, 1.5]):
        assert f(loss, "conjugate", y, 0.0) == 0.0
        for end in domain(loss, y):
            if np.isfinite(end):
                conj = f(loss, "conjugate", y, end)
                assert np.isfinite(conj)
                assert conj == pytest.approx(numerical_sup(loss, y, end), rel=1e-7, abs=1e-9)


@pytest.mark.parametrize("loss", [lo for lo in LOSSES if not isinstance(lo, Squared)],
                         ids=lambda lo: repr(lo))
def test_conjugate_is_inf_outside_domain_and_sup_is_unbounded(loss):
    @settings(max_examples=30, deadline=None)
    @given(y=_y_strategy(loss), dist=st.floats(1e-3, 5.0), upper=st.booleans())
    def check(y, dist, upper):
        lo, hi = domain(loss, y)
        end = hi if upper else lo
        assume(np.isfinite(end))
        s = end + dist if upper else end - dist
        assert f(loss, "conjugate", y, s) == np.inf
        # s t − ℓ(t) increases at rate ≥ dist without bound: its sup over [−B, B] grows with B
        sups = []
        for bound in (10.0, 100.0, 1000.0):
            grid = np.linspace(-bound, bound, 4001)
            sups.append(np.max(s * grid - loss.value(np.full_like(grid, y), grid)))
        assert sups[1] - sups[0] >= 0.99 * dist * 90.0
        assert sups[2] - sups[1] >= 0.99 * dist * 900.0

    check()


@pytest.mark.parametrize("loss", LOSSES, ids=IDS)
def test_fenchel_young_equality_at_kkt_pairs(loss):
    @SETTINGS
    @given(y=_y_strategy(loss), t=_t_strategy(20.0))
    def check(y, t):
        s = f(loss, "derivative", y, t)
        v, c = f(loss, "value", y, t), f(loss, "conjugate", y, s)
        scale = 1.0 + abs(v) + abs(c) + abs(s * t)
        assert abs(v + c - s * t) <= 1e-10 * scale

    check()


@pytest.mark.parametrize("loss", LOSSES, ids=IDS)
def test_fenchel_young_inequality_in_domain(loss):
    @SETTINGS
    @given(y=_y_strategy(loss), t=_t_strategy(20.0),
           raw=st.floats(-10.0, 10.0, allow_nan=False, allow_subnormal=False))
    def check(y, t, raw):
        s = _s_in_domain(loss, y, raw)
        v, c = f(loss, "value", y, t), f(loss, "conjugate", y, s)
        scale = 1.0 + abs(v) + abs(c) + abs(s * t)
        assert v + c >= s * t - 1e-12 * scale

    check()


# ------------------------------------------------------------------ domain


@pytest.mark.parametrize("loss", LOSSES, ids=IDS)
def test_conjugate_domain_is_range_of_derivative(loss):
    ys = [-1.0, 1.0] if loss.is_classification else [-4.0, 0.0, 3.0]
    for y in ys:
        lo, hi = domain(loss, y)
        assert lo <= 0.0 <= hi
        t = np.linspace(-50, 50, 10_001)
        d = loss.derivative(np.full_like(t, y), t)
        assert np.all(d >= lo) and np.all(d <= hi)
        # the ends are approached (ℓ' is monotone, so look far out on both sides)
        far = loss.derivative(np.full(2, y), np.array([-60.0, 60.0]))
        huge = loss.derivative(np.full(2, y), np.array([-1e8, 1e8]))
        if np.isfinite(lo):
            assert far.min() == pytest.approx(lo, abs=1e-12)
        else:
            assert huge.min() < -1e6
        if np.isfinite(hi):
            assert far.max() == pytest.approx(hi, abs=1e-12)
        else:
            assert huge.max() > 1e6


@pytest.mark.parametrize("loss", LOSSES, ids=IDS)
def test_conjugate_domain_shape_follows_y(loss):
    y = np.array([-1.0, 1.0, 1.0, -1.0]) if loss.is_classification else np.array([0.5, -3.0, 2.0, 0.0])
    lo, hi = loss.conjugate_domain(y)
    assert lo.shape == hi.shape == y.shape
    for i, yi in enumerate(y):
        assert (lo[i], hi[i]) == domain(loss, yi)


# ------------------------------------------------------------------ smoothness constants


def _sample_points(loss, rng, y, size):
    centre = 0.0 if loss.is_classification else y
    return centre + rng.uniform(-4.0, 4.0, size)


@pytest.mark.parametrize("loss", LOSSES, ids=IDS)
def test_smoothness_bounds_derivative_and_is_attained(loss):
    rng = np.random.default_rng(7)
    mu = loss.smoothness
    assert np.isfinite(mu) and mu > 0
    best = 0.0
    for y in ([-1.0, 1.0] if loss.is_classification else [-2.0, 0.5, 3.0]):
        a = _sample_points(loss, rng, y, 3000)
        for b in (a + rng.uniform(-1e-3, 1e-3, a.size), _sample_points(loss, rng, y, a.size)):
            ok = a != b
            yy = np.full(ok.sum(), y)
            ratio = np.abs(loss.derivative(yy, a[ok]) - loss.derivative(yy, b[ok])) / np.abs(a[ok] - b[ok])
            assert np.all(ratio <= mu * (1 + 1e-9))
            best = max(best, ratio.max())
    assert best >= 0.99 * mu


@pytest.mark.parametrize("loss", LOSSES, ids=IDS)
def test_curvature_lipschitz(loss):
    """|ℓ''(a) − ℓ''(b)| ≤ M |a − b| where M is finite (attained approximately); where M is
    infinite, ℓ'' really jumps."""
    rng = np.random.default_rng(8)
    M = loss.curvature_lipschitz
    best = 0.0
    for y in ([-1.0, 1.0] if loss.is_classification else [-2.0, 0.5, 3.0]):
        a = _sample_points(loss, rng, y, 3000)
        b = a + rng.uniform(-1e-3, 1e-3, a.size)
        ok = a != b
        yy = np.full(ok.sum(), y)
        ratio = np.abs(loss.second_derivative(yy, a[ok]) - loss.second_derivative(yy, b[ok])) / np.abs(a[ok] - b[ok])
        if np.isfinite(M):
            assert np.all(ratio <= M * (1 + 1e-6) + 1e-9)
        best = max(best, ratio.max())
    if np.isfinite(M):
        assert M >= 0
        assert best >= 0.99 * M
    else:
        assert best > 1e2  # a jump of ℓ'' across a kink seen at spacing ≤ 1e-3


@pytest.mark.parametrize("loss", LOSSES, ids=IDS)
def test_self_concordance(loss):
    """|ℓ'''| ≤ ν ℓ'' (ℓ''' by finite differences of ℓ''), attained approximately."""
    nu = loss.self_concordance
    if not np.isfinite(nu):
        assert not np.isfinite(loss.curvature_lipschitz)  # only the piecewise losses lack one
        return
    h = 1e-5
    best = 0.0
    for y in ([-1.0, 1.0] if loss.is_classification else [-2.0, 0.5, 3.0]):
        t = np.linspace(-8.0, 8.0, 1601) + (0.0 if loss.is_classification else y)
        yy = np.full_like(t, y)
        curv = loss.second_derivative(yy, t)
        third = (loss.second_derivative(yy, t + h) - loss.second_derivative(yy, t - h)) / (2 * h)
        assert np.all(np.abs(third) <= nu * curv * (1 + 1e-5) + 1e-12)
        if nu > 0:
            best = max(best, np.max(np.abs(third) / curv))
    if nu > 0:
        assert best >= 0.99 * nu


@pytest.mark.parametrize("gamma", GAMMAS)
def test_gamma_sets_smoothness(gamma):
    assert SmoothedHinge(gamma).smoothness == pytest.approx(1.0 / gamma)
    assert Huber(gamma).smoothness == 1.0


# ------------------------------------------------------------------ construction and lookup


@pytest.mark.parametrize("name, cls", [
    ("squared", Squared), ("huber", Huber), ("squared_hinge", SquaredHinge),
    ("smoothed_hinge", SmoothedHinge), ("logistic", Logistic),
])
def test_get_loss_names(name, cls):
    loss = get_loss(name)
    assert type(loss) is cls
    if hasattr(loss, "gamma"):
        assert loss.gamma == 1.0
    assert loss == cls()
    assert loss.is_classification == (name in ("squared_hinge", "smoothed_hinge", "logistic"))


@pytest.mark.parametrize("bad", ["Logistic", "hinge", "", "l2", 3, None, Logistic])
def test_get_loss_unknown_raises(bad):
    with pytest.raises(ValueError, match="Unknown loss"):
        get_loss(bad)


@pytest.mark.parametrize("loss", LOSSES, ids=IDS)
def test_get_loss_passes_instances_through(loss):
    assert get_loss(loss) is loss


def test_custom_loss_subclass_passes_through():
    class MyLoss(Loss):
        pass

    mine = MyLoss()
    assert get_loss(mine) is mine


@pytest.mark.parametrize("cls", [Huber, SmoothedHinge])
@pytest.mark.parametrize("gamma", [0.0, -1.0, np.nan])
def test_invalid_gamma_raises(cls, gamma):
    with pytest.raises(ValueError, match="gamma"):
        cls(gamma)


def test_smoothed_hinge_rejects_infinite_gamma():
    with pytest.raises(ValueError, match="gamma"):
        SmoothedHinge(np.inf)


def test_equality_and_hash_depend_on_gamma():
    assert Huber(0.3) == Huber(0.3) and hash(Huber(0.3)) == hash(Huber(0.3))
    assert Huber(0.3) != Huber(1.0)
    assert Huber(1.0) != SmoothedHinge(1.0)
    assert len({Huber(1.0), Huber(1.0), SmoothedHinge(1.0)}) == 2


def test_module_exports():
    assert set(losses.__all__) == {"Loss", "Squared", "Huber", "SquaredHinge", "SmoothedHinge", "Logistic",
                                   "get_loss"}
