"""Exact cross-validation for scikit-learn linear classifiers: :class:`GLRUCrossValidator` and a
drop-in :func:`cross_val_score`.

Scores equal what scikit-learn returns when every fold's fit reaches its exact optimum. Scorers
that only look at predicted labels (accuracy, f1, balanced accuracy, a ``make_scorer`` on
predictions, …) are computed from certified labels, so most folds are never trained; scorers
that need decision values or probabilities get every fold solved to a relative duality gap of
``glru.cross_validation.TOL_ROUNDING`` (rounding level), warm-started from a certified Newton
centre.
"""

import functools
import time
import warnings

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs
from sklearn import model_selection
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, clone, is_classifier
from sklearn.exceptions import FitFailedWarning
from sklearn.metrics import accuracy_score, check_scoring
from sklearn.model_selection import check_cv
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils import RegressorTags, _safe_indexing
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import _num_samples, check_is_fitted, check_X_y, column_or_1d, indexable

from glru.blas import blas_for
from glru.costs import dense_design_pays_off
from glru._validation import check_X
from glru.cross_validation import TOL_ROUNDING, Fold, cross_validate, together_here
from glru.fold_hessian import StartGram
from glru.fold_refit import (BALL_FIRST_ROWS, fold_method, liblinear_pays_off, refit_fold,
                             refit_multinomial_fold, refit_one_vs_rest_fold, start_by_liblinear,
                             start_gram_pays_off, steps_together_pay_off)
from glru.fold_steps import fold_preconditioner, scaled_fold_starts, single_precision
from glru.held_out import nonzero_counts, zero_unused_weights
from glru.multinomial_cv import cross_validate_multinomial, solve_fold
from glru.newton_centres import outside
from glru.one_vs_rest import cross_validate_one_vs_rest
from glru.problem import Problem
from glru.ridge import held_out_predictions
from glru.solver import LearnedDualTolerance, solve, solve_held_out
from glru.standardization import fold_standardizations

from ._adapters import (Unsupported, affine_scaling, is_ridge, learns_from_rows, linear_model, model_input,
                        pipeline_steps, ridge_alpha, scales_per_feature, split_pipeline, standardization)

__all__ = ["GLRUCrossValidator", "cross_val_score"]


def split_folds(cv, X, y=None, groups=None):
    """The splits of a checked ``cv`` as :class:`glru.cross_validation.Fold` objects, which unpack
    as (train, test) pairs and keep only the held-out rows of K-fold and leave-one-out splits.
    :class:`Unsupported` for a split that no fold states (training indices that repeat rows)."""
    folds = []
    for k, (train, test) in enumerate(cv.split(X, y, groups)):
        try:
            folds.append(Fold.from_split(train, test, _num_samples(X)))
        except ValueError as error:
            raise Unsupported(f"split {k}: {error}") from error
    return folds


def trainable_folds(y, splits):
    """Indices of the splits (:func:`split_folds`) whose training rows hold two classes or more."""
    codes = np.unique(y, return_inverse=True)[1].ravel()
    total = np.bincount(codes)
    return [k for k, fold in enumerate(splits) if np.count_nonzero(fold.training_counts(codes, total)) >= 2]


class FallbackWarning(UserWarning):
    """glru could not compute this exactly and ran scikit-learn's own computation instead."""


