"""Exact grid search over the regularization of linear classifiers: :class:`GLRUSearchCV`, a
drop-in :class:`~sklearn.model_selection.GridSearchCV`.

Every grid point's cross-validation scores are those of every fold fitted to its exact optimum,
computed by :class:`~sklearn_ext.GLRUCrossValidator` (certified held-out labels; most folds are
never trained). Grid points are evaluated from strong to weak regularization (small to large
``C``) and reported in :class:`~sklearn.model_selection.ParameterGrid` order, as GridSearchCV
reports them. Along that path each binary full-data fit starts from the previous one's optimum
(``cross_validate(..., init=...)``); the starts change only the time, never a score.

With ``prune=True`` and accuracy scoring, each grid point first gets a certified interval on its
mean score from one full fit and one Newton step per fold, without training any fold
(``glru.cross_validation.cross_validate(..., solve_open=False)``). Grid points are then
evaluated exactly by decreasing upper bound; a point whose upper bound is below the best exact
mean found, or equal to it with a later grid index (ties go to the first index, as in
GridSearchCV), cannot be the best and is not evaluated. ``best_params_``, ``best_score_`` and
``best_index_`` are GridSearchCV's.
"""

import numbers
import time
import warnings
from collections import defaultdict

import numpy as np
from numpy.ma import MaskedArray
from scipy.stats import rankdata
from sklearn.base import clone, is_classifier
from sklearn.metrics import check_scoring
from sklearn.model_selection import GridSearchCV, ParameterGrid, check_cv
from sklearn.pipeline import Pipeline
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_consistent_length, check_X_y, column_or_1d, indexable

from glru.cross_validation import cross_validate
from glru.ridge import held_out_predictions

from ._adapters import (Unsupported, is_ridge, learns_from_rows, linear_model, model_input, pipeline_steps,
                        ridge_alpha, split_pipeline)
from .cross_validation import (FallbackWarning, GLRUCrossValidator, HeldOutPredictions, _is_accuracy,
                               _response_needed, _score, check_multiclass, cross_validate_multiclass, split_folds,
                               trainable_folds)

__all__ = ["GLRUSearchCV"]

# the estimator parameters glru can vary exactly (of the final step of a Pipeline)
REGULARIZATION = ("C", "l1_ratio")


