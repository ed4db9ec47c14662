"""Trust-region Newton–CG with and without its switch to Newton steps with the Hessian formed.

Reproduce (from the repository root; no shared data needed):

    PYTHONPATH=. python benchmarks/bench_formed_newton.py

60 seeded random logistic problems, n from 50 to 3000 and d from 2 to 300, half of them with
columns scaled over four decades, half sparse (80 % zeros), labels from a linear model with no,
some or much noise (separable or not), λ from 1e-7 to 0.1, with and without intercept. Each is
solved to relative gap 1e-12 twice in this process: ``solver="auto"`` (Newton–CG until its budget
of Hessian-vector products is spent at 20 or more an iteration, then damped Newton with the Hessian
formed: ``glru.solver._products_budget``) and ``solver="newton"`` (Newton–CG alone). A row is
flagged when "auto" misses the gap or ends with an objective more than 1e-10 (relative) above
Newton–CG's.
"""

import platform

import numpy as np
import scipy.sparse as sp
import sklearn

import glru
from _common import timed


def problems(count=60, seed=5):
    """(X, y, lam, fit_intercept) of the seeded random problems described above."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        n, d = int(rng.integers(50, 3000)), int(rng.integers(2, 300))
        X = rng.standard_normal((n, d))
        if rng.random() < 0.5:
            X *= 10.0 ** rng.uniform(-2, 2, size=d)
        if rng.random() < 0.5:
            X[rng.random((n, d)) < 0.8] = 0.0
            X = sp.csr_matrix(X)
        noise = rng.choice([0.0, 0.1, 1.0])
        y = np.where(X @ rng.standard_normal(d) + noise * rng.standard_normal(n) > 0, 1.0, -1.0)
        y[:2] = [1.0, -1.0]
        yield X, y, 10.0 ** rng.uniform(-7, -1), bool(rng.random() < 0.7)


def main():
    print(f"python {platform.python_version()}, numpy {np.__version__}, scikit-learn {sklearn.__version__}, "
          f"{platform.processor() or platform.machine()}")
    print("| n × d | sparse | λ | intercept | auto: solver | auto s | Newton–CG s | ratio | flag |")
    print("|---|---|---|---|---|---|---|---|---|")
    totals, ratios, switched, flagged = np.zeros(2), [], 0, 0
    for X, y, lam, fit_intercept in problems():
        fits, seconds = zip(*(timed(glru.fit, X, y, lam=lam, tol=1e-12, fit_intercept=fit_intercept, solver=solver,
                                    max_iter=2000) for solver in ("auto", "newton")))
        auto, alone = fits
        objective = [f.problem.fun(f.problem.join(f.coef_, f.intercept_)) for f in fits]
        flag = not auto.converged_ or objective[0] - objective[1] > 1e-10 * abs(objective[1])
        totals += seconds
        ratios.append(seconds[1] / seconds[0])
        switched += "formed-newton" in auto.solver_
        flagged += flag
        print(f"| {X.shape[0]} × {X.shape[1]} | {sp.issparse(X)} | {lam:.1e} | {fit_intercept} | {auto.solver_} | "
              f"{seconds[0]:.3f} | {seconds[1]:.3f} | {ratios[-1]:.2f} | {'FLAG' if flag else ''} |", flush=True)
    print(f"\nauto {totals[0]:.2f} s, Newton–CG alone {totals[1]:.2f} s; {switched} of {len(ratios)} switched; "
          f"Newton–CG / auto per problem {min(ratios):.2f}–{max(ratios):.2f} (median {np.median(ratios):.2f}); "
          f"{flagged} flagged")


if __name__ == "__main__":
    main()