class GLRUCrossValidator(BaseEstimator):
    """Cross-validation scores of a linear classifier, exact, from certified held-out predictions.

    Parameters
    ----------
    estimator : estimator
        ``LogisticRegression`` (L2 or elastic net with ``l1_ratio < 1``), ``LinearSVC``
        (squared hinge, L2), or a Pipeline ending in one of them: row-wise stateless steps
        go through the certificates; steps that learn from the training rows (a
        ``StandardScaler``, an imputer, an encoder) are fitted on each fold's training rows and
        the fold solved exactly on their output (:meth:`_fit_learned`). Multiclass targets:
        one-vs-rest for ``LinearSVC`` and ``solver="liblinear"`` (where the installed
        scikit-learn fits it), multinomial for the other ``LogisticRegression`` solvers, L2
        only (:mod:`glru.one_vs_rest`, :mod:`glru.multinomial_cv`). Anything else falls back to scikit-learn with a
        :class:`FallbackWarning` that says why.
    cv : int, cross-validation generator or iterable, default=None
        As in :func:`sklearn.model_selection.cross_val_score` (5-fold by default; stratified
        for classifiers).
    scoring : str, callable or None, default=None
        As in :func:`sklearn.model_selection.cross_val_score`.
    n_jobs : int, default=None
        Parallel fold solves through joblib (a ``joblib.parallel_backend`` applies).
    verbose : int, default=0
        Progress messages (≥ 1), and joblib's for the fold solves.
    pre_dispatch : int or str, default="2*n_jobs"
    error_score : "raise" or float, default=np.nan
        Score of a fold whose fit fails (e.g. one class in its training rows), as in scikit-learn.

    Attributes
    ----------
    scores_ : ndarray of shape (n_splits,)
    n_certified_ : int
        Held-out predictions whose label was certified from the full fit, without training.
    n_retrained_ : int
        Folds whose problem was solved.
    decision_bounds_ : ndarray of shape (n_held_out, 2), or (n_held_out, n_classes, 2) for multiclass
        Certified interval of each held-out decision value, folds in split order. Multiclass:
        per class (NaN for a class missing from the fold's training rows); multinomial models
        bound the symmetric scores (Σ_k coef_k = 0, Σ_k intercept_k = 0, scikit-learn's own
        normalization), which a two-class fold also reports for its two classes.
    held_out_indices_ : ndarray of shape (n_held_out,)
        Row of each entry of ``decision_bounds_``.
    estimator_ : estimator
        The estimator fitted on all rows (exact optimum).
    fallback_reason_ : str or None
        Why scikit-learn's own computation was used, if it was.
    """

    def __init__(self, estimator, *, cv=None, scoring=None, n_jobs=None, verbose=0,
                 pre_dispatch="2*n_jobs", error_score=np.nan):
        self.estimator, self.cv, self.scoring = estimator, cv, scoring
        self.n_jobs, self.verbose, self.pre_dispatch, self.error_score = n_jobs, verbose, pre_dispatch, error_score

    def fit(self, X, y, groups=None):
        """Compute the cross-validation scores of ``estimator`` on (X, y)."""
        return self._fit(X, y, groups)

    def _fit(self, X, y, groups=None, result=None, refit=True, previous=None, train_scores=False):
        """:meth:`fit`; ``result`` is the binary engine's result when already computed (by
        :class:`~sklearn_ext.GLRUSearchCV`, on the same data, splits and model). Without ``refit``
        (:func:`cross_val_score` and a grid point of the search, which need the scores only) neither
        a fallback nor steps that learn from the training rows fit ``estimator_`` (None), nor does
        the engine where its full fit only starts the folds (:meth:`_fit_exact`), and the
        latter's full fit, the folds' start, is solved only to ``START_TOL`` (:func:`rough_start_tol`
        where every fold takes its Newton–CG steps with the others, :func:`_rough_full_fit`).
        ``previous``: for steps that learn from the training rows, the full fit and each trainable
        fold's solution at a neighbouring grid point (``_solutions`` of the validator that computed
        it; starts, see :func:`_full_fit` and :func:`_refit_learned_fold`). ``train_scores``
        (steps that learn from the training rows only): also ``_train_scores``, each fold's exact
        model scored on its training rows, as GridSearchCV's ``return_train_score``."""
        scorer = check_scoring(self.estimator, scoring=self.scoring)
        cv = check_cv(self.cv, y, classifier=is_classifier(self.estimator))
        reason = None
        try:  # the estimator first: one glru cannot compute gets scikit-learn the data as given
            preprocessing, final = pipeline_steps(self.estimator)
            learned = learns_from_rows(self.estimator)
            if learned and is_ridge(final):
                split_pipeline(self.estimator)  # (raises, naming the step)
            alpha = ridge_alpha(final) if is_ridge(final) else None
            model = None if is_ridge(final) else linear_model(final)
        except Unsupported as error:
            reason = str(error)
        # each fallback runs outside the handler, so that the errors of the fits scikit-learn reports
        # (in its FitFailedWarning) do not chain glru's Unsupported
        if reason is not None:
            X, y, groups = indexable(X, y, groups)
            return self._fall_back(X, y, list(cv.split(X, y, groups)), reason, refit, train_scores)
        if learned:  # the steps see X as given (a DataFrame, missing values for an imputer, ...)
            return self._fit_learned(X, y, groups, cv, scorer, preprocessing, model, refit, previous, train_scores)
        # (NaN or infinity: model_input below hands the data to scikit-learn, which reports it per fold)
        X, y = check_X_y(X, y, accept_sparse="csr", dtype=np.float64, ensure_all_finite=False,
                         multi_output=is_ridge(final), y_numeric=is_ridge(final))
        try:
            splits = split_folds(cv, X, y, groups)
            preprocessing, X_model = model_input(preprocessing, X, y)
        except Unsupported as error:
            reason = str(error)
        if reason is not None:
            return self._fall_back(X, y, list(cv.split(X, y, groups)), reason, refit, train_scores)
        if is_ridge(final):
            return self._fit_ridge(X, y, splits, scorer, X_model, alpha, final.fit_intercept)
        try:
            check_target(y, model)
            trainable = trainable_folds(y, splits)
            if not trainable:
                raise Unsupported("no training fold holds two classes")
        except Unsupported as error:
            reason = str(error)
        if reason is not None:
            return self._fall_back(X, y, splits, reason, refit, train_scores)
        self.fallback_reason_ = None
        return self._fit_exact(X, y, splits, scorer, preprocessing, X_model, model, trainable, result, refit)

    def _fit_exact(self, X, y, splits, scorer, preprocessing, X_model, model, trainable, result=None, refit=True):
        """The engine's computation; ``preprocessing`` (fitted row-wise steps, or None) turned X
        into ``X_model``. Without ``refit``, where every fold holds out at least ``ROUGH_START_SHARE``
        of the rows, the engine's full fit only starts the folds (``start_tol``) and ``estimator_``
        is None."""
        classes = np.unique(y)
        need = _response_needed(scorer)
        folds = [splits[k] for k in trainable]
        if classes.size > 2:
            return self._fit_multiclass(X, y, splits, scorer, preprocessing, model, trainable, X_model, classes, need,
                                        folds)
        rough = result is None and _starts_only(refit, [f.test for f in folds], y.size)
        if result is None:
            result = cross_validate(
                model.design(X_model), np.where(y == classes[1], 1.0, -1.0), model.loss, folds, model.penalty_for,
                model.fit_intercept, need=need, start_tol=ROUGH_START_TOL if rough else None, n_jobs=self.n_jobs,
                verbose=self.verbose, pre_dispatch=self.pre_dispatch)
        self.estimator_ = None if rough else self._assemble(
            preprocessing, model.fitted(result.coef, result.intercept, classes, X_model.shape[1]))
        counts = nonzero_counts(X_model) if need != "labels" else None
        self._set_scores(X, y, splits, scorer, trainable, [
            HeldOutPredictions(classes, outcome.labels) if need == "labels" else self._assemble(
                preprocessing, _fold_model(model, outcome, classes, X_model.shape[1],
                                           counts - nonzero_counts(X_model[fold.test])))
            for fold, outcome in zip(folds, result.outcomes)])
        self.n_certified_, self.n_retrained_ = result.n_certified, result.n_retrained
        self.decision_bounds_ = np.column_stack([np.concatenate([o.lower for o in result.outcomes]),
                                                 np.concatenate([o.upper for o in result.outcomes])])
        self.held_out_indices_ = np.concatenate([f.test for f in folds])
        self.timings_ = result.timings
        return self

    def _fit_learned(self, X, y, groups, cv, scorer, preprocessing, model, refit, previous=None, train_scores=False):
        """A Pipeline whose steps learn from the training rows (a ``StandardScaler``): each fold's
        steps are fitted on its training rows, as scikit-learn fits them, and its model solved
        exactly on what they output (:mod:`glru.fold_refit`), from the full fit carried over to
        the fold's scaling, in parallel through joblib. A fold is skipped only where the bounds at
        that start decide every held-out label: the certificates of the engine need one X for
        all folds. A step that fails (on any rows) hands the whole computation to scikit-learn,
        whose error handling (``error_score``) then applies. With ``train_scores`` every fold
        is solved to rounding level, and its model also scored on its training rows."""
        X, y, groups = indexable(X, y, groups)
        y = column_or_1d(y, warn=True)
        splits = list(cv.split(X, y, groups))
        classes = np.unique(y)
        reason = None
        try:
            check_target(y, model)
            trainable = [k for k, (train, _) in enumerate(splits) if np.unique(y[train]).size >= 2]
            if not trainable:
                raise Unsupported("no training fold holds two classes")
        except Unsupported as error:
            reason = str(error)
        if reason is not None:  # (outside the handler, see _fit)
            return self._fall_back(X, y, splits, reason, refit, train_scores)
        started = time.perf_counter()
        need = _response_needed(scorer)
        codes = np.searchsorted(classes, y)
        previous_full, previous_folds = previous if previous is not None else (None, [None] * len(trainable))
        # where the folds may run in this process (together_here; with two local jobs, together / a task a fold:
        # 10-fold on sparse Gaussian 10000 × 1000 0.83 / 1.16 s, 5-fold on make_classification 2000 × 200 0.11 /
        # 0.24 s), a scaler's folds may take their Newton–CG steps together: those whose values are needed, or of
        # several held-out rows (the ball at the start, which decides many leave-one-out folds, rarely decides them
        # all; see glru.fold_refit.BALL_FIRST_ROWS)
        X_in = _stepping_input(preprocessing, model, X, codes) \
            if classes.size == 2 and together_here(self.n_jobs) else None
        stepping = [j for j, k in enumerate(trainable) if need == "values" or train_scores
                    or splits[k][1].size > BALL_FIRST_ROWS] if X_in is not None else []
        # (X in float32 once for the full fit's steps and the folds')
        single = single_precision(X_in) if stepping else None
        rough = _starts_only(refit, [splits[k][1] for k in trainable], y.size)
        rough_steps = rough and len(stepping) == len(trainable)
        standardizing = standardization(preprocessing[-1], X_in) if rough_steps else None
        if standardizing is not None:  # the full data's and the folds' scalings only start them: estimated
            full_pre = X_full = None
            old, scales, shifts = fold_standardizations(X_in, [splits[k][1] for k in trainable], **standardizing)
            fold_pre = [None] * len(stepping)  # (each fold's scaler is fitted where its certificate needs it)
        else:  # (the full fit from the steps' own: their scaling of all rows only, X not transformed)
            full = _fitted_on_all(preprocessing, X, y) if rough_steps else \
                _transformed(preprocessing, model, X, y, np.arange(y.shape[0]))
            if isinstance(full, _StepFailed):
                return self._fall_back(X, y, splits, str(full), refit, train_scores)
            full_pre, X_full = full
            # (held as the folds' designs are: glru.fold_refit.refit_fold)
            X_full = X_full.toarray() if dense_design_pays_off(X_full) else X_full
            old = affine_scaling(full_pre[-1])
            if stepping:
                trains = [splits[trainable[j]][0] for j in stepping]
                fold_pre, scales, shifts = _fitted_scalings(preprocessing, X, y, trains)
        if rough_steps:
            start, preconditioner, known = _rough_full_fit(model, X_in, single, codes, old, previous_full), None, None
        else:
            start, preconditioner, known = _full_fit(model, X_full, codes, classes.size, previous_full, exact=refit,
                                                     rough=rough)
        fitted = time.perf_counter()
        # the binary full problem, on which the folds' method and their StartGram are judged, with the Hessian the full
        # fit's solve left (or, where none, the one liblinear_pays_off forms)
        full = None
        if classes.size == 2 and X_full is not None:
            full = Problem(X_full, np.where(codes == 1, 1.0, -1.0), model.loss, model.penalty_for(X_full.shape[0]),
                           model.fit_intercept)
            full.known_hessian = known
        method = _folds_method(full, start, [splits[k][1] for k in trainable]) if full is not None else None
        start_gram = _start_gram(preprocessing, full, start) \
            if full is not None and old is not None and method is None else None
        together = {}  # fold j → (its start, its fitted steps or None, polished, M_j⁻¹, stepped)
        if stepping:
            starts = _starts_together(model, X_in, single, codes, [splits[trainable[j]] for j in stepping], start,
                                      old, scales, shifts, [previous_folds[j] for j in stepping],
                                      need == "values" or train_scores)
            # the steps' rows are a_j∘x + c_j on X in float64, the fold's are its scaler's output: the same to rounding
            # only where the shifts are small (no cancellation, SHIFT_TRUSTED) and the scaler keeps float64 (it
            # keeps float32 input in float32). Elsewhere a point the steps polished is not the fold's optimum to
            # rounding, though its gap is within allowance (an ill-conditioned fold: float32 input, its gradient
            # 1e8 times a polish's; columns offset by 1e6 spreads, values 2e-10 off): it is polished on its own data
            trusted = (np.abs(shifts).max(axis=0) <= SHIFT_TRUSTED) & (not _reduced_precision(X))
            together = {j: (point, steps, polished and bool(trusted[i]), of_fold, True)
                        for i, (j, steps, (point, polished, of_fold)) in enumerate(zip(stepping, fold_pre, starts))}
        # folds one after another in this process take their rows into one array (see _FoldRows), and the first
        # tolerance of LIBLINEAR's dual's runs from the folds before them
        in_turn = effective_n_jobs(self.n_jobs) == 1
        rows, learned_eps = (_FoldRows(), LearnedDualTolerance()) if in_turn else (None, None)
        results = Parallel(n_jobs=self.n_jobs, verbose=self.verbose, pre_dispatch=self.pre_dispatch)(
            delayed(_refit_learned_fold)(preprocessing, model, X, y, codes, classes.size, splits[k], start, old,
                                         "values" if train_scores else need,
                                         *together.get(j, (previous_folds[j], None, False, preconditioner, False)),
                                         rows=rows, start_gram=start_gram, method=method, learned_eps=learned_eps)
            for j, k in enumerate(trainable))
        solved = time.perf_counter()
        failed = next((r for r in results if isinstance(r, _StepFailed)), None)
        if failed is not None:
            return self._fall_back(X, y, splits, str(failed), refit, train_scores)
        self.fallback_reason_ = None
        n_features = (X_in if X_full is None else X_full).shape[1] - (model.intercept_scaling is not None)
        self.estimator_ = self._assemble(full_pre, model.fitted(*start, classes, n_features)) if refit else None
        fold_models = [self._assemble(steps, model.fitted(outcome.coef, outcome.intercept, classes if classes.size == 2
                                                          else classes[outcome.classes], n_features))
                       if need == "values" or train_scores else None for steps, outcome in results]
        self._set_scores(X, y, splits, scorer, trainable, [
            HeldOutPredictions(classes, outcome.labels) if need == "labels" else fold_model
            for (_, outcome), fold_model in zip(results, fold_models)])
        if train_scores:  # a fold with one class: its fit fails (as GridSearchCV reports it)
            self._train_scores = np.full(len(splits), self.error_score)
            for k, fold_model in zip(trainable, fold_models):
                train = splits[k][0]
                self._train_scores[k] = _score(scorer, fold_model, _safe_indexing(X, train), y[train],
                                               self.error_score)
        tests = [splits[k][1] for k in trainable]
        outcomes = [outcome for _, outcome in results]
        for j in together:  # (trained by those steps, decided at their point or not)
            outcomes[j].solved = True
        self.n_certified_ = sum(test.size for test, outcome in zip(tests, outcomes) if not outcome.solved)
        self.n_retrained_ = sum(outcome.solved for outcome in outcomes)
        self._solutions = (start, [(outcome.coef, outcome.intercept) for outcome in outcomes])
        self.decision_bounds_ = np.column_stack([np.concatenate([o.lower for o in outcomes]),
                                                 np.concatenate([o.upper for o in outcomes])]) \
            if classes.size == 2 else _multiclass_bounds(tests, outcomes, classes.size)
        self.held_out_indices_ = np.concatenate(tests)
        self.timings_ = {"full fit": fitted - started, "solves": solved - fitted}
        return self

    def _fit_ridge(self, X, y, splits, scorer, X_model, alpha, fit_intercept):
        """Ridge: every fold's held-out predictions in closed form (:mod:`glru.ridge`), exact, from
        the model's input ``X_model`` (X through the fitted row-wise steps)."""
        self.fallback_reason_ = None
        predictions = held_out_predictions(X_model, y, splits, [alpha], fit_intercept)
        self._set_scores(X, y, splits, scorer, range(len(splits)),
                         [HeldOutPredictions(None, p[0], regression=True) for p in predictions])
        self.n_certified_, self.n_retrained_ = 0, 0
        self.decision_bounds_ = np.column_stack([np.concatenate([p[0] for p in predictions])] * 2)
        self.held_out_indices_ = np.concatenate([test for _, test in splits])
        self.estimator_ = clone(self.estimator).fit(X, y)
        self.timings_ = {}
        return self

    def _fit_multiclass(self, X, y, splits, scorer, preprocessing, model, trainable, X_model, classes, need, folds):
        """One-vs-rest or multinomial, as ``model`` fits ≥ 3 classes: certified arg-max labels,
        the open folds (every fold for value scorers) solved exactly."""
        result = cross_validate_multiclass(model, X_model, y, classes, folds, need, n_jobs=self.n_jobs,
                                           verbose=self.verbose, pre_dispatch=self.pre_dispatch)
        self.estimator_ = self._assemble(preprocessing, model.fitted(result.coef, result.intercept, classes,
                                                                     X_model.shape[1]))
        counts = nonzero_counts(X_model) if need != "labels" else None
        self._set_scores(X, y, splits, scorer, trainable, [
            HeldOutPredictions(classes, outcome.labels) if need == "labels" else self._assemble(
                preprocessing, _fold_model(model, outcome, classes[outcome.classes], X_model.shape[1],
                                           counts - nonzero_counts(X_model[fold.test])))
            for fold, outcome in zip(folds, result.outcomes)])
        self.n_certified_, self.n_retrained_ = result.n_certified, result.n_retrained
        self.decision_bounds_ = _multiclass_bounds([f.test for f in folds], result.outcomes, classes.size)
        self.held_out_indices_ = np.concatenate([f.test for f in folds])
        self.timings_ = getattr(result, "timings", {})  # the multinomial engine times its stages
        return self

    def _set_scores(self, X, y, splits, scorer, trainable, held_out):
        """``scores_`` from each trainable split's held-out predictor (in ``trainable`` order), and
        scikit-learn's behaviour for the others."""
        scores = np.full(len(splits), np.nan)
        for k, predictor in zip(trainable, held_out):
            test = splits[k][1]
            scores[k] = _score(scorer, predictor, _safe_indexing(X, test), y[test], self.error_score)
        for k in sorted(set(range(len(splits))) - set(trainable)):
            scores[k] = self._one_class_fold(X, y, splits[k])
        self.scores_ = scores

    def _one_class_fold(self, X, y, split):
        """A training fold with one class: scikit-learn's estimators refuse to fit it; report
        that as cross_val_score does (raise, or warn and use ``error_score``)."""
        train, test = split
        try:
            clone(self.estimator).fit(_safe_indexing(X, train), y[train])
        except Exception as error:
            if self.error_score == "raise":
                raise
            warnings.warn(f"A fit failed; its score is set to {self.error_score}. The error was:\n{error!r}",
                          FitFailedWarning, stacklevel=4)
            return self.error_score
        return model_selection.cross_val_score(self.estimator, X, y, cv=[split], scoring=self.scoring,
                                               error_score=self.error_score)[0]

    def _assemble(self, preprocessing, final):
        if preprocessing is None:
            return final
        return Pipeline(list(preprocessing.steps) + [(self.estimator.steps[-1][0], final)])

    def _fall_back(self, X, y, splits, reason, refit=True, train_scores=False):
        warnings.warn(f"glru cannot compute this cross-validation exactly ({reason}); running scikit-learn's "
                      "cross_val_score instead.", FallbackWarning, stacklevel=3)
        self.fallback_reason_ = reason
        # cross_validate: what cross_val_score computes (it is a wrapper of it), training scores if asked
        computed = model_selection.cross_validate(
            self.estimator, X, y, scoring=self.scoring, cv=splits, n_jobs=self.n_jobs, verbose=self.verbose,
            pre_dispatch=self.pre_dispatch, error_score=self.error_score, return_train_score=train_scores)
        self.scores_ = computed["test_score"]
        if train_scores:
            self._train_scores = computed["train_score"]
        self.n_certified_, self.n_retrained_ = 0, len(splits)
        self.decision_bounds_ = self.held_out_indices_ = None
        self.estimator_ = clone(self.estimator).fit(X, y) if refit and np.unique(y).size > 1 else None
        return self


