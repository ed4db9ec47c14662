"""Certified data deletion: how far each update is from the exact retrain, and what its
certificate proves.

scikit-learn's breast-cancer data (standardized), ``LogisticRegression(C=1)``. For growing
numbers k of random rows forgotten, every update method of ``sklearn_ext.forget`` is compared
with the exact retrain (the same estimator refitted on the remaining rows). Left: the true
distance ‖coef − coef*‖ (dots) and the certified radius (lines), which must lie above it.
Right: the share of rows whose predicted label the certificate proves to be the exact
retrain's without retraining (``certificate.unchanged``). Medians over 5 random deletion sets
per k. The estimator is fitted to tol=1e-10 so that the plot shows the update methods rather
than the stopping point of scikit-learn's solver (at its default tol every update inherits
that solver's distance to the optimum, and the certificates say so).

Run:  python examples/plot_unlearning_certificates.py   (needs the ``examples`` extra)
Writes examples/unlearning_certificates.png.
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.datasets import load_breast_cancer  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from sklearn_ext.unlearning import forget  # noqa: E402

METHODS = {"newton": "tab:blue", "pru": "tab:green", "influence": "tab:orange", "ngd": "tab:purple"}


def main():
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    n = X.shape[0]
    estimator = LogisticRegression(C=1.0, tol=1e-10, max_iter=10000).fit(X, y)
    ks = np.array([1, 2, 5, 10, 20, 50, 100, 200])
    rng = np.random.default_rng(0)
    sets = 5
    distance = {m: np.empty((ks.size, sets)) for m in METHODS}
    radius = {m: np.empty((ks.size, sets)) for m in METHODS}
    unchanged = {m: np.empty((ks.size, sets)) for m in METHODS}
    old_distance = np.empty((ks.size, sets))
    for j, k in enumerate(ks):
        for s in range(sets):
            rows = rng.choice(n, size=k, replace=False)
            exact, _ = forget(estimator, X, y, rows, method="exact")
            old_distance[j, s] = np.linalg.norm(estimator.coef_ - exact.coef_)
            for method in METHODS:
                model, certificate = forget(estimator, X, y, rows, method=method)
                distance[method][j, s] = np.linalg.norm(model.coef_ - exact.coef_)
                radius[method][j, s] = certificate.radius
                proven = certificate.unchanged(X)
                assert np.all(model.predict(X)[proven] == exact.predict(X)[proven]), "a certified label was wrong"
                unchanged[method][j, s] = proven.mean()
    assert all(np.all(radius[m] >= distance[m]) for m in METHODS), "a radius is below the true distance"
    ratio = {m: np.median(radius[m] / distance[m]) for m in METHODS}
    distance, radius, unchanged = ({m: np.median(v[m], axis=1) for m in METHODS} for v in (distance, radius, unchanged))
    old_distance = np.median(old_distance, axis=1)

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    left.plot(ks, old_distance, "k:", label="old model (no update)")
    for method, colour in METHODS.items():
        left.plot(ks, radius[method], "-", color=colour, label=f"{method}: certified radius")
        left.plot(ks, distance[method], "o", color=colour, ms=4, label=f"{method}: true distance")
        right.plot(ks, 100 * unchanged[method], "o-", color=colour, ms=4, label=method)
    left.set(xscale="log", yscale="log", xlabel="rows forgotten k", ylabel="‖coef − coef of the exact retrain‖₂",
             title="Distance to the exact retrain, and its certified bound")
    left.legend(fontsize=7, ncol=2)
    right.set(xscale="log", ylim=(0, 101), xlabel="rows forgotten k",
              ylabel="% of rows with a certified label", title="Labels proven equal to the exact retrain's")
    right.legend(fontsize=8)
    fig.suptitle(f"Certified unlearning, breast cancer (n = {n}), LogisticRegression(C = 1)")
    fig.tight_layout()
    out = Path(__file__).with_name("unlearning_certificates.png")
    fig.savefig(out, dpi=120)
    for method in METHODS:
        print(f"{method:9s} radius / true distance (median): {ratio[method]:.1f}; labels certified at "
              f"k = 10: {100 * unchanged[method][ks == 10][0]:.0f}%")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
