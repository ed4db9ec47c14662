"""Loss functions ℓ_y(t) of a linear prediction t = x·w + b, with their convex conjugates.

Each loss is one small class, vectorised over arrays of labels ``y`` and predictions ``t``
(the paper's Appendix A, with its typos corrected and every formula checked numerically in
``tests/test_losses.py``):

- ``value(y, t)``                ℓ_y(t)
- ``derivative(y, t)``           ℓ'_y(t) (all five losses are continuously differentiable)
- ``second_derivative(y, t)``    ℓ''_y(t), the generalised second derivative at kinks of ℓ'
                                 (as LIBLINEAR uses for the squared hinge)
- ``conjugate(y, s)``            ℓ*_y(s) = sup_t [s t − ℓ_y(t)], +inf outside its domain
- ``conjugate_domain(y)``        the closed interval dom ℓ*_y = [inf ℓ'_y, sup ℓ'_y] as two arrays
- ``fenchel_young(y, t, alpha)``  ℓ_y(t) + ℓ*_y(−α) + α t ≥ 0 and a bound on its rounding error
                                 (the row terms of :func:`glru.duality.fenchel_young_gap`)
- ``smoothness``                 μ such that ℓ'_y is μ-Lipschitz (needed by Theorem 1 (ii))
- ``curvature_lipschitz``        M such that ℓ''_y is M-Lipschitz (inf where ℓ'' jumps), and
- ``self_concordance``           ν such that |ℓ'''_y| ≤ ν ℓ''_y (inf if none): both used by the
                                 O(change) intercept bound of :mod:`glru.intercept`

In the dual, α_i = −ℓ'_{y_i}(t_i), so α_i ranges over −dom ℓ*_{y_i}; every loss here has
min ℓ = 0, hence ℓ*_y(0) = 0 and 0 ∈ dom ℓ*_y, which the certificates use to keep a dual point
feasible while rescaling it.
"""

import numpy as np

from .duality import EPS, UNDERFLOW

__all__ = [
    "Loss",
    "Squared",
    "Huber",
    "SquaredHinge",
    "SmoothedHinge",
    "Logistic",
    "get_loss",
]


def _outside_to_inf(values, inside):
    return np.where(inside, values, np.inf)


def _sigmoids(z):
    """(σ(z), σ(−z), log σ(z), log σ(−z)) from one exponential and one log1p: with e = e^{−|z|},
    σ(|z|) = 1/(1 + e), σ(−|z|) = e/(1 + e), log σ(|z|) = −log1p(e) and log σ(−|z|) = −|z| −
    log1p(e). These are SciPy's ``expit`` and ``log_expit`` formulas (a few ulps each), computed by
    NumPy's vectorized exp and log1p (within an ulp of libm's) instead of value by value: a
    logistic fold's Fenchel–Young terms took 0.6 of the time (5252 rows: 360 → 214 µs). σ(−|z|)
    is 0 where ``expit``'s 1/(1 + e^{|z|}) is, beyond the largest float's logarithm: there
    e/(1 + e) is a subnormal that has lost the relative accuracy the error bounds assume."""
    e = np.exp(-np.abs(z))
    r = 1.0 + e
    big, small = 1.0 / r, e / r
    small = np.where(np.abs(z) > _LOG_MAX, 0.0, small)
    log_big = -np.log1p(e)
    log_small = log_big - np.abs(z)
    ahead = z >= 0
    return (np.where(ahead, big, small), np.where(ahead, small, big),
            np.where(ahead, log_big, log_small), np.where(ahead, log_small, log_big))


_LOG_MAX = np.log(np.finfo(np.float64).max)


def _xlogx(v):
    """v·log v for v ≥ 0, 0 at 0 (SciPy's ``xlogy(v, v)``, by NumPy's vectorized log)."""
    v = np.asarray(v, dtype=float)
    out = np.zeros_like(v)
    np.log(v, out=out, where=v > 0)
    return out * v


