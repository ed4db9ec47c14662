"""Certificates: what a duality gap at a centre (ŵ, b̂, α̂) proves about a modified optimum.

A :class:`Certificate` is built either from cached sums of an old fit in time proportional to a
data change (:mod:`glru.updates`, the paper's Theorem 2), or from scratch at any point of any
problem (:func:`certificate_at`, O(nnz(X))), which is how better centres are plugged in.
"""

import numpy as np
import scipy.sparse as sp

from . import bounds, intercept
from ._validation import check_X
from .duality import EPS, margin_error
from .problem import row_norms_sq


class Certificate:
    """Sound bounds on the optimum (w*, b*) of a (modified) problem.

    Parameters are the centre and the sums the bounds need; use :func:`certificate_at` or
    the modification methods of :class:`glru.Fit` rather than this constructor.

    Attributes
    ----------
    gap : float
        Duality gap of the modified problem at the centre, rounded up (never too small).
    coef_centre, intercept_centre : ndarray, float
        The centre (ŵ, b̂) the bounds are around.
    n_samples, n_features : int
        Size of the modified problem.
    """

    def __init__(self, *, gap, coef, intercept, n_samples, loss, penalty, fit_intercept,
                 Xt_alpha, col_norms_sq, dual_domain, build_problem, intercept_data=None):
        # col_norms_sq and dual_domain (the box (12) needs them) may be zero-argument callables,
        # evaluated on first use: the ball (15) alone often decides, and they cost O(d) or more
        self.gap = float(gap)
        self.coef_centre = np.asarray(coef, dtype=float)
        self.intercept_centre = float(intercept)
        self.n_samples, self.n_features = int(n_samples), self.coef_centre.shape[0]
        self.loss, self.penalty, self.fit_intercept = loss, penalty, fit_intercept
        self._Xt_alpha, self._col_norms_sq, self._dual_domain = Xt_alpha, col_norms_sq, dual_domain
        self._build_problem = build_problem
        self._intercept_data = intercept_data
        self._shifts = {}

    # ---- Theorem 1
    @property
    def radius(self):
        """Primal radius r_P (9): ‖w*_new − ŵ‖₂ ≤ r_P. Raises ValueError when lam = 0."""
        return bounds.primal_radius(self.gap, self.penalty.strong_convexity)

    @property
    def dual_radius(self):
        """Dual radius r_D (11): ‖α*_new − α̂‖₂ ≤ r_D (inf for a non-smooth loss)."""
        return bounds.dual_radius(self.gap, self.n_samples, self.loss.smoothness)

    def coef_bounds(self):
        """Per-coefficient box (12) with Remark 2's clipping, intersected with the ball (9)."""
        lower, upper = np.full(self.n_features, -np.inf), np.full(self.n_features, np.inf)
        if np.isfinite(self.loss.smoothness):
            if callable(self._dual_domain):  # built on first use (see __init__)
                self._col_norms_sq, self._dual_domain = self._col_norms_sq(), self._dual_domain()
            lower, upper = bounds.coefficient_box(
                self.penalty, self._Xt_alpha, np.sqrt(self._col_norms_sq), self.dual_radius,
                self.n_samples, *self._dual_domain,
            )
        if self.penalty.strong_convexity > 0:
            r = self.radius
            lower = np.maximum(lower, self.coef_centre - r - 4 * EPS * np.abs(self.coef_centre))
            upper = np.minimum(upper, self.coef_centre + r + 4 * EPS * np.abs(self.coef_centre))
        return lower, upper

    def intercept_bounds(self, intercept="fast"):
        """Bounds on the unpenalized intercept b* (see :mod:`glru.intercept`).

        ``intercept="fast"`` bounds it from cached sums in O(1) where the loss allows (logistic,
        squared), ``"exact"`` evaluates all n rows (tighter when the radius is large)."""
        if not self.fit_intercept:
            return 0.0, 0.0
        tau_lo, tau_hi = self._intercept_shift(intercept)
        x_ref = self._intercept_data["x_ref"]
        r = self._radius_or_inf()
        spread = r * np.linalg.norm(x_ref) * (1 + 4 * EPS) + 4 * EPS * abs(self.intercept_centre)
        return self.intercept_centre + tau_lo - spread, self.intercept_centre + tau_hi + spread

    # ---- Corollary 1
    def decision_bounds(self, X_eval, intercept="fast", box=True):
        """Sound lower and upper bounds on x·w*_new + b*_new for every row x of ``X_eval``.

        ``X_eval`` is in the modified feature space. Returns the intersection of the
        Primal-SCB (15) and the Dual-SCB (16) intervals, each of which is sound on its own;
        ``box=False`` skips the Dual-SCB (cheaper, wider), as do losses whose box does not narrow
        the ball (:attr:`glru.losses.Loss.box_narrows_ball`). With an unpenalized intercept,
        ``intercept`` chooses its bound as in :meth:`intercept_bounds`.
        """
        if intercept not in ("fast", "exact"):
            raise ValueError(f"intercept must be 'fast' or 'exact', got {intercept!r}.")
        return self._checked_bounds(check_X(X_eval, name="X_eval", n_features=self.n_features), intercept, box)

    def _checked_bounds(self, X_eval, intercept, box):
        """:meth:`decision_bounds` of an ``X_eval`` that :func:`check_X` has passed."""
        if self.fit_intercept:
            return self._decision_bounds_with_intercept(X_eval, intercept, box)
        lower, upper = np.full(X_eval.shape[0], -np.inf), np.full(X_eval.shape[0], np.inf)
        if self.penalty.strong_convexity > 0:
            row_norms = np.sqrt(row_norms_sq(X_eval))
            lower, upper = bounds.ball_decision_bounds(X_eval, self.coef_centre, self.radius, row_norms)
        if self._box_applies(box):
            box_lo, box_hi = bounds.box_decision_bounds(X_eval, *self.coef_bounds())
            lower, upper = np.maximum(lower, box_lo), np.minimum(upper, box_hi)
        return lower, upper

    def _box_applies(self, box):
        """Whether bounds asked ``box`` intersect the ball's with the box's: a smooth loss (the
        dual radius (11) is finite) whose box can narrow the ball (:attr:`Loss.box_narrows_ball`)."""
        return box and np.isfinite(self.loss.smoothness) and self.loss.box_narrows_ball

    def sign_bounds(self, X_eval, intercept="fast"):
        """The bounds of :meth:`decision_bounds` as far as the signs need them: the ball's on
        every row, intersected with the box's on the rows whose sign the ball's leave open. Sound,
        and they decide the same signs; the box needs the dual domain and a dense copy of the rows
        and narrows little the ball of a point near its optimum (sparse exponential 30000 × 800,
        5-fold: a fold's ball left 0 or 1 of its 6000 held-out signs open, and the box over all
        of them took 60 ms)."""
        if intercept not in ("fast", "exact"):
            raise ValueError(f"intercept must be 'fast' or 'exact', got {intercept!r}.")
        X_eval = check_X(X_eval, name="X_eval", n_features=self.n_features)  # (once: its rows pass as they are)
        lower, upper = self._checked_bounds(X_eval, intercept, box=False)
        rows = np.flatnonzero(~bounds.signs_decided(lower, upper))
        # (each row's bounds are its own; the intercept's bracket, shared, is cached)
        if rows.size and self._box_applies(True):
            lower[rows], upper[rows] = self._checked_bounds(X_eval[rows], intercept, box=True)
        return lower, upper

    def unshifted_decision_bounds(self, X_eval, box=True):
        """The bounds of :meth:`decision_bounds` before an unpenalized intercept's bracket
        [τ_lo, τ_hi] (:mod:`glru.intercept`) is added to them. NOT certified bounds on the decision
        values, but narrower than the certified ones wherever the bracket holds 0, as it does at a
        centre whose intercept is optimal for its coef (the bracket holds the optimal shift of
        every coef in the ball, the centre's own among them): a sign they leave open, the
        certified bounds leave open too. For skipping the bracket's passes over the rows where
        they cannot decide anything (a solver's checks take that intercept)."""
        X_eval = check_X(X_eval, name="X_eval", n_features=self.n_features)
        if not self.fit_intercept:
            return self.decision_bounds(X_eval, box=box)
        return self._decision_bounds_with_intercept(X_eval, None, box)

    def _decision_bounds_with_intercept(self, X_eval, intercept, box):
        """Certified bounds, the intercept's bracket from ``intercept`` ("fast" or "exact"), or
        None: the bounds before it (:meth:`unshifted_decision_bounds`)."""
        n_eval = X_eval.shape[0]
        if not self.penalty.strong_convexity > 0:
            return np.full(n_eval, -np.inf), np.full(n_eval, np.inf)
        tau_lo, tau_hi = self._intercept_shift(intercept) if intercept is not None else (0.0, 0.0)
        x_ref = self._intercept_data["x_ref"]
        r = self.radius
        dev_norms = _deviation_norms(X_eval, x_ref)
        lower, upper = bounds.ball_decision_bounds(X_eval, self.coef_centre, r, dev_norms, self.intercept_centre)
        if self._box_applies(box):
            # (x − x̄)·w* over the box, plus ĉ = b̂ + x̄·ŵ
            c_hat = self.intercept_centre + x_ref @ self.coef_centre
            box_lo, box_hi = _box_bounds_shifted(X_eval, x_ref, *self.coef_bounds())
            err = 2 * (self.n_features + 16) * EPS * (abs(self.intercept_centre) + np.abs(x_ref) @ np.abs(self.coef_centre))
            lower, upper = np.maximum(lower, box_lo + c_hat - err), np.minimum(upper, box_hi + c_hat + err)
        return lower + tau_lo, upper + tau_hi

    def _radius_or_inf(self):
        return self.radius if self.penalty.strong_convexity > 0 else np.inf

    def _intercept_shift(self, how):
        """[τ_lo, τ_hi] of :mod:`glru.intercept`, from cached sums (O(1)) or all rows (O(n))."""
        data = self._intercept_data
        if data.get("sums") is None:  # no sums: "fast" is the exact bracket too
            how = "exact"
        if how not in self._shifts:
            if callable(data.get("sums")):  # built on first use, like the box's sums
                data["sums"] = data["sums"]()
            self._shifts[how] = intercept.shift_interval(
                self.loss, self._radius_or_inf(), data.get("sums"), data["rows"], exact=how == "exact")
        return self._shifts[how]

    # ---- the modified problem itself
    def problem(self):
        """The modified :class:`glru.problem.Problem` (materialised on demand, O(nnz))."""
        return self._build_problem()

    def refit(self, tol=1e-6, **solver_options):
        """Exact solve of the modified problem, warm-started at the centre. Returns a :class:`glru.Fit`."""
        from .fit import Fit  # Fit builds certificates; import here to keep modules acyclic

        return Fit.from_problem(
            self.problem(), tol=tol, coef_init=self.coef_centre, intercept_init=self.intercept_centre,
            **solver_options,
        )

    def recentre(self, coef, intercept=None):
        """A certificate for the same modified problem centred at another point (O(nnz))."""
        if intercept is None:
            intercept = self.intercept_centre
        return certificate_at(self.problem(), coef, intercept)

    def __repr__(self):
        return (f"Certificate(n_samples={self.n_samples}, n_features={self.n_features}, "
                f"gap={self.gap:.3g})")