class _StepFailed:
    """A preprocessing step that raised on some rows (the reason for a fallback)."""

    def __init__(self, error):
        self.error = error

    def __str__(self):
        return f"a Pipeline step failed: {self.error!r}"


def _transformed(preprocessing, model, X, y, rows, fitted=None):
    """(the steps fitted on ``rows``, the model's design matrix of those rows), as a Pipeline's
    fit computes them (or with the steps ``fitted`` there already), or :class:`_StepFailed`."""
    steps = clone(preprocessing) if fitted is None else fitted
    try:
        Z = steps.fit_transform(_safe_indexing(X, rows), y[rows]) if fitted is None else \
            steps.transform(_safe_indexing(X, rows))
        return steps, model.design(check_X(Z))
    except Exception as error:  # any step's error: scikit-learn's own computation reports it its way
        return _StepFailed(error)


def _fitted_on_all(preprocessing, X, y):
    """(the steps fitted on all rows, None), or :class:`_StepFailed`: their fit without the
    transform of X that :func:`_transformed` makes."""
    try:
        return clone(preprocessing).fit(X, y), None
    except Exception as error:  # any step's error: scikit-learn's own computation reports it its way
        return _StepFailed(error)


def _fold_designs(preprocessing, model, X, y, split, fitted=None, rows=None):
    """(the steps fitted on the split's training rows, or ``fitted`` there already; the model's
    design matrices of its training rows and of its held-out rows), as a Pipeline computes them,
    or :class:`_StepFailed`. A per-feature scaler (the one step, X a dense array) transforms
    each value on its own: both sets of rows are taken from X at once and transformed in one
    call, to the same bits as apart, and the training rows are views of them (iris with
    LinearSVC, leave-one-out: 0.60 → 0.51 s), into ``rows`` (a :class:`_FoldRows`) where given, and
    a ``StandardScaler`` scales them in place (:func:`_scaled_in_place`): the fold's designs are
    views of that array, valid until the next fold's. Sparse rows are sliced as copies: there, apart
    (binary 20000 × 500, 5-fold, 0.56–0.59 s apart, 0.62–0.85 s at once)."""
    train, test = split
    if not (len(preprocessing.steps) == 1 and scales_per_feature(preprocessing[-1]) and isinstance(X, np.ndarray)):
        done = _transformed(preprocessing, model, X, y, train, fitted)
        if isinstance(done, _StepFailed):
            return done
        steps, X_train = done
        try:
            X_test = model.design(check_X(steps.transform(_safe_indexing(X, test)), n_features=X_train.shape[1]
                                          - (model.intercept_scaling is not None)))
        except Exception as error:
            return _StepFailed(error)
        return steps, X_train, X_test
    order = np.concatenate([train, test])
    rows = _safe_indexing(X, order) if rows is None else rows.take(X, order)
    try:
        steps = fitted
        if steps is None:  # (the step fitted in place, in its Pipeline)
            steps = clone(preprocessing)
            steps[-1].fit(rows[:train.size], y[train])
        designs = model.design(check_X(_scaled_in_place(steps[-1], rows)))
    except Exception as error:  # any step's error: scikit-learn's own computation reports it its way
        return _StepFailed(error)
    return steps, designs[:train.size], designs[train.size:]


