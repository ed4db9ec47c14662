"""The main job on a built-in dataset: exact leave-one-out cross-validation, against
scikit-learn's own ``cross_val_score``.

glru fits once, certifies each held-out label from a Newton centre (no training), and solves
only the folds it cannot certify; scikit-learn trains all n models. The per-fold scores must be
the same (both are accuracies of the exact optimum's prediction, up to scikit-learn's solver
tolerance, which is reported if it ever flips a label).
"""

import time
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import LeaveOneOut
from sklearn.model_selection import cross_val_score as sklearn_cross_val_score
from sklearn.preprocessing import StandardScaler

DATASETS = {"breast_cancer": load_breast_cancer}


def run(dataset="breast_cancer", C=1.0, fit_intercept=True, out=print):
    """Run the demo; returns a dict of the measured numbers."""
    from sklearn_ext import GLRUCrossValidator

    X, y = DATASETS[dataset](return_X_y=True)
    X = StandardScaler().fit_transform(X)
    estimator = LogisticRegression(C=C, fit_intercept=fit_intercept)
    out(f"glru demo: leave-one-out cross-validation of {estimator!r} on {dataset} "
        f"({X.shape[0]} rows × {X.shape[1]} features, standardized)")

    start = time.perf_counter()
    validator = GLRUCrossValidator(estimator, cv=LeaveOneOut()).fit(X, y)
    glru_time = time.perf_counter() - start

    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = sklearn_cross_val_score(estimator, X, y, cv=LeaveOneOut())
    sklearn_time = time.perf_counter() - start

    folds = len(validator.scores_)
    result = dict(folds=folds, certified=validator.n_certified_, retrained=validator.n_retrained_,
                  score=float(validator.scores_.mean()), sklearn_score=float(reference.mean()),
                  disagreements=int(np.sum(validator.scores_ != reference)),
                  glru_time=glru_time, sklearn_time=sklearn_time)
    out(f"LOO accuracy: {result['score']:.6f} (scikit-learn: {result['sklearn_score']:.6f}; "
        f"folds that differ: {result['disagreements']})")
    out(f"held-out predictions certified without training: {result['certified']} / {folds}; "
        f"folds retrained: {result['retrained']}")
    out(f"time: glru {glru_time:.2f} s, scikit-learn cross_val_score {sklearn_time:.2f} s "
        f"({sklearn_time / glru_time:.1f}× faster)")
    return result
