"""Command line: ``glru demo`` and ``glru cv DATA`` (also ``python -m glru ...``)."""

import argparse
import sys
import time


def main(argv=None):
    parser = argparse.ArgumentParser(prog="glru", description="Exact, certified model selection for linear models.")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="exact leave-one-out cross-validation on a built-in dataset, "
                                            "timed against scikit-learn")
    demo.add_argument("--dataset", default="breast_cancer", choices=["breast_cancer"])
    demo.add_argument("--C", type=float, default=1.0, help="inverse regularization, as in LogisticRegression")
    demo.add_argument("--no-intercept", action="store_true", help="fit without an intercept")

    cv = commands.add_parser("cv", help="exact cross-validation scores of a linear classifier on a data file")
    cv.add_argument("data", help="LIBSVM/SVMlight or CSV file (labels in the first column), optionally .gz")
    cv.add_argument("--loss", default="logistic", choices=["logistic", "squared_hinge"],
                    help="logistic: LogisticRegression; squared_hinge: LinearSVC")
    cv.add_argument("--C", type=float, default=1.0, help="inverse regularization strength")
    cv.add_argument("--cv", default="5", help="'loo' or a number of folds (stratified)")
    cv.add_argument("--no-intercept", action="store_true", help="fit without an intercept")
    cv.add_argument("--scoring", default=None, help="a scikit-learn scorer name (default: accuracy)")
    cv.add_argument("--n-jobs", type=int, default=None, help="parallel fold solves (joblib)")
    cv.add_argument("-v", "--verbose", type=int, default=1, help="progress messages (0 = quiet)")
    args = parser.parse_args(argv)

    if args.command == "demo":
        from .demo import run

        result = run(args.dataset, C=args.C, fit_intercept=not args.no_intercept)
        return 0 if result["folds"] else 1
    if args.command == "cv":
        return _cross_validate(args)
    return 2


def _cross_validate(args):
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import LeaveOneOut
    from sklearn.svm import LinearSVC

    from sklearn_ext import GLRUCrossValidator

    from .datasets import load

    X, y = load(args.data)
    if args.loss == "logistic":
        estimator = LogisticRegression(C=args.C, fit_intercept=not args.no_intercept)
    else:
        estimator = LinearSVC(C=args.C, fit_intercept=not args.no_intercept)
    splitter = LeaveOneOut() if args.cv.lower() == "loo" else int(args.cv)
    print(f"{args.data}: {X.shape[0]} rows × {X.shape[1]} features; {estimator!r}; cv={args.cv}", flush=True)
    start = time.perf_counter()
    validator = GLRUCrossValidator(estimator, cv=splitter, scoring=args.scoring, n_jobs=args.n_jobs,
                                   verbose=args.verbose).fit(X, y)
    elapsed = time.perf_counter() - start
    scores = validator.scores_
    print(f"score: {scores.mean():.6f} ± {scores.std():.6f} over {len(scores)} folds")
    print(f"held-out predictions certified without training: {validator.n_certified_}; "
          f"folds retrained: {validator.n_retrained_}; time {elapsed:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
