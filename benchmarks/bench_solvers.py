"""Benchmark glru's two exact solvers against scikit-learn and raw LIBLINEAR.

Reproduce (from the repository root, with the shared data in ../shared/data):

    PYTHONPATH=. python benchmarks/bench_solvers.py              # full run (the tables in docs/benchmarks.md)
    PYTHONPATH=. python benchmarks/bench_solvers.py --scaling    # cost-scaling check (w8a, remove one row)
    PYTHONPATH=. python benchmarks/bench_solvers.py --quick      # mushrooms only, a few seconds
    PYTHONPATH=. python benchmarks/bench_solvers.py --datasets a9a.t,w8a

What is measured, for every dataset, loss, lam and with/without an unpenalized intercept b:

    min_{w,b} (1/n) sum_i loss(y_i, x_i.w + b) + lam/2 ||w||^2

* cold solves: ``glru.fit(solver="newton")`` and ``glru.fit(solver="liblinear")`` to a relative
  duality gap of 1e-6, and for squared_hinge without intercept ``glru.fit(solver="liblinear-dual")``; scikit-learn with the same objective (C = 1/(n lam)): LogisticRegression
  (l2, solvers "lbfgs" and "newton-cg", tol=1e-8; their intercept is unpenalized, which matches)
  and, for squared_hinge without intercept only, LinearSVC(loss="squared_hinge", dual=False,
  tol=1e-8) (LinearSVC penalizes its intercept, so it is not run with one); raw liblinear-official
  ``train(y, X, "-s 0|2 -c C -e 1e-4 -q" [+ " -B 1 -R"])`` from a cold start.
* every solution's objective under glru's primal (``fit.problem.primal``) and its relative
  excess over the best one found; excess > 1e-6 is flagged with "!".
* times are medians of 3 runs (``time.perf_counter``, the whole call including input validation
  and, for glru, the cached sums a Fit keeps); a method whose first run takes longer than
  ``--slow`` seconds (default 20) is run once only, marked "(1x)".
* warm start: 1% of the rows (at least one, fixed seed) are removed from a converged glru fit;
  timed are ``fit.remove_samples(rows).refit()`` (certificate + warm start, solver "auto"),
  ``glru.fit(X_red, y_red, solver=s, coef_init=w_old, intercept_init=b_old)`` for s in
  newton/liblinear, and, for reference, cold ``glru.fit`` of both solvers on the reduced data.
* ``--scaling``: w8a (first 50,000 rows = all 49,749), logistic, lam=1e-4: glru.fit time
  (median of 3) vs the median over 50 random rows i of ``fit.remove_samples([i])`` followed by
  ``cert.decision_bounds(X[i])``.

Preprocessing: arcene = train + valid stacked, constant features dropped, each feature
standardized to mean 0 / population variance 1 (the GLRU paper's setting); madelon.t is 100%
dense and on a raw scale of ~500, so it is standardized the same way and stored dense
(``--datasets madelon.t-raw`` runs the unscaled data, not part of the full run: it is badly
conditioned and takes far longer than the time budget). The LIBSVM sets are used as they are
(CSR; mushrooms' labels 1/2 are mapped to -1/+1). No rows are subsampled.
"""

import argparse
import gc
import os
import platform
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy
import scipy.sparse as sp
import sklearn
from sklearn.datasets import load_svmlight_file
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.svm import LinearSVC

import glru
from glru.datasets import load_arcene, standardize as _standardize

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path(os.environ.get("GLRU_DATA", ROOT.parent / "shared" / "data"))
TOL = 1e-6            # glru's relative duality gap
SK_TOL = 1e-8         # scikit-learn's tolerance
SK_MAX_ITER = 100_000
RAW_EPS = 1e-4        # raw LIBLINEAR's -e
FLAG = 1e-6           # relative objective excess that is flagged
ENV_AT_START = None
WARM_FRACTION = 0.01


