"""Deleting training rows from a fitted L2-regularized linear model, with certificates.

Sum form, the penalty strength held fixed (scikit-learn's ``C``, Ridge's ``alpha``): with
x̃_i = (x_i, 1) when an unpenalized intercept is fitted, z = (w, b), P the projection that
drops b, T the remaining rows and R the removed ones (|R| = m, n = |T| + m),

    F_T(z) = Σ_{i∈T} ℓ_i(x̃_i·z) + (a/2)‖Pz‖²,    a = 1/C (LogisticRegression, LinearSVC), alpha (Ridge).

In glru's mean form this is the problem on the rows T with λ_T = a/|T|: λ changes with n
because C is what scikit-learn holds fixed. From a reference point z0 (the full data's optimum,
or whatever a fitted estimator holds), with the sum-form gradient and Hessians

    g = ∇F_T(z0) = ∇F(z0) − Σ_{i∈R} ℓ'_i x̃_i      (= −Σ_R ℓ'_i x̃_i when z0 is the full optimum),
    H = ∇²F(z0),   H_T = ∇²F_T(z0) = H − Σ_{i∈R} ℓ''_i x̃_i x̃_iᵀ,

the update methods are (:data:`METHODS`):

=========== ====================================== ================================================
"newton"    z0 − H_T⁻¹ g                            one Newton step of F_T (exact for Ridge: its
                                                    closed form through the downdated factor)
"influence" z0 − H⁻¹ g                              the influence function (Koh & Liang): old Hessian
"pru"       z0 + Π_R(−H_T⁻¹ g)                      projective residual update (Izzo et al.): the
                                                    Newton step projected onto span{x̃_i : i ∈ R}
"ngd"       z0 − n/(n − m) · H⁻¹ g  (+ N(0, σ²I))   NGD unlearning (Lev & Wilson), Algorithm 1
"exact"     argmin F_T, to rounding level           warm-started at the Newton point
=========== ====================================== ================================================

**PRU.** The paper's Theorem 1 (squared loss) and Theorem 6 (logistic) state that its update is
θ_full + Π_R(Δ), Δ the exact leave-R-out change (= the Newton step for the squared loss) or
the Newton step of the reduced objective; Π_R is the orthogonal projection onto the span of the
removed rows (here in the (w, b) space: an intercept is a constant feature). We compute it in
that form, Δ by the downdated factor and Π_R by a thin SVD of X̃_R (robust to dependent rows;
the paper's Gram–Schmidt is not), because it is also defined at a reference point that is not
exactly optimal (a scikit-learn fit stopped at its ``tol``). The paper's own route — leave-k-out
residuals r^{∖R} = (I − H_RR)⁻¹ r_R (Algorithm 2, with the row-index correction
T_ij = h_ij/(1 − h_ii): the printed h_jj is wrong for k > 1) and the pseudo-inverse update
(Algorithm 1; Algorithm 3 with IRLS weights and working responses for a non-squared loss) — is
:func:`pru_leave_k_out`; at an exact optimum both agree, which ``tests/test_unlearning.py``
checks along with the identity. Squared hinge: same as logistic (the generalized Hessian).

**NGD.** Algorithm 1 steps θ̂ + (F(S, θ̂) + λ∇²π)⁻¹ g̃ with g̃ = n/(n−m)·∇L(U, θ̂, λ=0). For a
linear model the Fisher matrix is the data Hessian (the residual term R of its eq. 36 vanishes:
∇²_θ f = 0), so in sum form (F + λI) = H/n, and with ∇L(U, θ̂, 0) = (1/n)Σ_U∇ℓ (the convention
of its App. E, under which ∇L(S∖U, θ̂) = −∇L(U, θ̂, 0) at the optimum) the step is
z0 + n/(n−m)·H⁻¹Σ_U ∇ℓ_i = z0 − n/(n−m)·H⁻¹g. Holding C fixed makes the reduced objective
(1/n)Σ_{S∖U}ℓ + λ_old π exactly, the App. E target, so no extra mλθ̂ term appears. With
(ε, δ), :func:`ngd_noise_scale` and :func:`ngd_constants` calibrate the Gaussian noise.

**Certificates** (:class:`DeletionCertificate`) bound ‖w*_T − w‖₂ for the returned point
z = (w, b) (w including a penalized intercept's column) by the smaller of two sound radii:

1. the duality gap's (Theorem 1 (9)): √(2G/λ_T), G the gap of the reduced problem at z
   (glru's :func:`~glru.problem.assemble_gap`, with its rounding allowance);
2. the gradient's (ours): φ(w) = min_b F_T(w, b) is a-strongly convex (F_T − (a/2)‖w‖² is jointly
   convex, and partial minimisation keeps convexity), minimised at w*, so
   a‖w − w*‖² ≤ ⟨∇φ(w), w − w*⟩ and ‖w − w*‖ ≤ ‖∇φ(w)‖/a. By Danskin, ∇φ(w) = Σ_T ℓ'(x_i·w + β)x_i + aw
   at a minimiser β of b ↦ F_T(w, b) (any one: where that set is an interval every ℓ'_i is
   constant on it). We evaluate the gradient at our b; a certified bracket |β − b| ≤ t of the
   root of the monotone Σ_T ℓ'(x_i·w + β) bounds the difference entrywise by
   t·e^{ν(t + e)}·Σ_T ℓ''_i|x_ij| when |ℓ'''| ≤ νℓ'' (logistic ν = 1, squared ν = 0), else by
   t·L·Σ_T|x_ij| (L the Lipschitz constant of ℓ'). Rounding: every ℓ'_i is off by at most
   L·(its margin's rounding) + 4u|ℓ'_i| and the sums by γ_|T|·Σ|x_ij||ℓ'_i|; the vector of these
   is mapped through ‖|X|‖₂ ≤ √(‖X‖₁‖X‖_∞) and added. Margin rounding is sized by
   ‖x_i‖₂‖w‖₂ + |b| ≥ |x_i|·|w| + |b| (cached row norms): no extra pass over X.

The logistic loss has its own lean evaluation (:meth:`RowDeletion._logistic_parts`: ℓ, ℓ', ℓ''
and ℓ* from one exp and one log1p per row, ℓ* by Fenchel–Young's equality), since a
certificate's elementwise work is as costly as its two sparse products on data like w8a.

Near the optimum (2) is the sharper one: a gap cannot resolve less than its rounding allowance,
≈ 2(n + d)u·|P|, i.e. radius √(2·allowance/λ) (≈ 1e-3 on w8a at C = 1), while the gradient's
rounding enters linearly (≈ 1e-6 there). Both hold for any point; neither trusts the method
that produced it.

Everything here is on glru's problems (dense or CSR X already in the model's design, labels
±1 or real); :mod:`sklearn_ext.unlearning` maps scikit-learn estimators onto it.
"""