class _FoldRows:
    """One array that holds the rows of each fold in turn (training, then held-out), for folds
    solved one after another in this process: each fold's copy of its rows, allocated and freed
    at every fold, made the heap shrink and grow again, its pages fresh each time (10-fold
    make_classification 2000 × 200 with a StandardScaler: 15,000 page faults a run, 72 ms; 7 and
    49 ms with one array). Sized for the largest fold seen."""

    def __init__(self):
        self.array = None

    def take(self, X, order):
        """X's rows ``order`` (a dense array), in this array."""
        shape = (order.size, X.shape[1])
        if self.array is None or self.array.dtype != X.dtype or self.array.shape[0] < shape[0] \
                or self.array.shape[1] != shape[1]:
            self.array = np.empty(shape, dtype=X.dtype)
        # (mode="raise", the default, takes into a buffer first and copies it over)
        return np.take(X, order, axis=0, out=self.array[:shape[0]], mode="clip")


def _scaled_in_place(step, rows):
    """A fitted per-feature scaler's output on ``rows``, a copy of the data the caller owns: a
    ``StandardScaler`` transforms it in place (``copy=False``: the same subtraction and division,
    the same bits), the others into a new array. The array it saves is a fold's whole design:
    allocated and freed at every fold, it made the heap shrink and grow again, and each fold's
    arrays were fresh pages (5-fold make_classification 2000 × 200 with a StandardScaler: 7,500
    page faults a run, 45 ms; 900 and 37 ms in place; scikit-learn's own run 80 faults)."""
    return step.transform(rows, copy=False) if type(step) is StandardScaler else step.transform(rows)