# --------------------------------------------------------------------------- data
def _csr(X):
    X = sp.csr_matrix(X, dtype=np.float64)
    X.sort_indices()
    # 32-bit indices: LinearSVC refuses int64 ones, and all methods then see the same matrix
    X.indices, X.indptr = X.indices.astype(np.int32), X.indptr.astype(np.int32)
    return X


def _libsvm(file, dense=False, standardize=False):
    def load(data):
        X, y = load_svmlight_file(str(data / file))
        if dense:
            X = X.toarray()
            if standardize:
                X = _standardize(X)
            return np.ascontiguousarray(X), y
        return _csr(X), y
    return load


LIBSVM_LAMS = (1e-2, 1e-4)
BOTH_LOSSES = ("logistic", "squared_hinge")
# name -> (files, loader, lams, losses, description)
DATASETS = {
    "arcene": (("arcene_train.data.gz", "arcene_train.labels.gz", "arcene_valid.data.gz", "arcene_valid.labels.gz"),
               load_arcene, (1.0, 2.0 ** -10), ("logistic",), "dense, standardized"),
    "a9a.t": (("a9a.t.gz",), _libsvm("a9a.t.gz"), LIBSVM_LAMS, BOTH_LOSSES, "sparse"),
    "mushrooms": (("mushrooms.gz",), _libsvm("mushrooms.gz"), LIBSVM_LAMS, BOTH_LOSSES, "sparse"),
    "a8a": (("a8a.gz",), _libsvm("a8a.gz"), LIBSVM_LAMS, BOTH_LOSSES, "sparse"),
    "w8a": (("w8a.gz",), _libsvm("w8a.gz"), LIBSVM_LAMS, BOTH_LOSSES, "sparse"),
    "madelon.t": (("madelon.t.gz",), _libsvm("madelon.t.gz", dense=True, standardize=True), LIBSVM_LAMS,
                  BOTH_LOSSES, "dense, standardized"),
    "madelon.t-raw": (("madelon.t.gz",), _libsvm("madelon.t.gz", dense=True), LIBSVM_LAMS, BOTH_LOSSES,
                      "dense, raw scale"),
}
FULL = ("arcene", "a9a.t", "mushrooms", "a8a", "w8a", "madelon.t")
QUICK = ("mushrooms",)


def plus_minus(y):
    """The larger label -> +1, as glru (and scikit-learn's coef_) do."""
    classes = np.unique(y)
    return np.where(y == classes[1], 1.0, -1.0)


# --------------------------------------------------------------------------- timing
class Timing:
    def __init__(self, seconds, runs, result, warned):
        self.seconds, self.runs, self.result, self.warned = seconds, runs, result, warned


def timed(fn, reps, slow):
    times, warned, result = [], False, None
    for k in range(reps):
        result = None
        gc.collect()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t0 = time.perf_counter()
            result = fn()
            times.append(time.perf_counter() - t0)
        warned = any(issubclass(w.category, ConvergenceWarning) for w in caught)
        if k == 0 and times[0] > slow:
            break
    return Timing(statistics.median(times), len(times), result, warned)


# --------------------------------------------------------------------------- methods
def raw_liblinear(X, y_pm, loss, C, fit_intercept):
    from liblinear.liblinearutil import train

    solver = 0 if loss == "logistic" else 2
    options = f"-s {solver} -c {C!r} -e {RAW_EPS!r} -q" + (" -B 1 -R" if fit_intercept else "")
    # the Python wrapper converts dense rows one at a time (0.65 s for arcene); CSR is vectorised.
    # glru's liblinear solver converts the same way, inside its timing too.
    model = train(y_pm, X if sp.issparse(X) else sp.csr_matrix(X), options)
    z = np.ctypeslib.as_array(model.w, shape=(X.shape[1] + int(fit_intercept),)).copy()
    sign = 1.0 if model.label[0] == 1 else -1.0  # w is the decision function of label[0]
    return sign * z[:X.shape[1]], (sign * z[-1] if fit_intercept else 0.0)


