"""Certified bounds on held-out decision values from a gradient and one Hessian factorization.

The duality-gap ball (Theorem 1) has radius √(2G/λ): near the optimum it shrinks only like the
square root of the gap, and the gap's own rounding allowance puts a floor under it (2e-3 per
unit ‖x‖ on a9a.t at C = 1, wider than the distance of some held-out value to 0 in every
10-fold split). For losses whose curvature changes slowly, |ℓ'''| ≤ νℓ'' (logistic ν = 1,
squared ν = 0), the gradient measured in the metric of a nearby Hessian bounds the distance to
the optimum linearly instead, down to the gradient's rounding error. That is this module.

Sum form, x̃ = (x, 1) with an unpenalized intercept (P drops it), T the training rows:

    F(z) = Σ_{i∈T} ℓ_i(x̃_i·z) + (a/2)‖Pz‖².

**Theorem.** Let M ≻ 0 and let u_i be margins (of some reference point) whose curvatures
D_i = ℓ_i''(u_i) give (1 − θ)M ⪯ H_ref = Σ_T D_i x̃_i x̃_iᵀ + aP ⪯ (1 + θ)M. Let z be any point
with |x̃_i·z − u_i| ≤ δ for all i ∈ T, g = ∇F(z), γ ≥ ‖g‖_{M⁻¹}, K ≥ max_T ‖x̃_i‖_{M⁻¹} and
c₀ = e^{−νδ}(1 − θ). If νKγ < c₀, the minimiser z* of F satisfies, for every x̃ and every p,

    x̃·z* ∈ x̃·z − β x̃·p ± ‖x̃‖_{M⁻¹}·(ε γ + β ‖g − Mp‖_{M⁻¹}),

where μ = −log(1 − νKγ/c₀), c_lo = c₀·(1 − e^{−μ})/μ, c_hi = e^{νδ}(1 + θ)·(e^{μ} − 1)/μ (the
factors are 1 at μ = 0), β = (1/c_lo + 1/c_hi)/2 and ε = (1/c_lo − 1/c_hi)/2. With p = M⁻¹g
(a chord step) the width is ε‖x̃‖_{M⁻¹}γ: ε ≈ νδ + νKγ/2 shrinks with the distance between z
and the reference, and γ with the gradient.

*Proof.* |(log ℓ'')'| ≤ ν gives ℓ''(t + s) ∈ [e^{−ν|s|}, e^{ν|s|}]·ℓ''(t). Let Δ = z* − z,
m = max_T |x̃_i·Δ| and Ā = ∫₀¹ ∇²F(z + tΔ) dt, so that ĀΔ = ∇F(z*) − g = −g. On the segment
every margin is within δ + tm of u_i, so e^{−ν(δ+tm)}H_ref ⪯ ∇²F(z + tΔ) ⪯ e^{ν(δ+tm)}H_ref
(aP is scaled by factors on the right side of 1 as well), and integrating,
c₀ s(νm) M ⪯ Ā ⪯ e^{νδ}(1 + θ) S(νm) M with s(x) = (1 − e^{−x})/x ↓ and S(x) = (e^x − 1)/x ↑.
With ρ = ‖Δ‖_M: c₀ s(νm) ρ² ≤ ΔᵀĀΔ = −gᵀΔ ≤ γρ, and m ≤ Kρ (Cauchy–Schwarz), so
1 − e^{−νm} = νm·s(νm) ≤ νKρ·s(νm) ≤ νKγ/c₀ < 1: νm ≤ μ, and c_lo M ⪯ Ā ⪯ c_hi M. Then

    x̃·Δ = −x̃ᵀĀ⁻¹g = −β x̃·p − β x̃ᵀM⁻¹(g − Mp) − x̃ᵀM^{−½}(B⁻¹ − βI)M^{−½}g,

B = M^{−½}ĀM^{−½} having its spectrum in [c_lo, c_hi], so ‖B⁻¹ − βI‖₂ ≤ ε; Cauchy–Schwarz in
the M⁻¹ inner product bounds the last two terms. ∎

Floating point (the caller's and this module's share): M is taken to be UᵀU for the computed
Cholesky factor U, exactly; θ = τ·N where τ bounds ‖H_ref − UᵀU‖₂ (summation error of the
Hessian and the factorization's backward error, :func:`hessian_error`) and N ≥ ‖M⁻¹‖₂
(twice ‖U⁻¹‖_F²). The computed gradient's error ‖e‖ and the margins' errors enter δ, γ and the
residual; ‖x̃‖_{M⁻¹} computed through U⁻¹ is widened by its relative error bound, and capped by
‖x̃‖√N. The certificate is not formed (None) when U is too ill-conditioned for these bounds to
mean anything (κ(U)·d·u > 1e-6).
"""

