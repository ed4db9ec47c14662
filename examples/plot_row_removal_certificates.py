"""Certified intervals for leave-one-out predictions against the exact retrained values.

For every row i of scikit-learn's breast-cancer data (standardized), one fit gives an interval
that must contain the decision value of the model retrained without row i. The plot shows
every interval (grey), the exact retrained value (dot), and whether the interval alone already
decides the held-out label (green) or a retrain is needed (orange).

Run:  python examples/plot_row_removal_certificates.py   (needs the ``examples`` extra)
Writes examples/row_removal_certificates.png.
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.datasets import load_breast_cancer  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

import glru  # noqa: E402


def main():
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    n = X.shape[0]
    lam = 1.0 / n  # LogisticRegression(C=1)
    fit = glru.fit(X, y, loss="logistic", lam=lam, fit_intercept=True, tol=1e-10)

    lower, upper, exact = np.empty(n), np.empty(n), np.empty(n)
    for i in range(n):
        cert = fit.remove_samples([i])
        (lower[i],), (upper[i],) = cert.decision_bounds(X[i:i + 1])
        exact[i] = cert.refit(tol=1e-10).decision_function(X[i:i + 1])[0]

    assert np.all((lower <= exact) & (exact <= upper)), "a certificate missed the exact value"
    certified = (lower > 0) | (upper < 0)
    order = np.argsort(exact)
    pos = np.arange(n)

    fig, ax = plt.subplots(figsize=(10, 4.5))
    ax.vlines(pos, lower[order], upper[order], color="0.75", lw=1, label="certified interval")
    ax.scatter(pos[certified[order]], exact[order][certified[order]], s=6, color="tab:green", zorder=3,
               label=f"label certified without retraining ({certified.sum()})")
    ax.scatter(pos[~certified[order]], exact[order][~certified[order]], s=10, color="tab:orange", zorder=3,
               label=f"undecided: needs a retrain ({(~certified).sum()})")
    ax.axhline(0, color="k", lw=0.6)
    ax.set_ylim(np.percentile(lower, 1) - 1, np.percentile(upper, 99) + 1)
    ax.set_xlabel("held-out row (sorted by exact leave-one-out decision value)")
    ax.set_ylabel("x_i · w*(−i) + b*(−i)")
    ax.set_title("Leave-one-out certificates from one fit (breast cancer, L2 logistic, C = 1)")
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    out = Path(__file__).with_name("row_removal_certificates.png")
    fig.savefig(out, dpi=120)
    print(f"{certified.sum()} of {n} held-out labels certified; 0 intervals missed; wrote {out}")


if __name__ == "__main__":
    main()
