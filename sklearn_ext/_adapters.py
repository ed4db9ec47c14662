"""Map scikit-learn estimators exactly onto glru's objective, or say why not.

Per-instance-mean form (notes §8), n the rows of the fit at hand:

=============================================================  ============  ==================  ===========
estimator                                                      loss          λ, κ                intercept
=============================================================  ============  ==================  ===========
LogisticRegression(C, l1_ratio=0)  (penalty "l2")               logistic      1/(nC), 0           unpenalized
LogisticRegression(C, 0 < l1_ratio < 1, solver="saga")          logistic      (1−r)/(nC), r/(nC)  unpenalized
LogisticRegression(C, l1_ratio=0, solver="liblinear")           logistic      1/(nC), 0           penalized
LinearSVC(C, loss="squared_hinge", penalty="l2")                squared hinge 1/(nC), 0           penalized
=============================================================  ============  ==================  ===========

A penalized intercept is a constant column of value ``intercept_scaling`` with the same L2
penalty (LIBLINEAR's convention); the fitted ``intercept_`` is that scaling times its weight.
A :class:`~sklearn.pipeline.Pipeline` is supported by the certificates from one full fit when
every step before the model transforms each row on its own, without learning from the data
(then transforming all rows once equals transforming each fold's rows);
cross-validation and grid search also take steps that learn from the training rows
(:func:`learns_from_rows`), one fold at a time (:mod:`glru.fold_refit`). Anything else
raises :class:`Unsupported`.
"""

import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import (Binarizer, MaxAbsScaler, MinMaxScaler, Normalizer, PolynomialFeatures,
                                   RobustScaler, StandardScaler)
from sklearn.svm import LinearSVC

from glru._validation import check_X
from glru.losses import get_loss
from glru.penalties import get_penalty
from glru.problem import with_constant_column
from glru.standardization import relative_scaling

# transformers whose output row depends on its input row only, and whose fit learns nothing
# from the values of the data (it only records the number of features)
ROW_WISE = (Normalizer, Binarizer, PolynomialFeatures)


class Unsupported(Exception):
    """The estimator or its parameters have no exact glru counterpart (the message says why)."""


class LinearModel:
    """An estimator's objective in glru's terms, and how to turn a solution back into it."""

    def __init__(self, estimator, loss, C, l1_ratio, fit_intercept, intercept_scaling, multiclass):
        self.estimator, self.loss = estimator, get_loss(loss)
        self.multiclass = multiclass                  # "ovr", "multinomial" or None: how ≥ 3 classes are fitted
        self.C, self.l1_ratio = float(C), float(l1_ratio)
        self.fit_intercept = fit_intercept            # unpenalized intercept
        self.intercept_scaling = intercept_scaling    # penalized intercept column, or None

    def penalty_for(self, n_samples):
        scale = 1.0 / (n_samples * self.C)
        return get_penalty((1.0 - self.l1_ratio) * scale, self.l1_ratio * scale)

    def design(self, X):
        """X with the constant column of a penalized intercept appended."""
        if self.intercept_scaling is None:
            return X
        return with_constant_column(X, float(self.intercept_scaling))

    def carried_over(self, coef, intercept, old, new):
        """(coef, intercept) giving the same decision values on columns scaled by ``new`` as on
        columns scaled by ``old`` ((a, c) of :func:`affine_scaling`, z = a∘x + c):
        w' = w∘a/a', b' = b + w·c − w'·c', the shift carried by the penalized intercept column
        where there is one (without an intercept it is dropped); w' = 0 where a' is 0. ``coef``
        (d̃,) or (K, d̃), unchanged if its width is not the scaled columns' (plus that column).
        Only a start for a solve: nothing relies on it."""
        (a, c), (a_new, c_new) = old, new
        d = a.shape[0]
        coef, intercept = np.array(coef, dtype=float), np.array(intercept, dtype=float)
        if coef.shape[-1] != d + (self.intercept_scaling is not None):
            return coef, intercept
        w = coef[..., :d].copy()
        coef[..., :d] = w * np.divide(a, a_new, out=np.zeros(d), where=a_new != 0)
        shift = w @ c - coef[..., :d] @ c_new
        if self.intercept_scaling is not None:
            coef[..., d] += shift / self.intercept_scaling
        elif self.fit_intercept:
            intercept = intercept + shift
        return coef, intercept

    def fold_mapping(self, old, new):
        """(r, u, k) such that the design's rows on columns scaled by ``new`` are x̃ ↦ r∘x̃ + u·x̃_k
        of its rows on columns scaled by ``old`` ((a, c) of :func:`affine_scaling`), x̃ with the
        intercept's coordinate where there is one (the penalized column, or the unpenalized
        intercept's 1), k that coordinate (None where u = 0): the map of
        :meth:`glru.fold_hessian.StartGram.fold_hessian` (r and u from
        :func:`glru.standardization.relative_scaling`). None where no such map exists (a column
        scaled by 0 in ``old``, or a shift with no intercept to carry it)."""
        scales, shifts = relative_scaling(old, new)
        if not np.all(np.isfinite(scales)):
            return None
        constant = self.intercept_scaling if self.intercept_scaling is not None else 1.0 if self.fit_intercept \
            else None
        if constant is None and np.any(shifts):
            return None
        if constant is None:
            return scales, np.zeros_like(scales), None
        shifted = bool(np.any(shifts))  # (k only where there is a shift to carry)
        return np.append(scales, 1.0), np.append(shifts / constant, 0.0), scales.shape[0] if shifted else None

    def fitted(self, coef, intercept, classes, n_features):
        """A clone of the estimator with (coef, intercept) as its fitted solution: one row of
        ``coef`` (d,) and a scalar ``intercept`` for two classes, one per class (rows of a
        (n_classes, d) ``coef``) otherwise."""
        model = clone(self.estimator)
        coef = np.atleast_2d(np.asarray(coef, dtype=float))
        intercept = np.atleast_1d(np.asarray(intercept, dtype=float))
        if self.intercept_scaling is not None:
            coef, intercept = coef[:, :-1], self.intercept_scaling * coef[:, -1]
        elif not self.fit_intercept:
            intercept = np.zeros(coef.shape[0])
        model.coef_ = coef
        model.intercept_ = intercept.astype(float)
        model.classes_ = classes
        model.n_features_in_ = n_features
        model.n_iter_ = np.array([0], dtype=np.int32)
        return model