def sklearn_logistic(X, y, C, fit_intercept, solver):
    m = LogisticRegression(C=C, l1_ratio=0.0, solver=solver, tol=SK_TOL, max_iter=SK_MAX_ITER,
                           fit_intercept=fit_intercept).fit(X, y)
    return m.coef_.ravel().copy(), (float(m.intercept_[0]) if fit_intercept else 0.0)


def sklearn_linearsvc(X, y, C):
    m = LinearSVC(loss="squared_hinge", dual=False, C=C, fit_intercept=False, tol=SK_TOL,
                  max_iter=SK_MAX_ITER).fit(X, y)
    return m.coef_.ravel().copy(), 0.0


def cold_methods(X, y, loss, lam, fit_intercept):
    """name -> zero-argument callable returning (coef, intercept) or a glru.Fit."""
    n = X.shape[0]
    C = 1.0 / (n * lam)
    y_pm = plus_minus(y)
    methods = {
        "glru newton": lambda: glru.fit(X, y, loss=loss, lam=lam, fit_intercept=fit_intercept, tol=TOL,
                                        solver="newton"),
        "glru liblinear": lambda: glru.fit(X, y, loss=loss, lam=lam, fit_intercept=fit_intercept, tol=TOL,
                                           solver="liblinear"),
    }
    if loss == "logistic":
        methods["sklearn lbfgs"] = lambda: sklearn_logistic(X, y, C, fit_intercept, "lbfgs")
        methods["sklearn newton-cg"] = lambda: sklearn_logistic(X, y, C, fit_intercept, "newton-cg")
    elif not fit_intercept:
        methods["glru liblinear-dual"] = lambda: glru.fit(X, y, loss=loss, lam=lam, tol=TOL, solver="liblinear-dual")
        methods["sklearn LinearSVC"] = lambda: sklearn_linearsvc(X, y, C)
    methods["raw LIBLINEAR"] = lambda: raw_liblinear(X, y_pm, loss, C, fit_intercept)
    return methods


def solution(result):
    if isinstance(result, glru.Fit):
        return result.coef_, result.intercept_
    return result


# --------------------------------------------------------------------------- one configuration
def run_config(name, X, y, loss, lam, fit_intercept, reps, slow, seed):
    row = dict(dataset=name, loss=loss, lam=lam, b=fit_intercept, n=X.shape[0], d=X.shape[1],
               sparse=sp.issparse(X))
    cold = {}
    for method, fn in cold_methods(X, y, loss, lam, fit_intercept).items():
        cold[method] = timed(fn, reps, slow)
    fits = {m: t.result for m, t in cold.items() if isinstance(t.result, glru.Fit)}
    problem = fits["glru newton"].problem
    row["cold"] = _score(cold, problem)
    row["glru_gaps"] = {m: f.relative_gap() for m, f in fits.items()}

    # ---- warm start after removing 1% of the rows
    base = next((f for f in fits.values() if f.converged_), fits["glru newton"])
    n = X.shape[0]
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(n, size=max(1, int(round(WARM_FRACTION * n))), replace=False))
    keep = np.ones(n, dtype=bool)
    keep[rows] = False
    X_red, y_red = X[keep], y[keep]
    w0, b0 = base.coef_, base.intercept_
    warm_fns = {
        "refit() (auto)": lambda: base.remove_samples(rows).refit(tol=TOL),
        "warm newton": lambda: glru.fit(X_red, y_red, loss=loss, lam=lam, fit_intercept=fit_intercept, tol=TOL,
                                        solver="newton", coef_init=w0, intercept_init=b0),
        "warm liblinear": lambda: glru.fit(X_red, y_red, loss=loss, lam=lam, fit_intercept=fit_intercept, tol=TOL,
                                           solver="liblinear", coef_init=w0, intercept_init=b0),
        "cold newton": lambda: glru.fit(X_red, y_red, loss=loss, lam=lam, fit_intercept=fit_intercept, tol=TOL,
                                        solver="newton"),
        "cold liblinear": lambda: glru.fit(X_red, y_red, loss=loss, lam=lam, fit_intercept=fit_intercept, tol=TOL,
                                           solver="liblinear"),
    }
    warm = {m: timed(fn, reps, slow) for m, fn in warm_fns.items()}
    row["removed"] = rows.shape[0]
    row["refit_solver"] = warm["refit() (auto)"].result.solver_
    row["warm"] = _score(warm, warm["cold newton"].result.problem)
    return row


