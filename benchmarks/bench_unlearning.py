"""Certified data deletion: speed against the fastest exact scikit-learn refit, the PRU paper's
evaluation (L2 distance to the exact retrain, feature-injection test), and how tight our
certificates are.

Reproduce (from the repository root, with ../shared/data present, on a quiet machine):

    PYTHONPATH=. python benchmarks/bench_unlearning.py              # everything (~2 min)
    PYTHONPATH=. python benchmarks/bench_unlearning.py --quick      # the speed table only

Setting: w8a (49,749 × 300, sparse), ``LogisticRegression(C=1.0)`` (the default C; L2,
unpenalized intercept), forgetting 10 random rows. The exact retrain is the optimum of the same
estimator refitted on the remaining rows with C fixed.

- scikit-learn baseline: the fastest refit that reaches the exact retrain, a warm-started
  ``LogisticRegression(solver="newton-cholesky", tol=1e-8, warm_start=True)`` started at the full
  data's optimum and fitted on the remaining rows (the time of ``fit`` only: building the
  remaining rows, ``X[keep]``, is not charged to it).
- glru: ``GLRUUnlearner(LogisticRegression(C=1.0), method=…).fit(X, y)`` once (the exact fit, the
  Hessian and its Cholesky factor: precomputation, reported separately), then ``forget(rows)``:
  the update and its certificate (radius, duality gap). The one-shot ``sklearn_ext.forget``
  (which must form the Hessian of the estimator it is given) is reported too.

Every timing is the median (and minimum) over ``--repeats`` random deletion sets, each request
on a copy of the same fitted unlearner, with BLAS limited to ``--blas-threads`` threads for both
sides (1 by default: OpenBLAS threads slow down badly under contention on small machines, and
one thread is also scikit-learn's faster setting here). The machine's load average is printed.
"""

import argparse
import copy
import os
import platform

import numpy as np
import scipy.sparse as sp
import sklearn
from sklearn.datasets import load_svmlight_file
from sklearn.linear_model import LogisticRegression
from threadpoolctl import threadpool_limits

from sklearn_ext.unlearning import GLRUUnlearner, forget
from _common import DATA, timed

METHODS = ("newton", "influence", "pru", "ngd")


def load_w8a():
    X, y = load_svmlight_file(str(DATA / "w8a.gz"))
    return X.tocsr(), y


def vector(model):
    return np.append(np.ravel(model.coef_), np.ravel(model.intercept_))


def fresh(unlearner):
    """A copy of a fitted unlearner before any request (sharing its precomputation)."""
    out = copy.copy(unlearner)
    out.history_, out.forgotten_, out.n_forgotten_ = [], np.zeros(0, dtype=np.int64), 0
    out.estimator_, out.certificate_ = unlearner.original_estimator_, None
    for problem in out._problems:  # nothing computed for an earlier request may be reused
        problem._solvers, problem._block = {}, None
    return out


def sklearn_refit(full, X, y, keep):
    model = LogisticRegression(C=full.C, solver="newton-cholesky", tol=1e-8, warm_start=True, max_iter=1000)
    model.coef_, model.intercept_, model.classes_ = full.coef_.copy(), full.intercept_.copy(), full.classes_
    Xk, yk = X[keep], y[keep]
    _, seconds = timed(lambda: model.fit(Xk, yk))
    return model, seconds


# ------------------------------------------------------------------------- 1. speed
SPEED_ROWS = {"sklearn": "scikit-learn warm newton-cholesky, tol=1e-8 (fit only)",
              "newton": "GLRUUnlearner.forget, newton + certificate",
              "newton+max_radius": "GLRUUnlearner.forget, newton, max_radius=1e-6·‖coef‖",
              "exact": "GLRUUnlearner.forget, exact (to rounding)",
              "one-shot": "forget(estimator, X, y, rows, method='newton') (forms the Hessian)"}


