"""glru.ridge.held_out_predictions against RidgeCV's leave-one-out values, explicit Ridge refits of
every fold, and refits solved in extended precision on degenerate problems."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st
from sklearn.linear_model import Ridge, RidgeCV
from sklearn.model_selection import KFold, LeaveOneOut, ShuffleSplit

import glru.ridge
from glru.ridge import _held_out, held_out_predictions

ALPHAS = np.logspace(-6, 4, 11)
EPS = np.finfo(float).eps
SHAPES = [(40, 12), (12, 40)]
SHAPE_IDS = ["n>d", "n<d"]


def problem(seed, n, d, sparse=False, n_targets=None):
    """Columns of mixed scales and nonzero means; y with an offset (the intercept matters)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * rng.uniform(0.3, 3.0, size=d) + rng.uniform(-2.0, 2.0, size=d)
    if sparse:
        X[rng.random((n, d)) < 0.5] = 0.0
    w = rng.standard_normal((d,) if n_targets is None else (d, n_targets))
    y = X @ w + rng.standard_normal((n,) + w.shape[1:]) + 3.0
    return (sp.csr_matrix(X) if sparse else X), y


def ridge_refits(X, y, folds, alphas, fit_intercept):
    """Ridge(alpha, solver="cholesky") fitted on each fold (on dense X: scikit-learn's cholesky
    does not fit an intercept on sparse X)."""
    X = X.toarray() if sp.issparse(X) else X
    return [np.stack([Ridge(alpha=a, fit_intercept=fit_intercept, solver="cholesky").fit(X[tr], y[tr]).predict(X[te])
                      for a in alphas]) for tr, te in folds]


def longdouble_refits(X, y, folds, alphas, fit_intercept):
    """Each fold's normal equations, centred by its own means, solved by Gaussian elimination in
    extended precision (eps ≈ 1e-19): the exact refit of the float64 data, to well below float64
    rounding, independently of any float64 linear algebra."""
    X = X.toarray() if sp.issparse(X) else X
    y2 = (y[:, None] if y.ndim == 1 else y).astype(np.longdouble)
    out = []
    for train, test in folds:
        XT, XV, yT = X[train].astype(np.longdouble), X[test].astype(np.longdouble), y2[train]
        mu = XT.mean(axis=0) if fit_intercept else np.zeros(X.shape[1], np.longdouble)
        ybar = yT.mean(axis=0) if fit_intercept else np.zeros(y2.shape[1], np.longdouble)
        Xc, yc = XT - mu, yT - ybar
        preds = []
        for alpha in alphas:
            if Xc.shape[0] > Xc.shape[1]:
                w = _gauss_solve(Xc.T @ Xc + np.longdouble(alpha) * np.eye(Xc.shape[1]), Xc.T @ yc)
            else:
                w = Xc.T @ _gauss_solve(Xc @ Xc.T + np.longdouble(alpha) * np.eye(Xc.shape[0]), yc)
            preds.append((XV - mu) @ w + ybar)
        preds = np.array(preds, dtype=np.float64)
        out.append(preds[:, :, 0] if y.ndim == 1 else preds)
    return out


def _gauss_solve(A, b):
    A, b = A.copy(), b.copy()
    k = A.shape[0]
    for j in range(k):
        p = j + int(np.argmax(np.abs(A[j:, j])))
        A[[j, p]], b[[j, p]] = A[[p, j]], b[[p, j]]
        f = A[j + 1:, j] / A[j, j]
        A[j + 1:] -= f[:, None] * A[j]
        b[j + 1:] -= f[:, None] * b[j]
    x = np.zeros_like(b)
    for j in range(k - 1, -1, -1):
        x[j] = (b[j] - A[j, j + 1:] @ x[j + 1:]) / A[j, j]
    return x


def relative_error(got, expected):
    """max |got − expected| / max |expected| over all folds and alphas."""
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.shape == e.shape
    return max(np.abs(g - e).max(initial=0.0) for g, e in zip(got, expected)) / \
        max(np.abs(e).max(initial=0.0) for e in expected)


