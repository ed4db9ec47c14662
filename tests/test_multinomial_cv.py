"""Multinomial LogisticRegression cross-validation (glru.multinomial_cv) against exact refits of
every fold: scores, decision bounds, folds missing a class, the engine's batched certificates
against MultinomialProblem's, stepwise selection and grid search."""

import functools
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import example, given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_digits
from sklearn.exceptions import FitFailedWarning
from sklearn.feature_selection import SequentialFeatureSelector
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import check_scoring
from sklearn.model_selection import GridSearchCV, KFold, LeaveOneOut, StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import glru.fold_refit as fold_refit
import glru.multinomial_cv as multinomial_cv
from glru.cross_validation import Fold
from glru.multinomial import MultinomialProblem, enforce_zero_class_sums, solve_multinomial
from glru.multinomial_cv import cross_validate_multinomial
from glru.solver import newton_polish
from sklearn_ext import GLRUCrossValidator, GLRUSearchCV, GLRUStepwiseSelector, cross_val_score

from ._exact import ExactRefit, TiesToFirstClass, exact_estimator
from .test_multiclass import multiclass_problem

ESTIMATORS = [LogisticRegression(C=0.5), LogisticRegression(C=3.0, fit_intercept=False)]
CVS = {"loo": LeaveOneOut(), "kfold": StratifiedKFold(4, shuffle=True, random_state=0)}


@functools.lru_cache(maxsize=None)
def _exact_fits(estimator_index, cv_name, sparse):
    """Exact refits of every split (cached: shared by the scorers)."""
    X, y = multiclass_problem(3, 40, 5, 4, sparse=sparse)
    estimator = ESTIMATORS[estimator_index]
    splits = list(CVS[cv_name].split(X, y))
    return X, y, splits, [exact_estimator(estimator, X[train], y[train]) for train, _ in splits]


def exact_scores(estimator, X, y, splits, scoring=None, fits=None):
    scorer = check_scoring(estimator, scoring=scoring)
    fits = fits or [exact_estimator(estimator, X[train], y[train]) for train, _ in splits]
    return np.array([scorer(TiesToFirstClass(fit), X[test], y[test]) for fit, (_, test) in zip(fits, splits)])


@pytest.mark.parametrize("estimator_index", [0, 1], ids=["intercept", "no-intercept"])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("cv_name,scoring", [("loo", "accuracy"), ("loo", "f1_macro"), ("kfold", "accuracy"),
                                             ("kfold", "f1_macro"), ("kfold", "neg_log_loss")])
def test_scores_equal_exact_refits(estimator_index, cv_name, sparse, scoring):
    # (log loss of a single held-out row fails in scikit-learn: no leave-one-out with it)
    X, y, splits, fits = _exact_fits(estimator_index, cv_name, sparse)
    estimator = ESTIMATORS[estimator_index]
    validator = GLRUCrossValidator(estimator, cv=CVS[cv_name], scoring=scoring).fit(X, y)
    assert validator.fallback_reason_ is None
    expected = exact_scores(estimator, X, y, splits, scoring, fits)
    if scoring == "neg_log_loss":  # from the fold models, exact to rounding
        np.testing.assert_allclose(validator.scores_, expected, rtol=1e-9)
        assert validator.n_retrained_ == len(splits)
    else:
        np.testing.assert_array_equal(validator.scores_, expected)
    assert validator.decision_bounds_.shape == (X.shape[0], 4, 2)


def test_leave_one_out_certifies_most_folds_on_digits():
    X, y = load_digits(return_X_y=True)
    X, y = X[:250] / 16.0, y[:250]
    validator = GLRUCrossValidator(LogisticRegression(), cv=LeaveOneOut()).fit(X, y)
    assert validator.n_certified_ >= 240 and validator.fallback_reason_ is None
    rng = np.random.default_rng(0)
    for i in rng.choice(250, size=12, replace=False):  # a sample of folds against exact refits
        train = np.flatnonzero(np.arange(250) != i)
        fit = exact_estimator(LogisticRegression(), X[train], y[train])
        assert validator.scores_[i] == float(fit.predict(X[i:i + 1])[0] == y[i])


