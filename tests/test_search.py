"""GLRUSearchCV against scikit-learn's GridSearchCV run with exact fits (tests/_exact.py)."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.stats import rankdata
from sklearn.datasets import load_digits, load_svmlight_file
from sklearn.exceptions import FitFailedWarning
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression, Ridge, SGDClassifier
from sklearn.metrics import accuracy_score
from sklearn.model_selection import GridSearchCV, GroupKFold, KFold, LeaveOneOut, StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import Normalizer, StandardScaler
from sklearn.svm import LinearSVC
from sklearn.utils.estimator_checks import check_estimator

import glru.cross_validation as cross_validation_module
from sklearn_ext import FallbackWarning, GLRUSearchCV
from sklearn_ext import search as search_module

from ._exact import ExactRefit
from ._problems import RefusingStep, random_problem, scaled_problem

CS = [1.0, 0.003, 30.0, 0.1]  # not sorted: results come in ParameterGrid order, not in C order


def labelled(seed, n, d, sparse=False):
    X, y = random_problem(seed, n, d, "logistic", sparse=sparse)
    return X, np.where(y > 0, 1, 0)


def exact_search(estimator, grid, X, y, **kwargs):
    """GridSearchCV with every fit exact; its parameters named as GLRUSearchCV names them."""
    grid = [{f"estimator__{k}": v for k, v in g.items()} for g in ([grid] if isinstance(grid, dict) else grid)]
    search = GridSearchCV(ExactRefit(estimator), grid, **kwargs).fit(X, y)
    search.plain_params = [{k.removeprefix("estimator__"): v for k, v in p.items()}
                           for p in search.cv_results_["params"]]
    return search


def assert_same_results(got, expected, n_splits, rtol=0.0, train=False):
    results, reference = got.cv_results_, expected.cv_results_
    assert results["params"] == expected.plain_params
    keys = ["mean_test_score", "std_test_score"] + [f"split{k}_test_score" for k in range(n_splits)]
    if train:
        keys += ["mean_train_score", "std_train_score"] + [f"split{k}_train_score" for k in range(n_splits)]
    for key in keys:
        if rtol:
            np.testing.assert_allclose(results[key], reference[key], rtol=rtol, atol=1e-12, err_msg=key)
        else:
            np.testing.assert_array_equal(results[key], reference[key], err_msg=key)
    np.testing.assert_array_equal(results["rank_test_score"], reference["rank_test_score"])
    assert got.best_index_ == expected.best_index_
    assert got.best_params_ == expected.plain_params[expected.best_index_]
    assert got.best_score_ == pytest.approx(expected.best_score_, rel=rtol, abs=0)


def only_glru(search, X, y):
    """Fit, failing on any FallbackWarning (the exact path must have run)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", FallbackWarning)
        search.fit(X, y)
    assert search.fallback_reason_ is None
    return search


ESTIMATORS = [LogisticRegression(), LogisticRegression(fit_intercept=False), LinearSVC()]


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=repr)
@pytest.mark.parametrize("cv", [LeaveOneOut(), KFold(4, shuffle=True, random_state=0)], ids=["loo", "kfold"])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_equals_grid_search_with_exact_fits(estimator, cv, sparse):
    X, y = labelled(1, 22, 5, sparse=sparse)
    got = only_glru(GLRUSearchCV(estimator, {"C": CS}, cv=cv), X, y)
    expected = exact_search(estimator, {"C": CS}, X, y, cv=cv)
    assert_same_results(got, expected, cv.get_n_splits(X))
    assert got.n_splits_ == expected.n_splits_ and got.n_pruned_ == 0
    assert set(got.cv_results_) == set(expected.cv_results_) - {"param_estimator__C"} | {"param_C"}
    np.testing.assert_array_equal(got.cv_results_["param_C"], CS)
    assert isinstance(got.cv_results_["param_C"], np.ma.MaskedArray)


def test_more_features_than_rows():
    X, y = labelled(2, 20, 35)
    cv = KFold(5, shuffle=True, random_state=1)
    got = only_glru(GLRUSearchCV(LogisticRegression(), {"C": CS}, cv=cv), X, y)
    assert_same_results(got, exact_search(LogisticRegression(), {"C": CS}, X, y, cv=cv), 5)


@pytest.mark.parametrize("scoring,rtol", [("accuracy", 0), ("f1", 0), ("neg_log_loss", 1e-6)])
def test_scorers(scoring, rtol):
    X, y = labelled(3, 40, 6, sparse=True)
    cv = StratifiedKFold(4, shuffle=True, random_state=2)
    got = only_glru(GLRUSearchCV(LogisticRegression(), {"C": CS}, cv=cv, scoring=scoring), X, y)
    expected = exact_search(LogisticRegression(), {"C": CS}, X, y, cv=cv, scoring=scoring)
    assert_same_results(got, expected, 4, rtol=rtol)
    assert got.scorer_ is not None and got.score(X, y) == pytest.approx(got.scorer_(got.best_estimator_, X, y))


