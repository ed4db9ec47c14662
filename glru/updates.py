"""Theorem 2: duality gaps of a modified problem from a fit's cached sums (17), in time
proportional to the change — eqs. (18) rows removed, (19) rows added, (20) features removed,
(21) features added — and the certificates built on them.

Centres are the paper's: ŵ = the old coefficients (new features from KKT (7)), α̂ = the old dual
(new rows from KKT (8)). With an unpenalized intercept α̂ must also satisfy Σα̂ = 0, which
removing or adding rows breaks. We restore it by shrinking the entries on the surplus side
by a common factor (1 − s), s ∈ [0, 1], which keeps them in dom ℓ* (0 ∈ dom ℓ*). Its effect
on Xᵀα̂ is −s·Xᵀα_± (cached), and by convexity of ℓ* with ℓ*(0) = 0,
ℓ*(−(1 − s)α_i) ≤ (1 − s)ℓ*(−α_i), so the conjugate sum is bounded above by −s times the
cached sum of the shrunk side: the gap is over-estimated, never under-estimated.
"""

import numpy as np
import scipy.sparse as sp

from ._validation import check_X, check_indices, check_regression_target, check_y, encode_binary
from .certificate import (
    Certificate, _deviation_norms, curvature_weighted_mean,
)
from .duality import EPS, sound_gap
from .intercept import RowSums
from .problem import Problem, as_dense, col_norms_sq, dual_domain_from_terms, dual_domain_terms


class SignPart:
    """Cached sums over the entries of α of one sign: Σα, Xᵀα and Σℓ*(−α) restricted to them."""

    def __init__(self, X, alpha, conj_terms, side):
        mask = alpha > 0 if side > 0 else alpha < 0
        part = np.where(mask, alpha, 0.0)
        self.mass = part.sum()
        self.Xt = np.asarray(X.T @ part).ravel()
        self.conj = conj_terms[mask].sum()


def _rebalance(total, parts):
    """Shrink the side holding the surplus ``total`` (a SignPart-like triple of sums) so that
    Σα̂ = 0; returns the changes to Xᵀα̂ and to the conjugate sum (an upper bound)."""
    if total == 0.0:
        return 0.0, 0.0
    part = parts[1 if total > 0 else -1]
    scale = min(total / part.mass, 1.0) if part.mass != 0 else 0.0
    return -scale * part.Xt, -scale * part.conj


class _Delta:
    """Sums of a block of rows (removed or added) that enter (18)/(19)."""

    def __init__(self, X_rows, y_rows, margins, alpha, loss):
        self.loss_sum = loss.value(y_rows, margins).sum()
        conj = loss.conjugate(y_rows, -alpha)
        self.conj_sum = conj.sum()
        self.Xt_alpha = np.asarray(X_rows.T @ alpha).ravel()
        self.alpha_sum = alpha.sum()
        self.abs_conj = np.abs(conj).sum()
        self.parts = {side: SignPart(X_rows, alpha, conj, side) for side in (1, -1)}
        self.col_norms_sq = col_norms_sq(X_rows)


class _Combined:
    def __init__(self, fit_part, delta_part, sign):
        self.mass = fit_part.mass + sign * delta_part.mass
        self.Xt = fit_part.Xt + sign * delta_part.Xt
        self.conj = fit_part.conj + sign * delta_part.conj


def _row_change_certificate(fit, sign, delta, n_new, intercept_data, build_problem):
    """(18) for sign = −1 (rows removed), (19) for sign = +1 (rows added)."""
    p = fit.problem
    loss_sum = fit.loss_sum_ + sign * delta.loss_sum
    conj_sum = fit.conj_sum_ + sign * delta.conj_sum
    Xt_alpha = fit.Xt_alpha_ + sign * delta.Xt_alpha
    if p.fit_intercept:
        total = fit.dual_coef_.sum() + sign * delta.alpha_sum
        parts = {s: _Combined(fit.sign_parts_[s], delta.parts[s], sign) for s in (1, -1)}
        d_Xt, d_conj = _rebalance(total, parts)
        Xt_alpha, conj_sum = Xt_alpha + d_Xt, conj_sum + d_conj
    pen_conj = p.penalty.conjugate(Xt_alpha / n_new)
    primal = loss_sum / n_new + fit.penalty_value_
    dual = -conj_sum / n_new - pen_conj
    magnitude = (fit.magnitude_sum_ + delta.magnitude) / n_new + fit.penalty_value_ + pen_conj
    gap = sound_gap(primal, dual, magnitude, n_new, p.d)
    col_norms_sq, dual_domain = p.column_summaries_after(delta.col_norms_sq, delta.dom, sign, n_new)
    return Certificate(
        gap=gap, coef=fit.coef_, intercept=fit.intercept_, n_samples=n_new, loss=p.loss, penalty=p.penalty,
        fit_intercept=p.fit_intercept, Xt_alpha=Xt_alpha, col_norms_sq=col_norms_sq,
        dual_domain=dual_domain, build_problem=build_problem,
        intercept_data=intercept_data,
    )


