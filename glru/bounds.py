"""Where the modified optimum can be: Theorem 1 and Corollary 1 of the paper, plus a bound of
our own for the unpenalized intercept.

All functions take plain arrays; :class:`glru.certificate.Certificate` assembles them.
"""

import numpy as np
import scipy.sparse as sp
from scipy.optimize import brentq

from .duality import EPS

_WIDEN = 1.0 + 8 * EPS  # radii are square roots of sound gaps; this absorbs their rounding


def primal_radius(gap, lam):
    """(9): ‖w*_new − ŵ‖₂ ≤ sqrt(2G/λ) when ρ is λ-strongly convex (λ > 0).

    With an unpenalized intercept the bound still holds for w: P(w, b) − (λ/2)‖w‖² is jointly
    convex, so P(z) ≥ P(z*) + (λ/2)‖w − w*‖² at the minimiser z* = (w*, b*), and
    P(ŵ, b̂) − P(z*) ≤ G.
    """
    if not lam > 0:
        raise ValueError(f"The primal ball (9) needs lam > 0 (a strongly convex penalty); got lam={lam!r}.")
    return np.sqrt(2.0 * gap / lam) * _WIDEN


def dual_radius(gap, n, smoothness):
    """(11): ‖α*_new − α̂‖₂ ≤ sqrt(2 n μ G) for a μ-smooth loss. Also valid with Σα = 0 imposed:
    α* maximises a (1/(nμ))-strongly concave D over a convex set containing α̂."""
    return np.sqrt(2.0 * n * smoothness * gap) * _WIDEN


def coefficient_box(penalty, Xt_alpha, col_norms, r_dual, n, domain_lower=None, domain_upper=None):
    """(12)–(13) with Remark 2's clipping (27g, 27j): w*_new,j ∈ [lower_j, upper_j].

    ``Xt_alpha`` = X_newᵀα̂, ``col_norms`` = ‖X_new,:j‖₂; ``domain_lower/upper`` are
    min/max of X_new,:j·α over the box dom D of α (may be ±inf)."""
    spread = r_dual * col_norms
    f_lower, f_upper = Xt_alpha - spread, Xt_alpha + spread
    if domain_lower is not None:
        f_lower = np.maximum(f_lower, domain_lower)
        f_upper = np.minimum(f_upper, domain_upper)
    slack = 4 * EPS * (np.abs(Xt_alpha) + spread)
    return penalty.conjugate_gradient_bounds((f_lower - slack) / n, (f_upper + slack) / n)


def ball_decision_bounds(X_eval, w_hat, radius, row_norms, offset=0.0):
    """(15): x·ŵ ± r‖x‖₂ (+ offset). ``row_norms`` are the ‖x‖₂ used with the radius."""
    centre = np.asarray(X_eval @ w_hat).ravel() + offset
    spread = radius * row_norms
    err = _dot_error(X_eval, w_hat) + 4 * EPS * (np.abs(centre) + spread)
    return centre - spread - err, centre + spread + err


def box_decision_bounds(X_eval, lower, upper):
    """(16): MinLin / MaxLin of x over the box [lower, upper] of w."""
    finite = np.isfinite(lower) & np.isfinite(upper)
    mid = np.where(finite, 0.5 * (lower + upper), 0.0)
    half = np.where(finite, 0.5 * (upper - lower), np.inf)
    centre = np.asarray(X_eval @ mid).ravel()
    abs_X = abs(X_eval)
    # x·w over the box = x·mid ± |x|·half; a zero entry of x times an infinite half counts 0
    if sp.issparse(abs_X):
        spread = np.asarray(abs_X @ np.where(np.isfinite(half), half, 0.0)).ravel()
        unbounded = (abs_X @ (~finite).astype(float)) > 0
    else:
        spread = abs_X @ np.where(np.isfinite(half), half, 0.0)
        unbounded = (abs_X @ (~finite).astype(float)) > 0
    unbounded = np.asarray(unbounded).ravel()
    spread = np.where(unbounded, np.inf, spread)
    err = _dot_error(X_eval, np.abs(mid) + np.where(np.isfinite(half), half, 0.0)) + 4 * EPS * np.abs(centre)
    return centre - spread - err, centre + spread + err


def _dot_error(X_eval, v):
    """Rounding bound of x·v computed in floating point: γ_d·|x|·|v| (with γ_d ≈ 2 d u)."""
    d = X_eval.shape[1]
    return 2.0 * (d + 16) * EPS * np.asarray(abs(X_eval) @ np.abs(v)).ravel()


