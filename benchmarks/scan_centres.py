"""The Newton centres' decision (``glru.cross_validation._centres_pay_off``) against the clock.

For each K-fold configuration drawn by ``bench_cross_validation.random_configurations`` (no Pipeline)
whose engine asks the decision, times ``GLRUCrossValidator`` without a refit (as ``cross_val_score``
runs it) with the centres forced on and forced off, fastest of ``--repeats``, and prints the rows per
coordinate, the ratio of the two cost estimates (Newton–CG steps / centres), the decision taken and
the measured gain of the centres (time without / time with). A decision is marked WRONG where the
centres' side is more than 5 % off. Used for the forty-third session's ``CHORD_ROWS_PER_DIM``
(docs/benchmarks.md)::

    PYTHONPATH=. python benchmarks/scan_centres.py --seeds 1212 2323 3303 6161 9909
"""
import time
import warnings

import numpy as np

import glru.cross_validation as engine
from bench_cross_validation import drawn_folds, scan_arguments
from sklearn_ext import GLRUCrossValidator
from sklearn_ext._adapters import linear_model


def _timed(estimator, X, y, cv, repeats):
    best = np.inf
    for _ in range(repeats):
        started = time.perf_counter()
        GLRUCrossValidator(estimator, cv=cv)._fit(X, y, refit=False)
        best = min(best, time.perf_counter() - started)
    return best


def main():
    args = scan_arguments(__doc__.split("\n")[0], [1212, 2323, 3303, 6161, 9909], 5)
    warnings.filterwarnings("ignore")
    decide = engine._centres_pay_off
    state = {}

    def spied(*arguments):
        state["decided"] = decide(*arguments)
        return state["decided"] if state.get("forced") is None else state["forced"]

    engine._centres_pay_off = spied
    for label, name, X, y, estimator, cv in drawn_folds(args.seeds, args.count):
        state.clear()
        if _timed(estimator, X, y, cv, 1) > args.max_seconds or "decided" not in state:
            continue
        state["forced"] = True
        with_centres = _timed(estimator, X, y, cv, args.repeats)
        state["forced"] = False
        without = _timed(estimator, X, y, cv, args.repeats)
        model = linear_model(estimator)
        design = model.design(X)
        dropped = [test for _, test in cv.split(X, y)]
        estimate = engine._centres_estimate(design, model.fit_intercept, dropped)
        rows_per_dim = design.shape[0] / (design.shape[1] + model.fit_intercept)
        gain = without / with_centres
        wrong = abs(gain - 1) > 0.05 and (gain > 1) != state["decided"]
        print(f"{label} {name} {cv.get_n_splits()}-fold {type(estimator).__name__}(C={estimator.C:.3g}) "
              f"rows/dim {rows_per_dim:.1f} estimate {estimate:.2f} centres {state['decided']} "
              f"with {1e3 * with_centres:.1f} ms without {1e3 * without:.1f} ms gain {gain:.2f}"
              + (" WRONG" if wrong else ""), flush=True)


if __name__ == "__main__":
    main()
