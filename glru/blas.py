"""BLAS threading for the many small dense products of the engines."""

import contextlib


def single_threaded_blas():
    """BLAS limited to one thread (threadpoolctl, a scikit-learn dependency) for work made of
    many small products (a fold's d̃ × d̃ factor, blocks of folds): spinning BLAS threads slow
    such calls by orders of magnitude when other processes use the CPU (measured on a9a.t's
    10-fold certificates: 2.0 ms per fold on one thread, 4–5 ms on two)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")