# ---- leave-one-out against RidgeCV
@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("fit_intercept", [True, False], ids=["intercept", "no-intercept"])
@pytest.mark.parametrize("n_targets", [None, 3], ids=["1-D", "3-targets"])
def test_leave_one_out_matches_ridgecv(shape, sparse, fit_intercept, n_targets):
    X, y = problem(0, *shape, sparse=sparse, n_targets=n_targets)
    folds = list(LeaveOneOut().split(X))
    got = np.concatenate(held_out_predictions(X, y, folds, ALPHAS, fit_intercept), axis=1)
    exact = np.concatenate(longdouble_refits(X, y, folds, ALPHAS, fit_intercept), axis=1)
    scale = np.abs(exact).max()
    np.testing.assert_allclose(got, exact, rtol=0, atol=1e-10 * scale)
    # RidgeCV's Gram (n ≤ d) mode with an intercept gives 1 — in the null space of X̃X̃ᵀ — the
    # weight 1/alpha and subtracts it again (d -= G⁻¹√sw·√sw/Σsw): its own rounding error grows
    # as eps/alpha (1e-8 relative at alpha = 1e-6), so it is compared where it is itself accurate
    keep = ALPHAS >= (1e-4 if fit_intercept and shape[0] <= shape[1] else 0.0)
    # with a scoring, cv_results_ holds the LOO predictions; without, the squared LOO errors
    cv = RidgeCV(alphas=ALPHAS, fit_intercept=fit_intercept, store_cv_results=True,
                 scoring="neg_mean_squared_error").fit(X, y)
    expected = np.moveaxis(cv.cv_results_, -1, 0)  # (n_alphas, n[, n_targets])
    np.testing.assert_allclose(got[keep], expected[keep], rtol=1e-8, atol=1e-8 * scale)
    squared = RidgeCV(alphas=ALPHAS, fit_intercept=fit_intercept, store_cv_results=True).fit(X, y).cv_results_
    np.testing.assert_allclose((y[None] - got[keep]) ** 2, np.moveaxis(squared, -1, 0)[keep], rtol=1e-7,
                               atol=1e-8 * scale ** 2)


# ---- every kind of split against explicit refits
SPLITTERS = {
    "kfold5": KFold(5, shuffle=True, random_state=0),
    "loo": LeaveOneOut(),
    "kfold-small-folds": KFold(6, shuffle=True, random_state=1),
    "shuffle-split": ShuffleSplit(4, train_size=0.5, test_size=0.3, random_state=0),  # train ∪ test ≠ all
}


@pytest.mark.parametrize("splitter", SPLITTERS.values(), ids=SPLITTERS.keys())
@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("fit_intercept", [True, False], ids=["intercept", "no-intercept"])
@pytest.mark.parametrize("method", ["auto", "block", "refit"])
def test_folds_match_ridge_refits(splitter, shape, sparse, fit_intercept, method):
    X, y = problem(1, *shape, sparse=sparse)
    folds = list(splitter.split(X))
    got, stats = _held_out(X, y, folds, ALPHAS, fit_intercept, method)
    assert relative_error(got, ridge_refits(X, y, folds, ALPHAS, fit_intercept)) < 1e-9
    partition = not isinstance(splitter, ShuffleSplit)
    if method == "block" or (method == "auto" and isinstance(splitter, LeaveOneOut)):
        assert stats["block"] == (len(folds) if partition else 0)
    if method == "refit" or not partition:
        assert stats["refit"] == len(folds)


@pytest.mark.parametrize("method", ["block", "refit"])
def test_multi_target_folds(method):
    X, y = problem(2, 30, 8, n_targets=2)
    folds = list(KFold(6).split(X))
    got = held_out_predictions(X, y, folds, ALPHAS, method=method)
    assert got[0].shape == (ALPHAS.shape[0], 5, 2)
    assert relative_error(got, ridge_refits(X, y, folds, ALPHAS, True)) < 1e-9


