"""Exact refits for the references: scikit-learn estimators solved to their exact optimum."""

import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.utils.metaestimators import available_if

import glru
from glru.multinomial import polish_multinomial, solve_multinomial
from glru.solver import polish
from sklearn_ext._adapters import linear_model


def exact_estimator(estimator, X, y):
    """``estimator`` fitted on (X, y) by an independent cold solve to relative gap 1e-14, then
    Newton steps until the gradient stops shrinking (an exact refit, to rounding)."""
    pre, final = (estimator[:-1], estimator[-1]) if isinstance(estimator, Pipeline) else (None, estimator)
    if pre is not None:
        pre = clone(pre).fit(X)
        X = pre.transform(X)
    model = linear_model(final)
    classes = np.unique(y)
    if classes.size == 2:
        coef, intercept = _exact_binary(model, X, y)
    elif model.multiclass == "ovr":  # one problem per class against the rest
        solutions = [_exact_binary(model, X, np.where(y == c, 1, -1)) for c in classes]
        coef, intercept = np.vstack([c for c, _ in solutions]), np.array([b for _, b in solutions])
    elif model.multiclass == "multinomial" and model.l1_ratio == 0:
        coef, intercept = _exact_multinomial(model, X, np.searchsorted(classes, y), classes.size)
    else:
        raise ValueError(f"no exact reference for {model.multiclass} multiclass fits with l1_ratio={model.l1_ratio}")
    fitted = model.fitted(coef, intercept, classes, X.shape[1])
    return fitted if pre is None else make_pipeline(*[s for _, s in pre.steps], fitted)


def _exact_binary(model, X, y):
    penalty = model.penalty_for(X.shape[0])
    fit = glru.fit(model.design(X), y, loss=model.loss, lam=penalty.lam, kappa=penalty.kappa,
                   fit_intercept=model.fit_intercept, tol=1e-14)
    return polish(fit.problem, fit.coef_, fit.intercept_)  # past what a gap can resolve


def _exact_multinomial(model, X, codes, n_classes):
    """An independent cold solve of the multinomial problem to relative gap 1e-13, polished by
    Newton steps until the gradient stops shrinking (symmetric coef and intercept)."""
    result = solve_multinomial(X, codes, n_classes, model.penalty_for(X.shape[0]).lam, model.fit_intercept,
                               tol=1e-13, polish=False)
    # polished unconditionally (solve_multinomial's own polish keeps the unpolished point when the
    # polished one's gap is not smaller, which at this level is rounding noise)
    coef, intercept = polish_multinomial(result.problem, result.coef, result.intercept)
    gap = result.problem.duality_gap(coef, intercept)
    if not (result.converged or gap.converged(1e-13)):  # (a reference short of the optimum is no reference)
        warnings.warn(f"the exact multinomial refit stopped at relative gap {gap.relative_gap:.3g}", ConvergenceWarning)
    return coef, intercept


class ExactRefit(ClassifierMixin, BaseEstimator):
    """``estimator``, but every fit is :func:`exact_estimator`: scikit-learn's own model
    selection tools run with it compute what they would with exact fits."""

    def __init__(self, estimator):
        self.estimator = estimator

    def fit(self, X, y):
        self.fitted_ = exact_estimator(self.estimator, X, y)
        self.classes_ = self.fitted_.classes_
        return self

    def predict(self, X):
        return TiesToFirstClass(self.fitted_).predict(X)

    def decision_function(self, X):
        return self.fitted_.decision_function(X)

    @available_if(lambda self: hasattr(self.estimator, "predict_proba"))
    def predict_proba(self, X):
        return self.fitted_.predict_proba(X)


