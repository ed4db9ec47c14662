"""Bounds on the unpenalized intercept (the paper has none; notes §7 asks for one).

Statement. Let x̄ be any fixed vector and write a prediction as (x − x̄)·w + c with
c = b + x̄·w. Let (ŵ, b̂) be a centre, û_i = x_i·ŵ + b̂ its margins on the rows of the
(modified) problem, s_i ≥ ‖x_i − x̄‖₂, and suppose ‖w* − ŵ‖₂ ≤ r (Theorem 1 (i-P), which holds
with an unpenalized intercept). Then c* − ĉ ∈ [τ_lo, τ_hi], where ĉ = b̂ + x̄·ŵ and

    τ_lo = sup{τ : H⁺(τ) < 0},  H⁺(τ) = Σ_i ℓ'_i(û_i + r s_i + τ),
    τ_hi = inf{τ : H⁻(τ) > 0},  H⁻(τ) = Σ_i ℓ'_i(û_i − r s_i + τ).

Proof. For fixed w*, the optimal c* minimises Σ_i ℓ_i((x_i − x̄)·w* + c), a convex differentiable
function of c, so h(c*) = 0 with h(c) = Σ_i ℓ'_i((x_i − x̄)·w* + c). Now
(x_i − x̄)·w* = û_i − ĉ + (x_i − x̄)·(w* − ŵ) and |(x_i − x̄)·(w* − ŵ)| ≤ r s_i (Cauchy–Schwarz);
each ℓ'_i is nondecreasing, so H⁻(c − ĉ) ≤ h(c) ≤ H⁺(c − ĉ) for every c. At τ* = c* − ĉ,
H⁺(τ*) ≥ 0, and H⁺ is nondecreasing, so every τ with H⁺(τ) < 0 lies below τ*; symmetrically
every τ with H⁻(τ) > 0 lies above τ*. ∎
Consequently x·w* + b* = (x − x̄)·w* + ĉ + τ* ∈ x·ŵ + b̂ ± r‖x − x̄‖₂ + [τ_lo, τ_hi].

Any x̄ is valid. The curvature-weighted mean x̄ = Σℓ''_i x_i / Σℓ''_i at the centre makes the
first-order sensitivity of c* to w vanish, so it is the one used.

Two ways to certify a sign of H±:
- exactly, evaluating the sums over all rows (O(n) per evaluation), :func:`exact_shift_interval`;
- from cached sums, in O(1), when ℓ'' is M-Lipschitz and |ℓ'''| ≤ ν ℓ'' (logistic: M = 1/(6√3),
  ν = 1; squared: M = ν = 0). By Taylor, ℓ'(u + δ) = ℓ'(u) + ℓ''(u)δ + R with
  |R| ≤ ½ max_ξ|ℓ'''(ξ)| δ² ≤ min(½Mδ², ½ν ℓ''(u) e^{ν|δ|} δ²), since ℓ''(ξ) ≤ ℓ''(u)e^{ν|ξ − u|}.
  With δ_i = ±r s_i + τ and |δ_i| ≤ Δ = r·max s_i + |τ|,
      H⁺(τ) ≤ D1 + r·D2s + τ·D2 + min(½M·Σδ_i², ½ν e^{νΔ}·Σℓ''_i δ_i²),
      H⁻(τ) ≥ D1 − r·D2s + τ·D2 − min(…same with δ_i = −r s_i + τ…),
  where Σδ_i² = r²S2 ± 2rτS1 + mτ² and Σℓ''_iδ_i² = r²D2ss ± 2rτD2s + τ²D2, with
  D1 = Σℓ'(û_i), D2 = Σℓ''(û_i), D2s = Σℓ''(û_i)s_i, D2ss = Σℓ''(û_i)s_i², S1 = Σs_i, S2 = Σs_i²,
  m = #rows. The sums are kept per bucket of s_i and the remainder bound is applied per bucket
  with that bucket's largest s_i. They change by the removed/added rows' terms only, which makes the intercept
  bound of a row removal O(|rows|·d) like the rest of the certificate
  (:func:`taylor_shift_interval`). It is never tighter than the exact bracket.

Signs are only trusted beyond a bound on the rounding error of the sums, so the returned
interval may be wider than the exact one, never narrower.
"""

import numpy as np

from .duality import EPS


