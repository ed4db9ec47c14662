"""Weighted Gram matrices (glru.newton_centres.weighted_gram) against dense products."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from glru import newton_centres
from glru.newton_centres import weighted_gram


def _rows_of_mixed_length(seed, n, d):
    """CSR rows from empty to full: short ones go through the sparse product, long ones through
    BLAS (nnz_i² > d²/DENSE_ROW_RATIO)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, d + 1, size=n)
    lengths[: n // 3] = np.minimum(rng.integers(0, 3, size=n // 3), d)
    dense = np.zeros((n, d))
    for i, length in enumerate(lengths):
        dense[i, rng.choice(d, size=length, replace=False)] = rng.standard_normal(length)
    return sp.csr_matrix(dense), dense


def _expected(dense, weights, fit_intercept, rows):
    block = dense if rows is None else dense[rows]
    if fit_intercept:
        block = np.hstack([block, np.ones((block.shape[0], 1))])
    return block.T @ (weights[:, None] * block)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 60), d=st.integers(1, 40), fit_intercept=st.booleans(),
       subset=st.booleans(), private=st.booleans(), by_pairs=st.booleans())
def test_property_weighted_gram_equals_the_dense_product(seed, n, d, fit_intercept, subset, private, by_pairs):
    """Sparse rows summed by their pairs of stored values (``by_pairs``) or by SciPy's product
    (its private kernel or its public one), dense rows by BLAS: the same matrix."""
    X, dense = _rows_of_mixed_length(seed, n, d)
    rng = np.random.default_rng(seed + 1)
    rows = np.sort(rng.choice(n, size=rng.integers(0, n + 1), replace=False)) if subset else None
    weights = rng.standard_normal(n if rows is None else rows.size)  # either sign
    kernel = newton_centres._csr_matmat if private else None
    original, newton_centres._csr_matmat = newton_centres._csr_matmat, kernel
    few_pairs, newton_centres.FEW_PAIRS = newton_centres.FEW_PAIRS, n * d * d if by_pairs else -1
    try:
        gram = weighted_gram(X, weights, fit_intercept, rows)
    finally:
        newton_centres._csr_matmat, newton_centres.FEW_PAIRS = original, few_pairs
    expected = _expected(dense, weights, fit_intercept, rows)
    scale = 1.0 + np.abs(_expected(np.abs(dense), np.abs(weights), fit_intercept, rows))
    np.testing.assert_allclose(gram, expected, rtol=0, atol=1e-12 * scale.max())
    dense_gram = weighted_gram(dense, weights, fit_intercept, rows)
    np.testing.assert_allclose(dense_gram, expected, rtol=0, atol=1e-12 * scale.max())


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 60), d=st.integers(1, 40), fit_intercept=st.booleans(),
       sparse=st.booleans())
def test_property_single_precision_gram_is_the_product_to_float32(seed, n, d, fit_intercept, sparse):
    """``single``: the rows that go dense multiplied and accumulated in float32 (more of them,
    DENSE_ROW_RATIO_SINGLE): the product to float32's rounding."""
    X, dense = _rows_of_mixed_length(seed, n, d)
    weights = np.random.default_rng(seed + 1).standard_normal(n)
    gram = weighted_gram(X if sparse else dense, weights, fit_intercept, single=True)
    scale = 1.0 + np.abs(_expected(np.abs(dense), np.abs(weights), fit_intercept, None))
    np.testing.assert_allclose(gram, _expected(dense, weights, fit_intercept, None), rtol=0,
                               atol=(d + 4) * 2e-7 * scale.max())


@pytest.mark.parametrize("few_pairs", [-1, 1 << 30], ids=["product", "pairs"])
def test_duplicate_and_unsorted_entries_add_up(monkeypatch, few_pairs):
    """A CSR matrix not in canonical form (a value stored twice, indices out of order) has the
    Gram matrix of its sum, by either sparse path."""
    monkeypatch.setattr(newton_centres, "FEW_PAIRS", few_pairs)
    X = sp.csr_matrix((np.array([1.0, 2.0, -3.0, 0.5, 4.0]), np.array([2, 0, 2, 1, 1]), np.array([0, 3, 3, 5])),
                      shape=(3, 3))
    X.has_sorted_indices = X.has_canonical_format = False
    dense = np.array([[2.0, 0.0, -2.0], [0.0, 0.0, 0.0], [0.0, 4.5, 0.0]])
    weights = np.array([0.5, 7.0, -1.5])
    rows = np.array([0, 2])
    for fit_intercept in (False, True):
        np.testing.assert_allclose(weighted_gram(X, weights, fit_intercept),
                                   _expected(dense, weights, fit_intercept, None), rtol=0, atol=1e-14)
        np.testing.assert_allclose(weighted_gram(X, weights[rows], fit_intercept, rows),
                                   _expected(dense, weights[rows], fit_intercept, rows), rtol=0, atol=1e-14)


@pytest.mark.parametrize("index_type", [np.int32, np.int64])
def test_sparse_products_take_either_index_type(index_type):
    """SciPy's kernel takes one index type for all arrays; 64-bit indices (large X) work too."""
    X, dense = _rows_of_mixed_length(3, 50, 30)
    X.indices, X.indptr = X.indices.astype(index_type), X.indptr.astype(index_type)
    weights = np.random.default_rng(4).standard_normal(50)
    np.testing.assert_allclose(weighted_gram(X, weights, True), _expected(dense, weights, True, None),
                               rtol=0, atol=1e-11)


@pytest.mark.parametrize("n, d, density, chunks", [(30_000, 200, 0.015, 3), (16_000, 480, 0.02, 3)])
def test_chunked_sparse_products_accumulate(monkeypatch, n, d, density, chunks):
    """Many short rows: the sparse products run a chunk of rows at a time (2**15 stored values, or
    d²/4 where that is more), and add up, on all rows and on a subset, with an intercept."""
    X = sp.random(n, d, density=density, format="csr", random_state=5)  # 3 and 10 values a row: sparse
    weights = np.random.default_rng(6).standard_normal(n)
    products, product = [], newton_centres._add_transpose_product
    monkeypatch.setattr(newton_centres, "_add_transpose_product", lambda *args: products.append(1) or product(*args))
    rows = np.arange(0, n, 2)
    for fit_intercept, chosen in ((False, None), (True, rows)):
        products.clear()
        chosen_weights = weights if chosen is None else weights[chosen]
        expected = (X if chosen is None else X[chosen]).toarray()
        np.testing.assert_allclose(weighted_gram(X, chosen_weights, fit_intercept, chosen),
                                   _expected(expected, chosen_weights, fit_intercept, None), rtol=0, atol=1e-9)
        assert len(products) == (chunks if chosen is None else -(-chunks // 2))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 60), d=st.integers(1, 40), fit_intercept=st.booleans(),
       sparse=st.booleans())
def test_property_gram_plan_equals_weighted_gram(seed, n, d, fit_intercept, sparse):
    """A GramPlan (rows split and the sparse rows' transpose kept once) gives weighted_gram's
    matrix for every weights it is called with, rows of mixed length, either sign."""
    X, dense = _rows_of_mixed_length(seed, n, d)
    plan = newton_centres.GramPlan(X if sparse else dense, fit_intercept)
    rng = np.random.default_rng(seed + 2)
    for _ in range(2):
        weights = rng.standard_normal(n)
        expected = _expected(dense, weights, fit_intercept, None)
        scale = 1.0 + np.abs(_expected(np.abs(dense), np.abs(weights), fit_intercept, None))
        np.testing.assert_allclose(plan(weights), expected, rtol=0, atol=1e-12 * scale.max())