class GLRUSearchCV(GridSearchCV):
    """Exhaustive search over a grid of ``C`` (and ``l1_ratio``) with exact cross-validation scores.

    Same parameters (except ``pre_dispatch`` and ``error_score``, fixed at GridSearchCV's
    defaults), attributes and methods as :class:`~sklearn.model_selection.GridSearchCV`, plus
    ``prune``. Each score equals what GridSearchCV returns when every fit reaches its exact
    optimum.

    Parameters
    ----------
    estimator : estimator
        ``LogisticRegression`` (L2, or elastic net with ``l1_ratio < 1``), ``LinearSVC``
        (squared hinge, L2), ``Ridge``, or a Pipeline ending in one of them (see
        :class:`~sklearn_ext.GLRUCrossValidator`; multiclass: one-vs-rest, or multinomial
        ``LogisticRegression`` with L2). Steps that learn from the training rows (a
        ``StandardScaler``, an imputer; not before ``Ridge``) are fitted on each fold's rows and
        every fold is solved exactly on their output, unless the bounds at the full fit carried
        over to its scaling decide its labels; ``prune`` has no effect (``return_train_score=True``
        solves every fold to rounding level and scores its model on its training rows). Anything else,
        multinomial multiclass with an L1 term, multi-metric scoring and fit parameters run
        scikit-learn's GridSearchCV with a :class:`~sklearn_ext.FallbackWarning` that says why.
    param_grid : dict or list of dicts
        As in GridSearchCV. Grids (dicts) over ``C`` and ``l1_ratio`` only (``<step>__C`` for the
        last step of a Pipeline), or over ``alpha`` only for a ``Ridge`` (every alpha at once, in
        closed form: :func:`glru.ridge.held_out_predictions`), are computed exactly; a dict with any other parameter, and grid
        points with values glru cannot map (e.g. ``l1_ratio=1``), are computed by GridSearchCV
        on the same splits, with a :class:`~sklearn_ext.FallbackWarning`.
    scoring : str, callable or None, default=None
        As in GridSearchCV (a list, tuple or dict of metrics falls back).
    cv : int, cross-validation generator or iterable, default=None
    n_jobs : int, default=None
        Parallel fold solves through joblib (and GridSearchCV's jobs when falling back).
    refit : bool, str or callable, default=True
        As in GridSearchCV. The best estimator is refitted by its own ``fit`` on all rows, as
        GridSearchCV does.
    verbose : int, default=0
        One line per grid point (≥ 1); the cross-validation's messages (≥ 2).
    return_train_score : bool, default=False
        Training scores of each fold's exact fit: every fold is solved to rounding level (or
        until its decision values are certified to relative width 1e-9), then scored on its
        training rows.
    prune : bool, default=False
        With accuracy scoring (``scoring=None`` for the supported classifiers, or
        ``"accuracy"``): skip grid points whose certified score interval shows they cannot be
        the best. Every point's certified interval (from the certificates alone, before any
        fold is trained) is in ``mean_test_score_lower`` / ``mean_test_score_upper``. Pruned
        points have NaN scores in ``cv_results_`` (mean, std and split scores) and all share
        the rank after the last evaluated point
        (number of evaluated points + 1). With any other scorer, a callable ``refit`` or folds
        whose training rows hold one class, nothing is pruned (a warning says why).

    Attributes
    ----------
    cv_results_ : dict of ndarrays
        GridSearchCV's keys. ``mean_fit_time`` and ``mean_score_time`` of a point computed
        exactly are its time per split, amortized (the folds are not trained separately), and
        their std is 0. With ``prune=True`` also ``mean_test_score_lower``,
        ``mean_test_score_upper`` (certified bounds on the mean score from the certificates
        alone; they contain the exact mean of every evaluated point), ``certify_time`` (seconds spent on the point's interval, included in
        its ``mean_fit_time``) and ``pruned`` (bool).
    best_estimator_, best_score_, best_params_, best_index_, scorer_, n_splits_, refit_time_,
    multimetric_, classes_, n_features_in_, feature_names_in_ :
        As in GridSearchCV.
    n_pruned_ : int
        Grid points not evaluated (``prune=True``).
    fallback_reason_ : str or None
        Why GridSearchCV computed all or part of the grid, if it did.
    """

    _parameter_constraints = {
        **{k: v for k, v in GridSearchCV._parameter_constraints.items() if k not in ("pre_dispatch", "error_score")},
        "prune": ["boolean"],
    }

    # GridSearchCV's defaults, read by the inherited methods; not parameters of this estimator
    pre_dispatch = "2*n_jobs"
    error_score = np.nan

    def __init__(self, estimator, param_grid, *, scoring=None, cv=None, n_jobs=None, refit=True, verbose=0,
                 return_train_score=False, prune=False):
        self.estimator, self.param_grid, self.scoring, self.cv = estimator, param_grid, scoring, cv
        self.n_jobs, self.refit, self.verbose = n_jobs, refit, verbose
        self.return_train_score, self.prune = return_train_score, prune

    def fit(self, X, y=None, **params):
        """Run fit with all sets of parameters.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        **params : dict
            ``groups`` for the splitter; any other fit parameter falls back to GridSearchCV.

        Returns
        -------
        self : object
        """
        self._validate_params()
        candidates = list(ParameterGrid(self.param_grid))  # GridSearchCV's checks of the grid
        X, y = indexable(X, y)
        params = dict(params)
        groups = params.pop("groups", None)
        reason = self._reason_for_scikit_learn(params)
        exact, reasons = {}, {}  # grid index -> (estimator, LinearModel) / why GridSearchCV computes it
        if reason is None:
            for i, point in enumerate(candidates):
                estimator = clone(self.estimator).set_params(**clone(point, safe=False))
                try:
                    exact[i] = (estimator, _model(estimator, point))
                except Unsupported as why:
                    reasons[i] = str(why)
            if not exact:
                reason = "; ".join(dict.fromkeys(reasons.values()))
        if reason is None:
            if y is None:
                raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None.")
            ridge = all(isinstance(model, RidgeModel) for _, model in exact.values())
            learned = learns_from_rows(self.estimator)
            if learned:  # the steps see X as given (a DataFrame, missing values for an imputer, ...)
                check_consistent_length(X, y)
                X_valid, y_valid = X, column_or_1d(y, warn=True)
                steps, X_model = None, X
            else:  # (NaN or infinity: GridSearchCV reports it, per fit, then raises in its refit)
                X_valid, y_valid = check_X_y(X, y, accept_sparse="csr", dtype=np.float64, ensure_all_finite=False,
                                             multi_output=ridge, y_numeric=ridge)
                try:
                    steps, X_model = model_input(pipeline_steps(self.estimator)[0], X_valid, y_valid)
                except Unsupported as why:
                    reason = str(why)
            reason = reason or self._unsupported_target(type_of_target(y_valid), ridge, exact)
        if reason is not None:
            return self._search_with_scikit_learn(X, y, groups, params, reason)

        if ridge:
            return self._search_ridge(X, y, X_valid, y_valid, X_model, groups, candidates, exact, reasons)
        cv = check_cv(self.cv, y_valid, classifier=is_classifier(self.estimator))
        self.n_splits_ = cv.get_n_splits(X_valid, y_valid, groups)
        try:
            splits = split_folds(cv, X_valid, y_valid, groups)
        except Unsupported as why:
            reason = str(why)
        if reason is not None:  # outside the handler: the errors GridSearchCV reports do not chain it
            return self._search_with_scikit_learn(X, y, groups, params, reason)
        if len(splits) != self.n_splits_:
            raise ValueError("cv.split and cv.get_n_splits return inconsistent results. "
                             f"Expected {self.n_splits_} splits, got {len(splits)}")
        trainable = trainable_folds(y_valid, splits)
        if not trainable:
            return self._search_with_scikit_learn(X, y, groups, params, "no training fold holds two classes")

        scorer = self.scoring if callable(self.scoring) else check_scoring(self.estimator, self.scoring)
        scoring = _OneMetric(scorer) if callable(scorer) and not hasattr(scorer, "_response_method") \
            and type(scorer).__name__ != "_PassthroughScorer" else scorer
        table = _Table(len(candidates), len(splits), self.return_train_score)
        if reasons and not self._fill_with_scikit_learn(table, candidates, reasons, X, y, splits):
            return self._search_with_scikit_learn(X, y, groups, params, "the scorer returns several metrics")
        grid = _Grid(self, X_valid, y_valid, steps, X_model, splits, trainable, scoring)
        order = sorted(exact, key=lambda i: (exact[i][1].C, i))  # strong to weak regularization
        if self.prune:
            bounds = self._prunable(scorer, splits, trainable, len(exact), np.unique(y_valid).size > 2, learned)
            if bounds:
                for i in order:
                    lower, upper, seconds = grid.accuracy_bounds(*exact[i])
                    table.bound(i, lower, upper, seconds)
                    if np.array_equal(lower, upper):  # every held-out label certified: the exact scores
                        grid.evaluate(table, i, *exact[i], test=lower)
                        self._say(f"{candidates[i]}: mean score {table.means()[i]:.6g} (certified without training)")
                order = sorted(exact, key=lambda i: (-table.upper_means()[i], i))
        for i in order:
            if table.evaluated[i]:
                continue
            if table.cannot_win(i):
                table.pruned[i] = True
                continue
            grid.evaluate(table, i, *exact[i])
            if scoring is not scorer and scoring.several:
                return self._search_with_scikit_learn(X, y, groups, params, "the scorer returns several metrics")
            self._say(f"{candidates[i]}: mean score {table.means()[i]:.6g}")

        reasons.update(grid.fallbacks)
        self.fallback_reason_ = "; ".join(
            f"{why} (grid points {', '.join(str(i) for i in sorted(reasons) if reasons[i] == why)})"
            for why in dict.fromkeys(reasons.values())) or None
        self.n_pruned_ = int(table.pruned.sum())
        self.multimetric_ = False
        self.scorer_ = scorer
        self.cv_results_ = table.results(candidates, self.prune)
        return self._choose_and_refit(X, y)

    def _unsupported_target(self, target, ridge, exact):
        """Why GridSearchCV computes this search for ``target`` (type_of_target), or None."""
        if ridge:
            return "training scores of Ridge folds are not computed in closed form" if self.return_train_score \
                else None
        if target not in ("binary", "multiclass"):
            return f"the target is {target} (binary and multiclass targets are)"
        if target == "multiclass":
            try:
                for _, model in exact.values():
                    check_multiclass(model)
            except Unsupported as why:
                return str(why)
        return None

    def _search_ridge(self, X, y, X_valid, y_valid, X_model, groups, candidates, exact, reasons):
        """Ridge over ``alpha``: every grid point's held-out predictions on every split from one
        eigendecomposition (:func:`glru.ridge.held_out_predictions`), exact."""
        cv = check_cv(self.cv, y_valid, classifier=False)
        self.n_splits_ = cv.get_n_splits(X_valid, y_valid, groups)
        reason = None
        try:
            splits = split_folds(cv, X_valid, y_valid, groups)
        except Unsupported as why:
            reason = str(why)
        if reason is not None:  # (outside the handler, see fit)
            return self._search_with_scikit_learn(X, y, groups, {}, reason)
        scorer = self.scoring if callable(self.scoring) else check_scoring(self.estimator, self.scoring)
        table = _Table(len(candidates), len(splits), False)
        if reasons and not self._fill_with_scikit_learn(table, candidates, reasons, X, y, splits):
            return self._search_with_scikit_learn(X, y, groups, {}, "the scorer returns several metrics")
        points = sorted(exact)
        fit_intercept = exact[points[0]][1].fit_intercept
        started = time.perf_counter()
        predictions = held_out_predictions(X_model, y_valid, splits, [exact[i][1].alpha for i in points], fit_intercept)
        fitting = (time.perf_counter() - started) / len(points)
        for j, i in enumerate(points):
            started = time.perf_counter()
            scores = [_score(scorer, HeldOutPredictions(None, p[j], regression=True), X_valid[test], y_valid[test],
                             self.error_score) for p, (_, test) in zip(predictions, splits)]
            table.set(i, scores, None, fitting, time.perf_counter() - started)
        self.fallback_reason_ = "; ".join(dict.fromkeys(reasons.values())) or None
        self.n_pruned_, self.multimetric_, self.scorer_ = 0, False, scorer
        self.cv_results_ = table.results(candidates, self.prune)
        return self._choose_and_refit(X, y)

    def _say(self, message):
        if self.verbose:
            print(f"[{type(self).__name__}] {message}", flush=True)

    # ---- fallbacks
    def _reason_for_scikit_learn(self, params):
        if params:
            return f"fit parameters ({', '.join(sorted(params))}) are not supported"
        if isinstance(self.scoring, (list, tuple, set, dict)):
            return "multi-metric scoring"
        return None

    def _grid_search(self, param_grid, cv, refit):
        return GridSearchCV(self.estimator, param_grid, scoring=self.scoring, n_jobs=self.n_jobs, refit=refit, cv=cv,
                            verbose=self.verbose, return_train_score=self.return_train_score)

    def _search_with_scikit_learn(self, X, y, groups, params, reason):
        warnings.warn(f"glru cannot run this search exactly ({reason}); running scikit-learn's GridSearchCV "
                      "instead.", FallbackWarning, stacklevel=3)
        if groups is not None:
            params["groups"] = groups
        search = self._grid_search(self.param_grid, self.cv, self.refit).fit(X, y, **params)
        for name, value in vars(search).items():
            if name.endswith("_") and not name.startswith("_"):
                setattr(self, name, value)
        if self.prune:
            mean = self.cv_results_["mean_test_score"] if not self.multimetric_ else None
            if mean is not None:
                self.cv_results_["mean_test_score_lower"] = mean.copy()
                self.cv_results_["mean_test_score_upper"] = mean.copy()
            self.cv_results_["certify_time"] = np.zeros(len(self.cv_results_["params"]))
            self.cv_results_["pruned"] = np.zeros(len(self.cv_results_["params"]), dtype=bool)
        self.fallback_reason_, self.n_pruned_ = reason, 0
        return self

    def _fill_with_scikit_learn(self, table, candidates, reasons, X, y, splits):
        """GridSearchCV on the grid points glru cannot compute, on the same splits (False if its
        scorer turned out to return several metrics)."""
        indices = sorted(reasons)
        why = "; ".join(dict.fromkeys(reasons.values()))
        warnings.warn(f"glru cannot compute {len(indices)} of {len(candidates)} grid points exactly ({why}); "
                      "running scikit-learn's GridSearchCV for them.", FallbackWarning, stacklevel=3)
        points = [{name: [value] for name, value in candidates[i].items()} for i in indices]
        part = self._grid_search(points, splits, False).fit(X, y).cv_results_
        if "mean_test_score" not in part:
            return False
        table.fill(indices, part)
        return True

    def _prunable(self, scorer, splits, trainable, n_exact, multiclass, learned):
        why = None
        if learned:
            why = "Pipeline steps learn from the training rows, so no fold is certified without training"
        elif multiclass:
            why = "certified score intervals are available for binary targets only"
        elif not _is_accuracy(scorer):
            why = "certified score intervals are available for accuracy only"
        elif callable(self.refit):
            why = "a callable refit needs every score"
        elif len(trainable) < len(splits):
            why = "a training fold holds a single class"
        if why is not None:
            warnings.warn(f"prune=True has no effect here: {why}.", UserWarning, stacklevel=3)
        return why is None and n_exact > 1

    # ---- GridSearchCV's choice of the best point, and the refit
    def _choose_and_refit(self, X, y):
        results = self.cv_results_
        if callable(self.refit):
            best = self.refit(results)
            if not isinstance(best, numbers.Integral):
                raise TypeError("best_index_ returned is not an integer")
            if best < 0 or best >= len(results["params"]):
                raise IndexError("best_index_ index out of range")
        else:
            best = results["rank_test_score"].argmin()
            self.best_score_ = results["mean_test_score"][best]
        self.best_index_ = best
        self.best_params_ = results["params"][best]
        if self.refit:
            self.best_estimator_ = clone(self.estimator).set_params(**clone(self.best_params_, safe=False))
            started = time.time()
            self.best_estimator_.fit(X, y)
            self.refit_time_ = time.time() - started
            if hasattr(self.best_estimator_, "feature_names_in_"):
                self.feature_names_in_ = self.best_estimator_.feature_names_in_
        return self


