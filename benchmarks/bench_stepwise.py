"""Exact stepwise selection: glru's GLRUStepwiseSelector against the naive loops.

Reproduce (from the repository root, with ../shared/data present):

    PYTHONPATH=. python benchmarks/bench_stepwise.py            # everything (~15 min)
    PYTHONPATH=. python benchmarks/bench_stepwise.py --quick    # a9a.t forward, arcene λ = 2^0 one step

1. arcene (the paper's setting): train = arcene_train, validation = arcene_valid,
   ``LogisticRegression(C=1/(n·λ), fit_intercept=False)``, backward, 10 steps. The naive
   loop is the paper's Algorithm 3: every candidate retrained, warm-started from the current
   coefficients without the candidate feature, with glru's trust-region Newton solver to
   relative gap 1e-6 (its fastest solver on this data; not even exact). At 9,961 candidates a
   step it would take hours, so it is timed on a random sample of candidates of the first step
   (the same in every configuration) and scaled to the step's candidate count; the per-candidate
   cost hardly changes over 10 steps (d goes from 9,961 to 9,952). scikit-learn's
   ``SequentialFeatureSelector`` (cold lbfgs fits) is sampled the same way.
2. a9a.t, first 2,000 rows, train = first 1,000, validation = last 1,000, default
   ``LogisticRegression()``: backward from 123 to 10 features and forward from 0 to 10, against
   ``SequentialFeatureSelector`` with the same split, both run in full; the selected features
   are compared (scikit-learn stops at its default tol, glru's answer is the exact refits').

All times are wall clock, measured in this one process.
"""

import argparse
import platform
import time
import warnings
from pathlib import Path

import numpy as np
import sklearn
from sklearn.datasets import load_svmlight_file
from sklearn.feature_selection import SequentialFeatureSelector
from sklearn.linear_model import LogisticRegression

from glru.datasets import load_arcene
from glru.losses import get_loss
from glru.penalties import get_penalty
from glru.problem import Problem
from glru.solver import solve
from sklearn_ext import GLRUStepwiseSelector

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
SAMPLE = 100  # candidates timed for the naive loops on arcene


def naive_seconds_per_candidate(X, y, train, valid, lam, sample):
    """Algorithm 3 on a sample of first-step candidates: warm-started retrain, validation errors."""
    y_pm = np.where(y == np.unique(y)[1], 1.0, -1.0)
    full = Problem(X[train], y_pm[train], get_loss("logistic"), get_penalty(lam), False)
    coef = solve(full, tol=1e-6).coef
    start = time.perf_counter()
    for j in sample:
        keep = np.delete(np.arange(X.shape[1]), j)
        problem = Problem(X[train][:, keep], y_pm[train], full.loss, full.penalty, False)
        fit = solve(problem, coef[keep], tol=1e-6)
        np.sum(np.sign(X[valid][:, keep] @ fit.coef) != y_pm[valid])
    return (time.perf_counter() - start) / len(sample)


def sklearn_seconds_per_candidate(X, y, train, valid, estimator, sample):
    start = time.perf_counter()
    for j in sample:
        keep = np.delete(np.arange(X.shape[1]), j)
        model = sklearn.base.clone(estimator).fit(X[train][:, keep], y[train])
        model.score(X[valid][:, keep], y[valid])
    return (time.perf_counter() - start) / len(sample)


def arcene(exponents, steps):
    X, y = load_arcene(DATA)
    train, valid = np.arange(100), np.arange(100, 200)
    d = X.shape[1]
    sample = np.random.default_rng(0).choice(d, SAMPLE, replace=False)
    print("\n### arcene, backward, single split (train 100 / valid 100), no intercept\n")
    print("| λ | step 1 glru s | naive (Alg. 3) step s | **vs naive** | sklearn SFS step s | **vs SFS** | "
          f"{steps} steps glru s | naive s | **vs naive, {steps} steps** | trained / certified / excluded "
          "(step 1) | removed |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for e in exponents:
        lam = 2.0 ** e
        estimator = LogisticRegression(C=1.0 / (train.size * lam), fit_intercept=False)
        naive = naive_seconds_per_candidate(X, y, train, valid, lam, sample)
        sk = sklearn_seconds_per_candidate(X, y, train, valid, estimator, sample)
        start = time.perf_counter()
        selector = GLRUStepwiseSelector(estimator, direction="backward", cv=[(train, valid)],
                                        n_features_to_select=d - steps).fit(X, y)
        total = time.perf_counter() - start
        first = selector.history_[0]
        naive_total = sum(naive * h["n_candidates"] for h in selector.history_)
        print(f"| 2^{e} | {first['seconds']:.1f} | {naive * d:.0f} | **{naive * d / first['seconds']:.0f}×** | "
              f"{sk * d:.0f} | **{sk * d / first['seconds']:.0f}×** | {total:.1f} | {naive_total:.0f} | "
              f"**{naive_total / total:.0f}×** | {first['n_trained']} / {first['n_certified']} / {first['n_excluded']} | "
              f"{[h['feature'] for h in selector.history_]} |", flush=True)


def a9a(directions):
    X, y = load_svmlight_file(str(DATA / "a9a.t.gz"), n_features=123)
    X, y = X.tocsr()[:2000], y[:2000]
    split = [(np.arange(1000), np.arange(1000, 2000))]
    print("\n### a9a.t, 2,000 rows, single split (1,000 / 1,000), LogisticRegression()\n")
    # warm-up on a slice: imports and first-call costs (SciPy's optimizers, joblib) are not the method's
    GLRUStepwiseSelector(LogisticRegression(), direction="forward", cv=[(np.arange(150), np.arange(150, 300))],
                         n_features_to_select=2).fit(X[:300], y[:300])
    print("| direction | glru s | SequentialFeatureSelector s | **speed-up** | same features | candidates trained / "
          "total | selected |")
    print("|---|---|---|---|---|---|---|")
    for direction in directions:
        start = time.perf_counter()
        glru = GLRUStepwiseSelector(LogisticRegression(), direction=direction, cv=split,
                                    n_features_to_select=10).fit(X, y)
        t_glru = time.perf_counter() - start
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reference = SequentialFeatureSelector(LogisticRegression(), direction=direction, cv=split,
                                                  n_features_to_select=10).fit(X, y)
        t_sk = time.perf_counter() - start
        trained = sum(h["n_trained"] for h in glru.history_)
        total = sum(h["n_candidates"] for h in glru.history_)
        print(f"| {direction} | {t_glru:.1f} | {t_sk:.1f} | **{t_sk / t_glru:.1f}×** | "
              f"{np.array_equal(glru.get_support(), reference.get_support())} | {trained} / {total} | "
              f"{np.flatnonzero(glru.get_support()).tolist()} |", flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    print(f"python {platform.python_version()}, numpy {np.__version__}, scikit-learn {sklearn.__version__}, "
          f"{platform.processor() or platform.machine()}")
    a9a(("forward",) if args.quick else ("forward", "backward"))
    arcene((0,) if args.quick else (0, -5, -10), 1 if args.quick else 10)


if __name__ == "__main__":
    main()
