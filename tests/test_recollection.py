"""Hessian-free recollection unlearning (glru.recollection, sklearn_ext.recollection) against
the replay reference: the same SGD run (same mini-batches and step sizes) without the forgotten
rows, built here by a plain per-row loop that shares no code with the implementation."""

import copy

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st
from sklearn.exceptions import NotFittedError
from sklearn.utils.estimator_checks import check_estimator

from glru.recollection import batch_schedule, step_sizes, train_with_recollections
from sklearn_ext.recollection import RecollectionSGDClassifier, RecollectionSGDRegressor


# ---- the reference -------------------------------------------------------------------------------

def replay(X, y, loss, *, alpha, clip, batches, etas, fit_intercept=True, forgotten=()):
    """Clipped mini-batch SGD one row at a time, skipping ``forgotten`` rows in their batches
    but keeping every other row's coefficient η_t/|B_t| (the paper's retraining rule)."""
    X = X.toarray() if sp.issparse(X) else np.asarray(X)
    d = X.shape[1]
    skip = {int(u) for u in forgotten}
    theta = np.zeros(d + fit_intercept)
    for rows, eta in zip(batches, etas):
        total = np.zeros_like(theta)
        for i in rows:
            if i in skip:
                continue
            x = np.append(X[i], 1.0) if fit_intercept else X[i]
            t = x @ theta
            slope = t - y[i] if loss == "squared" else -y[i] / (1.0 + np.exp(y[i] * t))
            gradient = slope * x
            gradient[:d] += alpha * theta[:d]
            norm = np.linalg.norm(gradient)
            if clip is not None and norm > clip:
                gradient *= clip / norm
            total += gradient
        theta = theta - eta / len(rows) * total
    return theta


def replay_estimator(model, X, y, forgotten=()):
    batches, etas = model.sgd_schedule()
    if isinstance(model, RecollectionSGDClassifier):
        y, loss = np.where(y == model.classes_[1], 1.0, -1.0), "logistic"
    else:
        loss = "squared"
    return replay(X, y, loss, alpha=model.alpha, clip=model.clip, batches=batches, etas=etas,
                  fit_intercept=model.fit_intercept, forgotten=forgotten)


def parameters(model):
    coef = np.ravel(model.coef_)
    return np.append(coef, np.ravel(model.intercept_)) if model.fit_intercept else coef


