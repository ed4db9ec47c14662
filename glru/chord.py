"""Held-out labels of one fold held as data of its own, certified by chord steps.

The folds of a Pipeline whose steps learn from the training rows (:mod:`glru.fold_refit`) are
problems of their own, started from the full fit carried over to their scaling. Theorem 1's
ball shrinks only like the square root of the duality gap: the held-out signs of a fold of
a9a.t with a StandardScaler need relative gaps of about 1e-12, a solve to rounding level
(85–150 ms a fold). The theorem of :mod:`glru.curvature` bounds the held-out values linearly
in the gradient measured in the metric of a factored Hessian M, and its centre x̃·(z − βM⁻¹g)
is second-order accurate: the same folds are decided after 3–9 chord steps z ← z − M⁻¹g (one
Hessian formed and factored, a gradient a step), in 12–100 ms.

M is the Hessian at reference margins, first the start's. Where the iterate has moved some
training margin so far from them that the bounds cannot exist (νδ beyond ``REFRESH_SHIFT``), or
the rows left open lie within the bounds' floor, the curvatures of the rows moved most are
re-evaluated (the engine's refresh: their Gram matrix added to M), at most ``MAX_REFRESHES``
times. Steps are Anderson-accelerated where that decreases the objective, else damped by the
line search of :mod:`glru.semismooth`, so that the point is a good start for the solve that takes
over where the chord does not decide every row within ``MAX_CHORD_STEPS``.
"""

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from .anderson import ANDERSON_DEPTH, Anderson
from .cross_validation import REFERENCE_SHIFT, REFRESH_MAX_FRACTION
from .curvature import FoldCurvature, gradient_error, hessian_error
from .duality import EPS, margin_error
from .held_out import HeldOutOutcome, nonzero_counts
from .newton_centres import weighted_gram
from .problem import row_norms_sq
from .semismooth import _curvatures, _line_search
from .solver import hessian_is_cheap

MAX_CHORD_STEPS = 12  # gradients; a fold of a9a.t with a StandardScaler is decided after 3–11
MAX_REFRESHES = 8  # updates of the reference Hessian at the rows moved most
REFRESH_SHIFT = 1.0  # νδ beyond which the reference is updated where the bounds stall (e^{νδ} ≈ 2.7)
# the bounds exist once γ = ‖g‖_{M⁻¹} < e^{−νδ}(1 − θ)/(νK); where that is within REACH of γ's
# rounding floor √N·‖e‖ at the first reference, the fold would be solved to rounding level first,
# and its margins moved by δ ≈ 3–7 from a stale reference shrink the target e^{νδ}-fold: a solve does
# it for less (w8a with a StandardScaler: 150, four references and twelve steps decide no fold,
# 0.4 s each; a9a.t 10⁴, mushrooms 7·10³, madelon.t 2·10³)
REACH = 1e3


def chord_applies(problem):
    """Whether the curvature theorem holds for ``problem`` (a loss with |ℓ‴| ≤ νℓ″) and a
    reference Hessian is cheap (:func:`glru.solver.hessian_is_cheap`)."""
    return np.isfinite(problem.loss.self_concordance) and hessian_is_cheap(problem)


def chord_outcome(problem, coef, intercept, X_test, still_open):
    """Chord steps on ``problem`` from (coef, intercept) until the bounds of
    :class:`glru.curvature.FoldCurvature` on the held-out rows ``X_test`` leave no row open.

    Parameters
    ----------
    problem : glru.problem.Problem with :func:`chord_applies`.
    coef, intercept : the start.
    X_test : ndarray or CSR, the held-out rows (the columns of ``problem.X``).
    still_open : callable(lower, upper) -> bool mask of the rows these bounds leave open.

    Returns
    -------
    (outcome, (coef, intercept)) : a :class:`~glru.held_out.HeldOutOutcome` (bounds, their
    centres, the centre point; ``solved``) where every row is decided, else None; and the last
    point, where a solve may go on.
    """
    steps = _ChordSteps(problem, X_test)
    z = problem.join(coef, intercept)
    if not steps.refer(z):
        return None, (coef, intercept)
    gradient, gradient_error, shift = steps.gradient(z)
    if not steps.within_reach(gradient_error):
        return None, (coef, intercept)
    anderson, value = Anderson(ANDERSON_DEPTH), problem.fun(z)
    for _ in range(MAX_CHORD_STEPS):
        step = steps.solve(gradient)
        bounds = steps.bounds(z, gradient, gradient_error, step, shift, still_open)
        if bounds is not None:
            left = still_open(bounds.lower, bounds.upper)
            if not left.any():
                return steps.outcome(z - bounds.beta * step, bounds), problem.split(z)
        stalled = bounds is None or bool(np.any(left & (np.abs(bounds.centre) <= bounds.floor)))
        if stalled and problem.loss.self_concordance * shift > REFRESH_SHIFT and steps.refreshes < MAX_REFRESHES:
            if not steps.refresh(z):
                break
            step = steps.solve(gradient)
            anderson.restart()
        moved = _next_point(problem, z, value, gradient, step, anderson)
        if moved is None:
            break
        z, value = moved
        gradient, gradient_error, shift = steps.gradient(z)
    return None, problem.split(z)