from functools import cached_property

import numpy as np
import scipy.linalg
from scipy.special import expit

from .bounds import primal_radius
from .certificate import Certificate, certificate_at
from .duality import EPS, enforce_zero_sum, gap_allowance, margin_error, sound_gap
from .losses import Logistic, Squared, get_loss
from .multinomial import (
    Multinomial,
    MultinomialCertificate,
    MultinomialProblem,
    solve_multinomial,
)
from .newton_centres import NewtonCentres, augmented_rows
from .penalties import L2
from .problem import GapEvaluation, Problem, absolute, as_dense, assemble_gap, row_norms_sq
from .solver import dense_newton_solve, polish, solve

__all__ = [
    "METHODS",
    "DeletionCertificate",
    "MultinomialRowDeletion",
    "RowDeletion",
    "ngd_constants",
    "ngd_noise_scale",
    "project_onto_rows",
    "pru_leave_k_out",
]

METHODS = ("exact", "newton", "influence", "pru", "ngd")
_WIDEN = 1.0 + 16 * EPS
MAX_DIMENSION = 4096  # the dense (d̃ × d̃) Hessian and its factor: 128 MiB each at this size
_CHORD_STEPS = 30


# ------------------------------------------------------------------------- certificates
class DeletionCertificate:
    """Where the optimum of the reduced problem is, seen from a point z = (w, b).

    Attributes
    ----------
    gap : float
        Duality gap P_T(w, b) − D_T(α̂) of the reduced problem (mean form, λ_T = a/|T|), rounded up.
    gap_radius, gradient_radius : float
        The two sound bounds on ‖w*_T − w‖₂ of the module docstring.
    radius : float
        The smaller one.
    gradient : ndarray
        The computed sum-form gradient ∇F_T(z) (with the intercept's entry last, if fitted).
    n_samples : int
        |T|.
    """

    def __init__(self, evaluation, gap_radius, gradient_radius, gradient, n_samples, build):
        self.evaluation, self.gradient = evaluation, gradient
        self.gap = float(evaluation.gap)
        self.gap_radius, self.gradient_radius = float(gap_radius), float(gradient_radius)
        self.radius = min(self.gap_radius, self.gradient_radius)
        self.n_samples = n_samples
        self._build, self._certificate = build, None

    def certificate(self):
        """The glru :class:`~glru.certificate.Certificate` of this point for decision and
        intercept bounds (built on first use: O(nnz), it copies the remaining rows), its primal
        ball the tighter :attr:`radius`."""
        if self._certificate is None:
            self._certificate = _with_radius(self._build(), self.radius)
        return self._certificate


class _BallCertificate(Certificate):
    """A glru Certificate whose primal ball (9) is replaced by a tighter sound radius; its
    decision, coefficient and intercept bounds all use it."""

    @property
    def radius(self):
        return min(super().radius, self.other_radius)


def _with_radius(certificate, radius):
    out = _BallCertificate.__new__(_BallCertificate)
    out.__dict__.update(certificate.__dict__)
    out.other_radius = radius
    return out


# ------------------------------------------------------------------------- binary / regression
class _Block:
    """The removed rows of one request (see :meth:`RowDeletion._removed_block`)."""

    def __init__(self, key, rows):
        self.key, self.rows = key, rows


class _MarginRounding:
    """Bounds on the rounding errors of the margins t_i = x_i·w + b of one point, from the cached
    row norms (|x_i|·|w| ≤ ‖x_i‖₂‖w‖₂): e_i = γ_d(‖x_i‖‖w‖ + |b|), γ_d = 2(d + 16)u (as
    :func:`glru.certificate.margin_error`). Scalars where a sum or a maximum suffices, vectors
    only when asked."""

    def __init__(self, deletion, w, b, removed):
        self.deletion, self.removed = deletion, removed
        self.w_norm, self.b = np.linalg.norm(w) * (1 + 2 * (w.size + 2) * EPS), abs(b)
        self.gamma = 2.0 * (deletion.d + 16) * EPS

    def abs_margins(self):
        """‖x_i‖‖w‖ + |b| ≥ |x_i|·|w| + |b| for every row."""
        return self.deletion.row_norms * self.w_norm + self.b

    def abs_margin_dot(self, v):
        """Σ_i v_i(‖x_i‖‖w‖ + |b|) for v ≥ 0, rounded up."""
        return (self.w_norm * (v @ self.deletion.row_norms) + self.b * v.sum()) * (1 + 2 * (v.size + 2) * EPS)

    def errors(self):
        e = margin_error(self.abs_margins(), self.deletion.d)
        e[self.removed] = 0.0
        return e

    def error_sum(self):
        norms = self.deletion.row_norms
        total = norms.sum() - norms[self.removed].sum() + 4 * norms.size * EPS * norms.sum()
        return self.gamma * (self.w_norm * total + self.b * (norms.size - self.removed.size)) * (1 + 4 * EPS)

    def error_square_sum(self):
        """Σ_T e_i², rounded up."""
        norms = self.deletion.row_norms
        squares = max(self.deletion.row_norm_squares_sum - (norms[self.removed] ** 2).sum(), 0.0)
        linear = max(norms.sum() - norms[self.removed].sum(), 0.0)
        count = norms.size - self.removed.size
        total = self.w_norm ** 2 * squares + 2 * self.w_norm * self.b * linear + count * self.b ** 2
        slack = 8 * norms.size * EPS * (self.w_norm ** 2 * self.deletion.row_norm_squares_sum
                                        + 2 * self.w_norm * self.b * norms.sum())
        return self.gamma ** 2 * (total + slack) * (1 + 8 * EPS)

    def error_max(self):
        return self.gamma * (self.w_norm * self.deletion.row_norms.max(initial=0.0) + self.b) * (1 + 4 * EPS)


