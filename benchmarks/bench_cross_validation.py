"""Exact cross-validation: glru against scikit-learn's cross_val_score and LIBLINEAR's ``-v``.

Reproduce (from the repository root, with ../shared/data present):

    PYTHONPATH=. python benchmarks/bench_cross_validation.py            # everything (~10 min)
    PYTHONPATH=. python benchmarks/bench_cross_validation.py --quick     # arcene λ = 2^0 only, a9a.t
    PYTHONPATH=. python benchmarks/bench_cross_validation.py --quick --kfold-only   # a9a.t only
    PYTHONPATH=. python benchmarks/bench_cross_validation.py --kfold-only           # a9a.t, its neighbours, others
    PYTHONPATH=. python benchmarks/bench_cross_validation.py --shapes               # synthetic shapes only (~5 min)
    PYTHONPATH=. python benchmarks/bench_cross_validation.py --pipelines            # StandardScaler Pipelines only
    PYTHONPATH=. python benchmarks/bench_cross_validation.py --pipeline-shapes      # StandardScaler + LR on the shapes
    PYTHONPATH=. python benchmarks/bench_cross_validation.py --five-fold            # StandardScaler + LR, 5-fold, more shapes
    PYTHONPATH=. python benchmarks/bench_cross_validation.py --typical              # scikit-learn's own data, defaults
    PYTHONPATH=. python benchmarks/bench_cross_validation.py --svc-rows             # LinearSVC 5-fold, sparse
    PYTHONPATH=. python benchmarks/bench_cross_validation.py --typical --only digits   # its rows on digits
    PYTHONPATH=. python benchmarks/bench_cross_validation.py --random 3303 40 # 40 drawn configurations

K-fold rows report the fastest of ``--repeats`` interleaved runs of each computation (both sides alike,
as ``timeit`` reports: this host runs the same code at two speeds about 40 % apart, 0.70 or 1.04 s
for one row in one session, and a median of three lands on either).

glru is ``sklearn_ext.cross_val_score``, the drop-in, against ``sklearn.model_selection.cross_val_score``
with the same estimator, splits and defaults. Every configuration is run in this one process, one
after the other, and reported as ratios of wall-clock times measured here. Peak memory is Python-tracked allocations (tracemalloc,
which sees NumPy's buffers) of the same call. "agree" counts folds whose score equals
scikit-learn's; scikit-learn stops at its default tol, so a disagreement means one of its fits
was not at the optimum (glru's scores are those of exact refits, see tests/). For K-fold rows
where they disagree, the last two columns time scikit-learn at the largest of tol = 1e-6, 1e-8,
1e-10, 1e-12 at which every fold's score equals glru's: what a user who wants the exact
answers from scikit-learn has to run.
"""

import argparse
import platform
import tracemalloc

import numpy as np
import scipy.sparse as sp
import sklearn
from liblinear import liblinearutil
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_svmlight_file, load_wine, \
    make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import KFold, LeaveOneOut, StratifiedKFold
from sklearn.model_selection import cross_val_score as sklearn_cross_val_score
from sklearn.pipeline import make_pipeline, Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

import _common
from _common import DATA
from glru.datasets import load_arcene
from sklearn_ext import GLRUCrossValidator, cross_val_score


def timed(function, memory=False):
    """(result, seconds, peak bytes traced or None)."""
    if memory:
        tracemalloc.start()
    result, elapsed = _common.timed(function)
    peak = None
    if memory:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return result, elapsed, peak


def liblinear_cv(X, y, estimator, folds):
    """LIBLINEAR's own -v cross-validation (its accuracy) of the same model: L2 logistic (-s 0,
    with -B 1 -R an unpenalized bias like LogisticRegression's), or the L2-regularized squared
    hinge (-s 2, with -B 1 a penalized bias like LinearSVC's intercept_scaling = 1)."""
    svc = isinstance(estimator, LinearSVC)
    options = f"-s {2 if svc else 0} -c {estimator.C} -v {folds} -q"
    if estimator.fit_intercept:
        options += " -B 1" if svc else " -B 1 -R"
    return liblinearutil.train(y, X, options)


