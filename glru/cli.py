"""Command line: ``glru demo`` (also ``python -m glru demo``)."""

import argparse
import sys


def main(argv=None):
    parser = argparse.ArgumentParser(prog="glru", description="Exact, certified model selection for linear models.")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="certify leave-one-out predictions on a built-in dataset "
                                            "and check them against exact refits")
    demo.add_argument("--dataset", default="breast_cancer", choices=["breast_cancer"])
    demo.add_argument("--C", type=float, default=1.0, help="inverse regularization, as in LogisticRegression")
    demo.add_argument("--no-intercept", action="store_true", help="fit without an intercept")
    demo.add_argument("--rows", type=int, default=None, help="check only the first ROWS removals")
    args = parser.parse_args(argv)

    if args.command == "demo":
        from .demo import run

        result = run(args.dataset, C=args.C, fit_intercept=not args.no_intercept, max_rows=args.rows)
        return 1 if result["violations"] or result["wrong_labels"] else 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