@pytest.mark.parametrize("n_classes", [3, 4])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_class_missing_from_a_training_fold(n_classes, fit_intercept):
    """Leave-one-out on a class with one row: that fold's model knows the other classes only
    (with two left, scikit-learn's binary model), as scikit-learn's would."""
    X, y = multiclass_problem(2, 30, 4, n_classes)
    y[y == n_classes - 1] = 0
    y[5] = n_classes - 1
    estimator = LogisticRegression(C=0.8, fit_intercept=fit_intercept)
    splits = list(LeaveOneOut().split(X, y))
    got = cross_val_score(estimator, X, y, cv=LeaveOneOut())
    np.testing.assert_array_equal(got, exact_scores(estimator, X, y, splits))
    assert got[5] == 0.0
    # the fold models (need="values"): the exact refit on the classes the fold holds
    folds = [Fold(train, test) for train, test in splits]
    lam_for = estimator_lam(estimator)
    result = cross_validate_multinomial(X, y, n_classes, folds, lam_for, fit_intercept, need="values")
    for k in (5, 0):
        exact = exact_estimator(estimator, X[folds[k].train], y[folds[k].train])
        outcome = result.outcomes[k]
        np.testing.assert_array_equal(outcome.classes, exact.classes_)
        np.testing.assert_allclose(outcome.coef, exact.coef_, atol=1e-9)
        np.testing.assert_allclose(outcome.intercept, exact.intercept_, atol=1e-9)


def estimator_lam(estimator):
    return lambda n_train: 1.0 / (n_train * estimator.C)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_decision_bounds_contain_exact_scores_per_class(fit_intercept):
    X, y = multiclass_problem(8, 36, 5, 3)
    estimator = LogisticRegression(C=2.0, fit_intercept=fit_intercept)
    validator = GLRUCrossValidator(estimator, cv=LeaveOneOut()).fit(X, y)
    bounds = validator.decision_bounds_
    assert bounds.shape == (36, 3, 2) and np.all(bounds[:, :, 0] <= bounds[:, :, 1])
    for row, i in enumerate(validator.held_out_indices_):
        train = np.flatnonzero(np.arange(36) != i)
        values = exact_estimator(estimator, X[train], y[train]).decision_function(X[i:i + 1])[0]
        assert np.all(bounds[row, :, 0] - 1e-9 <= values) and np.all(values <= bounds[row, :, 1] + 1e-9)
    assert np.median(bounds[:, :, 1] - bounds[:, :, 0]) < 1.0  # informative, not just sound


def test_fold_models_equal_exact_refits():
    """need="values": every fold iterated (chord steps) or solved to rounding level."""
    X, y = multiclass_problem(4, 32, 4, 3)
    folds = [Fold(np.flatnonzero(np.arange(32) != i), [i]) for i in range(32)]
    result = cross_validate_multinomial(X, y, 3, folds, lambda m: 1.0 / (m * 1.5), True, need="values")
    assert result.n_retrained == 32
    for fold, outcome in zip(folds, result.outcomes):
        exact = exact_estimator(LogisticRegression(C=1.5), X[fold.train], y[fold.train])
        np.testing.assert_allclose(outcome.coef, exact.coef_, atol=1e-10)
        np.testing.assert_allclose(outcome.intercept, exact.intercept_, atol=1e-10)


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("sparse", [False, True])
def test_batched_gaps_equal_multinomial_problem(fit_intercept, sparse):
    """The engine's gaps, computed for many folds at once from the full X, are
    MultinomialProblem.duality_gap's on each fold's own rows."""
    X, y = multiclass_problem(6, 30, 4, 3, sparse=sparse)
    folds = [Fold(np.setdiff1d(np.arange(30), left), left) for left in ([0], [1], [2, 7, 11])]
    engine = multinomial_cv._Engine(X, y, 3, folds, lambda m: 0.7 / m, fit_intercept, "labels",
                                    dict(n_jobs=None, verbose=0, pre_dispatch="2*n_jobs"))
    engine.run()
    rng = np.random.default_rng(1)
    Z = engine._centred(engine.z0 + 0.05 * rng.normal(size=(3, engine.p)))
    n_T = np.array([f.train.size for f in folds])
    state = multinomial_cv._BlockState(engine, [0, 1, 2], n_T, 0.7 / n_T)
    ev = state.evaluate(np.arange(3), Z)
    for j, fold in enumerate(folds):
        problem = MultinomialProblem(X[fold.train], y[fold.train], 3, 0.7 / fold.train.size, fit_intercept)
        W, b = engine.problem.unpack(Z[j])
        reference = problem.duality_gap(W - W.mean(axis=0), b)
        assert abs(ev.gap[j] - reference.gap) <= 1e-9 * reference.gap
        if fit_intercept:  # the same feasible dual point
            alpha = ev.A[j][:, fold.train].T
            np.testing.assert_allclose(alpha, enforce_zero_class_sums(
                problem.dual_point(problem.scores(W - W.mean(axis=0), b)), problem.y), atol=1e-14)


