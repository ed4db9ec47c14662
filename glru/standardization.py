"""Per-feature standardizations of many folds' training rows at once: mean 0 and variance 1 (or
either alone), as scikit-learn's ``StandardScaler`` computes them on each fold, estimated from the
column moments of all rows and each fold's held-out rows. That is one pass over X and one over each
fold's held-out rows, where fitting each fold's scaler passes over (a copy of) its training rows:
with five folds of dense 20000 × 600, five copies of 16000 rows and their moments.

Estimates only, to start the folds' solves in their own scaling (:mod:`glru.fold_steps`): a
fold's variance is the full data's sum of squares less its held-out rows' part, a difference whose
rounding a fold's own scaler does not share. Nothing certified uses them.

For rows x_i, i ∈ T held out of n, with μ and v the mean and variance of all rows, t = n − |T|,
s = Σ_T (x_i − μ) and q = Σ_T (x_i − μ)², the training rows' mean is μ − s/t and their variance
(n·v − q)/t − (s/t)².
"""

import numpy as np
import scipy.sparse as sp

from .duality import EPS

MOMENT_CHUNK_FLOATS = 1 << 18  # dense rows a chunk at a time: the deviations' temporary stays at 2 MiB


def relative_scaling(old, new):
    """(ρ, t) with z' = ρ∘z + t for the columns z = a∘x + c scaled by ``old`` = (a, c) and
    z' = a'∘x + c' by ``new`` = (a', c'): ρ = a'/a and t = c' − ρ∘c, a fold's scaling in terms of the
    full data's. a' and c' may be (d, m), one fold's scaling a column. ρ is not finite where a
    column of ``old`` is scaled by 0."""
    (a, c), (a_new, c_new) = old, new
    if np.ndim(a_new) > 1:
        a, c = a[:, None], c[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = a_new / a
    return ratios, c_new - ratios * c


def fold_standardizations(X, held_out, with_mean=True, with_std=True):
    """((a, c) of all rows, scales, shifts): per-feature a∘x + c standardizing the rows of X, and
    as the columns of the (d, K) arrays ``scales`` and ``shifts`` those standardizing the rows of
    X outside each of the index arrays ``held_out``. ``with_mean`` and ``with_std`` as
    StandardScaler's: without the one, c = 0; without the other, a = 1. A feature constant on the
    rows (to rounding, scikit-learn's rule) keeps a = 1, as scikit-learn's scale of 1 for it."""
    n = X.shape[0]
    mean = np.asarray(X.sum(axis=0), dtype=float).ravel() / n
    sums_of_squares = _moments(X, mean)[1]
    full = _affine(mean, sums_of_squares / n, n, with_mean, with_std)
    scales, shifts = [], []
    for rows in held_out:
        t = n - rows.size
        deviations, squares = _moments(X[rows], mean)
        shift = deviations / t
        # (the difference's rounding, that of sums of n squares, on top of scikit-learn's for a variance of t rows)
        rounding = n * EPS * ((sums_of_squares + squares) / t + shift ** 2)
        a, c = _affine(mean - shift, np.maximum((sums_of_squares - squares) / t - shift ** 2, 0.0), t, with_mean,
                       with_std, rounding)
        scales.append(a), shifts.append(c)
    return full, np.column_stack(scales), np.column_stack(shifts)


def _moments(X, centre):
    """(Σ_i (x_i − centre), Σ_i (x_i − centre)²) over the rows of X, per column."""
    d = X.shape[1]
    if sp.issparse(X):
        X = X.tocsr()
        absent = X.shape[0] - np.bincount(X.indices, minlength=d)  # (their deviation is −centre)
        deviations = X.data - centre[X.indices]
        return (np.bincount(X.indices, deviations, minlength=d) - absent * centre,
                np.bincount(X.indices, deviations ** 2, minlength=d) + absent * centre ** 2)
    sums, squares = np.zeros(d), np.zeros(d)
    size = max(1, MOMENT_CHUNK_FLOATS // max(d, 1))
    for start in range(0, X.shape[0], size):
        deviations = X[start:start + size] - centre
        sums += deviations.sum(axis=0)
        squares += np.einsum("ij,ij->j", deviations, deviations)
    return sums, squares


def _affine(mean, variance, n, with_mean, with_std, rounding=0.0):
    """(a, c) of StandardScaler's transform for these column moments of n rows; a variance within
    ``rounding`` more than scikit-learn's allowance is a constant feature's."""
    a = np.ones_like(mean)
    if with_std:
        # scikit-learn's rule: a variance within the rounding of its computation is that of a constant feature
        constant = variance <= n * EPS * variance + (n * mean * EPS) ** 2 + rounding
        scale = np.sqrt(variance)
        a = np.where(constant | (scale < 10 * EPS), 1.0, 1.0 / np.where(scale > 0, scale, 1.0))
    return a, (-mean * a if with_mean else np.zeros_like(mean))