def problem(seed, n=80, d=5, task="regression", sparse=False, radius=1.5):
    """Rows of norm at most ``radius`` (‖x̃‖² ≤ 4 keeps the paper's assumptions for the logistic loss)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X *= radius * rng.uniform(0.2, 1.0, size=(n, 1)) / np.linalg.norm(X, axis=1, keepdims=True)
    w = rng.normal(size=d)
    y = X @ w + 0.3 * rng.normal(size=n) if task == "regression" else (X @ w + 0.5 * rng.normal(size=n) > 0).astype(int)
    if task == "classification":
        y[:2] = [0, 1]           # both classes present whatever the seed
    if sparse:
        X = sp.csr_matrix(np.where(np.abs(X) < 0.2, 0.0, X))
    return X, y


def distance(a, b):
    return float(np.linalg.norm(a - b))


# ---- training is the plain SGD run -----------------------------------------------------------------

@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("clip", [None, 0.3])
@pytest.mark.parametrize("estimator, task", [(RecollectionSGDRegressor, "regression"),
                                            (RecollectionSGDClassifier, "classification")])
def test_fit_is_the_clipped_sgd_run(estimator, task, clip, sparse):
    X, y = problem(0, task=task, sparse=sparse)
    model = estimator(clip=clip, batch_size=7, n_epochs=3, eta0=0.1, decay=0.99, alpha=0.01, random_state=1).fit(X, y)
    np.testing.assert_allclose(parameters(model), replay_estimator(model, X, y), rtol=0, atol=1e-13)


def test_schedule_is_fixed_by_the_seed():
    first, second = batch_schedule(23, 5, 3, 7), batch_schedule(23, 5, 3, 7)
    assert len(first) == 3 * 5 and all(np.array_equal(a, b) for a, b in zip(first, second))
    for epoch in range(3):
        assert sorted(np.concatenate(first[5 * epoch:5 * epoch + 5])) == list(range(23))
    np.testing.assert_allclose(step_sizes(4, 0.5, 0.9), [0.5, 0.45, 0.405, 0.3645])


# ---- additivity (the paper's Theorem 1) ---------------------------------------------------------------

@pytest.mark.parametrize("estimator, task", [(RecollectionSGDRegressor, "regression"),
                                            (RecollectionSGDClassifier, "classification")])
def test_forgetting_one_at_a_time_equals_forgetting_together(estimator, task):
    X, y = problem(1, task=task)
    params = dict(clip=1.0, batch_size=8, n_epochs=3, random_state=0)
    rows = [5, 17, 40, 41, 66]
    together = estimator(**params).fit(X, y)
    recollections = together.recollections_.copy()
    before = parameters(together)
    together.forget(rows)
    one_by_one = estimator(**params).fit(X, y)
    for u in rows[::-1]:
        one_by_one.forget([u])
    np.testing.assert_allclose(parameters(one_by_one), parameters(together), rtol=0, atol=1e-14)
    # recollections of disjoint sets add: the change is their sum, and each set's own change adds up
    np.testing.assert_allclose(parameters(together) - before, recollections[rows].sum(axis=0), atol=1e-14)
    split = estimator(**params).fit(X, y).forget(rows[:2])
    first = parameters(split) - before
    second = parameters(split.forget(rows[2:])) - before - first
    np.testing.assert_allclose(first + second, recollections[rows].sum(axis=0), atol=1e-14)
    assert together.n_forgotten_ == one_by_one.n_forgotten_ == 5
    assert not together.recollections_[rows].any() and together.forgotten_[rows].all()


# ---- linear model: exact where the SGD map is affine --------------------------------------------------

@pytest.mark.parametrize("n_epochs", [1, 4])
@pytest.mark.parametrize("sparse", [False, True])
def test_linear_single_row_forget_is_the_replay(n_epochs, sparse):
    X, y = problem(2, sparse=sparse)
    model = RecollectionSGDRegressor(clip=None, batch_size=6, n_epochs=n_epochs, eta0=0.1, decay=0.995, alpha=0.01,
                                     random_state=3).fit(X, y)
    original = parameters(model)
    for u in [0, 13, 79]:
        reference = replay_estimator(model, X, y, forgotten=[u])
        forgotten = original + model.recollections_[u]
        assert distance(forgotten, reference) < 1e-10 * max(1.0, np.linalg.norm(reference))
        assert distance(original, reference) > 1e-4          # the row did matter


def test_linear_single_row_needs_the_self_term_excluded():
    """The paper's literal eq. 8 keeps u's own Hessian at u's later steps: not exact over epochs."""
    X, y = problem(3)
    batches, etas = batch_schedule(80, 8, 3, 0), step_sizes(30, 0.1, 0.99)
    options = dict(alpha=0.01, clip=None, batches=batches, etas=etas)
    reference = replay(X, y, "squared", forgotten=[9], **options)
    refined, R = train_with_recollections(X, y, "squared", **options)
    literal, R_literal = train_with_recollections(X, y, "squared", exclude_self=False, **options)
    assert distance(refined + R[:, 9], reference) < 1e-12
    assert distance(literal + R_literal[:, 9], reference) > 1e-6


def test_linear_set_forget_is_exact_within_one_batch_of_one_epoch():
    X, y = problem(4)
    model = RecollectionSGDRegressor(clip=None, batch_size=10, n_epochs=1, eta0=0.1, random_state=0).fit(X, y)
    rows = model.sgd_schedule()[0][3][:6]
    reference = replay_estimator(model, X, y, forgotten=rows)
    assert distance(parameters(model.forget(rows)), reference) < 1e-12


def test_linear_set_forget_misses_only_second_order_cross_terms():
    """Several rows over several epochs: Σ a_u is not the replay (which is not additive in the
    rows), but the missing cross terms carry an extra factor of the step size, so the error
    relative to the change shrinks with η₀."""
    X, y = problem(5)
    rows = [3, 30, 31, 50, 77]
    relative = []
    for eta0 in [0.1, 0.025]:
        model = RecollectionSGDRegressor(clip=None, batch_size=8, n_epochs=3, eta0=eta0, decay=1.0, alpha=0.01,
                                         random_state=0).fit(X, y)
        original = parameters(model)
        reference = replay_estimator(model, X, y, forgotten=rows)
        error = distance(parameters(model.forget(rows)), reference)
        relative.append(error / distance(original, reference))
        assert 1e-6 < relative[-1] < 0.1
    assert relative[0] > 2 * relative[1]