def test_conjugate_gradient_fold_steps(monkeypatch):
    """Without a dense Hessian (large K·d), the fold steps use conjugate gradients: same scores."""
    X, y = multiclass_problem(9, 30, 4, 3)
    monkeypatch.setattr(multinomial_cv, "NEWTON_MAX_DIM", 5)
    got = cross_val_score(LogisticRegression(C=0.4), X, y, cv=LeaveOneOut())
    np.testing.assert_array_equal(got, exact_scores(LogisticRegression(C=0.4), X, y, list(LeaveOneOut().split(X, y))))


@pytest.mark.parametrize("scoring", ["accuracy", "neg_log_loss"])
def test_folds_without_dense_hessians(monkeypatch, scoring):
    """Where the dense Hessians are estimated to cost more than the folds' conjugate gradients
    (``_dense_pays_off``: K·d far above the rows, few folds), K-fold certifies and solves without
    them: exact labels and values."""
    X, y = multiclass_problem(12, 40, 30, 3)
    monkeypatch.setattr(multinomial_cv, "_dense_pays_off", lambda *args: False)
    cv = KFold(4, shuffle=True, random_state=1)
    got = cross_val_score(LogisticRegression(C=0.5), X, y, cv=cv, scoring=scoring)
    expected = exact_scores(LogisticRegression(C=0.5), X, y, list(cv.split(X, y)), scoring)
    if scoring == "accuracy":
        np.testing.assert_array_equal(got, expected)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-9)