def test_elastic_net_grid():
    X, y = labelled(4, 30, 5)
    grid = {"C": [0.3, 3.0], "l1_ratio": [0.0, 0.5]}
    estimator = LogisticRegression(solver="saga", max_iter=10_000)
    cv = KFold(3, shuffle=True, random_state=3)
    got = only_glru(GLRUSearchCV(estimator, grid, cv=cv), X, y)
    assert_same_results(got, exact_search(estimator, grid, X, y, cv=cv), 3)


def test_pipeline_with_prefixed_parameters():
    X, y = labelled(5, 30, 4)
    pipe = make_pipeline(Normalizer(), LogisticRegression())
    grid = {"logisticregression__C": CS}
    cv = KFold(5, shuffle=True, random_state=4)
    got = only_glru(GLRUSearchCV(pipe, grid, cv=cv), X, y)
    assert_same_results(got, exact_search(pipe, grid, X, y, cv=cv), 5)
    assert got.best_estimator_[-1].C == got.best_params_["logisticregression__C"]


# ---- Pipelines whose steps learn from the training rows: each fold's steps fitted on its rows
@pytest.mark.parametrize("final", ESTIMATORS, ids=repr)
@pytest.mark.parametrize("cv", [LeaveOneOut(), KFold(4, shuffle=True, random_state=6)], ids=["loo", "kfold"])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_pipeline_learning_from_the_training_rows_equals_exact_grid_search(final, cv, sparse):
    X, y = scaled_problem(7, 24, 5, sparse)
    pipe = make_pipeline(StandardScaler(with_mean=not sparse), final)
    grid = {f"{pipe.steps[-1][0]}__C": CS}
    got = only_glru(GLRUSearchCV(pipe, grid, cv=cv), X, y)
    assert_same_results(got, exact_search(pipe, grid, X, y, cv=cv), cv.get_n_splits(X))
    assert got.n_pruned_ == 0 and np.all(got.cv_results_["mean_fit_time"] > 0)


def test_pipeline_learning_from_the_training_rows_starts_from_the_previous_grid_point(monkeypatch):
    """Each fold also offers its solution at the grid point computed before (a start: the one
    with the smaller gap is taken); the scores stay exact."""
    import sklearn_ext.cross_validation as validator_module

    offered = []

    def recording(*args, **kwargs):
        offered.append(len(args[6]))
        return refit_fold(*args, **kwargs)

    refit_fold = validator_module.refit_fold
    monkeypatch.setattr(validator_module, "refit_fold", recording)
    X, y = scaled_problem(12, 40, 5, True)
    pipe = make_pipeline(StandardScaler(with_mean=False), LogisticRegression())
    grid = {"logisticregression__C": CS}
    got = only_glru(GLRUSearchCV(pipe, grid, cv=4), X, y)
    assert offered == [1] * 4 + [2] * 12  # strong to weak regularization: the first point has no neighbour
    assert_same_results(got, exact_search(pipe, grid, X, y, cv=4), 4)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_pipeline_folds_stepping_together_along_the_grid(monkeypatch, sparse):
    """More features than rows: at every grid point the folds take their Newton–CG steps together
    (from their solutions at the point before, after the first), and the search is exact."""
    import sklearn_ext.cross_validation as validator_module

    starts, taken = [], validator_module.scaled_fold_starts

    def recorded(*args, **kwargs):
        if "gap" not in kwargs:  # (not the full fit's own steps, _rough_full_fit)
            starts.append(args[-1])
        return taken(*args, **kwargs)
    monkeypatch.setattr(validator_module, "scaled_fold_starts", recorded)
    X, y = scaled_problem(15, 36, 160, sparse)
    pipe = make_pipeline(StandardScaler(with_mean=not sparse), LogisticRegression())
    grid = {"logisticregression__C": CS}
    cv = KFold(3, shuffle=True, random_state=2)
    got = only_glru(GLRUSearchCV(pipe, grid, cv=cv), X, y)
    assert len(starts) == len(CS)
    assert_same_results(got, exact_search(pipe, grid, X, y, cv=cv), 3)


@pytest.mark.parametrize("scoring,train", [("neg_log_loss", False), (None, True)], ids=["values", "train"])
def test_pipeline_learning_from_the_training_rows_multiclass(scoring, train):
    X, _ = scaled_problem(8, 45, 4, False)
    y = np.arange(45) % 3
    pipe = make_pipeline(StandardScaler(), LogisticRegression())
    grid = {"logisticregression__C": CS}
    cv = StratifiedKFold(3, shuffle=True, random_state=7)
    got = only_glru(GLRUSearchCV(pipe, grid, cv=cv, scoring=scoring, return_train_score=train), X, y)
    expected = exact_search(pipe, grid, X, y, cv=cv, scoring=scoring, return_train_score=train)
    assert_same_results(got, expected, 3, rtol=1e-6 if scoring else 0.0, train=train)


