"""Dual feasibility and floating-point-safe duality gaps.

A certificate may be too wide, never too narrow; the duality gap G is a difference of large
sums, so rounding could make it too small. Every gap computed here is therefore returned as
``max(G, 0) + allowance`` where the allowance bounds the rounding error of the sums that
produced it (standard error bounds: a sum or dot product of m terms computed in floating point
is within γ_m·Σ|terms| of the exact value, γ_m = m·u/(1 − m·u), u the unit roundoff).
"""

import numpy as np

EPS = np.finfo(np.float64).eps


def gap_allowance(magnitude, n, d):
    """Bound on the rounding error of a gap assembled from sums over n rows and d features.

    ``magnitude`` is Σ|terms| of the primal and dual sums plus the absolute size of the
    margins and correlations they were evaluated at (``|α|ᵀ|X||w|``-type terms), each scaled as
    in the objective. Margins ``Xw`` are dot products of length d and correlations ``Xᵀα`` of
    length n, hence the factor (n + d); the constant absorbs per-term evaluation error of the
    elementary functions (a few ulps each).
    """
    return 2.0 * (n + d + 32) * EPS * magnitude


def sound_gap(primal, dual, magnitude, n, d):
    with np.errstate(invalid="ignore"):  # inf − inf: an infeasible point on both sides
        return np.maximum(primal - dual, 0.0) + gap_allowance(magnitude, n, d)


def enforce_zero_sum(alpha):
    """Make Σα = 0 (the dual constraint of an unpenalized intercept) by shrinking toward 0
    the entries on the side that has the surplus.

    Shrinking α_i toward 0 keeps it in −dom ℓ*, since 0 ∈ dom ℓ* for every loss here.
    Returns (alpha, side, scale): ``side`` is +1 or −1 (which entries were shrunk) and the
    shrunk entries were multiplied by (1 − scale).
    """
    total = alpha.sum()
    if total == 0.0:
        return alpha, 0, 0.0
    side = 1 if total > 0 else -1
    part = alpha > 0 if side > 0 else alpha < 0
    mass = alpha[part].sum()
    scale = min(total / mass, 1.0)
    alpha = alpha.copy()
    alpha[part] *= 1.0 - scale
    return alpha, side, scale
