"""GLRUStepwiseSelector against scikit-learn's SequentialFeatureSelector run with exact refits."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import example, given
from hypothesis import strategies as st
from sklearn.feature_selection import SequentialFeatureSelector
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC
from sklearn.utils.estimator_checks import check_estimator

from glru.datasets import load_arcene
from sklearn_ext import FallbackWarning, GLRUStepwiseSelector

from ._exact import ExactRefit
from ._problems import random_problem


def labelled(seed, n, d, sparse=False, noise=1.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * rng.uniform(0.2, 3.0, size=d)
    y = (X @ rng.normal(size=d) + noise * rng.normal(size=n) > 0).astype(int)
    return (sp.csr_matrix(np.where(np.abs(X) < 0.5, 0.0, X)) if sparse else X), y


def reference_support(estimator, X, y, **params):
    """SequentialFeatureSelector with exact refits, with the one deliberate difference: in
    backward "auto" mode with a tol, the first removal must beat the all-features score."""
    selector = SequentialFeatureSelector(ExactRefit(estimator), **params).fit(X, y)
    if params.get("direction") == "backward" and params.get("tol") is not None \
            and params.get("n_features_to_select", "auto") == "auto":
        first = SequentialFeatureSelector(ExactRefit(estimator), **{**params, "tol": None},
                                          n_features_to_select=X.shape[1] - 1).fit(X, y)
        score = cross_val_score(ExactRefit(estimator), X[:, first.support_], y, cv=params.get("cv", 5),
                                scoring=params.get("scoring")).mean()
        everything = cross_val_score(ExactRefit(estimator), X, y, cv=params.get("cv", 5),
                                     scoring=params.get("scoring")).mean()
        if score - everything < params["tol"]:
            return np.ones(X.shape[1], dtype=bool)
    return selector.support_


def assert_same_selection(estimator, X, y, **params):
    got = GLRUStepwiseSelector(estimator, **params).fit(X, y)
    assert got.fallback_reason_ is None
    np.testing.assert_array_equal(got.get_support(), reference_support(estimator, X, y, **params))
    return got


SPLIT = [(np.arange(0, 50), np.arange(50, 80))]
ESTIMATORS = [
    LogisticRegression(C=1.0),
    LogisticRegression(C=0.3, fit_intercept=False),
    LogisticRegression(C=0.5, solver="liblinear", intercept_scaling=2.0),
    LinearSVC(C=0.2),
]


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=repr)
@pytest.mark.parametrize("direction", ["backward", "forward"])
@pytest.mark.parametrize("cv", [SPLIT, 3], ids=["split", "3-fold"])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_selects_what_exact_refits_select(estimator, direction, cv, sparse):
    X, y = labelled(1, 80, 7, sparse=sparse)
    got = assert_same_selection(estimator, X, y, direction=direction, cv=cv, n_features_to_select=3)
    assert len(got.history_) == (4 if direction == "backward" else 3)


@pytest.mark.parametrize("direction,tol", [("backward", -0.02), ("backward", 0.0), ("forward", 0.01)])
def test_tol_stopping_rule(direction, tol):
    X, y = labelled(2, 70, 6)
    assert_same_selection(LogisticRegression(C=0.8), X, y, direction=direction, cv=3, tol=tol)


@pytest.mark.parametrize("scoring", ["f1", "balanced_accuracy", "roc_auc", "neg_log_loss"])
def test_other_scorers(scoring):
    X, y = labelled(3, 60, 5)
    assert_same_selection(LogisticRegression(C=0.5), X, y, direction="backward", cv=3, scoring=scoring,
                          n_features_to_select=2)


def test_elastic_net():
    X, y = labelled(4, 80, 5)
    assert_same_selection(LogisticRegression(C=0.5, l1_ratio=0.3, solver="saga"), X, y, direction="forward",
                          cv=SPLIT, n_features_to_select=2)


@pytest.mark.parametrize("direction", ["backward", "forward"])
def test_ties_go_to_the_lowest_feature_index(direction):
    """Duplicated columns make whole groups of candidates score exactly the same."""
    X, y = labelled(5, 60, 3)
    X = np.hstack([X[:, [0]], X, X[:, [0, 2]], np.zeros((60, 1))])  # 0 = 1 = 4, 3 = 5; 6 is constant
    got = assert_same_selection(LogisticRegression(C=1.0), X, y, direction=direction, cv=3, n_features_to_select=3)
    assert got.support_.sum() == 3


def test_backward_auto_keeps_everything_when_every_removal_hurts():
    """scikit-learn always removes a first feature; the all-features score must be beaten."""
    X, y = labelled(6, 80, 4, noise=0.05)
    selector = GLRUStepwiseSelector(LogisticRegression(C=10.0), direction="backward", cv=3, tol=0.0).fit(X, y)
    assert selector.support_.all() and selector.history_[0]["stopped"]
    assert selector.initial_score_ > selector.history_[0]["score"]
    sklearn_support = SequentialFeatureSelector(ExactRefit(LogisticRegression(C=10.0)), direction="backward", cv=3,
                                                tol=0.0).fit(X, y).support_
    assert not sklearn_support.all()  # the scikit-learn defect this test is about


@given(seed=st.integers(0, 10_000), n=st.integers(24, 60), d=st.integers(2, 6), C=st.floats(1e-2, 1e2),
       fit_intercept=st.booleans(), svc=st.booleans(), sparse=st.booleans(), forward=st.booleans(),
       kfold=st.booleans())
# feature 0 is 0 in every row of a balanced fold: keeping it alone gives exact decision values of 0
# (label 0); the intersection of its two certificates dropped their zero band, and its rounding
# residue, 1.7e-16, was read as positive
@example(seed=40, n=24, d=2, C=1.0, fit_intercept=True, svc=False, sparse=True, forward=False, kfold=False)
# a candidate's start with an intercept near 1e298: the exact intercept bracket's widening overflowed
@example(seed=477, n=24, d=2, C=96.5, fit_intercept=True, svc=False, sparse=False, forward=False, kfold=True)
# a candidate's Newton step with an intercept curvature near 0 (C = 57, one feature left) moved
# its intercept to -1.8e24: the solve from there saw infinite held-out bounds
@example(seed=167, n=26, d=4, C=57.0, fit_intercept=True, svc=False, sparse=False, forward=False, kfold=False)
# the first Newton step of a candidate blew up (its length infinite, the step not taken): with no
# earlier step to compare it with, it was taken for progress, and the same step was tried forever
@example(seed=256, n=24, d=2, C=88.33434132903017, fit_intercept=True, svc=False, sparse=True, forward=False,
         kfold=False)
# the same with LinearSVC: the refit kept feature 0 with w = 0 and b = 2.7e-17 (0 at the optimum, by
# the fold's symmetry) and predicted the positive class; the reference now reads that as 0, as glru does
@example(seed=40, n=24, d=2, C=1.0, fit_intercept=True, svc=True, sparse=True, forward=False, kfold=False)
def test_property_selection_equals_exact_refits(seed, n, d, C, fit_intercept, svc, sparse, forward, kfold):
    X, y = labelled(seed, n, d, sparse=sparse)
    if np.unique(y).size < 2:
        y[:2] = [0, 1]
    est = LinearSVC(C=C, fit_intercept=fit_intercept) if svc else LogisticRegression(C=C, fit_intercept=fit_intercept)
    cv = KFold(3, shuffle=True, random_state=seed) if kfold else [(np.arange(n // 2), np.arange(n // 2, n))]
    if any(np.unique(y[train]).size < 2 for train, _ in (cv.split(X, y) if kfold else cv)):
        return  # scikit-learn's nan scores; the selector falls back (tested below)
    assert_same_selection(est, X, y, direction="forward" if forward else "backward", cv=cv,
                          n_features_to_select=1)


def test_real_data_a9a(shared_data):
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(str(shared_data / "a9a.t.gz"), n_features=123)
    X, y = X.tocsr()[:300], y[:300]
    assert_same_selection(LogisticRegression(), X, y, direction="forward", cv=[(np.arange(200), np.arange(200, 300))],
                          n_features_to_select=3)


def test_real_data_arcene(shared_data):
    X, y = load_arcene(shared_data)
    X = X[:, :150]  # the first 150 features: the exact reference refits every candidate
    assert_same_selection(LogisticRegression(C=1.0 / 100, fit_intercept=False), X, y, direction="backward",
                          cv=[(np.arange(100), np.arange(100, 200))], n_features_to_select=148)


def test_scikit_learn_estimator_checks():
    check_estimator(GLRUStepwiseSelector(LogisticRegression()))


def test_in_a_pipeline_inside_grid_search():
    X, y = labelled(7, 60, 6)
    pipe = make_pipeline(GLRUStepwiseSelector(LogisticRegression(), n_features_to_select=2, cv=3),
                         LogisticRegression())
    search = GridSearchCV(pipe, {"glrustepwiseselector__n_features_to_select": [1, 3]}, cv=3).fit(X, y)
    assert search.best_estimator_[0].support_.sum() == search.best_params_["glrustepwiseselector__n_features_to_select"]
    assert search.transform(X).shape[1] == search.best_estimator_[0].support_.sum() if hasattr(search, "transform") \
        else True
    selector = GLRUStepwiseSelector(LogisticRegression(), n_features_to_select=2, cv=3).fit(X, y)
    assert selector.transform(X).shape == (60, 2)
    assert selector.inverse_transform(selector.transform(X)).shape == X.shape
    assert list(selector.get_feature_names_out()) == [f"x{i}" for i in np.flatnonzero(selector.support_)]


@pytest.mark.parametrize("params,error", [
    (dict(n_features_to_select=6), "n_features_to_select must be < n_features"),
    (dict(n_features_to_select=1.5), "n_features_to_select"),
    (dict(n_features_to_select=0), "n_features_to_select"),
    (dict(direction="forward", tol=-0.1), "tol must be strictly positive"),
    (dict(direction="sideways"), "direction"),
])
def test_bad_parameters_raise(params, error):
    X, y = labelled(8, 30, 6)
    with pytest.raises(ValueError, match=error):
        GLRUStepwiseSelector(LogisticRegression(), **params).fit(X, y)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_input_raises(bad):
    X, y = labelled(9, 30, 4)
    X[3, 1] = bad
    with pytest.raises(ValueError):
        GLRUStepwiseSelector(LogisticRegression()).fit(X, y)


def test_one_feature_raises():
    X, y = labelled(10, 30, 1)
    with pytest.raises(ValueError, match="feature"):
        GLRUStepwiseSelector(LogisticRegression()).fit(X, y)


@pytest.mark.parametrize("estimator,why", [
    (SGDClassifier(random_state=0), "SGDClassifier is not supported"),
    (make_pipeline(StandardScaler(), LogisticRegression()), "preprocessing"),
])
def test_unsupported_estimators_fall_back_with_reason(estimator, why):
    X, y = labelled(11, 40, 4)
    with pytest.warns(FallbackWarning, match=why):
        got = GLRUStepwiseSelector(estimator, n_features_to_select=2, cv=3).fit(X, y)
    expected = SequentialFeatureSelector(estimator, n_features_to_select=2, direction="backward", cv=3).fit(X, y)
    np.testing.assert_array_equal(got.support_, expected.support_)


def test_multiclass_falls_back():
    X, _ = labelled(12, 45, 4)
    y = np.arange(45) % 3
    elastic_net = LogisticRegression(l1_ratio=0.5, solver="saga", max_iter=5000, random_state=0)  # multinomial: L2 only
    with pytest.warns(FallbackWarning, match="multiclass"):
        GLRUStepwiseSelector(elastic_net, n_features_to_select=2, cv=3).fit(X, y)


def test_dask_backend_distributes_the_candidate_solves():
    distributed = pytest.importorskip("distributed")
    import joblib

    X, y = random_problem(13, 40, 5, "logistic")
    y = (y > 0).astype(int)
    params = dict(direction="backward", cv=3, scoring="roc_auc", n_features_to_select=3)  # values: all solved
    expected = reference_support(LogisticRegression(C=0.5), X, y, **params)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        with joblib.parallel_backend("dask"):
            got = GLRUStepwiseSelector(LogisticRegression(C=0.5), n_jobs=-1, **params).fit(X, y)
        # tasks ran on the cluster (transitions are counted even after finished tasks are forgotten)
        assert client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.transition_counter) > 0
    assert got.n_retrained_ > 0
    np.testing.assert_array_equal(got.support_, expected)


def test_sparse_and_dense_select_the_same():
    X, y = labelled(14, 60, 6, sparse=True)
    a = GLRUStepwiseSelector(LogisticRegression(), n_features_to_select=2, cv=3).fit(X, y)
    b = GLRUStepwiseSelector(LogisticRegression(), n_features_to_select=2, cv=3).fit(X.toarray(), y)
    np.testing.assert_array_equal(a.support_, b.support_)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert a.transform(X).shape == (60, 2)


def test_command_line_select(tmp_path, capsys):
    from sklearn.datasets import dump_svmlight_file

    from glru.cli import main

    X, y = labelled(15, 60, 5)
    path = tmp_path / "data.svm"
    dump_svmlight_file(X, y, str(path))
    assert main(["select", str(path), "--direction", "forward", "--n-features", "2", "--cv", "split:40",
                 "-v", "0"]) == 0
    expected = GLRUStepwiseSelector(LogisticRegression(), direction="forward", n_features_to_select=2,
                                    cv=[(np.arange(40), np.arange(40, 60))]).fit(X, y)
    assert f"selected 2 features: {np.flatnonzero(expected.support_).tolist()}" in capsys.readouterr().out
