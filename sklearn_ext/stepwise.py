"""Exact sequential feature selection: :class:`GLRUStepwiseSelector`, a drop-in
:class:`~sklearn.feature_selection.SequentialFeatureSelector` whose candidate fits are replaced
by certificates wherever they decide the answer.

Each step scores every candidate feature set by its mean cross-validation score, as
scikit-learn does; the selected feature is the one with the highest mean, ties going to the
lowest feature index (``max`` over candidates in index order). glru computes, per candidate
and fold, certified intervals on the held-out decision values (:mod:`glru.stepwise`); a label
inside a certified interval of one sign is the exact refit's label. With accuracy scoring
(the default for classifiers) the certified labels bound each candidate's mean score; a
candidate is trained only while its upper bound can still beat (or tie from a lower index)
the best exact score found, most promising first (the paper's Algorithm 5). Other label
scorers get every undecided label resolved; value scorers (roc_auc, neg_log_loss, …) get
every candidate solved exactly, warm-started at its certified centre.

One difference from scikit-learn, on purpose: in backward mode with
``n_features_to_select="auto"`` and a ``tol``, scikit-learn always removes a first feature
(its first comparison is against −∞). Here the first removal is compared with the score of
all features, so nothing is removed when every removal lowers the score by more than
``-tol`` (scikit-learn's pull request #34416 proposes the same).
"""

import numbers
import time
import warnings

import numpy as np
from joblib import effective_n_jobs
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone, is_classifier
from sklearn.feature_selection import SequentialFeatureSelector
from sklearn.feature_selection._base import SelectorMixin
from sklearn.metrics import check_scoring
from sklearn.model_selection import check_cv
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from glru.stepwise import FeatureSearch

from ._adapters import Unsupported, linear_model, split_pipeline
from .cross_validation import (FallbackWarning, GLRUCrossValidator, HeldOutPredictions, _is_accuracy, _response_needed,
                               _score, check_target, split_folds, trainable_folds)

__all__ = ["GLRUStepwiseSelector"]