class RowDeletion:
    """Row deletions from one problem F (binary classification with labels ±1, or regression),
    from a reference point z0, keeping what makes each request cheap: the Hessian H = ∇²F(z0)
    and its Cholesky factor (removals are rank-|R| downdates applied by Woodbury's identity,
    :class:`glru.newton_centres.NewtonCentres`), ∇F(z0), |X| and its column sums.

    Parameters
    ----------
    X : float64 ndarray or CSR of shape (n, d), in the model's design (a penalized intercept
        is a column of X); d + fit_intercept ≤ :data:`MAX_DIMENSION`.
    y : ndarray of shape (n,), ±1 for classification losses.
    loss : str or glru.losses.Loss, with a finite smoothness (logistic, squared_hinge, squared, …).
    strength : float
        a > 0, the sum-form L2 strength (n·λ).
    fit_intercept : bool
        Unpenalized intercept.
    coef, intercept : the reference point z0.
    """

    def __init__(self, X, y, loss, strength, fit_intercept, coef, intercept=0.0):
        self.X, self.y, self.loss = X, np.asarray(y, dtype=float), get_loss(loss)
        self.a, self.fit_intercept = float(strength), bool(fit_intercept)
        self.n, self.d = X.shape
        if self.d + self.fit_intercept > MAX_DIMENSION:
            raise ValueError(f"{self.d} features: the Newton-type updates keep a dense Hessian, at most "
                             f"{MAX_DIMENSION - self.fit_intercept} features are supported.")
        if not np.isfinite(self.loss.smoothness):
            raise ValueError(f"loss {self.loss!r} has no Lipschitz derivative: not supported.")
        self.z0 = self._join(np.asarray(coef, dtype=float), float(intercept) if self.fit_intercept else 0.0)
        self._solvers, self._block = {}, None

    @cached_property
    def abs_X(self):
        """|X| (:func:`glru.problem.absolute`)."""
        return absolute(self.X)

    @cached_property
    def centres(self):
        """H = ∇²F(z0), ∇F(z0) and the factor (built on first use: O(nnz·d̃ + d̃³))."""
        return NewtonCentres(self.X, self.y, self.loss, self.fit_intercept, *self._split(self.z0), self.a)

    def prepare(self):
        """Build now what requests use (otherwise built on first use): the Hessian's factor, the
        per-feature entry counts, Xᵀ, the row norms and the bound on ‖|X|‖₂. Returns self."""
        c = self.centres
        c._full_factor()
        if c._counts is None:  # what NewtonCentres.fold_solver builds on first use
            c._counts = c._column_counts(None)
        for name in ("XT", "row_norms", "row_norm_squares_sum", "abs_norm_bound", "_neg_y"):
            getattr(self, name)
        return self

    # ---- the methods
    def point(self, removed, method, noise_scale=0.0, random_state=None):
        """The point z (coef, intercept) of ``method`` (one of "newton", "influence", "pru",
        "ngd") for the problem without rows ``removed``; ``noise_scale`` σ adds N(0, σ²I) to
        every coordinate of z (NGD's mechanism; needs no unpenalized intercept)."""
        removed = np.asarray(removed, dtype=np.intp)
        block = self._removed_block(removed)
        g = self.reduced_gradient_at_reference(removed)
        if method == "newton":
            z = self.z0 - self._reduced_solver(removed)(g)
        elif method == "pru":
            z = self.z0 + project_onto_rows(block.rows, -self._reduced_solver(removed)(g))
        elif method == "influence":
            z = self.z0 - self.centres.full_solver(g)
        elif method == "ngd":
            z = self.z0 - self.n / (self.n - removed.size) * self.centres.full_solver(g)
        else:
            raise ValueError(f"method must be one of {METHODS[1:]}, got {method!r}.")
        if noise_scale > 0:
            if self.fit_intercept:
                raise ValueError("NGD noise needs a strongly convex objective; an unpenalized intercept is not.")
            z = z + noise_scale * np.random.default_rng(random_state).standard_normal(z.shape)
        return self._split(z)

    def reduced_gradient_at_reference(self, removed):
        """g = ∇F_T(z0) = ∇F(z0) − X̃_Rᵀℓ'_R (sum form), O(|R|·d) from the cached ∇F(z0)."""
        c = self.centres
        removed = np.asarray(removed, dtype=np.intp)
        return c.loss_gradient - self._removed_block(removed).rows.T @ c.slopes[removed] + self.a * c.mask * c.z

    def _removed_block(self, removed):
        """The removed rows X̃_R (dense, with the intercept's column of ones); kept for the latest
        removal set."""
        key = np.sort(removed).tobytes()
        if self._block is None or self._block.key != key:
            self._block = _Block(key, augmented_rows(self.centres.X, removed, self.centres.fit_intercept))
        return self._block

    def _reduced_solver(self, removed):
        """g ↦ H_T⁻¹g, H_T = H − X̃_RᵀD_RX̃_R: :meth:`glru.newton_centres.NewtonCentres.fold_solver`
        (C held fixed, so a_T = a): Woodbury from the cached factor of H for small |R|
        (O(|R|·d̃² + |R|³) once, then O(d̃² + |R|·d̃) per vector), else a direct factorization;
        features with no stored entry in the remaining rows are decoupled exactly (their step is
        g_j/a, so their coefficients become exactly 0, as an exact refit's)."""
        key = np.sort(removed).tobytes()
        if key not in self._solvers:
            solver = self.centres.fold_solver(removed, self.a)
            if solver is None:
                raise ValueError("the reduced problem's Hessian is singular (no curvature left for the intercept).")
            self._solvers = {key: solver}  # one removal set at a time: the latest request's
        return self._solvers[key]

    # ---- certificates
    def certify(self, removed, coef, intercept=0.0, margins=None):
        """:class:`DeletionCertificate` of (coef, intercept) for the problem without ``removed``.

        Cost: one product with X (none if the margins X·w + b are given), one with Xᵀ of two
        columns, and O(n) elementwise work. The remaining rows are not copied (the glru
        Certificate for decision bounds is built on first use)."""
        w = np.asarray(coef, dtype=float)
        b = float(intercept) if self.fit_intercept else 0.0
        removed = np.asarray(removed, dtype=np.intp)
        N = self.n - removed.size
        lam = self.a / N
        if margins is None:
            margins = np.asarray(self.X @ w).ravel()
            margins += b
        rounding = _MarginRounding(self, w, b, removed)
        parts = self._logistic_parts if isinstance(self.loss, Logistic) else self._generic_parts
        slopes, curvature, V, assemble = parts(margins, removed)
        products = np.asarray(self.XT @ V)  # Xᵀℓ' first
        ev, alpha = assemble(lam, w, products, rounding)
        gap_radius = primal_radius(ev.gap, lam)

        Xt_slopes = products[:, 0]
        g_w = Xt_slopes + self.a * w
        gradient = np.append(g_w, slopes.sum()) if self.fit_intercept else g_w
        norm = (np.linalg.norm(g_w) + self._gradient_error(w, slopes, rounding, N, Xt_slopes)) \
            * (1 + 4 * (self.d + 2) * EPS)
        if self.fit_intercept:
            norm += self._intercept_term(removed, margins, slopes, curvature, rounding)
        gradient_radius = norm / self.a * _WIDEN if np.isfinite(norm) else np.inf

        def build():
            keep = _remaining(self.n, removed)
            problem = Problem(self.X[keep], self.y[keep], self.loss, L2(lam), self.fit_intercept)
            return certificate_at(problem, w, b, gap_evaluation=ev.with_rows(alpha()[keep], ev.Xt_alpha, margins[keep]))
        return DeletionCertificate(ev, gap_radius, gradient_radius, gradient, N, build)

    def _logistic_parts(self, margins, removed):
        """ℓ', ℓ'' (zero on the removed rows), the columns for Xᵀ, and the gap's assembly, for the
        logistic loss: the hot path of large requests, a few passes over n-vectors, no logarithm.

        With z = −y·t and e = e^{−|z|}: p = σ(z) = 1/(1 + e) or e/(1 + e), q = 1 − p likewise
        without cancellation, ℓ' = −y·p =: s, ℓ'' = p·q. The dual point is α = −s, with one side
        scaled by 1 − c to make Σα = 0 (:func:`glru.duality.enforce_zero_sum`: the side whose α
        sum has the surplus), so Xᵀα = −Xᵀs + c·Xᵀ(s on that side): two columns.

        The gap is assembled without ℓ or ℓ*: P − D = (1/N)Σ[ℓ(t_i) + ℓ*(−α_i)] + (λ/2)‖w‖² +
        ‖Xᵀα/N‖²/(2λ), and Fenchel–Young's equality gives ℓ(t) + ℓ*(s) = t·s at s = ℓ'(t). On the
        scaled rows ℓ*((1 − c)s) ≤ ℓ*(s) − c·t·s + c²|s|/(2(1 − c)(1 − |s|)) (Taylor: ℓ*' = t,
        ℓ*''(σ) = 1/(|σ|(1 − |σ|)) ≤ 1/((1 − c)|s|(1 − |s|)) on the segment), or ≤ (1 − c)ℓ*(s)
        (convexity, ℓ*(0) = 0); an upper bound of ℓ* only raises the gap. So
        N·(P − D) ≤ Σt_is_i − cΣ_scaled t_is_i + min(c²/(2(1 − c))Σ_scaled p/q, cΣ_scaled ℓ) + N·(penalties).
        Rounding: the margins' errors e_i change ℓ by at most |s_i|e_i + e_i²/8; the computed s_i
        is within 4u of s_i relatively, which moves t·s (and ℓ*, to first order) by 4u|t·s|
        (covered by the allowance's |α|·|t| terms) and to second order by at most 32u per row
        (added); the sums' rounding is the allowance of :func:`glru.duality.gap_allowance`."""
        z = self._neg_y * margins
        e = np.abs(z)
        np.negative(e, out=e)
        np.exp(e, out=e)
        r = 1.0 / (1.0 + e)
        er = e * r
        positive = z >= 0
        p, q = np.where(positive, r, er), np.where(positive, er, r)
        slopes = self._neg_y * p
        slopes[removed] = 0.0
        curvature = None
        side, c = 0, 0.0
        if self.fit_intercept:
            curvature = p * q
            curvature[removed] = 0.0
            total = -slopes.sum()  # Σα before scaling
            side = 1 if total > 0 else -1 if total < 0 else 0
            scaled = slopes * side < 0
            on_side = slopes * scaled
            mass = -on_side.sum()
            c = min(total / mass, 1.0) if mass != 0 else 0.0
            V = np.column_stack([slopes, on_side])
        else:
            V = slopes[:, None]

        def alpha():
            out = -slopes
            if c > 0:
                out[scaled] *= 1.0 - c
            return out

        def assemble(lam, w, products, rounding):
            N = self.n - removed.size
            Xt_alpha = -products[:, 0] + (c * products[:, 1] if c > 0 else 0.0)
            total = margins @ slopes
            penalty = L2(lam)
            pen_w = penalty.value(w)
            if c > 0:
                with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # q = 0: saturated rows
                    taylor = c * c / (2 * (1 - c)) * ((p / q) @ scaled) if c < 1 else np.inf
                if not taylor <= 1e-6 * (abs(total) + N * pen_w):
                    # far from an optimum: the convexity bound, with ℓ = max(z, 0) + log1p(e) ≤ max(z, 0) + e
                    taylor = min(taylor, c * ((np.maximum(z, 0.0) + e) @ scaled) * (1 + 4 * EPS))
                total += -c * (margins @ on_side) + taylor
            pen_conj = penalty.conjugate(Xt_alpha / N)
            abs_slopes = np.abs(slopes)
            margin_terms = rounding.gamma * rounding.abs_margin_dot(abs_slopes) + rounding.error_square_sum() / 8 \
                + 32 * EPS * N
            # the terms summed are t_i·s_i (|α_i| ≤ |s_i|) and the penalties
            magnitude = (abs_slopes @ np.abs(margins)) / N + pen_w + pen_conj
            raw = total / N + pen_w + pen_conj + margin_terms / N * (1 + 4 * EPS)
            gap = sound_gap(raw, 0.0, magnitude, N, self.d)
            ev = GapEvaluation(gap, np.nan, np.nan, None, Xt_alpha, margins, magnitude,
                               gap_allowance(magnitude, N, self.d), np.nan, np.nan)
            return ev, alpha
        return slopes, curvature, V, assemble

    def _generic_parts(self, margins, removed):
        """As :meth:`_logistic_parts` for any loss, the gap by glru's :func:`assemble_gap`."""
        slopes, curvature = _derivatives(self.loss, self.y, margins, self.fit_intercept)
        slopes[removed] = 0.0
        if self.fit_intercept:
            curvature[removed] = 0.0
        alpha = enforce_zero_sum(-slopes)[0] if self.fit_intercept else -slopes

        def assemble(lam, w, products, rounding):
            keep = _remaining(self.n, removed)
            ev = assemble_gap(self.loss, L2(lam), self.y[keep], w, margins[keep], alpha[keep], products[:, 1],
                              rounding.abs_margins()[keep], self.d)
            return ev.with_rows(alpha, products[:, 1], margins), lambda: alpha
        return slopes, curvature, np.column_stack([slopes, alpha]), assemble

    def _gradient_error(self, w, slopes, rounding, N, Xt_slopes):
        """A bound on ‖∇_wF_T(w, b) − computed‖₂: each computed ℓ'_i is within L·e_i + 4u|ℓ'_i| of
        the exact one (e_i its margin's rounding error) and X_Tᵀℓ' adds γ_N·Σ_i|x_ij||ℓ'_i|, so
        the error is at most |X_T|ᵀv + 4u(|X_Tᵀℓ'| + a|w|) entrywise, v = L·e + (γ_N + 4u)|ℓ'|,
        and ‖|X_T|ᵀv‖₂ ≤ ‖|X|‖₂‖v‖₂ ≤ √(‖X‖₁‖X‖_∞)·‖v‖₂ (largest column and row absolute sums):
        no pass over X."""
        v = self.loss.smoothness * rounding.errors()
        v += (2 * (N + 16) * EPS + 4 * EPS) * np.abs(slopes)
        return self.abs_norm_bound * np.linalg.norm(v) * _WIDEN \
            + 4 * EPS * np.linalg.norm(np.abs(Xt_slopes) + self.a * np.abs(w))

    @cached_property
    def abs_norm_bound(self):
        """√(‖X‖₁‖X‖_∞) ≥ ‖|X_T|‖₂ for every subset T of the rows, rounded up."""
        rows = np.asarray(self.abs_X.sum(axis=1)).ravel().max(initial=0.0)
        return float(np.sqrt(self.col_abs_sums.max(initial=0.0) * rows)) * (1 + 4 * (self.n + self.d) * EPS)

    def _intercept_term(self, removed, margins, slopes, curvature, rounding):
        """A bound on ‖∇φ(w) − ∇_wF_T(w, b)‖: the gradient at the best intercept β, |β − b| ≤ t.

        Each |ℓ'(u_i + δ) − ℓ'(u_i)| ≤ |δ|·max_{|ξ|≤|δ|} ℓ''(u_i + ξ), which is ≤ t·ℓ''(u_i)e^{ν(t + e_i)}
        when |ℓ'''| ≤ νℓ'' (logistic ν = 1, squared ν = 0; e_i the margin's rounding error), else
        ≤ t·L: the vector is at most t·e^{ν(t + max e)}·|X_T|ᵀℓ'' or t·L·|X_T|ᵀ1 entrywise, whose
        norms are at most √(‖X‖₁‖X‖_∞)·‖ℓ''‖₂ and ‖Σ_T|x_i|‖₂. ``slopes`` and ``curvature`` are
        over all rows, 0 on the removed ones."""
        loss = self.loss
        t = _smooth_root_bracket(loss, slopes, curvature, rounding.error_sum())
        if not np.isfinite(t):
            keep = _remaining(self.n, removed)
            t = _root_bracket(loss, self.y[keep], margins[keep], rounding.errors()[keep], slopes.sum(),
                              curvature.sum())
        if not np.isfinite(t):
            return np.inf
        nu = loss.self_concordance
        if np.isfinite(nu):
            growth = np.exp(min(nu * (t + rounding.error_max()), 700.0))
            size = self.abs_norm_bound * np.linalg.norm(curvature) * (1 + 2 * (self.n + 16) * EPS) * growth
        else:
            removed_sums = np.asarray(self.abs_X[removed].sum(axis=0)).ravel()
            size = loss.smoothness * np.linalg.norm(np.maximum(self.col_abs_sums - removed_sums, 0.0)
                                                    + 4 * (self.n + 16) * EPS * self.col_abs_sums)
        return t * size * _WIDEN

    @cached_property
    def col_abs_sums(self):
        return np.asarray(self.abs_X.sum(axis=0)).ravel()

    @cached_property
    def row_norms(self):
        """‖x_i‖₂, rounded up."""
        return np.sqrt(row_norms_sq(self.X)) * (1 + 2 * (self.d + 2) * EPS)

    @cached_property
    def row_norm_squares_sum(self):
        return float((self.row_norms ** 2).sum()) * (1 + 2 * (self.n + 2) * EPS)

    @cached_property
    def _neg_y(self):
        return -self.y

    @cached_property
    def XT(self):
        """Xᵀ, kept: scipy re-validates a transposed sparse matrix on every ``.T`` (≈ 0.5 ms on w8a)."""
        return self.X.T

    def gradient(self, removed, z):
        """(∇F_T(z), margins X·w + b): one product with X and one with Xᵀ."""
        w, b = self._split(z)
        margins = np.asarray(self.X @ w).ravel() + b
        slopes = _derivatives(self.loss, self.y, margins)[0]
        slopes[np.asarray(removed, dtype=np.intp)] = 0.0
        g = np.asarray(self.XT @ slopes).ravel() + self.a * w
        return (np.append(g, slopes.sum()) if self.fit_intercept else g), margins

    # ---- refinement
    def refine(self, removed, coef, intercept, max_radius=0.0):
        """Newton steps with the reduced Hessian of the first step kept (chord steps: H_T(z0),
        O(d̃²) each plus two passes over X), certifying a point once its predicted radius ‖∇F_T‖/a
        is below half of ``max_radius``, until its certified radius is ≤ ``max_radius`` or the
        gradient stops contracting (rounding level, for ``max_radius=0``); then, if still needed
        (and, for ``max_radius=0``, the gap is not at rounding level), an exact warm-started solve
        of the reduced problem polished to rounding. Returns (coef, intercept, certificate,
        n_steps).

        A step whose gradient the last contraction rate predicts to be small enough is certified
        at once (the certificate computes that gradient anyway)."""
        removed = np.asarray(removed, dtype=np.intp)
        solver = self._reduced_solver(removed)
        z = self._join(coef, intercept)
        g, margins = self.gradient(removed, z)
        steps, rate, cert = 0, None, None
        while steps < _CHORD_STEPS:
            norm = np.linalg.norm(g)
            if cert is None and norm / self.a <= 0.5 * max_radius:
                cert = self.certify(removed, *self._split(z), margins=margins)
                if cert.radius <= max_radius:
                    return *self._split(z), cert, steps
            candidate = z - solver(g)
            steps += 1
            new = None
            if rate is not None and rate * norm / self.a <= 0.25 * max_radius:
                new = self.certify(removed, *self._split(candidate))
                if new.radius <= max_radius:
                    return *self._split(candidate), new, steps
                g_new, margins_new = new.gradient, None
            else:
                g_new, margins_new = self.gradient(removed, candidate)
            if not np.linalg.norm(g_new) < norm:
                break  # rounding level reached, or a step that does not contract
            rate = np.linalg.norm(g_new) / norm
            z, g, margins, cert = candidate, g_new, margins_new, new
            if rate > 0.5:
                break  # rounding level (or a slow contraction: the exact solve below takes over)
        if cert is None:
            cert = self.certify(removed, *self._split(z), margins=margins)
        if cert.radius > max_radius and not (max_radius == 0.0 and cert.evaluation.converged(1e-12)):
            coef, intercept = self._solve_exact(removed, *self._split(z))
            steps += 1
            exact = self.certify(removed, coef, intercept)
            if exact.radius <= cert.radius:
                return coef, intercept, exact, steps
        return *self._split(z), cert, steps

    def _solve_exact(self, removed, coef, intercept):
        keep = _remaining(self.n, removed)
        N = int(keep.sum())
        problem = Problem(self.X[keep], self.y[keep], self.loss, L2(self.a / N), self.fit_intercept)
        result = solve(problem, coef, intercept, tol=1e-13, max_iter=1000)
        newton = dense_newton_solve(problem) if self.d + self.fit_intercept <= 512 else None
        return polish(problem, result.coef, result.intercept, newton_solve=newton)

    def _split(self, z):
        return (z[:-1].copy(), float(z[-1])) if self.fit_intercept else (z.copy(), 0.0)

    def _join(self, coef, intercept):
        return np.append(coef, intercept) if self.fit_intercept else np.array(coef, dtype=float)