def linear_model(estimator):
    """The :class:`LinearModel` of a supported estimator (the last step of a Pipeline)."""
    if type(estimator) is LogisticRegression:
        return _logistic_regression(estimator)
    if type(estimator) is LinearSVC:
        return _linear_svc(estimator)
    raise Unsupported(f"{type(estimator).__name__} is not supported (LogisticRegression, LinearSVC and "
                      "Pipelines ending in one of them are)")


def ridge_alpha(estimator):
    """The penalty of a supported ``Ridge`` (its exact optimum is solver-independent), or
    :class:`Unsupported`."""
    alpha = estimator.alpha
    if not (isinstance(alpha, numbers.Real) and np.isfinite(alpha) and alpha > 0):
        raise Unsupported(f"Ridge(alpha={alpha!r}): a finite positive scalar alpha is needed")
    if estimator.positive:
        raise Unsupported("Ridge(positive=True) is a constrained problem")
    return float(alpha)


def is_ridge(estimator):
    return type(estimator) is Ridge


def pipeline_steps(estimator):
    """(preprocessing Pipeline or None, final estimator) of an estimator or Pipeline."""
    if not isinstance(estimator, Pipeline):
        return None, estimator
    return estimator[:-1], estimator.steps[-1][1]


def learns_from_rows(estimator):
    """Whether a Pipeline has a step before its model that learns from the rows it is fitted on
    (a ``StandardScaler``): then each fold's rows are transformed by steps fitted on them, not
    once for all rows (every other step transforms each row on its own)."""
    preprocessing = pipeline_steps(estimator)[0]
    return preprocessing is not None and not all(_is_row_wise_step(step) for _, step in preprocessing.steps)


def _is_row_wise_step(step):
    return step is None or step == "passthrough" or type(step) in ROW_WISE


def split_pipeline(estimator):
    """(row-wise preprocessing or None, final estimator) of a supported estimator."""
    preprocessing, final = pipeline_steps(estimator)
    for name, step in preprocessing.steps if preprocessing is not None else ():
        if not _is_row_wise_step(step):
            raise Unsupported(
                f"Pipeline step {name!r} ({type(step).__name__}) learns from the training rows, so each fold "
                "would transform the data differently; only row-wise stateless steps "
                f"({', '.join(t.__name__ for t in ROW_WISE)}) are supported")
    return preprocessing, final


def scales_per_feature(step):
    """Whether ``step``, fitted, transforms each row x into a∘x + c (:func:`affine_scaling`):
    scikit-learn's per-feature scalers, ``MinMaxScaler`` without ``clip``."""
    return type(step) in (StandardScaler, RobustScaler, MaxAbsScaler) or type(step) is MinMaxScaler and not step.clip