class GLRUStepwiseSelector(SelectorMixin, MetaEstimatorMixin, BaseEstimator):
    """Sequential feature selection with exact, certified candidate scores.

    Parameters
    ----------
    estimator : estimator
        ``LogisticRegression`` (L2, or elastic net with ``l1_ratio < 1``) or ``LinearSVC``
        (squared hinge, L2). Binary targets get certified candidates per fold; multiclass
        targets (one-vs-rest ``LinearSVC``, multinomial ``LogisticRegression`` with L2) score
        every candidate by the exact cross-validation of :class:`GLRUCrossValidator`. Anything
        else (including Pipelines with preprocessing steps) runs scikit-learn's
        :class:`~sklearn.feature_selection.SequentialFeatureSelector` with a
        :class:`~sklearn_ext.FallbackWarning` that says why.
    n_features_to_select : "auto", int or float, default="auto"
        As in scikit-learn: with ``"auto"``, half of the features when ``tol`` is None, else
        as many steps as improve the score by at least ``tol``; an int is a count, a float in
        (0, 1] a fraction.
    tol : float, default=None
        Stop when a step changes the score by less than ``tol`` (``"auto"`` only). Must be
        positive for forward selection; may be negative backward.
    direction : {"backward", "forward"}, default="backward"
    scoring : str, callable or None, default=None
        As in :func:`sklearn.model_selection.cross_val_score`.
    cv : int, cross-validation generator or iterable, default=5
        As in scikit-learn; ``[(train, valid)]`` is the paper's single validation split.
    n_jobs : int, default=None
        Parallel candidate solves through joblib (a ``joblib.parallel_backend`` applies).
    verbose : int, default=0
        Print one line per step (≥ 1); joblib's own messages for the solves (≥ 2).

    Attributes
    ----------
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Defined when X has string feature names.
    n_features_to_select_ : int
        The number of features selected.
    support_ : ndarray of shape (n_features_in_,), dtype=bool
    history_ : list of dict
        Per step: ``feature`` removed or added, its mean CV ``score``, ``n_candidates``,
        ``n_trained`` (candidates iterated toward their optimum or solved), ``n_certified``
        (candidates whose score was exact from the first certificates alone), ``n_excluded``
        (candidates whose bounds excluded them before any training) and the step's wall-clock
        ``seconds``. A step that stopped the selection (``tol``) is recorded with
        ``"stopped": True`` and its feature is not applied.
    initial_score_ : float or None
        Backward with ``"auto"`` and ``tol``: the score with all features.
    n_retrained_ : int
        Candidate-fold problems handed to the general solver over the whole selection (the
        others were certified, or settled by batched Newton steps).
    fallback_reason_ : str or None
    """

    _parameter_constraints = {
        **SequentialFeatureSelector._parameter_constraints,
        "verbose": ["verbose"],
    }

    def __init__(self, estimator, *, n_features_to_select="auto", tol=None, direction="backward", scoring=None,
                 cv=5, n_jobs=None, verbose=0):
        self.estimator, self.n_features_to_select, self.tol = estimator, n_features_to_select, tol
        self.direction, self.scoring, self.cv, self.n_jobs, self.verbose = direction, scoring, cv, n_jobs, verbose

    def fit(self, X, y=None):
        """Select features of X for predicting y.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : object
        """
        self._validate_params()
        X = validate_data(self, X, accept_sparse="csr", ensure_min_features=2, dtype=np.float64)
        if y is None:
            raise ValueError("GLRUStepwiseSelector needs y (supervised linear classifiers only).")
        y = column_or_1d(y, warn=True)
        if y.shape[0] != X.shape[0]:
            raise ValueError(f"Found input variables with inconsistent numbers of samples: [{X.shape[0]}, {y.shape[0]}]")
        n_features = X.shape[1]
        self.n_features_to_select_ = self._count_to_select(n_features)
        if self.tol is not None and self.tol < 0 and self.direction == "forward":
            raise ValueError("tol must be strictly positive when doing forward selection")
        cv = check_cv(self.cv, y, classifier=is_classifier(self.estimator))
        scorer = check_scoring(self.estimator, scoring=self.scoring)
        reason = None
        try:
            splits = split_folds(cv, X, y)
            model = self._model(y, splits)
        except Unsupported as error:
            reason = str(error)
        if reason is not None:  # outside the handler: the errors scikit-learn reports do not chain it
            return self._fall_back(X, y, reason)
        self.fallback_reason_ = None
        if np.unique(y).size > 2:
            return self._select_multiclass(X, y, splits)
        return self._select(X, y, splits, scorer, model)

    # ---- scikit-learn's rules
    def _count_to_select(self, n_features):
        if self.n_features_to_select == "auto":
            return n_features - 1 if self.tol is not None else n_features // 2
        if isinstance(self.n_features_to_select, numbers.Integral):
            if self.n_features_to_select >= n_features:
                raise ValueError("n_features_to_select must be < n_features.")
            return self.n_features_to_select
        return int(n_features * self.n_features_to_select)

    def _n_iterations(self, n_features):
        if self.n_features_to_select == "auto" or self.direction == "forward":
            return self.n_features_to_select_
        return n_features - self.n_features_to_select_

    def _model(self, y, splits):
        if isinstance(self.estimator, Pipeline) and \
                any(step not in (None, "passthrough") for _, step in self.estimator.steps[:-1]):
            raise Unsupported("a Pipeline with preprocessing steps (the model's columns are not X's columns)")
        model = linear_model(split_pipeline(self.estimator)[1])
        check_target(y, model)
        if len(trainable_folds(y, splits)) < len(splits):
            raise Unsupported("a training fold holds a single class")
        return model

    # ---- the selection
    def _select(self, X, y, splits, scorer, model):
        """Binary targets: candidates certified per fold (:class:`glru.stepwise.FeatureSearch`)."""
        classes = np.unique(y)
        need = _response_needed(scorer)
        design = model.design(X)
        d = X.shape[1]
        fixed = [d] if design.shape[1] > d else []
        search = FeatureSearch(design, np.where(y == classes[1], 1.0, -1.0), model.loss, splits, model.penalty_for,
                               model.fit_intercept, fixed=fixed, need=need, n_jobs=self.n_jobs,
                               verbose=max(self.verbose - 1, 0))
        judge = _Judge(scorer, need, model, classes, X, y, splits, fixed)
        self.n_retrained_ = 0
        last = {}

        def initial_score():  # all features: the fits the first backward step starts from
            return judge.score([o.held_out() for o in last["step"].current], lambda: np.arange(d))

        def best(selected):
            step = last["step"] = search.step(selected, self.direction)
            position, score, record = judge.best(step, effective_n_jobs(self.n_jobs))
            self.n_retrained_ += record.pop("n_solved")
            return int(step.candidates[position]), score, record, lambda: search.advance(step, position)
        return self._greedy(d, best, initial_score)

    def _select_multiclass(self, X, y, splits):
        """Multiclass targets: every candidate's mean score from the exact cross-validation of
        :class:`GLRUCrossValidator` (certified arg-max labels, open folds solved), computed by
        the same operations as scikit-learn's ``cross_val_score(...).mean()``."""
        d = X.shape[1]
        self.n_retrained_ = 0

        def cv_score(columns):
            validator = GLRUCrossValidator(self.estimator, cv=splits, scoring=self.scoring, n_jobs=self.n_jobs,
                                           verbose=max(self.verbose - 1, 0)).fit(X[:, columns], y)
            self.n_retrained_ += validator.n_retrained_
            return validator.scores_.mean(), validator.n_retrained_

        def best(selected):
            backward = self.direction == "backward"
            candidates = selected if backward else np.setdiff1d(np.arange(d), selected)
            scores, n_trained = {}, 0
            for feature in candidates:
                columns = np.setdiff1d(selected, [feature]) if backward else np.union1d(selected, [feature])
                scores[feature], retrained = cv_score(columns)
                n_trained += retrained > 0
            feature = max(scores, key=lambda f: scores[f])  # scikit-learn's rule: the first best
            record = dict(n_candidates=len(candidates), n_trained=n_trained, n_certified=len(candidates) - n_trained,
                          n_excluded=0)
            return int(feature), float(scores[feature]), record, lambda: None
        return self._greedy(d, best, lambda: cv_score(np.arange(d))[0])

    def _greedy(self, d, best, initial_score):
        """scikit-learn's greedy loop and stopping rules over ``best(selected)`` → (feature,
        score, record, apply) of each step."""
        backward = self.direction == "backward"
        selected = np.arange(d) if backward else np.zeros(0, dtype=np.intp)
        auto = self.tol is not None and self.n_features_to_select == "auto"
        old_score, self.initial_score_ = -np.inf, None
        self.history_ = []
        for _ in range(self._n_iterations(d)):
            started = time.perf_counter()
            feature, score, record, apply = best(selected)
            if auto and backward and not self.history_:
                old_score = self.initial_score_ = initial_score()
            record.update(feature=feature, score=score, seconds=time.perf_counter() - started)
            if auto and score - old_score < self.tol:
                self.history_.append(dict(record, stopped=True))
                break
            self.history_.append(record)
            old_score = score
            selected = np.setdiff1d(selected, [feature]) if backward else np.union1d(selected, [feature])
            apply()
            if self.verbose:
                print(f"[GLRUStepwiseSelector] {'removed' if backward else 'added'} feature {feature}: score "
                      f"{score:.6g}; trained {record['n_trained']} of {record['n_candidates']} candidates", flush=True)
        self.support_ = np.zeros(d, dtype=bool)
        self.support_[selected] = True
        self.n_features_to_select_ = int(self.support_.sum())
        return self

    def _fall_back(self, X, y, reason):
        warnings.warn(f"glru cannot run this selection exactly ({reason}); running scikit-learn's "
                      "SequentialFeatureSelector instead.", FallbackWarning, stacklevel=3)
        self.fallback_reason_ = reason
        selector = SequentialFeatureSelector(
            clone(self.estimator), n_features_to_select=self.n_features_to_select, tol=self.tol,
            direction=self.direction, scoring=self.scoring, cv=self.cv, n_jobs=self.n_jobs).fit(X, y)
        self.support_, self.n_features_to_select_ = selector.support_, selector.n_features_to_select_
        self.history_, self.n_retrained_, self.initial_score_ = None, None, None
        return self

    def _get_support_mask(self):
        check_is_fitted(self)
        return self.support_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