class RowSums:
    """The sums of a set of rows, at a centre, that :func:`taylor_shift_interval` needs, kept
    per bucket of the deviation norm s_i so that each bucket's Taylor remainder uses its own
    largest s_i (one far-out row must not inflate the bound for all others).

    Buckets are fixed by ``edges`` (chosen once, for the fit's rows); sums over disjoint sets of
    rows with the same edges combine: ``a - b`` for removals, ``a + b`` for additions. ``s_max``
    is kept as an upper bound.
    """

    FIELDS = ("count", "d1", "d2", "d2s", "d2ss", "s1", "s2", "abs_d1", "err")
    NONNEGATIVE = ("count", "d2", "d2s", "d2ss", "s1", "s2", "abs_d1", "err")

    def __init__(self, edges, s_max, **fields):
        self.edges, self.s_max = edges, s_max
        for name in self.FIELDS:
            setattr(self, name, fields[name])
        # totals as Python floats: the linear part of the bound is scalar arithmetic
        self.total = {name: float(fields[name].sum()) for name in self.FIELDS}

    @classmethod
    def of(cls, loss, y, margins, deviation_norms, margin_error, edges=None):
        if edges is None:
            edges = bucket_edges(deviation_norms)
        bucket = np.searchsorted(edges, deviation_norms, side="left")
        k = edges.shape[0] + 1

        def per_bucket(weights):
            return np.bincount(bucket, weights=weights, minlength=k)

        d1 = loss.derivative(y, margins)
        d2 = loss.second_derivative(y, margins)
        s_max = np.zeros(k)
        np.maximum.at(s_max, bucket, deviation_norms)
        return cls(
            edges, s_max, count=per_bucket(None), d1=per_bucket(d1), d2=per_bucket(d2),
            d2s=per_bucket(d2 * deviation_norms), d2ss=per_bucket(d2 * deviation_norms ** 2),
            s1=per_bucket(deviation_norms), s2=per_bucket(deviation_norms ** 2), abs_d1=per_bucket(np.abs(d1)),
            err=per_bucket(margin_error),
        )

    def _combine(self, other, sign):
        if other.edges is not self.edges and not np.array_equal(other.edges, self.edges):
            raise ValueError("RowSums with different buckets cannot be combined.")
        fields = {f: getattr(self, f) + sign * getattr(other, f) for f in self.FIELDS}
        if sign < 0:
            # sums of nonnegative terms cannot go below 0, and the cancellation in a difference
            # is bounded by the magnitudes it came from
            for f in self.NONNEGATIVE:
                fields[f] = np.maximum(fields[f], 0.0)
            fields["abs_d1"] = self.abs_d1 + other.abs_d1
        return RowSums(self.edges, np.maximum(self.s_max, other.s_max), **fields)

    def __add__(self, other):
        return self._combine(other, +1)

    def __sub__(self, other):
        return self._combine(other, -1)


def bucket_edges(deviation_norms, levels=11):
    """Upper edges of buckets at the quantiles 1/2, 3/4, 7/8, …: the tail of large s_i, which
    drives the remainder, is split finely; most rows share the first buckets."""
    if deviation_norms.shape[0] == 0:
        return np.zeros(0)
    quantiles = 1.0 - 0.5 ** np.arange(1, levels + 1)
    return np.unique(np.quantile(deviation_norms, quantiles))


def shift_interval(loss, radius, sums=None, rows=None, exact=False):
    """[τ_lo, τ_hi] from the cached ``sums`` (O(1)) when possible and not ``exact``, else from
    all rows (O(n)). ``rows`` is a callable returning (y, margins, deviation_norms,
    margin_error) arrays.
    """
    if not np.isfinite(radius):
        return -np.inf, np.inf
    if not exact and sums is not None and np.isfinite(loss.curvature_lipschitz):
        interval = taylor_shift_interval(loss, sums, radius)
        if interval is not None:
            return interval
    if rows is None:
        return -np.inf, np.inf
    return exact_shift_interval(loss, radius, *rows())