def speed(X, y, repeats, C, best_of):
    """Per deletion set, the best of ``best_of`` runs of each contender (the least disturbed by
    other processes), then the median over sets of times and of per-set speed-ups."""
    n = X.shape[0]
    unlearner, t_fit = timed(lambda: GLRUUnlearner(LogisticRegression(C=C), method="newton").fit(X, y))
    full = unlearner.original_estimator_
    target = 1e-6 * np.linalg.norm(full.coef_)
    rng = np.random.default_rng(0)
    times = {key: [] for key in SPEED_ROWS}
    radii = {key: [] for key in SPEED_ROWS}
    steps = {key: [] for key in SPEED_ROWS}
    iterations, sklearn_error = [], []
    settings = {"newton": dict(method="newton", max_radius=None),
                "newton+max_radius": dict(method="newton", max_radius=target),
                "exact": dict(method="exact", max_radius=None)}
    for _ in range(repeats):
        rows = rng.choice(n, size=10, replace=False)
        keep = np.setdiff1d(np.arange(n), rows)
        runs = [sklearn_refit(full, X, y, keep) for _ in range(best_of)]
        reference = runs[0][0]
        times["sklearn"].append(min(t for _, t in runs))
        iterations.append(int(reference.n_iter_[0]))
        for key, params in settings.items():
            best = np.inf
            for _ in range(best_of):
                u = fresh(unlearner).set_params(**params)
                u, t = timed(lambda u=u, rows=rows: u.forget(rows))
                best = min(best, t)
            times[key].append(best)
            radii[key].append(u.certificate_.radius)
            steps[key].append(u.certificate_.n_refinement_steps)
            if key == "exact":
                sklearn_error.append(np.linalg.norm(vector(reference) - vector(u.estimator_)))
        times["one-shot"].append(min(timed(lambda rows=rows: forget(full, X, y, rows, method="newton"))[1]
                                     for _ in range(best_of)))
    base = np.asarray(times["sklearn"])
    print(f"\n### Speed: w8a ({n:,} × {X.shape[1]}, nnz {X.nnz:,}), LogisticRegression(C={C}), forget 10 rows, "
          f"{repeats} random sets, best of {best_of} per set\n")
    print(f"Precomputation (once, not in the table): GLRUUnlearner.fit {t_fit:.2f} s (the exact fit, the Hessian "
          f"and its Cholesky factor, row norms). max_radius = 1e-6·‖coef‖ = {target:.3g}. scikit-learn's refit "
          f"took {np.bincount(iterations).tolist()} sets × [0, 1, 2, …] Newton iterations and ends up to "
          f"{np.max(sklearn_error):.1e} from the exact retrain (ℓ2, coef and intercept).\n")
    print("| method | median ms | min ms | max ms | speed-up vs scikit-learn (median of per-set ratios; min) | "
          "certified radius (max) | refinement steps (max) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for key, values in times.items():
        values = np.asarray(values)
        ratio = base / values
        radius = f"{max(radii[key]):.2e}" if radii[key] else ""
        step = f"{max(steps[key])}" if steps[key] else ""
        print(f"| {SPEED_ROWS[key]} | {np.median(values) * 1e3:.1f} | {values.min() * 1e3:.1f} | "
              f"{values.max() * 1e3:.1f} | {np.median(ratio):.1f}× ({ratio.min():.1f}×) | {radius} | {step} |")
    return unlearner


# ------------------------------------------------------------------------- 2. PRU's L2 metric + 4. tightness
def accuracy(X, y, unlearner, ks, repeats):
    n = X.shape[0]
    rng = np.random.default_rng(1)
    full = unlearner.original_estimator_
    print("\n### Distance to the exact retrain (PRU paper's L2 metric: ‖θ − θ*‖/‖θ_full − θ*‖, θ = (coef, "
          "intercept); median over sets) and certificate tightness (certified radius / true ‖coef − coef*‖)\n")
    print("| k | ‖θ_full − θ*‖ | " + " | ".join(f"{m} L2" for m in METHODS) + " | "
          + " | ".join(f"{m} radius/true" for m in METHODS) + " |")
    print("|---:|---:|" + "---:|" * (2 * len(METHODS)))
    for k in ks:
        l2 = {m: [] for m in METHODS}
        tight = {m: [] for m in METHODS}
        base = []
        for _ in range(repeats):
            rows = rng.choice(n, size=k, replace=False)
            exact = fresh(unlearner)
            exact.set_params(method="exact")
            exact.forget(rows)
            star = vector(exact.estimator_)
            base.append(np.linalg.norm(vector(full) - star))
            for method in METHODS:
                u = fresh(unlearner)
                u.set_params(method=method)
                u.forget(rows)
                l2[method].append(np.linalg.norm(vector(u.estimator_) - star) / base[-1])
                true = np.linalg.norm(u.estimator_.coef_ - exact.estimator_.coef_)
                tight[method].append(u.certificate_.radius / true)
        print(f"| {k} | {np.median(base):.3g} | " + " | ".join(f"{np.median(l2[m]):.3f}" for m in METHODS) + " | "
              + " | ".join(f"{np.median(tight[m]):.1f}" for m in METHODS) + " |")


# ------------------------------------------------------------------------- 3. feature injection
def injection(X, y, rows, C):
    """The PRU paper's logistic feature-injection test: the deleted (positive) rows get an extra
    feature equal to 1 (0 elsewhere); the exact retrain without them puts weight 0 on it.
    Returns, per method, the injected weight after deletion over its weight before (0 is
    complete removal)."""
    column = np.zeros(X.shape[0])
    column[rows] = 1.0
    Xa = sp.hstack([X, column[:, None]], format="csr") if sp.issparse(X) else np.hstack([X, column[:, None]])
    u = GLRUUnlearner(LogisticRegression(C=C, fit_intercept=False)).fit(Xa, y)  # the paper has no intercept
    before = u.original_estimator_.coef_[0, -1]
    out = {}
    for method in METHODS + ("exact",):
        v = fresh(u)
        v.set_params(method=method)
        v.forget(rows)
        out[method] = v.estimator_.coef_[0, -1] / before
    return out


def synthetic(n, d, k, p, rng):
    """The PRU paper's synthetic logistic data: a well-specified logistic model; the k deleted
    rows (the first k) share one sparsity pattern (each column kept with probability p for all
    of them), the others are sparsified independently; the deleted rows are positive and
    correctly classified."""
    theta = rng.standard_normal(d) / np.sqrt(d * p)
    X = rng.standard_normal((n, d)) * (rng.random((n, d)) < p)
    shared = rng.random(d) < p
    shared[rng.integers(d)] = True
    for i in range(k):
        x = rng.standard_normal(d) * shared
        X[i] = x if x @ theta > 0 else -x
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-X @ theta)), 1.0, -1.0)
    y[:k] = 1.0
    return X, y