from typing import NamedTuple

import numpy as np
import scipy.linalg
import scipy.linalg.lapack
import scipy.sparse as sp

from .duality import EPS, gamma
from .problem import absolute_times, row_norms_sq

MAX_CONDITION_ROUNDING = 1e-6  # κ(U)·d·u above this: the factor is too ill-conditioned to certify with
MAX_LOG_SHIFT = 30.0  # νδ beyond this: the bounds would be e^{30} times the gradient, useless
BLOCK_FLOATS = 1 << 17  # products of held-out rows with U⁻¹ are formed this many floats (1 MiB) at a time


def hessian_error(curvature_norms, strength, n_rows, dim):
    """τ ≥ ‖H_ref − UᵀU‖₂ for a Hessian Σ D_i x̃_i x̃_iᵀ + aP summed in floating point over at most
    ``n_rows`` rows (possibly as a full sum minus a held-out one), then factored by Cholesky.

    ``curvature_norms`` = Σ D_i‖x̃_i‖² over all rows summed: each entry's summation error is at
    most γ_{n+2}(|X̃|ᵀD|X̃|)_jk, whose Frobenius norm is at most Σ D_i‖x̃_i‖²; the downdate's
    subtraction, the curvatures' own rounding and the penalty add a few u of the same; the
    Cholesky backward error is at most γ_{d+1}‖U‖_F² = γ_{d+1}·trace(M) ≤ γ_{d+1}(Σ D_i‖x̃_i‖² + a·d)."""
    scale = curvature_norms + strength * dim
    return 2.0 * (gamma(n_rows + 2) + gamma(dim + 1) + 16 * EPS) * scale


def gradient_error(slopes, margin_errors, row_norms, smoothness, strength, w_norm, d):
    """A bound on the 2-norm of the error of a gradient X̃ᵀs + aPw computed from margins within
    ``margin_errors`` of the exact ones (sum form; the mean form takes s, ``smoothness`` and a = λ
    divided by n): the slopes s_i = ℓ'(margin_i) move by at most smoothness·μ_i, the product's sums
    and the slopes' own evaluation add γ_{n+d+32}·Σ|s_i|‖x̃_i‖, and aw its rounding.
    ``row_norms``: ‖x̃_i‖ of the rows of ``slopes``; ``d``: X's columns."""
    return gamma(slopes.size + d + 32) * float(np.abs(slopes) @ row_norms) \
        + smoothness * float(margin_errors @ row_norms) + 4 * EPS * strength * w_norm


class HeldOutBounds(NamedTuple):
    """What :meth:`FoldCurvature.bounds` certifies: x̃·z* ∈ [lower, upper] for the held-out rows,
    around ``centre`` = x̃·(z − βp). ``floor`` is the part of each half-width that no smaller
    gradient removes (the gradient's and the products' rounding, through β): a row with
    |centre| within it is only decided by a reference nearer the optimum (smaller δ, smaller β)."""
    lower: np.ndarray
    upper: np.ndarray
    centre: np.ndarray
    beta: float
    floor: np.ndarray