class Loss:
    """Base class: a convex, differentiable loss ℓ_y(t) with min_t ℓ_y(t) = 0."""

    #: True when labels must be exactly two classes, encoded −1/+1.
    is_classification = False
    #: Lipschitz constant of ℓ'_y (the loss is ``smoothness``-smooth).
    smoothness = np.inf
    #: Lipschitz constant of ℓ''_y (sup |ℓ'''|); inf where ℓ'' jumps.
    curvature_lipschitz = np.inf
    #: ν with |ℓ'''_y| ≤ ν ℓ''_y (generalized self-concordance); inf where none holds.
    self_concordance = np.inf
    #: Whether the box of a smooth loss's certificate (the Dual-SCB (16), its sums a pass over the
    #: rows) can narrow the ball's bounds on decision values (see SquaredHinge).
    box_narrows_ball = True

    def value(self, y, t):
        raise NotImplementedError

    def derivative(self, y, t):
        raise NotImplementedError

    def second_derivative(self, y, t):
        raise NotImplementedError

    def conjugate(self, y, s):
        raise NotImplementedError

    def conjugate_domain(self, y):
        raise NotImplementedError

    def fenchel_young(self, y, t, alpha):
        """(ℓ_y(t) + ℓ*_y(−α) + α t, a bound on its rounding error), elementwise.

        Fenchel–Young makes the value ≥ 0, 0 exactly at the natural dual point −α = ℓ'_y(t).
        Each loss computes it as a divergence (a square, a sum of non-negative terms, or a
        relative entropy), never as ℓ + ℓ* + αt, so that its error is a few ulps of its own
        size and of its distance from the natural dual point rather than of ℓ's size: this is
        what lets :func:`glru.duality.fenchel_young_gap` resolve gaps far below ``u·P``.
        """
        raise NotImplementedError

    def __repr__(self):
        params = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({params})"

    def __eq__(self, other):
        return type(self) is type(other) and vars(self) == vars(other)

    def __hash__(self):
        return hash((type(self), tuple(sorted(vars(self).items()))))


class Squared(Loss):
    """ℓ_y(t) = ½ (t − y)²; ℓ*_y(s) = ½ s² + y s on all of ℝ; 1-smooth."""

    smoothness = 1.0
    curvature_lipschitz = 0.0
    self_concordance = 0.0

    def value(self, y, t):
        return 0.5 * (t - y) ** 2

    def derivative(self, y, t):
        return t - y

    def second_derivative(self, y, t):
        return np.ones_like(np.asarray(t, dtype=float))

    def conjugate(self, y, s):
        return 0.5 * s * s + y * s

    def conjugate_domain(self, y):
        y = np.asarray(y, dtype=float)
        return np.full_like(y, -np.inf), np.full_like(y, np.inf)

    def fenchel_young(self, y, t, alpha):
        # ½(t − y)² + ½α² − αy + αt = ½(t − y + α)²
        r = t - y + alpha
        slack = 2 * EPS * (np.abs(t) + np.abs(y) + np.abs(alpha))  # bounds the error of r
        return 0.5 * r * r, (np.abs(r) + slack) * slack + 4 * EPS * r * r + UNDERFLOW


class Huber(Loss):
    """ℓ_y(t) = ½{(t − y)² − ([|t − y| − γ]₊)²}; ℓ*_y(s) = ½ s² + y s on |s| ≤ γ; 1-smooth."""

    smoothness = 1.0

    def __init__(self, gamma=1.0):
        if not (np.isfinite(gamma) and gamma > 0):
            raise ValueError(f"Huber gamma must be a finite number > 0, got {gamma!r}.")
        self.gamma = float(gamma)

    def value(self, y, t):
        r = np.abs(t - y)
        excess = np.maximum(r - self.gamma, 0.0)
        return 0.5 * (r * r - excess * excess)

    def derivative(self, y, t):
        return np.clip(t - y, -self.gamma, self.gamma)

    def second_derivative(self, y, t):
        return (np.abs(t - y) < self.gamma).astype(float)

    def conjugate(self, y, s):
        return _outside_to_inf(0.5 * s * s + y * s, np.abs(s) <= self.gamma)

    def conjugate_domain(self, y):
        y = np.asarray(y, dtype=float)
        return np.full_like(y, -self.gamma), np.full_like(y, self.gamma)

    def fenchel_young(self, y, t, alpha):
        # within γ of y: ½(t − y + α)², as for the squared loss; beyond it, with ε = γ + α·sign(r)
        # (≥ 0 on dom ℓ*): γ|r| + αr + ½(α² − γ²) = ε(|r| − γ) + ε²/2, a sum of non-negative terms
        r = t - y
        inside = np.abs(r) <= self.gamma
        near = r + alpha
        eps = self.gamma + alpha * np.sign(r)
        value = np.where(inside, 0.5 * near * near, eps * (np.abs(r) - self.gamma) + 0.5 * eps * eps)
        value = _outside_to_inf(value, np.abs(alpha) <= self.gamma)
        slack = 2 * EPS * (np.abs(t) + np.abs(y) + np.abs(alpha) + self.gamma)
        # ∂/∂r is |r + α| inside and ε outside, continuous across |r| = γ: a branch taken on
        # the wrong side of γ by rounding costs at most slack²/2 more
        error = (np.where(inside, np.abs(near), eps) + slack) * slack + 8 * EPS * value + UNDERFLOW
        return value, error


