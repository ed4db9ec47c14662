"""Exact leave-one-out cross-validation: certified held-out intervals against exact LOO values.

``GLRUCrossValidator`` fits LogisticRegression once, moves to a Newton centre for every fold,
and certifies an interval for each held-out decision value x_i·w*(−i) + b*(−i). Folds whose
interval contains 0 are solved (and only until their label is certified). The plot shows each
certified interval (bar) around the exact leave-one-out decision value (dot, from an
independent refit), for the breast-cancer data and for a harder, noisier problem; green rows
were certified without training, orange ones were retrained.

Run:  python examples/plot_loo_cross_validation.py   (needs the ``examples`` extra)
Writes examples/loo_cross_validation.png.
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.datasets import load_breast_cancer, make_classification  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import LeaveOneOut  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

import glru  # noqa: E402
from sklearn_ext import GLRUCrossValidator  # noqa: E402


def exact_loo_values(X, y, C):
    n = X.shape[0]
    values = np.empty(n)
    for i in range(n):
        keep = np.arange(n) != i
        refit = glru.fit(X[keep], y[keep], loss="logistic", lam=1.0 / ((n - 1) * C), fit_intercept=True, tol=1e-12)
        values[i] = refit.decision_function(X[i:i + 1])[0]
    return values


def panel(ax, title, X, y, C):
    validator = GLRUCrossValidator(LogisticRegression(C=C), cv=LeaveOneOut()).fit(X, y)
    lower, upper = validator.decision_bounds_.T
    exact = exact_loo_values(X, y, C)[validator.held_out_indices_]
    order = np.argsort(exact)
    certified = ((lower > 0) | (upper <= 0))[order]
    position = np.arange(order.size)
    for mask, colour, label in ((certified, "tab:green", "certified without training"),
                                (~certified, "tab:orange", "retrained")):
        ax.vlines(position[mask], lower[order][mask], upper[order][mask], colors=colour, alpha=0.5, label=label)
    ax.plot(position, exact[order], "k.", markersize=2, label="exact LOO decision value")
    ax.axhline(0.0, color="grey", linewidth=0.5)
    span = np.abs(exact).max() * 1.5
    ax.set_ylim(-span, span)
    missed = int(np.sum((exact < lower) | (exact > upper)))
    ax.set_title(f"{title}\n{validator.n_certified_}/{order.size} certified, {validator.n_retrained_} retrained, "
                 f"{missed} intervals missed")
    ax.set_xlabel("held-out row (sorted by exact value)")
    ax.legend(loc="upper left", fontsize=7)
    return missed


def main():
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    X2, y2 = make_classification(n_samples=150, n_features=400, n_informative=20, flip_y=0.1, random_state=0)
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    missed = panel(axes[0], "breast cancer (569 × 30), C = 1", X, y, 1.0)
    missed += panel(axes[1], "make_classification (150 × 400), C = 0.01", X2, y2, 0.01)
    axes[0].set_ylabel("decision value of the model trained without the row")
    fig.tight_layout()
    out = Path(__file__).with_name("loo_cross_validation.png")
    fig.savefig(out, dpi=120)
    print(f"wrote {out}; intervals missing the exact value: {missed}")


if __name__ == "__main__":
    main()