def _score(timings, problem):
    """Objective of each solution under glru's primal, relative excess over the best."""
    scores = {}
    for method, t in timings.items():
        coef, intercept = solution(t.result)
        scores[method] = dict(time=t.seconds, runs=t.runs, warned=t.warned,
                              obj=problem.primal(np.asarray(coef, dtype=float), intercept if problem.fit_intercept else 0.0),
                              iters=getattr(t.result, "n_iter_", None))
    best = min(s["obj"] for s in scores.values())
    for s in scores.values():
        s["excess"] = (s["obj"] - best) / abs(best)
        s["flag"] = s["excess"] > FLAG
    return scores


# --------------------------------------------------------------------------- reporting
COLD_COLS = ("glru newton", "glru liblinear", "glru liblinear-dual", "sklearn lbfgs", "sklearn newton-cg", "sklearn LinearSVC", "raw LIBLINEAR")
WARM_COLS = ("refit() (auto)", "warm newton", "warm liblinear", "cold newton", "cold liblinear")


def _lam(lam):
    if lam >= 1e-2 or lam == 1.0:
        return f"{lam:g}"
    e = np.log2(lam)
    return f"2^{int(e)}" if e == int(e) else f"{lam:.0e}"


def _key(row):
    return f"| {row['dataset']} | {'log' if row['loss'] == 'logistic' else 'sqh'} | {_lam(row['lam'])} | " \
           f"{'yes' if row['b'] else 'no'} |"


def _ok(s):
    return not (s["flag"] or s["warned"])


def _reference(scores, a, b):
    """The faster of two glru columns, among those that converged (both, if neither did)."""
    good = [scores[m]["time"] for m in (a, b) if _ok(scores[m])]
    return min(good) if good else min(scores[a]["time"], scores[b]["time"])


def _cell(s, ref):
    if s is None:
        return "–"
    text = f"{s['time']:.3f} ({s['time'] / ref:.2f}×)"
    if s["runs"] == 1:
        text += " (1x)"
    if s["flag"]:
        text += " !"
    if s["warned"]:
        text += " nc"
    return text


def cold_table(rows):
    cols = [c for c in COLD_COLS if any(c in r["cold"] for r in rows)]
    out = ["| data | loss | λ | b | " + " | ".join(cols) + " |", "|" + "---|" * (4 + len(cols))]
    for r in rows:
        ref = _reference(r["cold"], "glru newton", "glru liblinear")
        out.append(_key(r) + " " + " | ".join(_cell(r["cold"].get(c), ref) for c in cols) + " |")
    return "\n".join(out)


