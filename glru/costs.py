"""Estimated seconds of the linear algebra the solvers and engines choose between.

Measured on the 2-core machine CI runs on (one BLAS thread): a multiply-add of BLAS, an n × n
eigendecomposition per n³ (1.7e-10 at n = 2000 on two threads, more below), a term nnz_i² of a
sparse Gram matrix (:func:`glru.newton_centres.weighted_gram`), a stored value in a product of
CSR X with a block of vectors. Only choices of speed depend on them, never a result.
"""

import scipy.sparse as sp

DENSE_SECONDS = 1.3e-10
EIGH_SECONDS = 2.5e-10
SPARSE_GRAM_SECONDS = 5e-9
SPARSE_PRODUCT_SECONDS = 5e-10
# Python's share of one conjugate-gradient iteration of a block of folds (glru.fold_steps), whatever
# their size: 37–60 µs measured on sparse 968 × 134 (2 % and 10 % dense, 5 folds)
BLOCK_ITERATION_SECONDS = 5e-5


def gram_seconds(X, rows=None):
    """A weighted Gram matrix X̃ᵀDX̃ (:func:`glru.newton_centres.weighted_gram`), of the ``rows``
    only if given."""
    n, d = X.shape
    if sp.issparse(X):
        counts = X.getnnz(axis=1).astype(float)
        counts = counts if rows is None else counts[rows]
        return SPARSE_GRAM_SECONDS * float(counts @ counts)
    return DENSE_SECONDS * (n if rows is None else len(rows)) * d * d / 2


def product_seconds(X):
    """A product of X (or Xᵀ) with one vector."""
    return SPARSE_PRODUCT_SECONDS * X.nnz if sp.issparse(X) else DENSE_SECONDS * X.size


def factor_seconds(dim):
    """A Cholesky factorization of a dense dim × dim matrix."""
    return DENSE_SECONDS * dim ** 3 / 3