def _next_point(problem, z, value, gradient, step, anderson):
    """(point, objective there) after the chord step −``step`` from z (objective ``value``):
    Anderson-accelerated where that decreases the objective, else damped by the line search (None
    where no length decreases it)."""
    proposed = anderson.next(z, -step)
    proposed_value = problem.fun(proposed)
    if proposed_value < value:
        return proposed, proposed_value
    anderson.restart()
    length = _line_search(problem, z, -step, -float(gradient @ step))
    if length == 0.0:
        return None
    point = z - length * step
    return point, problem.fun(point)


def _stacked(X, X_test):
    """The rows of X, then those of X_test: a view where X_test's follow X's in one C-ordered
    array (a fold's rows as scikit-learn's adapters take them, :class:`sklearn_ext.cross_validation._FoldRows`),
    else a copy (a stack of 4000 × 50 a fold took 0.5–0.8 ms in fresh pages). The view reads
    X's memory and then X_test's, and the caller keeps X_test alive with it."""
    if sp.issparse(X):
        return sp.vstack([X, X_test], format="csr")
    follows = X.flags.c_contiguous and X_test.flags.c_contiguous and X.dtype == X_test.dtype and \
        X.shape[1] == X_test.shape[1] and X_test.ctypes.data == X.ctypes.data + X.nbytes
    if follows:
        return np.lib.stride_tricks.as_strided(X, shape=(X.shape[0] + X_test.shape[0], X.shape[1]), writeable=False)
    return np.vstack([X, X_test])


