import contextlib
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

import glru.costs

settings.register_profile(
    "glru", deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
settings.register_profile("ci", parent=settings.get_profile("glru"), derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else "glru")

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture
def shared_data():
    """Path of ../shared/data; skips the test on a fresh clone without it."""
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is not present (fresh clone)")
    return SHARED_DATA


@pytest.fixture
def rng():
    return np.random.default_rng(0)


# narrow sparse designs are held dense by the engines (glru.costs.dense_design_pays_off), and most
# test problems are narrow: so that their sparse cases test the sparse code, which is what runs on
# wider data, the conversion is off in every test but those that turn it on (``narrow_dense``)
NARROW_DENSE_COLUMNS = glru.costs.DENSE_MAX_COLUMNS


@contextlib.contextmanager
def dense_designs(columns):
    """Sparse designs of at most ``columns`` columns held dense where they pay (0: none)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(glru.costs, "DENSE_MAX_COLUMNS", columns)
        yield


@pytest.fixture(autouse=True, scope="session")
def sparse_stays_sparse():
    with dense_designs(0):
        yield


@pytest.fixture
def narrow_dense():
    """The shipped conversion of narrow sparse designs to dense arrays, on for this test."""
    with dense_designs(NARROW_DENSE_COLUMNS):
        yield