def certificate_at(problem, coef, intercept=0.0, gap_evaluation=None):
    """Certificate for ``problem`` centred at (coef, intercept), α̂ from KKT (8). Cost O(nnz(X)).

    Any centre is valid (Theorem 1 holds for every ŵ and every feasible α̂); a better centre
    gives a smaller gap and tighter bounds.
    """
    coef = np.asarray(coef, dtype=float)
    if coef.shape != (problem.d,):
        raise ValueError(f"coef has shape {coef.shape}, expected ({problem.d},).")
    intercept = float(intercept) if problem.fit_intercept else 0.0
    ev = gap_evaluation or problem.duality_gap(coef, intercept)
    intercept_data = None
    if problem.fit_intercept:
        x_ref = curvature_weighted_mean(problem.X, problem.loss.second_derivative(problem.y, ev.margins))
        rows = (problem.y, ev.margins, _deviation_norms(problem.X, x_ref),
                margin_error(problem.abs_times(np.abs(coef)) + abs(intercept), problem.d))
        # from scratch the rows are at hand: the exact bracket is the tighter one
        intercept_data = dict(x_ref=x_ref, rows=lambda: rows)
    return Certificate(
        gap=ev.gap, coef=coef, intercept=intercept, n_samples=problem.n, loss=problem.loss,
        penalty=problem.penalty, fit_intercept=problem.fit_intercept, Xt_alpha=ev.Xt_alpha,
        # (the box's column sums, O(nnz(X)) and cached on the problem, only where a bound needs them)
        col_norms_sq=lambda: problem.col_norms_sq, dual_domain=lambda: problem.dual_domain,
        build_problem=lambda: problem, intercept_data=intercept_data,
    )


