"""Coded machine unlearning (Aldaghri, Mahdavifar and Beirami): test MSE versus unlearning cost
for coded rates τ against uncoded sharding (τ = 1), and the time of ``forget`` versus exact
retraining of the whole ensemble. ``CodedShardRegressor`` from sklearn_ext.coded.

Reproduce (from the repository root):

    PYTHONPATH=. python benchmarks/bench_coded_unlearning.py           # full run (~2 min on 2 cores)
    PYTHONPATH=. python benchmarks/bench_coded_unlearning.py --quick   # 2 seeds, fewer shard counts

Data (generated offline; ../shared/data holds classification sets only, and
``fetch_california_housing`` needs the network):

* ``heavy-tailed``: the paper's §5 synthetic setting (its Figure 9, made smaller): d = 10
  i.i.d. lognormal(μ = 1, σ² = 0.5) features, the degree-3 polynomial without interactions
  X_p = [X, X∘², X∘³] (p = 30), y = X_p w + ε with w, ε ~ N(0, 1); 20,000 training and 5,000
  test rows. Column X∘ᵏ is divided by its population mean exp(kμ + k²σ²/2): a data-independent
  scale (a scaler fitted on the data would keep forgotten rows; glru.coded_shards), to which
  OLS with an intercept is invariant anyway. The noise variance, 1, is the best possible MSE.
* ``make_regression``: ``sklearn.datasets.make_regression(n_samples=25_000, n_features=30,
  n_informative=10, noise=1.0, random_state=0)``, the same split. Gaussian features: the
  setting where the paper (Appendix A3) reports no coding gain. Best possible MSE 1.

Protocol (the paper's §4, with exact least squares): OLS with an intercept (alpha = 0), for every
rate τ ∈ {1, 2, 4, 8} and number of uncoded shards s ∈ {8, 16, …, 256} with τ ≤ s (r = s/τ coded
shards), and the single learner (s = 1), over seeds 0–4 (the seed draws the shard layout and
G): fit, forget 10 random training rows one request at a time, then measure the test MSE.

* cost of a request = rows the affected learner is retrained on, n̄ = ⌈n/s⌉ for every τ (one
  learner per row with the minimum-cost G); the paper's x-axis is the time of that retrain.
* ``forget`` times (median over requests and seeds): ``method="statistics"`` (downdate XᵀX and
  Xᵀy, re-solve p × p; the default) and ``method="retrain"`` (retrain the affected learner on
  its n̄ coded rows, Algorithm 3). A learner whose normal equations are too ill-conditioned is
  retrained in both (glru.coded_shards.MAX_CONDITION); the column ``fallbacks`` counts them.
* ``refit``: the exact alternative, fitting the whole ensemble on the remaining rows (median
  over seeds).
* ``Δ``: max relative difference of the weights reached by the two forget methods (exactness
  check; both equal the retrain of the affected learners, see tests/test_coded_shards.py).
"""

import argparse
import platform
import time

import numpy as np
import scipy
import sklearn
from sklearn.datasets import make_regression

from sklearn_ext.coded import CodedShardRegressor

RATES = (1, 2, 4, 8)
SHARDS = (8, 16, 32, 64, 128, 256)
N_TRAIN, N_TEST, N_REQUESTS = 20_000, 5_000, 10


def heavy_tailed(n, d=10, mu=1.0, sigma2=0.5, degree=3, seed=0):
    """The paper's lognormal polynomial regression, columns scaled by their population means."""
    rng = np.random.default_rng(seed)
    X = rng.lognormal(mu, np.sqrt(sigma2), size=(n, d))
    powers = np.hstack([X ** k for k in range(1, degree + 1)])
    y = powers @ rng.standard_normal(powers.shape[1]) + rng.standard_normal(n)
    means = np.repeat([np.exp(k * mu + k * k * sigma2 / 2) for k in range(1, degree + 1)], d)
    return powers / means, y


def gaussian(n):
    return make_regression(n_samples=n, n_features=30, n_informative=10, noise=1.0, random_state=0)


def run_config(X, y, s, rate, seeds):
    """Test MSE, forget and refit times, fallbacks and Δ for one (s, τ), over seeds."""
    Xtr, ytr, Xte, yte = X[:N_TRAIN], y[:N_TRAIN], X[N_TRAIN:], y[N_TRAIN:]
    mse, t_stats, t_retrain, t_refit, fallbacks, delta = [], [], [], [], 0, 0.0
    for seed in seeds:
        params = dict(n_shards=s, rate=rate, random_state=seed)
        by_stats, by_retrain = (CodedShardRegressor(**params).fit(Xtr, ytr) for _ in range(2))
        rows = np.random.default_rng(1000 + seed).choice(N_TRAIN, N_REQUESTS, replace=False)
        for u in rows:
            by_stats.forget([u])
            by_retrain.forget([u], method="retrain")
        t_stats += [h["seconds"] for h in by_stats.forget_history_]
        t_retrain += [h["seconds"] for h in by_retrain.forget_history_]
        fallbacks += sum(h["n_rows_retrained"] > 0 for h in by_stats.forget_history_)
        theta, other = (np.r_[m.coef_, m.intercept_] for m in (by_stats, by_retrain))
        delta = max(delta, np.abs(theta - other).max() / np.abs(other).max())
        mse.append(np.mean((by_stats.predict(Xte) - yte) ** 2))
        keep = np.setdiff1d(np.arange(N_TRAIN), rows)
        start = time.perf_counter()
        CodedShardRegressor(**params).fit(Xtr[keep], ytr[keep])
        t_refit.append(time.perf_counter() - start)
    return dict(mse=np.mean(mse), mse_sd=np.std(mse), stats=np.median(t_stats), retrain=np.median(t_retrain),
                refit=np.median(t_refit), fallbacks=fallbacks, requests=len(t_stats), delta=delta)


def table(name, X, y, shards, seeds):
    print(f"\n### {name}: n = {N_TRAIN} train / {N_TEST} test, p = {X.shape[1]}, OLS with intercept, "
          f"{len(seeds)} seeds, {N_REQUESTS} single-row requests each\n")
    print("| τ | s | r | rows retrained / request (n̄) | test MSE (± sd) | forget, statistics ms | "
          "forget, retrain learner ms | refit ensemble ms | refit / forget | fallbacks | Δ |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    configs = [(1, 1)] + [(s, rate) for s in shards for rate in RATES if rate <= s]
    for s, rate in configs:
        res = run_config(X, y, s, rate, seeds)
        print(f"| {rate} | {s} | {s // rate} | {-(-N_TRAIN // s)} | {res['mse']:.4f} (± {res['mse_sd']:.4f}) | "
              f"{1e3 * res['stats']:.2f} | {1e3 * res['retrain']:.2f} | {1e3 * res['refit']:.1f} | "
              f"{res['refit'] / res['stats']:.0f}× | {res['fallbacks']}/{res['requests']} | {res['delta']:.0e} |",
              flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 seeds, s ∈ {8, 64, 256}")
    args = parser.parse_args(argv)
    seeds = range(2) if args.quick else range(5)
    shards = (8, 64, 256) if args.quick else SHARDS
    print(f"python {platform.python_version()}, numpy {np.__version__}, scipy {scipy.__version__}, "
          f"scikit-learn {sklearn.__version__}, {platform.processor() or platform.machine()}")
    start = time.perf_counter()
    table("heavy-tailed (lognormal σ² = 0.5, degree 3)", *heavy_tailed(N_TRAIN + N_TEST), shards, seeds)
    table("make_regression (Gaussian)", *gaussian(N_TRAIN + N_TEST), shards, seeds)
    print(f"\nwall time {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