def test_pipeline_learning_from_the_training_rows_takes_x_as_given():
    """An imputer sees the missing values (each fold's means of its own rows)."""
    X, y = scaled_problem(9, 40, 4, False)
    X[::7, 1] = np.nan
    pipe = make_pipeline(SimpleImputer(), StandardScaler(), LinearSVC())
    grid = {"linearsvc__C": CS}
    cv = KFold(4, shuffle=True, random_state=8)
    got = only_glru(GLRUSearchCV(pipe, grid, cv=cv), X, y)
    assert_same_results(got, exact_search(pipe, grid, X, y, cv=cv), 4)


def test_pipeline_learning_from_the_training_rows_no_pruning():
    X, y = scaled_problem(10, 30, 4, False)
    pipe = make_pipeline(StandardScaler(), LogisticRegression())
    grid = {"logisticregression__C": CS}
    with pytest.warns(UserWarning, match="prune=True has no effect here: Pipeline steps learn"):
        got = only_glru(GLRUSearchCV(pipe, grid, cv=3, prune=True), X, y)
    assert got.n_pruned_ == 0 and not got.cv_results_["pruned"].any()
    assert_same_results(got, exact_search(pipe, grid, X, y, cv=3), 3)


@pytest.mark.parametrize("final", [LogisticRegression(), LinearSVC()], ids=repr)
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("scoring", [None, "roc_auc"])
def test_pipeline_learning_from_the_training_rows_training_scores(final, sparse, scoring):
    """Each fold's exact model, its steps fitted on the fold's rows, scored on those rows."""
    X, y = scaled_problem(13, 36, 5, sparse)
    pipe = make_pipeline(StandardScaler(with_mean=not sparse), final)
    grid = {f"{pipe.steps[-1][0]}__C": CS}
    cv = KFold(4, shuffle=True, random_state=9)
    got = only_glru(GLRUSearchCV(pipe, grid, cv=cv, scoring=scoring, return_train_score=True), X, y)
    expected = exact_search(pipe, grid, X, y, cv=cv, scoring=scoring, return_train_score=True)
    assert_same_results(got, expected, 4, train=True)


@pytest.mark.parametrize("train", [False, True], ids=["test", "train"])
def test_pipeline_step_failing_on_a_fold_hands_the_grid_points_to_scikit_learn(train):
    X, y = scaled_problem(11, 40, 3, False)
    pipe = make_pipeline(RefusingStep(largest=X[:, 0].max()), StandardScaler(), LogisticRegression())
    grid = {"logisticregression__C": [0.1, 1.0]}
    with pytest.warns(FallbackWarning, match="the largest row is missing"), warnings.catch_warnings():
        warnings.simplefilter("ignore", FitFailedWarning)  # scikit-learn's, of the failing fold
        got = GLRUSearchCV(pipe, grid, cv=4, return_train_score=train).fit(X, y)
    assert "the largest row is missing" in got.fallback_reason_ and "(grid points 0, 1)" in got.fallback_reason_
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitFailedWarning)
        expected = GridSearchCV(pipe, grid, cv=4, return_train_score=train).fit(X, y)
    keys = ["mean_test_score", "split0_test_score", "split1_test_score"]
    for key in keys + ([k.replace("test", "train") for k in keys] if train else []):
        np.testing.assert_array_equal(got.cv_results_[key], expected.cv_results_[key], err_msg=key)


def test_train_scores():
    X, y = labelled(6, 30, 5)
    cv = KFold(3, shuffle=True, random_state=5)
    got = only_glru(GLRUSearchCV(LogisticRegression(), {"C": CS}, cv=cv, return_train_score=True), X, y)
    expected = exact_search(LogisticRegression(), {"C": CS}, X, y, cv=cv, return_train_score=True)
    assert_same_results(got, expected, 3, train=True)