# ---- logistic model: within the paper's bound, far closer than the original ---------------------------

@pytest.mark.parametrize("sparse", [False, True])
def test_logistic_forget_is_close_to_the_replay(sparse):
    X, y = problem(6, n=120, d=6, task="classification", sparse=sparse)
    model = RecollectionSGDClassifier(clip=1.0, batch_size=10, n_epochs=4, eta0=0.2, decay=0.99, alpha=0.01,
                                      random_state=0).fit(X, y)
    original = parameters(model)
    rows = [1, 7, 8, 30, 64, 90, 119]
    reference = replay_estimator(model, X, y, forgotten=rows)
    error = distance(parameters(model.forget(rows)), reference)
    assert error <= model.error_bound_
    assert error < 0.05 * distance(original, reference)


def test_error_bound_is_the_papers_closed_form():
    """With an intercept (λ = 0) and ηM ≤ 2, ρ = 1, and the proof's bound of Theorem 2 reads
    (2η²C/(1−q))[(1−q^T)/(1−q) − (1−q^{2T})/(1−q²)] + Σ_u (2Cη/|B|) Σ_e q^{t_e(u)}."""
    X, y = problem(7, n=60, task="classification")
    eta, q, C, m = 0.1, 0.98, 2.0, 6
    model = RecollectionSGDClassifier(clip=C, batch_size=m, n_epochs=3, eta0=eta, decay=q, random_state=0).fit(X, y)
    batches, _ = model.sgd_schedule()
    T = len(batches)
    common = 2 * eta**2 * C / (1 - q) * ((1 - q**T) / (1 - q) - (1 - q**(2 * T)) / (1 - q**2))
    rows = [4, 11, 12]
    steps = [t for t, batch in enumerate(batches) for u in batch if u in rows]
    expected = common + sum(2 * C * eta / m * q**t for t in steps)
    model.forget(rows)
    assert model.error_bound_ == pytest.approx(expected, rel=1e-12)


# ---- calibrated noise ---------------------------------------------------------------------------------

def test_noise_scale_is_the_gaussian_mechanism_on_the_bound():
    X, y = problem(8, n=60, d=400, task="classification")
    params = dict(clip=1.0, batch_size=6, n_epochs=2, eta0=0.05, decay=0.99, random_state=0)
    epsilon, delta = 0.5, 1e-4
    quiet = RecollectionSGDClassifier(**params).fit(X, y)
    noisy = RecollectionSGDClassifier(**params, epsilon=epsilon, delta=delta).fit(X, y)
    factor = np.sqrt(2 * np.log(1.25 / delta)) / epsilon
    for rows in ([3, 4], [20]):
        before = quiet.error_bound_
        quiet.forget(rows)
        noisy.forget(rows)
        assert noisy.error_bound_ == quiet.error_bound_ > before
        # σ for everything forgotten so far; the second call only tops the variance up to it
        assert noisy.noise_std_ == pytest.approx(quiet.error_bound_ * factor, rel=1e-12)
        noise = parameters(noisy) - parameters(quiet)          # 401 independent draws
        assert abs(noise.mean()) < 4 * noisy.noise_std_ / np.sqrt(noise.size)
        assert noise.std() == pytest.approx(noisy.noise_std_, rel=0.15)


def test_noise_needs_a_finite_bound_and_leaves_the_model_unchanged():
    X, y = problem(9, task="classification")
    model = RecollectionSGDClassifier(clip=None, epsilon=1.0, random_state=0).fit(X, y)
    before = parameters(model)
    with pytest.raises(ValueError, match="finite error bound"):
        model.forget([3])
    np.testing.assert_array_equal(parameters(model), before)
    assert model.n_forgotten_ == 0 and model.recollections_[3].any()


# ---- property test over random problems ---------------------------------------------------------------

@given(seed=st.integers(0, 2**16), task=st.sampled_from(["regression", "classification"]),
       clip=st.sampled_from([None, 0.5, 5.0]), n=st.integers(60, 100), d=st.integers(1, 6),
       batch_size=st.integers(1, 12), n_epochs=st.integers(1, 3), n_forget=st.integers(1, 20), data=st.data())