class SquaredHinge(Loss):
    """ℓ_y(t) = ([1 − y t]₊)², y ∈ {−1, +1}; ℓ*_y(s) = (s² + 4 y s)/4 on y s ≤ 0; 2-smooth."""

    is_classification = True
    smoothness = 2.0
    # Its conjugate's domain is a half-line a row (yα ≥ 0): Remark 2 clips a column's box on one side
    # only, at 0, and only where the training rows' x_ij·y_i share a sign. Unclipped, the box is never
    # narrower than the ball on a row whose columns have μ‖X_j‖² ≥ 4nλ (mean form): its half-width is
    # then at least twice the ball's, and its centre, the dual point's w(α̂) = ŵ − ∇P(ŵ)/λ, lies within
    # the ball's radius √(2G/λ) of ŵ, so the box holds the ball's interval. Measured, with the sums a
    # pass over each fold's rows (8 of 49 ms a fold, profiled, on sparse 6974 × 321, 19 %, with a
    # StandardScaler): of 5.3e5 held-out signs that the ball left open, in 14 LinearSVC
    # configurations (mushrooms, a9a.t and w8a with a StandardScaler at C = 0.01 and 1; eight random
    # sparse and dense ones, 14 to 1786 columns, C from 0.012 to 67), the box decided none.
    box_narrows_ball = False

    def value(self, y, t):
        return np.maximum(1.0 - y * t, 0.0) ** 2

    def derivative(self, y, t):
        return -2.0 * y * np.maximum(1.0 - y * t, 0.0)

    def second_derivative(self, y, t):
        return 2.0 * (y * t < 1.0)

    def conjugate(self, y, s):
        return _outside_to_inf(0.25 * s * s + y * s, y * s <= 0.0)

    def conjugate_domain(self, y):
        y = np.asarray(y, dtype=float)
        return np.where(y > 0, -np.inf, 0.0), np.where(y > 0, 0.0, np.inf)

    def fenchel_young(self, y, t, alpha):
        # with h = 1 − yt and a = yα ≥ 0: h₊² − ah + a²/4, which is (h − a/2)² for h ≥ 0 and
        # a|h| + a²/4 below
        h, a = 1.0 - y * t, y * alpha
        value = np.where(h >= 0.0, (h - 0.5 * a) ** 2, a * (0.25 * a - h))
        value = _outside_to_inf(value, a >= 0.0)
        slack = 2 * EPS * (1.0 + np.abs(t))  # bounds the error of h
        # the value's slope in h is ℓ'(h) − a, and ℓ' = 2h₊ is 2-Lipschitz
        error = (np.abs(2 * np.maximum(h, 0.0) - a) + 2 * slack) * slack + 8 * EPS * value + UNDERFLOW
        return value, error