class RidgeModel:
    """A grid point's ``Ridge``: its penalty and intercept."""

    def __init__(self, estimator):
        self.alpha, self.fit_intercept = ridge_alpha(estimator), estimator.fit_intercept


def _model(estimator, point):
    """The :class:`LinearModel` (or :class:`RidgeModel`) of one grid point's estimator, or
    :class:`Unsupported`."""
    final = pipeline_steps(estimator)[1]
    ridge = is_ridge(final)
    if ridge:  # Ridge's closed form takes one design matrix for every fold: row-wise steps only
        split_pipeline(estimator)
    model = RidgeModel(final) if ridge else linear_model(final)
    last = estimator.steps[-1][0] + "__" if isinstance(estimator, Pipeline) else ""
    allowed = ("alpha",) if ridge else REGULARIZATION
    others = sorted(name for name in point if name not in {last + p for p in allowed})
    if others:
        raise Unsupported(f"the grid varies {', '.join(others)} (only {' and '.join(last + p for p in allowed)} "
                          "are computed exactly)")
    return model


def _cross_validation_problem(model, X_model, y, classes, splits, trainable):
    """The positional arguments of :func:`glru.cross_validation.cross_validate` for one grid
    point, set up as :meth:`GLRUCrossValidator._fit_exact` does (model design, ±1 labels, the
    penalty of a fold's size, the folds whose training rows hold both classes)."""
    return (model.design(X_model), np.where(y == classes[1], 1.0, -1.0), model.loss,
            [splits[k] for k in trainable], model.penalty_for, model.fit_intercept)