# ---- the regularization path: warm starts
def recording_cross_validate(monkeypatch, warm=True):
    """Replace the search's ``cross_validate`` by one that records (λ of one row, i.e. ∝ 1/C;
    init; result) of every call; with ``warm=False`` every call is cold (its init dropped)."""
    calls, cross_validate = [], search_module.cross_validate

    def recorded(*args, init=None, **kwargs):
        init = init if warm else None
        result = cross_validate(*args, init=init, **kwargs)
        calls.append((args[4](1).lam, init, result))  # args[4]: penalty_for(n_train)
        return result
    monkeypatch.setattr(search_module, "cross_validate", recorded)
    return calls


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=repr)
@pytest.mark.parametrize("prune", [False, True], ids=["plain", "prune"])
def test_each_full_fit_starts_from_the_previous_grid_point(estimator, prune, monkeypatch):
    """Grid points are fitted from strong to weak regularization, each full fit started from the
    previous optimum; the scores are GridSearchCV's with exact fits, and those of cold starts."""
    X, y = labelled(12, 30, 5)
    cv = KFold(5, shuffle=True, random_state=7)
    calls = recording_cross_validate(monkeypatch)
    got = only_glru(GLRUSearchCV(estimator, {"C": CS}, cv=cv, prune=prune), X, y)
    lams = [lam for lam, _, _ in calls]
    assert len(calls) == len(CS) and lams == sorted(lams, reverse=True)
    assert calls[0][1] is None
    for (_, _, previous), (_, init, _) in zip(calls, calls[1:]):
        assert init[0] is previous.coef and init[1] == previous.intercept
    expected = exact_search(estimator, {"C": CS}, X, y, cv=cv)
    if prune:  # pruned points have no scores; the best is GridSearchCV's
        assert (got.best_index_, got.best_score_) == (expected.best_index_, expected.best_score_)
    else:
        assert_same_results(got, expected, 5)
    monkeypatch.undo()
    recording_cross_validate(monkeypatch, warm=False)
    cold = only_glru(GLRUSearchCV(estimator, {"C": CS}, cv=cv, prune=prune), X, y)
    assert (got.best_index_, got.best_score_) == (cold.best_index_, cold.best_score_)
    for k in range(5):  # where both evaluated it (what is pruned depends on certificates, not scores)
        warm_scores, cold_scores = got.cv_results_[f"split{k}_test_score"], cold.cv_results_[f"split{k}_test_score"]
        both = ~np.isnan(warm_scores) & ~np.isnan(cold_scores)
        assert both.all() or prune
        np.testing.assert_array_equal(warm_scores[both], cold_scores[both])


def test_training_scores_start_from_the_point_s_own_full_fit(monkeypatch):
    """With training scores every grid point is cross-validated twice (labels, then values): the
    second run starts from the first one's optimum, the same problem's."""
    X, y = labelled(13, 30, 5)
    cv = KFold(3, shuffle=True, random_state=8)
    calls = recording_cross_validate(monkeypatch)
    got = only_glru(GLRUSearchCV(LogisticRegression(), {"C": CS}, cv=cv, return_train_score=True), X, y)
    assert len(calls) == 2 * len(CS)
    for (lam, _, first), (same, init, _) in zip(calls[::2], calls[1::2]):
        assert same == lam and init[0] is first.coef
    assert_same_results(got, exact_search(LogisticRegression(), {"C": CS}, X, y, cv=cv, return_train_score=True),
                        3, train=True)


@pytest.mark.parametrize("shape", [(40, 6), (20, 35)], ids=["n>d", "n<d (row-space coordinates)"])
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("need", ["labels", "values"])
def test_a_start_point_changes_the_time_not_the_result(shape, fit_intercept, need, monkeypatch):
    """cross_validate(init=...): started at the optimum, the full fit's rough solve takes no
    iteration (so the start reaches it, mapped into row-space coordinates when n < d), started
    at a neighbouring C's optimum fewer than cold; the held-out labels and values are the same."""
    X, y = labelled(14, *shape)
    splits = search_module.split_folds(KFold(4, shuffle=True, random_state=9), X)

    def problem(C):
        model = search_module.linear_model(LogisticRegression(C=C, fit_intercept=fit_intercept))
        return search_module._cross_validation_problem(model, X, y, np.array([0, 1]), splits, range(len(splits)))
    iterations, solve, newton = [], cross_validation_module.solve, cross_validation_module.subsampled_newton

    def counted(*args, **kwargs):
        result = solve(*args, **kwargs)
        iterations.append(result.n_iter)
        return result

    def counted_newton(*args, **kwargs):  # the rough fit where folds are certified by curvature
        result = newton(*args, **kwargs)
        iterations.append(result[2])
        return result
    monkeypatch.setattr(cross_validation_module, "solve", counted)
    monkeypatch.setattr(cross_validation_module, "subsampled_newton", counted_newton)

    def run(init):
        """The result from ``init`` at C = 0.5, and the iterations of its full fit's first solve."""
        iterations.clear()
        result = cross_validation_module.cross_validate(*problem(0.5), need=need, init=init)
        return result, iterations[0]
    cold, cold_iterations = run(None)
    neighbour = cross_validation_module.cross_validate(*problem(0.25), solve_open=False)
    at_optimum, optimum_iterations = run((cold.coef, cold.intercept))
    from_neighbour, neighbour_iterations = run((neighbour.coef, neighbour.intercept))
    assert optimum_iterations == 0 and neighbour_iterations < cold_iterations
    for warm in (at_optimum, from_neighbour):
        for got, expected in zip(warm.outcomes, cold.outcomes):
            np.testing.assert_array_equal(got.labels, expected.labels)
            if need == "values":
                np.testing.assert_allclose(got.values, expected.values, rtol=1e-8, atol=1e-10)


