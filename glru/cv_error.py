"""Certified intervals for the cross-validation error of a regression model (Huber, squared).

For each fold, :func:`glru.cross_validation.cross_validate` certifies an interval
[lo_i, hi_i] ∋ x_i·w*_T + b*_T for every held-out row i of the fold's exact optimum, without
training (``solve_open=False``). The held-out error e(v) = |v − y_i|^p (p = 2 squared, p = 1
absolute) is convex in v, so over the interval its maximum is at an end and its minimum is 0
when y_i is inside, else at the nearer end: a certified interval on each row's error, and on
the fold's mean error by summing. With ``exact=True`` every fold is solved to rounding level (``need="values"``; a fold
certified to a relative width of 1e-9 counts as solved) and the interval collapses to the
exact refits' error.

Huber's loss is linear in its tails, so with an unpenalized intercept the optimum's intercept
is a whole interval when every training residual lies in the linear zone (w* stays unique: the
L2 term is strongly convex). The certified bounds then contain the error of every optimum
(the intercept bracket of :mod:`glru.intercept` brackets every root), and ``exact=True`` gives
the error of one of them, as any exact solver would.
"""

import numpy as np

from .cross_validation import cross_validate

ERRORS = {"squared": lambda r: r * r, "absolute": np.abs}


class ErrorBounds:
    """Certified bounds on each fold's mean held-out error, and on their mean.

    Attributes
    ----------
    lower, upper : ndarray of shape (n_folds,)
    mean_lower, mean_upper : float
    n_retrained : int
        Folds that were solved.
    """

    def __init__(self, lower, upper, n_retrained):
        self.lower, self.upper, self.n_retrained = lower, upper, n_retrained
        self.mean_lower, self.mean_upper = float(np.mean(lower)), float(np.mean(upper))


def cross_validation_error(X, y, loss, folds, penalty_for, fit_intercept, *, error="squared", exact=False,
                           n_jobs=None, verbose=0, pre_dispatch="2*n_jobs"):
    """Bounds on the cross-validation error of a regression loss's exact fold optima.

    Parameters
    ----------
    X, y, loss, folds, penalty_for, fit_intercept, n_jobs, verbose, pre_dispatch :
        As in :func:`glru.cross_validation.cross_validate` (``loss`` a regression loss:
        :class:`glru.losses.Huber` or :class:`glru.losses.Squared`).
    error : {"squared", "absolute"}
        The held-out error of a prediction v for target y: (v − y)² or |v − y|.
    exact : bool
        Solve every fold: the bounds are then the exact refits' errors (to 1e-9 relative).

    Returns
    -------
    ErrorBounds
    """
    if error not in ERRORS:
        raise ValueError(f"error must be one of {sorted(ERRORS)}, got {error!r}.")
    if loss.is_classification:
        raise ValueError("cross_validation_error is for regression losses (squared, huber).")
    result = cross_validate(X, y, loss, folds, penalty_for, fit_intercept, need="values", solve_open=exact,
                            n_jobs=n_jobs, verbose=verbose, pre_dispatch=pre_dispatch)
    lower, upper = [], []
    for fold, outcome in zip(folds, result.outcomes):
        # solved: the values are the exact refit's (bounds stop at the gap's rounding floor)
        ends = (outcome.values, outcome.values) if exact else (outcome.lower, outcome.upper)
        low, high = _error_interval(ERRORS[error], *ends, y[fold.test])
        lower.append(low.mean())
        upper.append(high.mean())
    return ErrorBounds(np.array(lower), np.array(upper), result.n_retrained)


def _error_interval(error, lower, upper, target):
    """Per row, the range of the convex error e(v − y) over v ∈ [lower, upper]."""
    at_ends = np.maximum(error(lower - target), error(upper - target))
    inside = (lower <= target) & (target <= upper)
    nearest = np.where(inside, 0.0, np.minimum(error(lower - target), error(upper - target)))
    # one rounding of the subtraction and of the power: widen outward by a few ulps
    return nearest * (1 - 4 * np.finfo(float).eps), at_ends * (1 + 4 * np.finfo(float).eps)