class _Grid:
    """The data of one search, and the computations on one grid point."""

    def __init__(self, search, X, y, preprocessing, X_model, splits, trainable, scoring):
        """``preprocessing``: the fitted row-wise steps or None, which turned X into ``X_model``
        (:func:`~sklearn_ext._adapters.model_input`); None and X with steps that learn from the
        rows."""
        self.search, self.X, self.y, self.splits, self.trainable = search, X, y, splits, trainable
        self.scoring = scoring
        self.preprocessing, self.X_model = preprocessing, X_model
        self.classes = np.unique(y)
        # the grid varies the last step only: row-wise steps transform once; steps that learn from
        # the rows are fitted on each fold's (GLRUCrossValidator), and the engine is not run here
        self.learned = learns_from_rows(search.estimator)
        self.fallbacks = {}  # grid index -> why its validator fell back (a step that failed)
        # steps that learn from the rows: the full fit and the folds' solutions at the grid point
        # computed last, where the next point's full fit starts, and its folds where their gaps are
        # smaller (a9a.t + StandardScaler, 5 C: 1.9 → 1.2 s for two folds' solves)
        self.previous = None
        self.engine = dict(n_jobs=search.n_jobs, verbose=max(search.verbose - 1, 0), pre_dispatch=search.pre_dispatch)
        self.certified = {}  # estimator id -> its certificates-only result (prune), to resume
        # the last binary full-data optimum computed: where the next full fit starts (grid points
        # are visited from strong to weak regularization, so it is usually the neighbour's)
        self.latest = None

    def _problem(self, model):
        return _cross_validation_problem(model, self.X_model, self.y, self.classes, self.splits, self.trainable)

    def _cross_validate(self, model, **options):
        """:func:`glru.cross_validation.cross_validate` of one grid point (binary), started from
        the latest full-data optimum; its own becomes the next start."""
        result = cross_validate(*self._problem(model), init=self.latest, **options, **self.engine)
        self.latest = (result.coef, result.intercept)
        return result

    def accuracy_bounds(self, estimator, model):
        """(per-fold lower, per-fold upper, seconds): certified bounds on each fold's accuracy
        from the certificates at the folds' Newton centres (no fold trained). The counts are
        divided as accuracy divides them, so the bounds hold in floating point too."""
        started = time.perf_counter()
        result = self._cross_validate(model, need="labels", solve_open=False)
        self.certified[id(estimator)] = result  # evaluate() resumes from it
        lower, upper = np.full(len(self.splits), np.nan), np.full(len(self.splits), np.nan)
        for k, outcome in zip(self.trainable, result.outcomes):
            positive = self.y[self.splits[k][1]] == self.classes[1]
            decided = outcome.decided
            right = decided & ((outcome.lower > 0) == positive)
            lower[k], upper[k] = float(np.average(right)), float(np.average(~(decided & ~right)))
        return lower, upper, time.perf_counter() - started

    def evaluate(self, table, i, estimator, model, test=None):
        """Exact scores of grid point i: :class:`GLRUCrossValidator` on the search's splits
        (unless its ``test`` scores are known already)."""
        fitting = total = 0.0
        train = None
        if test is None:
            started = time.perf_counter()
            certified = self.certified.pop(id(estimator), None)
            if certified is not None:
                result = certified.resume()
                self.latest = (result.coef, result.intercept)  # the start of this point's training scores
            elif self.classes.size == 2 and not self.learned:  # what the validator would compute, cold
                result = self._cross_validate(model, need=_response_needed(check_scoring(estimator, self.scoring)))
            else:
                result = None
            validator = GLRUCrossValidator(
                estimator, cv=self.splits, scoring=self.scoring, n_jobs=self.search.n_jobs,
                verbose=self.engine["verbose"], pre_dispatch=self.search.pre_dispatch,
                error_score=self.search.error_score)._fit(self.X, self.y, result=result, refit=False,
                                                          previous=self.previous,
                                                          train_scores=self.learned and table.train is not None)
            self.previous = getattr(validator, "_solutions", None)
            total = time.perf_counter() - started
            fitting = min(sum(getattr(validator, "timings_", {}).values()), total)
            test, train = validator.scores_, getattr(validator, "_train_scores", None)
            if validator.fallback_reason_ is not None:
                self.fallbacks[i] = validator.fallback_reason_
        if table.train is not None and train is None:
            started = time.perf_counter()
            train, solving = self._train_scores(estimator, model)
            fitting, total = fitting + solving, total + time.perf_counter() - started
        table.set(i, test, train, fitting, total - fitting)

    def _train_scores(self, estimator, model):
        """(scores of each fold's exact fit on its training rows, seconds solving)."""
        started = time.perf_counter()
        folds = [self.splits[k] for k in self.trainable]
        if self.classes.size > 2:  # multiclass: each fold's exact models, on the classes it holds
            result = cross_validate_multiclass(model, self.X_model, self.y, self.classes, folds, "values",
                                               **self.engine)
        else:
            result = self._cross_validate(model, need="values")
        solving = time.perf_counter() - started
        scores = np.full(len(self.splits), self.search.error_score)  # a fold with one class: its fit fails
        for k, outcome in zip(self.trainable, result.outcomes):
            classes = self.classes if self.classes.size == 2 else self.classes[outcome.classes]
            final = model.fitted(outcome.coef, outcome.intercept, classes, self.X_model.shape[1])
            if self.preprocessing is not None:
                final = Pipeline(list(self.preprocessing.steps) + [(estimator.steps[-1][0], final)])
            train = self.splits[k][0]
            scores[k] = _score(self.scoring, final, self.X[train], self.y[train], self.search.error_score)
        return scores, solving


