"""What is known about one problem's exact optimum on its held-out rows: a cross-validation
fold (:mod:`glru.cross_validation`) or a stepwise candidate on a fold (:mod:`glru.stepwise`)."""

import numpy as np
import scipy.sparse as sp

from .bounds import signs_decided, zero_band
from .certificate import certificate_at
from .problem import row_norms_sq


class HeldOutOutcome:
    """Certified bounds on the held-out decision values of one problem, and where they came from.

    Attributes
    ----------
    lower, upper : ndarray
        Certified bounds on the held-out decision values.
    values : ndarray
        Decision values at the final centre (clipped into the bounds); exact to rounding when
        the problem was solved, or settled at rounding level.
    coef, intercept : ndarray or None, float
        The final centre, when the caller keeps it.
    solved : bool
        Whether the problem was solved or iterated (a retrain) rather than certified at once.
    settled : bool
        The centre is the optimum to rounding (its labels are read from ``values``).
    rounded : bool
        The centre's duality gap is at rounding level.
    radius : float
        The certified radius around the centre (Theorem 1), inf if not computed.
    zero_band : float or ndarray
        Values this close to 0 count as 0 (:func:`glru.bounds.zero_band`).
    """

    def __init__(self, lower, upper, values, coef, intercept, solved):
        self.lower, self.upper, self.solved = lower, upper, solved
        self.settled = self.rounded = False
        self.radius, self.zero_band = np.inf, 0.0
        self.values = np.clip(values, lower, upper)
        self.coef, self.intercept = coef, intercept

    @property
    def decided(self):
        """Rows whose predicted label (decision > 0) is certified."""
        return signs_decided(self.lower, self.upper)

    @property
    def labels(self):
        """1 where the exact decision value is > 0 (scikit-learn's rule), else 0: certified, or
        read at a point polished to rounding level."""
        return np.where(self.decided, self.lower > 0, self.values > self.zero_band).astype(int)


def certified_argmax(lower, upper):
    """The class certainly predicted (arg-max of the decision values, first index on ties, as
    numpy and scikit-learn take it) for each row of certified bounds ``lower``/``upper`` of shape
    (n_rows, n_classes); −1 where the bounds leave it open.

    Class k is certain when its lower bound beats every other class's upper bound: strictly for
    the classes before it (a tie would go to them), or equally for the classes after it."""
    n_rows, n_classes = lower.shape
    winner = np.full(n_rows, -1)
    for k in range(n_classes):
        before = np.all(lower[:, [k]] > upper[:, :k], axis=1)
        after = np.all(lower[:, [k]] >= upper[:, k + 1:], axis=1)
        winner[(winner < 0) & before & after] = k
    return winner


class MulticlassOutcome:
    """Certified bounds on the held-out decision values of one fold of a multiclass problem
    (one column per class the fold was trained on), and its predicted classes.

    Attributes
    ----------
    classes : ndarray of int
        The class codes the fold's training rows hold (its columns), increasing.
    lower, upper : ndarray of shape (n_held_out, n_classes)
        Certified bounds on the decision values.
    values : ndarray of shape (n_held_out, n_classes)
        Decision values at the final centre; exact to rounding when ``solved``.
    coef, intercept : ndarray of shape (n_classes, d) and (n_classes,), or None
        The fold's solution, when it was solved and the caller keeps it.
    solved : bool
        Whether any of the fold's problems was solved (a retrain).
    winner : ndarray of int, optional
        The certified column of each row's class (−1 where open), when sharper bounds than the
        per-class ones decided it (e.g. bounds on pairwise differences); by default
        :func:`certified_argmax` of ``lower``/``upper``.
    tie_band : ndarray of shape (n_held_out, n_classes), optional
        How far each solved value may be from the exact one at rounding level (its
        :func:`glru.bounds.zero_band`): values of two classes within the sum of their bands are a
        tie, which goes to the first class (see :attr:`labels`). Zero by default.
    """

    def __init__(self, classes, lower, upper, values, solved, coef=None, intercept=None, winner=None,
                 tie_band=None):
        self.classes, self.lower, self.upper, self.solved = np.asarray(classes), lower, upper, solved
        self.values, self.coef, self.intercept = np.clip(values, lower, upper), coef, intercept
        self._winner = certified_argmax(lower, upper) if winner is None else np.asarray(winner)
        self.tie_band = np.zeros_like(self.values) if tie_band is None else tie_band

    @property
    def decided(self):
        """Rows whose predicted class is certified by the bounds."""
        return self._winner >= 0

    @property
    def labels(self):
        """Predicted class codes: certified, or the arg-max of values exact to rounding, the first
        class among those tied with the largest (an exact tie: two one-vs-rest problems with the
        same optimum; numpy's arg-max takes the first of equal values, and so scikit-learn)."""
        winner = self._winner.copy()
        open_rows = winner < 0
        if np.any(open_rows) and not self.solved:
            raise ValueError("the predicted class of some rows is neither certified nor solved for")
        values, band = self.values[open_rows], self.tie_band[open_rows]
        top = np.argmax(values, axis=1)[:, None]
        reach = np.take_along_axis(values, top, axis=1) - np.take_along_axis(band, top, axis=1)
        winner[open_rows] = np.argmax(values >= reach - band, axis=1)
        return self.classes[winner]