def run(name, X, y, estimator, cv, liblinear_folds, memory, repeats=1):
    """One table row: glru's drop-in ``cross_val_score`` against scikit-learn's. With ``repeats``
    > 1 the three computations are run that many times in turn (glru, scikit-learn, LIBLINEAR,
    glru, ...) and each time is the fastest of its runs: sub-second timings on this shared machine
    move by 20–60 % from one run to the next, the slower ones from the host, not the code. The counts (certified, retrained) are those of a
    ``GLRUCrossValidator`` fit of the same splits, untimed (it also fits ``estimator_`` on all
    rows, as GridSearchCV's refit does). A Pipeline (steps that learn from each fold's training
    rows) has no LIBLINEAR counterpart, nor (``liblinear_folds`` None) a multinomial model. Rows
    whose task does not contain ``--only`` are skipped."""
    if ONLY is not None and ONLY not in name:
        return
    final = estimator[-1] if isinstance(estimator, Pipeline) else estimator
    runs = [[], [], []]
    for _ in range(repeats):
        scores, t, _ = timed(lambda: cross_val_score(estimator, X, y, cv=cv, n_jobs=JOBS))
        runs[0].append(t)
        reference, t, _ = timed(lambda: sklearn_cross_val_score(estimator, X, y, cv=cv, n_jobs=JOBS))
        runs[1].append(t)
        if final is estimator and liblinear_folds is not None:
            runs[2].append(timed(lambda: liblinear_cv(X, y, estimator, liblinear_folds))[1])
    t_glru, t_sk = (min(r) for r in runs[:2])
    t_ll = min(runs[2]) if runs[2] else np.nan
    if memory:  # separate runs: tracing allocations slows both down
        m_glru = timed(lambda: cross_val_score(estimator, X, y, cv=cv, n_jobs=JOBS), memory=True)[2]
        m_sk = timed(lambda: sklearn_cross_val_score(estimator, X, y, cv=cv, n_jobs=JOBS), memory=True)[2]
    validator = GLRUCrossValidator(estimator, cv=cv).fit(X, y)
    assert np.array_equal(validator.scores_, scores)
    agree = int(np.sum(validator.scores_ == reference))
    row = (f"| {name} | {final.fit_intercept} | {validator.scores_.mean():.4f} | {agree}/{len(reference)} | "
           f"{validator.n_certified_} | {validator.n_retrained_} | {t_glru:.2f} | {t_sk:.2f} | "
           + (f"{t_ll:.2f} | **{t_sk / t_glru:.1f}×** | **{t_ll / t_glru:.1f}×** |" if runs[2]
              else f"— | **{t_sk / t_glru:.1f}×** | — |"))
    row += f" {m_glru / 2**20:.0f} / {m_sk / 2**20:.0f} MiB |" if memory else " |"
    if agree < len(reference) and not isinstance(cv, LeaveOneOut):
        row += exact_sklearn(estimator, X, y, cv, validator.scores_, t_glru, repeats)
    print(row, flush=True)


def exact_sklearn(estimator, X, y, cv, exact_scores, t_glru, repeats):
    """' tol | s and ratio |' of scikit-learn at the largest tol whose scores are all exact; the
    search stops after a run of more than ``EXACT_SEARCH_SECONDS`` (tighter ones take longer)."""
    prefix = f"{estimator.steps[-1][0]}__" if isinstance(estimator, Pipeline) else ""
    for tol in (1e-6, 1e-8, 1e-10, 1e-12):
        tight = clone(estimator).set_params(**{prefix + "tol": tol, prefix + "max_iter": 100_000})
        scores, t, _ = timed(lambda: sklearn_cross_val_score(tight, X, y, cv=cv, n_jobs=JOBS))
        if np.array_equal(scores, exact_scores):
            times = [t] + [timed(lambda: sklearn_cross_val_score(tight, X, y, cv=cv, n_jobs=JOBS))[1]
                           for _ in range(repeats - 1)]
            t = min(times)
            return f" {tol:g} | {t:.2f} s, **{t / t_glru:.1f}×** |"
        if t > EXACT_SEARCH_SECONDS:
            return f" none ≥ {tol:g} (its run: {t:.0f} s) | |"
    return " none ≥ 1e-12 | |"