# ---- pruning
@pytest.mark.parametrize("estimator", [LogisticRegression(), LinearSVC(fit_intercept=False)], ids=repr)
@pytest.mark.parametrize("cv", [LeaveOneOut(), KFold(5, shuffle=True, random_state=6)], ids=["loo", "kfold"])
def test_pruning_keeps_the_best_and_bounds_the_rest(estimator, cv, monkeypatch):
    X, y = labelled(7, 40, 6)
    grid = {"C": [1e-3, 0.03, 1.0, 0.1, 0.3, 0.1, 10.0, 1e-4]}  # 0.1 twice: a tie the first index must win
    trained = []  # one entry per cross-validation finished past its certificates
    finish = cross_validation_module._Engine._finish

    def recorded(engine, *args):
        trained.append(engine)
        return finish(engine, *args)
    monkeypatch.setattr(cross_validation_module._Engine, "_finish", recorded)
    got = only_glru(GLRUSearchCV(estimator, grid, cv=cv, prune=True), X, y)
    expected = exact_search(estimator, grid, X, y, cv=cv)
    assert (got.best_index_, got.best_params_, got.best_score_) == \
        (expected.best_index_, expected.plain_params[expected.best_index_], expected.best_score_)
    assert got.n_pruned_ > 0
    results, exact = got.cv_results_, expected.cv_results_["mean_test_score"]
    pruned = results["pruned"]
    assert pruned.sum() == got.n_pruned_
    for k in range(cv.get_n_splits(X)):  # evaluated: exact, whether certified at once or cross-validated
        np.testing.assert_array_equal(results[f"split{k}_test_score"][~pruned],
                                      expected.cv_results_[f"split{k}_test_score"][~pruned])
    # points whose every held-out label the first certificates settled are not cross-validated
    # further: fewer resumed cross-validations than evaluated points
    assert len(trained) < (~pruned).sum()
    assert np.all(np.isnan(results["mean_test_score"][pruned]) & np.isnan(results["std_test_score"][pruned]))
    assert np.all(np.isnan(results["split0_test_score"][pruned]))
    assert np.all(results["mean_test_score_lower"] <= exact) and np.all(exact <= results["mean_test_score_upper"])
    assert np.all(results["mean_test_score_upper"][pruned] <= got.best_score_)
    assert np.any(results["mean_test_score_lower"] < results["mean_test_score_upper"])  # intervals, not copies
    evaluated = np.flatnonzero(~pruned)
    np.testing.assert_array_equal(results["rank_test_score"][evaluated],
                                  rankdata(-exact[evaluated], method="min"))
    assert np.all(results["rank_test_score"][pruned] == evaluated.size + 1)
    assert np.all(results["certify_time"] > 0) and np.all(results["mean_fit_time"] > 0)


def test_pruning_rule_ties_go_to_the_first_grid_index(monkeypatch):
    """A point whose upper bound equals the best exact mean is evaluated when its grid index
    is lower (GridSearchCV's ties go to the first index) and pruned when it is higher."""
    X, y = labelled(8, 30, 4)
    grid = {"C": [0.5, 0.5, 0.5]}
    plain = only_glru(GLRUSearchCV(LogisticRegression(), grid, cv=3), X, y).cv_results_
    folds = np.array([plain[f"split{k}_test_score"][0] for k in range(3)])
    assert 0 < folds.min() and np.all(plain["rank_test_score"] == 1)
    # valid bounds (each contains the exact scores); point 2's is the highest, so it is evaluated first
    bounds = iter([(np.zeros(3), folds, 0.01), (np.zeros(3), folds, 0.01), (np.zeros(3), np.ones(3), 0.01)])
    monkeypatch.setattr(search_module._Grid, "accuracy_bounds", lambda self, estimator, model: next(bounds))
    got = only_glru(GLRUSearchCV(LogisticRegression(), grid, cv=3, prune=True), X, y)
    assert got.cv_results_["pruned"].tolist() == [False, True, False]
    assert got.best_index_ == 0 and got.best_score_ == plain["mean_test_score"][0]
    np.testing.assert_array_equal(got.cv_results_["rank_test_score"], [1, 3, 1])
    assert got.cv_results_["mean_test_score_upper"][1] == plain["mean_test_score"][0]


