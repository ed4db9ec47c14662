"""Damped inexact Newton steps for a block of folds of one data set at once.

Where the Hessian a fold's steps are taken with (frozen where the full fit was evaluated, see
:mod:`glru.newton_centres`) is far from the fold's own, chord steps stop contracting: on madelon
(600 × 500, dense) removing a tenth of the rows moves the optimum by more than its own norm,
and the first chord step from the full fit doubles the gradient. A Newton step with the fold's
Hessian at its current point converges from there, but forming that Hessian costs n·d̃²; its
products with vectors cost 2·nnz(X). This module takes Newton–CG steps (the truncated Newton of
LIBLINEAR's ``newton.cpp``) for m folds together, so that each conjugate-gradient iteration is
two products of X with d̃ × m blocks instead of 2m matrix-vector products, and each step is
shortened to the minimizer of the fold's objective along it, found on the margins X̃s (one more
product: the objective and its derivative at any step length then cost O(n) per fold). Nothing
here is trusted: the points are certified by the caller.

In sum form, with x̃_i = (x_i, 1) when an intercept is fitted and P the projection that drops it,
fold j minimises F_j(z) = Σ_{i∈T_j} ℓ_i(x̃_i·z) + (a_j/2)‖Pz‖², whose Hessian at z is
X̃ᵀ D_j X̃ + a_j P with D_j = ℓ''(X̃z) on T_j and 0 elsewhere.
"""

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from .bounds import signs_decided
from .costs import DENSE_SECONDS, factor_seconds, gram_seconds, product_seconds
from .duality import EPS
from .hessian import DENSE_MAX_DIM
from .newton_centres import weighted_gram
from .problem import curved_rows
from .standardization import relative_scaling

ARMIJO = 1e-4  # sufficient decrease of a backtracked step, as a share of the linear prediction
MAX_HALVINGS = 30
ROOT_STEPS = 12  # evaluations of φ' at most, in search of a step length's minimizer
SLOPE_SHARE = 1e-3  # of |φ'(0)| that |φ'(t)| must fall to (see FoldBlock.line_search)
CG_MAX_ITER = 100  # per step; the forcing term decides when a step is accurate enough
FLOAT32_EPS = float(np.finfo(np.float32).eps)
ROUGH_MARGIN = 64.0  # madelon (d̃ = 501): float32 products while forcing ≥ 8.5e-5; 10-fold 16–20 % faster


def forcing_terms(norms, last_steps):
    """Forcing terms of Newton–CG steps at gradients of these ``norms``, each fold's from its last
    step's (gradient norm, forcing term), or None before its first: Eisenstat and Walker's second
    choice, η = γ(‖g‖/‖g_prev‖)^α, kept from falling faster than γη_prev^α while that is above
    0.1, at most ``FORCING_MAX``. It tightens as fast as the steps contract the gradient, and
    stays loose where they do not (a Hessian far from the model's). The rule it replaced,
    min(½, √(‖g‖/‖g₀‖)), kept steps at η ≥ 0.3 until the gradient fell a tenfold, each step then
    contracting it by about η: 10-fold logistic regression on sparse Gaussian 10000 × 1000 took
    73 steps (314 products) where this takes 50 (261), 0.40 → 0.31 s; binary 5000 × 3000 90 → 54
    steps, 0.96 → 0.69 s; 14–40 % fewer steps on the 16 logistic 10-fold configurations of
    ``benchmarks/bench_cross_validation.py`` that take these steps, with 17 % fewer to 8 % more
    products (docs/benchmarks.md, nineteenth session)."""
    eta = np.full(len(norms), FORCING_MAX)
    for j, last in enumerate(last_steps):
        if last is not None:
            last_norm, last_eta = last
            guard = EW_GAMMA * last_eta ** EW_ALPHA
            eta[j] = min(FORCING_MAX, max(EW_GAMMA * (norms[j] / last_norm) ** EW_ALPHA, guard if guard > 0.1 else 0.0))
    return eta


FORCING_MAX, EW_GAMMA, EW_ALPHA = 0.5, 0.9, 2.0  # (α = 2, γ = 0.9: fewer steps than α = (1 + √5)/2 or γ = 0.5)