def _full_fit(model, X, codes, n_classes, start=None, exact=True, rough=False):
    """((coef, intercept), preconditioner, known) of ``model`` on (X, class ``codes``): the start of the
    folds of :meth:`GLRUCrossValidator._fit_learned`, and, ``exact`` to rounding, its ``estimator_``;
    otherwise (no ``estimator_`` asked for: :func:`cross_val_score`, a grid point of
    :class:`~sklearn_ext.GLRUSearchCV`) solved to the relative gap ``START_TOL`` only, far closer
    to the full optimum than any fold's optimum is (to ``ROUGH_START_TOL``, with ``rough``, where
    the folds are LIBLINEAR's, :func:`glru.fold_refit.fold_method`; to ``PRIMAL_START_TOL``, one LIBLINEAR
    run, where :func:`glru.fold_refit.start_by_liblinear`; not at all for two classes whose folds
    are its dual's, which takes no start). One row per class with three classes or more
    (multinomial: symmetric, as scikit-learn's, and exact unless ``rough``: the folds each hold
    out at least ``ROUGH_START_SHARE`` of the rows, and the full fit, not needed, only starts them,
    solved to ``MULTINOMIAL_ROUGH_TOL``). ``start``: a (coef,
    intercept) of the same shapes to start from (the optimum at a neighbouring grid point, on
    the same X), else zeros. ``preconditioner``: for a multinomial model, the factorized Hessian
    at the solution that its folds' Newton steps start with (:func:`glru.multinomial_cv.solve_fold`),
    else None. ``known``: for two classes solved only to a start, the Hessian its semismooth Newton
    steps left (:attr:`glru.problem.Problem.known_hessian`, for :func:`_start_gram`), else None."""
    shape = (X.shape[1],) if n_classes == 2 else (n_classes, X.shape[1])
    coef, intercept = start if start is not None and start[0].shape == shape else (np.zeros(shape), np.zeros(shape[:-1]))
    if n_classes > 2 and model.multiclass == "multinomial":
        with blas_for(X, coef.size + intercept.size):  # (its factorizations: of all the classes' unknowns)
            coef, intercept, factor = solve_fold(X, codes, n_classes, model.penalty_for(X.shape[0]).lam,
                                                 model.fit_intercept, coef, intercept, with_factor=True,
                                                 tol=MULTINOMIAL_ROUGH_TOL if rough else None)
        return (coef, intercept), factor, None
    penalty = model.penalty_for(X.shape[0])
    # as the folds are solved (glru.fold_refit.fold_method): Newton steps with the Hessian formed where it is cheap
    # (w8a standardized 0.8 s against 1.9 s by Newton–CG until its products ran out), and the squared hinge's dual
    # (or semismooth Newton's whole steps, where they pay) with few rows a feature (make_classification 721 × 1270,
    # StandardScaler + LinearSVC(C=0.278), 5-fold: its full fit 0.58 s by trust-region Newton–CG, whose steps zigzag
    # there, and LIBLINEAR's primal after it)
    shape = Problem(X, codes, model.loss, penalty, model.fit_intercept)  # (for its shape, loss and penalty)
    method = fold_method(shape)
    primal_start = rough and n_classes == 2 and start_by_liblinear(shape)
    if primal_start:
        method = "liblinear"  # (its folds may be LIBLINEAR's, _folds_method: the full fit only starts them)
    if rough and n_classes == 2 and method == "liblinear-dual":
        # LIBLINEAR's dual folds start cold: a full fit would only centre their first certificates, and at
        # ROUGH_START_TOL its ball decided no fold of 20 configurations (StandardScaler(with_mean=False) +
        # LinearSVC on sparse Gaussian data, 5- and 10-fold, 308 × 927 to 1128 × 1383); the start given (or
        # 0) centres them instead
        return (coef, intercept), None, None

    def solved(c):  # one-vs-rest: each class against the rest; (coef, intercept, the Hessian its solve left)
        targets, at = np.where(codes == c, 1.0, -1.0), (coef if n_classes == 2 else coef[c],
                                                        float(intercept if n_classes == 2 else intercept[c]))
        if exact:  # (solved, then polished to rounding)
            return (*solve_held_out(X, targets, model.loss, penalty, model.fit_intercept, *at, None, TOL_ROUNDING,
                                    method), None)
        # (LIBLINEAR's folds, where every fold holds out many rows, take nothing from it but a first certificate's
        # centre: to ROUGH_START_TOL, as the engine's, see glru.cross_validation.cross_validate's start_tol)
        tol = PRIMAL_START_TOL if primal_start else ROUGH_START_TOL if rough and method.startswith("liblinear") else \
            START_TOL
        problem = Problem(X, targets, model.loss, penalty, model.fit_intercept)
        fit = solve(problem, *at, tol=tol, method=method)
        return fit.coef, fit.intercept, problem.known_hessian
    with blas_for(X):
        solutions = [solved(c) for c in ([1] if n_classes == 2 else range(n_classes))]
    if n_classes == 2:
        coef, intercept, known = solutions[0]
        return (coef, intercept), None, known
    return (np.vstack([c for c, _, _ in solutions]), np.array([b for _, b, _ in solutions], dtype=float)), None, None


START_TOL = 1e-8  # relative gap of a full fit that only starts the folds (see _full_fit)

# a multinomial full fit that only starts folds holding out at least ROUGH_START_SHARE of the rows each: its
# folds start 0.6–1.4 (relative gap) from their optima whatever it is (digits with a StandardScaler, 5-fold), and
# took 284 Hessian products from the full fit at 0.1 (L-BFGS, then its Hessian factored there) against 251 from it
# at 1e-13 and polished (two factorizations and six Newton steps more)
MULTINOMIAL_ROUGH_TOL = 0.1


