"""Coded machine unlearning (glru.coded_shards, sklearn_ext.coded.CodedShardRegressor): after
forget(rows) the model is the one retraining the coded shards without those rows gives, with
the same generator matrix and shard layout; rate 1 is per-shard scikit-learn fits averaged and
one shard is a single scikit-learn fit."""

import copy

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LinearRegression, Ridge
from sklearn.utils.estimator_checks import parametrize_with_checks

from glru.coded_shards import CodedShards, generator_matrix, shard_layout
from sklearn_ext.coded import CodedShardRegressor

RTOL = 1e-10


def problem(seed, n, d, offset=0.0):
    """Features with mixed scales and a common offset; y with an intercept of 3."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * rng.uniform(0.5, 2.0, size=d) + offset
    return X, X @ rng.standard_normal(d) + 3.0 + rng.standard_normal(n)


def retrained_learners(G, shard, position, live, X, y, alpha, fit_intercept):
    """The reference: every coded shard re-encoded from scratch from the live rows (the given G
    and layout), each learner solved by least squares on its rows (not from statistics).

    Returns the learners' weights (intercept last) and which learners have a live row."""
    Z = np.hstack([X, np.ones((X.shape[0], 1))]) if fit_intercept else X
    p, length = Z.shape[1], position.max() + 1
    thetas, has_rows = np.zeros((G.shape[1], p)), np.zeros(G.shape[1], dtype=bool)
    root = np.sqrt(alpha) * np.eye(p)[: X.shape[1]] if alpha > 0 else np.zeros((0, p))
    for j in range(G.shape[1]):
        Zbar, ybar = np.zeros((length, p)), np.zeros(length)
        for u in np.flatnonzero(live & (G[shard, j] != 0)):
            Zbar[position[u]] += G[shard[u], j] * Z[u]
            ybar[position[u]] += G[shard[u], j] * y[u]
        has_rows[j] = (live & (G[shard, j] != 0)).any()
        if has_rows[j]:
            thetas[j] = np.linalg.lstsq(np.vstack([Zbar, root]), np.concatenate([ybar, np.zeros(root.shape[0])]),
                                        rcond=None)[0]
    return thetas, has_rows


def retrained(model, X, y):
    """The reference for a fitted CodedShardRegressor: (coef, intercept, learners' weights), the
    weights averaged over learners with a live row."""
    thetas, has_rows = retrained_learners(model.generator_matrix_, model.row_shard_, model.row_position_,
                                          ~model.forgotten_, X, y, model.alpha, model.fit_intercept)
    mean = thetas[has_rows].mean(axis=0)
    return (mean[:-1], mean[-1], thetas) if model.fit_intercept else (mean, 0.0, thetas)


def assert_close(actual, expected):
    scale = max(1.0, np.abs(expected).max())
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=RTOL * scale)


def assert_retrained(model, X, y):
    coef, intercept, thetas = retrained(model, X, y)
    assert_close(model.coef_, coef)
    assert_close(model.intercept_, intercept)
    weights = np.column_stack([model.shard_coefs_, model.shard_intercepts_]) if model.fit_intercept \
        else model.shard_coefs_
    assert_close(weights, thetas)


# ---- the headline property
@st.composite
def unlearning_problems(draw):
    n_shards = draw(st.integers(1, 6))
    rate = draw(st.sampled_from([r for r in (1, 2, 3, n_shards) if r <= n_shards]))
    d = draw(st.integers(1, 5))
    # every learner keeps ≥ 3p live coded rows after 20 deletions: OLS stays well posed
    per_shard = draw(st.integers(3 * (d + 1) + 20, 3 * (d + 1) + 40))
    n = n_shards * per_shard + draw(st.integers(0, n_shards - 1))  # n mod s leftover rows
    rows = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=20, unique=True))
    cuts = sorted(draw(st.lists(st.integers(1, len(rows)), max_size=2)))
    requests = [rows[a:b] for a, b in zip([0, *cuts], [*cuts, len(rows)]) if b > a]
    return dict(
        seed=draw(st.integers(0, 2**31)), n=n, d=d, offset=draw(st.sampled_from([0.0, 2.5, -10.0])),
        params=dict(alpha=draw(st.sampled_from([0.0, 1e-3, 1.0, 50.0])), n_shards=n_shards, rate=rate,
                    fit_intercept=draw(st.booleans()), random_state=draw(st.integers(0, 1000))),
        requests=requests, method=draw(st.sampled_from(["statistics", "retrain"])),
    )


