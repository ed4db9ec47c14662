"""Forgetting rows by recollection: how close to replaying SGD without them?

A logistic and a linear model are trained by clipped, decayed mini-batch SGD on synthetic data
(1,000 rows, 20 standardized features), recording every row's recollection. For growing random
sets of rows, the plot compares two distances to the reference model, the SAME SGD run (same
mini-batches and step sizes) replayed without those rows:

- the model after ``forget(rows)`` (the recollections added: O(d) per row), and
- the original model (what not forgetting would leave).

Each point is the mean over 3 random sets. The linear model is trained without clipping, so a
single row's recollection is the replay exactly (down to rounding, ~1e-16); for several rows
the replay is not additive and the gap is the cross terms between the rows.

Run:  PYTHONPATH=. python examples/plot_recollection_unlearning.py   (~10 s; needs the ``examples`` extra)
Writes examples/recollection_unlearning.png.
"""

import copy
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.datasets import make_classification, make_regression  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from glru.recollection import clipped_sgd  # noqa: E402
from sklearn_ext.recollection import RecollectionSGDClassifier, RecollectionSGDRegressor  # noqa: E402

SIZES = [1, 2, 5, 10, 20, 50, 100, 200]
REPEATS = 3


def parameters(model):
    return np.append(np.ravel(model.coef_), np.ravel(model.intercept_))


def distances(model, X, target, loss, rng):
    """Mean distance to the replay of the forgotten model and of the original, per set size."""
    batches, etas = model.sgd_schedule()
    sgd = dict(alpha=model.alpha, clip=model.clip, batches=batches, etas=etas)
    forgotten, original = [], []
    for size in SIZES:
        pairs = []
        for _ in range(REPEATS):
            rows = rng.choice(X.shape[0], size, replace=False)
            keep = np.ones(X.shape[0], dtype=bool)
            keep[rows] = False
            replay = clipped_sgd(X, target, loss, keep=keep, **sgd)
            after = parameters(copy.deepcopy(model).forget(rows))
            pairs.append((np.linalg.norm(after - replay), np.linalg.norm(parameters(model) - replay)))
        forgotten.append(np.mean([p[0] for p in pairs]))
        original.append(np.mean([p[1] for p in pairs]))
    return np.array(forgotten), np.array(original)


def main():
    rng = np.random.default_rng(0)
    X, y = make_classification(n_samples=1000, n_features=20, n_informative=8, flip_y=0.05, random_state=0)
    X = StandardScaler().fit_transform(X)
    params = dict(alpha=1e-3, eta0=0.05, decay=0.999, batch_size=32, n_epochs=5, random_state=0)
    classifier = RecollectionSGDClassifier(clip=5.0, **params).fit(X, y)
    logistic = distances(classifier, X, np.where(y == 1, 1.0, -1.0), "logistic", rng)

    Xr, yr = make_regression(n_samples=1000, n_features=20, n_informative=8, noise=10.0, random_state=0)
    Xr, yr = StandardScaler().fit_transform(Xr), yr / np.std(yr)
    regressor = RecollectionSGDRegressor(clip=None, **{**params, "eta0": 0.01}).fit(Xr, yr)
    linear = distances(regressor, Xr, yr, "squared", rng)

    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2), sharex=True)
    for ax, (title, (after, before)) in zip(axes, [("logistic (clip C = 5)", logistic),
                                                    ("linear, squared loss (no clipping)", linear)]):
        ax.loglog(SIZES, before, "o-", color="tab:grey", label="original model")
        ax.loglog(SIZES, np.maximum(after, 1e-17), "o-", color="tab:blue", label="after forget(rows)")
        ax.set_title(title)
        ax.set_xlabel("rows forgotten")
        ax.grid(True, which="major", alpha=0.3)
    axes[0].set_ylabel("L2 distance to the replay-retrained model")
    axes[0].legend()
    fig.suptitle("Recollection unlearning vs replaying the same SGD run without the rows (n = 1,000, d = 20)")
    fig.tight_layout()
    out = Path(__file__).with_name("recollection_unlearning.png")
    fig.savefig(out, dpi=120)
    print(f"wrote {out}")
    for name, (after, before) in [("logistic", logistic), ("linear", linear)]:
        print(name, " ".join(f"{k}:{a:.1e}/{b:.1e}" for k, a, b in zip(SIZES, after, before)))


if __name__ == "__main__":
    main()
