"""Coded machine unlearning: test MSE against the cost of forgetting one training row.

``CodedShardRegressor`` splits the rows into s shards and sums them, with a random binary code
of rate τ, into s/τ coded shards, one least-squares learner each, the weights averaged.
Forgetting a row retrains (or re-solves from its statistics) only the learner whose coded shard
it entered, on n̄ = ⌈n/s⌉ coded rows: the unlearning cost, the same for every τ at a given s.
τ = 1 is uncoded sharding. Data: the paper's heavy-tailed setting (lognormal(1, 0.5) features,
degree-3 polynomial, p = 30; 20,000 training rows), OLS with an intercept; each point is the
mean test MSE over 3 seeds after one forget request. What to look for: all curves approach
the single learner (s = 1) as the cost grows; at the smallest cost (79 rows) τ = 8 has the
lowest MSE, while τ = 2 can be worse than uncoded (its random G leaves some coded shards
summing a single shard, and there are half as many learners to average). The benchmark
(benchmarks/bench_coded_unlearning.py) has the numbers over 5 seeds, and a Gaussian data set
where coding does not help.

Run:  python examples/plot_coded_unlearning.py   (needs the ``examples`` extra; ~15 s)
Writes examples/coded_unlearning.png.
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from sklearn_ext.coded import CodedShardRegressor  # noqa: E402

N_TRAIN, N_TEST, D, MU, SIGMA2 = 20_000, 5_000, 10, 1.0, 0.5
RATES, SHARDS, SEEDS = (1, 2, 4, 8), (8, 16, 32, 64, 128, 256), range(3)


def heavy_tailed(n, seed=0):
    """Lognormal(μ, σ²) features, y = [X, X², X³]·w + N(0, 1); columns divided by their
    population means (fixed constants, not fitted on the data, so forgetting stays exact)."""
    rng = np.random.default_rng(seed)
    X = rng.lognormal(MU, np.sqrt(SIGMA2), size=(n, D))
    powers = np.hstack([X ** k for k in (1, 2, 3)])
    y = powers @ rng.standard_normal(powers.shape[1]) + rng.standard_normal(n)
    return powers / np.repeat([np.exp(k * MU + k * k * SIGMA2 / 2) for k in (1, 2, 3)], D), y


def mean_mse(Xtr, ytr, Xte, yte, s, rate):
    """Test MSE after forgetting one random training row, averaged over seeds."""
    mse = []
    for seed in SEEDS:
        model = CodedShardRegressor(n_shards=s, rate=rate, random_state=seed).fit(Xtr, ytr)
        model.forget([np.random.default_rng(seed).integers(N_TRAIN)])
        mse.append(np.mean((model.predict(Xte) - yte) ** 2))
    return np.mean(mse)


def main():
    X, y = heavy_tailed(N_TRAIN + N_TEST)
    split = (X[:N_TRAIN], y[:N_TRAIN], X[N_TRAIN:], y[N_TRAIN:])
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for rate in RATES:
        shards = [s for s in SHARDS if s >= rate]
        cost = [-(-N_TRAIN // s) for s in shards]
        ax.plot(cost, [mean_mse(*split, s, rate) for s in shards], "o-",
                label="uncoded (τ = 1)" if rate == 1 else f"coded, τ = {rate}")
    ax.plot([N_TRAIN], [mean_mse(*split, 1, 1)], "k*", markersize=12, label="single learner (s = 1)")
    ax.axhline(1.0, color="grey", lw=0.8, ls=":", label="noise variance")
    ax.set_xscale("log")
    ax.set_xlabel("unlearning cost: coded rows the affected learner is retrained on (n̄ = n/s)")
    ax.set_ylabel("test MSE")
    ax.set_title("Coded vs uncoded sharding (OLS, heavy-tailed features)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    out = Path(__file__).with_name("coded_unlearning.png")
    fig.savefig(out, dpi=120)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