def feature_injection(X, y, C, n_synthetic, d_synthetic):
    rng = np.random.default_rng(2)
    print("\n### Feature-injection test (PRU paper): injected weight after deletion / before "
          "(exact retrain: 0; median of 3 draws; no intercept, as in the paper)\n")
    print("| data | k | " + " | ".join(METHODS) + " | exact |")
    print("|---|---:|" + "---:|" * (len(METHODS) + 1))
    positives = np.flatnonzero(y > 0)
    for k in (10, 50, 100):
        results = [injection(X, y, rng.choice(positives, size=k, replace=False), C) for _ in range(3)]
        print(f"| w8a | {k} | " + " | ".join(f"{np.median([r[m] for r in results]):.3f}"
                                               for m in METHODS + ("exact",)) + " |")
    for p in (0.5, 0.1, 0.05):
        for k in (25, 50, 100):
            results = [injection(*synthetic(n_synthetic, d_synthetic, k, p, rng), np.arange(k), C) for _ in range(3)]
            print(f"| synthetic n={n_synthetic}, d={d_synthetic}, p={p} | {k} | "
                  + " | ".join(f"{np.median([r[m] for r in results]):.3f}" for m in METHODS + ("exact",)) + " |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the speed table only")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--best-of", type=int, default=3, help="runs per set and contender (the fastest counts)")
    parser.add_argument("--C", type=float, default=1.0)
    parser.add_argument("--blas-threads", type=int, default=1)
    args = parser.parse_args()
    print(f"Python {platform.python_version()}, scikit-learn {sklearn.__version__}, numpy {np.__version__}, "
          f"{os.cpu_count()} CPUs, BLAS threads {args.blas_threads}; load average before: "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    X, y = load_w8a()
    with threadpool_limits(args.blas_threads):
        unlearner = speed(X, y, args.repeats, args.C, args.best_of)
        if not args.quick:
            accuracy(X, y, unlearner, ks=(1, 10, 100), repeats=3)
            feature_injection(X, y, args.C, 2500, 500)
    print(f"\nload average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