def test_prune_without_an_accuracy_scorer_evaluates_everything():
    X, y = labelled(9, 30, 4)
    with pytest.warns(UserWarning, match="accuracy only"):
        got = GLRUSearchCV(LogisticRegression(), {"C": CS}, cv=3, scoring="f1", prune=True).fit(X, y)
    assert got.n_pruned_ == 0 and got.fallback_reason_ is None
    assert_same_results(got, exact_search(LogisticRegression(), {"C": CS}, X, y, cv=3, scoring="f1"), 3)
    np.testing.assert_array_equal(got.cv_results_["mean_test_score_lower"], got.cv_results_["mean_test_score"])


# ---- fallbacks
def assert_equals_grid_search(got, expected):
    assert got.cv_results_["params"] == expected.cv_results_["params"]
    for key in ("mean_test_score", "std_test_score", "rank_test_score", "split0_test_score"):
        np.testing.assert_array_equal(got.cv_results_[key], expected.cv_results_[key])
    assert (got.best_index_, got.best_params_) == (expected.best_index_, expected.best_params_)


@pytest.mark.parametrize("estimator,grid,why", [
    (LogisticRegression(), {"C": [0.1, 1.0], "tol": [1e-4, 1e-2]}, "the grid varies tol"),
    (SGDClassifier(random_state=0), {"alpha": [1e-4, 1e-2]}, "SGDClassifier is not supported"),
    (make_pipeline(StandardScaler(), Ridge()), {"ridge__alpha": [0.1, 1.0]}, "learns from the training rows"),
    (LogisticRegression(class_weight="balanced"), {"C": [0.1, 1.0]}, "class_weight"),
])
def test_unsupported_searches_fall_back_with_reason(estimator, grid, why):
    X, y = labelled(10, 40, 4)
    with pytest.warns(FallbackWarning, match=why):
        got = GLRUSearchCV(estimator, grid, cv=3).fit(X, y)
    assert why in got.fallback_reason_
    expected = GridSearchCV(estimator, grid, cv=3).fit(X, y)
    assert_equals_grid_search(got, expected)
    np.testing.assert_array_equal(got.predict(X), expected.predict(X))


def test_multiclass_and_multi_metric_and_fit_parameters_fall_back():
    X, y = labelled(11, 45, 4)
    y3 = np.arange(45) % 3
    elastic_net = LogisticRegression(l1_ratio=0.5, solver="saga", max_iter=5000, random_state=0)  # multinomial: L2 only
    with pytest.warns(FallbackWarning, match="multiclass"):
        got = GLRUSearchCV(elastic_net, {"C": CS}, cv=3).fit(X, y3)
    assert_equals_grid_search(got, GridSearchCV(elastic_net, {"C": CS}, cv=3).fit(X, y3))
    scoring = ["accuracy", "f1"]
    with pytest.warns(FallbackWarning, match="multi-metric"):
        got = GLRUSearchCV(LogisticRegression(), {"C": CS}, cv=3, scoring=scoring, refit="f1").fit(X, y)
    expected = GridSearchCV(LogisticRegression(), {"C": CS}, cv=3, scoring=scoring, refit="f1").fit(X, y)
    np.testing.assert_array_equal(got.cv_results_["mean_test_f1"], expected.cv_results_["mean_test_f1"])
    assert got.best_index_ == expected.best_index_ and got.multimetric_
    with pytest.raises(ValueError, match="multi-metric"), pytest.warns(FallbackWarning):
        GLRUSearchCV(LogisticRegression(), {"C": CS}, cv=3, scoring=scoring).fit(X, y)
    weights = np.linspace(0.5, 1.5, 45)
    with pytest.warns(FallbackWarning, match="sample_weight"):
        got = GLRUSearchCV(LogisticRegression(), {"C": CS}, cv=3).fit(X, y, sample_weight=weights)
    expected = GridSearchCV(LogisticRegression(), {"C": CS}, cv=3).fit(X, y, sample_weight=weights)
    assert_equals_grid_search(got, expected)


def test_a_scorer_returning_several_metrics_falls_back():
    X, y = labelled(12, 30, 4)

    def two(estimator, X, y):
        return {"a": accuracy_score(y, estimator.predict(X)), "b": 1.0}
    with pytest.warns(FallbackWarning, match="several metrics"):
        got = GLRUSearchCV(LogisticRegression(), {"C": CS}, cv=3, scoring=two, refit="a").fit(X, y)
    assert got.multimetric_ and "mean_test_a" in got.cv_results_