class FoldBlock:
    """m folds of (X, y) at their current points: margins, objective, Hessian-vector products.

    Parameters
    ----------
    X, XT : the data (ndarray or CSR) and its transpose, kept by the caller.
    y, loss : targets and :class:`glru.losses.Loss`.
    fit_intercept : bool
    Z : (d̃, m) array, the folds' current points (w, b) as columns.
    U : (n, m) array, their margins X̃Z, or None to compute them.
    dropped : list of m index arrays, the rows outside each fold's training set.
    strengths : (m,) array, a_j.
    rough : (X, XT) in float32 (:func:`single_precision`), or None
        For the conjugate-gradient products of steps whose forcing terms are coarse enough.
    preconditioner : :class:`FoldPreconditioner` of these m folds, or None
    """

    def __init__(self, X, XT, y, loss, fit_intercept, Z, U, dropped, strengths, rough=None, preconditioner=None):
        self.X, self.XT, self.y, self.loss, self.fit_intercept = X, XT, y, loss, fit_intercept
        self.rough, self.preconditioner = rough, preconditioner
        U = self._margins(Z) if U is None else U
        self.Z, self.U, self.strengths = Z, U, strengths
        self.training = np.ones(U.shape, dtype=bool)
        for j, rows in enumerate(dropped):
            self.training[rows, j] = False
        self.curvatures = np.where(self.training, loss.second_derivative(y[:, None], U), 0.0)
        self.objective = self._objective(U, Z)
        self._curved = {}  # rough → (X, Xᵀ, D) on the rows some fold curves at (see _curved_rows)
        self._curved_indices = curved_rows(self.curvatures)  # (the same rows for both precisions)

    def hessian_times(self, V, columns=slice(None), rough=False):
        """The Hessians of the folds ``columns`` (all, or a mask) times the columns of V:
        X̃ᵀ(D_j ∘ X̃v_j) + a_j P v_j, on the rows some fold curves at only; with ``rough``, the
        two products with X in float32."""
        X, XT, curvatures = self._curved_rows(rough)
        if rough:
            T = curvatures[:, columns] * self._margins(V.astype(np.float32), X, columns)
            HV = np.asarray(self._transposed(T.astype(np.float32), columns, XT), dtype=float)
        else:
            T = curvatures[:, columns] * self._margins(V, X, columns)
            HV = self._transposed(T, columns, XT)
        HV += self.strengths[columns] * self._penalized(V)
        return np.vstack([HV, T.sum(axis=0)]) if self.fit_intercept else HV

    def _curved_rows(self, rough):
        """(X, Xᵀ, D) of the Hessian products, in float32 if ``rough``: the rows of
        :func:`glru.problem.curved_rows` only (sliced once a block), or all of them."""
        if rough not in self._curved:
            X, XT = self.rough if rough else (self.X, self.XT)
            rows = self._curved_indices
            if rows is None:
                self._curved[rough] = X, XT, self.curvatures
            else:
                X = X[rows]
                self._curved[rough] = X, X.T, self.curvatures[rows]
        return self._curved[rough]

    def newton_steps(self, G, forcing):
        """Steps s_j with ‖H_j s_j + g_j‖ ≤ forcing_j·‖g_j‖ (or after ``CG_MAX_ITER`` iterations,
        or where a direction has no curvature left): conjugate gradients on all columns at once,
        each iteration one product of the columns still running with X̃ and one with X̃ᵀ,
        preconditioned where the block has a :class:`FoldPreconditioner` (the full fit's Hessian).
        ``cg_iterations`` then counts, per column, the iterations it took part in (what its step
        cost: see :meth:`glru.cross_validation._Engine._hands_over`).
        Not otherwise: the folds' frozen factorizations (Woodbury downdates of the full fit's
        Hessian) cost as much to apply as a product with X on madelon and saved too few
        iterations where these steps are needed (their Hessians are far from the frozen one):
        10-fold was 1.1–1.9× slower with them at C from 1 to 100. Nor by the diagonal of
        X̃ᵀDX̃ at the full fit, mixed with its mean: 10-fold column products went from 517 to
        435 on sparse 4000 × 2000 at 5 % (the intercept's eigenvalue stood apart) and from 923
        to 567 on w8a, but from 3674 to 5159 on a9a.t and from 15449 to 29571 at C = 10, from
        377 to 497 on mushrooms (one-hot features; these three forced onto these steps); LIBLINEAR's
        mix, 1 % of the diagonal, still 4750 and 27138 on a9a.t."""
        S = np.zeros_like(G)
        R = -G
        # (an infinite forcing term asks for no CG, whatever the gradient, a zero one too)
        goal = np.multiply(forcing, np.linalg.norm(G, axis=0), out=np.full(G.shape[1], np.inf),
                           where=np.isfinite(forcing))
        self.cg_iterations = np.zeros(G.shape[1], dtype=int)  # per column: the products it took part in
        # float32 products are off by about √d̃·u₃₂ of their size (terms of random signs): enough
        # for a residual ROUGH_MARGIN times larger (the early, coarse steps), twice as fast
        rough = self.rough is not None and forcing.min() >= ROUGH_MARGIN * np.sqrt(G.shape[0]) * FLOAT32_EPS
        running = np.linalg.norm(R, axis=0) > goal
        P = self._preconditioned(R, running)
        D = P.copy()
        rho = np.einsum("ij,ij->j", R, P)
        # a direction of almost no curvature (a Huber fold whose rows all lie beyond the kink) can
        # overflow a step: such a column gets no step, and its fold is left to the caller's solve
        with np.errstate(over="ignore", invalid="ignore"):
            for _ in range(CG_MAX_ITER):
                if not running.any():
                    break
                self.cg_iterations += running
                if running.all():  # (no copies of the block's columns)
                    HD = self.hessian_times(D, slice(None), rough)
                else:  # the products of the columns still running only
                    HD = np.zeros_like(D)
                    HD[:, running] = self.hessian_times(D[:, running], running, rough)
                curvature = np.einsum("ij,ij->j", D, HD)
                running &= curvature > 0  # a flat direction (no curvature left): keep the step so far
                alpha = np.divide(rho, curvature, out=np.zeros_like(rho), where=running)
                S += alpha * D
                R -= alpha * HD
                running &= np.linalg.norm(R, axis=0) > goal
                P = self._preconditioned(R, running)
                rho_new = np.einsum("ij,ij->j", R, P)
                beta = np.divide(rho_new, rho, out=np.zeros_like(rho), where=running)
                D = P + beta * D
                rho = rho_new
        S[:, ~np.all(np.isfinite(S), axis=0)] = 0.0
        return S

    def _preconditioned(self, R, running):
        """M_j⁻¹r_j for the columns ``running`` (a mask) of R, r_j elsewhere (they take no more
        iterations); R itself without a preconditioner."""
        if self.preconditioner is None or not running.any():
            return R
        P = R.copy()
        P[:, running] = self.preconditioner.solve(R[:, running], running)
        return P

    def line_search(self, S, G):
        """Step lengths t_j ∈ [0, 1]: where the objective still decreases at t = 1 (φ_j'(1) ≤ 0,
        φ_j(t) = F_j(z_j + t s_j)), the whole step; elsewhere the minimizer of φ_j on (0, 1), a
        root of φ_j' (increasing: F_j is convex) found by regula falsi in its Illinois variant
        until |φ_j'(t)| ≤ ``SLOPE_SHARE``·|φ_j'(0)| (t then gives all but about a
        ``SLOPE_SHARE``² share of the best decrease), each evaluation O(n) along the margins X̃s
        and only for the columns still searching. Bisection to 1/4096 of the step, its
        predecessor, evaluated φ' twelve times on every column whenever one needed a search:
        a fifth of the Newton–CG time on sparse 4000 × 2000. Halving from 1 until a sufficient
        decrease (Armijo) took 1/32 of the semismooth Newton steps of a squared-hinge fold whose
        rows cross their kink along the step, where the minimizer lies near ⅓: LinearSVC on dense
        2000 × 500 crawled. The chosen length must still pass the Armijo test (rounding can
        defeat the derivative's sign), failing which it is halved; 0 where no length decreases
        F_j (the fold is at its optimum up to rounding, or s_j is no descent direction)."""
        moves = self._margins(S)
        P, Q = self._penalized(self.Z), self._penalized(S)
        linear, quadratic = np.einsum("ij,ij->j", P, Q), np.einsum("ij,ij->j", Q, Q)

        def slope_at(t, cols):  # φ'(t) of the columns ``cols`` (indices or a slice), t one per column
            U, M = self.U[:, cols], moves[:, cols]
            derivatives = np.where(self.training[:, cols], self.loss.derivative(self.y[:, None], U + t * M), 0.0)
            return np.einsum("ij,ij->j", derivatives, M) + self.strengths[cols] * (linear[cols] + t * quadratic[cols])
        slope = np.einsum("ij,ij->j", G, S)
        descent = slope < 0
        with np.errstate(over="ignore", invalid="ignore"):
            t = np.where(descent, 1.0, 0.0)
            f_upper = slope_at(t, slice(None))  # every column, as views: no copies
            searching = np.flatnonzero(descent & ~(f_upper <= 0))
            lower, upper = np.zeros_like(t), np.ones_like(t)
            f_lower, kept = slope.copy(), np.zeros(t.shape, dtype=int)  # kept: the end kept last (±1)
            for _ in range(ROOT_STEPS):
                if searching.size == 0:
                    break
                j = searching
                trial = (lower[j] * f_upper[j] - upper[j] * f_lower[j]) / (f_upper[j] - f_lower[j])
                inside = (trial > lower[j]) & (trial < upper[j])  # else (rounding, overflow) bisect
                trial = np.where(inside, trial, 0.5 * (lower[j] + upper[j]))
                value = slope_at(trial, j)
                t[j] = trial
                rising = value > 0
                # Illinois: an end kept twice in a row has its value halved, so that the next
                # point moves towards it (plain regula falsi stalls on one side of a convex φ')
                f_lower[j] = np.where(rising & (kept[j] == -1), 0.5 * f_lower[j], f_lower[j])
                f_upper[j] = np.where(~rising & (kept[j] == 1), 0.5 * f_upper[j], f_upper[j])
                upper[j], f_upper[j] = np.where(rising, trial, upper[j]), np.where(rising, value, f_upper[j])
                lower[j], f_lower[j] = np.where(rising, lower[j], trial), np.where(rising, f_lower[j], value)
                kept[j] = np.where(rising, -1, 1)
                searching = j[~(np.abs(value) <= SLOPE_SHARE * np.abs(slope[j]))]
            undecided = descent.copy()
            for _ in range(MAX_HALVINGS):
                if not undecided.any():
                    break
                trial = self._objective(self.U + t * moves, self.Z + t * S)  # an overflowing trial is halved
                undecided &= ~(trial <= self.objective + ARMIJO * t * slope)
                t[undecided] *= 0.5
        t[undecided] = 0.0
        return t

    def _objective(self, U, Z):
        values = np.where(self.training, self.loss.value(self.y[:, None], U), 0.0).sum(axis=0)
        P = self._penalized(Z)
        return values + 0.5 * self.strengths * np.einsum("ij,ij->j", P, P)

    def gradients(self):
        """The folds' gradients at their current points, as columns."""
        D = np.where(self.training, self.loss.derivative(self.y[:, None], self.U), 0.0)
        G = self._transposed(D) + self.strengths * self._penalized(self.Z)
        return np.vstack([G, D.sum(axis=0)]) if self.fit_intercept else G

    def _margins(self, V, X=None, columns=slice(None)):
        """X̃v for the columns v of V (the folds ``columns``)."""
        X = self.X if X is None else X
        if self.fit_intercept:
            return np.asarray(X @ V[:-1]) + V[-1]
        return np.asarray(X @ V)

    def _transposed(self, T, columns=slice(None), XT=None):
        """Xᵀt for the columns t of T (the folds ``columns``), without the intercept's row."""
        return np.asarray((self.XT if XT is None else XT) @ T)

    def _penalized(self, V):
        return V[:-1] if self.fit_intercept else V