class _Table:
    """Per grid point and split: scores, times and certified bounds; cv_results_ from them."""

    def __init__(self, n_candidates, n_splits, train):
        self.test = np.full((n_candidates, n_splits), np.nan)
        self.train = np.full((n_candidates, n_splits), np.nan) if train else None
        self.lower, self.upper = np.full((n_candidates, n_splits), np.nan), np.full((n_candidates, n_splits), np.nan)
        self.times = {key: np.zeros(n_candidates) for key in
                      ("mean_fit_time", "std_fit_time", "mean_score_time", "std_score_time", "certify_time")}
        self.evaluated = np.zeros(n_candidates, dtype=bool)
        self.bounded = np.zeros(n_candidates, dtype=bool)
        self.pruned = np.zeros(n_candidates, dtype=bool)
        self.n_splits = n_splits

    def means(self):  # scikit-learn's arithmetic (BaseSearchCV._format_results)
        return np.average(self.test, axis=1)

    def upper_means(self):
        return np.average(self.upper, axis=1)

    def set(self, i, test, train, fit_seconds, score_seconds):
        self.test[i] = test
        if self.train is not None:
            self.train[i] = train
        self.times["mean_fit_time"][i] += fit_seconds / self.n_splits
        self.times["mean_score_time"][i] += score_seconds / self.n_splits
        self.evaluated[i] = True

    def fill(self, indices, results):
        """Grid points ``indices`` from a GridSearchCV's cv_results_ (in that order)."""
        for k in range(self.n_splits):
            self.test[indices, k] = results[f"split{k}_test_score"]
            if self.train is not None:
                self.train[indices, k] = results[f"split{k}_train_score"]
        for key in ("mean_fit_time", "std_fit_time", "mean_score_time", "std_score_time"):
            self.times[key][indices] = results[key]
        self.evaluated[indices] = True

    def bound(self, i, lower, upper, seconds):
        self.lower[i], self.upper[i] = lower, upper
        self.times["certify_time"][i] = seconds
        self.times["mean_fit_time"][i] += seconds / self.n_splits
        self.bounded[i] = True

    def cannot_win(self, i):
        """Whether grid point i's certified upper bound shows that it cannot be GridSearchCV's
        best: below the best mean evaluated, or equal to it with a later grid index."""
        if not self.bounded[i] or not self.evaluated.any():
            return False
        means = self.means()
        means[~self.evaluated | np.isnan(means)] = -np.inf
        best = int(np.argmax(means))  # the first index of the highest mean
        upper = self.upper_means()[i]
        return bool(upper < means[best] or (upper == means[best] and i > best))

    def results(self, candidates, prune):
        n = len(candidates)
        results = {key: self.times[key] for key in ("mean_fit_time", "std_fit_time", "mean_score_time",
                                                     "std_score_time")}
        results.update(_parameter_arrays(candidates))
        results["params"] = candidates
        means = self._store(results, "test", self.test)
        ranked = np.flatnonzero(self.evaluated)
        rank = np.full(n, ranked.size + 1, dtype=np.int32)  # pruned points: after every evaluated one
        rank[ranked] = _rank(means[ranked])
        results["rank_test_score"] = rank
        if self.train is not None:
            self._store(results, "train", self.train)
        if prune:  # the certificates' intervals (they contain the exact means of evaluated points)
            results["mean_test_score_lower"] = np.where(self.bounded, np.average(self.lower, axis=1), means)
            results["mean_test_score_upper"] = np.where(self.bounded, self.upper_means(), means)
            results["certify_time"] = self.times["certify_time"]
            results["pruned"] = self.pruned.copy()
        return results

    def _store(self, results, name, scores):
        """split{k}_, mean_ and std_ keys, as BaseSearchCV._format_results computes them."""
        for k in range(self.n_splits):
            results[f"split{k}_{name}_score"] = scores[:, k]
        means = np.average(scores, axis=1)
        if np.any(~np.isfinite(means[self.evaluated])):
            warnings.warn(f"One or more of the {name} scores are non-finite: {means}", category=UserWarning)
        results[f"mean_{name}_score"] = means
        results[f"std_{name}_score"] = np.sqrt(np.average((scores - means[:, np.newaxis]) ** 2, axis=1))
        return means


