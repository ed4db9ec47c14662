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


def scipy_single_threaded_blas():
    """SciPy's own BLAS (where it loads one of its own, apart from numpy's) limited to one thread,
    numpy's left as it is: for work whose big products are numpy's and whose factorizations
    (SciPy's) are of at most ``SCIPY_SINGLE_THREAD_DIM``. Each switch from a numpy product on
    two threads to a SciPy factorization on two waits for the other library's spinning threads:
    a Gram matrix of 8000 × 175 and the Cholesky factor of it took 41 ms so, 6.4 ms with SciPy's
    BLAS on one thread (numpy's Gram alone 4.4 ms), where limiting both would make large numpy
    products slower (a 20000 × 600 Gram: 84 ms on two threads, 133 ms on one). SciPy's factors of
    2000 and 4000 took 30 % and 55 % longer on one thread: beyond that dimension threads stay."""
    own = _scipy_own_blas()
    return contextlib.nullcontext() if own is None else own.limit(limits=1)


SCIPY_SINGLE_THREAD_DIM = 1024


def small(X):
    """Whether X (ndarray or sparse) stores at most ``SINGLE_THREAD_BYTES`` of values."""
    return 8 * (X.nnz if sp.issparse(X) else X.size) <= SINGLE_THREAD_BYTES


def blas_for(X, dim=None):
    """:func:`single_threaded_blas` for work on a :func:`small` X; else, where the dimension of its
    factorizations (``dim``, X's columns if None) is at most ``SCIPY_SINGLE_THREAD_DIM``,
    :func:`scipy_single_threaded_blas`; else no limit."""
    if small(X):
        return single_threaded_blas()
    return scipy_single_threaded_blas() if (X.shape[1] if dim is None else dim) <= SCIPY_SINGLE_THREAD_DIM \
        else contextlib.nullcontext()


@functools.cache
def _scipy_own_blas():
    """A threadpoolctl controller of the BLAS libraries SciPy ships in its own package (a wheel's
    ``scipy.libs``), or None where it shares numpy's (one library: no spinning threads of
    another to wait for) or threadpoolctl is missing."""
    controller = _controller()
    if controller is None:
        return None
    import os

    import scipy

    root = os.path.realpath(os.path.dirname(scipy.__file__))  # …/scipy; its wheel's libraries: …/scipy.libs
    own = [lib.filepath for lib in controller.lib_controllers
           if lib.user_api == "blas" and os.path.realpath(lib.filepath).startswith(root)]
    return controller.select(filepath=own) if own else None


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