EXACT_SEARCH_SECONDS = 60


def synthetic():
    """(name, X, y) of seeded synthetic shapes around madelon.t (n ≈ d) and a9a.t (n ≫ d): labels
    from a noisy linear model, dense n = 4d, sparse (5 % of values stored) n = 2d, and sparse
    (2 %) with fewer rows than features, n = 0.4d."""
    rng = np.random.default_rng(0)
    for name, n, d, density in (("synthetic dense 2000 × 500", 2000, 500, 1.0),
                                ("synthetic sparse 4000 × 2000 (5 %)", 4000, 2000, 0.05),
                                ("synthetic sparse 2000 × 5000 (2 %)", 2000, 5000, 0.02)):
        X = rng.standard_normal((n, d))
        if density < 1:
            X[rng.random((n, d)) > density] = 0.0
            X = sp.csr_matrix(X)
        y = np.where(X @ (0.3 * rng.standard_normal(d)) + rng.standard_normal(n) > 0, 1, -1)
        yield name, X, y


def shapes():
    """(name, X, y) of seeded sparse shapes that no shared data set has: Gaussian values, or binary
    features with Zipf-like frequencies (text-like), more rows than features and fewer; labels
    from a noisy linear model."""
    rng = np.random.default_rng(1)
    for kind, n, d, density in (("Gaussian", 10000, 1000, 0.02), ("binary", 5000, 3000, 0.01),
                                ("binary", 20000, 500, 0.05), ("binary", 3000, 20000, 0.002),
                                ("Gaussian", 1000, 20000, 0.005)):
        yield seeded_shape(rng, kind, n, d, density, offset=0.3, block=1000)


def svc_shapes():
    """(name, X, y) of seeded sparse shapes between one and four rows a feature, where LinearSVC's
    folds go from dual coordinate descent to LIBLINEAR's primal (glru.cross_validation's
    DUAL_MAX_ROWS_PER_FEATURE and primal_pays_off): Gaussian values and Zipf-like binary features
    as in shapes(), and dense Gaussian rows."""
    rng = np.random.default_rng(7)
    for kind, n, d, density in (("Gaussian", 2000, 2000, 0.02), ("Gaussian", 2500, 2000, 0.02),
                                ("Gaussian", 3000, 2000, 0.02), ("Gaussian", 4000, 2000, 0.02),
                                ("Gaussian", 6000, 2000, 0.02), ("Gaussian", 8000, 2000, 0.01),
                                ("binary", 3000, 3000, 0.01), ("binary", 4000, 3000, 0.01),
                                ("binary", 6000, 2000, 0.01), ("binary", 8000, 2000, 0.02),
                                ("dense", 600, 500, 1.0), ("dense", 2000, 500, 1.0)):
        yield seeded_shape(rng, kind, n, d, density, offset=0.3 if kind == "binary" else 0.0, block=d)


def svc_row_shapes():
    """(name, X, y) of seeded sparse Gaussian shapes with 8 to 50 rows a feature (5 % dense), where
    LinearSVC's folds take Newton centres or Newton–CG steps together, or, near a hard margin,
    LIBLINEAR's primal from the full fit (glru.cross_validation.primal_pays_off_near_hard_margin)."""
    rng = np.random.default_rng(11)
    for n, d in ((1200, 150), (4000, 600), (6000, 400), (8000, 1000), (10000, 200), (20000, 500)):
        yield seeded_shape(rng, "Gaussian", n, d, 0.05, offset=0.0, block=d)