def objective_table(rows, part, cols):
    cols = [c for c in cols if any(c in r[part] for r in rows)]
    out = ["| data | loss | λ | b | best objective | " + " | ".join(cols) + " |", "|" + "---|" * (5 + len(cols))]
    for r in rows:
        best = min(s["obj"] for s in r[part].values())
        cells = []
        for c in cols:
            s = r[part].get(c)
            cells.append("–" if s is None else (f"{s['excess']:.1e}" + (" !" if s["flag"] else "")))
        out.append(_key(r) + f" {best:.10g} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def warm_table(rows):
    out = ["| data | loss | λ | b | rows removed | " + " | ".join(WARM_COLS) + " |", "|" + "---|" * (5 + len(WARM_COLS))]
    for r in rows:
        w = r["warm"]
        ref = _reference(w, "warm newton", "warm liblinear")
        out.append(_key(r) + f" {r['removed']} | " + " | ".join(_cell(w[c], ref) for c in WARM_COLS) + " |")
    return "\n".join(out)


def _gmean(values):
    values = [v for v in values if v > 0 and np.isfinite(v)]
    return float(np.exp(np.mean(np.log(values)))) if values else float("nan")


def summary(rows):
    """Per setting: which glru solver wins, and ratios against scikit-learn and raw LIBLINEAR.

    A glru solver that did not reach the optimum (objective flag or ConvergenceWarning) loses its
    comparison and its ratio is left out of the geometric mean; 'best glru' is then the other one."""
    out = ["| setting | configs | newton faster | gmean t(newton)/t(liblinear) [min–max] | "
           "gmean t(best glru)/t(best sklearn) [min–max] | gmean t(best glru)/t(raw LIBLINEAR) [min–max] | "
           "raw LIBLINEAR within 1e-6 |",
           "|---|---|---|---|---|---|---|"]
    groups = {}
    for r in rows:
        kind = "dense" if not r["sparse"] else "sparse"
        b = "b" if r["b"] else "no b"
        groups.setdefault(f"cold, {kind}, {b}", []).append(("cold", r))
        groups.setdefault(f"warm, {kind}, {b}", []).append(("warm", r))
    order = sorted(groups, key=lambda k: (k.startswith("warm"), "sparse" in k, k.endswith(" b")))
    for key in order:
        nl, wins, failed, vs_sk, vs_raw, raw_ok, n_cfg = [], 0, [], [], [], 0, 0
        for part, r in groups[key]:
            n_cfg += 1
            s = r[part]
            a, b = ("glru newton", "glru liblinear") if part == "cold" else ("warm newton", "warm liblinear")
            sa, sb = s[a], s[b]
            if _ok(sa) and _ok(sb):
                nl.append(sa["time"] / sb["time"])
                wins += sa["time"] < sb["time"]
            else:
                failed.append("both" if not (_ok(sa) or _ok(sb)) else "newton" if not _ok(sa) else "liblinear")
                wins += _ok(sa) and not _ok(sb)
            if part == "cold":
                best = _reference(s, a, b)
                sk = [v["time"] for m, v in s.items() if m.startswith("sklearn") and _ok(v)]
                if sk:
                    vs_sk.append(best / min(sk))
                vs_raw.append(best / s["raw LIBLINEAR"]["time"])
                raw_ok += not s["raw LIBLINEAR"]["flag"]

        def fmt(v):
            return f"{_gmean(v):.2f} [{min(v):.2f}–{max(v):.2f}]" if v else "–"
        note = f" ({len(failed)} not converged: {', '.join(failed)})" if failed else ""
        out.append(f"| {key} | {n_cfg} | {wins}/{n_cfg}{note} | {fmt(nl)} | {fmt(vs_sk)} | {fmt(vs_raw)} | "
                   + (f"{raw_ok}/{n_cfg} |" if key.startswith("cold") else "– |"))
    return "\n".join(out)


def flags(rows):
    lines = []
    for r in rows:
        for part in ("cold", "warm"):
            for m, s in r[part].items():
                if s["flag"] or s["warned"]:
                    what = []
                    if s["flag"]:
                        what.append(f"objective {s['excess']:.1e} above the best")
                    if s["warned"]:
                        what.append("ConvergenceWarning")
                    lines.append(f"- {r['dataset']} {r['loss']} λ={_lam(r['lam'])} b={'yes' if r['b'] else 'no'} "
                                 f"[{part}] {m}: " + ", ".join(what))
        for m, g in r["glru_gaps"].items():
            if g > TOL:
                lines.append(f"- {r['dataset']} {r['loss']} λ={_lam(r['lam'])} b={'yes' if r['b'] else 'no'} "
                             f"[cold] {m}: relative gap {g:.2e} > tol {TOL:g}")
    return "\n".join(lines) if lines else "- none"


def environment():
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        from importlib.metadata import version
        ll = version("liblinear-official")
    except Exception:  # pragma: no cover
        ll = "?"
    commit = "unknown"
    try:
        import subprocess
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "glru"], capture_output=True,
                               text=True, check=True).stdout.strip()
        commit += " (glru/ modified)" if dirty else ""
    except Exception:
        pass
    return (f"glru commit {commit}; CPU: {cpu}, {os.cpu_count()} cores; Python {platform.python_version()}; numpy {np.__version__}, "
            f"scipy {scipy.__version__}, scikit-learn {sklearn.__version__}, liblinear-official {ll}, "
            f"glru {glru.__version__}")


