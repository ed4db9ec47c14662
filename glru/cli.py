"""Command line: ``glru demo``, ``glru cv DATA`` and ``glru select DATA`` (also ``python -m glru ...``)."""

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
    _add_model_options(cv)
    cv.add_argument("--cv", default="5", help="'loo' or a number of folds (stratified)")

    select = commands.add_parser("select", help="exact sequential feature selection on a data file")
    _add_model_options(select)
    select.add_argument("--direction", default="backward", choices=["backward", "forward"])
    select.add_argument("--n-features", default="auto",
                        help="features to select: a count, a fraction in (0, 1], or 'auto' (see --tol)")
    select.add_argument("--tol", type=float, default=None, help="with 'auto': stop when a step gains less")
    select.add_argument("--cv", default="5", help="a number of folds (stratified), or 'split:K' for one "
                                                   "split with the first K rows as training rows")
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except (OSError, ValueError) as error:  # a file, its data or an option: a message, not a traceback
        parser.error(f"{args.command}: {error}")


def _run(args):
    if args.command == "demo":
        from .demo import run

        result = run(args.dataset, C=args.C, fit_intercept=not args.no_intercept)
        return 0 if result["folds"] else 1
    if args.command == "cv":
        return _cross_validate(args)
    return _select(args)


def _add_model_options(command):
    command.add_argument("data", help="LIBSVM/SVMlight or CSV file (labels in the first column), optionally .gz")
    command.add_argument("--loss", default="logistic", choices=["logistic", "squared_hinge"],
                         help="logistic: LogisticRegression; squared_hinge: LinearSVC")
    command.add_argument("--C", type=float, default=1.0, help="inverse regularization strength")
    command.add_argument("--no-intercept", action="store_true", help="fit without an intercept")
    command.add_argument("--scoring", default=None, help="a scikit-learn scorer name (default: accuracy)")
    command.add_argument("--n-jobs", type=int, default=None, help="parallel solves (joblib)")
    command.add_argument("-v", "--verbose", type=int, default=1, help="progress messages (0 = quiet)")


def _estimator_and_data(args):
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import LinearSVC
    from sklearn.utils.validation import check_X_y

    from .datasets import load

    # what every fit would reject (NaN, infinity), before any is computed
    X, y = check_X_y(*load(args.data), accept_sparse="csr")
    if args.loss == "logistic":
        return LogisticRegression(C=args.C, fit_intercept=not args.no_intercept), X, y
    return LinearSVC(C=args.C, fit_intercept=not args.no_intercept), X, y


def _select(args):
    import numpy as np

    from sklearn_ext import GLRUStepwiseSelector

    estimator, X, y = _estimator_and_data(args)
    if args.cv.startswith("split:"):
        k = _count(args.cv.split(":", 1)[1], "--cv split:K")
        cv = [(np.arange(k), np.arange(k, X.shape[0]))]
    else:
        cv = _count(args.cv, "--cv")
    n_features = args.n_features
    if n_features != "auto":
        n_features = float(n_features) if "." in n_features else int(n_features)
    print(f"{args.data}: {X.shape[0]} rows × {X.shape[1]} features; {estimator!r}; {args.direction}; cv={args.cv}",
          flush=True)
    start = time.perf_counter()
    selector = GLRUStepwiseSelector(estimator, n_features_to_select=n_features, tol=args.tol,
                                    direction=args.direction, scoring=args.scoring, cv=cv, n_jobs=args.n_jobs,
                                    verbose=args.verbose).fit(X, y)
    elapsed = time.perf_counter() - start
    print(f"selected {selector.n_features_to_select_} features: {np.flatnonzero(selector.support_).tolist()}")
    if selector.history_ is not None:
        trained = sum(h["n_trained"] for h in selector.history_)
        total = sum(h["n_candidates"] for h in selector.history_)
        print(f"{len(selector.history_)} steps; candidates trained: {trained} of {total}; time {elapsed:.2f} s")
    return 0


def _cross_validate(args):
    from sklearn.model_selection import LeaveOneOut

    from sklearn_ext import GLRUCrossValidator

    estimator, X, y = _estimator_and_data(args)
    splitter = LeaveOneOut() if args.cv.lower() == "loo" else _count(args.cv, "--cv")
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


def _count(text, option):
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{option} takes a whole number, got {text!r}") from None


if __name__ == "__main__":
    sys.exit(main())
