"""The engine's preconditioner of the folds' Newton–CG steps (the full fit's Hessian,
``glru.fold_steps.full_fit_preconditioner``) against the clock.

For each K-fold configuration drawn by ``bench_cross_validation.random_configurations`` (no Pipeline)
whose engine forms that preconditioner (folds without Newton centres taking Newton–CG steps, where
``glru.cross_validation._Engine.steps_preconditioner`` says it pays), times ``GLRUCrossValidator``
without a refit (as ``cross_val_score`` runs it) with the preconditioner and with it withheld, fastest
of ``--repeats`` runs alternating, checks that both give the same scores, and prints the time ratio
(with / without). Used for the forty-fourth session (docs/benchmarks.md)::

    PYTHONPATH=. python benchmarks/scan_preconditioner.py --seeds 4545 1212 2323 3303 6161 9909
"""
import time
import warnings

import numpy as np

import glru.cross_validation as engine
from bench_cross_validation import drawn_folds, scan_arguments
from sklearn_ext import GLRUCrossValidator


def _run(estimator, X, y, cv):
    started = time.perf_counter()
    validator = GLRUCrossValidator(estimator, cv=cv)._fit(X, y, refit=False)
    return time.perf_counter() - started, validator.scores_


def main():
    args = scan_arguments(__doc__.split("\n")[0], [4545, 1212, 2323, 3303, 6161, 9909], 3)
    warnings.filterwarnings("ignore")
    form = engine.full_fit_preconditioner
    state = {}

    def spied(*arguments):
        if state.get("withheld"):
            return None
        formed = form(*arguments)
        state["formed"] = state.get("formed") or formed is not None
        return formed

    engine.full_fit_preconditioner = spied
    for label, name, X, y, estimator, cv in drawn_folds(args.seeds, args.count):
        state.clear()
        seconds, scores = _run(estimator, X, y, cv)
        if seconds > args.max_seconds or not state.get("formed"):
            continue
        times = {False: np.inf, True: np.inf}
        for withheld in [False, True] * args.repeats:
            state["withheld"] = withheld
            seconds, got = _run(estimator, X, y, cv)
            assert np.array_equal(got, scores), label
            times[withheld] = min(times[withheld], seconds)
        print(f"{label} {name} {cv.get_n_splits()}-fold {type(estimator).__name__}(C={estimator.C:.3g}) "
              f"with {1e3 * times[False]:.1f} ms without {1e3 * times[True]:.1f} ms "
              f"ratio {times[False] / times[True]:.2f}", flush=True)


if __name__ == "__main__":
    main()
