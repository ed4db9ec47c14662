"""Leave-one-out cross-validation of multinomial LogisticRegression (scikit-learn's default for
three or more classes) on all 1797 rows of ``load_digits``: glru's exact engine
(:mod:`glru.multinomial_cv`, through :class:`sklearn_ext.GLRUCrossValidator`) against
scikit-learn's ``cross_val_score(LogisticRegression(), X, y, cv=LeaveOneOut())``, both timed in
this process with the default thread settings.

Three scalings of X: ``X/16`` (pixels in [0, 1]), ``StandardScaler().fit_transform(X)`` (fitted
on all rows, as a fixed preprocessing of the data set; it is not part of the cross-validated
model) and the raw pixels 0–16, on which the penalty is weakest (C = 1 on X is C = 256 on X/16)
and scikit-learn's lbfgs stops every fold at ``max_iter=100`` short of its optimum. scikit-learn's full leave-one-out takes long (one lbfgs fit per row), so by default it is
timed on a random sample of folds and scaled to all 1797; ``--sample 0`` times every fold. The
"agree" column compares, on the timed folds, scikit-learn's per-fold score with glru's (glru's
equal exact refits; scikit-learn stops lbfgs at tol=1e-4, which can flip a borderline row).

On a machine with few cores, OpenBLAS threads spin and slow small BLAS calls by orders of
magnitude when other processes use the CPU: run it on a quiet machine (the load average is
printed), or compare with ``OPENBLAS_NUM_THREADS=1``.

Reproduce::

    python benchmarks/bench_multinomial.py                 # 200 sampled scikit-learn folds per scaling
    python benchmarks/bench_multinomial.py --sample 0      # every scikit-learn fold (slow)
    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_multinomial.py
"""

import argparse
import os
import time
import warnings

import numpy as np
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import LeaveOneOut, cross_val_score
from sklearn.preprocessing import StandardScaler

from sklearn_ext import GLRUCrossValidator


def load_average():
    try:
        return "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    except OSError:
        return "n/a"


def run(name, X, y, sample, rng):
    n = X.shape[0]
    started = time.perf_counter()
    validator = GLRUCrossValidator(LogisticRegression(), cv=LeaveOneOut()).fit(X, y)
    glru_seconds = time.perf_counter() - started
    assert validator.fallback_reason_ is None
    rows = np.arange(n) if not sample else np.sort(rng.choice(n, size=min(sample, n), replace=False))
    splits = [(np.flatnonzero(np.arange(n) != i), np.array([i])) for i in rows]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        started = time.perf_counter()
        sklearn_scores = cross_val_score(LogisticRegression(), X, y, cv=splits)
        sampled_seconds = time.perf_counter() - started
    sklearn_seconds = sampled_seconds * n / rows.size
    agree = int(np.sum(sklearn_scores == validator.scores_[rows]))
    return dict(data=name, n_certified=validator.n_certified_, n_retrained=validator.n_retrained_,
                glru=glru_seconds, sklearn=sklearn_seconds, sampled=rows.size, ratio=sklearn_seconds / glru_seconds,
                agree=f"{agree}/{rows.size}", accuracy=validator.scores_.mean(), timings=validator.timings_)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sample", type=int, default=200,
                        help="scikit-learn folds timed (scaled to all 1797); 0 for every fold")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    X, y = load_digits(return_X_y=True)
    rng = np.random.default_rng(args.seed)
    print(f"load average before: {load_average()}; OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'default')}")
    rows = [run("digits X/16", X / 16.0, y, args.sample, rng),
            run("digits StandardScaler", StandardScaler().fit_transform(X), y, args.sample, rng),
            run("digits raw (0–16)", X, y, args.sample, rng)]
    print(f"load average after: {load_average()}\n")
    print("| data | LOO folds | n_certified | n_retrained | glru s | sklearn s | ratio | agree with sklearn | "
          "LOO accuracy |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        timed = "" if r["sampled"] == 1797 else f" (from {r['sampled']} folds)"
        print(f"| {r['data']} | 1797 | {r['n_certified']} | {r['n_retrained']} | {r['glru']:.2f} | "
              f"{r['sklearn']:.1f}{timed} | {r['ratio']:.0f}× | {r['agree']} | {r['accuracy']:.4f} |")
    print()
    for r in rows:
        print(f"{r['data']}: glru stages " + ", ".join(f"{k} {v:.2f} s" for k, v in r["timings"].items()))


if __name__ == "__main__":
    main()