class TiesToFirstClass(ClassifierMixin, BaseEstimator):
    """A fitted linear ``model`` whose predictions treat rounding as the engine does: a binary
    decision value within ``rtol``·(1 + ‖x‖‖w‖ + |b|) of 0 is 0 (1: a unit margin, as
    :data:`glru.bounds.ZERO_BAND_CAP`; where w and b are 0 at the optimum, e.g. a feature 0 on
    every training row of a balanced fold, the refit computes them as ±3e-17), and multiclass decision values
    within ``rtol`` of a row's largest are ties; both go to the first class, as for the exact
    values (:func:`glru.bounds.zero_band`, :func:`glru.multinomial_cv._tie_band`). An exact refit
    computes an exact 0 or tie only to rounding (a coefficient that is 0 at the optimum as 1e-33,
    two classes with the same training rows ±1e-16), and its sign or arg-max then picks either."""

    def __init__(self, model, rtol=1e-12):
        self.model, self.rtol = model, rtol
        self.classes_ = model.classes_

    def predict(self, X):
        scores = self.model.decision_function(X)
        if scores.ndim == 1:
            final = self.model[-1] if hasattr(self.model, "steps") else self.model
            design = self.model[:-1].transform(X) if hasattr(self.model, "steps") else X
            design = design if sp.issparse(design) else np.asarray(design, dtype=float)  # (object from a ColumnTransformer)
            norms = np.sqrt(np.asarray(design.multiply(design).sum(axis=1)).ravel() if sp.issparse(design)
                            else np.einsum("ij,ij->i", design, design))
            scale = 1.0 + norms * np.linalg.norm(final.coef_) + np.abs(final.intercept_).sum()
            return self.classes_[(scores > self.rtol * scale).astype(int)]
        top = scores.max(axis=1, keepdims=True)
        return self.classes_[np.argmax(scores >= top - self.rtol * (1.0 + np.abs(top)), axis=1)]

    def decision_function(self, X):
        return self.model.decision_function(X)

    @available_if(lambda self: hasattr(self.model, "predict_proba"))
    def predict_proba(self, X):
        return self.model.predict_proba(X)


def squared_hinge_optimum(Z, t, C):
    """The exact minimizer of ½‖w‖² + C Σ max(0, 1 − t_i z_i·w)² (LinearSVC's primal with its
    intercept column in Z), independent of glru: Newton steps with the Hessian on the rows inside
    the margin formed anew each time, shortened by bisection on the derivative along them, then
    the linear system of the settled rows solved exactly (Mangasarian's finite Newton method).
    Exact where the solver above is not: squared hinge on columns scaled over decades."""
    import scipy.linalg

    w = np.zeros(Z.shape[1])
    for _ in range(500):
        margins = 1 - t * (Z @ w)
        inside = margins > 0
        gradient = w - 2 * C * Z[inside].T @ (t[inside] * margins[inside])
        hessian = np.eye(Z.shape[1]) + 2 * C * Z[inside].T @ Z[inside]
        step = scipy.linalg.solve(hessian, gradient, assume_a="pos")
        moves = t * (Z @ step)

        def slope(a):
            after = margins + a * moves
            return -(w - a * step) @ step + 2 * C * (after[after > 0] @ moves[after > 0])
        length, low, high = 1.0, 0.0, 1.0
        if slope(1.0) > 0:
            for _ in range(80):
                length = 0.5 * (low + high)
                low, high = (low, length) if slope(length) > 0 else (length, high)
        w = w - length * step
        if length == 1.0 and np.array_equal(1 - t * (Z @ w) > 0, inside):
            break
    inside = 1 - t * (Z @ w) > 0
    return scipy.linalg.solve(np.eye(Z.shape[1]) + 2 * C * Z[inside].T @ Z[inside], 2 * C * Z[inside].T @ t[inside],
                              assume_a="pos")


def squared_hinge_by_nnls(Z, t, C):
    """The same minimizer from its dual, by SciPy's Lawson–Hanson NNLS (an active-set method
    that ends exactly, its own code): max Σα − ½‖Σ α_i t_i z_i‖² − ‖α‖²/4C over α ≥ 0 is
    min ‖Bα − b‖² with B = [(t ⊙ Z)ᵀ; I/√2C], b = [0; √2C·1], and w = Σ α_i t_i z_i. Exact near
    a hard margin (large C, rows nearly on it), where damped Newton steps crawl."""
    from scipy.optimize import nnls

    rows = Z * t[:, None]
    B = np.vstack([rows.T, np.eye(Z.shape[0]) / np.sqrt(2 * C)])
    b = np.concatenate([np.zeros(Z.shape[1]), np.full(Z.shape[0], np.sqrt(2 * C))])
    alpha, _ = nnls(B, b, maxiter=50 * Z.shape[0])
    return rows.T @ alpha