def _rough_full_fit(model, X_in, single, codes, scaling, start):
    """(coef, intercept) of the binary ``model`` on all rows of ``X_in`` (X validated by
    :func:`check_X`; ``single``, its :func:`glru.fold_steps.single_precision`), as the per-feature
    ``scaling`` (a, c) outputs them, to the relative gap :func:`rough_start_tol` only: the start
    of folds that all take their Newton–CG steps together, each holding out at least
    ``ROUGH_START_SHARE`` of the rows, and their preconditioner's point. Solved by those same
    steps, a fold that drops no row (:func:`glru.fold_steps.scaled_fold_starts`, on X as given),
    from ``start`` where it has the shapes (a neighbouring grid point's), else from zeros."""
    scales, shifts = scaling
    n, d = X_in.shape[0], scales.size
    coef, intercept = start if start is not None and start[0].shape == (d,) else (np.zeros(d), 0.0)
    z = np.append(coef, intercept) if model.fit_intercept else coef
    with blas_for(X_in):
        z = scaled_fold_starts(X_in, np.where(codes == 1, 1.0, -1.0), model.loss, model.fit_intercept,
                               [np.empty(0, dtype=int)], np.array([n * model.penalty_for(n).lam]), scales[:, None],
                               shifts[:, None], z[:, None], gap=rough_start_tol(X_in), single=single)[0][:, 0]
    return (z[:-1], float(z[-1])) if model.fit_intercept else (z, 0.0)


# where every fold, holding out at least 1/40 of the rows, takes its Newton–CG steps with the others, the full fit
# is their start and their preconditioner's point only: with a StandardScaler, 5- to 40-fold, the folds took as
# many steps (±1 %) from a full fit at 1e-4 as at 1e-8 on the shapes of --pipeline-shapes and --five-fold
# (benchmarks/bench_cross_validation.py), whose full fits took 20–60 fewer Hessian products; on leave-one-out,
# 5 % more (neg_log_loss; 11 % more, folds solved each alone, accuracy). The steps of the folds took it there in
# 56–66 products where SciPy's trust-region Newton–CG took 73–97 (binary 20000 × 500, C = 1 and 100; sparse
# exponential 30000 × 800), 20–25 % less time
ROUGH_START_TOL, ROUGH_START_SHARE = 1e-4, 1 / 40

# … and where X has at least as many rows as columns, to 0.1: the folds took −10 % to +9 % block columns from there
# (a column of a block costs a fraction of a single product) and 30–50 % fewer single-column products (the full
# fit's, and those of folds finishing alone), against 1e-4: binary 20000 × 500 5-fold at C = 0.01, 1 and 100
# 63 → 40, 144 → 89, 207 → 158; sparse exponential 176 → 98; dense 20000 × 600 79 → 58; 10-fold Gaussian
# 10000 × 1000 180 → 92, binary 5000 × 3000 307 → 154, synthetic sparse 4000 × 2000 177 → 99, madelon.t
# 178 → 110. With fewer rows than columns the folds took more (sparse 2000 × 5000 97 → 120 single products and
# 1358 → 1417 columns; Gaussian 1000 × 20000 +86 columns)
ROUGH_WIDE_START_TOL = 0.1

# LIBLINEAR's full fit of a Pipeline's LinearSVC (glru.fold_refit.start_by_liblinear), to 0.5: its first run,
# at LIBLINEAR's tolerance 1e-2. Against 1e-4 (two runs more), StandardScaler(with_mean=False) + LinearSVC, 5-fold:
# sparse Gaussian 8000 × 1000 at C = 0.1 (folds by LIBLINEAR) 196–200 → 171–177 ms, 4000 × 600 69–73 → 67–73 ms,
# 6000 × 400 (folds by semismooth Newton) 105–121 → 104–118 ms
PRIMAL_START_TOL = 0.5


def _starts_only(refit, tests, n_samples):
    """Whether a full fit only starts the folds (and may be rough): no ``estimator_`` is asked for
    (not ``refit``) and every fold's held-out rows ``tests`` are at least ``ROUGH_START_SHARE`` of
    the ``n_samples`` rows."""
    return not refit and min(test.size for test in tests) >= ROUGH_START_SHARE * n_samples


def rough_start_tol(X):
    """The relative gap of :func:`_rough_full_fit` on X (``ROUGH_WIDE_START_TOL`` where X has at
    least as many rows as columns, else ``ROUGH_START_TOL``)."""
    return ROUGH_WIDE_START_TOL if X.shape[0] >= X.shape[1] else ROUGH_START_TOL


def _stepping_input(preprocessing, model, X, codes):
    """X validated (:func:`check_X`) where the binary folds of a Pipeline whose steps learn from
    the training rows may take their Newton–CG steps together (:func:`_starts_together`), else
    None: its one step is a per-feature scaler (:func:`~sklearn_ext._adapters.scales_per_feature`),
    the model's intercept is unpenalized or absent, X is finite, and the steps pay off
    (:func:`glru.fold_refit.steps_together_pay_off`, on the scaler's output's shape and sparsity,
    which are X's)."""
    if len(preprocessing.steps) != 1 or model.intercept_scaling is not None or \
            not scales_per_feature(preprocessing[-1]):
        return None
    try:
        X_in = check_X(X)
    except (TypeError, ValueError):  # (NaN or infinity: the scaler's own fit on the full data reports them)
        return None
    pays_off = steps_together_pay_off(Problem(X_in, np.where(codes == 1, 1.0, -1.0), model.loss,
                                              model.penalty_for(X_in.shape[0]), model.fit_intercept))
    return X_in if pays_off else None


# the largest |c| of a fold's scaling a∘x + c at which its Newton–CG steps' rows (a∘x + c, on X as given) agree with
# its scaler's output to rounding: where the columns' offsets exceed 16 spreads, a∘x and c cancel in the steps'
# products and their polished point is polished again on the fold's own data (offsets of 1e4 and 1e6 on an
# ill-conditioned 400 × 300 fold: log-losses 8e-12 and 2e-10 off exact refits, 1e-16 after that polish)
SHIFT_TRUSTED = 16.0


def _reduced_precision(X):
    """Whether X (an array, a sparse matrix or a DataFrame) holds float32 or float16 values, which
    scikit-learn's scalers keep in that precision."""
    dtypes = getattr(X, "dtypes", None)  # (a DataFrame's, one a column)
    dtypes = [getattr(X, "dtype", None)] if dtypes is None or isinstance(dtypes, np.dtype) else list(dtypes)
    return any(isinstance(t, np.dtype) and t in (np.float32, np.float16) for t in dtypes)


def _fitted_scalings(preprocessing, X, y, trains):
    """(the steps fitted on each of the ``trains`` rows, their (a, c) as the columns of scales and
    shifts) for a Pipeline whose one step is a per-feature scaler."""
    fitted = [clone(preprocessing).fit(_safe_indexing(X, train), y[train]) for train in trains]
    scalings = [affine_scaling(steps[-1]) for steps in fitted]
    return fitted, np.column_stack([a for a, _ in scalings]), np.column_stack([c for _, c in scalings])