def test_dense_hessians_only_where_they_pay_off():
    """A p × p Hessian costs n·p² + p³/3 to form and factor: kept for leave-one-out on digits
    (p = 649, 1797 folds), not for 4 folds of a one-hot 330 × 1126 set with 3 classes (p = 3380:
    18.9 s with it, 2.7 s without, scikit-learn 1.5 s)."""
    X = load_digits().data / 16
    assert multinomial_cv._dense_pays_off(X, 10, 649, X.shape[0])
    one_hot = (np.random.default_rng(0).random((330, 1126)) < 0.05).astype(float)
    assert not multinomial_cv._dense_pays_off(one_hot, 3, 3380, 4)


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_preconditioned_newton_steps_reach_the_optimum(monkeypatch, fit_intercept, sparse):
    """Newton steps by conjugate gradients preconditioned with a kept factorization (forced here on
    a small problem) after L-BFGS from zeros: the optimum of an independent solve, with fewer
    factorizations than steps; a kept factorization too poor for PRECONDITIONED_CG_STEPS is
    replaced."""
    X, y = multiclass_problem(5, 120, 12, 4, sparse=sparse)
    problem = MultinomialProblem(X, y, 4, 1.0 / (120 * 5.0), fit_intercept)
    reference = solve_multinomial(X, y, 4, problem.lam, fit_intercept, tol=1e-14)
    newton = multinomial_cv._DenseNewton(problem)
    newton.precondition = True
    factorizations, steps = [], []
    factorize, newton_step = newton._factorize, newton.newton_step
    monkeypatch.setattr(newton, "_factorize", lambda z: factorizations.append(z) or factorize(z))
    monkeypatch.setattr(newton, "newton_step", lambda g, z, rtol: steps.append(rtol) or newton_step(g, z, rtol))
    z, done = newton.minimize(problem.pack(np.zeros((4, 12)), np.zeros(4)))
    assert done
    coef, intercept = problem.unpack(z)
    np.testing.assert_allclose(coef, reference.coef, atol=1e-7 * np.abs(reference.coef).max())
    np.testing.assert_allclose(intercept, reference.intercept, atol=1e-7 * (1 + np.abs(reference.intercept).max()))
    assert 1 <= len(factorizations) < len(steps)
    # zeros are a far start (gap > COLD_GAP): L-BFGS takes it to ROUGH_GAP before any Hessian
    zeros = problem.pack(np.zeros((4, 12)), np.zeros(4))
    assert newton._gap(zeros).relative_gap > multinomial_cv.COLD_GAP
    assert problem.duality_gap(*problem.unpack(newton._rough_start(zeros))).relative_gap <= multinomial_cv.ROUGH_GAP
    # a factorization far from the point, with a CG budget of one step, is replaced: an exact step
    monkeypatch.setattr(multinomial_cv, "PRECONDITIONED_CG_STEPS", 1)
    factorize(zeros)
    kept = newton.factor
    g = problem.grad(z + 0.1)
    step = newton_step(g, z + 0.1, 1e-12)
    assert newton.factor is not kept
    np.testing.assert_allclose(step, -np.linalg.solve(problem.hessian(z + 0.1), g), rtol=1e-6, atol=1e-12)


