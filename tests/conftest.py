import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

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
