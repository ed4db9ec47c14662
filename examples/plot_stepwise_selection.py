"""Exact backward selection on arcene: certified bounds on every candidate's validation errors
against the errors an exact refit makes (the GLRU paper's Figure 4).

At each step of backward elimination every remaining feature is a candidate for removal. glru
certifies, for every candidate at once, an interval for each validation decision value of the
model retrained without that feature (Newton centre from one inverse Hessian, duality gap,
Theorem 1). Validation rows whose interval lies on the wrong side of 0 are certain errors (the
lower bound), rows on the right side certain successes (the upper bound is the rest). A
candidate needs training only while its lower bound does not exceed the best error found.

The plot shows, for the first steps, every candidate's certified lower bound against its exact
error count (obtained here by resolving every candidate, which the selector itself does not
need to do): a bubble per (exact, bound) pair, its size and label the number of candidates.
Soundness means no bubble above the diagonal; on the diagonal the bound is exact. train = arcene_train, validation =
arcene_valid, ``LogisticRegression(C=1/(n·λ), fit_intercept=False)``, λ = 2^-5.

Run:  python examples/plot_stepwise_selection.py [DATA_DIR]   (needs the ``examples`` extra and
the arcene files, ../shared/data by default). Writes examples/stepwise_selection.png.
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from glru.datasets import load_arcene  # noqa: E402
from glru.losses import get_loss  # noqa: E402
from glru.penalties import get_penalty  # noqa: E402
from glru.stepwise import FeatureSearch  # noqa: E402

STEPS = 3
LAMBDA = 2.0 ** -5


def error_bounds(step, y_valid):
    """Certified lower/upper bounds on each candidate's validation errors, and its exact errors
    if all its labels are known."""
    outcomes = step.outcomes[0]
    wrong = np.array([np.sum(o.decided & ((o.lower > 0) != (y_valid > 0))) for o in outcomes])
    right = np.array([np.sum(o.decided & ((o.lower > 0) == (y_valid > 0))) for o in outcomes])
    return wrong, y_valid.size - right


def resolve_everything(step):
    """Iterate (and, where needed, solve) every candidate until all its labels are known."""
    while True:
        open_ = [p for p in range(step.candidates.size) if step.open_pairs(p)]
        if not open_:
            return
        step.resolve(step.refine(open_))


def main(data=Path(__file__).resolve().parents[2] / "shared" / "data"):
    if not (Path(data) / "arcene_train.data.gz").exists():
        sys.exit(f"arcene not found in {data}; pass the directory holding arcene_*.gz")
    X, y = load_arcene(data)
    y = np.where(y > 0, 1.0, -1.0)
    train, valid = np.arange(100), np.arange(100, 200)
    search = FeatureSearch(X, y, get_loss("logistic"), [(train, valid)], lambda n: get_penalty(LAMBDA), False)
    support = np.arange(X.shape[1])
    fig, axes = plt.subplots(1, STEPS, figsize=(5 * STEPS, 4.5))
    for k, ax in enumerate(axes):
        step = search.step(support, "backward")
        lower, upper = error_bounds(step, y[valid])
        resolve_everything(step)
        exact = error_bounds(step, y[valid])[0]
        best = int(np.lexsort((np.arange(exact.size), exact))[0])  # fewest errors, lowest index among ties
        pairs, counts = np.unique(np.column_stack([exact, lower]), axis=0, return_counts=True)
        certified = np.sum(lower == upper)
        undecided = np.sum((lower != upper) & (lower <= exact[best]))  # bound cannot exclude them
        ax.scatter(pairs[:, 0], pairs[:, 1], s=20 + 300 * np.sqrt(counts / counts.max()), alpha=0.6,
                   color="tab:green", edgecolor="black", lw=0.5)
        for (e, low), count in zip(pairs, counts):
            ax.annotate(str(count), (e, low), ha="center", va="center", fontsize=7)
        top = max(exact.max(), lower.max()) + 1
        ax.plot([0, top], [0, top], color="grey", lw=0.8, label="lower bound = exact")
        ax.axvline(exact[best], color="tab:red", ls="--", lw=1, label="best error (removed)")
        ax.set_xlim(exact.min() - 1.5, top)
        ax.set_ylim(min(lower.min(), exact.min()) - 1.5, top)
        ax.set_title(f"step {k + 1}: remove feature {step.candidates[best]}\n{certified} of {exact.size} certified "
                     f"exactly; {undecided} others could tie the best", fontsize=10)
        ax.set_xlabel("exact validation errors (exact refit)")
        search.advance(step, best)
        support = step.candidate_support(best)
    axes[0].set_ylabel("certified lower bound on the errors")
    axes[0].legend(loc="upper left", fontsize=8)
    fig.suptitle(f"arcene backward elimination, λ = 2^{int(np.log2(LAMBDA))}: certified bounds vs exact errors")
    fig.tight_layout()
    out = Path(__file__).with_name("stepwise_selection.png")
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


if __name__ == "__main__":
    main(*sys.argv[1:])
