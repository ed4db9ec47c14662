"""One Newton step from a fitted model toward the optimum of each training fold.

Theorem 1 holds for any centre; the fitted full-data optimum z = (w, b) is the paper's (cheap,
loose), and one Newton step of the fold's objective from z is far tighter (notes §6). In sum
form, with x̃_i = (x_i, 1) when an intercept is fitted and P the projection that drops it,

    F_T(z) = Σ_{i∈T} ℓ_i(x̃_i·z) + (a_T/2)‖Pz‖²,   a_T = n_T·λ_T  (= 1/C in scikit-learn's C),
    ∇F_T(z) = X̃ᵀℓ' − X̃_Vᵀℓ'_V + a_T Pz,
    ∇²F_T(z) = S + (a_T − a) P − X̃_Vᵀ D_V X̃_V,   S = X̃ᵀDX̃ + aP  (the full Hessian, once),

V being the held-out rows. With C fixed a_T = a (up to rounding, which only moves the
centre), so each fold's Hessian is a rank-|V| downdate of S: Woodbury from one Cholesky factor of S costs O(|V|·d̃² + |V|³) per fold
(O(d̃²) for leave-one-out); large folds form their Hessian directly (O(nnz_V·d̃ + d̃³)).
Nothing here is trusted: the steps are only centres, certified by their duality gaps.
"""

import numpy as np
import scipy.linalg
import scipy.sparse as sp


class NewtonCentres:
    """Hessian of the full objective at (coef, intercept), and Newton steps of its folds.

    Parameters
    ----------
    X : ndarray or CSR of shape (n, d); d + 1 ≤ a few thousand (S is dense d̃ × d̃).
    y, loss : targets and :class:`glru.losses.Loss`.
    fit_intercept : bool
    coef, intercept : the full-data fit.
    strength : float
        a = n·λ of the full-data problem.
    """

    def __init__(self, X, y, loss, fit_intercept, coef, intercept, strength):
        self.X, self.y, self.loss, self.fit_intercept = X, y, loss, fit_intercept
        self.z = np.append(coef, intercept) if fit_intercept else np.asarray(coef, dtype=float)
        margins = np.asarray(X @ coef).ravel() + (intercept if fit_intercept else 0.0)
        self.slopes = loss.derivative(y, margins)
        self.curvatures = loss.second_derivative(y, margins)
        self.strength = strength
        self.mask = np.ones_like(self.z)  # P: the intercept is not penalized
        if fit_intercept:
            self.mask[-1] = 0.0
        self.loss_gradient = self._rows_t(np.arange(X.shape[0])) @ self.slopes
        self.hessian = self._gram(np.arange(X.shape[0]), self.curvatures) + np.diag(strength * self.mask)
        self._factor = None

    def _rows(self, rows):
        """X̃_R as a dense array."""
        block = self.X[rows]
        block = block.toarray() if sp.issparse(block) else np.asarray(block)
        if self.fit_intercept:
            block = np.hstack([block, np.ones((block.shape[0], 1))])
        return block

    def _rows_t(self, rows):
        block = self.X[rows]
        if sp.issparse(block):
            if self.fit_intercept:
                block = sp.hstack([block, np.ones((block.shape[0], 1))], format="csr")
            return block.T
        return self._rows(rows).T

    def _gram(self, rows, weights):
        """X̃_Rᵀ diag(weights) X̃_R as a dense array."""
        Xt = self._rows_t(rows)
        if sp.issparse(Xt):
            return (Xt @ Xt.T.multiply(weights[:, None]).tocsr()).toarray()
        return (Xt * weights) @ Xt.T

    def step(self, held_out, strength, solver=None):
        """The point one Newton step from z for the fold without rows ``held_out``, whose
        objective has a_T = ``strength``. Returns (coef, intercept), or None if the fold's
        Hessian is singular (e.g. no curvature left for the intercept). ``solver`` is the
        fold's :meth:`fold_solver` if already built."""
        solver = solver or self.fold_solver(held_out, strength)
        if solver is None:
            return None
        rows = np.asarray(held_out)
        gradient = self.loss_gradient - self._rows_t(rows) @ self.slopes[rows] + strength * self.mask * self.z
        z = self.z - solver(gradient)
        if not np.all(np.isfinite(z)):
            return None
        return (z[:-1], z[-1]) if self.fit_intercept else (z, 0.0)

    def fold_solver(self, held_out, strength):
        """g ↦ ∇²F_T(z)⁻¹ g for the fold without rows ``held_out`` (a factorization kept for
        further steps with the same matrix), or None if that Hessian is not positive definite."""
        rows = np.asarray(held_out)
        try:
            if abs(strength - self.strength) <= 1e-12 * self.strength and 4 * rows.shape[0] < self.z.shape[0]:
                return self._woodbury_solver(rows)
            hessian = self.hessian + np.diag((strength - self.strength) * self.mask) \
                - self._gram(rows, self.curvatures[rows])
            factor = scipy.linalg.cho_factor(hessian)
        except (np.linalg.LinAlgError, ValueError):
            return None
        return lambda g: scipy.linalg.cho_solve(factor, g)

    def _woodbury_solver(self, rows):
        """(S − X̃_VᵀDX̃_V)⁻¹ with E = D^{1/2}X̃_V:  S⁻¹g + S⁻¹Eᵀ (I − E S⁻¹Eᵀ)⁻¹ E S⁻¹g."""
        if self._factor is None:
            self._factor = scipy.linalg.cho_factor(self.hessian)
        E = self._rows(rows) * np.sqrt(self.curvatures[rows])[:, None]
        Sinv_Et = scipy.linalg.cho_solve(self._factor, E.T)
        capacitance = scipy.linalg.lu_factor(np.eye(rows.shape[0]) - E @ Sinv_Et, check_finite=True)

        def solver(g):
            Sinv_g = scipy.linalg.cho_solve(self._factor, g)
            return Sinv_g + Sinv_Et @ scipy.linalg.lu_solve(capacitance, E @ Sinv_g)
        return solver