# --------------------------------------------------------------------------- main benchmark
def benchmark(names, data, reps, slow):
    global ENV_AT_START
    ENV_AT_START = environment()  # the code that runs is the code imported now
    rows, t_start = [], time.perf_counter()
    _warm_up()
    for k, name in enumerate(names):
        files, loader, lams, losses, desc = DATASETS[name]
        missing = [f for f in files if not (data / f).exists()]
        if missing:
            print(f"skipping {name}: missing {', '.join(missing)} in {data}", file=sys.stderr)
            continue
        X, y = loader(data)
        print(f"{name}: n={X.shape[0]}, d={X.shape[1]}, {desc}" +
              (f", nnz={X.nnz}" if sp.issparse(X) else ""), file=sys.stderr, flush=True)
        for loss in losses:
            for lam in lams:
                for fit_intercept in (False, True):
                    t0 = time.perf_counter()
                    rows.append(run_config(name, X, y, loss, lam, fit_intercept, reps, slow, seed=1000 + k))
                    print(f"  {loss} lam={lam:g} b={fit_intercept}: {time.perf_counter() - t0:.1f}s",
                          file=sys.stderr, flush=True)
    return rows, time.perf_counter() - t_start


def _warm_up():
    """Load the libraries once so that no first timing pays for imports."""
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((50, 5)), np.repeat([-1.0, 1.0], 25)
    for fn in cold_methods(X, y, "logistic", 0.1, True).values():
        fn()
    for fn in cold_methods(_csr(X), y, "squared_hinge", 0.1, False).values():
        fn()


def print_report(rows, seconds, names, reps, slow):
    print("# glru solver benchmark\n")
    print(f"{ENV_AT_START}\n")
    if environment() != ENV_AT_START:
        print(f"WARNING: the repository changed during the run; now {environment()}\n")
    print(f"datasets: {', '.join(names)}; tol (glru relative gap) = {TOL:g}; sklearn tol = {SK_TOL:g}, "
          f"max_iter = {SK_MAX_ITER}; raw LIBLINEAR -e {RAW_EPS:g}; median of {reps} runs "
          f"(1 run if the first took > {slow:g} s); no rows subsampled; total {seconds:.0f} s\n")
    print("Cells: median seconds (ratio to the faster glru solver of the row); '!' = objective more than "
          f"{FLAG:g} (relative) above the best solution of the row; 'nc' = ConvergenceWarning; "
          "'(1x)' = single run. b = unpenalized intercept; log = logistic, sqh = squared hinge.\n")
    print("## Cold start\n")
    print(cold_table(rows) + "\n")
    print("## Objective (relative excess over the best of the row, cold start)\n")
    print(objective_table(rows, "cold", COLD_COLS) + "\n")
    print(f"## Warm start after removing {WARM_FRACTION:.0%} of the rows\n")
    print("Ratios relative to the faster of 'warm newton' / 'warm liblinear'. 'refit() (auto)' = "
          "fit.remove_samples(rows).refit(), which includes building the certificate and the reduced "
          "problem; the glru.fit columns get the reduced arrays prebuilt. 'cold *' = glru.fit from zero "
          "on the reduced data.\n")
    print(warm_table(rows) + "\n")
    solvers = sorted({r["refit_solver"] for r in rows})
    print(f"refit() (auto) ran solver(s): {', '.join(solvers)}\n")
    print("## Objective (relative excess over the best of the row, warm start)\n")
    print(objective_table(rows, "warm", WARM_COLS) + "\n")
    print("## Summary\n")
    print("Geometric means over the configurations of each setting; 'best sklearn' = the faster "
          "scikit-learn solver whose solution is within 1e-6 of the best objective.\n")
    print(summary(rows) + "\n")
    print("## Flags (objective mismatches > 1e-6, convergence warnings, glru gaps above tol)\n")
    print(flags(rows))