class _Judge:
    """Scores of candidates from their held-out outcomes, exactly as scikit-learn computes them
    (``cross_val_score(...).mean()``), and the choice of the best candidate."""

    def __init__(self, scorer, need, model, classes, X, y, splits, fixed):
        self.scorer, self.need, self.model, self.classes = scorer, need, model, classes
        self.X, self.y, self.splits, self.fixed = X, y, splits, fixed
        self.accuracy = need == "labels" and _is_accuracy(scorer)
        self.X_tests = [X[test] for _, test in splits]

    def score(self, outcomes, features):
        """Mean over folds of the scorer on the outcomes (one per fold) of a model on
        ``features`` (a callable: only value scorers need them)."""
        scores = []
        for outcome, (_, test), X_test in zip(outcomes, self.splits, self.X_tests):
            if self.need == "labels":  # the stand-in ignores X's columns: no need to select them
                estimator = HeldOutPredictions(self.classes, outcome.labels)
            else:
                columns = features()
                estimator = self.model.fitted(outcome.coef, outcome.intercept, self.classes, len(columns))
                X_test = X_test[:, columns]
            scores.append(_score(self.scorer, estimator, X_test, self.y[test], np.nan))
        return np.asarray(scores).mean()

    def upper_bound(self, outcomes):
        """An upper bound on the mean accuracy: every label not certified wrong counted right,
        by the same floating-point operations as the exact score (monotone in each count), so
        the bound holds in floating point too."""
        upper = []
        for outcome, (_, test) in zip(outcomes, self.splits):
            wrong = outcome.decided & ((outcome.lower > 0) != (self.y[test] == self.classes[1]))
            upper.append(float(np.average(~wrong)))
        return np.asarray(upper).mean()

    def best(self, step, batch):
        """(position, exact score, record) of the best candidate of ``step``: highest mean score,
        the lowest feature index among ties."""
        n = step.candidates.size

        def features(p):
            return np.setdiff1d(step.candidate_support(p), self.fixed)

        def column(p):
            return [outcomes[p] for outcomes in step.outcomes]
        exact, upper = {}, np.full(n, np.inf)
        for p in range(n):
            if not step.open_pairs(p):
                exact[p] = self.score(column(p), lambda: features(p))
            elif self.accuracy:
                upper[p] = self.upper_bound(column(p))
        n_certified = len(exact)
        trained, n_solved = set(), 0
        best = max(exact, key=lambda p: (exact[p], -p)) if exact else None
        waiting = [p for p in range(n) if p not in exact]
        while waiting:
            if best is not None:  # what cannot beat the best (or tie it from a lower index) is out
                waiting = [p for p in waiting if upper[p] > exact[best] or (upper[p] == exact[best] and p < best)]
            if not waiting:
                break
            waiting.sort(key=lambda p: (-upper[p], p))
            if self.need == "labels":  # a chord step for all of them; what cannot step is solved
                chosen, stuck = waiting, step.refine(waiting)
                n_solved += step.resolve(stuck)
            else:  # values: every candidate is solved exactly, the most promising first
                chosen = waiting[:batch]
                n_solved += step.resolve(chosen)
            trained.update(chosen)
            for p in chosen:
                if step.open_pairs(p):
                    if self.accuracy:
                        upper[p] = self.upper_bound(column(p))
                    continue
                exact[p] = self.score(column(p), lambda: features(p))
                if best is None or (exact[p], -p) > (exact[best], -best):
                    best = p
            waiting = [p for p in waiting if p not in exact]
        record = dict(n_candidates=n, n_trained=len(trained), n_certified=n_certified,
                      n_excluded=n - n_certified - len(trained), n_solved=n_solved)
        return best, float(exact[best]), record