class ScaledFoldBlock(FoldBlock):
    """:class:`FoldBlock` for folds whose columns are scaled each its own way: fold j's rows are
    z = a_j∘x + c_j (a Pipeline's per-feature scaler fitted on the fold's training rows), and its
    point (w, b) is in those coordinates. Its products still take X as it is, shared by all
    folds: Z_j v = X(a_j∘v) + (c_j·v)1 and Z_jᵀt = a_j∘(Xᵀt) + c_j(1ᵀt); a scaler that does not
    centre (c_j = 0) keeps sparse X sparse.

    Parameters
    ----------
    X, XT, y, loss, fit_intercept, Z, dropped, strengths, rough : as :class:`FoldBlock`'s, X the
        rows before scaling.
    scales, shifts : (d, m) arrays, the columns a_j and c_j.
    """

    def __init__(self, X, XT, y, loss, fit_intercept, Z, dropped, strengths, scales, shifts, rough=None,
                 preconditioner=None):
        self.scales, self.shifts = scales, shifts  # (before the margins, which read them)
        self.centred = bool(np.any(shifts))  # (else the shifts' terms are skipped: 0)
        super().__init__(X, XT, y, loss, fit_intercept, Z, None, dropped, strengths, rough, preconditioner)

    def _margins(self, V, X=None, columns=slice(None)):
        W = V[:-1] if self.fit_intercept else V
        scaled = (self.scales[:, columns] * W).astype(W.dtype, copy=False)
        U = np.asarray((self.X if X is None else X) @ scaled)
        if self.centred:
            U += np.einsum("ij,ij->j", self.shifts[:, columns], W)
        return U + V[-1] if self.fit_intercept else U

    def _transposed(self, T, columns=slice(None), XT=None):
        XT_T = self.scales[:, columns] * np.asarray((self.XT if XT is None else XT) @ T)
        return XT_T + self.shifts[:, columns] * T.sum(axis=0) if self.centred else XT_T