def test_solved_folds_are_polished_to_rounding_level():
    """A fold solved from the full fit, with its factorization kept (the full fit's, or the
    fold's own from an earlier point), ends where Newton steps with fresh factorizations leave
    it: at rounding level, as the tie band of its labels assumes. (Chord steps with such a
    factorization stopped 1e-6 short on digits.)"""
    X, y = load_digits(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    *full, preconditioner = multinomial_cv.solve_fold(X, y, 10, 1.0 / X.shape[0], True, with_factor=True)
    assert isinstance(preconditioner, multinomial_cv._Factor)
    train = np.arange(X.shape[0]) % 5 != 0
    for given in (None, preconditioner):
        coef, intercept = multinomial_cv.solve_fold(X[train], y[train], 10, 1.0 / train.sum(), True, *full, given)
        _assert_rounding_level(X[train], y[train], coef, intercept)
    # the engine's solved folds, preconditioned by the full Hessian at the optimum
    folds = [Fold(np.flatnonzero(np.arange(X.shape[0]) % 5 != j), np.flatnonzero(np.arange(X.shape[0]) % 5 == j))
             for j in range(2)]
    result = cross_validate_multinomial(X, y, 10, folds, lambda m: 1.0 / m, True, need="values")
    assert result.n_retrained == 2
    for fold, outcome in zip(folds, result.outcomes):
        _assert_rounding_level(X[fold.train], y[fold.train], outcome.coef, outcome.intercept)


def _assert_rounding_level(X, y, coef, intercept):
    """Newton steps with a fresh factorization at every point do not move (coef, intercept)."""
    problem = MultinomialProblem(X, y, 10, 1.0 / X.shape[0], True)
    fresh = multinomial_cv._DenseNewton(problem)

    def fresh_solve(g, z):
        fresh._factorize(z)
        return fresh.factor.solve(g)
    z = problem.pack(coef, intercept)
    polished = newton_polish(z, problem.grad, problem.hessp, newton_solve=fresh_solve)
    assert np.linalg.norm(polished - z) <= 1e-12 * (1.0 + np.linalg.norm(z))


@pytest.mark.parametrize("left_open", [False, True], ids=["decided", "left open"])
def test_pipeline_folds_decided_before_their_polish(monkeypatch, left_open):
    """A multinomial Pipeline fold whose held-out labels the bounds at the end of its Newton steps
    decide is not polished, and counts as retrained; one they leave open (forced here) is
    polished and read at rounding level. Scores of exact refits either way."""
    original, calls = fold_refit.centre_fold_outcome, []

    def bounds_after_the_solve(*args, **kwargs):
        outcome = original(*args, **kwargs)
        calls.append(np.all(outcome.decided))
        if left_open:
            outcome._winner[:] = -1
        return outcome
    monkeypatch.setattr(fold_refit, "centre_fold_outcome", bounds_after_the_solve)
    polished = []

    def solve_fold(*args, polish=True):
        polished.append(polish)
        return multinomial_cv.solve_fold(*args, polish=polish)
    monkeypatch.setattr(fold_refit, "solve_fold", solve_fold)
    X, y = multiclass_problem(8, 90, 6, 3)
    estimator, cv = make_pipeline(StandardScaler(), LogisticRegression(C=2.0)), StratifiedKFold(3)
    validator = GLRUCrossValidator(estimator, cv=cv).fit(X, y)
    assert len(calls) == 3 and validator.n_retrained_ == 3
    assert all(calls)
    assert polished == ([False, True] * 3 if left_open else [False] * 3)
    np.testing.assert_array_equal(validator.scores_, exact_scores(estimator, X, y, list(cv.split(X, y))))


def test_preconditioning_only_where_a_hessian_is_dear():
    """Digits' p = 649 keeps factorizations for conjugate gradients; a small p factors afresh."""
    X, y = load_digits(return_X_y=True)
    assert multinomial_cv._preconditioning_pays_off(MultinomialProblem(X / 16, y, 10, 1e-3, True))
    X, y = multiclass_problem(5, 178, 13, 3)
    assert not multinomial_cv._preconditioning_pays_off(MultinomialProblem(X, y, 3, 1e-3, True))


@pytest.mark.parametrize("cv", [StratifiedKFold(3), LeaveOneOut()], ids=["3-fold", "loo"])
def test_scores_with_preconditioned_newton_steps(monkeypatch, cv):
    """Every solve through preconditioned Newton steps (forced): scores of exact refits, with and
    without a StandardScaler."""
    monkeypatch.setattr(multinomial_cv, "_preconditioning_pays_off", lambda problem: True)
    preconditioners = []  # a Pipeline's folds start from the full fit's factorization

    def solve_fold(*args, **kwargs):
        if len(args) > 7:  # (a fold's solve from the full fit; not the polish that may follow it)
            preconditioners.append(args[7])
        return multinomial_cv.solve_fold(*args, **kwargs)
    monkeypatch.setattr(fold_refit, "solve_fold", solve_fold)
    X, y = multiclass_problem(8, 60, 6, 3)
    for estimator in (LogisticRegression(C=2.0), make_pipeline(StandardScaler(), LogisticRegression(C=2.0))):
        got = cross_val_score(estimator, X, y, cv=cv)
        np.testing.assert_array_equal(got, exact_scores(estimator, X, y, list(cv.split(X, y))))
    assert preconditioners and all(isinstance(p, multinomial_cv._Factor) for p in preconditioners)


def test_elastic_net_multinomial_falls_back():
    from sklearn_ext import FallbackWarning
    X, y = multiclass_problem(10, 30, 3, 3)
    estimator = LogisticRegression(l1_ratio=0.5, solver="saga", max_iter=5000)
    with pytest.warns(FallbackWarning, match="L1 term"):
        GLRUCrossValidator(estimator, cv=3).fit(X, y)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(9, 26), d=st.integers(1, 8), n_classes=st.integers(3, 5),
       log10_C=st.floats(-2.0, 2.0), fit_intercept=st.booleans(), sparse=st.booleans(), loo=st.booleans())