def random_configurations(seed, count):
    """(name, X, y, estimator, K) of ``count`` configurations drawn from ``seed``: n from 200 to
    10000 and d from 10 to 2000 (log-uniform); sparse Gaussian values (0.5–20 % stored, labels from
    a noisy linear model) or dense ``make_classification``; LinearSVC or LogisticRegression with C
    from 0.01 to 100 (log-uniform), after a StandardScaler in three draws of ten; 5- or 10-fold.
    The neighbours of the fixed sets above, for claims that must hold beyond them."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        n = int(np.exp(rng.uniform(np.log(200), np.log(10000))))
        d = int(np.exp(rng.uniform(np.log(10), np.log(2000))))
        if rng.random() < 0.5:
            density = float(np.exp(rng.uniform(np.log(0.005), np.log(0.2))))
            X = sp.random(n, d, density=density, random_state=rng, data_rvs=rng.standard_normal, format="csr")
            y = np.where(X @ rng.standard_normal(d) + 0.5 * np.sqrt(density * d) * rng.standard_normal(n) > 0, 1, 0)
            name = f"sparse {n} × {d} ({100 * density:.1f} %)"
        else:
            X, y = make_classification(n, d, n_informative=max(2, d // 5), random_state=int(rng.integers(1 << 30)))
            name = f"dense {n} × {d}"
        C = float(np.exp(rng.uniform(np.log(0.01), np.log(100))))
        model = LinearSVC(C=C) if rng.random() < 0.5 else LogisticRegression(C=C)
        estimator = make_pipeline(StandardScaler(with_mean=not sp.issparse(X)), model) if rng.random() < 0.3 \
            else model
        yield name, X, y, estimator, int(rng.choice([5, 10]))


def drawn_folds(seeds, count, pipelines=False):
    """(label "seed:index", name, X, y, estimator, StratifiedKFold) of the configurations that
    :func:`random_configurations` draws from each of ``seeds`` (``count`` each) with every class in
    every fold, and without a Pipeline unless ``pipelines``: the engine's own, for scans of one of its
    decisions (benchmarks/scan_centres.py, scan_preconditioner.py); all, for scan_exactness.py."""
    for seed in seeds:
        for k, (name, X, y, estimator, folds) in enumerate(random_configurations(seed, count)):
            if (pipelines or not isinstance(estimator, Pipeline)) and np.bincount(y).min() >= folds:
                yield f"{seed}:{k}", name, X, y, estimator, StratifiedKFold(folds)


def scan_arguments(description, seeds, repeats):
    """The command line of those scans: ``--seeds``, ``--count``, ``--repeats``, ``--max-seconds``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--seeds", type=int, nargs="+", default=seeds)
    parser.add_argument("--count", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=repeats)
    parser.add_argument("--max-seconds", type=float, default=3.0, help="skip configurations slower than this")
    return parser.parse_args()