def test_general_splits_overlapping_and_repeated_rows():
    """Test sets that overlap, training rows drawn with repetition, a training set that is not
    disjoint from its test set: refit, each exactly as Ridge on those rows."""
    X, y = problem(3, 25, 6)
    rng = np.random.default_rng(0)
    folds = [(rng.integers(0, 25, 25), np.arange(5)), (np.arange(20), np.arange(3, 12)),
             (np.arange(10, 25), np.arange(15, 25))]
    got, stats = _held_out(X, y, folds, ALPHAS, True, "auto")
    assert stats == {"block": 0, "refit": 3, "fallback": 0}
    assert relative_error(got, ridge_refits(X, y, folds, ALPHAS, True)) < 1e-9


# ---- numerical care
@pytest.mark.parametrize("fit_intercept", [True, False], ids=["intercept", "no-intercept"])
@pytest.mark.parametrize("splitter", [LeaveOneOut(), KFold(4)], ids=["loo", "kfold4"])
def test_leverage_one_rows_fall_back_to_exact_refits(fit_intercept, splitter, monkeypatch):
    """Row 3 alone in column 0: at small alpha its leverage is 1 − O(alpha), (B) divides two
    O(alpha) quantities swamped by rounding; the condition test must send it to a refit."""
    X, y = problem(4, 50, 8)
    X[:, 0] = 0.0
    X[3, 0] = 100.0
    folds = list(splitter.split(X))
    expected = longdouble_refits(X, y, folds, ALPHAS, fit_intercept)
    got, stats = _held_out(X, y, folds, ALPHAS, fit_intercept, "block")
    assert stats["fallback"] > 0
    assert relative_error(got, expected) < 1e-10
    # the test is not vacuous: without the fallback the closed form alone is far off
    monkeypatch.setattr(glru.ridge, "RCOND_TOL", 0.0)
    unguarded, stats = _held_out(X, y, folds, ALPHAS, fit_intercept, "block")
    assert stats["fallback"] == 0 and relative_error(unguarded, expected) > 1e-8


def test_condition_test_threshold():
    G = np.array([[1.0, 0.0], [0.0, 1e-6]])
    assert glru.ridge._solve_if_well_conditioned(G, np.ones(2), 1e-5) is None
    np.testing.assert_allclose(glru.ridge._solve_if_well_conditioned(G, np.ones(2), 1e-7), [1.0, 1e6])
    assert glru.ridge._solve_if_well_conditioned(-G, np.ones(2), 0.0) is None  # not positive definite


@pytest.mark.parametrize("fit_intercept", [True, False], ids=["intercept", "no-intercept"])
def test_large_offsets_and_scales(fit_intercept):
    """Column means 1e3 × their spread, y offset 1e4: centring by the full-data means is exact
    for every fold (the intercept absorbs it)."""
    X, y = problem(5, 40, 10)
    X = X + 1e3 * np.arange(1, 11)
    folds = list(LeaveOneOut().split(X)) + list(KFold(4).split(X))
    got = held_out_predictions(X, y + 1e4, folds, ALPHAS[4:], fit_intercept)
    assert relative_error(got, longdouble_refits(X, y + 1e4, folds, ALPHAS[4:], fit_intercept)) < 1e-10


def test_sparse_design_is_not_densified(monkeypatch):
    """n > d: only d × d matrices may be made dense."""
    X, y = problem(6, 60, 5, sparse=True)
    shapes = []
    for cls in (sp.csr_matrix, sp.csc_matrix):
        original = cls.toarray

        def spy(self, *args, _original=original, **kwargs):
            shapes.append(self.shape)
            return _original(self, *args, **kwargs)
        monkeypatch.setattr(cls, "toarray", spy)
    folds = list(LeaveOneOut().split(X)) + list(KFold(3).split(X))
    for method in ("block", "refit"):
        held_out_predictions(X, y, folds, ALPHAS, method=method)
    assert shapes and all(s == (5, 5) for s in shapes)


