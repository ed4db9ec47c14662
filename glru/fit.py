"""``glru.fit``: solve a regularized linear problem and keep what makes updates cheap."""

from functools import cached_property

import numpy as np
import scipy.sparse as sp

from . import updates
from ._validation import check_regression_target, check_X, check_y, encode_binary
from .certificate import (
    certificate_at, curvature_weighted_mean, margin_error, _deviation_norms,
)
from .intercept import RowSums
from .losses import get_loss
from .penalties import get_penalty
from .problem import Problem
from .solver import solve, warn_not_converged


def fit(X, y, loss="logistic", lam=0.01, kappa=0.0, fit_intercept=False, *, tol=1e-6,
        max_iter=1000, solver="auto", coef_init=None, intercept_init=0.0, stop_when=None,
        cache_certificates=True):
    """Fit ``(1/n) Σ loss(y_i, x_i·w + b) + lam/2 ‖w‖² + kappa ‖w‖₁`` (b unpenalized, fitted only
    if ``fit_intercept``) to relative duality gap ``tol``.

    Parameters
    ----------
    X : {ndarray, sparse matrix} of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
        Real targets for "squared"/"huber"; exactly two classes for the classification losses
        (the larger label, as sorted by numpy, is the positive class).
    loss : {"squared", "huber", "squared_hinge", "smoothed_hinge", "logistic"} or glru.losses.Loss
    lam, kappa : float
        L2 and L1 strengths (lam ≥ 0, kappa ≥ 0). Primal bounds need lam > 0.
    fit_intercept : bool
        Fit an unpenalized intercept b. (A penalized intercept is a constant column of X.)
    tol : float
        Relative duality gap (P − D)/P at which the solve stops.
    max_iter : int
    solver : {"auto", "newton", "liblinear", "liblinear-dual", "semismooth", "formed-newton", "l-bfgs-b"}
        See :mod:`glru.solver`.
    coef_init, intercept_init : warm start.
    stop_when : callable(Certificate) -> bool, optional
        Early exit once a question about the optimum is answered (Remark 3).
    cache_certificates : bool
        Build the O(nnz) sums that certificates of modifications need as part of the fit, so
        that every ``remove_samples`` etc. costs only its change. ``False`` defers them to first
        use (for retrains that will not be modified again).

    Returns
    -------
    Fit
    """
    loss = get_loss(loss)
    penalty = get_penalty(lam, kappa)
    X = check_X(X)
    y = check_y(y, X.shape[0])
    classes = None
    if loss.is_classification:
        y, classes = encode_binary(y)
    else:
        y = check_regression_target(y)
    problem = Problem(X, y, loss, penalty, fit_intercept)
    return Fit.from_problem(problem, tol=tol, max_iter=max_iter, solver=solver, coef_init=coef_init,
                            intercept_init=intercept_init, stop_when=stop_when, classes=classes,
                            cache_certificates=cache_certificates)