class SmoothedHinge(Loss):
    """Smoothed hinge with parameter γ, y ∈ {−1, +1}; (1/γ)-smooth.

    ℓ_y(t) = 0 if y t ≥ 1, (1 − y t)²/(2γ) if 1 − γ ≤ y t ≤ 1, 1 − y t − γ/2 otherwise.
    ℓ*_y(s) = y s + γ s²/2 on −1 ≤ y s ≤ 0 (the paper's ½γ[(γys + y)² − 1]/γ² form simplified;
    the paper calls the loss "γ-smooth", but ℓ'' = 1/γ on the quadratic piece).
    """

    is_classification = True

    def __init__(self, gamma=1.0):
        if not (np.isfinite(gamma) and gamma > 0):
            raise ValueError(f"SmoothedHinge gamma must be a finite number > 0, got {gamma!r}.")
        self.gamma = float(gamma)

    @property
    def smoothness(self):
        return 1.0 / self.gamma

    def value(self, y, t):
        z = 1.0 - y * t
        return np.where(
            z <= 0.0, 0.0, np.where(z <= self.gamma, z * z / (2 * self.gamma), z - self.gamma / 2)
        )

    def derivative(self, y, t):
        z = 1.0 - y * t
        return -y * np.clip(z / self.gamma, 0.0, 1.0)

    def second_derivative(self, y, t):
        z = 1.0 - y * t
        return ((z > 0.0) & (z < self.gamma)) / self.gamma

    def conjugate(self, y, s):
        ys = y * s
        return _outside_to_inf(ys + 0.5 * self.gamma * s * s, (ys >= -1.0) & (ys <= 0.0))

    def conjugate_domain(self, y):
        y = np.asarray(y, dtype=float)
        return np.where(y > 0, -1.0, 0.0), np.where(y > 0, 0.0, 1.0)

    def fenchel_young(self, y, t, alpha):
        # with h = 1 − yt and a = yα ∈ [0, 1]: ℓ − ah + γa²/2, which is a|h| + γa²/2 for h ≤ 0,
        # (h − γa)²/(2γ) for 0 ≤ h ≤ γ, and (1 − a)(h − γ + γ(1 − a)/2) beyond
        g = self.gamma
        h, a = 1.0 - y * t, y * alpha
        value = np.where(h <= 0.0, a * (0.5 * g * a - h),
                         np.where(h <= g, (h - g * a) ** 2 / (2 * g), (1.0 - a) * (h - g + 0.5 * g * (1.0 - a))))
        value = _outside_to_inf(value, (a >= 0.0) & (a <= 1.0))
        slack = 2 * EPS * (1.0 + np.abs(t))  # bounds the error of h
        # the value's slope in h is ℓ'(h) − a, and ℓ' = clip(h/γ, 0, 1) is (1/γ)-Lipschitz
        error = (np.abs(np.clip(h / g, 0.0, 1.0) - a) + slack / g) * slack + 8 * EPS * value + UNDERFLOW
        return value, error