def test_part_of_the_grid_falls_back():
    """Grid dicts (and grid points) glru cannot compute exactly run GridSearchCV on the same
    splits; the rest is exact; ranks and the best index cover the whole grid."""
    X, y = labelled(13, 36, 5)
    cv = KFold(4, shuffle=True, random_state=7)
    estimator = LogisticRegression(solver="saga", max_iter=5000, random_state=0)
    exact_part = {"C": CS}
    other = [{"C": [0.3], "fit_intercept": [False]}, {"C": [0.2], "l1_ratio": [1.0]}]
    with pytest.warns(FallbackWarning, match="2 of 6 grid points") as caught:
        got = GLRUSearchCV(estimator, [exact_part] + other, cv=cv).fit(X, y)
    assert "fit_intercept" in str(caught[0].message) and "l1_ratio=1.0" in got.fallback_reason_
    exact = exact_search(estimator, exact_part, X, y, cv=cv).cv_results_
    plain = GridSearchCV(estimator, other, cv=list(cv.split(X, y))).fit(X, y).cv_results_
    for key in ("mean_test_score", "std_test_score", "split3_test_score"):
        np.testing.assert_array_equal(got.cv_results_[key], np.concatenate([exact[key], plain[key]]))
    means = got.cv_results_["mean_test_score"]
    np.testing.assert_array_equal(got.cv_results_["rank_test_score"], rankdata(-means, method="min"))
    assert got.best_index_ == np.flatnonzero(means == means.max())[0]
    assert got.cv_results_["param_fit_intercept"].mask.tolist() == [True] * 4 + [False, True]


# ---- scikit-learn's protocol
def test_delegation_and_attributes():
    X, y = labelled(14, 40, 5)
    y = np.where(y == 1, "yes", "no")
    got = only_glru(GLRUSearchCV(LogisticRegression(), {"C": CS}, cv=4), X, y)
    reference = LogisticRegression(C=got.best_params_["C"]).fit(X, y)
    np.testing.assert_array_equal(got.predict(X), reference.predict(X))
    np.testing.assert_allclose(got.predict_proba(X), reference.predict_proba(X))
    np.testing.assert_allclose(got.decision_function(X), reference.decision_function(X))
    np.testing.assert_array_equal(got.classes_, ["no", "yes"])
    assert got.score(X, y) == reference.score(X, y) and got.n_features_in_ == 5 and got.refit_time_ > 0
    assert not hasattr(got, "transform")
    no_refit = only_glru(GLRUSearchCV(LogisticRegression(), {"C": CS}, cv=4, refit=False), X, y)
    assert no_refit.best_index_ == got.best_index_ and not hasattr(no_refit, "best_estimator_")
    with pytest.raises(AttributeError):
        no_refit.predict(X)
    chosen = only_glru(GLRUSearchCV(LogisticRegression(), {"C": CS}, cv=4,
                                    refit=lambda results: int(np.argmax(results["param_C"]))), X, y)
    assert chosen.best_params_ == {"C": max(CS)} and not hasattr(chosen, "best_score_")


def test_groups_reach_the_splitter():
    X, y = labelled(15, 30, 4)
    groups = np.arange(30) % 5
    got = GLRUSearchCV(LogisticRegression(), {"C": CS}, cv=GroupKFold(5)).fit(X, y, groups=groups)
    expected = GridSearchCV(ExactRefit(LogisticRegression()), {"estimator__C": CS}, cv=GroupKFold(5))
    expected.fit(X, y, groups=groups)
    np.testing.assert_array_equal(got.cv_results_["mean_test_score"], expected.cv_results_["mean_test_score"])


