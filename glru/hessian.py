"""The inverse Hessian of a fitted problem, applied to blocks of vectors, chosen by shape.

In sum form, with x̃_i = (x_i, 1) when an unpenalized intercept is fitted and P the projection
that drops it, H = X̃ᵀDX̃ + a·P, D = diag(ℓ''_i), a = n·λ. Stepwise selection needs H⁻¹ on
blocks of unit vectors (the "optimal brain surgeon" step of removing a feature) and on blocks
of columns (the Newton step of adding one):

- :class:`DenseInverseHessian` when d̃ is small: H formed and Cholesky-factored, O(nnz·d̃ + d̃³).
- :class:`LowRankInverseHessian` when n ≪ d: Woodbury in the n-dimensional span of the rows,
  A⁻¹ = (1/a)(I − XᵀR X) with R = D^{1/2}(aI + D^{1/2}XXᵀD^{1/2})⁻¹D^{1/2} for the penalized block
  A = XᵀDX + aI, and the intercept by its Schur complement s = c − uᵀA⁻¹u (u = XᵀD1,
  c = Σℓ''). O(n²·d + n³); no d × d array.

Nothing here needs to be exact: the results are Newton centres, certified by duality gaps.
"""

import numpy as np
import scipy.linalg

from .newton_centres import NewtonCentres
from .problem import as_dense

DENSE_MAX_DIM = 2048  # a d̃ × d̃ factor and inverse (32 MiB each at this size)
LOW_RANK_MAX_ROWS = 4096  # an n × n capacitance matrix


def inverse_hessian(X, y, loss, fit_intercept, coef, intercept, strength):
    """The cheaper inverse Hessian for X's shape at (coef, intercept), or None if H is too large
    for either form, or singular (e.g. no curvature left for the intercept)."""
    n, d = X.shape
    try:
        if d + fit_intercept <= min(DENSE_MAX_DIM, max(n, 64)) or (d + fit_intercept <= DENSE_MAX_DIM
                                                                   and n > LOW_RANK_MAX_ROWS):
            return DenseInverseHessian(NewtonCentres(X, y, loss, fit_intercept, coef, intercept, strength).hessian)
        if n <= LOW_RANK_MAX_ROWS:
            margins = np.asarray(X @ coef).ravel() + intercept
            return LowRankInverseHessian(X, loss.second_derivative(y, margins), strength, fit_intercept)
    except (np.linalg.LinAlgError, ValueError):
        return None
    return None


def jacobi_condition(hessian):
    """An estimate of the 1-norm condition number of D^{-1/2}HD^{-1/2}, D = diag(H): the
    conditioning that conjugate gradients preconditioned by H's diagonal (LIBLINEAR's trust-region
    Newton) converge by. ‖A‖₁ times the larger of two lower bounds on ‖A⁻¹‖₁, both O(d̃²) after
    a Cholesky factorization: LAPACK's (``dpocon``, Hager and Higham's estimator, usually within
    a factor of 3) and ‖A⁻¹v‖₁/‖v‖₁ after ``INVERSE_STEPS`` steps of inverse iteration from a
    seeded random v. The estimator starts from the all-ones vector and misses a weak direction
    orthogonal to it (two columns nearly equal: 8.9e3 for 2.0e6), which inverse iteration finds.
    A lower bound. Infinite where that matrix is not positive definite (a zero diagonal: an
    intercept with no curvature left)."""
    diagonal = np.diag(hessian)
    if not np.all(diagonal > 0):
        return np.inf
    scale = 1.0 / np.sqrt(diagonal)
    scaled = hessian * scale[:, None] * scale[None, :]
    factor, info = scipy.linalg.lapack.dpotrf(scaled, clean=False)
    if info != 0:
        return np.inf
    norm = float(np.abs(scaled).sum(axis=0).max())
    reciprocal, info = scipy.linalg.lapack.dpocon(factor, norm)
    if info != 0 or not reciprocal > 0:
        return np.inf
    v = np.random.default_rng(0).standard_normal(scaled.shape[0])
    growth = 0.0
    for _ in range(INVERSE_STEPS):
        v /= np.abs(v).sum()
        v = scipy.linalg.cho_solve((factor, False), v)
        growth = np.abs(v).sum()  # ‖A⁻¹v‖₁ of the v of unit 1-norm
    return max(1.0 / reciprocal, norm * growth)


