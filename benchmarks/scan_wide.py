"""glru's ``cross_val_score`` on draws wider than ``scan_exactness.py``'s, against exact refits.

Each draw: 20–800 rows, 2–400 columns, Gaussian, ``make_classification`` (imbalanced), binary,
small integers or columns scaled over six decades, a constant column or duplicated rows now and
then, dense or CSR; LogisticRegression (L2 or elastic-net) or LinearSVC (intercept_scaling 0.5–10),
with or without intercept, alone or after a StandardScaler, MaxAbsScaler, Normalizer or a
FunctionTransformer; leave-one-out, ShuffleSplit, RepeatedStratifiedKFold, StratifiedKFold or
shuffled KFold; a label or value scorer; string labels. With ``--multiclass``, a third class in
three draws of ten, and parameters glru hands back to scikit-learn (class_weight, the hinge loss,
other solvers, a loose tol) in one of four.

The scores must equal those of exact refits (``tests._exact``; a fold whose scorer fails, as
scikit-learn's error_score, is NaN), to 1e-7 relative for roc_auc and log-loss; where glru hands the
computation to scikit-learn (its FallbackWarning), they must equal scikit-learn's own (except where
that is random: saga, or the dual's row order, without a random_state). A value score that differs
where the exact refit's held-out values hold rounding-level ties is printed as TIED, not counted:
the ranking of values equal at the optimum is rounding's; one that differs where an exact refit fell
short of its optimum (its ConvergenceWarning) as NOREF. Prints ERROR, MISMATCH, TIED, NOREF and SLOW
(more than 3 s); exits 1 on any error or mismatch. Not a test: minutes a seed. Found the two
crashes and the solver cycle of the forty-seventh session (docs/benchmarks.md)::

    PYTHONPATH=. python benchmarks/scan_wide.py --seeds 1 2 --count 300
    PYTHONPATH=. python benchmarks/scan_wide.py --seeds 7 --count 300 --multiclass
    PYTHONPATH=. python benchmarks/scan_wide.py --seeds 15 --count 150 --jobs 2
"""
import argparse
import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import check_scoring
from sklearn.model_selection import KFold, LeaveOneOut, RepeatedStratifiedKFold, ShuffleSplit, StratifiedKFold
from sklearn.model_selection import cross_val_score as sklearn_cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, MaxAbsScaler, Normalizer, StandardScaler
from sklearn.svm import LinearSVC

from sklearn_ext import FallbackWarning, cross_val_score
from tests._exact import TiesToFirstClass, exact_estimator

# what a scorer raises on a fold whose held-out labels it cannot score (scikit-learn then gives error_score)
UNSCORABLE = ("only one label", "not a valid label", "Only one class", "different number of classes",
              "Number of classes in y_true not equal")