# classes 0 and 1 with the same training rows in fold 7: an exact tie, which the first class wins
@example(seed=93, n=9, d=1, n_classes=3, log10_C=0.0, fit_intercept=True, sparse=True, loo=True)
def test_property_multinomial_equals_exact_refits(seed, n, d, n_classes, log10_C, fit_intercept, sparse, loo):
    X, y = multiclass_problem(seed, n, d, n_classes, sparse=sparse)
    estimator = LogisticRegression(C=10.0 ** log10_C, fit_intercept=fit_intercept)
    cv = LeaveOneOut() if loo else KFold(4, shuffle=True, random_state=seed)
    splits = list(cv.split(X, y))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitFailedWarning)
        got = GLRUCrossValidator(estimator, cv=cv).fit(X, y).scores_
    ok = np.array([np.unique(y[train]).size >= 2 for train, _ in splits])
    expected = exact_scores(estimator, X, y, [s for s, keep in zip(splits, ok) if keep])
    np.testing.assert_array_equal(got[ok], expected)


@pytest.mark.parametrize("direction", ["backward", "forward"])
def test_stepwise_matches_sequential_feature_selector(direction):
    X, y = multiclass_problem(0, 48, 5, 3)
    got = GLRUStepwiseSelector(LogisticRegression(C=0.5), direction=direction, n_features_to_select=2,
                               cv=3).fit(X, y)
    expected = SequentialFeatureSelector(ExactRefit(LogisticRegression(C=0.5)), direction=direction,
                                         n_features_to_select=2, cv=3).fit(X, y)
    np.testing.assert_array_equal(got.support_, expected.support_)
    assert got.fallback_reason_ is None


def test_grid_search_equals_exact_grid_search():
    X, y = multiclass_problem(21, 45, 4, 3)
    grid = {"C": [0.01, 0.1, 1.0, 10.0]}
    got = GLRUSearchCV(LogisticRegression(), grid, cv=3, return_train_score=True).fit(X, y)
    expected = GridSearchCV(ExactRefit(LogisticRegression()), {"estimator__C": grid["C"]}, cv=3,
                            return_train_score=True).fit(X, y)
    np.testing.assert_array_equal(got.cv_results_["mean_test_score"], expected.cv_results_["mean_test_score"])
    np.testing.assert_array_equal(got.cv_results_["mean_train_score"], expected.cv_results_["mean_train_score"])
    assert got.best_index_ == expected.best_index_ and got.fallback_reason_ is None
    assert isinstance(sp.csr_matrix(X), sp.csr_matrix)


@pytest.mark.parametrize("cv,rough,scoring", [(StratifiedKFold(5), True, "accuracy"),
                                              (StratifiedKFold(5), True, "neg_log_loss"),
                                              (LeaveOneOut(), False, "accuracy")], ids=["5-fold-labels",
                                                                                       "5-fold-values", "loo"])
def test_full_fit_only_as_rough_as_its_folds_allow(monkeypatch, cv, rough, scoring):
    """cross_val_score solves a multinomial Pipeline's full fit to MULTINOMIAL_ROUGH_TOL only where
    every fold holds out at least 1/40 of the rows (it only starts them), and factors its Hessian
    there for their steps; exactly on leave-one-out, whose folds its bounds decide. The scores are
    the exact refits' either way."""
    import sklearn_ext.cross_validation as module

    tols = []

    def solve_fold(*args, **kwargs):
        tols.append(kwargs.get("tol"))
        return multinomial_cv.solve_fold(*args, **kwargs)
    monkeypatch.setattr(module, "solve_fold", solve_fold)
    X, y = multiclass_problem(12, 60, 6, 3)
    estimator = make_pipeline(StandardScaler(), LogisticRegression(C=5.0))
    splits = list(cv.split(X, y))
    scores = cross_val_score(estimator, X, y, cv=cv, scoring=scoring)
    assert tols == [module.MULTINOMIAL_ROUGH_TOL if rough else None]
    np.testing.assert_allclose(scores, exact_scores(estimator, X, y, splits, scoring), rtol=1e-9, atol=1e-12)
    # the estimator_ that GLRUCrossValidator fits is always exact
    GLRUCrossValidator(estimator, cv=cv, scoring=scoring).fit(X, y)
    assert tols[-1] is None