def taylor_shift_interval(loss, sums, r):
    """The O(1) bound from cached sums (see the module docstring), or None if it certifies nothing."""
    M, nu, t = loss.curvature_lipschitz, loss.self_concordance, sums.total
    if not t["d2"] > 0:
        return None

    def remainder(tau, sign):
        # per trial τ (rows) and bucket (columns): Σδ² and Σℓ''δ² with δ_i = sign·r·s_i + τ, and
        # |δ_i| ≤ r·s_max + |τ|
        tau = tau[:, None]
        sq = np.maximum(r * r * sums.s2 + sign * 2 * r * tau * sums.s1 + tau * tau * sums.count, 0.0)
        if nu == 0:
            return np.zeros(tau.shape[0])
        weighted = np.maximum(r * r * sums.d2ss + sign * 2 * r * tau * sums.d2s + tau * tau * sums.d2, 0.0)
        with np.errstate(over="ignore", invalid="ignore"):
            concordant = 0.5 * nu * np.exp(np.minimum(nu * (r * sums.s_max + np.abs(tau)), 700.0)) * weighted
        return np.fmin(0.5 * M * sq, concordant).sum(axis=1)

    def upper(tau):  # bound on H⁺(τ) at an array of τ, and its rounding error
        value = t["d1"] + r * t["d2s"] + tau * t["d2"] + remainder(tau, +1)
        return value, _rounding(loss, sums, r, tau)

    def lower(tau):  # bound on H⁻(τ)
        value = t["d1"] - r * t["d2s"] + tau * t["d2"] - remainder(tau, -1)
        return value, _rounding(loss, sums, r, tau)

    # start where the linear parts cross zero; the remainders push the crossings outward. With
    # almost no curvature left (near separation) these steps overflow: then nothing is certified
    # here, and the caller uses the exact bracket
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        lo = _certified_step(upper, -(t["d1"] + r * t["d2s"]) / t["d2"], t["d2"], below=True)
        hi = _certified_step(lower, -(t["d1"] - r * t["d2s"]) / t["d2"], t["d2"], below=False)
    if lo is None or hi is None or not (np.isfinite(lo) and np.isfinite(hi)):
        return None
    return lo, hi


def _certified_step(bound, start, slope, below, max_doublings=30, refinements=32):
    """A point near the crossing of ``bound`` (evaluated at arrays of τ) on the ``below`` side of
    ``start`` where the bound's sign is certified (< 0 below, > 0 above); None if none is found.
    The bound at ``start`` is on the wrong side (the remainder only pushes the crossing outward),
    by about |bound(start)|/slope, which sets the first step; the steps double until one is
    certified, and the first certified of ``refinements`` equal steps between it and the last
    uncertified one is returned: within 1/``refinements`` of the push beyond the edge. Each stage
    is one evaluation at all its trial points (a root finder's ~20 scalar evaluations cost 4×
    more: leave-one-out on arcene certifies 200 folds)."""
    direction = -1.0 if below else 1.0

    def certified(steps):  # whether the bound's sign is certified at start + direction·steps
        value, tol = bound(start + direction * steps)
        return ((value + tol) if below else (tol - value)) < 0

    value, tol = bound(np.array([start]))
    first = max(1e-9 * (1.0 + abs(start)), abs(float(((value + tol) if below else (tol - value))[0])) / slope)
    steps = first * 2.0 ** np.arange(max_doublings)
    found = certified(steps)
    if not found.any():
        return None
    j = int(np.argmax(found))
    if j > 0:  # the certified region begins between steps j − 1 and j (certified above)
        near, far = steps[j - 1], steps[j]
        steps = np.append(near + (far - near) * np.arange(1, refinements) / refinements, far)
        found = certified(steps)
        j = int(np.argmax(found)) if found.any() else refinements - 1
    return start + direction * steps[j]


def _rounding(loss, sums, r, tau):
    """Bound on the rounding error of a Taylor bound evaluated from floating-point sums (at an
    array of τ)."""
    M, t = loss.curvature_lipschitz, sums.total
    spread = r * float(sums.s_max.max(initial=0.0)) + np.abs(tau)
    magnitude = t["abs_d1"] + t["d2"] * spread + 0.5 * M * t["count"] * spread * spread
    return 4 * (np.log2(t["count"] + 1) + 16) * EPS * magnitude + (loss.smoothness + M * spread) * t["err"]