def _remaining(n, removed):
    """The boolean mask of the rows kept."""
    keep = np.ones(n, dtype=bool)
    keep[removed] = False
    return keep


def _derivatives(loss, y, margins, curvature=False):
    """ℓ' (and ℓ'' if asked) at the margins; for the logistic loss from one ``expit`` (the two
    are the hot elementwise work of a certificate)."""
    if isinstance(loss, Logistic):
        p = expit(-y * margins)
        return -y * p, (p * (1.0 - p) if curvature else None)
    return loss.derivative(y, margins), (loss.second_derivative(y, margins) if curvature else None)


def _smooth_root_bracket(loss, slopes, curvature, error_sum):
    """t ≥ |β| for a root β of h(β) = Σ ℓ'(u*_i + β) (u* the exact margins, their distances to
    the computed ones summing to at most ``error_sum``) from the computed ℓ'_i and ℓ''_i alone, when |ℓ'''| ≤ νℓ'' (ν finite);
    inf otherwise, or if this bound cannot certify one.

    For t ≥ 0, ℓ'(u + t) − ℓ'(u) = ∫₀ᵗ ℓ''(u + s) ds ≥ t·ℓ''(u)e^{−νt}, and a margin's error costs
    at most L·e_i, so h(t) ≥ S − E + t e^{−νt} C and h(−t) ≤ S + E − t e^{−νt} C, with S = Σℓ'_i,
    C = Σℓ''_i (rounded down) and E the rounding of S plus L·Σe_i. Both signs are certain once
    t e^{−νt} ≥ q = (|S| + E)/C, solved by the fixed point t = q e^{νt} (q ≤ 1/(2eν) here)."""
    nu, L = loss.self_concordance, loss.smoothness
    if not np.isfinite(nu):
        return np.inf
    sum_err = 2 * (np.log2(slopes.size + 1) + 16) * EPS + 4 * EPS  # numpy's pairwise sums
    S = slopes.sum()
    E = sum_err * np.abs(slopes).sum() + L * error_sum * (1 + sum_err)
    C = curvature.sum() * (1 - sum_err - 4 * EPS)
    if not C > 0:
        return np.inf
    q = (abs(S) + E) / C * (1 + 8 * EPS)
    if nu * q * np.e > 0.5:
        return np.inf
    t = q
    for _ in range(8):
        t = q * np.exp(nu * t) * (1 + 8 * EPS)
    return t if t * np.exp(-nu * t) >= q else np.inf