class FoldPreconditioner:
    """The full fit's Hessian, factored once, as the preconditioner of the Newton–CG steps of folds
    scaled each its own way (:class:`ScaledFoldBlock`). With z the full data's scaled row and
    fold j's row z_j = ρ_j∘z + t_j, i.e. z̃_j = R_j z̃ with R_j = [[diag ρ_j, t_j], [0, 1]], fold
    j's Hessian is exactly H_j = R_j (Z̃ᵀD_jZ̃ + a_j diag(ρ_j⁻², 0)) R_jᵀ. The full fit's
    K = Z̃ᵀDZ̃ + aP differs from the bracket only by the fold's rows and curvatures (a tenth of
    them on 10-fold) and ρ_j ≈ 1, so M_j = R_j K R_jᵀ, applied as M_j⁻¹ = R_j⁻ᵀK⁻¹R_j⁻¹, leaves
    CG little to do. Without an intercept R_j = diag ρ_j (the folds' shifts must be 0 then).
    Folds of the full data's rows as they are (R_j = I: the engine's, :func:`full_fit_preconditioner`)
    have M_j = K.

    Parameters
    ----------
    factor : :func:`scipy.linalg.cho_factor` of K, (d̃, d̃).
    ratios, offsets : (d, m) arrays, ρ_j and t_j of the m folds as columns; None for folds as they are
        (no d × m arrays of ones and zeros: leave-one-out's m is n).
    """

    def __init__(self, factor, ratios=None, offsets=None):
        self.factor, self.ratios, self.offsets = factor, ratios, offsets

    def of(self, folds):
        """The preconditioner of the folds ``folds`` (indices or a mask) only."""
        if self.ratios is None:
            return self
        return FoldPreconditioner(self.factor, self.ratios[:, folds], self.offsets[:, folds])

    def of_fold(self, j):
        """v ↦ M_j⁻¹v for fold j alone (a fold's own polish, :func:`glru.solver.polish`)."""
        one = self.of([j])
        return lambda v: one.solve(np.asarray(v, dtype=float).reshape(-1, 1), np.ones(1, dtype=bool))[:, 0]

    def solve(self, R, columns):
        """M_j⁻¹r_j for the columns r_j of R, those of the folds ``columns`` (a mask)."""
        if self.ratios is None:
            return scipy.linalg.cho_solve(self.factor, R, check_finite=False)
        ratios, offsets = self.ratios[:, columns], self.offsets[:, columns]
        d = ratios.shape[0]
        V = R.copy()
        if V.shape[0] > d:  # R_j⁻¹: w ← (w − t_j b)/ρ_j
            V[:d] -= offsets * V[d]
        V[:d] /= ratios
        V = scipy.linalg.cho_solve(self.factor, V, check_finite=False)
        V[:d] /= ratios  # R_j⁻ᵀ: w ← w/ρ_j, b ← b − t_j·w
        if V.shape[0] > d:
            V[d] -= np.einsum("ij,ij->j", offsets, V[:d])
        return V