def _starts_together(model, X_in, single, codes, splits, start, old, scales, shifts, previous, polish):
    """(start (coef, intercept), whether the start is polished to rounding level, the fold's
    v ↦ M_j⁻¹v or None) for the binary folds of the (training, held-out) ``splits`` of a
    Pipeline whose one step is a per-feature scaler, z = a_j∘x + c_j for fold j (the columns of
    ``scales`` and ``shifts``, fitted or estimated: only starts), the full fit ``start`` in the
    scaling ``old`` = (a, c): Newton–CG steps for all of them together on X as given
    (:func:`glru.fold_steps.scaled_fold_starts`), from each fold's ``previous`` point (its
    solution at a neighbouring grid point) where there is one, else from the full fit carried
    over to the fold's scaling, their conjugate gradients preconditioned by the full fit's
    Hessian where that pays off (:func:`glru.fold_steps.fold_preconditioner`), and with ``polish``
    (the folds' values are needed) on to rounding level, else on to it where their held-out signs
    look open. Only where :func:`_stepping_input`. ``X_in``, ``single``: as :func:`_rough_full_fit`'s."""
    targets = np.where(codes == 1, 1.0, -1.0)
    n = X_in.shape[0]
    points, dropped, strengths = [], [], []
    for j, ((train, _), at) in enumerate(zip(splits, previous)):
        coef, intercept = at if at is not None and at[0].shape == start[0].shape else \
            model.carried_over(*start, old, (scales[:, j], shifts[:, j]))
        points.append(np.append(coef, intercept) if model.fit_intercept else coef)
        dropped.append(outside(train, n))
        strengths.append(train.size * model.penalty_for(train.size).lam)
    with blas_for(X_in):
        preconditioner = fold_preconditioner(X_in, targets, model.loss, model.fit_intercept, *start,
                                             n * model.penalty_for(n).lam, scales, shifts, old, single)
        Z, polished = scaled_fold_starts(X_in, targets, model.loss, model.fit_intercept, dropped, np.array(strengths),
                                         scales, shifts, np.column_stack(points), preconditioner=preconditioner,
                                         polish=polish, held_out=None if polish else [test for _, test in splits],
                                         single=single)
    return [((z[:-1], float(z[-1])) if model.fit_intercept else (z, 0.0), done,
             None if preconditioner is None else preconditioner.of_fold(j))
            for j, (z, done) in enumerate(zip(Z.T, polished))]


def _folds_method(full, start, tests):
    """``"liblinear"`` where the binary folds, holding out the rows ``tests``, are solved faster by
    LIBLINEAR's trust-region Newton than by their own :func:`glru.fold_refit.fold_method`
    (:func:`glru.fold_refit.liblinear_pays_off`, judged on the ``full`` problem at the full fit
    ``start``, with the Hessian its solve left, if any, as its ``known_hessian``), else None."""
    with blas_for(full.X):
        return "liblinear" if liblinear_pays_off(full, *start, tests) else None


def _start_gram(preprocessing, full, start):
    """The :class:`~glru.fold_hessian.StartGram` of the ``full`` binary problem at the full fit
    ``start`` (from its ``known_hessian``, where that is for its curvatures), from
    which each binary fold's first Hessian is computed (:meth:`LinearModel.fold_mapping`), where
    that pays (:func:`glru.fold_refit.start_gram_pays_off`: the folds take semismooth Newton steps)
    and they start from the full fit carried over to their scaling by one per-feature scaler; else
    None."""
    if len(preprocessing.steps) != 1 or not start_gram_pays_off(full):
        return None
    with blas_for(full.X):
        return StartGram(full.X, full.y, full.loss, *start, full.fit_intercept, full.known_hessian, full.penalty)


def _refit_learned_fold(preprocessing, model, X, y, codes, n_classes, split, start, old, need, previous=None,
                        fitted_steps=None, polished=False, preconditioner=None, stepped=False, rows=None,
                        start_gram=None, method=None, learned_eps=None):
    """(fitted steps, held-out outcome) of one split whose steps learn from its training rows;
    the fold starts from the full fit (``start``) where the dimensions agree, or (binary) from
    ``previous``: its solution at a neighbouring grid point if that has the smaller duality
    gap, or, ``stepped``, where its Newton–CG steps with the other folds ended
    (:func:`_starts_together`). Where the last step is a per-feature scaler and the full fit's
    rows were scaled by ``old`` = (a, c) (None for other steps), the full fit is first carried
    over to the fold's scaling (:meth:`LinearModel.carried_over`: the same decision values): on
    leave-one-out its bounds then decide most held-out labels. ``fitted_steps``: the steps
    fitted on the split's training rows already, if they are (else fitted here);
    ``polished``: whether those Newton–CG steps polished ``previous`` to rounding level.
    ``preconditioner``: what the fold's solve is preconditioned with, or None: a binary fold's
    v ↦ M_j⁻¹v from those steps, for its polish; a multinomial fold's, the full fit's factorized
    Hessian (:func:`_full_fit`). ``rows``: the :class:`_FoldRows` the folds share, where they run one
    after another. ``start_gram``: :func:`_start_gram`'s, or None. ``method``: a binary fold's solve
    method, :func:`_folds_method`'s (None: the fold's own :func:`glru.fold_refit.fold_method`).
    ``learned_eps``: the :class:`~glru.solver.LearnedDualTolerance` the folds share, where they run one
    after another."""
    train, test = split
    designs = _fold_designs(preprocessing, model, X, y, split, fitted_steps, rows)
    if isinstance(designs, _StepFailed):
        return designs
    steps, X_train, X_test = designs
    coef, intercept = start
    new = affine_scaling(steps[-1])
    known_hessian = None
    if old is not None and new is not None and not stepped:  # (a stepped fold starts where its steps ended)
        coef, intercept = model.carried_over(coef, intercept, old, new)
        mapping = model.fold_mapping(old, new) if start_gram is not None else None
        if mapping is not None:  # (computed where the fold's solve forms a Hessian)
            known_hessian = functools.partial(start_gram.fold_hessian, train, test, X_test,
                                              model.penalty_for(train.size), *mapping)
    if coef.shape[-1] != X_train.shape[1]:  # a step whose output width depends on the rows: from 0
        coef, intercept = np.zeros(coef.shape[:-1] + (X_train.shape[1],)), np.zeros_like(intercept)
    penalty = model.penalty_for(train.size)
    with blas_for(X_train, coef.size + np.size(intercept)):  # (a multinomial fold factors all the classes' unknowns)
        if n_classes == 2:
            if stepped:  # where its Newton–CG steps with the other folds ended, from this start
                starts = [previous]  # (or a neighbouring grid point's): no gap to compare
            else:
                starts = [(coef, intercept)] + ([previous] if previous is not None and previous[0].shape == coef.shape
                                                else [])
            outcome = refit_fold(X_train, np.where(codes[train] == 1, 1.0, -1.0), X_test, model.loss, penalty,
                                 model.fit_intercept, starts, need, polished, preconditioner, stepped, known_hessian,
                                 method, learned_eps)
        elif model.multiclass == "multinomial":
            outcome = refit_multinomial_fold(X_train, codes[train], X_test, penalty.lam, model.fit_intercept, coef,
                                             intercept, need, preconditioner)
        else:
            outcome = refit_one_vs_rest_fold(X_train, codes[train], X_test, model.loss, penalty, model.fit_intercept,
                                             coef, intercept, need)
    if need == "values":  # (the fold's columns: those its steps output)
        outcome.coef = zero_unused_weights(outcome.coef, nonzero_counts(X_train))
    return steps, outcome


