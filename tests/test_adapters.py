"""The mapping of scikit-learn's steps and models onto glru's objective (sklearn_ext._adapters)."""

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import MaxAbsScaler, MinMaxScaler, Normalizer, RobustScaler, StandardScaler
from sklearn.svm import LinearSVC

from sklearn_ext._adapters import affine_scaling, linear_model

SCALERS = [StandardScaler(), StandardScaler(with_mean=False), StandardScaler(with_std=False), MinMaxScaler((-1, 2)),
           MaxAbsScaler(), RobustScaler(), RobustScaler(with_centering=False, quantile_range=(10, 90))]


@pytest.mark.parametrize("scaler", SCALERS, ids=repr)
def test_affine_scaling_is_what_the_scaler_computes(scaler):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 5)) * [1, 10, 0.1, 3, 1] + [0, 5, -2, 0, 1]
    X[:, 4] = 7.0  # a constant column
    a, c = affine_scaling(scaler.fit(X))
    Y = rng.standard_normal((6, 5))
    np.testing.assert_allclose(scaler.transform(Y), Y * a + c, rtol=1e-14, atol=1e-14)


def test_affine_scaling_is_none_for_other_steps():
    X = np.random.default_rng(1).standard_normal((10, 3))
    assert affine_scaling(MinMaxScaler(clip=True).fit(X)) is None
    assert affine_scaling(Normalizer().fit(X)) is None
    assert affine_scaling("passthrough") is None


@pytest.mark.parametrize("scaler", SCALERS, ids=repr)
@pytest.mark.parametrize("estimator", [LogisticRegression(), LinearSVC(intercept_scaling=2.0)], ids=repr)
@pytest.mark.parametrize("n_classes", [2, 3])
def test_carried_over_model_gives_the_same_decision_values(scaler, estimator, n_classes):
    """A model on data scaled as on all rows, carried over to the scaling of a subset (a fold's),
    gives the same decision values on any row: the start of a fold of a Pipeline."""
    rng = np.random.default_rng(2)
    X = rng.standard_normal((50, 4)) * [1, 10, 0.1, 3] + [0, 5, -2, 1]
    old, new = affine_scaling(scaler.fit(X)), affine_scaling(type(scaler)(**scaler.get_params()).fit(X[:35]))
    model = linear_model(estimator)
    width = 4 + (model.intercept_scaling is not None)
    coef = rng.standard_normal((n_classes, width) if n_classes > 2 else width)
    intercept = rng.standard_normal(n_classes) if n_classes > 2 else 0.7
    moved = model.carried_over(coef, intercept, old, new)
    Y = rng.standard_normal((8, 4)) * 5

    def decisions(weights, bias, scaling):
        return model.design(Y * scaling[0] + scaling[1]) @ np.asarray(weights).T + bias

    np.testing.assert_allclose(decisions(*moved, new), decisions(coef, intercept, old), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("layout", ["dense", "csr", "unsorted", "int64", "empty rows", "duplicates"])
def test_design_appends_the_intercept_scaling_column(layout):
    """LinearSVC's design: X with a column of ``intercept_scaling`` appended, the same matrix as
    SciPy's hstack makes, canonical as it leaves it (glru.problem.with_constant_column)."""
    import scipy.sparse as sp

    rng = np.random.default_rng(3)
    X = rng.standard_normal((30, 7)) * (rng.random((30, 7)) < 0.4)
    if layout == "empty rows":
        X[[0, 4, 29]] = 0.0
    model = linear_model(LinearSVC(intercept_scaling=2.5))
    if layout == "dense":
        np.testing.assert_array_equal(model.design(X), np.hstack([X, np.full((30, 1), 2.5)]))
        return
    A = sp.csr_matrix(X)
    if layout == "unsorted":  # each row's entries reversed
        A = sp.csr_matrix((np.concatenate([A.data[s:e][::-1] for s, e in zip(A.indptr[:-1], A.indptr[1:])]),
                           np.concatenate([A.indices[s:e][::-1] for s, e in zip(A.indptr[:-1], A.indptr[1:])]),
                           A.indptr), shape=A.shape)
        A.has_sorted_indices = False
    if layout == "duplicates":  # each value stored twice, as two halves
        rows = np.repeat(np.arange(30), np.diff(A.indptr))
        order = np.argsort(np.concatenate([rows, rows]), kind="stable")
        A = sp.csr_matrix((np.concatenate([A.data / 2, A.data / 2])[order],
                           np.concatenate([A.indices, A.indices])[order], 2 * A.indptr), shape=A.shape)
        assert A.nnz == 2 * np.count_nonzero(X)
    if layout == "int64":
        A = sp.csr_matrix((A.data, A.indices.astype(np.int64), A.indptr.astype(np.int64)), shape=A.shape)
    design = model.design(A)
    design.check_format(full_check=True)
    assert sp.issparse(design) and design.shape == (30, 8) and design.nnz == np.count_nonzero(X) + 30
    np.testing.assert_array_equal(design.toarray(), np.hstack([X, np.full((30, 1), 2.5)]))
    # canonical, as SciPy's hstack leaves it: each row's indices increasing, the new column last
    assert all(np.all(np.diff(design.indices[start:stop]) > 0) and design.indices[stop - 1] == 7
               for start, stop in zip(design.indptr[:-1], design.indptr[1:]))