def test_random_problems_and_deletion_sets(seed, task, clip, n, d, batch_size, n_epochs, n_forget, data):
    X, y = problem(seed, n=n, d=d, task=task)
    estimator = RecollectionSGDRegressor if task == "regression" else RecollectionSGDClassifier
    model = estimator(clip=clip, batch_size=batch_size, n_epochs=n_epochs, eta0=0.1, decay=0.99, alpha=0.01,
                      random_state=seed).fit(X, y)
    # rows 0 and 1 stay, so that both classes do
    rows = data.draw(st.lists(st.integers(2, n - 1), min_size=1, max_size=n_forget, unique=True))
    original = parameters(model)
    reference = replay_estimator(model, X, y, forgotten=rows)
    # additivity, in a random order of calls
    sequential = copy.deepcopy(model)
    for u in data.draw(st.permutations(rows)):
        sequential.forget([u])
    forgotten = parameters(model.forget(rows))
    np.testing.assert_allclose(parameters(sequential), forgotten, rtol=0, atol=1e-12)
    # against the replay: within the paper's bound (the theorem); for the logistic model also
    # closer than the original, an observation and no theorem: below 0.15 of the original's
    # distance in 300 random draws, but hypothesis found 0.54 (seed 1, n 60, d 4, batch_size 1,
    # one epoch, 12 rows forgotten; 0.5 was asserted before). Not asserted for sets of the linear
    # model: the rows' effects can cancel in the replay while the cross terms do not (ratio up
    # to 1.25 seen with d = 1).
    error, change = distance(forgotten, reference), distance(original, reference)
    assert error <= model.error_bound_
    if task == "classification":
        assert error < change
    if task == "regression" and clip is None and len(rows) == 1:
        assert error <= 1e-10 * max(1.0, np.linalg.norm(reference))


# ---- scikit-learn API --------------------------------------------------------------------------------

@pytest.mark.parametrize("estimator", [RecollectionSGDClassifier(random_state=0),
                                       RecollectionSGDRegressor(random_state=0)])
def test_check_estimator(estimator):
    check_estimator(estimator)


def assert_forget_refused(model, rows, match):
    before = (parameters(model), model.recollections_.copy(), model.n_forgotten_, model.forgotten_.copy())
    with pytest.raises(ValueError, match=match):
        model.forget(rows)
    after = (parameters(model), model.recollections_, model.n_forgotten_, model.forgotten_)
    for old, new in zip(before, after):
        np.testing.assert_array_equal(old, new)


def test_bad_forget_requests_raise_and_leave_the_model_unchanged():
    X, y = problem(10, n=30, task="classification")
    model = RecollectionSGDClassifier(random_state=0, epsilon=1.0, clip=1.0).fit(X, y).forget([5])
    assert_forget_refused(model, [3, 3], "more than once")
    assert_forget_refused(model, [3, 30], "out of range")
    assert_forget_refused(model, [-1], "out of range")
    assert_forget_refused(model, [5], "already forgotten")
    assert_forget_refused(model, [1.0], "integer")
    assert_forget_refused(model, [True], "integer")
    assert_forget_refused(model, [[1, 2]], "integer")
    negatives = np.flatnonzero((y == 0) & (np.arange(30) != 5))
    assert_forget_refused(model, negatives, "every training row of a class")
    regressor = RecollectionSGDRegressor(random_state=0).fit(*problem(10, n=30))
    regressor.forget(np.arange(29))
    assert_forget_refused(regressor, [29], "every training row")
    assert model.forget([]).n_forgotten_ == 1


def test_bad_fit_input():
    X, y = problem(11, task="classification")
    with pytest.raises(NotFittedError):
        RecollectionSGDClassifier().forget([0])
    with pytest.raises(ValueError, match="Only binary"):
        RecollectionSGDClassifier().fit(X, np.arange(80) % 3)
    with pytest.raises(ValueError, match="eta0"):
        RecollectionSGDClassifier(eta0=0.0).fit(X, y)
    with pytest.raises(ValueError, match="epsilon"):
        RecollectionSGDClassifier(epsilon=2.0).fit(X, y)
    with pytest.raises(ValueError, match="decay"):
        RecollectionSGDRegressor(decay=1.5).fit(*problem(11))
    with pytest.raises(ValueError, match="diverged"):
        RecollectionSGDRegressor(clip=None, eta0=1e3, decay=1.0, n_epochs=50,
                                 random_state=0).fit(*problem(11, radius=20.0))