def draw_data(rng, multiclass):
    n, d = int(np.exp(rng.uniform(np.log(20), np.log(800)))), int(np.exp(rng.uniform(np.log(2), np.log(400))))
    kind = str(rng.choice(["Gaussian", "make_classification", "binary", "integers", "scaled"]))
    if kind == "make_classification":
        d = max(d, 3)
        X, y = make_classification(n, d, n_informative=2, n_redundant=1, weights=[float(rng.uniform(0.5, 0.9))],
                                   flip_y=0.02, random_state=int(rng.integers(1 << 30)))
    else:
        X = (rng.random((n, d)) < rng.uniform(0.02, 0.5)).astype(float) if kind == "binary" else \
            rng.integers(0, 5, (n, d)).astype(float) if kind == "integers" else rng.standard_normal((n, d))
        if kind == "scaled":
            X *= 10.0 ** rng.uniform(-3, 3, d)
        margins = X @ rng.standard_normal(d)
        margins = (margins - margins.mean()) / (margins.std() + 1e-12)
        y = (margins + rng.uniform(0, 1.5) * rng.standard_normal(n) + rng.uniform(-1, 1) > 0).astype(int)
    if rng.random() < 0.2:
        X[:, rng.integers(X.shape[1])] = rng.choice([0.0, 1.0, 3.7])
    if rng.random() < 0.2:
        duplicated = rng.integers(n, size=n // 4)
        X, y = np.vstack([X, X[duplicated]]), np.concatenate([y, y[duplicated]])
    if multiclass and rng.random() < 0.3:  # a third class along another direction
        other = X @ rng.standard_normal(X.shape[1])
        y = np.where(other > np.quantile(other, rng.uniform(0.6, 0.85)), 2, y)
    return kind, X, y


def draw_estimator(rng, sparse, multiclass):
    C = float(np.exp(rng.uniform(np.log(1e-3), np.log(1e3))))
    fit_intercept, model = bool(rng.random() < 0.7), rng.random()
    if model < 0.35:
        scaling = float(rng.choice([1.0, 1.0, 0.5, 10.0]))
        estimator = LinearSVC(C=C, fit_intercept=fit_intercept, intercept_scaling=scaling)
    elif model < 0.8:
        estimator = LogisticRegression(C=C, fit_intercept=fit_intercept)
    else:
        estimator = LogisticRegression(C=C, fit_intercept=fit_intercept, l1_ratio=float(rng.choice([0.0, 0.3, 0.9])),
                                       solver="saga")
    unsupported = rng.random() if multiclass else 1.0
    if unsupported < 0.08:
        estimator.set_params(class_weight="balanced")
    elif unsupported < 0.12 and isinstance(estimator, LinearSVC):
        estimator.set_params(loss="hinge", dual=True)
    elif unsupported < 0.16 and isinstance(estimator, LinearSVC):
        estimator.set_params(dual=bool(rng.random() < 0.5))
    elif unsupported < 0.22 and isinstance(estimator, LogisticRegression) and estimator.l1_ratio in (None, 0.0):
        estimator.set_params(solver=str(rng.choice(["liblinear", "newton-cg", "newton-cholesky", "sag"])))
    elif unsupported < 0.25:
        estimator.set_params(tol=1e-2)
    step = rng.random()
    if step < 0.2:
        return make_pipeline(StandardScaler(with_mean=not sparse), estimator)
    if step < 0.37:
        first = MaxAbsScaler() if step < 0.27 else Normalizer() if step < 0.33 else \
            FunctionTransformer(None if sparse else np.abs)
        return make_pipeline(first, estimator)
    return estimator


def draw_split(rng, k, n):
    c = rng.random()
    return LeaveOneOut() if c < 0.15 and n <= 150 else ShuffleSplit(4, test_size=0.25, random_state=k) if c < 0.3 \
        else RepeatedStratifiedKFold(n_splits=3, n_repeats=2, random_state=k) if c < 0.4 \
        else StratifiedKFold(int(rng.choice([3, 5, 10]))) if c < 0.7 else KFold(5, shuffle=True, random_state=k)


def draw_scoring(rng, estimator, cv, classes):
    scoring = [None, "f1", "roc_auc", "neg_log_loss", "balanced_accuracy", "matthews_corrcoef"][int(rng.integers(6))]
    svc = "LinearSVC" in repr(estimator)
    if scoring == "neg_log_loss" and svc:
        scoring = "roc_auc"
    if isinstance(cv, LeaveOneOut) and scoring != "neg_log_loss":  # (one held-out row a fold)
        return None
    if classes > 2 and scoring in ("f1", "roc_auc"):
        return None if scoring == "roc_auc" and svc else scoring + ("_macro" if scoring == "f1" else "_ovr")
    return scoring


def exact_scores(estimator, X, y, cv, scoring):
    """(each fold's score of an exact refit, NaN where the scorer cannot score the fold; whether some
    fold's held-out decision values hold two apart by rounding only, ``rounding_ties``; whether some
    refit fell short of its optimum, with a ConvergenceWarning: then it is no reference)."""
    scorer, scores, tied, short = check_scoring(estimator, scoring=scoring), [], False, False
    for train, test in cv.split(X, y):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            model = exact_estimator(estimator, X[train], y[train])
        short = short or any(issubclass(w.category, ConvergenceWarning) for w in caught)
        tied = tied or rounding_ties(model.decision_function(X[test]))
        try:
            scores.append(scorer(TiesToFirstClass(model), X[test], y[test]))
        except ValueError as error:
            if not any(text in str(error) for text in UNSCORABLE):
                raise
            scores.append(np.nan)
    return np.array(scores), tied, short


def rounding_ties(values):
    """Whether two distinct ``values`` lie within 1e-12 of each other (relative): rows whose values
    are equal at the optimum, computed with different rounding (an L1 penalty's zeros on binary
    columns leave a few distinct sums, and BLAS rounds rows alike in content differently). Their
    order, and a ranking score of them (roc_auc), is then decided by rounding, not by the model."""
    distinct = np.unique(np.ravel(values))
    return distinct.size > 1 and bool(np.any(np.diff(distinct) <= 1e-12 * np.maximum(1.0, np.abs(distinct[1:]))))


def random_unless_seeded(estimator):
    """Whether scikit-learn's own fit of ``estimator`` is random: saga, or the dual's row order."""
    final = estimator[-1] if hasattr(estimator, "steps") else estimator
    return getattr(final, "solver", None) in ("saga", "sag") or isinstance(final, LinearSVC) and final.dual is not False


def raises_alike(error, estimator, X, y, cv, scoring):
    """Whether scikit-learn's cross_val_score raises an error of ``error``'s type on the same call."""
    try:
        sklearn_cross_val_score(estimator, X, y, cv=cv, scoring=scoring)
    except Exception as its:
        return type(its) is type(error)
    return False


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", required=True)
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--multiclass", action="store_true")
    parser.add_argument("--jobs", type=int, help="glru's n_jobs (its folds on worker processes)")
    parser.add_argument("--draws", type=int, nargs="+", help="only these draws of each seed (to run one again)")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    bad = 0
    for seed in args.seeds:
        rng = np.random.default_rng(seed)
        for k in range(args.count):
            kind, X, y = draw_data(rng, args.multiclass)
            if np.bincount(y).min() < 6:
                continue
            X = sp.csr_matrix(X) if rng.random() < 0.5 else X
            estimator = draw_estimator(rng, sp.issparse(X), args.multiclass)
            cv = draw_split(rng, k, y.size)
            scoring = draw_scoring(rng, estimator, cv, np.unique(y).size)
            labels = np.array(["no", "yes", "other"])[y] if rng.random() < 0.2 else y
            if args.draws and k not in args.draws:
                continue
            storage = "sparse" if sp.issparse(X) else "dense"
            label = " ".join(f"{seed}:{k} {kind} {X.shape} {storage} {estimator!r} {cv} {scoring}".split())
            try:
                started = time.perf_counter()
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    got = cross_val_score(estimator, X, labels, cv=cv, scoring=scoring, n_jobs=args.jobs)
                seconds = time.perf_counter() - started
                fell_back = any(issubclass(w.category, FallbackWarning) for w in caught)
                if fell_back and random_unless_seeded(estimator):
                    continue
                expected, tied, short = (sklearn_cross_val_score(estimator, X, labels, cv=cv, scoring=scoring), False,
                                         False) if fell_back else exact_scores(estimator, X, labels, cv, scoring)
            except Exception as error:  # (reported, counted, and the scan goes on)
                if "no exact reference" in str(error) or raises_alike(error, estimator, X, labels, cv, scoring):
                    continue  # (multinomial elastic-net: tests._exact has none; or scikit-learn raises as glru does)
                bad += 1
                print(f"ERROR {label} {error!r}"[:400], flush=True)
                continue
            values = not fell_back and scoring is not None and ("roc_auc" in scoring or "log_loss" in scoring)
            same = np.allclose(got, expected, rtol=1e-7, atol=1e-10, equal_nan=True) if values \
                else np.array_equal(got, expected, equal_nan=True)
            if not same and (values and tied or short):  # (values tied at the optimum: see rounding_ties)
                print(f"{'NOREF' if short else 'TIED'} {label} got {got} expected {expected}", flush=True)
                continue
            bad += not same
            if not same:
                print(f"MISMATCH {label} got {got} expected {expected}", flush=True)
            elif seconds > 3:
                print(f"SLOW {label} {seconds:.1f} s", flush=True)
        print(f"seed {seed}: {args.count} drawn, {bad} bad so far", flush=True)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