def _root_bracket(loss, y, margins, m_err, h0, curvature):
    """t ≥ |β| for a root β of h(β) = Σ ℓ'(u_i + β) (u the computed margins, each within
    ``m_err`` of its exact value; h0 = h(0), ``curvature`` = h'(0) as computed), certified with
    rounding; inf if none is found.

    h is nondecreasing; if a lower bound of h(t) is ≥ 0 and an upper bound of h(−t) is ≤ 0, a root
    lies in [−t, t]. The first t is twice the Newton estimate |h(0)|/h'(0)."""
    sum_err = 2 * (np.log2(margins.shape[0] + 1) + 16) * EPS + 4 * EPS  # numpy's pairwise sums

    def bound(shift, sign):  # sign −1: a lower bound of h(shift); +1: an upper bound
        shifted = margins + shift
        values = loss.derivative(y, shifted + sign * (m_err + 2 * EPS * np.abs(shifted)))
        return values.sum() + sign * sum_err * np.abs(values).sum()

    t = 2 * abs(h0) / curvature if curvature > 0 else 1.0
    t = max(t, 1e-15 * (1 + np.abs(margins).max(initial=0.0)))
    for _ in range(60):
        if bound(t, -1) >= 0 and bound(-t, 1) <= 0:
            return t
        t *= 4.0
    return np.inf