INVERSE_STEPS = 3


class DenseInverseHessian:
    def __init__(self, hessian):
        self.dim = hessian.shape[0]
        self._factor = scipy.linalg.cho_factor(hessian) if self.dim else None

    def solve(self, B):
        """H⁻¹B for B of shape (d̃, k)."""
        return scipy.linalg.cho_solve(self._factor, B) if self.dim else np.zeros_like(B)

    def columns(self, indices):
        """H⁻¹[:, indices]."""
        units = np.zeros((self.dim, len(indices)))
        units[indices, np.arange(len(indices))] = 1.0
        return self.solve(units)

    def diagonal(self):
        return np.diag(self.solve(np.eye(self.dim))).copy()


class LowRankInverseHessian:
    def __init__(self, X, curvatures, strength, fit_intercept):
        self.X, self.a, self.fit_intercept = X, strength, fit_intercept
        self.dim = X.shape[1] + fit_intercept
        root = np.sqrt(curvatures)
        gram = X @ X.T
        gram = as_dense(gram)
        capacitance = strength * np.eye(X.shape[0]) + root[:, None] * gram * root[None, :]
        self._root, self._factor = root, scipy.linalg.cho_factor(capacitance)
        if fit_intercept:
            u = np.asarray(X.T @ curvatures).ravel()
            self._a_u = self._solve_penalized(u[:, None])[:, 0]
            self._schur = curvatures.sum() - u @ self._a_u
            if not self._schur > 0:
                raise np.linalg.LinAlgError("no curvature left for the intercept")

    def row_space_solve(self, V):
        """R V for V of shape (n, k): A⁻¹ = (I − XᵀRX)/a."""
        return self._root[:, None] * scipy.linalg.cho_solve(self._factor, self._root[:, None] * V)

    def _solve_penalized(self, B):
        """A⁻¹B = (B − Xᵀ R X B)/a."""
        XB = np.asarray(self.X @ B)
        return (B - np.asarray(self.X.T @ self.row_space_solve(XB))) / self.a

    def _penalized_columns(self, indices):
        out = -np.asarray(self.X.T @ self.row_space_solve(as_dense(self.X[:, indices])))
        out[indices, np.arange(len(indices))] += 1.0
        return out / self.a

    def solve(self, B):
        if not self.fit_intercept:
            return self._solve_penalized(B)
        Bw, beta = B[:-1], B[-1]
        x_b = (beta - self._a_u @ Bw) / self._schur
        return np.vstack([self._solve_penalized(Bw) - np.outer(self._a_u, x_b), x_b])

    def columns(self, indices):
        indices = np.asarray(indices)
        d = self.X.shape[1]
        if not self.fit_intercept:
            return self._penalized_columns(indices)
        out = np.zeros((self.dim, indices.size))
        weights = np.where(indices < d, self._a_u[np.minimum(indices, d - 1)], -1.0)  # a_uᵀe_j, or −1 for b
        on_w = indices < d
        out[:d, on_w] = self._penalized_columns(indices[on_w])
        out[:d] += np.outer(self._a_u, weights / self._schur)
        out[d] = -weights / self._schur
        return out

    def diagonal(self):
        X = as_dense(self.X)
        diag = (1.0 - np.einsum("ij,ij->j", X, self.row_space_solve(X))) / self.a
        if self.fit_intercept:
            diag = np.append(diag + self._a_u ** 2 / self._schur, 1.0 / self._schur)
        return diag