def remove_samples(fit, rows):
    p = fit.problem
    rows = check_indices(rows, p.n, "rows")
    keep = np.ones(p.n, dtype=bool)
    keep[rows] = False
    # dense: the update costs O(Δ·d) anyway, and dense arithmetic on a few rows avoids the
    # per-call overhead of building sparse temporaries
    X_rows, y_rows = as_dense(p.X[rows]), p.y[rows]
    delta = _Delta(X_rows, y_rows, fit.margins_[rows], fit.dual_coef_[rows], p.loss)
    delta.magnitude = 0.0  # the fit's magnitude already bounds every kept term
    delta.dom = dual_domain_terms(X_rows, p.loss, y_rows)
    intercept_data = None
    if p.fit_intercept:
        removed = RowSums.of(p.loss, y_rows, fit.margins_[rows], fit.deviation_norms_[rows],
                             fit._margin_error(fit.abs_margins_[rows]), edges=fit.row_sums_.edges)
        intercept_data = dict(x_ref=fit.x_ref_, sums=fit.row_sums_ - removed, rows=lambda: (
            p.y[keep], fit.margins_[keep], fit.deviation_norms_[keep], fit._margin_error(fit.abs_margins_[keep])))

    def build_problem():
        return _checked_problem(p.X[keep], p.y[keep], p)

    return _row_change_certificate(fit, -1, delta, p.n - rows.shape[0], intercept_data, build_problem)


def add_samples(fit, X_new, y_new):
    p = fit.problem
    X_new = check_X(X_new, name="X_new", n_features=p.d)
    y_new = check_y(y_new, X_new.shape[0], name="y_new", x_name="X_new")
    y_new = encode_binary(y_new, fit.classes_, "y_new")[0] if p.loss.is_classification \
        else check_regression_target(y_new, "y_new")
    block = as_dense(X_new)
    margins = block @ fit.coef_ + fit.intercept_
    alpha = -p.loss.derivative(y_new, margins)  # KKT (8) at the old optimum
    delta = _Delta(block, y_new, margins, alpha, p.loss)
    abs_margins = np.abs(block) @ np.abs(fit.coef_) + abs(fit.intercept_)
    delta.magnitude = p.loss.value(y_new, margins).sum() + delta.abs_conj + np.abs(alpha) @ abs_margins
    delta.dom = dual_domain_terms(block, p.loss, y_new)
    intercept_data = None
    if p.fit_intercept:
        new_rows = (y_new, margins, _deviation_norms(X_new, fit.x_ref_), fit._margin_error(abs_margins))
        intercept_data = dict(x_ref=fit.x_ref_, sums=fit.row_sums_ + RowSums.of(p.loss, *new_rows, edges=fit.row_sums_.edges), rows=lambda: tuple(
            np.concatenate([old, new]) for old, new in zip(
                (p.y, fit.margins_, fit.deviation_norms_, fit._margin_error(fit.abs_margins_)), new_rows)))

    def build_problem():
        X = sp.vstack([p.X, X_new], format="csr") if sp.issparse(p.X) or sp.issparse(X_new) \
            else np.vstack([p.X, X_new])
        return _checked_problem(X, np.concatenate([p.y, y_new]), p)

    return _row_change_certificate(fit, +1, delta, p.n + X_new.shape[0], intercept_data, build_problem)


def remove_features(fit, cols):
    """(20): ŵ = w without ``cols``, α̂ = α. O(n·|cols|) plus O(d) to copy the kept entries."""
    p = fit.problem
    cols = check_indices(cols, p.d, "cols")
    keep = np.ones(p.d, dtype=bool)
    keep[cols] = False
    X_cols = as_dense(fit.columns_[:, cols])
    w_cols = fit.coef_[cols]
    margins = fit.margins_ - X_cols @ w_cols
    pen_removed = p.penalty.value_terms(w_cols).sum()
    conj_removed = p.penalty.conjugate_terms(fit.Xt_alpha_[cols] / p.n).sum()
    loss_terms = p.loss.value(p.y, margins)
    primal = loss_terms.mean() + fit.penalty_value_ - pen_removed
    pen_conj = fit.penalty_conj_ - conj_removed
    dual = -fit.conj_sum_ / p.n - pen_conj
    magnitude = (loss_terms.sum() + fit.magnitude_sum_) / p.n + fit.penalty_value_ + fit.penalty_conj_
    gap = sound_gap(primal, dual, magnitude, p.n, p.d)
    coef = fit.coef_[keep]
    intercept_data = None
    if p.fit_intercept:
        deviations = X_cols - fit.x_ref_[cols]
        dev_sq = fit.deviation_norms_ ** 2 - np.einsum("ij,ij->i", deviations, deviations)
        rows_now = (p.y, margins, np.sqrt(np.maximum(dev_sq, 0.0) + 4 * (p.d + 16) * EPS * fit.deviation_norms_ ** 2),
                    fit._margin_error(fit.abs_margins_))
        intercept_data = dict(x_ref=fit.x_ref_[keep], sums=RowSums.of(p.loss, *rows_now), rows=lambda: rows_now)
    dom = {k: v[keep] for k, v in fit.problem.dual_domain_terms.items()}

    def build_problem():
        X = p.X[:, np.flatnonzero(keep)]
        return Problem(X, p.y, p.loss, p.penalty, p.fit_intercept)

    return Certificate(
        gap=gap, coef=coef, intercept=fit.intercept_, n_samples=p.n, loss=p.loss, penalty=p.penalty,
        fit_intercept=p.fit_intercept, Xt_alpha=fit.Xt_alpha_[keep], col_norms_sq=p.col_norms_sq[keep],
        dual_domain=dual_domain_from_terms(dom, p.n), build_problem=build_problem, intercept_data=intercept_data,
    )