class Fit:
    """A solved problem with the sums of the paper's (17) cached, so that the certificates of
    row/feature removals and additions cost time proportional to the change.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float (0.0 when not fitted)
    dual_coef_ : ndarray of shape (n_samples,)
        α with −α_i = ℓ'(x_i·w + b), feasible for the dual (Σα = 0 with an intercept).
    classes_ : ndarray of shape (2,) or None
        Original labels for −1 and +1 (classification losses).
    n_iter_ : int
    converged_ : bool
        Whether the relative gap reached ``tol`` (False also after an early exit).
    solver_ : str
        The method that ran.
    """

    def __init__(self, problem, result, tol, classes=None, cache_certificates=True):
        self.problem, self.tol, self.classes_ = problem, tol, classes
        self.loss, self.penalty = problem.loss, problem.penalty
        self.lam, self.kappa, self.fit_intercept = problem.penalty.lam, problem.penalty.kappa, problem.fit_intercept
        self.coef_, self.intercept_ = result.coef, float(result.intercept)
        self.n_iter_, self.converged_, self.solver_ = result.n_iter, result.converged, result.method
        self.stopped_early_ = result.stopped_early
        self._cache_sums(result.evaluation)
        if cache_certificates:
            self._build_certificate_caches()

    @classmethod
    def from_problem(cls, problem, *, tol=1e-6, max_iter=1000, solver="auto", coef_init=None,
                     intercept_init=0.0, stop_when=None, classes=None, cache_certificates=True):
        if coef_init is not None:
            coef_init = np.asarray(coef_init, dtype=float)
            if coef_init.shape != (problem.d,):
                raise ValueError(f"coef_init has shape {coef_init.shape}, expected ({problem.d},).")
        result = solve(problem, coef_init, intercept_init, tol=tol, max_iter=max_iter,
                       stop_when=stop_when, method=solver)
        warn_not_converged(result, tol)
        return cls(problem, result, tol, classes, cache_certificates)

    # ---- the cached sums (17) and what the certificates need besides
    def _cache_sums(self, ev):
        """The sums (17), from the solver's last gap evaluation at no extra cost. What only
        certificates need (O(nnz) to build) is computed on first use, so that retrains that are
        never modified again do not pay for it."""
        p, w = self.problem, self.coef_
        self.dual_coef_ = ev.alpha
        self.margins_ = ev.margins
        self.Xt_alpha_ = ev.Xt_alpha
        self.loss_sum_, self.conj_sum_ = ev.loss_sum, ev.conj_sum
        self.penalty_value_ = p.penalty.value(w)
        self.penalty_conj_ = p.penalty.conjugate(ev.Xt_alpha / p.n)
        # n·(magnitude − penalty terms) = Σℓ + Σ|ℓ*| + |α|ᵀ(|X||w| + |b|): the allowance's sums
        self.magnitude_sum_ = p.n * (ev.magnitude - self.penalty_value_ - self.penalty_conj_)
        self.gap_ = ev.gap
        self.primal_, self.dual_ = ev.primal, ev.dual

    def _build_certificate_caches(self):
        caches = ["abs_margins_", "columns_"]
        if self.fit_intercept:
            caches += ["row_sums_", "sign_parts_"]
        for name in caches:
            getattr(self, name)
        for name in ("col_norms_sq", "dual_domain_terms"):
            getattr(self.problem, name)

    @cached_property
    def abs_margins_(self):
        """|x_i|·|w| + |b| per row: the scale of each margin's rounding error."""
        return np.asarray(self.problem.abs_X @ np.abs(self.coef_)).ravel() + abs(self.intercept_)

    @cached_property
    def curvature_(self):
        return self.problem.loss.second_derivative(self.problem.y, self.margins_)

    @cached_property
    def x_ref_(self):
        """The intercept bound's reference point (see :mod:`glru.intercept`)."""
        return curvature_weighted_mean(self.problem.X, self.curvature_)

    @cached_property
    def deviation_norms_(self):
        return _deviation_norms(self.problem.X, self.x_ref_)

    @cached_property
    def row_sums_(self):
        p = self.problem
        return RowSums.of(p.loss, p.y, self.margins_, self.deviation_norms_, self._margin_error(self.abs_margins_))

    @cached_property
    def sign_parts_(self):
        p = self.problem
        conj = p.loss.conjugate(p.y, -self.dual_coef_)
        return {side: updates.SignPart(p.X, self.dual_coef_, conj, side) for side in (1, -1)}


    # ---- the fitted model
    def gap(self):
        """Duality gap P(w, b) − D(α) at the fit, rounded up."""
        return self.gap_

    def relative_gap(self):
        return self.gap_ / max(abs(self.primal_), np.finfo(float).tiny)

    def decision_function(self, X):
        X = check_X(X, n_features=self.problem.d)
        return np.asarray(X @ self.coef_).ravel() + self.intercept_

    def predict(self, X):
        scores = self.decision_function(X)
        if self.classes_ is None:
            return scores
        return self.classes_[(scores > 0).astype(int)]

    def certificate(self, coef=None, intercept=None):
        """Certificate of this problem centred at (coef, intercept), the fit by default (O(nnz))."""
        coef = self.coef_ if coef is None else coef
        intercept = self.intercept_ if intercept is None else intercept
        return certificate_at(self.problem, coef, intercept)

    # ---- data modifications: certificates in time proportional to the change
    def remove_samples(self, rows):
        """Certificate for the problem without ``rows`` (eq. 18), in O(|rows| · d)."""
        return updates.remove_samples(self, rows)

    def add_samples(self, X_new, y_new):
        """Certificate for the problem with rows (X_new, y_new) appended (eq. 19), O(m · d)."""
        return updates.add_samples(self, X_new, y_new)

    def remove_features(self, cols):
        """Certificate for the problem without columns ``cols`` (eq. 20), O(|cols| · n)."""
        return updates.remove_features(self, cols)

    def add_features(self, X_cols):
        """Certificate for the problem with the n × k block ``X_cols`` appended (eq. 21), O(k · n)."""
        return updates.add_features(self, X_cols)

    def __repr__(self):
        return (f"Fit(loss={self.loss!r}, lam={self.lam!r}, kappa={self.kappa!r}, "
                f"fit_intercept={self.fit_intercept}, n_samples={self.problem.n}, "
                f"n_features={self.problem.d}, relative_gap={self.relative_gap():.2g})")

    @cached_property
    def columns_(self):
        """X in CSC (sparse) for column slicing, built once on first use."""
        X = self.problem.X
        return X.tocsc() if sp.issparse(X) else X

    def _margin_error(self, abs_margins):
        return margin_error(abs_margins, self.problem.d)
