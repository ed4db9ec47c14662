"""Anderson acceleration of fixed-point iterations z ← z + f(z).

The chord steps of :mod:`glru.cross_validation` and of :func:`glru.solver.polish` (Newton steps
with a Hessian frozen elsewhere) converge linearly; combining the last few steps cancels much
of their common error. Only a way to choose the next point: every point is checked by the
caller (a certificate, or a smaller gradient), so acceleration can cost speed, never exactness.
"""

import numpy as np

ANDERSON_DEPTH = 3  # steps combined


class Anderson:
    """The last ``depth`` + 1 points and steps of an iteration z ← z + f(z) (here f = −H₀⁻¹∇F, a
    chord step); :meth:`next` proposes the point that combines them so as to cancel their
    residuals in the least-squares sense (Walker & Ni, SIAM J. Numer. Anal. 49, 2011)."""

    def __init__(self, depth):
        self.depth, self.points, self.steps = depth, [], []

    def restart(self):
        """Forget the steps so far (the iteration's map changed, or a step was rejected)."""
        self.points, self.steps = [], []

    def next(self, z, f):
        self.points, self.steps = (self.points + [z])[-self.depth - 1:], (self.steps + [f])[-self.depth - 1:]
        if len(self.steps) < 2:
            return z + f
        dF, dZ = np.diff(self.steps, axis=0), np.diff(self.points, axis=0)
        gamma = np.linalg.lstsq(dF.T, f, rcond=None)[0]
        accelerated = z + f - (dZ + dF).T @ gamma
        return accelerated if np.all(np.isfinite(accelerated)) else z + f