def add_features(fit, X_cols):
    """(21): α̂ = α, new coefficients from KKT (7), ŵ_B ∈ ∂ρ*(X_Bᵀα/n). O(n·k)."""
    p = fit.problem
    X_cols = check_X(X_cols, name="X_cols")
    if X_cols.shape[0] != p.n:
        raise ValueError(f"X_cols has {X_cols.shape[0]} rows, expected {p.n} (one per training row).")
    Xt_alpha_new = np.asarray(X_cols.T @ fit.dual_coef_).ravel()
    s = Xt_alpha_new / p.n
    if p.penalty.lam > 0:
        w_new = p.penalty.conjugate_gradient(s)
    else:
        w_new = np.zeros_like(s)  # a point of ∂ρ*(s) when |s| ≤ kappa; otherwise ρ*(s) = inf below
    dense_cols = X_cols.toarray() if sp.issparse(X_cols) else X_cols
    margins = fit.margins_ + dense_cols @ w_new
    loss_terms = p.loss.value(p.y, margins)
    pen_new = p.penalty.value_terms(w_new).sum()
    conj_new = p.penalty.conjugate_terms(s).sum()
    primal = loss_terms.mean() + fit.penalty_value_ + pen_new
    pen_conj = fit.penalty_conj_ + conj_new
    dual = -fit.conj_sum_ / p.n - pen_conj
    abs_margins = fit.abs_margins_ + np.abs(dense_cols) @ np.abs(w_new)
    magnitude = (loss_terms.sum() + fit.magnitude_sum_ + np.abs(fit.dual_coef_) @ (abs_margins - fit.abs_margins_)) / p.n \
        + fit.penalty_value_ + pen_new + pen_conj
    gap = sound_gap(primal, dual, magnitude, p.n, p.d + X_cols.shape[1]) if np.isfinite(dual) else np.inf
    intercept_data = None
    if p.fit_intercept:
        x_ref_new = curvature_weighted_mean(dense_cols, fit.curvature_)
        deviations = dense_cols - x_ref_new
        dev_sq = fit.deviation_norms_ ** 2 + np.einsum("ij,ij->i", deviations, deviations)
        rows_now = (p.y, margins, np.sqrt(dev_sq) * (1 + 8 * EPS),
                    fit._margin_error(abs_margins) * (p.d + X_cols.shape[1] + 16) / (p.d + 16))
        intercept_data = dict(x_ref=np.concatenate([fit.x_ref_, x_ref_new]), sums=RowSums.of(p.loss, *rows_now),
                              rows=lambda: rows_now)
    dom_new = dual_domain_terms(X_cols, p.loss, p.y)
    dom = {k: np.concatenate([fit.problem.dual_domain_terms[k], dom_new[k]]) for k in dom_new}

    def build_problem():
        X = sp.hstack([p.X, X_cols], format="csr") if sp.issparse(p.X) or sp.issparse(X_cols) \
            else np.hstack([p.X, X_cols])
        return Problem(X, p.y, p.loss, p.penalty, p.fit_intercept)

    return Certificate(
        gap=gap, coef=np.concatenate([fit.coef_, w_new]), intercept=fit.intercept_, n_samples=p.n, loss=p.loss,
        penalty=p.penalty, fit_intercept=p.fit_intercept, Xt_alpha=np.concatenate([fit.Xt_alpha_, Xt_alpha_new]),
        col_norms_sq=np.concatenate([p.col_norms_sq, col_norms_sq(X_cols)]), dual_domain=dual_domain_from_terms(dom, p.n),
        build_problem=build_problem, intercept_data=intercept_data,
    )


def _checked_problem(X, y, template):
    if template.loss.is_classification and template.fit_intercept and np.unique(y).shape[0] < 2:
        raise ValueError("The modified data has a single class: the unpenalized intercept has no finite optimum.")
    return Problem(X, y, template.loss, template.penalty, template.fit_intercept)