class _ChordSteps:
    """One fold's reference Hessian (its factor and :class:`FoldCurvature`) and the sound
    gradients the theorem takes (mean form: ℓ_i/n and λ in place of the sum form's ℓ_i and a,
    the same theorem for the objective divided by n)."""

    def __init__(self, problem, X_test):
        self.problem, self.X_test = problem, X_test
        X = problem.X
        self.rows = _stacked(X, X_test)
        self.test = np.arange(X.shape[0], self.rows.shape[0])
        self.row_norms = np.sqrt(row_norms_sq(self.rows))
        self.train_norms = np.sqrt(self.row_norms[:X.shape[0]] ** 2 + problem.fit_intercept)  # ‖x̃_i‖
        self.terms = X.getnnz(axis=1) if sp.issparse(X) else X.shape[1]
        # the optimum's weights of the columns no training row holds are exactly 0 (their
        # gradient is λz_j): the held-out values are bounded without those entries
        self.unseen = np.flatnonzero(nonzero_counts(X) == 0)
        self.refreshes = 0

    def refer(self, z):
        """Form and factor the Hessian at z as the reference (its margins u); False where it cannot
        be factored or is too ill-conditioned to certify with."""
        problem = self.problem
        curvatures = _curvatures(problem, z)
        self.margins = problem.margins(*problem.split(z)).copy()
        dim = problem.d + problem.fit_intercept
        tau = hessian_error(float(curvatures @ self.train_norms ** 2), problem.penalty.lam, problem.n, dim)
        return self._factor(problem.hessian(curvatures), tau)

    def refresh(self, z):
        """Re-evaluate the reference curvatures of the training rows z has moved most from theirs
        (by more than ``REFERENCE_SHIFT``, at most a ``REFRESH_MAX_FRACTION`` of the rows): their
        Gram matrix added to UᵀU and factored again, as the engine refreshes a fold
        (`glru.cross_validation._Engine._refresh`), a tenth of a Hessian's cost. τ grows by
        :func:`hessian_error` of trace(UᵀU) + Σ_R |ΔD_i|‖x̃_i‖². Returns whether the new
        reference can certify."""
        problem = self.problem
        self.refreshes += 1  # attempts, failed ones included: bounds the work
        margins = problem.margins(*problem.split(z))
        moved = np.abs(margins - self.margins)
        count = max(1, int(REFRESH_MAX_FRACTION * moved.size))
        threshold = max(REFERENCE_SHIFT, float(np.partition(moved, moved.size - count)[moved.size - count]))
        rows = np.flatnonzero(moved > threshold)
        if not rows.size:
            return False
        curvature, y = problem.loss.second_derivative, problem.y
        change = (curvature(y[rows], margins[rows]) - curvature(y[rows], self.margins[rows])) / problem.n
        hessian = weighted_gram(problem.X, change, problem.fit_intercept, rows)
        hessian += self.upper.T @ self.upper
        dim = hessian.shape[0]
        scale = float(np.vdot(self.upper, self.upper)) + float(np.abs(change) @ self.train_norms[rows] ** 2)
        self.margins[rows] = margins[rows]
        return self._factor(hessian, self.tau + hessian_error(scale, 0.0, rows.size + dim, dim))

    def _factor(self, hessian, tau):
        """Factor the reference Hessian (τ ≥ its distance to the exact one) and build its
        :class:`FoldCurvature`; False where it is not positive definite or too ill-conditioned."""
        try:
            self.upper = scipy.linalg.cholesky(hessian, overwrite_a=True, check_finite=True)
        except (np.linalg.LinAlgError, ValueError):
            return False
        problem, self.tau = self.problem, tau
        self.curvature = FoldCurvature(self.upper, self.rows, np.arange(problem.n), self.test, problem.fit_intercept,
                                       tau, problem.loss.self_concordance, self.row_norms, None,
                                       self.unseen)
        return self.curvature.usable

    def gradient(self, z):
        """(∇f(z) as computed, a bound on its error's 2-norm, δ ≥ max over the training rows of
        |x̃_i·z − u_i|, u the reference margins): the margins' rounding enters δ and the
        gradient's error, with the sums' γ and the penalty term's rounding."""
        problem = self.problem
        w, b = problem.split(z)
        margins = problem.margins(w, b)
        slopes = problem.loss.derivative(problem.y, margins) / problem.n
        gradient = problem.XT @ slopes + problem.penalty.lam * w
        if problem.fit_intercept:
            gradient = np.append(gradient, slopes.sum())
        w_norm = np.linalg.norm(w)
        errors = margin_error(self.row_norms[:problem.n] * w_norm + abs(b), self.terms)
        # (1 + 4u: the rounding of the difference and the sum)
        shift = float(np.max(np.abs(margins - self.margins) + errors, initial=0.0)) * (1 + 4 * EPS)
        error = gradient_error(slopes, errors, self.train_norms, problem.loss.smoothness / problem.n,
                               problem.penalty.lam, w_norm, problem.d)
        return gradient, error, shift

    def within_reach(self, gradient_error):
        """Whether the bounds could exist (γ < (1 − θ)/(νK), at δ = 0) at a γ of at least ``REACH``
        times its rounding floor √N·‖e‖, e the gradient's error."""
        curvature = self.curvature
        if curvature.K == 0:  # (no training row with a nonzero value: the Hessian is the penalty's alone)
            return True
        target = (1 - curvature.theta) / (self.problem.loss.self_concordance * curvature.K)
        return target >= REACH * np.sqrt(curvature.N) * gradient_error

    def solve(self, gradient):
        """The chord step M⁻¹g."""
        return scipy.linalg.cho_solve((self.upper, False), gradient)

    def bounds(self, z, gradient, gradient_error, step, shift, still_open):
        w, b = self.problem.split(z)
        values = np.asarray(self.X_test @ w).ravel() + b
        return self.curvature.bounds(z, gradient, gradient_error, step, values, shift, refine=still_open)

    def outcome(self, point, bounds):
        coef, intercept = self.problem.split(point)
        return HeldOutOutcome(bounds.lower, bounds.upper, bounds.centre, coef, intercept, solved=True)