def fold_preconditioner(X, y, loss, fit_intercept, coef, intercept, strength, scales, shifts, old, single=None):
    """The :class:`FoldPreconditioner` of folds scaled by the columns of ``scales`` and ``shifts``
    (a_j, c_j: z_j = a_j∘x + c_j), from the Hessian at (coef, intercept) on the rows of X (as given)
    scaled by ``old`` = (a, c); None where it does not pay off (:func:`preconditioning_pays_off`),
    the Hessian is singular, or a fold's scaling cannot be written in terms of ``old`` (a zero
    scale, shifts without an intercept, or of sparse rows). The Gram matrix only preconditions:
    formed in float32 where rows are dense (:func:`glru.newton_centres.weighted_gram`), dense
    rows scaled in float32 (from ``single``, X's :func:`single_precision`, if made already)."""
    if not preconditioning_pays_off(X, fit_intercept, scales.shape[1]):
        return None
    a, c = old
    ratios, offsets = relative_scaling(old, (scales, shifts))
    if not (np.all(np.isfinite(ratios)) and np.all(ratios > 0)) or not fit_intercept and np.any(offsets != 0) \
            or sp.issparse(X) and np.any(c != 0):
        return None
    if sp.issparse(X):
        rows, point = X @ sp.diags(a), coef
    else:
        rows = (single[0] if single is not None else X.astype(np.float32)) * a.astype(np.float32) + \
            c.astype(np.float32)
        point = coef.astype(np.float32)
    factor = _hessian_factor(rows, _curvatures(rows, y, loss, point, intercept), fit_intercept, strength)
    return None if factor is None else FoldPreconditioner(factor, ratios, offsets)


def full_fit_preconditioner(X, y, loss, fit_intercept, coef, intercept, strength, n_folds, single=None):
    """The :class:`FoldPreconditioner` of ``n_folds`` folds of X as it is (rows left out, none
    scaled: R_j = I), from the Hessian at the full fit (coef, intercept): the Newton–CG
    steps of the engine's folds that keep no factorization (no Newton centres,
    :meth:`glru.cross_validation._Engine._newton_cg_steps`). None where it does not pay off
    (:func:`preconditioning_pays_off`), the Hessian is singular, or, for a piecewise quadratic loss,
    the full fit curves at fewer than d̃ rows: near a hard margin the folds' Hessians (other rows on
    their margins) differ from it in the directions it lacks (LinearSVC(C=0.38) on dense
    3227 × 930, 5-fold, curved at 824 rows, took 100 preconditioned iterations a step as it did
    without, 3.4 → 4.5 s). Dense rows are taken in float32 from ``single`` (X's
    :func:`single_precision`), if made already. On the drawn configurations of
    ``benchmarks/bench_cross_validation.py --random`` where it pays off, LogisticRegression(C=82) on
    sparse 3250 × 622 (5-fold) took 75 instead of 200 conjugate-gradient iterations a fold (see
    docs/benchmarks.md, forty-fourth session)."""
    if not preconditioning_pays_off(X, fit_intercept, n_folds):
        return None
    if sp.issparse(X):
        rows, point = X, coef
    else:
        rows, point = single[0] if single is not None else X.astype(np.float32), coef.astype(np.float32)
    curvatures = _curvatures(rows, y, loss, point, intercept)
    if not np.isfinite(loss.self_concordance) and np.count_nonzero(curvatures) < X.shape[1] + fit_intercept:
        return None
    factor = _hessian_factor(rows, curvatures, fit_intercept, strength)
    return None if factor is None else FoldPreconditioner(factor)


