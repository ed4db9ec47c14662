"""What every benchmark script shares: where the shared datasets are, and a wall-clock timer."""

import time
import warnings
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def timed(function, *args, **kwargs):
    """``(function(*args, **kwargs), wall-clock seconds)``, with warnings silenced: the baselines'
    convergence warnings would otherwise flood the tables."""
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = function(*args, **kwargs)
    return result, time.perf_counter() - start
