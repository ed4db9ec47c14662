"""BLAS threading of the engines (glru.blas)."""

import numpy as np
import pytest
import scipy.linalg
import scipy.sparse as sp
from threadpoolctl import ThreadpoolController

from glru.blas import SCIPY_SINGLE_THREAD_DIM, _scipy_own_blas, blas_for, scipy_single_threaded_blas


def _threads():
    return {lib.filepath: lib.num_threads for lib in ThreadpoolController().lib_controllers if lib.user_api == "blas"}


def test_scipy_single_threaded_blas_limits_scipys_own_library_only():
    """Within ``scipy_single_threaded_blas()`` the BLAS that SciPy's wheel ships has one thread and
    numpy's keeps its own; afterwards both are as before. Where SciPy shares numpy's library there
    is nothing of its own to limit (no other library's threads to wait for)."""
    scipy.linalg.cholesky(np.eye(2))  # (both libraries loaded)
    own = _scipy_own_blas()
    if own is None:
        pytest.skip("SciPy uses numpy's BLAS here")
    mine = {lib.filepath for lib in own.lib_controllers}
    before = _threads()
    with scipy_single_threaded_blas():
        during = _threads()
    assert _threads() == before
    assert all(during[path] == 1 for path in mine)
    assert all(during[path] == before[path] for path in before if path not in mine)


def test_blas_for_chooses_by_data_size_and_factor_dimension():
    """All BLAS on one thread for small data; SciPy's alone for larger data whose factorizations
    are at most SCIPY_SINGLE_THREAD_DIM; no limit beyond."""
    rows = 1_100_000  # (one stored value each: 8.8 MB, past SINGLE_THREAD_BYTES)
    small = np.zeros((10, 10))
    large = sp.csr_matrix((np.ones(rows), np.zeros(rows, dtype=np.int32), np.arange(rows + 1)), shape=(rows, 5))
    with blas_for(small):
        assert set(_threads().values()) == {1}
    before, own = _threads(), _scipy_own_blas()
    mine = set() if own is None else {lib.filepath for lib in own.lib_controllers}
    with blas_for(large, dim=SCIPY_SINGLE_THREAD_DIM + 1):
        assert _threads() == before
    with blas_for(large, dim=SCIPY_SINGLE_THREAD_DIM):
        assert _threads() == {path: 1 if path in mine else threads for path, threads in before.items()}