def test_scikit_learn_estimator_checks():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)  # the checks' multiclass data
        # (a RuntimeWarning, an error in this suite) GridSearchCV's, on the checks' data with NaN
        warnings.simplefilter("ignore", FitFailedWarning)
        # cv=2, as scikit-learn checks GridSearchCV
        check_estimator(GLRUSearchCV(LogisticRegression(), {"C": [0.1, 1.0]}, cv=2))


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_input_is_reported_like_grid_search(bad):
    """GridSearchCV's folds fail (their scores are error_score) and its refit raises."""
    X, y = labelled(16, 30, 4)
    X[3, 1] = bad
    with pytest.raises(ValueError, match="NaN|infinity"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its folds' failures
        GridSearchCV(LogisticRegression(), {"C": CS}, cv=3).fit(X, y)
    with pytest.raises(ValueError, match="NaN|infinity"), pytest.warns(FallbackWarning, match="NaN|infinity"), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore", FitFailedWarning)
        GLRUSearchCV(LogisticRegression(), {"C": CS}, cv=3).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = GLRUSearchCV(LogisticRegression(), {"C": CS}, cv=3, refit=False).fit(X, y)
        theirs = GridSearchCV(LogisticRegression(), {"C": CS}, cv=3, refit=False).fit(X, y)
    np.testing.assert_array_equal(ours.cv_results_["mean_test_score"], theirs.cv_results_["mean_test_score"])
    assert np.all(np.isnan(ours.cv_results_["mean_test_score"]))


@pytest.mark.parametrize("params", [dict(prune="yes"), dict(cv="five"), dict(param_grid={"C": []})])
def test_bad_parameters_raise(params):
    X, y = labelled(17, 30, 4)
    kwargs = dict(estimator=LogisticRegression(), param_grid={"C": CS}) | params
    with pytest.raises(ValueError):
        GLRUSearchCV(**kwargs).fit(X, y)


def test_sparse_input_other_than_csr():
    X, y = labelled(18, 30, 4, sparse=True)
    dense = only_glru(GLRUSearchCV(LinearSVC(), {"C": CS}, cv=3), X.toarray(), y)
    csc = only_glru(GLRUSearchCV(LinearSVC(), {"C": CS}, cv=3), sp.csc_matrix(X), y)
    np.testing.assert_array_equal(dense.cv_results_["mean_test_score"], csc.cv_results_["mean_test_score"])


def test_multiclass_one_vs_rest_equals_exact_grid_search():
    rng = np.random.default_rng(21)
    X = rng.standard_normal((45, 4))
    y = np.argmax(X @ rng.standard_normal((4, 3)) + rng.standard_normal((45, 3)), axis=1)
    grid = {"C": [0.01, 0.1, 1.0]}
    got = GLRUSearchCV(LinearSVC(), grid, cv=3).fit(X, y)
    expected = GridSearchCV(ExactRefit(LinearSVC()), {"estimator__C": grid["C"]}, cv=3).fit(X, y)
    np.testing.assert_array_equal(got.cv_results_["mean_test_score"], expected.cv_results_["mean_test_score"])
    assert got.best_index_ == expected.best_index_ and got.fallback_reason_ is None


@pytest.mark.parametrize("cv", [LeaveOneOut(), KFold(4, shuffle=True, random_state=0)], ids=["loo", "kfold"])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_ridge_alpha_grid_equals_grid_search(cv, fit_intercept):
    rng = np.random.default_rng(5)
    X = rng.standard_normal((40, 6))
    y = X @ rng.standard_normal(6) + rng.standard_normal(40) + 2.0
    grid = {"alpha": [10.0, 1e-3, 0.1, 1.0, 100.0]}
    got = GLRUSearchCV(Ridge(fit_intercept=fit_intercept), grid, cv=cv, scoring="neg_mean_squared_error").fit(X, y)
    expected = GridSearchCV(Ridge(fit_intercept=fit_intercept, solver="cholesky"), grid, cv=cv,
                            scoring="neg_mean_squared_error").fit(X, y)
    np.testing.assert_allclose(got.cv_results_["mean_test_score"], expected.cv_results_["mean_test_score"],
                               rtol=1e-9)
    assert got.best_params_ == expected.best_params_ and got.fallback_reason_ is None
    np.testing.assert_allclose(got.predict(X), expected.predict(X), rtol=1e-8)
    with pytest.warns(FallbackWarning, match="solver"):  # a grid over another parameter: GridSearchCV for it
        GLRUSearchCV(Ridge(), [grid, {"solver": ["svd"]}], cv=cv, scoring="neg_mean_squared_error").fit(X, y)


def test_multiclass_leave_one_out_on_digits_equals_exact_grid_search():
    """Real data, multinomial LogisticRegression (scikit-learn's default), leave-one-out."""
    X, y = load_digits(n_class=4, return_X_y=True)
    rows = np.random.default_rng(0).choice(X.shape[0], size=36, replace=False)
    X, y = X[rows] / 16.0, y[rows]
    grid = {"C": [0.3, 0.01]}
    got = only_glru(GLRUSearchCV(LogisticRegression(), grid, cv=LeaveOneOut()), X, y)
    assert_same_results(got, exact_search(LogisticRegression(), grid, X, y, cv=LeaveOneOut()), X.shape[0])


@pytest.mark.parametrize("estimator", [LogisticRegression(), LinearSVC()], ids=repr)
def test_real_data_equals_exact_grid_search(shared_data, estimator):
    """mushrooms (shared LIBSVM data, sparse): leave-one-out and 5-fold on a random subset."""
    X, y = load_svmlight_file(str(shared_data / "mushrooms.gz"))
    rows = np.sort(np.random.default_rng(0).choice(X.shape[0], size=60, replace=False))
    X, y = X[rows], y[rows]
    grid = {"C": [1.0, 0.01, 0.1]}
    for cv in (LeaveOneOut(), StratifiedKFold(5, shuffle=True, random_state=0)):
        got = only_glru(GLRUSearchCV(estimator, grid, cv=cv), X, y)
        assert_same_results(got, exact_search(estimator, grid, X, y, cv=cv), cv.get_n_splits(X, y))
