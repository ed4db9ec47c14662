"""Where the modified optimum can be: Theorem 1 and Corollary 1 of the paper, plus a bound of
our own for the unpenalized intercept.

All functions take plain arrays; :class:`glru.certificate.Certificate` assembles them.
"""

import numpy as np
import scipy.sparse as sp

from .duality import EPS

_WIDEN = 1.0 + 8 * EPS  # radii are square roots of sound gaps; this absorbs their rounding


def signs_decided(lower, upper):
    """Rows whose bounds decide the sign of the decision value (> 0, scikit-learn's rule, or not)."""
    return (lower > 0) | (upper <= 0)


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
    lower_f, upper_f = np.where(finite, lower, 0.0), np.where(finite, upper, 0.0)
    mid = 0.5 * (lower_f + upper_f)
    half = np.where(finite, 0.5 * (upper_f - lower_f), np.inf)
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


def zero_band(eval_norms, alpha, train_norms, strength, n_features, intercept_curvature=None):
    """Half-width of the band around 0 in which a decision value, read at a point polished to
    rounding level, is taken for 0.

    At such a point the gradient is zero up to its rounding error, γ·Σ_j|α_j|‖x_j‖ in sum form
    (α_j = −ℓ'_j, γ = 2(n + d + 32)u), so the point is within that over the smallest curvature
    of the optimum: a = n·λ for w, Σℓ''_j for an unpenalized intercept. A value inside the band
    is 0 for labelling (scikit-learn predicts the positive class only for a value > 0): this
    is what an exact optimum at exactly 0 — e.g. by the symmetry of a balanced fold, where a
    cold solve from 0 stays at 0 — gives. The band is at most ``ZERO_BAND_CAP``: that worst case
    reached 8.7e-3 on Gaussian columns scaled by 1e-2 to 1e2 with C = 100 (α_j up to 200), where the
    polished value and an exact refit's agreed to 3e-16 and 0.00027 was a genuine positive
    value; decision values are margins, on the losses' unit scale, so a refit reads any value
    above rounding noise of a unit margin by its sign.
    ``alpha``/``train_norms`` may be (n, m) and (n,) for m points at once (columns)."""
    alpha = np.abs(alpha)
    gamma = 2.0 * (alpha.shape[0] + n_features + 32) * EPS
    if not strength > 0:  # no strong convexity: no band (values are read as they are)
        return np.zeros(np.shape(np.multiply.outer(eval_norms, train_norms @ alpha)))
    band = np.multiply.outer(eval_norms, gamma * (train_norms @ alpha) / strength)
    if intercept_curvature is not None:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # (an infinite shift: capped below)
            shift = np.where(intercept_curvature > 0, gamma * alpha.sum(axis=0) / intercept_curvature, 0.0)
        band = band + shift
    return np.minimum(band, ZERO_BAND_CAP)


# the widest band in which a polished decision value (or a score difference) is taken for 0: rounding
# noise of a unit margin (see zero_band)
ZERO_BAND_CAP = 1e-12
