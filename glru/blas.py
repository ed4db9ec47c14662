"""BLAS threading for the many small dense products of the engines."""

import contextlib
import functools


def single_threaded_blas():
    """BLAS limited to one thread (threadpoolctl, a scikit-learn dependency) for work made of
    many small products (a fold's d̃ × d̃ factor, blocks of folds): spinning BLAS threads slow
    such calls by orders of magnitude when other processes use the CPU (measured on a9a.t's
    10-fold certificates: 2.0 ms per fold on one thread, 4–5 ms on two)."""
    controller = _controller()
    return contextlib.nullcontext() if controller is None else controller.limit(limits=1, user_api="blas")


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