def standardization(step, X):
    """The ``with_mean`` and ``with_std`` of a ``StandardScaler`` that can fit X (not centring
    sparse rows, which it refuses) as keywords of :func:`glru.standardization.fold_standardizations`,
    which estimates its scalings of many folds at once; None for any other step, or one that would
    refuse X."""
    if type(step) is not StandardScaler or step.with_mean and sp.issparse(X):
        return None
    return dict(with_mean=bool(step.with_mean), with_std=bool(step.with_std))


def affine_scaling(step):
    """(a, c) such that a fitted ``step`` transforms each row x into a∘x + c, for scikit-learn's
    per-feature scalers (:func:`scales_per_feature`); None for any other step."""
    if not scales_per_feature(step):
        return None
    kind = type(step)
    if kind is StandardScaler:
        centre, scale = step.mean_ if step.with_mean else None, step.scale_ if step.with_std else None
    elif kind is RobustScaler:
        centre, scale = step.center_ if step.with_centering else None, step.scale_ if step.with_scaling else None
    elif kind is MaxAbsScaler:
        centre, scale = None, step.scale_
    else:
        return step.scale_, step.min_
    a = 1.0 / scale if scale is not None else np.ones(step.n_features_in_)
    return a, (-centre * a if centre is not None else np.zeros_like(a))


def model_input(preprocessing, X, y):
    """(the row-wise ``preprocessing`` fitted on (X, y), or None; the model's input: its output,
    float64, dense or CSR, finite). Data that every fit which sees it rejects (NaN or infinity,
    or a step that raises) is Unsupported: scikit-learn's own computation then reports it its
    way, a score of ``error_score`` for each fold whose fit or scoring fails and a
    ``FitFailedWarning``, or the error itself with ``error_score="raise"``."""
    try:
        fitted = None if preprocessing is None else clone(preprocessing).fit(X, y)
        return fitted, check_X(X if fitted is None else fitted.transform(X))
    except Exception as error:  # (a step's, or check_X's on NaN or infinity)
        raise Unsupported(f"the model cannot be fitted on this data: {error}") from error


def _check_C(C):
    if not (isinstance(C, numbers.Real) and np.isfinite(C) and C > 0):
        raise Unsupported(f"C={C!r} is not a finite positive number")


def _logistic_regression(est):
    if est.class_weight is not None:
        raise Unsupported("class_weight is not supported")
    _check_C(est.C)
    penalty = getattr(est, "penalty", "deprecated")
    l1_ratio = est.l1_ratio
    if penalty == "l2":
        l1_ratio = 0.0
    elif penalty not in ("deprecated", "elasticnet"):
        raise Unsupported(f"penalty={penalty!r} is not supported (an L2 term is needed)")
    if l1_ratio is None or not (0.0 <= l1_ratio < 1.0):
        raise Unsupported(f"l1_ratio={l1_ratio!r} is not supported (it must be in [0, 1): an L2 term is needed)")
    if l1_ratio > 0 and est.solver != "saga":
        raise Unsupported(f"an L1 term with solver={est.solver!r} (scikit-learn accepts it only with 'saga')")
    if est.solver == "liblinear":
        if l1_ratio > 0:
            raise Unsupported("solver='liblinear' with an L1 term")
        scaling = est.intercept_scaling if est.fit_intercept else None
        # scikit-learn fitted multiclass targets one-vs-rest with liblinear until it removed
        # ``multi_class`` (1.8); since then such a fit raises
        multiclass = "ovr" if "multi_class" in est.get_params() else None
        return LinearModel(est, "logistic", est.C, 0.0, False, scaling, multiclass)
    return LinearModel(est, "logistic", est.C, l1_ratio, est.fit_intercept, None, "multinomial")


def _linear_svc(est):
    if est.loss != "squared_hinge" or est.penalty != "l2":
        raise Unsupported(f"LinearSVC(loss={est.loss!r}, penalty={est.penalty!r}): only squared_hinge with l2")
    if est.class_weight is not None:
        raise Unsupported("class_weight is not supported")
    if est.multi_class != "ovr":
        raise Unsupported(f"LinearSVC(multi_class={est.multi_class!r}): only one-vs-rest")
    _check_C(est.C)
    scaling = est.intercept_scaling if est.fit_intercept else None
    return LinearModel(est, "squared_hinge", est.C, 0.0, False, scaling, "ovr")