class FoldCurvature:
    """The theorem's constant parts for one fold: its factor U (M = UᵀU), N ≥ ‖M⁻¹‖₂,
    h_i ≥ ‖x̃_i‖_{M⁻¹} for the held-out rows, K for the training rows, θ.

    Parameters
    ----------
    upper : (d̃, d̃) ndarray, the upper Cholesky factor U of the fold's reference Hessian M.
    X : ndarray or CSR, all rows (without the intercept column); the fold's rows are read from
        it, not copied.
    train, test : index arrays of the fold's training and held-out rows; ``train`` None stands
        for all rows but ``test`` (or a subset of those: K is then taken over all of them).
    fit_intercept : bool
    tau : float ≥ ‖H_ref − UᵀU‖₂ (:func:`hessian_error`).
    nu : float, the loss's self-concordance (|ℓ'''| ≤ νℓ'').
    row_norms : ndarray, optional
        ‖x_i‖₂ of every row of X (computed if not given).
    magnitudes : ndarray or CSR, optional
        |X| (X itself when no value is negative), where the caller keeps it; else |X|·v is
        computed a block of rows at a time (:func:`glru.problem.absolute_times`).
    unseen : index array, optional
        Features with no stored entry in the training rows. The optimum's coefficients there
        are exactly 0 (their gradient is a·z_j), so the held-out values are bounded for x̃ with
        those entries dropped: a held-out row made only of them gets the exact value 0 (or the
        intercept's bounds), which the whole row's ‖x̃‖_{M⁻¹} would leave open at any gradient.
    """

    def __init__(self, upper, X, train, test, fit_intercept, tau, nu, row_norms=None, magnitudes=None,
                 unseen=None):
        self.upper, self.X, self.test, self.fit_intercept, self.nu = upper, X, test, fit_intercept, nu
        self.unseen = np.asarray([] if unseen is None else unseen, dtype=np.intp)
        dim = upper.shape[0]
        inverse, info = scipy.linalg.lapack.dtrtri(upper, lower=0)  # U⁻¹: M⁻¹ = U⁻¹U⁻ᵀ
        inverse = inverse if info == 0 else np.full_like(upper, np.nan)  # info > 0: U singular
        inverse_norm_sq = float(np.vdot(inverse, inverse))
        self.upper_norm = np.sqrt(float(np.vdot(upper, upper)))  # ‖U‖_F
        condition_rounding = self.upper_norm * np.sqrt(inverse_norm_sq) * gamma(4 * dim + 16)
        self.usable = bool(np.isfinite(condition_rounding) and condition_rounding <= MAX_CONDITION_ROUNDING)
        self.N = 2.0 * inverse_norm_sq  # ≥ ‖M⁻¹‖₂: Frobenius ≥ spectral, 2 for the inverse's rounding
        self.theta = tau * self.N
        # ‖x̃‖_{M⁻¹} = ‖U⁻ᵀx̃‖ = ‖x̃ᵀU⁻¹‖ = ‖Σ_j x̃_j U⁻¹[j, :]‖ ≤ Σ_j |x̃_j|·‖U⁻¹[j, :]‖ (triangle
        # inequality: one pass over |X| for the held-out rows and K), and ≤ ‖x̃‖√N; computed
        # exactly (:meth:`_exact_norms`) only for the held-out rows whose bounds these leave
        # open. All are widened by the relative rounding of the computed inverse and of the sums.
        self.widening = (1 + 2 * condition_rounding) * (1 + gamma(dim + 2)) ** 2
        d = X.shape[1]
        inverse_row_norms = np.sqrt(np.einsum("ij,ij->i", inverse, inverse))
        inverse_row_norms[self.unseen] = 0.0  # no training row has them: only held-out rows lose them
        triangle = absolute_times(X, inverse_row_norms[:d]) if magnitudes is None else \
            np.asarray(magnitudes @ inverse_row_norms[:d]).ravel()
        triangle += inverse_row_norms[d] if fit_intercept else 0.0
        triangle *= self.widening
        norms = row_norms ** 2 if row_norms is not None else row_norms_sq(X)
        norms += fit_intercept
        np.sqrt(norms, out=norms)
        norms *= 1 + gamma(dim + 2)
        if self.unseen.size:  # ‖x̃‖ without the unseen entries
            seen = np.ones(d, dtype=bool)
            seen[self.unseen] = False
            self.test_norms = np.sqrt(row_norms_sq(X[test][:, seen]) + fit_intercept) * (1 + gamma(dim + 2))
        else:
            self.test_norms = norms[test]
        self.metric_norms = np.minimum(triangle[test], self.test_norms * np.sqrt(self.N))
        if train is None:  # every row but the held-out ones: a superset of the training rows
            norms[test], triangle[test] = 0.0, 0.0
        else:
            norms, triangle = norms[train], triangle[train]
        self.K = min(float(norms.max(initial=0.0)) * np.sqrt(self.N), float(triangle.max(initial=0.0)))
        self.exact = np.zeros(test.size, dtype=bool)  # held-out rows whose metric_norms are exact
        self.usable = self.usable and self.theta < 0.5

    def times(self, p):
        """M·p = Uᵀ(U p), and a bound on its rounding error (2-norm)."""
        Up = self.upper @ p
        Mp = self.upper.T @ Up
        err = gamma(2 * self.upper.shape[0] + 4) * np.linalg.norm(np.abs(self.upper.T) @ (np.abs(self.upper) @ np.abs(p)))
        return Mp, err

    def bounds(self, z, gradient, gradient_error, step, values, shift, refine=None):
        """:class:`HeldOutBounds` of the held-out decision values x̃·z* by the theorem, or None
        where νKγ ≥ c₀ (the point is too far from the optimum for it).

        z : the current point (coef, then intercept); gradient, gradient_error : ∇F(z) as
        computed and a bound on the 2-norm of its error; step : p (any vector; a chord step
        M⁻¹g gives the narrowest bounds); values : the held-out x̃·z as computed (computed again
        without the unseen entries if there are any); shift : δ,
        including the computed margins' rounding errors; refine : callable(lower, upper) -> mask
        of the rows still open under these bounds, whose ‖x̃‖_{M⁻¹} are then computed exactly
        instead of bounded (None: bounds only)."""
        Mp, product_error = self.times(step)
        root_N = np.sqrt(self.N)
        residual = root_N * (np.linalg.norm(gradient - Mp) * (1 + 4 * EPS) + product_error + gradient_error)
        # γ² = gᵀM⁻¹g = gᵀp + gᵀM⁻¹(g − Mp) ≤ gᵀp + γ·residual, for the exact g too
        dot = float(gradient @ step) + gradient_error * np.linalg.norm(step) \
            + gamma(step.size + 2) * float(np.abs(gradient) @ np.abs(step))
        dot = max(dot, 0.0)
        g_norm = 0.5 * (residual + np.sqrt(residual * residual + 4.0 * dot)) * (1 + 8 * EPS)
        if not self.nu * shift < MAX_LOG_SHIFT:  # the reference Hessian says nothing this far away
            return None
        c0 = np.exp(-self.nu * shift) * (1.0 - self.theta)
        ratio = self.nu * self.K * g_norm / c0
        if not ratio < 1.0:
            return None
        mu = -np.log1p(-ratio)
        low_factor = -np.expm1(-mu) / mu if mu > 0 else 1.0
        high_factor = np.expm1(mu) / mu if mu > 0 else 1.0
        c_lo = c0 * low_factor * (1 - 8 * EPS)
        c_hi = np.exp(self.nu * shift) * (1.0 + self.theta) * high_factor * (1 + 8 * EPS)
        beta, eps = 0.5 * (1 / c_lo + 1 / c_hi), 0.5 * (1 / c_lo - 1 / c_hi)
        if self.unseen.size:  # the values of x̃ without its unseen entries (a row of them only: 0)
            values = self._held_out(z)
        step_values = self._held_out(step)
        centre = values - beta * step_values
        # rounding of x̃·z (the caller's values) and of x̃·p: γ_d·‖x̃‖·‖v‖ (Cauchy–Schwarz)
        rounding = gamma(2 * z.size + 32) * self.test_norms * (np.linalg.norm(z) + beta * np.linalg.norm(step)) \
            + 4 * EPS * np.abs(centre)
        width = (eps * g_norm + beta * residual) * (1 + 16 * EPS)
        floor_width = beta * root_N * gradient_error * (1 + 16 * EPS)
        half = self.metric_norms * width + rounding
        if refine is not None:  # only rows that even the smallest norm ‖x̃‖/‖U‖₂ could settle
            least = self.test_norms / (self.widening * self.upper_norm) * width
            rows = np.flatnonzero(refine(centre - half, centre + half) & ~refine(centre - least, centre + least)
                                  & ~self.exact)
            if rows.size:
                self._exact_norms(rows)
                half[rows] = self.metric_norms[rows] * width + rounding[rows]
        return HeldOutBounds(centre - half, centre + half, centre, beta, self.metric_norms * floor_width + rounding)

    def _exact_norms(self, rows):
        """Replace the bounds on ‖x̃‖_{M⁻¹} of the held-out ``rows`` by the computed norms ‖U⁻ᵀx̃‖
        (a triangular solve, backward stable: relative error within the condition-number
        widening), a block of rows at a time."""
        dim = self.upper.shape[0]
        size = max(1, BLOCK_FLOATS // dim)
        for part in range(0, rows.size, size):
            chosen = rows[part:part + size]
            block = self.X[self.test[chosen]]
            block = block.toarray() if sp.issparse(block) else np.array(block, dtype=float)
            block[:, self.unseen] = 0.0
            if self.fit_intercept:
                block = np.hstack([block, np.ones((block.shape[0], 1))])
            solved = scipy.linalg.solve_triangular(self.upper, block.T, trans="T", lower=False)
            exact = np.sqrt(np.einsum("ij,ij->j", solved, solved)) * self.widening
            self.metric_norms[chosen] = np.minimum(self.metric_norms[chosen], exact)
        self.exact[rows] = True

    def _held_out(self, v):
        """x̃·v for the held-out rows, their unseen entries dropped (the rows are copied for the
        product and released: a tenth of a pass over X for 10-fold, and no copy kept)."""
        if self.unseen.size:
            v = v.copy()
            v[self.unseen] = 0.0
        values = np.asarray(self.X[self.test] @ (v[:-1] if self.fit_intercept else v)).ravel()
        return values + v[-1] if self.fit_intercept else values
