"""Exact grid search over C with certified pruning: the leave-one-out error of every grid point.

``GLRUSearchCV(prune=True)`` first certifies, for every grid point, an interval on its mean
leave-one-out accuracy from one full fit and one Newton step per fold (no fold trained). Grid
points are then evaluated exactly by decreasing upper bound; a point whose interval lies below
the best exact score found cannot win and is pruned. The plot shows, for each C, the certified
interval of the LOO error (bar), the exact LOO error (dot, from ``prune=False``, which
evaluates every point exactly), the pruned points (red) and the best C (star): the best C is
the same as GridSearchCV's with exact fits.

Run:  python examples/plot_search_path.py   (needs the ``examples`` extra)
Writes examples/search_path.png.
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.datasets import make_classification  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import LeaveOneOut  # noqa: E402

from sklearn_ext import GLRUSearchCV  # noqa: E402


def main():
    X, y = make_classification(n_samples=150, n_features=60, n_informative=8, flip_y=0.1, random_state=0)
    grid = {"C": np.logspace(-3, 1, 13)}
    exact = GLRUSearchCV(LogisticRegression(), grid, cv=LeaveOneOut()).fit(X, y)
    pruned = GLRUSearchCV(LogisticRegression(), grid, cv=LeaveOneOut(), prune=True).fit(X, y)
    assert pruned.best_params_ == exact.best_params_
    C = np.asarray(grid["C"])
    results = pruned.cv_results_
    low_error, high_error = 1 - results["mean_test_score_upper"], 1 - results["mean_test_score_lower"]
    error = 1 - exact.cv_results_["mean_test_score"]
    is_pruned = results["pruned"]

    fig, ax = plt.subplots(figsize=(7, 4))
    ax.vlines(C, low_error, high_error, color=np.where(is_pruned, "tab:red", "tab:green"), lw=6, alpha=0.5)
    ax.plot(C, error, "k.", ms=8, label="exact LOO error (every fold refit exactly)")
    best = exact.best_index_
    ax.plot(C[best], error[best], "*", color="gold", mec="k", ms=16, label=f"best C = {C[best]:.3g}")
    ax.plot([], [], color="tab:green", lw=6, alpha=0.5, label="certified interval, evaluated")
    ax.plot([], [], color="tab:red", lw=6, alpha=0.5, label="certified interval, pruned (cannot win)")
    ax.set_xscale("log")
    ax.set_xlabel("C")
    ax.set_ylabel("leave-one-out error")
    ax.set_title(f"GLRUSearchCV, LogisticRegression, n = {X.shape[0]}, d = {X.shape[1]}: "
                 f"{pruned.n_pruned_} of {C.size} grid points pruned", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    out = Path(__file__).with_name("search_path.png")
    fig.savefig(out, dpi=120)
    print(f"best C {C[best]:.4g} (LOO accuracy {exact.best_score_:.4f}); pruned {pruned.n_pruned_} of {C.size}; "
          f"wrote {out}")


if __name__ == "__main__":
    main()