@settings(max_examples=200)
@given(case=unlearning_problems())
def test_forget_equals_retraining_the_coded_shards(case):
    X, y = problem(case["seed"], case["n"], case["d"], case["offset"])
    model = CodedShardRegressor(**case["params"]).fit(X, y)
    assert_retrained(model, X, y)
    for request in case["requests"]:
        model.forget(request, method=case["method"])
        assert_retrained(model, X, y)
    assert model.n_forgotten_ == sum(map(len, case["requests"]))
    assert np.flatnonzero(model.forgotten_).tolist() == sorted(u for request in case["requests"] for u in request)


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("alpha", [0.0, 2.0])
def test_statistics_and_retrain_give_the_same_model(alpha, fit_intercept):
    X, y = problem(1, 300, 6, offset=1.0)
    params = dict(alpha=alpha, n_shards=8, rate=4, fit_intercept=fit_intercept, random_state=0)
    by_stats, by_retrain = (CodedShardRegressor(**params).fit(X, y) for _ in range(2))
    for request in ([5], [0, 1, 2, 299], list(range(100, 120))):
        by_stats.forget(request)
        by_retrain.forget(request, method="retrain")
        assert_close(by_stats.coef_, by_retrain.coef_)
        assert_close(by_stats.intercept_, by_retrain.intercept_)
    stats, retrain = by_stats.forget_history_[-1], by_retrain.forget_history_[-1]
    assert stats["learners"] == retrain["learners"]
    assert stats["n_rows_retrained"] == 0 and stats["n_statistic_updates"] == 2 * stats["n_coded_rows_updated"]
    length = by_stats.row_position_.max() + 1
    assert retrain["n_rows_retrained"] == length * len(retrain["learners"]) and retrain["n_statistic_updates"] == 0


# ---- the uncoded baseline and the single learner are scikit-learn fits
def sklearn_model(alpha, fit_intercept):
    if alpha > 0:
        return Ridge(alpha=alpha, fit_intercept=fit_intercept)
    return LinearRegression(fit_intercept=fit_intercept)


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("alpha", [0.0, 0.7])
def test_rate_one_is_per_shard_fits_averaged(alpha, fit_intercept):
    X, y = problem(2, 203, 4, offset=2.0)  # 203 = 7·29: shards of 29 rows, no padding
    model = CodedShardRegressor(alpha=alpha, n_shards=7, rate=1, fit_intercept=fit_intercept, random_state=3)
    model.fit(X, y)
    assert sorted(model.generator_matrix_.sum(axis=0).tolist()) == [1] * 7  # a permutation
    for request in (None, [10], [0, 50, 51, 202]):
        if request is not None:
            model.forget(request)
        keep = ~model.forgotten_
        fits = [sklearn_model(alpha, fit_intercept).fit(X[keep & (model.row_shard_ == i)],
                                                        y[keep & (model.row_shard_ == i)]) for i in range(7)]
        assert_close(model.coef_, np.mean([f.coef_ for f in fits], axis=0))
        assert_close(model.intercept_, np.mean([f.intercept_ for f in fits]))


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("alpha", [0.0, 0.7])
def test_one_shard_is_a_single_fit(alpha, fit_intercept):
    X, y = problem(3, 150, 5, offset=-1.0)
    model = CodedShardRegressor(alpha=alpha, n_shards=1, fit_intercept=fit_intercept).fit(X, y)
    for request in (None, [3, 4, 149], [0]):
        if request is not None:
            model.forget(request)
        keep = ~model.forgotten_
        single = sklearn_model(alpha, fit_intercept).fit(X[keep], y[keep])
        assert_close(model.coef_, single.coef_)
        assert_close(model.intercept_, single.intercept_)
        assert_close(model.predict(X), single.predict(X))


# ---- the code and the layout
@given(n_shards=st.integers(1, 40), data=st.data())
def test_generator_matrix_is_the_minimum_cost_design(n_shards, data):
    n_coded = data.draw(st.integers(1, n_shards))
    G = generator_matrix(n_shards, n_coded, np.random.default_rng(data.draw(st.integers(0, 2**31))))
    assert G.shape == (n_shards, n_coded) and set(np.unique(G)) <= {0, 1}
    assert (G.sum(axis=1) == 1).all()  # density 1/r: each uncoded shard in one coded shard
    assert (G.sum(axis=0) >= 1).all()  # every coded shard used
    assert np.linalg.matrix_rank(G.astype(float)) == n_coded