# ---- property test: small random problems with duplicated rows and constant columns
@given(seed=st.integers(0, 2 ** 32 - 1), n=st.integers(3, 14), d=st.integers(1, 14),
       n_duplicates=st.integers(0, 3), n_constant=st.integers(0, 2), sparse=st.booleans(),
       fit_intercept=st.booleans(), kind=st.sampled_from(["loo", "kfold", "shuffle"]),
       alpha=st.sampled_from([1e-6, 1e-3, 1.0, 1e4]))
def test_property_matches_extended_precision_refits(seed, n, d, n_duplicates, n_constant, sparse, fit_intercept,
                                                    kind, alpha):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * rng.uniform(0.2, 3.0, size=d)
    for _ in range(n_duplicates):
        i, j = rng.integers(0, n, 2)
        X[i] = X[j]
    X[:, rng.choice(d, size=min(n_constant, d), replace=False)] = rng.uniform(-3, 3)
    if sparse:
        X[rng.random((n, d)) < 0.4] = 0.0
        X = sp.csr_matrix(X)
    y = rng.standard_normal(n) * 2 + 1
    splitter = {"loo": LeaveOneOut(), "kfold": KFold(min(3, n), shuffle=True, random_state=seed % 1000),
                "shuffle": ShuffleSplit(3, train_size=0.6, test_size=0.3, random_state=seed % 1000)}[kind]
    folds = list(splitter.split(np.zeros(n)))
    alphas = np.array([alpha, 10 * alpha])
    got = held_out_predictions(X, y, folds, alphas, fit_intercept)
    expected = longdouble_refits(X, y, folds, alphas, fit_intercept)
    # rounding of the data alone moves the exact answer by ~ eps·cond(X̃ᵀX̃ + alpha·I)
    Xd = X.toarray() if sparse else X
    Xc = Xd - Xd.mean(axis=0) if fit_intercept else Xd
    cond = (np.linalg.norm(Xc, 2) ** 2 + alpha) / alpha
    scale = max(np.abs(e).max() for e in expected) + np.abs(y).max()
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=0, atol=(1e-10 + 20 * EPS * cond) * scale)


# ---- input handling
def test_shapes_and_masks():
    X, y = problem(7, 10, 3)
    test = np.zeros(10, dtype=bool)
    test[[2, 5]] = True
    folds = [(~test, test), (np.arange(10)[2:], np.array([], dtype=int))]
    got = held_out_predictions(X, y, folds, 0.5)
    assert got[0].shape == (1, 2) and got[1].shape == (1, 0)
    expected = Ridge(alpha=0.5).fit(X[~test], y[~test]).predict(X[test])
    np.testing.assert_allclose(got[0][0], expected, rtol=1e-12)
    got2 = held_out_predictions(X, np.column_stack([y, -y]), folds[:1], [0.5])
    np.testing.assert_allclose(got2[0][0], np.column_stack([expected, -expected]), rtol=1e-12)


@pytest.mark.parametrize("kwargs, match", [
    ({"alphas": [1.0, 0.0]}, "positive"),
    ({"alphas": [np.inf]}, "positive"),
    ({"alphas": []}, "non-empty"),
    ({"folds": []}, "empty"),
    ({"folds": [(np.array([], dtype=int), np.arange(3))]}, "no training rows"),
    ({"folds": [(np.arange(3), np.array([10]))]}, "out of range"),
    ({"folds": [(np.arange(3.5), np.array([4]))]}, "integer"),
    ({"folds": [np.arange(3)]}, "pair"),
    ({"y": np.ones(9)}, "shape"),
    ({"y": np.full(10, np.nan)}, "NaN"),
    ({"method": "qr"}, "method"),
])
def test_invalid_inputs(kwargs, match):
    X, y = problem(8, 10, 3)
    args = {"X": X, "y": y, "folds": [(np.arange(5), np.arange(5, 10))], "alphas": [1.0]} | kwargs
    with pytest.raises(ValueError, match=match):
        held_out_predictions(**args)
