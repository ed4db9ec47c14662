"""Hessian-free recollection unlearning on w8a: forgetting rows against replay retraining.

Reproduce (from the repository root, with ../shared/data present):

    PYTHONPATH=. python benchmarks/bench_recollection.py              # all 49,749 rows (~3 min)
    PYTHONPATH=. python benchmarks/bench_recollection.py --n 10000    # a random subsample (~15 s)

``RecollectionSGDClassifier`` (binary logistic, α = 1e-4, clipped decayed SGD) is fitted on
w8a (LIBSVM, 300 sparse binary features, ~11.7 non-zeros per row). The fit records every row's
recollection: a dense (n, 301) float64 matrix, 8·n·301 bytes (120 MB at n = 49,749), and
costs O(E·n²·nnz-per-row) against O(E·n·nnz-per-row) for plain SGD, since every stored vector
takes every step's Hessian-vector product. Then ``--forget`` random rows are forgotten, and
the result is compared with the reference: the same SGD run (same mini-batches and step sizes)
replayed without those rows. Also shown: the paper's Theorem 2 bound on that distance, and the
same forgetting with the calibrated Gaussian noise (ε = 1, δ = 1e-5) that its (ε, δ) guarantee
needs. Times are wall clock in this one process (2 cores; BLAS threads at their default).
"""

import argparse
import copy
import platform
from pathlib import Path

import numpy as np
import sklearn
from sklearn.datasets import load_svmlight_file

from glru.recollection import clipped_sgd
from sklearn_ext.recollection import RecollectionSGDClassifier
from _common import DATA, timed

W8A = DATA / "w8a.gz"


def parse():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=W8A)
    parser.add_argument("--n", type=int, default=None, help="random subsample of rows (default: all)")
    parser.add_argument("--forget", type=int, default=10)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--eta0", type=float, default=0.1)
    parser.add_argument("--decay", type=float, default=0.999)
    parser.add_argument("--clip", type=float, default=10.0)
    parser.add_argument("--alpha", type=float, default=1e-4)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def load(path, n, seed):
    X, y = load_svmlight_file(str(path), n_features=300)
    if n is not None and n < X.shape[0]:
        rows = np.sort(np.random.default_rng(seed).choice(X.shape[0], n, replace=False))
        X, y = X[rows], y[rows]
    return X.tocsr(), y


def parameters(model):
    return np.append(model.coef_.ravel(), model.intercept_)


def main():
    args = parse()
    X, y = load(args.data, args.n, args.seed)
    n, d = X.shape
    params = dict(alpha=args.alpha, eta0=args.eta0, decay=args.decay, clip=args.clip, batch_size=args.batch_size,
                  n_epochs=args.epochs, random_state=args.seed)
    model, fit_time = timed(RecollectionSGDClassifier(**params).fit, X, y)
    batches, etas = model.sgd_schedule()
    signed = np.where(y == model.classes_[1], 1.0, -1.0)
    sgd = dict(alpha=args.alpha, clip=args.clip, batches=batches, etas=etas)
    plain, plain_time = timed(clipped_sgd, X, signed, "logistic", **sgd)
    assert np.allclose(plain, parameters(model), rtol=0, atol=1e-10), "fit is not the plain SGD run"

    rows = np.random.default_rng(args.seed + 1).choice(n, args.forget, replace=False)
    keep = np.ones(n, dtype=bool)
    keep[rows] = False
    replay, replay_time = timed(clipped_sgd, X, signed, "logistic", keep=keep, **sgd)
    original = parameters(model)
    noisy = copy.deepcopy(model).set_params(epsilon=1.0, delta=1e-5)   # the same fit, forgetting with noise
    _, forget_time = timed(model.forget, rows)
    _, noisy_time = timed(noisy.forget, rows)

    def dist(theta):
        return float(np.linalg.norm(theta - replay))

    print(f"w8a: n = {n:,} rows{' (random subsample)' if args.n else ''}, d = {d}, {X.nnz / n:.1f} non-zeros per row; "
          f"{args.epochs} epochs of batches of {args.batch_size} ({len(batches):,} steps), η₀ = {args.eta0}, "
          f"q = {args.decay}, C = {args.clip}, α = {args.alpha}; forgetting {args.forget} random rows")
    print(f"recollections: {model.recollections_.nbytes / 2**20:.0f} MiB dense float64; ‖θ_original‖ = "
          f"{np.linalg.norm(original):.3f}; {platform.python_version()}, numpy {np.__version__}, "
          f"scikit-learn {sklearn.__version__}\n")
    print("| model | time (s) | ‖θ − θ_replay‖₂ |")
    print("|---|---:|---:|")
    print(f"| original (nothing forgotten) | — | {dist(original):.3e} |")
    print(f"| replay retraining without the rows (reference) | {replay_time:.3f} | 0 |")
    print(f"| forget(rows) by recollection | {forget_time:.6f} | {dist(parameters(model)):.3e} |")
    print(f"| forget(rows) + calibrated noise (ε = 1, δ = 1e-5, σ = {noisy.noise_std_:.3g}) | {noisy_time:.6f} | "
          f"{dist(parameters(noisy)):.3e} |")
    print(f"\nPaper's Theorem 2 bound on the recollection's distance: {model.error_bound_:.3e}")
    print(f"Training: plain clipped SGD {plain_time:.2f} s; with recollections (fit) {fit_time:.2f} s "
          f"({fit_time / plain_time:.0f}×); forgetting is {replay_time / forget_time:,.0f}× faster than replaying.")


if __name__ == "__main__":
    main()