@given(n=st.integers(1, 300), data=st.data())
def test_layout_uses_every_row_once_in_near_equal_shards(n, data):
    s = data.draw(st.integers(1, n))
    shard, position, length = shard_layout(n, s, np.random.default_rng(data.draw(st.integers(0, 2**31))))
    assert length == -(-n // s)
    slots = shard * length + position
    assert np.unique(slots).size == n and (position < length).all()
    sizes = np.bincount(shard, minlength=s)
    assert sizes.max() - sizes.min() <= 1 and sizes.sum() == n


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_denser_codes_forget_from_every_learner_a_row_entered(fit_intercept):
    """ρ > 1/r (the paper's general G): a row enters several learners; all are re-solved."""
    X, y = problem(10, 250, 3, offset=1.5)
    G = np.array([[1, 1, 0], [0, 1, 0], [0, 1, 1], [1, 0, 0], [0, 0, 1]])
    shards = CodedShards(X, y, 5, 3, 0.3, fit_intercept, np.random.default_rng(0), G=G)
    row = int(np.flatnonzero(shards.shard == 2)[0])  # shard 2 enters learners 1 and 2
    for request in ([row], [0, 1, 2, 3, 4, 5], [row + 1, 200]):
        request = [u for u in request if not shards.forgotten[u]]
        cost = shards.forget(request)
        thetas, _ = retrained_learners(shards.G, shards.shard, shards.position, ~shards.forgotten, X, y, 0.3,
                                       fit_intercept)
        assert_close(shards.theta, thetas)
        entered = np.flatnonzero(G[shards.shard[request]].any(axis=0))
        assert cost.learners == tuple(entered)
    with pytest.raises(ValueError, match="full column rank"):
        CodedShards(X, y, 5, 3, 0.3, fit_intercept, np.random.default_rng(0), G=[[1, 0, 0]] * 5)


def test_leftover_rows_are_trained_on():
    X, y = problem(4, 103, 3)  # 103 = 10·10 + 3
    model = CodedShardRegressor(n_shards=10, rate=2, random_state=0).fit(X, y)
    shards = model.coded_shards_
    assert shards.length == 11 and shards.contributors.sum() == 103
    assert_retrained(model, X, y)


def test_forgetting_a_whole_learner_drops_it_from_the_average():
    X, y = problem(5, 120, 2, offset=1.0)
    model = CodedShardRegressor(alpha=1.0, n_shards=6, rate=2, random_state=1).fit(X, y)
    in_first = np.flatnonzero(model.generator_matrix_[model.row_shard_, 0] == 1)
    model.forget(in_first)
    assert_close(model.shard_coefs_[0], np.zeros(2)) and model.shard_intercepts_[0] == 0.0
    assert_close(model.coef_, model.shard_coefs_[1:].mean(axis=0))
    assert_retrained(model, X, y)
    with pytest.raises(ValueError, match="every remaining"):
        model.forget(np.flatnonzero(~model.forgotten_))


def test_rank_deficient_learners_fall_back_to_least_squares():
    """Duplicated columns: OLS learners are singular; the minimum-norm solution of the coded rows
    is used, before and after forgetting, and recorded as a retrain."""
    X, y = problem(6, 90, 3)
    X = np.hstack([X, X[:, :1]])
    model = CodedShardRegressor(n_shards=3, rate=1, random_state=0).fit(X, y)
    assert_retrained(model, X, y)
    model.forget([7, 8])
    assert_retrained(model, X, y)
    assert model.forget_history_[-1]["n_rows_retrained"] > 0


def test_forgotten_rows_are_not_kept():
    X, y = problem(7, 60, 3)
    model = CodedShardRegressor(n_shards=3, rate=3, random_state=0).fit(X, y)
    model.forget([4])
    shards = model.coded_shards_
    assert not shards.Z[4].any() and shards.y[4] == 0.0


# ---- bad input: ValueError, and the model is unchanged
def state(model):
    shards = model.coded_shards_
    return [model.coef_, model.intercept_, model.shard_coefs_, model.forgotten_, len(model.forget_history_),
            shards.Zbar, shards.ybar, shards.A, shards.c, shards.Z, shards.contributors, shards.n_live]


@pytest.mark.parametrize("rows, message", [
    ([3, 3], "more than once"), ([2, 1], "already been forgotten"), ([5, 80], "out of range"),
    ([-1], "out of range"), ([], "empty"), ([0.5], "integer"), (np.ones(80, dtype=bool), "integer"),
])
def test_bad_rows_raise_and_change_nothing(rows, message):
    X, y = problem(8, 80, 3)
    model = CodedShardRegressor(alpha=0.1, n_shards=4, rate=2, random_state=0).fit(X, y).forget([1])
    before = copy.deepcopy(state(model))
    with pytest.raises(ValueError, match=message):
        model.forget(rows)
    for old, new in zip(before, state(model)):
        np.testing.assert_array_equal(old, new)


def test_forget_before_fit_raises():
    with pytest.raises(NotFittedError):
        CodedShardRegressor().forget([0])


@pytest.mark.parametrize("params, message", [
    (dict(n_shards=5, rate=6), "exceeds n_shards"), (dict(n_shards=20), "n_samples = 10"),
    (dict(rate=0.5), "rate"), (dict(alpha=-1.0), "alpha"),
])
def test_bad_parameters_raise(params, message):
    X, y = problem(9, 10, 2)
    with pytest.raises(ValueError, match=message):
        CodedShardRegressor(**params).fit(X, y)


@parametrize_with_checks([CodedShardRegressor(), CodedShardRegressor(alpha=1.0, n_shards=4, rate=2,
                                                                     fit_intercept=False)])
def test_scikit_learn_compatible(estimator, check):
    check(estimator)
