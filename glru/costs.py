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


def dense_design_pays_off(X):
    """Whether a CSR design X is better held as a dense array by the solvers and engines: at most
    ``DENSE_MAX_COLUMNS`` columns and ``DENSE_MAX_ENTRIES`` entries (1 MiB: the memory it adds is
    what a fold's own copy of sparse rows takes), and either at most ``DENSE_MAX_FILL`` entries a
    stored value, where BLAS's products and Gram matrices cost about what the sparse ones do and
    the per-call work of SciPy's sparse routines (validation, index arrays: 3–15 µs a product on
    300 × 15) is gone, or so few entries (``DENSE_FREE_ENTRIES``) that a dense product costs less
    than that per-call work alone.

    Measured by cross-validation (5- and 10-fold) of the 18 sparse configurations of at most 31
    columns drawn by ``benchmarks/bench_cross_validation.py --random`` from seeds 3303 to 9909
    (338 × 14 to 7324 × 16, 2–19 % stored; LinearSVC and LogisticRegression, five after a
    StandardScaler): 15 took 0.78–0.90 of the time; the three not held dense (two of 9–10 entries
    a stored value, one of 141,000 entries) 0.98–1.03. Narrow only: wider designs were faster
    dense in some places and slower in others, with more memory (LinearSVC on sparse 341 × 171,
    12.7 % stored: 1.53 times as long, its folds no longer LIBLINEAR's, whose rules take sparse
    rows; mushrooms, 8124 × 112, LogisticRegression 10-fold: 1.1 times as long, peak memory 12
    against 6 MiB). Dense, sparse 30000 × 30 with 23 and 8.3 entries a stored value took 1.03
    and 1.01 times as long, 9000 × 28 with 1 % stored 1.09–1.16."""
    if not sp.issparse(X):
        return False
    entries = X.shape[0] * X.shape[1]
    return X.shape[1] <= DENSE_MAX_COLUMNS and entries <= DENSE_MAX_ENTRIES and (
        entries <= DENSE_MAX_FILL * X.nnz or entries <= DENSE_FREE_ENTRIES)


DENSE_MAX_COLUMNS, DENSE_MAX_ENTRIES, DENSE_MAX_FILL, DENSE_FREE_ENTRIES = 32, 2 ** 17, 8, 2 ** 15


def factor_seconds(dim):
    """A Cholesky factorization of a dense dim × dim matrix."""
    return DENSE_SECONDS * dim ** 3 / 3
