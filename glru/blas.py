"""BLAS threading for the many small dense products of the engines."""

import contextlib
import functools

import scipy.sparse as sp

# at most this much data (X's stored values), BLAS runs on one thread: madelon's 2.4 MB made 10-fold
# 35 % faster on one thread than on two (a 501 × 501 Cholesky factorization 3× faster), arcene's
# 16 MB leave-one-out 15–20 % slower
SINGLE_THREAD_BYTES = 1 << 23


def single_threaded_blas():
    """BLAS limited to one thread (threadpoolctl, a scikit-learn dependency) for work made of
    many small products (a fold's d̃ × d̃ factor, blocks of folds): spinning BLAS threads slow
    such calls by orders of magnitude when other processes use the CPU (measured on a9a.t's
    10-fold certificates: 2.0 ms per fold on one thread, 4–5 ms on two). numpy and SciPy each
    load their own OpenBLAS, whose idle threads spin: a 14 652-term dot product after a SciPy
    factorization took 15 ms instead of 15 µs, a quarter of a9a.t's 10-fold with a
    StandardScaler (0.58 s on two threads, 0.35 s on one)."""
    controller = _controller()
    return contextlib.nullcontext() if controller is None else controller.limit(limits=1, user_api="blas")


def small(X):
    """Whether X (ndarray or sparse) stores at most ``SINGLE_THREAD_BYTES`` of values."""
    return 8 * (X.nnz if sp.issparse(X) else X.size) <= SINGLE_THREAD_BYTES


def blas_for(X):
    """:func:`single_threaded_blas` for work on a :func:`small` X, else no limit."""
    return single_threaded_blas() if small(X) else contextlib.nullcontext()


@functools.cache
def _controller():
    """One threadpoolctl controller, made at first use (the BLAS libraries numpy and SciPy load
    are loaded by then): ``threadpool_limits`` scans the process's libraries on every call, 2.7 ms
    each, 0.41 s of a 1.3 s leave-one-out on iris whose 150 fold solves each limit BLAS."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover
        return None
    return ThreadpoolController()
