"""glru's ``cross_val_score`` against exact refits on the configurations ``random_configurations`` draws.

For each configuration of each seed (Pipelines included) with every class in every fold, two
splits and scorers: StratifiedKFold with accuracy and shuffled KFold with f1. The scores must equal
those of exact refits (``tests.test_cross_validation.exact_scores``: every fold solved to rounding
level, ties to the first class) to the last bit. Prints one line a run, MISMATCH where they differ,
LATE where glru and the refits together take longer than ``--max-seconds``; exits 1 on any
mismatch or error. Not a test: it takes minutes, and the seeds it is given are ones the tests have
not seen (docs/benchmarks.md, forty-fifth session)::

    PYTHONPATH=. python benchmarks/scan_exactness.py --seeds 3131 --max-seconds 60
"""
import argparse
import signal
import sys
import time
import warnings

import numpy as np
from sklearn.model_selection import KFold

from bench_cross_validation import drawn_folds
from sklearn_ext import cross_val_score
from tests.test_cross_validation import exact_scores


class _Late(Exception):
    pass


def _late(*_):
    raise _Late()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", required=True)
    parser.add_argument("--count", type=int, default=40)
    parser.add_argument("--max-seconds", type=int, default=120, help="per run: glru and the exact refits")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    signal.signal(signal.SIGALRM, _late)
    bad = late = 0
    for drawn, name, X, y, estimator, stratified in drawn_folds(args.seeds, args.count, pipelines=True):
        folds, k = stratified.get_n_splits(), int(drawn.split(":")[1])
        for cv, scoring in ((stratified, None), (KFold(folds, shuffle=True, random_state=k), "f1")):
            label = f"{drawn} {name} {folds}-fold {scoring or 'accuracy'} {type(estimator).__name__}"
            signal.alarm(args.max_seconds)
            try:
                started = time.perf_counter()
                got = cross_val_score(estimator, X, y, cv=cv, scoring=scoring)
                seconds = time.perf_counter() - started
                expected = exact_scores(estimator, X, y, cv, scoring=scoring)
            except _Late:
                late += 1
                print(f"LATE {label}", flush=True)
                continue
            except Exception as error:  # (reported, counted, and the scan goes on)
                bad += 1
                print(f"ERROR {label} {error!r}"[:300], flush=True)
                continue
            finally:
                signal.alarm(0)
            same = np.array_equal(got, expected)
            bad += not same
            print(f"{'ok' if same else 'MISMATCH'} {label} glru {1e3 * seconds:.0f} ms"
                  + ("" if same else f" got {got} expected {expected}"), flush=True)
    print(f"seeds {args.seeds}: {bad} bad, {late} late")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
