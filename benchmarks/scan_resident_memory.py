"""Peak resident memory of glru's and scikit-learn's ``cross_val_score`` on drawn configurations.

tracemalloc (``bench_cross_validation.py``'s peak memory) sees NumPy's buffers but not what C code
allocates: scikit-learn's LIBLINEAR nodes are not counted, glru's (built with NumPy) are. Here each
side runs in a process of its own: one run first (imports, caches), then the peak resident set
(VmHWM, reset through ``/proc/self/clear_refs``; Linux only) of a second run above the resident set
before it. The processes run with ``MALLOC_MMAP_THRESHOLD_`` and ``MALLOC_TRIM_THRESHOLD_`` fixed,
so that freed arrays go back to the system: otherwise the first run's freed heap holds every later
allocation, and both sides read 0. Prints, a configuration a line, both peaks and their ratio, and
the traced peaks of a third run::

    PYTHONPATH=. python benchmarks/scan_resident_memory.py --seed 4545 --count 40
"""
import argparse
import gc
import json
import os
import subprocess
import sys
import tracemalloc
import warnings

import numpy as np
from sklearn.model_selection import StratifiedKFold
from sklearn.model_selection import cross_val_score as sklearn_cross_val_score

from bench_cross_validation import random_configurations
from sklearn_ext import cross_val_score

MALLOC = {"MALLOC_MMAP_THRESHOLD_": "65536", "MALLOC_TRIM_THRESHOLD_": "0"}


def _status(key):
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(key))  # kB


def measure(seed, index, side):
    """(resident MiB above the start, traced MiB) of one side's run on configuration ``index``."""
    warnings.filterwarnings("ignore")
    name, X, y, estimator, folds = next(c for k, c in enumerate(random_configurations(seed, index + 1)) if k == index)
    run = cross_val_score if side == "glru" else sklearn_cross_val_score
    cv = StratifiedKFold(folds)
    run(estimator, X, y, cv=cv)
    gc.collect()
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")  # (resets VmHWM to the current resident set)
    before = _status("VmRSS:")
    run(estimator, X, y, cv=cv)
    resident = (_status("VmHWM:") - before) / 1024
    tracemalloc.start()
    run(estimator, X, y, cv=cv)
    traced = tracemalloc.get_traced_memory()[1] / 2 ** 20
    tracemalloc.stop()
    return resident, traced


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--count", type=int, default=40)
    parser.add_argument("--only", type=int, nargs="+", help="these indices of the seed's configurations")
    parser.add_argument("--child", nargs=2, metavar=("INDEX", "SIDE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.seed, int(args.child[0]), args.child[1])))
        return
    for k, (name, X, y, estimator, folds) in enumerate(random_configurations(args.seed, args.count)):
        if args.only and k not in args.only or np.bincount(y).min() < folds:
            continue
        peaks = {}
        for side in ("glru", "sklearn"):
            done = subprocess.run([sys.executable, __file__, "--seed", str(args.seed), "--child", str(k), side],
                                  capture_output=True, text=True, env={**os.environ, **MALLOC}, check=True)
            peaks[side] = json.loads(done.stdout.splitlines()[-1])
        (glru, glru_traced), (sklearn, sklearn_traced) = peaks["glru"], peaks["sklearn"]
        print(f"{args.seed}:{k} {name}: resident {glru:.1f} / {sklearn:.1f} MiB ({glru / max(sklearn, 0.1):.2f}×), "
              f"traced {glru_traced:.1f} / {sklearn_traced:.1f} MiB", flush=True)


if __name__ == "__main__":
    main()