def certified_bounds(problem, coef, intercept, X_test, signs_only=False, evaluation=None):
    """(lower, upper, values, evaluation) of X_test's decision values for ``problem`` at (coef,
    intercept): certified bounds (exact intercept bracket), the values, and the point's
    :class:`glru.problem.GapEvaluation`. With ``signs_only``, the bounds as far as the signs need
    them (:meth:`~glru.certificate.Certificate.sign_bounds`; the box's bounds over every row took
    a tenth of the time of a 10-fold Pipeline of sparse Gaussian 10000 × 1000, whose folds reach
    relative gaps of 1e-13 before these bounds). ``evaluation``: the point's gap evaluation, if
    made already."""
    ev = problem.duality_gap(coef, intercept) if evaluation is None else evaluation
    certificate = certificate_at(problem, coef, intercept, ev)
    values = np.asarray(X_test @ coef).ravel() + intercept
    lower, upper = certificate.sign_bounds(X_test, intercept="exact") if signs_only else \
        certificate.decision_bounds(X_test, intercept="exact")
    return lower, upper, values, ev


def held_out_bounds(problem, coef, intercept, X_test, evaluation=None, signs_only=False):
    """(lower, upper, values, band, evaluation): :func:`certified_bounds` (``signs_only``: see
    there) and the values' :func:`glru.bounds.zero_band` (for a point solved to rounding level)."""
    lower, upper, values, ev = certified_bounds(problem, coef, intercept, X_test, signs_only, evaluation)
    train, test = np.sqrt(row_norms_sq(problem.X)), np.sqrt(row_norms_sq(X_test))
    curvature = None
    if problem.fit_intercept:
        train, test = np.sqrt(train ** 2 + 1.0), np.sqrt(test ** 2 + 1.0)
        curvature = problem.loss.second_derivative(problem.y, ev.margins).sum()
    band = zero_band(test, -problem.loss.derivative(problem.y, ev.margins), train, problem.n * problem.penalty.lam,
                     problem.d, curvature)
    return lower, upper, values, band, ev


def nonzero_counts(X):
    """How many rows of X hold a nonzero value in each column."""
    if sp.issparse(X):
        X = X.tocsr()
        return np.bincount(X.indices[X.data != 0], minlength=X.shape[1])
    return np.count_nonzero(X, axis=0)


def zero_unused_weights(coef, training_counts):
    """``coef`` ((d̃,) or (K, d̃)) with the weights of the columns no training row uses
    (``training_counts`` 0, :func:`nonzero_counts` of the first d ≤ d̃ columns) set to 0: their
    exact value at the optimum of an L2 or elastic-net problem, where such a weight enters the
    objective through the penalty alone. A warm-started solve leaves them within rounding of 0
    instead, and a held-out row that should tie with one using none of its columns (the
    intercept alone) then compares by that rounding: a different roc_auc on sparse data."""
    unused = np.flatnonzero(np.asarray(training_counts) == 0)
    if unused.size == 0:
        return coef
    coef = np.array(coef, dtype=float)
    coef[..., unused] = 0.0
    return coef