class Logistic(Loss):
    """ℓ_y(t) = log(1 + exp(−y t)), y ∈ {−1, +1}; (1/4)-smooth.

    ℓ*_y(s) = (1 + ys) log(1 + ys) + (−ys) log(−ys) on −1 ≤ y s ≤ 0 (0 log 0 = 0).
    """

    is_classification = True
    smoothness = 0.25
    # ℓ''' = ±p(1 − p)(1 − 2p) with p = σ(yt): largest modulus 1/(6√3), at p = ½ ± 1/(2√3),
    # and |ℓ'''| = ℓ''·|1 − 2p| ≤ ℓ''
    curvature_lipschitz = 1.0 / (6.0 * np.sqrt(3.0))
    self_concordance = 1.0

    def value(self, y, t):
        # max(z, 0) + log1p(e^−|z|), z = −yt: as accurate as np.logaddexp (a few ulps) and 2.6 times
        # faster on large arrays, whose exp is vectorized where logaddexp calls libm value by value
        z = np.atleast_1d(np.asarray(-y * t, dtype=float))
        tail = np.abs(z)
        np.negative(tail, out=tail)
        np.exp(tail, out=tail)
        np.log1p(tail, out=tail)
        value = np.maximum(z, 0.0, out=z) + tail
        return value if np.ndim(y) or np.ndim(t) else value[0]

    def derivative(self, y, t):
        # −y σ(−yt) = −y/(1 + e^{yt}), which overflows to the right limit 0; NumPy's exp is vectorized
        # where scipy's expit is not (1.7 times faster on the folds' margins)
        with np.errstate(over="ignore"):
            return -y / (1.0 + np.exp(y * t))

    def second_derivative(self, y, t):
        # σ(z)σ(−z) = e/(1 + e)² with e = e^{−|z|}: 1.9 times faster than p(1 − p) from expit
        # (vectorized exp, as above). Below u² it is 0, as p(1 − p) was on the correct side of
        # the boundary (1 − p rounds to 0 beyond |z| ≈ 37; that absolute error of up to u·p is
        # what the bounds allow for), so that no curvature of 1e-300 divides a sum into overflow
        e = np.exp(-np.abs(y * t))
        r = 1.0 + e
        return np.where(e < EPS * EPS, 0.0, e / (r * r))

    def conjugate(self, y, s):
        u = np.clip(y * s, -1.0, 0.0)
        return _outside_to_inf(_xlogx(1.0 + u) + _xlogx(-u), (y * s >= -1.0) & (y * s <= 0.0))

    def conjugate_domain(self, y):
        y = np.asarray(y, dtype=float)
        return np.where(y > 0, -1.0, 0.0), np.where(y > 0, 0.0, 1.0)

    def fenchel_young(self, y, t, alpha):
        """The relative entropy of Bernoulli(a) to Bernoulli(p), a = yα, p = σ(−yt), q = 1 − p.

        Two ways, the one with the smaller error bound kept per row:

        - near the natural dual point (|a − p| ≤ min(p, q)/2), a·log1p((a − p)/p) +
          (1 − a)·log1p((p − a)/q) with p and q from :func:`_sigmoids` (a few ulps each): their errors
          move the value by (a − p)(ε_q − ε_p) to first order and by (p̂ − p)²/(2pq) ≤ 8u²·p/q to
          second, so the bound is a few ulps of the two terms and of |a − p|·(1 + a/p + (1 − a)/q),
          plus 64u²·(1 + p/q) (at a = p̂ the computed value is 0, the exact one that second-order
          term);
        - anywhere, a(log a − log p) + (1 − a)(log(1 − a) − log q), the logarithms from
          :func:`_sigmoids` too: a few ulps of each logarithm, which is what remains where q is
          tiny (a misclassified row far from the boundary: there p/q overflows).
        """
        a, z = y * alpha, -y * t
        inside = (a >= 0.0) & (a <= 1.0)
        a = np.where(inside, a, 0.5)  # outside dom ℓ* the value is +inf; keep the arithmetic quiet
        p, q, log_p, log_q = _sigmoids(z)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            log_a, log_b = np.log(a), np.log1p(-a)
            gap = a - p
            close = (np.abs(gap) <= 0.5 * p) & (np.abs(gap) <= 0.5 * q)
            towards_p, towards_q = a * np.log1p(gap / p), (1.0 - a) * np.log1p(-gap / q)
            near = towards_p + towards_q
            near_error = 32 * EPS * (np.abs(towards_p) + np.abs(towards_q)
                                     + np.abs(gap) * (1.0 + a / p + (1.0 - a) / q)) + 16 * EPS ** 2 * (1.0 + p / q)
            first = np.where(a == 0.0, 0.0, a * (log_a - log_p))
            second = np.where(a == 1.0, 0.0, (1.0 - a) * (log_b - log_q))
            anywhere_error = 32 * EPS * (np.where(a == 0.0, 0.0, a * (np.abs(log_a) + np.abs(log_p) + 1.0))
                                         + np.where(a == 1.0, 0.0, (1.0 - a) * (np.abs(log_b) + np.abs(log_q) + 1.0)))
            use_near = close & (near_error < anywhere_error)
        value = np.where(use_near, near, first + second)
        error = np.where(use_near, near_error, anywhere_error)
        return _outside_to_inf(value, inside), np.where(inside, error + UNDERFLOW, 0.0)

_LOSSES = {
    "squared": Squared,
    "huber": Huber,
    "squared_hinge": SquaredHinge,
    "smoothed_hinge": SmoothedHinge,
    "logistic": Logistic,
}


def get_loss(loss):
    """Return a :class:`Loss` from a name in ``{"squared", "huber", "squared_hinge",
    "smoothed_hinge", "logistic"}`` (γ = 1 for the two that take one) or a Loss instance."""
    if isinstance(loss, Loss):
        return loss
    if isinstance(loss, str) and loss in _LOSSES:
        return _LOSSES[loss]()
    raise ValueError(f"Unknown loss {loss!r}; expected one of {sorted(_LOSSES)} or a glru.losses.Loss instance.")
