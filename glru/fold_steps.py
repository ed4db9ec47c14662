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
import scipy.sparse as sp

ARMIJO = 1e-4  # sufficient decrease of a backtracked step, as a share of the linear prediction
MAX_HALVINGS = 30
ROOT_STEPS = 12  # evaluations of φ' at most, in search of a step length's minimizer
SLOPE_SHARE = 1e-3  # of |φ'(0)| that |φ'(t)| must fall to (see FoldBlock.line_search)
CG_MAX_ITER = 100  # per step; the forcing term decides when a step is accurate enough
FLOAT32_EPS = float(np.finfo(np.float32).eps)
ROUGH_MARGIN = 64.0  # madelon (d̃ = 501): float32 products while forcing ≥ 8.5e-5; 10-fold 16–20 % faster


class FoldBlock:
    """m folds of (X, y) at their current points: margins, objective, Hessian-vector products.

    Parameters
    ----------
    X, XT : the data (ndarray or CSR) and its transpose, kept by the caller.
    y, loss : targets and :class:`glru.losses.Loss`.
    fit_intercept : bool
    Z : (d̃, m) array, the folds' current points (w, b) as columns.
    U : (n, m) array, their margins X̃Z.
    dropped : list of m index arrays, the rows outside each fold's training set.
    strengths : (m,) array, a_j.
    rough : (X, XT) in float32 (:func:`single_precision`), or None
        For the conjugate-gradient products of steps whose forcing terms are coarse enough.
    """

    def __init__(self, X, XT, y, loss, fit_intercept, Z, U, dropped, strengths, rough=None):
        self.X, self.XT, self.y, self.loss, self.fit_intercept = X, XT, y, loss, fit_intercept
        self.rough = rough
        self.Z, self.U, self.strengths = Z, U, strengths
        self.training = np.ones(U.shape, dtype=bool)
        for j, rows in enumerate(dropped):
            self.training[rows, j] = False
        self.curvatures = np.where(self.training, loss.second_derivative(y[:, None], U), 0.0)
        self.objective = self._objective(U, Z)

    def hessian_times(self, V, columns=slice(None), rough=False):
        """The Hessians of the folds ``columns`` (all, or a mask) times the columns of V:
        X̃ᵀ(D_j ∘ X̃v_j) + a_j P v_j; with ``rough``, the two products with X in float32."""
        if rough:
            X, XT = self.rough
            T = self.curvatures[:, columns] * self._margins(V.astype(np.float32), X)
            HV = np.asarray(XT @ T.astype(np.float32), dtype=float)
        else:
            T = self.curvatures[:, columns] * self._margins(V)
            HV = np.asarray(self.XT @ T)
        HV += self.strengths[columns] * self._penalized(V)
        return np.vstack([HV, T.sum(axis=0)]) if self.fit_intercept else HV

    def newton_steps(self, G, forcing):
        """Steps s_j with ‖H_j s_j + g_j‖ ≤ forcing_j·‖g_j‖ (or after ``CG_MAX_ITER`` iterations,
        or where a direction has no curvature left): conjugate gradients on all columns at once,
        each iteration one product of the columns still running with X̃ and one with X̃ᵀ. Not
        preconditioned: the folds' frozen factorizations (Woodbury downdates of the full fit's
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
        goal = forcing * np.linalg.norm(G, axis=0)
        # float32 products are off by about √d̃·u₃₂ of their size (terms of random signs): enough
        # for a residual ROUGH_MARGIN times larger (the early, coarse steps), twice as fast
        rough = self.rough is not None and forcing.min() >= ROUGH_MARGIN * np.sqrt(G.shape[0]) * FLOAT32_EPS
        running = np.linalg.norm(R, axis=0) > goal
        D = R.copy()
        rho = np.einsum("ij,ij->j", R, R)
        # a direction of almost no curvature (a Huber fold whose rows all lie beyond the kink) can
        # overflow a step: such a column gets no step, and its fold is left to the caller's solve
        with np.errstate(over="ignore", invalid="ignore"):
            for _ in range(CG_MAX_ITER):
                if not running.any():
                    break
                HD = np.zeros_like(D)  # the products of the columns still running only
                HD[:, running] = self.hessian_times(D[:, running], running, rough)
                curvature = np.einsum("ij,ij->j", D, HD)
                running &= curvature > 0  # a flat direction (no curvature left): keep the step so far
                alpha = np.divide(rho, curvature, out=np.zeros_like(rho), where=running)
                S += alpha * D
                R -= alpha * HD
                rho_new = np.einsum("ij,ij->j", R, R)
                running &= np.sqrt(rho_new) > goal
                beta = np.divide(rho_new, rho, out=np.zeros_like(rho), where=running)
                D = R + beta * D
                rho = rho_new
        S[:, ~np.all(np.isfinite(S), axis=0)] = 0.0
        return S

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

    def _margins(self, V, X=None):
        X = self.X if X is None else X
        if self.fit_intercept:
            return np.asarray(X @ V[:-1]) + V[-1]
        return np.asarray(X @ V)

    def _penalized(self, V):
        return V[:-1] if self.fit_intercept else V


def single_precision(X):
    """(X, Xᵀ) in float32 for :class:`FoldBlock`'s rough products: a copy of the values only (a CSR
    matrix shares X's index arrays), half of X's."""
    if sp.issparse(X):
        rough = sp.csr_matrix((X.data.astype(np.float32), X.indices, X.indptr), shape=X.shape)
    else:
        rough = np.asarray(X, dtype=np.float32)
    return rough, rough.T
