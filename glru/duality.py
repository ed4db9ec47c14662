"""Dual feasibility and floating-point-safe duality gaps.

A certificate may be too wide, never too narrow; the duality gap G is a difference of large
sums, so rounding could make it too small. Every gap computed here is therefore returned as
``max(G, 0) + allowance`` where the allowance bounds the rounding error of the sums that
produced it (standard error bounds: a sum or dot product of m terms computed in floating point
is within γ_m·Σ|terms| of the exact value, γ_m = m·u/(1 − m·u), u the unit roundoff).

As P − D the gap cannot be resolved below γ_{n+d}·|P|, and the ball's radius √(2G/λ) below
√(2γ_{n+d}|P|/λ): on a K-fold of 4000 × 2000 that is 10⁻⁴ per unit of ‖x‖, wide enough to
leave held-out rows open at the exact optimum. :func:`fenchel_young_gap` writes the same gap as
a sum of non-negative Fenchel–Young terms, each computed as a divergence, whose rounding error
is first order in the distance to the optimum; its floor is set by the error of Xᵀα,
about 2γ_n‖X‖_F‖α‖/(nλ) in radius, and with an intercept by the shrink that makes Σα = 0
exact (measured there: 2·10⁻⁹ without an intercept, 10⁻⁷ with one).
"""

import numpy as np

EPS = np.finfo(np.float64).eps
UNDERFLOW = 16 * np.finfo(np.float64).tiny  # absolute error of a few operations whose results are subnormal


def gap_allowance(magnitude, n, d):
    """Bound on the rounding error of a gap assembled from sums over n rows and d features.

    ``magnitude`` is Σ|terms| of the primal and dual sums plus the absolute size of the
    margins and correlations they were evaluated at (``|α|ᵀ|X||w|``-type terms), each scaled as
    in the objective. Margins ``Xw`` are dot products of length d and correlations ``Xᵀα`` of
    length n, hence the factor (n + d); the constant absorbs per-term evaluation error of the
    elementary functions (a few ulps each).
    """
    return 2.0 * (n + d + 32) * EPS * magnitude


def margin_error(abs_margins, d):
    """Rounding bound of margins x_i·w + b computed from |x_i|·|w| + |b|."""
    return 2.0 * (d + 16) * EPS * abs_margins


def sound_gap(primal, dual, magnitude, n, d):
    with np.errstate(invalid="ignore"):  # inf − inf: an infeasible point on both sides
        return np.maximum(primal - dual, 0.0) + gap_allowance(magnitude, n, d)


def fenchel_young_gap(loss, penalty, y, w, margins, alpha, Xt_alpha, margin_errors, data_norm, zero_sum):
    """(gap, allowance, floor): a sound bound on P(w, b) − D(α) as a sum of Fenchel–Young terms,
    the part of it that is rounding, and the part that would remain at the optimum.

    With m_i = x_i·w + b and v = Xᵀα/n, exactly,

        P(w, b) − D(α) = (1/n) Σ_i [ℓ(m_i) + ℓ*(−α_i) + α_i m_i] + Σ_j [ρ(w_j) + ρ*(v_j) − w_j v_j]
                         − b·Σα/n,

    every bracket ≥ 0 and 0 at the optimum. The bound covers, besides each term's own error
    (:meth:`Loss.fenchel_young`, :meth:`ElasticNet.fenchel_young`) and the sums' γ_m:

    - margins computed to within ``margin_errors`` = μ_i: the row term moves by at most
      |ℓ'(m̂_i) + α_i|μ_i + Lμ_i²/2 (ℓ is L-smooth; its slope in m is ℓ' + α);
    - Σα ≠ 0 in exact arithmetic (``zero_sum``, an unpenalized intercept): the bound is for the
      feasible α' that shrinks the side of α with Σα's sign by θ = |Σα|/mass (Σα from
      :func:`exact_sum`; either side, the lighter, where its sign is within rounding),
      which adds at most θ·ℓ(m_i) to each row term (convexity of ℓ* with ℓ*(0) = 0, ℓ ≥ 0) and
      θ‖X‖_F‖α‖/n to ‖v − v̂‖;
    - v̂ = Xᵀα/n computed to within e = γ_n‖X‖_F‖α‖/n + u‖v̂‖ (Cauchy–Schwarz on |X|ᵀ|α|;
      ``data_norm`` ≥ ‖X‖_F): ρ* is (1/λ)-smooth, so the penalty term at v is at most its value at
      v̂ plus ‖∇ρ*(v̂) − w‖·e + e²/(2λ).

    Arrays with one column per point give arrays over the columns. Returns an infinite gap
    where the bound does not apply (λ = 0, or a shrink with nothing to shrink).
    """
    n, d = margins.shape[0], w.shape[0]
    lam, smoothness = penalty.strong_convexity, loss.smoothness
    if not (lam > 0 and np.isfinite(smoothness)):
        infinite = np.full(margins.shape[1:], np.inf)
        return infinite, infinite, infinite
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):  # inf·0 and inf − inf: no bound
        gap, allowance, floor = _fenchel_young_gap(loss, penalty, y, w, margins, alpha, Xt_alpha, margin_errors,
                                                   data_norm, zero_sum, n, d, lam, smoothness)
    unbounded = ~(gap < np.inf)
    return np.where(unbounded, np.inf, gap), np.where(unbounded, np.inf, allowance), np.where(unbounded, np.inf, floor)