def _certify(bound, tau, below, width):
    """Step away from an approximate crossing ``tau``, by ``width`` and then by widths growing
    fourfold, until the bound's sign is certified; None if it never is."""
    width = max(width, 1e-12 * (1.0 + abs(tau)))
    for _ in range(60):
        point = tau - width if below else tau + width
        value, tol = bound(point)
        if (value < -tol) if below else (value > tol):
            return point
        if width > np.finfo(float).max / 8:  # a crossing near overflow (an intercept of 1e298 at a
            return None  # candidate's start in stepwise selection): no finite width certifies it
        width *= 4.0
    return None


def first_order_width(loss, y, margins, deviation_norms):
    """The bracket's half-width per unit radius to first order in r: D2s/D2 = Σℓ''_i s_i / Σℓ''_i,
    where the linear parts of H± cross zero (module docstring), with the curvature at the centre;
    0 where it has none. An estimate, for predicting how wide bounds will be without computing
    them: nothing is certified by it."""
    curvature = loss.second_derivative(y, margins)
    total = curvature.sum()
    return float(curvature @ deviation_norms / total) if total > 0 else 0.0


def exact_shift_interval(loss, radius, y, margins, deviation_norms, margin_error):
    """[τ_lo, τ_hi] certified by evaluating H± over all rows (O(n) per evaluation)."""
    spread = radius * deviation_norms
    smooth = loss.smoothness if np.isfinite(loss.smoothness) else 0.0
    input_error = smooth * (margin_error.sum() + 4 * EPS * (np.abs(margins) + spread).sum())
    sum_error = 2 * (np.log2(margins.shape[0] + 1) + 16) * EPS

    def crossing(shifted, below):
        def h(tau):
            values = loss.derivative(y, shifted + tau)
            return values.sum(), input_error + sum_error * np.abs(values).sum()

        def slope(tau):
            return loss.second_derivative(y, shifted + tau).sum()

        root = approximate_root(lambda t: h(t)[0], slope, scale)
        point = None
        if root is not None:  # the first step: where the slope at the root clears the rounding bound
            value, tol = h(root)
            # (a slope of 0, or one so small that the width overflows, as ℓ'' = e/(1 + e)² gives far
            # from the boundary: _certify then starts from its smallest width and grows it fourfold)
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                width = 1.5 * (abs(value) + tol) / slope(root)
            point = _certify(h, root, below, width if np.isfinite(width) else 0.0)
        # no sign change: no finite optimum exists, and nothing can be certified
        return point if point is not None else (-np.inf if below else np.inf)

    scale = 1.0 + np.abs(margins).max() + spread.max()
    return crossing(margins + spread, below=True), crossing(margins - spread, below=False)


def approximate_root(f, slope, scale, max_iter=200, max_doublings=80):
    """A root of a nondecreasing f with derivative ``slope``, or None if no sign change is found
    within ``max_doublings`` doublings of ``scale`` from 0. Newton steps from 0, each kept inside
    the bracket of signs seen so far and, on a side not yet bracketed, within a step that doubles
    from ``scale``; bisection where a step leaves them (f flat, or overshooting). An estimate:
    callers certify. Brent's method from a doubling bracket took 26 evaluations a crossing on
    arcene's leave-one-out folds, these steps 4–6 (each two: f and its slope)."""
    lo, hi, reach = -np.inf, np.inf, scale
    t, doublings = 0.0, 0
    for _ in range(max_iter):
        value = f(t)
        if value == 0.0:
            return t
        if value < 0:
            lo = t
        else:
            hi = t
        derivative = slope(t)
        with np.errstate(over="ignore"):  # a flat tail: an infinite step, replaced below
            newton = t - value / derivative if derivative > 0 else np.nan
        if abs(newton - t) <= 4 * EPS * (1.0 + abs(t)):  # converged: the step is below rounding
            return t
        if np.isfinite(lo) and np.isfinite(hi):
            following = newton if lo < newton < hi else 0.5 * (lo + hi)
        else:  # one side open: at most ``reach`` towards it, doubled each time
            limit = t + reach if value < 0 else t - reach
            following = newton if np.isfinite(newton) and abs(newton - t) <= reach else limit
            if following == limit:
                reach, doublings = 2.0 * reach, doublings + 1
                if doublings > max_doublings:
                    return None
        if abs(following - t) <= 2 * EPS * (1.0 + abs(t)):
            return following
        t = following
    return t if np.isfinite(lo) and np.isfinite(hi) else None