def curvature_weighted_mean(X, curvature):
    """x̄ = Σ ℓ''_i x_i / Σ ℓ''_i (the plain mean where all curvatures vanish)."""
    weights = curvature if curvature.sum() > 0 else np.ones(X.shape[0])
    return np.asarray(X.T @ weights).ravel() / weights.sum()


def _deviation_norms(X, x_ref):
    """Upper bounds on ‖x_i − x̄‖₂ for every row, safe against cancellation."""
    norms_sq = row_norms_sq(X)
    sq = norms_sq - 2 * np.asarray(X @ x_ref).ravel() + x_ref @ x_ref
    scale = (np.sqrt(norms_sq) + np.linalg.norm(x_ref)) ** 2
    return np.sqrt(np.maximum(sq, 0.0) + 4 * (X.shape[1] + 16) * EPS * scale)


def _box_bounds_shifted(X_eval, shift, lower, upper):
    """MinLin/MaxLin of (x − shift) over the box, densifying sparse rows a chunk at a time: chunks
    of ``BOX_CHUNK_FLOATS`` values, of which the box bounds hold about four arrays at once (1,024 rows
    of 2,000 features held 27 MiB of a sparse 4000 × 2000 K-fold's 28 MiB peak)."""
    lo, hi = np.empty(X_eval.shape[0]), np.empty(X_eval.shape[0])
    chunk = max(1, BOX_CHUNK_FLOATS // max(X_eval.shape[1], 1))
    for start in range(0, X_eval.shape[0], chunk):
        block = X_eval[start:start + chunk]
        block = block.toarray() if sp.issparse(block) else block
        lo[start:start + chunk], hi[start:start + chunk] = bounds.box_decision_bounds(block - shift, lower, upper)
    return lo, hi


BOX_CHUNK_FLOATS = 1 << 15  # 256 KiB per dense chunk of rows