def _curvatures(rows, y, loss, coef, intercept):
    """ℓ''(y, x̃·(coef, intercept)) of every row of ``rows``."""
    return loss.second_derivative(y, np.asarray(rows @ coef, dtype=float).ravel() + intercept)


def _hessian_factor(rows, curvatures, fit_intercept, strength):
    """The Cholesky factor (:func:`scipy.linalg.cho_factor`) of the sum-form Hessian
    X̃ᵀDX̃ + strength·P, D = diag(``curvatures``), on ``rows``, its Gram matrix in float32 where rows
    are dense (it only preconditions: :func:`glru.newton_centres.weighted_gram`); None where singular."""
    K = weighted_gram(rows, curvatures, fit_intercept, single=True)
    d = rows.shape[1]
    K[np.arange(d), np.arange(d)] += strength
    try:
        # in place (K is this call's own), on Kᵀ = K, which is Fortran-ordered: no d̃ × d̃ copy
        return scipy.linalg.cho_factor(K.T, overwrite_a=True, check_finite=False)
    except np.linalg.LinAlgError:
        return None


def preconditioning_pays_off(X, fit_intercept, n_folds):
    """Whether the :class:`FoldPreconditioner` of ``n_folds`` folds of X's shape costs less than
    the products it saves: at least ``ROWS_PER_COORDINATE`` rows a coordinate (else a fold's
    optimum, and its Hessian there, move far from the full fit's when its rows are removed), a
    solve with its factor at most a Hessian product (two products with X), and the Gram matrix
    and factorization at most ``SETUP_PRODUCTS`` Hessian products a fold (:mod:`glru.costs`).
    Measured with a StandardScaler, 10-fold unless said, C from 0.1 to 10:
    - binary 20000 × 500 (5 %; 40 rows a coordinate, a solve a tenth of a product): 774 → 156
      products, 2.1–3.1 s → 1.4–1.8 s; 5-fold 1.60 → 1.20 s at C = 1, 2.45 → 1.60 s at C = 100;
    - sparse exponential 30000 × 800 (1 %, 37 rows a coordinate, a solve 0.7 of a product),
      5-fold: 1.44 → 1.13 s;
    - dense 2000 × 500 (4 rows a coordinate): 1025 → 677 products, 0.80 → 0.70 s;
    - Gaussian 10000 × 1000 (2 %; a solve 1.3 products): ±15 % in time, left out;
    - madelon.t (dense 540 × 500), synthetic sparse 4000 × 2000 (5 %) and binary 5000 × 3000
      (1 %), under two rows a coordinate: 1191 → 1107, 1587 → 1530 and 2461 → 1379 products,
      1.3–2.3× slower, left out."""
    dim = X.shape[1] + fit_intercept
    hessian_product = 2 * product_seconds(X)
    return dim <= DENSE_MAX_DIM and X.shape[0] >= ROWS_PER_COORDINATE * dim and \
        2 * DENSE_SECONDS * dim ** 2 <= hessian_product and \
        gram_seconds(X) + factor_seconds(dim) <= SETUP_PRODUCTS * n_folds * hessian_product


ROWS_PER_COORDINATE = 3
SETUP_PRODUCTS = 100