class _OneMetric:
    """A callable scorer that notes whether it returned several metrics (a dict): GridSearchCV
    treats such a scorer as multi-metric scoring, which falls back."""

    def __init__(self, scorer):
        self.scorer, self.several = scorer, False

    def __call__(self, estimator, X, y):
        score = self.scorer(estimator, X, y)
        if isinstance(score, dict):
            self.several = True
            return np.nan
        return score


def _rank(means):
    """scikit-learn's ranks: NaN means tie with the worst, all NaN rank 1."""
    if means.size == 0 or np.isnan(means).all():
        return np.ones(means.size, dtype=np.int32)
    means = np.where(np.isnan(means), np.nanmin(means) - 1, means)
    return rankdata(-means, method="min").astype(np.int32, copy=False)


def _parameter_arrays(candidates):
    """``param_<name>`` masked arrays, as scikit-learn builds them (masked where a grid point
    does not set the parameter)."""
    values = defaultdict(dict)
    for index, point in enumerate(candidates):
        for name, value in point.items():
            values[f"param_{name}"][index] = value
    arrays = {}
    for key, by_index in values.items():
        listed = list(by_index.values())
        try:
            array = np.array(listed)
        except ValueError:
            dtype = np.dtype(object)
        else:
            dtype = array.dtype if array.dtype.kind != "U" and array.ndim == 1 else object
        masked = MaskedArray(np.empty(len(candidates), dtype=dtype), mask=True)
        for index, value in by_index.items():
            masked[index] = value
        arrays[key] = masked
    return arrays
