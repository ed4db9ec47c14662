"""A fold's Hessian at its start, from one Gram matrix of the full data.

A fold whose columns a per-feature affine step rescales (a ``StandardScaler`` fitted on its
training rows) starts from the full fit carried over to its scaling: its training rows' decision
values are the full fit's, and so are their curvatures ℓ''. Its rows are an affine image of the
full design's, x̃_f = M x̃ with M = diag(r) + u e_kᵀ (k a constant coordinate: the intercept's, or a
penalized intercept column). So its Hessian there,

    H_f = (1/n_f) Σ_{i ∈ train} ℓ''_i M x̃_i x̃_iᵀ Mᵀ + λP = (1/n_f) (M S Mᵀ − G_test) + λP,

needs S = Σ_i ℓ''_i x̃_i x̃_iᵀ, the full data's Gram matrix at the full fit, formed once for all
folds, and the Gram matrix G_test of the fold's held-out rows: a K-th of the rows where each fold
formed its own (sparse 7032 × 103, 10-fold, StandardScaler + LinearSVC: 3.8 ms a fold for its
first Hessian). M S Mᵀ costs O(d̃²), M being diagonal but for one column.

Only a start for Newton steps (:mod:`glru.semismooth`), which the solver's gap checks judge: a
Hessian off by rounding moves nothing that is certified.
"""

import numpy as np

from .newton_centres import weighted_gram


class StartGram:
    """S = Σ_i ℓ''(y_i, x̃_i·z) x̃_i x̃_iᵀ of (X, y) at z = (coef, intercept), the start of the
    folds (X̃ = [X, 1] with ``fit_intercept``), and the curvatures ℓ''_i behind it. ``known``:
    (curvatures ℓ''_i/n, H) of a Hessian H = S/n + λP that semismooth Newton left on the full
    problem (:attr:`glru.problem.Problem.known_hessian`; ``penalty`` its λ), taken where its
    curvatures are z's (the full fit's last steps: 2.7 ms on sparse 7032 × 103, 6.1 ms on
    8097 × 191 to form S again), else S is formed."""

    def __init__(self, X, y, loss, coef, intercept, fit_intercept, known=None, penalty=None):
        self.fit_intercept = fit_intercept
        self.curvatures = loss.second_derivative(y, X @ coef + intercept)
        n, d = X.shape
        if known is not None and np.array_equal(known[0], self.curvatures / n):
            # the Hessian a solve left for these curvatures (mean form, λ on the penalized coordinates)
            self.gram = known[1] * n
            self.gram[np.arange(d), np.arange(d)] -= n * penalty.lam
        else:
            self.gram = weighted_gram(X, self.curvatures, fit_intercept)

    def fold_hessian(self, train, test, X_test, penalty, scales, shifts, constant):
        """(curvatures, H): the mean-form row weights ℓ''_i/n_f of the fold's training rows ``train``
        at the start, and the fold's Hessian H for them (λ on the penalized coordinates), its rows
        x̃_f = r∘x̃ + u·x̃_k for ``scales`` r and ``shifts`` u (d̃,) and ``constant`` k (a coordinate of
        x̃ that is the same in every row; None where u is 0). ``X_test``: the fold's held-out rows,
        as its own design has them."""
        n_train = len(train)
        gram = mapped_gram(self.gram, scales, shifts, constant)
        gram -= weighted_gram(X_test, self.curvatures[test], self.fit_intercept)
        gram /= n_train
        d = X_test.shape[1]
        gram[np.arange(d), np.arange(d)] += penalty.lam  # (the intercept is not penalized)
        return self.curvatures[train] / n_train, gram


def mapped_gram(gram, scales, shifts, constant):
    """M S Mᵀ for S = ``gram`` (symmetric) and M = diag(r) + u e_kᵀ: the Gram matrix of the rows
    x ↦ r∘x + u·x_k, r = ``scales``, u = ``shifts``, k = ``constant`` (None: u = 0), in O(d̃²)."""
    mapped = gram * scales[:, None]
    mapped *= scales  # (no d̃ × d̃ outer product: 2.5 → 0.6 ms at d̃ = 459)
    if constant is None:
        return mapped
    if shifts[constant] != 0:
        raise ValueError("the constant coordinate must map to itself (a shift of 0 there).")
    cross = scales * gram[:, constant]  # (diag(r) S e_k)
    mapped += np.outer(cross, shifts)
    mapped += np.outer(shifts, cross)
    mapped += gram[constant, constant] * np.outer(shifts, shifts)
    return mapped
