"""The folds' standardizations estimated at once (glru.standardization) against scikit-learn's
StandardScaler fitted on each fold's training rows."""

import numpy as np
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.preprocessing import StandardScaler

from glru.standardization import fold_standardizations


def _scaler_affine(X, rows, with_mean, with_std):
    scaler = StandardScaler(with_mean=with_mean, with_std=with_std).fit(X[rows])
    a = 1.0 / scaler.scale_ if with_std else np.ones(X.shape[1])
    return a, (-scaler.mean_ * a if with_mean else np.zeros(X.shape[1]))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(8, 60), d=st.integers(1, 6), folds=st.integers(2, 5),
       sparse=st.booleans(), with_mean=st.booleans(), with_std=st.booleans())
def test_fold_standardizations_are_those_of_each_folds_scaler(seed, n, d, folds, sparse, with_mean, with_std):
    """Columns of mixed scales and offsets (one of them constant on some folds' training rows,
    one constant everywhere): each fold's (a, c), and the full data's, agree with StandardScaler's
    fitted on those rows, to the rounding of a difference of sums of squares, and a constant
    feature keeps a = 1 as StandardScaler's scale of 1."""
    with_mean = with_mean and not sparse  # (StandardScaler refuses to centre sparse rows)
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * np.logspace(-3, 3, d) + (0 if sparse else rng.uniform(-100, 100, d))
    # constant on the training rows of the fold that holds out the other half, whose spread the
    # difference of sums of squares must not leave as a variance of rounding
    X[: n // 2, 0], X[n // 2:, 0] = 2.5, 1e3 * rng.standard_normal(n - n // 2)
    if d > 1:
        X[:, -1] = 4.0
    if sparse:
        X[rng.random((n, d)) < 0.3] = 0.0
    held_out = [np.sort(part) for part in np.array_split(rng.permutation(n), folds)] + [np.arange(n // 2, n)]
    Xs = sp.csr_matrix(X) if sparse else X
    full, scales, shifts = fold_standardizations(Xs, held_out, with_mean, with_std)
    for j, rows in enumerate([np.arange(n)] + [np.setdiff1d(np.arange(n), t) for t in held_out]):
        a, c = full if j == 0 else (scales[:, j - 1], shifts[:, j - 1])
        expected_a, expected_c = _scaler_affine(Xs, rows, with_mean, with_std)
        np.testing.assert_allclose(a, expected_a, rtol=1e-6)
        np.testing.assert_allclose(c, expected_c, rtol=1e-6, atol=1e-6 * (1 + np.abs(expected_c).max()))
