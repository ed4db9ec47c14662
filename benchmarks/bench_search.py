"""Exact grid search over C: GLRUSearchCV against scikit-learn's GridSearchCV, leave-one-out.

Reproduce (from the repository root, with ../shared/data present):

    PYTHONPATH=. python benchmarks/bench_search.py              # GridSearchCV on all 200 folds (~15 min)
    PYTHONPATH=. python benchmarks/bench_search.py --sample 40  # GridSearchCV timed on 40 folds, scaled

arcene (200 × 9,961, standardized), LogisticRegression(fit_intercept=False) over the paper's
11 values λ = 2^0 … 2^-10, C = 1/(nλ). Every configuration runs in this one process, one after
the other; ratios are of wall-clock times measured here. "agree" counts grid points whose mean
LOO accuracy equals GridSearchCV's (it stops each fit at its default tol, so a disagreement is
one of its fits short of the optimum; glru's scores are those of exact refits, see tests/).
With ``--sample``, GridSearchCV runs on a random subset of the leave-one-out folds and its time
is scaled by 200 / sample (its scores are then not compared).
"""

import argparse
import platform

import numpy as np
import sklearn
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, LeaveOneOut

from glru.datasets import load_arcene
from sklearn_ext import GLRUSearchCV
from _common import DATA, timed


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=None, help="time GridSearchCV on this many LOO folds")
    args = parser.parse_args(argv)
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


if __name__ == "__main__":
    main()
