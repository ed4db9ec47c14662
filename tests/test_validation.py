"""Bad input to the public API gives a clear ValueError that names the problem; good input of
every accepted form (labels, negative indices, sparse matrices) goes through."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import glru

N, D = 14, 4
BINARY = ("logistic", "squared_hinge", "smoothed_hinge")
REGRESSION = ("squared", "huber")


def data(seed=0, n=N, d=D):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y01 = (X @ rng.normal(size=d) + 0.5 * rng.normal(size=n) > 0).astype(int)
    y01[:2] = [0, 1]
    return X, y01


def with_bad_entry(X, value, sparse):
    X = X.copy()
    X[3, 2] = value
    return sp.csr_matrix(X) if sparse else X


@pytest.fixture(scope="module", params=[
    dict(loss="logistic", fit_intercept=True, sparse=False),
    dict(loss="squared", fit_intercept=False, sparse=True),
], ids=["logistic-intercept-dense", "squared-sparse"])
def fitted(request):
    X, y01 = data()
    y = y01 if request.param["loss"] in BINARY else X[:, 0] + 0.3 * X[:, 1]
    Xf = sp.csr_matrix(X) if request.param["sparse"] else X
    f = glru.fit(Xf, y, loss=request.param["loss"], lam=0.1, fit_intercept=request.param["fit_intercept"])
    return f, X, y


# ------------------------------------------------------------------ glru.fit


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("value, message", [(np.nan, "NaN"), (np.inf, "infinity"), (-np.inf, "infinity")])
@pytest.mark.parametrize("loss", ["logistic", "squared"])
def test_fit_rejects_nonfinite_X(sparse, value, message, loss):
    X, y = data()
    with pytest.raises(ValueError, match=rf"\bX\b.*{message}"):
        glru.fit(with_bad_entry(X, value, sparse), y, loss=loss)


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("loss", REGRESSION)
def test_fit_rejects_nonfinite_y_regression(value, loss):
    X, _ = data()
    y = X[:, 0].copy()
    y[5] = value
    with pytest.raises(ValueError, match=r"y contains NaN or infinity"):
        glru.fit(X, y, loss=loss)


@pytest.mark.parametrize("bad", [np.inf, -np.inf, "nan-two-classes", "nan-three-classes"])
def test_fit_rejects_nonfinite_labels_classification(bad):
    X, y01 = data()
    y = y01.astype(float)
    if bad == "nan-two-classes":
        y[y == 1] = np.nan
    elif bad == "nan-three-classes":
        y[5] = np.nan
    else:
        y[y == 1] = bad
    with pytest.raises(ValueError, match=r"NaN|infinity|finite"):
        glru.fit(X, y, loss="logistic")


def test_fit_rejects_nan_label_among_two_classes_somehow():
    """Whatever the message, a NaN label is never fitted silently."""
    X, y01 = data()
    for y in (np.where(y01 == 1, np.nan, 0.0), np.r_[y01[:-1], np.nan]):
        with pytest.raises(ValueError, match="(?i)nan"):
            glru.fit(X, y, loss="logistic")


@pytest.mark.parametrize("n_y", [N - 1, N + 1, 1])
@pytest.mark.parametrize("loss", ["logistic", "squared"])
def test_fit_rejects_mismatched_lengths(n_y, loss):
    X, y01 = data()
    y = np.resize(y01, n_y) if n_y > 1 else np.array([0])
    with pytest.raises(ValueError, match=rf"y has {n_y} entries but X has {N} rows"):
        glru.fit(X, y, loss=loss)


def test_fit_rejects_2d_y():
    X, y01 = data()
    with pytest.raises(ValueError, match="1d"):
        glru.fit(X, np.c_[y01, y01], loss="squared")


@pytest.mark.parametrize("loss", BINARY)
@pytest.mark.parametrize("y_kind, n_classes", [("one", 1), ("three", 3), ("strings3", 3)])
def test_binary_losses_need_exactly_two_classes(loss, y_kind, n_classes):
    X, y01 = data()
    y = {"one": np.ones(N), "three": np.arange(N) % 3,
         "strings3": np.array(["a", "b", "c"])[np.arange(N) % 3]}[y_kind]
    with pytest.raises(ValueError, match=rf"exactly two classes in y; got {n_classes}"):
        glru.fit(X, y, loss=loss)


@pytest.mark.parametrize("lam", [-1.0, -1e-9, np.nan, np.inf])
def test_fit_rejects_bad_lam(lam):
    X, y = data()
    with pytest.raises(ValueError, match="lam must be"):
        glru.fit(X, y, lam=lam)


@pytest.mark.parametrize("kappa", [-1.0, -1e-9, np.nan, np.inf])
def test_fit_rejects_bad_kappa(kappa):
    X, y = data()
    with pytest.raises(ValueError, match="kappa must be"):
        glru.fit(X, y, lam=0.1, kappa=kappa)


@pytest.mark.parametrize("loss", ["hinge", "Logistic", "l2", ""])
def test_fit_rejects_unknown_loss(loss):
    X, y = data()
    with pytest.raises(ValueError, match=rf"Unknown loss '{loss}'"):
        glru.fit(X, y, loss=loss)


def test_fit_rejects_empty_and_1d_X():
    X, y = data()
    with pytest.raises(ValueError, match="sample"):
        glru.fit(X[:0], y[:0])
    with pytest.raises(ValueError, match="2D"):
        glru.fit(X[:, 0], y)


# ------------------------------------------------------------------ labels


@pytest.mark.parametrize("labels", [(0, 1), ("a", "b"), (1, 2), (-1, 1), (2.5, -7.0), ("yes", "no")])
@pytest.mark.parametrize("loss", BINARY)
def test_classification_labels_round_trip(labels, loss):
    X, y01 = data(seed=1)
    y = np.array(labels, dtype=object if isinstance(labels[0], str) else None)[y01]
    f = glru.fit(X, y, loss=loss, lam=0.1)
    expected_classes = np.sort(np.array(labels))
    np.testing.assert_array_equal(f.classes_, expected_classes)
    pred = f.predict(X)
    assert set(pred.tolist()) <= set(expected_classes.tolist())
    # the larger label is the positive class: predict follows the sign of the decision function
    scores = f.decision_function(X)
    np.testing.assert_array_equal(pred == expected_classes[1], scores > 0)
    # ... and the model actually separates the labels it was given (not their swap)
    assert np.mean(pred == y) >= 0.8
    assert scores[y == expected_classes[1]].mean() > scores[y == expected_classes[0]].mean()
    # and the fit is the one of the ±1 encoding
    ref = glru.fit(X, np.where(y == expected_classes[1], 1.0, -1.0), loss=loss, lam=0.1)
    np.testing.assert_allclose(f.coef_, ref.coef_, rtol=1e-10, atol=1e-12)


def test_label_order_of_appearance_does_not_matter():
    X, y01 = data(seed=2)
    y = np.where(y01 == 1, "a", "b")  # "b" (the larger) first appears for y01 == 0
    f = glru.fit(X, y, lam=0.1)
    np.testing.assert_array_equal(f.classes_, ["a", "b"])
    assert np.mean(f.predict(X) == y) >= 0.8
    g = glru.fit(X, np.where(y01 == 1, -1.0, 1.0), lam=0.1)
    np.testing.assert_allclose(f.coef_, g.coef_, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("loss", REGRESSION)
@pytest.mark.parametrize("kind", ["ints", "huge", "tiny", "negative", "two-values", "constant", "list"])
def test_regression_accepts_any_real_y(loss, kind):
    X, y01 = data(seed=3)
    base = X[:, 0] - 2 * X[:, 1]
    y = {"ints": np.arange(N) * 7 - 30, "huge": 1e6 * base, "tiny": 1e-5 * base, "negative": -np.abs(base) - 5,
         "two-values": y01 * 3.0, "constant": np.full(N, 2.5), "list": base.tolist()}[kind]
    f = glru.fit(X, y, loss=loss, lam=0.1)
    assert f.classes_ is None
    pred = f.predict(X)
    assert pred.dtype == np.float64
    np.testing.assert_array_equal(pred, f.decision_function(X))
    assert np.all(np.isfinite(f.coef_))
    assert f.converged_


def test_regression_tiny_targets_converge_with_default_solver():
    X, _ = data(seed=3)
    y = 1e-10 * (X[:, 0] - 2 * X[:, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = glru.fit(X, y, loss="squared", lam=0.1)
        ref = glru.fit(X, y, loss="squared", lam=0.1, solver="newton")
    assert ref.converged_
    assert f.converged_


# ------------------------------------------------------------------ remove_samples / remove_features

BAD_INDICES = [
    ("out-of-range", lambda n: [n], r"out of range"),
    ("negative-out-of-range", lambda n: [-n - 1], r"out of range"),
    ("duplicate", lambda n: [1, 1], r"duplicates"),
    ("duplicate-via-negative", lambda n: [0, -n], r"duplicates"),
    ("empty", lambda n: [], r"empty"),
    ("empty-int-array", lambda n: np.array([], dtype=np.int64), r"empty"),
    ("float", lambda n: [0.5], r"integer indices"),
    ("float-mixed", lambda n: np.array([1.0, 2.5]), r"integer indices"),
    ("nan", lambda n: [np.nan], r"integer indices"),
    ("bool-mask", lambda n: np.arange(n) % 2 == 0, r"boolean mask"),
    ("bool-scalar", lambda n: True, r"boolean mask"),
    ("string", lambda n: ["0"], r"integer indices"),
    ("all", lambda n: list(range(n)), r"remove all"),
    ("all-negative", lambda n: list(range(-1, -n - 1, -1)), r"remove all"),
]


@pytest.mark.parametrize("case, make, message", BAD_INDICES, ids=[c[0] for c in BAD_INDICES])
def test_remove_samples_rejects_bad_indices(fitted, case, make, message):
    f, X, _ = fitted
    with pytest.raises(ValueError, match=rf"rows.*{message}|{message}.*rows"):
        f.remove_samples(make(X.shape[0]))


@pytest.mark.parametrize("case, make, message", BAD_INDICES, ids=[c[0] for c in BAD_INDICES])
def test_remove_features_rejects_bad_indices(fitted, case, make, message):
    f, X, _ = fitted
    with pytest.raises(ValueError, match=rf"cols.*{message}|{message}.*cols"):
        f.remove_features(make(X.shape[1]))


def test_negative_sample_indices_count_from_the_end(fitted):
    f, X, _ = fitted
    n = X.shape[0]
    for neg, pos in (([-1], [n - 1]), ([-n], [0]), ([-1, 2], [n - 1, 2]), (-2, [n - 2])):
        a, b = f.remove_samples(neg), f.remove_samples(pos)
        assert a.n_samples == b.n_samples == n - len(pos)
        assert a.gap == b.gap
        Xa = a.problem().X
        Xa = Xa.toarray() if sp.issparse(Xa) else Xa
        np.testing.assert_array_equal(Xa, np.delete(X, pos, axis=0))


def test_negative_feature_indices_count_from_the_end(fitted):
    f, X, _ = fitted
    d = X.shape[1]
    for neg, pos in (([-1], [d - 1]), ([-d], [0]), ([0, -2], [0, d - 2])):
        a, b = f.remove_features(neg), f.remove_features(pos)
        assert a.n_features == b.n_features == d - len(pos)
        np.testing.assert_array_equal(a.coef_centre, np.delete(f.coef_, pos))
        assert a.gap == b.gap


def test_single_index_and_integral_arrays_accepted(fitted):
    f, X, _ = fitted
    assert f.remove_samples(3).n_samples == X.shape[0] - 1
    assert f.remove_samples(np.array([3, 5], dtype=np.int32)).n_samples == X.shape[0] - 2
    assert f.remove_samples(list(range(X.shape[0] - 1))).n_samples == 1
    assert f.remove_features(np.array([1], dtype=np.uint8)).n_features == X.shape[1] - 1


# ------------------------------------------------------------------ add_samples


def _new_labels(f, y, m):
    return y[:m] if f.classes_ is not None else np.linspace(-1, 1, m)


def test_add_samples_wrong_width(fitted):
    f, X, y = fitted
    for width in (X.shape[1] - 1, X.shape[1] + 2):
        with pytest.raises(ValueError, match=rf"X_new has {width} features, expected {X.shape[1]}"):
            f.add_samples(np.ones((2, width)), _new_labels(f, y, 2))
    with pytest.raises(ValueError, match=r"X_new has"):
        f.add_samples(sp.csr_matrix(np.ones((2, X.shape[1] + 1))), _new_labels(f, y, 2))


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("value, message", [(np.nan, "NaN"), (np.inf, "infinity")])
def test_add_samples_nonfinite_X(fitted, sparse, value, message):
    f, X, y = fitted
    X_new = X[:3].copy()
    X_new[1, 0] = value
    X_new = sp.csr_matrix(X_new) if sparse else X_new
    with pytest.raises(ValueError, match=rf"X_new contains {message}"):
        f.add_samples(X_new, _new_labels(f, y, 3))


def test_add_samples_nonfinite_y(fitted):
    f, X, y = fitted
    y_new = np.array(_new_labels(f, y, 3), dtype=float)
    y_new[1] = np.nan
    with pytest.raises(ValueError, match=r"(?i)y_new.*nan"):
        f.add_samples(X[:3], y_new)


@pytest.mark.parametrize("bad", [[0, 2], [-1, 1], [5, 5], [0.5, 1]])
def test_add_samples_unknown_labels(bad):
    X, y01 = data()
    f = glru.fit(X, y01, lam=0.1)
    with pytest.raises(ValueError, match=r"y_new contains labels .* not in classes \[0, 1\]"):
        f.add_samples(X[:2], bad)


@pytest.mark.parametrize("loss", REGRESSION)
def test_add_samples_regression_accepts_any_real_label(loss):
    X, _ = data()
    f = glru.fit(X, X[:, 0], loss=loss, lam=0.1)
    cert = f.add_samples(X[:2], [1e6, -3.25])
    assert cert.n_samples == X.shape[0] + 2 and np.isfinite(cert.gap)


def test_add_samples_unknown_string_labels():
    X, y01 = data()
    f = glru.fit(X, np.array(["a", "b"])[y01], lam=0.1)
    with pytest.raises(ValueError, match=r"y_new contains labels \['c'\]"):
        f.add_samples(X[:2], ["a", "c"])
    assert f.add_samples(X[:2], ["b", "a"]).n_samples == N + 2


@pytest.mark.parametrize("m_y", [1, 3])
def test_add_samples_mismatched_lengths(fitted, m_y):
    f, X, y = fitted
    with pytest.raises(ValueError, match=rf"y_new has {m_y} entries but .* 2 rows"):
        f.add_samples(X[:2], _new_labels(f, y, m_y))


# ------------------------------------------------------------------ add_features


@pytest.mark.parametrize("rows", [N - 1, N + 1, 1])
def test_add_features_wrong_rows(fitted, rows):
    f, X, _ = fitted
    with pytest.raises(ValueError, match=rf"X_cols has {rows} rows, expected {N}"):
        f.add_features(np.ones((rows, 2)))


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("value, message", [(np.nan, "NaN"), (-np.inf, "infinity")])
def test_add_features_nonfinite(fitted, sparse, value, message):
    f, X, _ = fitted
    cols = X[:, :2] ** 2
    cols[4, 1] = value
    with pytest.raises(ValueError, match=rf"X_cols contains {message}"):
        f.add_features(sp.csr_matrix(cols) if sparse else cols)


# ------------------------------------------------------------------ decision_bounds widths


def test_decision_bounds_width_on_fit(fitted):
    f, X, _ = fitted
    cert = f.certificate()
    lo, hi = cert.decision_bounds(X[:3])
    assert np.all(lo <= hi)
    for width in (X.shape[1] - 1, X.shape[1] + 1):
        with pytest.raises(ValueError, match=rf"X_eval has {width} features, expected {X.shape[1]}"):
            cert.decision_bounds(np.ones((2, width)))
    with pytest.raises(ValueError, match=r"X_eval contains NaN"):
        cert.decision_bounds(np.full((1, X.shape[1]), np.nan))
    with pytest.raises(ValueError, match=r"intercept must be"):
        cert.decision_bounds(X[:2], intercept="slow")


def test_decision_bounds_width_after_remove_features(fitted):
    f, X, _ = fitted
    cert = f.remove_features([1, -1])
    reduced = np.delete(X, [1, X.shape[1] - 1], axis=1)
    lo, hi = cert.decision_bounds(reduced[:4])
    assert lo.shape == (4,) and np.all(lo <= hi)
    lo_s, hi_s = cert.decision_bounds(sp.csr_matrix(reduced[:4]))
    np.testing.assert_allclose(lo_s, lo)
    with pytest.raises(ValueError, match=rf"X_eval has {X.shape[1]} features, expected {X.shape[1] - 2}"):
        cert.decision_bounds(X[:4])


def test_decision_bounds_width_after_add_features(fitted):
    f, X, _ = fitted
    new = np.c_[X[:, 0] * X[:, 1], np.sin(X[:, 2]), X[:, 3] ** 2]
    cert = f.add_features(new)
    enlarged = np.c_[X, new]
    lo, hi = cert.decision_bounds(enlarged[:4])
    assert lo.shape == (4,) and np.all(lo <= hi)
    with pytest.raises(ValueError, match=rf"X_eval has {X.shape[1]} features, expected {X.shape[1] + 3}"):
        cert.decision_bounds(X[:4])


def test_decision_bounds_width_after_row_changes(fitted):
    f, X, y = fitted
    for cert in (f.remove_samples([0, 3]), f.add_samples(X[:2] + 0.1, _new_labels(f, y, 2))):
        assert cert.decision_bounds(X[:2])[0].shape == (2,)
        with pytest.raises(ValueError, match=r"X_eval has 5 features, expected 4"):
            cert.decision_bounds(np.ones((2, 5)))


# ------------------------------------------------------------------ radius needs lam > 0


def _quiet_fit(*args, **kwargs):
    # a lasso fit warns (see test_lasso_fit_emits_no_runtime_warning); that is not under test here
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return glru.fit(*args, **kwargs)


@pytest.mark.parametrize("loss", ["logistic", "squared"])
def test_radius_needs_lam(loss):
    X, y01 = data()
    y = y01 if loss == "logistic" else X[:, 0]
    f = _quiet_fit(X, y, loss=loss, lam=0.0, kappa=0.05)
    for cert in (f.certificate(), f.remove_samples([0]), f.remove_features([0]), f.add_features(X[:, :1] ** 2)):
        with pytest.raises(ValueError, match=r"lam > 0.*lam=0\.0"):
            cert.radius
    g = glru.fit(X, y, loss=loss, lam=0.1, kappa=0.05)
    assert np.isfinite(g.certificate().radius) and g.certificate().radius >= 0


def test_lasso_fit_emits_no_runtime_warning():
    X, _ = data()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        f = glru.fit(X, X[:, 0] + 0.1, loss="squared", lam=0.0, kappa=0.05)
    assert f.converged_