def project_onto_rows(rows, v):
    """Π v: the orthogonal projection of v onto the span of the rows of ``rows`` (k × d̃), from a
    thin SVD (singular values below d̃·u·σ_max are treated as 0: dependent rows)."""
    U, s, _ = np.linalg.svd(np.asarray(rows).T, full_matrices=False)
    rank = int(np.sum(s > max(rows.shape) * EPS * s.max(initial=0.0)))
    U = U[:, :rank]
    return U @ (U.T @ v)


def pru_leave_k_out(deletion, removed):
    """The PRU paper's own route (Algorithms 2 and 1; Algorithm 3 for a non-squared loss) at
    the reference point of ``deletion`` (a :class:`RowDeletion`), which it assumes is the full
    optimum.

    IRLS weights s_i = ℓ''_i (1 for the squared loss), working residuals r_i = −ℓ'_i/ℓ''_i (0
    where ℓ''_i = 0: such rows enter neither the gradient nor the Hessian), the weighted hat
    matrix block H_RR = X̃_R H⁻¹ X̃_Rᵀ S_R (H the sum-form Hessian, a penalty matrix aP), then

        r^{∖R} = (I − H_RR)⁻¹ r_R                  (Algorithm 2 with T_ij = h_ij/(1 − h_ii))
        z_res  = z0 + pinv(X̃_R)(r_R − r^{∖R})      (Algorithm 1: ŷ^{∖R} − X̃_Rz0 = r_R − r^{∖R})

    Returns (coef, intercept, r^{∖R})."""
    c = deletion.centres
    rows = np.asarray(removed)
    Xr = augmented_rows(c.X, rows, c.fit_intercept)
    weights = c.curvatures[rows]
    residuals = np.divide(-c.slopes[rows], weights, out=np.zeros(rows.size), where=weights > 0)
    hat = Xr @ c.full_solver(Xr.T) * weights[None, :]
    lko = np.linalg.solve(np.eye(rows.size) - hat, residuals)
    z = c.z + np.linalg.pinv(Xr) @ (residuals - lko)
    return (*deletion._split(z), lko)