def _fold_model(model, outcome, classes, n_features, training_counts):
    """The estimator of a fold's exact solution (:func:`glru.held_out.zero_unused_weights`: the
    weights of the columns its training rows do not use are exactly 0)."""
    return model.fitted(zero_unused_weights(outcome.coef, training_counts), outcome.intercept, classes, n_features)


def _multiclass_bounds(tests, outcomes, n_classes):
    """``decision_bounds_`` of multiclass folds: (n_held_out, n_classes, 2), NaN for a class a
    fold's training rows miss."""
    bounds = np.full((sum(t.size for t in tests), n_classes, 2), np.nan)
    start = 0
    for test, outcome in zip(tests, outcomes):
        rows = slice(start, start + test.size)
        bounds[rows, outcome.classes, 0], bounds[rows, outcome.classes, 1] = outcome.lower, outcome.upper
        start += test.size
    return bounds


def cross_validate_multiclass(model, X_model, y, classes, folds, need, **parallel):
    """Exact cross-validation of a target with ≥ 3 ``classes``, fitted as ``model`` fits it:
    one multinomial model (:mod:`glru.multinomial_cv`) or one-vs-rest (:mod:`glru.one_vs_rest`).
    ``parallel``: ``n_jobs``, ``verbose``, ``pre_dispatch``."""
    codes = np.searchsorted(classes, y)
    if model.multiclass == "multinomial":
        return cross_validate_multinomial(model.design(X_model), codes, classes.size, folds,
                                          lambda n_train: model.penalty_for(n_train).lam, model.fit_intercept,
                                          need=need, **parallel)
    return cross_validate_one_vs_rest(model.design(X_model), codes, classes.size, model.loss, folds,
                                      model.penalty_for, model.fit_intercept, need=need, **parallel)


def check_target(y, model):
    """Raise :class:`Unsupported` for a target glru cannot compute ``model``'s fit of: neither
    binary nor multiclass, or a multiclass fit :func:`check_multiclass` rejects."""
    target = type_of_target(y)
    if target not in ("binary", "multiclass"):
        raise Unsupported(f"the target is {target} (binary and multiclass targets are)")
    if target == "multiclass":
        check_multiclass(model)


def check_multiclass(model):
    """Raise :class:`Unsupported` for a model whose multiclass fit glru cannot compute exactly."""
    if model.multiclass is None:
        raise Unsupported(f"this scikit-learn's {type(model.estimator).__name__}(solver='liblinear') does not fit "
                          "multiclass targets")
    if model.multiclass == "multinomial" and model.l1_ratio > 0:
        raise Unsupported(f"multinomial multiclass {type(model.estimator).__name__} with an L1 term "
                          f"(l1_ratio={model.l1_ratio!r}) is not supported (L2 only)")


def cross_val_score(estimator, X, y=None, *, groups=None, scoring=None, cv=None, n_jobs=None, verbose=0,
                    params=None, pre_dispatch="2*n_jobs", error_score=np.nan):
    """Drop-in :func:`sklearn.model_selection.cross_val_score`, exact and certified.

    Same signature, defaults and return value. Supported estimators (see
    :class:`GLRUCrossValidator`) get the scores of exact refits; anything else, and ``params``
    (fit parameters are not supported), runs scikit-learn's own function with a
    :class:`FallbackWarning`.

    Returns
    -------
    scores : ndarray of shape (n_splits,)
    """
    if params:
        warnings.warn(f"glru does not support fit parameters ({sorted(params)}); running scikit-learn's "
                      "cross_val_score instead.", FallbackWarning, stacklevel=2)
        return model_selection.cross_val_score(
            estimator, X, y, groups=groups, scoring=scoring, cv=cv, n_jobs=n_jobs, verbose=verbose,
            params=params, pre_dispatch=pre_dispatch, error_score=error_score)
    if y is None:
        raise ValueError("glru's cross_val_score needs y (supervised linear classifiers only).")
    validator = GLRUCrossValidator(estimator, cv=cv, scoring=scoring, n_jobs=n_jobs, verbose=verbose,
                                   pre_dispatch=pre_dispatch, error_score=error_score)
    return validator._fit(X, y, groups=groups, refit=False).scores_


class HeldOutPredictions(ClassifierMixin, BaseEstimator):
    """A stand-in estimator that returns a fold's exact held-out predictions to a scorer.

    Label-based scorers call only ``predict`` (or ``score``, which is accuracy on it), so
    handing them these labels gives exactly the score of the exact refit. With ``regression``,
    ``labels`` are the predicted values and ``score`` is R², as a regressor's.
    """

    def __init__(self, classes, labels, regression=False):
        self.classes, self.labels, self.regression = classes, labels, regression

    def fit(self, X=None, y=None):  # the estimator protocol (check_is_fitted) wants one; nothing to learn
        return self

    def predict(self, X):
        if _num_samples(X) != len(self.labels):  # (X as given: a list where the user passed one)
            raise ValueError(f"X has {_num_samples(X)} rows; these predictions are for {len(self.labels)}.")
        return self.labels if self.regression else np.asarray(self.classes)[self.labels]

    def score(self, X, y, sample_weight=None):
        if self.regression:
            return RegressorMixin.score(self, X, y, sample_weight=sample_weight)
        return ClassifierMixin.score(self, X, y, sample_weight=sample_weight)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        if self.regression:
            tags.estimator_type, tags.classifier_tags, tags.regressor_tags = "regressor", None, RegressorTags()
        return tags

    @property
    def classes_(self):
        return np.asarray(self.classes)

    def __sklearn_is_fitted__(self):
        return True


def _is_accuracy(scorer):
    if type(scorer).__name__ == "_PassthroughScorer":
        return True
    return getattr(scorer, "_score_func", None) is accuracy_score and not getattr(scorer, "_kwargs", True) \
        and getattr(scorer, "_sign", 0) == 1


def _response_needed(scorer):
    """"labels" when the scorer only calls ``predict`` (or is a classifier's default accuracy),
    else "values" (each fold solved exactly and handed to the scorer as a fitted estimator)."""
    if type(scorer).__name__ == "_PassthroughScorer":
        return "labels"  # the supported classifiers' score() is accuracy on predict()
    method = getattr(scorer, "_response_method", None)
    return "labels" if method in ("predict", ("predict",)) else "values"


def _score(scorer, estimator, X, y, error_score):
    """scorer(estimator, X, y) with scikit-learn's handling of a failing scorer."""
    check_is_fitted(estimator)
    if isinstance(estimator, HeldOutPredictions) and not estimator.regression and _is_accuracy(scorer):
        # accuracy_score's own arithmetic, without its ~1 ms of validation per call (n calls in LOO)
        return float(np.average(estimator.predict(X) == y))
    try:
        return scorer(estimator, X, y)
    except Exception:
        if error_score == "raise":
            raise
        warnings.warn("Scoring failed. The score on this train-test partition for these parameters will be "
                      f"set to {error_score}.", UserWarning, stacklevel=3)
        return error_score