# --------------------------------------------------------------------------- scaling check
def scaling(data, reps=3, n_rows=50_000, n_probe=50, lam=1e-4, seed=0):
    """glru.fit on w8a vs the median cost of one row removal + one decision bound."""
    file = data / "w8a.gz"
    if not file.exists():
        print(f"skipping the scaling check: {file} is missing", file=sys.stderr)
        return
    X, y = load_svmlight_file(str(file))
    X, y = _csr(X[:n_rows]), y[:n_rows]
    n = X.shape[0]
    print("## Cost scaling: one row removal + its decision bound vs a full fit\n")
    print(f"{environment()}\n")
    print(f"w8a, first {n_rows:,} rows ({n:,} available, so n = {n:,}), d = {X.shape[1]}, nnz = {X.nnz:,}; "
          f"logistic, λ = {lam:g}, tol = {TOL:g}, solver='auto'. glru.fit: median of {reps}; "
          f"update: median over {n_probe} random rows i of fit.remove_samples([i]) + "
          f"cert.decision_bounds(X[i]).\n")
    print("| b | glru.fit (s) | solver | update median (ms) | mean (ms) | p90 (ms) | first (ms) | max (ms) | "
          "ratio median/fit | ratio mean/fit | sign certified |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    _warm_up()
    rng = np.random.default_rng(seed)
    probes = rng.choice(n, size=n_probe, replace=False)
    for fit_intercept in (False, True):
        t = timed(lambda: glru.fit(X, y, loss="logistic", lam=lam, fit_intercept=fit_intercept, tol=TOL),
                  reps, slow=np.inf)
        fit = t.result
        times, certified = [], 0
        for i in probes:
            row = X[i]
            t0 = time.perf_counter()
            cert = fit.remove_samples([i])
            lo, hi = cert.decision_bounds(row)
            times.append(time.perf_counter() - t0)
            certified += bool(lo[0] > 0 or hi[0] < 0)
        med = statistics.median(times)
        mean = statistics.mean(times)
        print(f"| {'yes' if fit_intercept else 'no'} | {t.seconds:.3f} | {fit.solver_} | {1e3 * med:.3f} | "
              f"{1e3 * mean:.3f} | {1e3 * np.percentile(times, 90):.3f} | {1e3 * times[0]:.3f} | "
              f"{1e3 * max(times):.3f} | {med / t.seconds:.2%} | {mean / t.seconds:.2%} | {certified}/{n_probe} |")
    print("\nThe first update pays once for lazily cached column norms (O(nnz)); it is in the mean, p90 "
          "and max, and (being one of 50) hardly in the median. 'sign certified' = rows whose bounds "
          "exclude 0, i.e. whose leave-one-out prediction is decided without refitting. Target: ratio ≤ 1%.")


# --------------------------------------------------------------------------- CLI
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="mushrooms only")
    parser.add_argument("--datasets", help=f"comma-separated subset of {', '.join(DATASETS)}")
    parser.add_argument("--scaling", action="store_true", help="run only the cost-scaling check")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--slow", type=float, default=20.0, help="run once only if the first run exceeds this (s)")
    args = parser.parse_args(argv)
    if args.scaling:
        scaling(args.data_dir, reps=args.reps)
        return
    if args.datasets:
        names = [s.strip() for s in args.datasets.split(",") if s.strip()]
        unknown = [s for s in names if s not in DATASETS]
        if unknown:
            parser.error(f"unknown dataset(s) {unknown}; choose from {list(DATASETS)}")
    else:
        names = list(QUICK if args.quick else FULL)
    rows, seconds = benchmark(names, args.data_dir, args.reps, args.slow)
    if not rows:
        print("no dataset found; nothing to report", file=sys.stderr)
        return
    print_report(rows, seconds, [r for r in names if any(x["dataset"] == r for x in rows)], args.reps, args.slow)


if __name__ == "__main__":
    main()