# ------------------------------------------------------------------------- NGD's noise
def ngd_constants(loss, X, y, strength, fit_intercept=False):
    """Constants of the NGD paper's Assumptions 1.a/1.b for an L2-penalized linear model, in its
    conventions (mean form L = (1/n)Σℓ + λπ, π = ½‖θ‖², λ = a/n; "μ-strongly convex" means
    f(y) ≥ f(x) + ∇f·(y − x) + μ‖y − x‖², without the ½).

    With R = max_i ‖x̃_i‖ over the rows of X and B a bound on ‖θ‖ at both optima
    ((λ/2)‖θ*‖² ≤ L(θ*) ≤ L(0), for the full and for the reduced objective, which with C fixed
    is (1/n)Σ_{S∖U}ℓ + λπ ≤ L(0)):

    ========== ================================ ======================================
    constant   logistic                         squared (ℓ = ½(t − y)², Ridge)
    ========== ================================ ======================================
    μ          λ/2 (ℓ alone is not strongly convex: only the penalty counts)
    B          √(2·log 2/λ)                     √(Σy²/(nλ))
    C          R + λB  (|ℓ'| ≤ 1)               R(RB + max|y|) + λB  (|ℓ'| ≤ |t| + |y|)
    M          R³/(6√3)  (|ℓ'''| ≤ 1/(6√3))      0
    Q          1/4  (−∂²_f log P = p(1 − p))     1
    K          R²  (∇_θ f = x̃)                   R²
    ========== ================================ ======================================

    A smaller μ or a larger C, M, Q or K only enlarges σ, so each is taken on the safe side. R
    is measured on the training rows; the paper's guarantee needs these bounds for every
    neighbouring data set, i.e. rows bounded by R in any data set considered. An intercept must
    be penalized (a column of X): ``fit_intercept=True`` raises. Returns a dict with keys mu,
    C, M, Q, K (and B, R).
    """
    loss = get_loss(loss)
    if fit_intercept:
        raise ValueError("NGD's guarantee needs a strongly convex objective; an unpenalized intercept is not "
                         "(use fit_intercept=False, or a penalized intercept such as solver='liblinear').")
    n = X.shape[0]
    lam = strength / n
    R = float(np.sqrt(row_norms_sq(X).max()))
    if isinstance(loss, Logistic):
        B = np.sqrt(2 * np.log(2.0) / lam)
        return dict(mu=lam / 2, C=R + lam * B, M=R ** 3 / (6 * np.sqrt(3.0)), Q=0.25, K=R * R, B=B, R=R)
    if isinstance(loss, Squared):
        y = np.asarray(y, dtype=float)
        B = np.sqrt(float(y @ y) / (n * lam))
        return dict(mu=lam / 2, C=R * (R * B + np.abs(y).max()) + lam * B, M=0.0, Q=1.0, K=R * R, B=B, R=R)
    raise ValueError(f"NGD noise is calibrated for the logistic and squared losses, not {type(loss).__name__}.")


def ngd_noise_scale(epsilon, delta, m, n, *, M, C, mu, Q, K):
    """σ of Algorithm 1 (lines 6–7): γ = M m² C²/(μ³ n²) + 2 m² C Q K/(μ² n²) bounds the distance
    of the noiseless update to the retrained optimum (its eq. 56), and the Gaussian mechanism
    with sensitivity γ takes σ = (γ/ε)·√(2 log(1.25/δ)) (proven for ε < 1). Returns (σ, γ)."""
    if not (epsilon > 0 and 0 < delta < 1):
        raise ValueError(f"need epsilon > 0 and 0 < delta < 1, got epsilon={epsilon!r}, delta={delta!r}.")
    gamma = M * m ** 2 * C ** 2 / (mu ** 3 * n ** 2) + 2 * m ** 2 * C * Q * K / (mu ** 2 * n ** 2)
    return gamma / epsilon * np.sqrt(2 * np.log(1.25 / delta)), gamma