def block_columns(X, floats=None):
    """How many folds are taken together: (n + d) × folds blocks of at most ``floats`` floats
    (``BLOCK_FLOATS``), or of a quarter of X's own storage when that is more (fewer, larger
    products on large dense X)."""
    stored = X.nnz if sp.issparse(X) else X.size
    return max(1, max(BLOCK_FLOATS if floats is None else floats, stored // 4) // (2 * sum(X.shape)))


BLOCK_FLOATS = 1 << 17  # 1 MiB: the engine's blocks (a9a.t 10-fold, 6 MiB at peak; 11 MiB with 4 MiB blocks)
# 4 MiB for the Newton–CG steps of folds that keep no factorizations: a product with more columns
# costs little more than one with fewer (a CSR row's indices are read once for all of them).
# Folds scaled each its own way, where scikit-learn's own computation holds a scaled copy of the
# fold's rows anyway (the peak of a 10-fold Pipeline did not move): 10-fold in one block where
# n + d ≤ 26 000 (a product with 10 columns costs 1.4–2.5 times one with 5); with a StandardScaler,
# 10-fold Gaussian 10000 × 1000 (2 %) 0.74 → 0.58 s, binary 5000 × 3000 (1 %) 2.11 → 1.50 s,
# binary 20000 × 500 (5 %) 1.29 → 1.11 s against 1 MiB blocks. The engine's folds with no Newton
# centres (glru.cross_validation): LinearSVC 5-fold on sparse Gaussian 20000 × 500 (5 %) in one block
# instead of 3 + 2, 0.155 → 0.110 s at C = 0.1, peak 18.3 → 19.4 MiB
STEPS_BLOCK_FLOATS = 1 << 19


def scaled_fold_starts(X, y, loss, fit_intercept, dropped, strengths, scales, shifts, Z, preconditioner=None,
                       polish=False, held_out=None, gap=None, single=None):
    """Damped Newton–CG steps (:class:`ScaledFoldBlock`) for all the folds together, from the
    columns of Z, each fold until its gradient puts it within relative gap ``gap`` (``START_GAP``
    if None) of its optimum, its step predicts no decrease above the objective's rounding, or after
    ``START_STEPS`` steps. The folds go
    in blocks of :func:`block_columns` (leave-one-out on many rows needs no n × n array). Each
    step's CG solve is accurate to :func:`forcing_terms`. Only starts for each fold's own solve and
    certificate: nothing here is trusted. The gap is estimated as ‖g‖²/(2a_j), that of the dual
    point of the KKT condition where the intercept is at its optimum (see
    :meth:`glru.solver._GapMonitor.check_iterate`). With ``polish``, each fold instead goes on
    until a step no longer shrinks its gradient, and ends at the point of the smallest one: the
    rounding level of :func:`glru.solver.polish`, reached with products shared by the folds
    (one fold's polish by SciPy's CG took three Newton steps of about 46 products each on sparse
    Gaussian 10000 × 1000, 10-fold with a StandardScaler).

    ``held_out``: the folds' held-out rows (index arrays), where only their labels are needed. A
    fold past the start gap then stops only where the ball its gradient suggests, of radius
    ‖g‖/a_j (:func:`glru.bounds.primal_radius` of the estimated gap), ``SIGN_MARGIN`` times
    over, decides every held-out sign; the others are polished as above, together. A fold of 4000
    held-out rows, one of them within 1e-4 of 0, is decided at rounding level only, where each
    fold's own polish (a CG solve a Newton step, one vector at a time,
    :func:`glru.solver.solve_held_out`) took 0.1–0.3 s a fold on 5-fold binary 20000 × 500 at
    C = 100 and dense 20000 × 600.

    ``single``: :func:`single_precision` of X, if made already (by a caller that steps on X
    twice: a full fit, then its folds).

    Returns (Z, settled): the points reached, as the columns of a copy of Z, and a mask of the
    folds polished so (past the start gap, their steps not run out first)."""
    Z = np.array(Z, dtype=float)
    XT, rough = X.T, single_precision(X) if single is None else single
    size = block_columns(X, STEPS_BLOCK_FLOATS)
    settled = np.zeros(Z.shape[1], dtype=bool)
    norms = None if held_out is None else scaled_row_norms(X, held_out, scales, shifts, fit_intercept)
    for first in range(0, Z.shape[1], size):
        _steps_together(X, XT, rough, y, loss, fit_intercept, dropped, strengths, scales, shifts, Z,
                        np.arange(first, min(first + size, Z.shape[1])), preconditioner, polish, settled,
                        None if held_out is None else (held_out, norms), START_GAP if gap is None else gap)
    return Z, settled


def scaled_row_norms(X, rows, scales, shifts, fit_intercept):
    """For each fold j, the norms ‖z̃_i‖ of its rows ``rows[j]`` as it scales them, z_i = a_j∘x_i + c_j
    (and 1 for an intercept): ‖a∘x‖² + 2x·(a∘c) + ‖c‖², from X as given."""
    norms = []
    for j, chosen in enumerate(rows):
        part = X[chosen]
        squared = part.multiply(part) if sp.issparse(part) else part * part
        sq = np.asarray(squared @ scales[:, j] ** 2).ravel()
        if np.any(shifts[:, j]):
            sq += 2 * np.asarray(part @ (scales[:, j] * shifts[:, j])).ravel() + shifts[:, j] @ shifts[:, j]
        norms.append(np.sqrt(np.maximum(sq, 0.0) + fit_intercept))
    return norms


def _steps_together(X, XT, rough, y, loss, fit_intercept, dropped, strengths, scales, shifts, Z, running,
                    preconditioner, polish, settled, held_out, gap):
    """:func:`scaled_fold_starts` for the folds ``running``, their columns of Z updated in place,
    and ``settled`` set where a polish ends, past the start gap, before its steps run out;
    ``held_out``: None, or (the folds' held-out rows, their :func:`scaled_row_norms`)."""
    last, best = {}, {}  # fold → (its gradient norm, forcing term) at the last step; (smallest norm, its point)
    stalled = np.zeros(Z.shape[1], dtype=bool)  # folds whose steps' decrease fell to the objective's rounding
    for _ in range(START_STEPS + (POLISH_STEPS if polish or held_out is not None else 0)):
        if running.size == 0:
            break
        block = ScaledFoldBlock(X, XT, y, loss, fit_intercept, Z[:, running], [dropped[j] for j in running],
                                strengths[running], scales[:, running], shifts[:, running], rough,
                                None if preconditioner is None else preconditioner.of(running))
        G = block.gradients()
        norms = np.linalg.norm(G, axis=0)
        target = np.sqrt(2 * strengths[running] * gap * np.abs(block.objective))  # (the norm that stops)
        # a polish goes on past it with steps as accurate as glru.solver.polish's, each of which must halve
        # the gradient: looser steps, or any decrease, go on shrinking a gradient at its rounding level by
        # chance (E–W terms of 0.2–0.5 there: twenty steps a fold on sparse Gaussian 10000 × 1000)
        past = (norms <= target) | stalled[running]
        needed = polish | _signs_open(block.U, running, norms / strengths[running], held_out)
        polishing = past & needed
        going = ~past | polishing
        for i, j in enumerate(running):
            if j in best and not norms[i] < POLISH_SHRINK * best[j][0]:  # undone: the fold is polished
                Z[:, j], going[i] = best[j][1], False
            elif polishing[i]:
                best[j] = (norms[i], Z[:, j].copy())
        # no oversolving: a step whose residual is half the gradient that stops is accurate enough
        # (Kelley's safeguard of Eisenstat and Walker's terms, "Iterative Methods for Linear and
        # Nonlinear Equations", 1995, §6.3); the last step of a fold of sparse Gaussian
        # 10000 × 1000, 10-fold, took 69 CG iterations for a tenfold more than it needed. (A zero gradient, a fold
        # already at its optimum, e.g. of a design with no stored value: ∞, no CG, and a zero step)
        oversolving = np.divide(OVERSOLVING_SHARE * target, norms, out=np.full_like(norms, np.inf), where=norms > 0)
        forcing = np.where(going, np.maximum(forcing_terms(norms, [last.get(j) for j in running]), oversolving),
                           np.inf)  # (∞: no CG)
        forcing = np.where(polishing & going, POLISH_FORCING, forcing)
        S = block.newton_steps(G, forcing)
        decrease = -np.einsum("ij,ij->j", G, S)
        # short of the gap, a step whose decrease the objective no longer resolves ends a fold's steps, or, where
        # they must go on, starts its polish there (a fold of 5-fold binary 20000 × 500 at C = 100 stalled so
        # with its gradient 3 times the target's)
        stalling = going & ~polishing & (decrease <= 4 * EPS * np.abs(block.objective))
        for i in np.flatnonzero(stalling & needed):
            best[running[i]] = (norms[i], Z[:, running[i]].copy())
        stalled[running[stalling & needed]] = True
        going &= (decrease > 0) & ~(stalling & ~needed)
        # (past the gap, whole steps as the polish takes them: the objective no longer resolves their decrease)
        lengths = np.where(polishing | stalling, 1.0, block.line_search(S, G))
        Z[:, running[going]] += (S * lengths)[:, going]
        for j, norm, eta in zip(running, norms, forcing):
            last[j] = (norm, eta)
        settled[[j for j in running[~going] if j in best]] = True  # (a fold stopped short of the gap is not)
        running = running[going]


def _signs_open(U, running, radii, held_out):
    """Which folds ``running`` leave some held-out sign open (:func:`glru.bounds.signs_decided`)
    in the ball of radius ``SIGN_MARGIN``·``radii`` around their margins U; none where
    ``held_out`` is None."""
    if held_out is None:
        return np.zeros(len(running), dtype=bool)
    rows, norms = held_out
    open_signs = np.zeros(len(running), dtype=bool)
    for i, j in enumerate(running):
        margins, spread = U[rows[j], i], SIGN_MARGIN * radii[i] * norms[j]
        open_signs[i] = not signs_decided(margins - spread, margins + spread).all()
    return open_signs


START_GAP = 1e-13  # (the held-out signs of a fold of madelon.t with a StandardScaler need 1e-10 to 1e-14)
START_STEPS = 50
POLISH_STEPS = 10  # more, for a polish (quadratic convergence: a few steps once the gap is small)
POLISH_FORCING = 1e-4  # (glru.solver.newton_polish's CG tolerance)
POLISH_SHRINK = 0.5  # (a Newton step of that accuracy shrinks a gradient above rounding a thousandfold)
OVERSOLVING_SHARE = 0.5
SIGN_MARGIN = 2.0  # (the gap behind the certificate is evaluated, not estimated: a margin for the difference)


def single_precision(X):
    """(X, Xᵀ) in float32 for :class:`FoldBlock`'s rough products: a copy of the values only (a CSR
    matrix shares X's index arrays), half of X's."""
    if sp.issparse(X):
        rough = sp.csr_matrix((X.data.astype(np.float32), X.indices, X.indptr), shape=X.shape)
    else:
        rough = np.asarray(X, dtype=np.float32)
    return rough, rough.T
