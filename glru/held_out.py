"""What is known about one problem's exact optimum on its held-out rows: a cross-validation
fold (:mod:`glru.cross_validation`) or a stepwise candidate on a fold (:mod:`glru.stepwise`)."""

import numpy as np


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
        return (self.lower > 0) | (self.upper <= 0)

    @property
    def labels(self):
        """1 where the exact decision value is > 0 (scikit-learn's rule), else 0: certified, or
        read at a point polished to rounding level."""
        return np.where(self.decided, self.lower > 0, self.values > self.zero_band).astype(int)