def seeded_shape(rng, kind, n, d, density, offset, block):
    """(name, X, y) drawn from ``rng``: X sparse with Gaussian values ("Gaussian"), binary with
    Zipf-like column frequencies ("binary", drawn ``block`` columns at a time: n × d floats at once
    would not fit for shapes()' 3000 × 20000), or dense Gaussian ("dense"); y = sign(Xw + 0.5ε +
    ``offset``). The block sizes keep each set's draws as first published."""
    if kind == "Gaussian":
        X = sp.random(n, d, density=density, random_state=rng, data_rvs=rng.standard_normal, format="csr")
    elif kind == "binary":
        frequency = np.minimum(0.5, 3 * density * d / np.arange(1, d + 1) / np.sum(1.0 / np.arange(1, d + 1)))
        X = sp.hstack([sp.csr_matrix((rng.random((n, part.size)) < part).astype(float))
                       for part in np.array_split(frequency, -(-d // block))], format="csr")
    else:
        X = rng.standard_normal((n, d))
    w = rng.standard_normal(d) * 3 / np.sqrt(max(1.0, density * d))
    y = np.where(X @ w + 0.5 * rng.standard_normal(n) + offset > 0, 1, -1)
    return f"{kind} {n} × {d}" + (f" ({100 * density:g} %)" if density < 1 else ""), X, y


def five_fold_sets():
    """(name, X, y, C) of shapes whose five folds hold many rows each: binary 20000 × 500 (5 %) of
    shapes() at three C, dense make_classification 20000 × 600, and sparse 30000 × 800 (1 %) of
    exponential values with labels from a noisy linear model (seeded)."""
    X, y = next((X, y) for name, X, y in shapes() if name.startswith("binary 20000"))
    for C in (0.01, 1.0, 100.0):
        yield "binary 20000 × 500 (5 %)", X, y, C
    X, y = make_classification(n_samples=20000, n_features=600, n_informative=300, random_state=1)
    yield "dense 20000 × 600", X, y, 1.0
    rng = np.random.default_rng(5)
    X = sp.random(30000, 800, density=0.01, format="csr", random_state=rng, data_rvs=lambda k: rng.exponential(size=k))
    yield "sparse exponential 30000 × 800 (1 %)", X, (X @ rng.standard_normal(800) + 0.3 * rng.standard_normal(30000)
                                                      > 0).astype(int), 1.0


def pipeline_sets():
    """(name, X, y, cv) for the Pipeline rows: shared data 10-fold (sparse ones scaled without
    centring, as StandardScaler requires), two small multiclass sets leave-one-out, and
    scikit-learn's own breast_cancer (binary) and digits (ten classes, multinomial), 5-fold as
    its examples run them."""
    for data in ("madelon.t.gz", "a9a.t.gz", "mushrooms.gz", "w8a.gz"):
        X, y = load_svmlight_file(str(DATA / data))
        yield f"{data[:-3]} 10-fold", X.toarray() if data.startswith("madelon") else X.tocsr(), y, StratifiedKFold(10)
    for loader in (load_iris, load_wine):
        yield f"{loader.__name__[5:]} LOO", *loader(return_X_y=True), LeaveOneOut()
    for loader in (load_breast_cancer, load_digits):
        yield f"{loader.__name__[5:]} 5-fold", *loader(return_X_y=True), StratifiedKFold(5)


def typical_sets():
    """(name, X, y) of what scikit-learn's users cross-validate first: make_classification at
    four shapes (seeded), breast_cancer (binary) and digits (ten classes)."""
    for n, d in ((1000, 20), (5000, 50), (20000, 20), (2000, 200)):
        X, y = make_classification(n_samples=n, n_features=d, n_informative=d // 2, random_state=0)
        yield f"make_classification {n} × {d}", X, y
    for loader in (load_breast_cancer, load_digits):
        yield loader.__name__[5:], *loader(return_X_y=True)


ONLY = None  # main's --only
JOBS = None  # main's --jobs: n_jobs of both cross_val_score calls (LIBLINEAR's -v runs on one core)


def main(argv=None):
    global ONLY, JOBS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--kfold-only", action="store_true", help="only the K-fold rows (a9a.t; the others unless --quick)")
    parser.add_argument("--repeats", type=int, default=5, help="runs of each K-fold computation (the fastest reported)")
    parser.add_argument("--shapes", action="store_true", help="only the synthetic shapes of shapes()")
    parser.add_argument("--svc-shapes", action="store_true",
                        help="only LinearSVC, 10-fold, on the shapes of svc_shapes() (one to four rows a feature)")
    parser.add_argument("--pipelines", action="store_true",
                        help="only Pipelines whose StandardScaler learns from each fold's training rows")
    parser.add_argument("--pipeline-shapes", action="store_true",
                        help="only StandardScaler + LogisticRegression on the synthetic shapes and those of --shapes "
                             "(sparse ones scaled without centring), 10-fold")
    parser.add_argument("--five-fold", action="store_true",
                        help="only StandardScaler + LogisticRegression, 5-fold (shuffled), on shapes of many rows "
                             "per fold: binary 20000 × 500 at C = 0.01, 1, 100, dense 20000 × 600, sparse 30000 × 800")
    parser.add_argument("--typical", action="store_true",
                        help="only scikit-learn's own data at the defaults (LogisticRegression, with a StandardScaler, "
                             "and LinearSVC after one), 5- and 10-fold")
    parser.add_argument("--svc-rows", action="store_true",
                        help="only LinearSVC, 5-fold, at C = 0.1, 3 and 75, on the shapes of svc_row_shapes() (8 to 50 "
                             "rows a feature)")
    parser.add_argument("--svc-rows-scaled", action="store_true",
                        help="as --svc-rows, LinearSVC after a StandardScaler(with_mean=False) fitted on each fold")
    parser.add_argument("--random", nargs=2, type=int, metavar=("SEED", "COUNT"),
                        help="only COUNT configurations drawn from SEED by random_configurations()")
    parser.add_argument("--only", metavar="TEXT", help="only the rows whose task contains TEXT")
    parser.add_argument("--jobs", type=int, metavar="N", help="n_jobs of glru's and scikit-learn's cross_val_score")
    args = parser.parse_args(argv)
    ONLY, JOBS = args.only, args.jobs
    print(f"python {platform.python_version()}, numpy {np.__version__}, scikit-learn {sklearn.__version__}, "
          f"{platform.processor() or platform.machine()}")
    print("| task | intercept | glru score | agree with sklearn | certified | retrained | glru s | sklearn s | "
          "LIBLINEAR -v s | vs sklearn | vs LIBLINEAR | peak memory glru / sklearn | sklearn tol for exact scores | "
          "its s, vs it |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    if args.typical:
        for name, X, y in typical_sets():
            for estimator in (LogisticRegression(), make_pipeline(StandardScaler(), LogisticRegression()),
                              make_pipeline(StandardScaler(), LinearSVC())):
                label = " + ".join(type(step).__name__ for _, step in estimator.steps) \
                    if isinstance(estimator, Pipeline) else type(estimator).__name__
                for folds in (5, 10):  # (LIBLINEAR's -v: binary targets only, one-vs-rest is another model)
                    run(f"{name} {folds}-fold, {label}", X, y, estimator, StratifiedKFold(folds),
                        folds if np.unique(y).size == 2 else None, memory=False, repeats=args.repeats)
        return
    if args.random:
        for k, (name, X, y, estimator, folds) in enumerate(random_configurations(*args.random)):
            if np.bincount(y).min() < folds:  # (a class too rare for StratifiedKFold)
                continue
            final = estimator[-1] if isinstance(estimator, Pipeline) else estimator
            label = ("StandardScaler + " if final is not estimator else "") + f"{type(final).__name__}(C={final.C:.3g})"
            run(f"{k}: {name} {folds}-fold, {label}", X, y, estimator, StratifiedKFold(folds), None, memory=False,
                repeats=args.repeats)
        return
    if args.svc_rows or args.svc_rows_scaled:
        for name, X, y in svc_row_shapes():
            for C in (0.1, 3.0, 75.0):
                if args.svc_rows_scaled:  # (LIBLINEAR's -v would not scale each fold's rows)
                    run(f"{name} 5-fold, StandardScaler + LinearSVC(C={C:g})", X, y,
                        make_pipeline(StandardScaler(with_mean=False), LinearSVC(C=C)), StratifiedKFold(5), None,
                        memory=False, repeats=args.repeats)
                else:
                    run(f"{name} 5-fold, LinearSVC(C={C:g})", X, y, LinearSVC(C=C), StratifiedKFold(5), 5,
                        memory=False, repeats=args.repeats)
        return
    if args.svc_shapes:
        for name, X, y in svc_shapes():
            run(f"{name} 10-fold, LinearSVC", X, y, LinearSVC(C=1.0), StratifiedKFold(10), 10, memory=False,
                repeats=args.repeats)
        return
    if args.pipelines:
        for name, X, y, cv in pipeline_sets():
            scaler = StandardScaler(with_mean=not sp.issparse(X))
            for final in (LogisticRegression(C=1.0), LinearSVC(C=1.0)):
                run(f"{name}, StandardScaler + {type(final).__name__}", X, y, make_pipeline(scaler, final), cv, None,
                    memory=False, repeats=args.repeats)
        return
    if args.pipeline_shapes:
        for name, X, y in [*synthetic(), *shapes()]:
            estimator = make_pipeline(StandardScaler(with_mean=not sp.issparse(X)), LogisticRegression(C=1.0))
            run(f"{name} 10-fold, StandardScaler + LogisticRegression", X, y, estimator, StratifiedKFold(10), None,
                memory=False, repeats=args.repeats)
        return
    if args.five_fold:
        for name, X, y, C in five_fold_sets():
            estimator = make_pipeline(StandardScaler(with_mean=not sp.issparse(X)), LogisticRegression(C=C))
            run(f"{name} 5-fold, C = {C:g}, StandardScaler + LogisticRegression", X, y, estimator,
                StratifiedKFold(5, shuffle=True, random_state=0), None, memory=False, repeats=args.repeats)
        return
    if args.shapes:
        for name, X, y in shapes():
            for estimator in (LogisticRegression(C=1.0), LogisticRegression(C=1.0, fit_intercept=False),
                              LinearSVC(C=1.0)):
                model = "LinearSVC" if isinstance(estimator, LinearSVC) else "LogisticRegression"
                run(f"{name} 10-fold, {model}", X, y, estimator, StratifiedKFold(10), 10, memory=False,
                    repeats=args.repeats)
        return
    X, y = load_arcene(DATA)
    n = X.shape[0]
    exponents = () if args.kfold_only else (0,) if args.quick else (0, -5, -10)
    for fit_intercept in (False, True):
        for e in exponents:
            estimator = LogisticRegression(C=1.0 / (n * 2.0 ** e), fit_intercept=fit_intercept)
            run(f"arcene LOO, λ = 2^{e}", X, y, estimator, LeaveOneOut(), n, memory=e == 0)
    X, y = load_svmlight_file(str(DATA / "a9a.t.gz"))
    X = X.tocsr()
    for fit_intercept in (True, False):
        estimator = LogisticRegression(C=1.0, fit_intercept=fit_intercept)
        run("a9a.t 10-fold", X, y, estimator, StratifiedKFold(10), 10, memory=True, repeats=args.repeats)
    if not args.quick:
        X, y = load_svmlight_file(str(DATA / "mushrooms.gz"))
        X = X.tocsr()
        run("mushrooms 10-fold, C = 0.1", X, y, LogisticRegression(C=0.1), KFold(10, shuffle=True, random_state=0),
            10, memory=False, repeats=args.repeats)
        # the neighbours of a9a.t: the same code on other shapes and separabilities
        for data in ("mushrooms.gz", "a8a.gz", "w8a.gz"):
            X, y = load_svmlight_file(str(DATA / data))
            X = X.tocsr()
            for fit_intercept in (True, False):
                run(f"{data[:-3]} 10-fold", X, y, LogisticRegression(C=1.0, fit_intercept=fit_intercept),
                    StratifiedKFold(10), 10, memory=True, repeats=args.repeats)
        # other shapes and models: n ≈ d (madelon.t, dense, standardized), and LinearSVC
        X, y = load_svmlight_file(str(DATA / "madelon.t.gz"))
        X = StandardScaler().fit_transform(X.toarray())
        for fit_intercept in (True, False):
            run("madelon.t 10-fold", X, y, LogisticRegression(C=1.0, fit_intercept=fit_intercept),
                StratifiedKFold(10), 10, memory=fit_intercept, repeats=args.repeats)
        synthetic_sets = list(synthetic())
        for name, X, y in synthetic_sets:
            run(f"{name} 10-fold", X, y, LogisticRegression(C=1.0), StratifiedKFold(10), 10, memory=True,
                repeats=args.repeats)
        for data in ("a9a.t.gz", "mushrooms.gz", "w8a.gz"):
            X, y = load_svmlight_file(str(DATA / data))
            run(f"{data[:-3]} 10-fold, LinearSVC", X.tocsr(), y, LinearSVC(C=1.0), StratifiedKFold(10), 10,
                memory=False, repeats=args.repeats)
        for name, X, y in synthetic_sets:
            run(f"{name} 10-fold, LinearSVC", X, y, LinearSVC(C=1.0), StratifiedKFold(10), 10, memory=False,
                repeats=args.repeats)


if __name__ == "__main__":
    main()
