"""One-vs-rest multiclass cross-validation: one binary problem per class and fold, and the
arg-max of their decision values, certified.

A fold's classifier predicts the class whose binary problem ("this class against the rest of
the fold's training rows") gives the largest decision value, over the classes present in the
fold's training rows (as scikit-learn's ``LinearSVC`` and ``OneVsRestClassifier`` do). Each
binary problem is the one :func:`glru.cross_validation.cross_validate` certifies, so:

1. every class's problems are certified on every fold at once, without solving any
   (``solve_open=False``): certified intervals for all decision values;
2. a held-out row's class is certain when its interval's lower end beats every other class's
   upper end (:func:`glru.held_out.certified_argmax`);
3. folds with a row left open have all their classes' problems solved to rounding level
   (``need="values"``), and their rows take the arg-max of those exact values (classes within
   rounding of the largest value are a tie, which goes to the first, as numpy's arg-max does).

Scorers that need decision values or probabilities get every fold solved (step 3 for all).
"""

import numpy as np

from .cross_validation import cross_validate
from .held_out import MulticlassOutcome, certified_argmax


class MulticlassCrossValidation:
    """Result of :func:`cross_validate_one_vs_rest`: per-fold outcomes and the full fits."""

    def __init__(self, outcomes, coef, intercept, n_certified):
        self.outcomes, self.coef, self.intercept = outcomes, coef, intercept
        self.n_certified = n_certified
        self.n_retrained = sum(o.solved for o in outcomes)


def cross_validate_one_vs_rest(X, codes, n_classes, loss, folds, penalty_for, fit_intercept, *, need="labels",
                               n_jobs=None, verbose=0, pre_dispatch="2*n_jobs"):
    """Held-out predictions of every fold of a one-vs-rest classifier, exact.

    Parameters
    ----------
    X : float64 ndarray or CSR (validated)
    codes : int ndarray of shape (n,)
        Class of each row, in 0 … n_classes − 1; every class occurs in the data.
    n_classes : int
    loss, folds, penalty_for, fit_intercept, need, n_jobs, verbose, pre_dispatch :
        As in :func:`glru.cross_validation.cross_validate`. Every fold's training rows must hold
        at least two classes.

    Returns
    -------
    MulticlassCrossValidation
        ``coef`` (n_classes, d) and ``intercept`` (n_classes,) of the full-data fits; per fold a
        :class:`glru.held_out.MulticlassOutcome` whose columns are the classes of its training
        rows.
    """
    options = dict(n_jobs=n_jobs, verbose=verbose, pre_dispatch=pre_dispatch)
    present = [np.unique(codes[f.train]) for f in folds]
    if any(p.size < 2 for p in present):
        raise ValueError("every fold's training rows must hold at least two classes")
    coef, intercept, bounds = [], [], [{} for _ in folds]
    open_folds = list(range(len(folds)))
    for c in range(n_classes):
        mine = [k for k in range(len(folds)) if c in present[k]]
        result = cross_validate(X, _one_against_rest(codes, c), loss, [folds[k] for k in mine], penalty_for,
                                fit_intercept, need=need, solve_open=False, **options)
        coef.append(result.coef)
        intercept.append(result.intercept)
        for k, outcome in zip(mine, result.outcomes):
            bounds[k][c] = outcome
    outcomes = [outcome_from_classes(present[k], bounds[k], solved=False) for k in range(len(folds))]
    if need == "labels":
        open_folds = [k for k, o in enumerate(outcomes) if not np.all(o.decided)]
    n_certified = sum(int(outcomes[k].decided.sum()) for k in range(len(folds)) if k not in set(open_folds))
    if open_folds:
        solved = [{} for _ in folds]
        for c in range(n_classes):
            mine = [k for k in open_folds if c in present[k]]
            # the class's full fit is known from the first pass: only its open folds cost anything
            result = cross_validate(X, _one_against_rest(codes, c), loss, [folds[k] for k in mine], penalty_for,
                                    fit_intercept, need="values", init=(coef[c], intercept[c]), **options)
            for k, outcome in zip(mine, result.outcomes):
                solved[k][c] = outcome
        for k in open_folds:
            outcomes[k] = outcome_from_classes(present[k], solved[k], solved=True)
    return MulticlassCrossValidation(outcomes, np.vstack(coef), np.array(intercept, dtype=float), n_certified)


def _one_against_rest(codes, c):
    return np.where(codes == c, 1.0, -1.0)


def outcome_from_classes(classes, per_class, solved):
    """One fold's :class:`MulticlassOutcome` from its classes' binary outcomes."""
    columns = [per_class[c] for c in classes]
    lower, upper, values = (np.column_stack([getattr(o, name) for o in columns]) for name in ("lower", "upper", "values"))
    coef = intercept = None
    if solved and all(o.coef is not None for o in columns):
        coef = np.vstack([o.coef for o in columns])
        intercept = np.array([o.intercept for o in columns], dtype=float)
    band = np.column_stack([np.broadcast_to(o.zero_band, o.values.shape) for o in columns])
    return MulticlassOutcome(classes, lower, upper, values, solved, coef, intercept, tie_band=band)


__all__ = ["MulticlassCrossValidation", "certified_argmax", "cross_validate_one_vs_rest"]
