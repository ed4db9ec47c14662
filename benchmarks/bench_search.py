"""Exact grid search over C: GLRUSearchCV against scikit-learn's GridSearchCV, leave-one-out.

Reproduce (from the repository root, with ../shared/data present):

    PYTHONPATH=. python benchmarks/bench_search.py              # GridSearchCV on all 200 folds (~15 min)
    PYTHONPATH=. python benchmarks/bench_search.py --sample 40  # GridSearchCV timed on 40 folds, scaled
    PYTHONPATH=. python benchmarks/bench_search.py --pipelines  # StandardScaler Pipelines, 5-fold

arcene (200 × 9,961, standardized), LogisticRegression(fit_intercept=False) over the paper's
11 values λ = 2^0 … 2^-10, C = 1/(nλ). Every configuration runs in this one process, one after
the other; ratios are of wall-clock times measured here. "agree" counts grid points whose mean
LOO accuracy equals GridSearchCV's (it stops each fit at its default tol, so a disagreement is
one of its fits short of the optimum; glru's scores are those of exact refits, see tests/).
With ``--sample``, GridSearchCV runs on a random subset of the leave-one-out folds and its time
is scaled by 200 / sample (its scores are then not compared).

``--pipelines``: ``make_pipeline(StandardScaler(), LogisticRegression() | LinearSVC())`` over
5 values of C (``np.logspace(-2, 1, 5)``), ``StratifiedKFold(5)``, on madelon.t (dense), a9a.t
and mushrooms (sparse, scaled without centring): GLRUSearchCV fits the scaler on each fold's
training rows and solves every fold exactly; GridSearchCV at its default tol, and at the
largest tol (1e-6 … 1e-12) whose mean scores all equal glru's.
"""

import argparse
import platform

import numpy as np
import scipy.sparse as sp
import sklearn
from sklearn.base import clone
from sklearn.datasets import load_svmlight_file
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, LeaveOneOut, StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from glru.datasets import load_arcene
from sklearn_ext import GLRUSearchCV
from _common import DATA, timed


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=None, help="time GridSearchCV on this many LOO folds")
    parser.add_argument("--pipelines", action="store_true", help="only the StandardScaler Pipelines, 5-fold")
    args = parser.parse_args(argv)
    if args.pipelines:
        return pipelines()
    X, y = load_arcene(DATA)
    n = X.shape[0]
    grid = {"C": [1.0 / (n * 2.0 ** e) for e in range(0, -11, -1)]}
    estimator = LogisticRegression(fit_intercept=False)
    print(f"python {platform.python_version()}, numpy {np.__version__}, scikit-learn {sklearn.__version__}, "
          f"{platform.processor() or platform.machine()}")
    searches = {prune: timed(lambda: GLRUSearchCV(estimator, grid, cv=LeaveOneOut(), prune=prune).fit(X, y))
                for prune in (False, True)}
    folds = list(LeaveOneOut().split(X))
    if args.sample:
        folds = [folds[i] for i in np.random.default_rng(0).choice(n, args.sample, replace=False)]
    reference, t_sk = timed(lambda: GridSearchCV(estimator, grid, cv=folds).fit(X, y))
    t_sk_scaled = t_sk * n / len(folds)
    print(f"\nGridSearchCV: {t_sk:.1f} s on {len(folds)} folds" + (f", scaled to {t_sk_scaled:.1f} s for {n}"
                                                                    if args.sample else ""))
    print("\n| search | glru s | GridSearchCV s | ratio | grid points pruned | best C equal | agree |")
    print("|---|---|---|---|---|---|---|")
    for prune, (search, t_glru) in searches.items():
        best_equal = agree = "–"
        if not args.sample:
            best_equal = search.best_params_ == reference.best_params_
            ours, theirs = search.cv_results_["mean_test_score"], reference.cv_results_["mean_test_score"]
            agree = f"{int(np.sum(ours == theirs))}/{len(ours)}"
        print(f"| arcene LOO, 11 C, prune={prune} | {t_glru:.2f} | {t_sk_scaled:.1f} | **{t_sk_scaled / t_glru:.0f}×** | "
              f"{search.n_pruned_} | {best_equal} | {agree} |")
    best = searches[False][0]
    print(f"\nglru best C = {best.best_params_['C']:.6g} (λ = 2^{np.log2(1 / (n * best.best_params_['C'])):.0f}), "
          f"LOO accuracy {best.best_score_:.4f}")


def pipelines():
    print(f"python {platform.python_version()}, numpy {np.__version__}, scikit-learn {sklearn.__version__}, "
          f"{platform.processor() or platform.machine()}")
    print("\n| search | glru s | GridSearchCV s | ratio | best C equal | agree | GridSearchCV tol for exact scores "
          "| its s, ratio |")
    print("|---|---|---|---|---|---|---|---|")
    cv = StratifiedKFold(5)
    for data in ("madelon.t.gz", "a9a.t.gz", "mushrooms.gz"):
        X, y = load_svmlight_file(str(DATA / data))
        X = X.toarray() if data.startswith("madelon") else X.tocsr()
        for final in (LogisticRegression(), LinearSVC()):
            estimator = make_pipeline(StandardScaler(with_mean=not sp.issparse(X)), final)
            step = estimator.steps[-1][0]
            grid = {f"{step}__C": list(np.logspace(-2, 1, 5))}
            search, t_glru = timed(lambda: GLRUSearchCV(estimator, grid, cv=cv).fit(X, y))
            reference, t_sk = timed(lambda: GridSearchCV(estimator, grid, cv=cv).fit(X, y))
            ours = search.cv_results_["mean_test_score"]
            agree = int(np.sum(ours == reference.cv_results_["mean_test_score"]))
            exact = " none ≥ 1e-12 | |"
            for tol in (1e-6, 1e-8, 1e-10, 1e-12):
                tight = clone(estimator).set_params(**{f"{step}__tol": tol, f"{step}__max_iter": 100_000})
                tight_search, t_tight = timed(lambda: GridSearchCV(tight, grid, cv=cv).fit(X, y))
                if np.array_equal(tight_search.cv_results_["mean_test_score"], ours):
                    exact = f" {tol:g} | {t_tight:.2f} s, **{t_tight / t_glru:.1f}×** |"
                    break
            print(f"| {data[:-3]} 5-fold, StandardScaler + {type(final).__name__}, 5 C | {t_glru:.2f} | {t_sk:.2f} | "
                  f"**{t_sk / t_glru:.1f}×** | {search.best_params_ == reference.best_params_} | {agree}/5 |{exact}",
                  flush=True)


if __name__ == "__main__":
    main()