def intercept_shift_interval(loss, y, margins, deviation_norms, radius, margin_error):
    """Bounds [τ_lo, τ_hi] on the shift of the optimal intercept-like constant.

    Statement. Let x̄ be any fixed vector and write a prediction as (x − x̄)·w + c with
    c = b + x̄·w. Let ŵ, b̂ be a centre, û_i = x_i·ŵ + b̂ its margins on the modified rows,
    s_i ≥ ‖x_i − x̄‖₂, and suppose ‖w* − ŵ‖ ≤ r. Then c* − ĉ ∈ [τ_lo, τ_hi] where ĉ = b̂ + x̄·ŵ and

        τ_lo = sup{τ : Σ_i ℓ'_i(û_i + r s_i + τ) < 0},   τ_hi = inf{τ : Σ_i ℓ'_i(û_i − r s_i + τ) > 0}.

    Proof. For fixed w*, the optimal c* minimises Σ_i ℓ_i((x_i − x̄)·w* + c), a convex function of
    c, so h(c*) = 0 where h(c) = Σ_i ℓ'_i((x_i − x̄)·w* + c) (all losses here are differentiable;
    if h has no root the intercept has no finite optimum and the bounds are infinite).
    (x_i − x̄)·w* = û_i − ĉ + (x_i − x̄)·(w* − ŵ), and |(x_i − x̄)·(w* − ŵ)| ≤ r s_i by
    Cauchy–Schwarz. ℓ'_i is nondecreasing, so with τ = c − ĉ,
        Σ ℓ'_i(û_i − r s_i + τ) ≤ h(ĉ + τ) ≤ Σ ℓ'_i(û_i + r s_i + τ).
    At τ* = c* − ĉ the middle term is 0, so the right sum is ≥ 0 (τ* ≥ τ_lo because the right
    sum is nondecreasing in τ and negative below τ_lo) and the left sum is ≤ 0 (τ* ≤ τ_hi).
    The prediction then satisfies x·w* + b* = (x − x̄)·w* + ĉ + τ*, and
    (x − x̄)·w* ∈ (x − x̄)·ŵ ± r‖x − x̄‖₂. ∎

    Any x̄ is valid; the first-order sensitivity of c* to w vanishes at the curvature-weighted
    mean x̄ = Σ ℓ''_i x_i / Σ ℓ''_i, which is what :class:`glru.fit.Fit` uses. Signs of the
    sums are only trusted beyond their rounding bound (``margin_error`` bounds the error of each
    û_i), so the returned interval may be wider than the exact one, never narrower.
    """
    spread = radius * deviation_norms
    smooth = loss.smoothness if np.isfinite(loss.smoothness) else 0.0
    n = margins.shape[0]

    def tolerance(values):
        return smooth * (margin_error.sum() + 4 * EPS * (np.abs(margins) + spread).sum()) + \
            2 * (np.log2(n + 1) + 16) * EPS * np.abs(values).sum()

    def upper_sum(tau):
        v = loss.derivative(y, margins + spread + tau)
        return v.sum(), tolerance(v)

    def lower_sum(tau):
        v = loss.derivative(y, margins - spread + tau)
        return v.sum(), tolerance(v)

    scale = 1.0 + np.abs(margins).max() + spread.max()
    return _certified_crossing(upper_sum, scale, below=True), _certified_crossing(lower_sum, scale, below=False)


def _certified_crossing(h, scale, below):
    """For a nondecreasing h returning (value, rounding bound): the largest τ with h(τ)
    certified < 0 (``below``) or the smallest τ with h(τ) certified > 0; ∓inf when h has no
    sign change (no finite optimum exists, so nothing can be certified)."""
    fail = -np.inf if below else np.inf
    root = _approximate_root(lambda t: h(t)[0], scale)
    if root is None:
        return fail
    width = 1e-12 * (1.0 + abs(root))
    for _ in range(60):
        point = root - width if below else root + width
        value, tol = h(point)
        if (value < -tol) if below else (value > tol):
            return point
        width *= 4.0
    return fail


def _approximate_root(f, scale, max_doublings=80):
    """A root of a nondecreasing f by bracketing from 0 and Brent's method, or None."""
    f0 = f(0.0)
    if f0 == 0.0:
        return 0.0
    step = scale if f0 < 0 else -scale
    near, far = 0.0, step
    for _ in range(max_doublings):
        if np.sign(f(far)) != np.sign(f0):
            lo, hi = sorted((near, far))
            return brentq(f, lo, hi, xtol=1e-14, rtol=4 * EPS)
        near, step = far, 2.0 * step
        far = near + step
    return None