def _fenchel_young_gap(loss, penalty, y, w, margins, alpha, Xt_alpha, margin_errors, data_norm, zero_sum, n, d,
                       lam, smoothness):
    rows, row_errors = loss.fenchel_young(y, margins, alpha)
    slope_gap = np.abs(loss.derivative(y, margins) + alpha) + 8 * EPS * np.abs(alpha)
    shift = slope_gap * margin_errors + 0.5 * smoothness * margin_errors ** 2
    row_sum = rows.sum(axis=0)
    loss_bound = row_sum + gamma(n) * np.abs(rows).sum(axis=0) + (row_errors + shift).sum(axis=0) * (1 + gamma(n))
    shrink = np.zeros(margins.shape[1:])
    if zero_sum:
        total, total_error = exact_sum(alpha)
        # the side to shrink is the surplus's; where rounding leaves its sign open, either side
        positive, negative = np.where(alpha > 0, alpha, 0.0).sum(axis=0), np.where(alpha < 0, -alpha, 0.0).sum(axis=0)
        mass = np.where(total > total_error, positive,
                        np.where(total < -total_error, negative, np.minimum(positive, negative)))
        shrink = (np.abs(total) + total_error) * (1 + 4 * EPS) / (mass * (1 - gamma(n)))
        shrink = np.where(np.abs(total) + total_error == 0.0, 0.0, shrink)
        values = loss.value(y, margins) * (1 + 64 * EPS) + (np.abs(alpha) + slope_gap) * margin_errors + shift
        loss_bound = loss_bound + shrink * values.sum(axis=0) * (1 + gamma(n))
    v = Xt_alpha / n
    e, v_norm = correlation_error(alpha, v, data_norm, shrink)
    terms, term_errors = penalty.fenchel_young(w, v)
    mismatch = penalty.conjugate_gradient(v) - w
    mismatch = np.sqrt((mismatch * mismatch).sum(axis=0)) * (1 + gamma(d)) \
        + 4 * EPS * (v_norm / lam + np.sqrt((w * w).sum(axis=0)))
    term_sum = terms.sum(axis=0)
    penalty_bound = term_sum + gamma(d) * np.abs(terms).sum(axis=0) + term_errors.sum(axis=0) * (1 + gamma(d)) \
        + mismatch * e + e * e / (2 * lam)
    gap = (np.maximum(loss_bound / n, 0.0) + np.maximum(penalty_bound, 0.0)) * (1 + 8 * EPS)
    allowance = gap - np.maximum(row_sum / n + term_sum, 0.0)
    # at the optimum ‖∇ρ*(v̂) − w‖ is within e/λ (the error of v̂ itself) and α is natural, so
    # the allowance there comes down to about 2e²/λ and the shrink's part
    floor = 2 * e * e / lam + (loss_bound - row_sum - (row_errors + shift).sum(axis=0) * (1 + gamma(n))) / n
    return gap, allowance, np.minimum(floor, allowance)


def correlation_error(alpha, v, data_norm, shrink=0.0):
    """(e, ‖v̂‖): e ≥ ‖v − v̂‖ for v̂ = Xᵀα/n as computed, v exact for α shrunk by ``shrink``
    (γ_n‖X‖_F‖α‖/n by Cauchy–Schwarz on |X|ᵀ|α|, θ‖X‖_F‖α‖/n for the shrink, u‖v̂‖ for the
    division). At the optimum the Fenchel–Young allowance comes down to about 2e²/λ."""
    n, d = alpha.shape[0], v.shape[0]
    alpha_norm = np.sqrt(np.einsum("i...,i...->...", alpha, alpha)) * (1 + gamma(n))
    v_norm = np.sqrt(np.einsum("i...,i...->...", v, v)) * (1 + gamma(d))
    return ((gamma(n) + shrink) * data_norm * alpha_norm / n + EPS * v_norm) * (1 + 4 * EPS), v_norm


def exact_sum(alpha):
    """(Σα along axis 0, bound on its error), the bound far below rounding (≈ n·2⁻⁹¹).

    α is split exactly into α = A₁ + A₂ + A₃ + R, A_k on the grid 2^(−30k) (rounding α·2^(30k)
    to an integer is exact, and so is the remainder): every partial sum of A_k then lies on the
    same grid within 2⁵³ of its steps, so ΣA_k is computed exactly in any order, and |R| ≤ 2⁻⁹¹.
    The conditions (Σ|α| < 2²², n < 2²⁴) are checked; outside them each ΣA_k is only within
    γ_n·Σ|A_k| ≤ γ_n(Σ|α| + n·2⁻³⁰) of its value.
    """
    n = alpha.shape[0]
    magnitude = np.abs(alpha).sum(axis=0)
    rest, parts = alpha, []
    for k in (30, 60, 90):
        part = np.round(rest * 2.0 ** k) * 2.0 ** -k
        rest = rest - part
        parts.append(part.sum(axis=0))
    total = parts[0] + parts[1] + parts[2]
    error = n * 2.0 ** -91 + 2 * EPS * (np.abs(parts[0]) + np.abs(parts[1]) + np.abs(parts[2]))
    exact = (magnitude * (1 + gamma(n)) < 2.0 ** 22) & (n < 2 ** 24)
    return total, np.where(exact, error, error + 3 * gamma(n) * (magnitude + n * 2.0 ** -30))


def gamma(k):
    """γ_k = k·u/(1 − k·u), the classical bound on the relative error of a k-term sum."""
    return k * EPS / (1.0 - k * EPS)


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