# ------------------------------------------------------------------------- multinomial
class MultinomialRowDeletion:
    """The same methods for multinomial logistic regression (:mod:`glru.multinomial`), in its
    flat coordinates z = (W.ravel(), u), b = B u (Σ_k b_k = 0). Dense Hessians of size
    (K·d + K − 1)²: for moderate K·d. The certificate is glru's
    :class:`~glru.multinomial.MultinomialCertificate` (gap-based: ‖W* − W‖_F ≤ √(2G/λ_T))."""

    def __init__(self, X, codes, K, strength, fit_intercept, coef, intercept=None):
        self.X, self.codes, self.K = X, np.asarray(codes), int(K)
        self.a, self.fit_intercept = float(strength), bool(fit_intercept)
        self.n, self.d = X.shape
        if self.K * self.d + self.K > MAX_DIMENSION:
            raise ValueError(f"K·d = {self.K * self.d}: the multinomial updates keep a dense Hessian of "
                             f"at most {MAX_DIMENSION} coordinates.")
        self.full = MultinomialProblem(X, self.codes, self.K, self.a / self.n, self.fit_intercept)
        coef = np.asarray(coef, dtype=float)
        b = None if intercept is None or not self.fit_intercept else np.asarray(intercept, float)
        self.z0 = self.full.pack(coef - coef.mean(axis=0), None if b is None else b - b.mean())
        self._reduced = None

    # the full data's derivatives at z0, built on first use (a certificate alone needs none)
    @cached_property
    def probabilities(self):
        return Multinomial.probabilities(self.full.scores(*self.full.unpack(self.z0)))

    @cached_property
    def hessian(self):
        return self.n * self.full.hessian(self.z0)  # sum form: the data's plus a·I on W

    @cached_property
    def gradient(self):
        return self.n * self.full.grad(self.z0)

    @cached_property
    def _factor(self):
        return scipy.linalg.cho_factor(self.hessian)

    def prepare(self):
        """Build the full data's Hessian, its factor and gradient now. Returns self."""
        for name in ("probabilities", "hessian", "gradient", "_factor"):
            getattr(self, name)
        return self

    def _row_parts(self, rows):
        """Σ_R ∇ℓ_i and Σ_R ∇²ℓ_i in the flat coordinates."""
        Xr = as_dense(self.X[rows])
        P = self.probabilities[rows]
        G = P.copy()
        G[np.arange(rows.size), self.codes[rows]] -= 1.0
        Xa = np.hstack([Xr, np.ones((rows.size, 1))]) if self.fit_intercept else Xr
        K, d = self.K, self.d
        H = -np.einsum("ik,il,ia,ic->kalc", P, P, Xa, Xa, optimize=True)
        H[np.arange(K), :, np.arange(K), :] += np.einsum("ik,ia,ic->kac", P, Xa, Xa, optimize=True)
        g_W = (G.T @ Xr).ravel()
        if not self.fit_intercept:
            return g_W, H.reshape(K * d, K * d)
        B = self.full.basis
        H_WW = H[:, :d, :, :d].reshape(K * d, K * d)
        H_Wb = H[:, :d, :, d].reshape(K * d, K) @ B
        H_bb = B.T @ H[:, d, :, d] @ B
        return np.concatenate([g_W, B.T @ G.sum(axis=0)]), np.block([[H_WW, H_Wb], [H_Wb.T, H_bb]])

    def _reduced_solver(self, rows):
        key = np.sort(rows).tobytes()
        if self._reduced is None or self._reduced[0] != key:
            g_R, H_R = self._row_parts(rows)
            try:
                factor = scipy.linalg.cho_factor(self.hessian - H_R)
            except np.linalg.LinAlgError as error:
                raise ValueError("the reduced problem's Hessian is singular.") from error
            self._reduced = (key, g_R, factor)
        return self._reduced[1], (lambda v, f=self._reduced[2]: scipy.linalg.cho_solve(f, v))

    def point(self, removed, method, noise_scale=0.0, random_state=None):
        rows = np.asarray(removed)
        if noise_scale > 0:
            raise ValueError("NGD noise is calibrated for binary models only (the multinomial constants are not derived).")
        g_R, reduced = self._reduced_solver(rows)
        g = self.gradient - g_R
        full = lambda v: scipy.linalg.cho_solve(self._factor, v)
        if method == "newton":
            z = self.z0 - reduced(g)
        elif method == "influence":
            z = self.z0 - full(g)
        elif method == "ngd":
            z = self.z0 - self.n / (self.n - rows.size) * full(g)
        elif method == "pru":
            z = self.z0 + self._project(rows, -reduced(g))
        else:
            raise ValueError(f"method must be one of {METHODS[1:]}, got {method!r}.")
        return self.full.unpack(z)

    def _project(self, rows, step):
        """Each class's row of (ΔW, Δb) projected onto span{x̃_i : i ∈ R}."""
        dW, db = self.full.unpack(step)
        Xr = as_dense(self.X[rows])
        if self.fit_intercept:
            Xr = np.hstack([Xr, np.ones((rows.size, 1))])
            M = np.hstack([dW, db[:, None]])
        else:
            M = dW
        M = project_onto_rows(Xr, M.T).T
        return self.full.pack(M[:, :self.d], M[:, self.d] if self.fit_intercept else None)

    def problem(self, removed):
        keep = _remaining(self.n, np.asarray(removed))
        N = int(keep.sum())
        return MultinomialProblem(self.X[keep], self.codes[keep], self.K, self.a / N, self.fit_intercept)

    def certify(self, removed, coef, intercept=None):
        return MultinomialCertificate(self.problem(removed), coef, intercept)

    def refine(self, removed, coef, intercept, max_radius=0.0):
        """Chord steps (the reduced Hessian at z0), then a warm-started exact solve, until the
        certificate's radius is ≤ ``max_radius``. Returns (coef, intercept, certificate, n_steps)."""
        rows = np.asarray(removed)
        problem = self.problem(rows)
        _, reduced = self._reduced_solver(rows)
        cert = MultinomialCertificate(problem, coef, intercept)
        z, steps = problem.pack(cert.coef, cert.intercept), 0
        grad = problem.n * problem.grad(z)
        while cert.primal_radius > max_radius and steps < _CHORD_STEPS:
            candidate = z - reduced(grad)
            new_grad = problem.n * problem.grad(candidate)
            steps += 1
            if not np.linalg.norm(new_grad) < np.linalg.norm(grad):
                break
            z, grad = candidate, new_grad
            cert = MultinomialCertificate(problem, *problem.unpack(z))
        if cert.primal_radius > max_radius and not (max_radius == 0.0 and cert.evaluation.converged(1e-12)):
            result = solve_multinomial(problem.X, problem.y, self.K, problem.lam, self.fit_intercept,
                                       *problem.unpack(z), tol=1e-13)
            steps += 1
            exact = MultinomialCertificate(problem, result.coef, result.intercept)
            if exact.primal_radius <= cert.primal_radius:
                cert = exact
        return cert.coef, cert.intercept, cert, steps
