"""Input checks shared by the engine: clear ``ValueError``s that name the problem."""

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_array, column_or_1d


def check_X(X, name="X", n_features=None):
    """Float64 C-ordered dense array or CSR matrix with finite entries."""
    if _is_clean(X):  # the engine's own hot paths pass arrays that are already valid
        if n_features is not None and X.shape[1] != n_features:
            raise ValueError(f"{name} has {X.shape[1]} features, expected {n_features}.")
        return X
    X = check_array(
        X, accept_sparse="csr", dtype=np.float64, ensure_all_finite=True, input_name=name,
        ensure_min_samples=1, ensure_min_features=1,
    )
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        X.sum_duplicates()
        X.sort_indices()
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(f"{name} has {X.shape[1]} features, expected {n_features}.")
    return X


def _is_clean(X):
    if isinstance(X, np.ndarray):
        return (X.dtype == np.float64 and X.ndim == 2 and X.flags.c_contiguous and min(X.shape) > 0
                and np.isfinite(X).all())
    return (sp.isspmatrix_csr(X) and X.dtype == np.float64 and min(X.shape) > 0 and X.has_canonical_format
            and np.isfinite(X.data).all())


def check_y(y, n_samples, name="y", x_name="X"):
    y = column_or_1d(np.asarray(y), warn=False)
    if y.shape[0] != n_samples:
        raise ValueError(f"{name} has {y.shape[0]} entries but {x_name} has {n_samples} rows.")
    if np.issubdtype(y.dtype, np.number) and not np.all(np.isfinite(y)):
        raise ValueError(f"{name} contains NaN or infinity.")
    return y


def encode_binary(y, classes=None, name="y"):
    """Map a two-class target to −1/+1 (``classes[1]`` → +1, as scikit-learn does)."""
    if classes is None:
        classes = np.unique(y)
        if classes.shape[0] != 2:
            raise ValueError(
                f"A binary classification loss needs exactly two classes in {name}; "
                f"got {classes.shape[0]}: {classes[:10].tolist()}."
            )
    unknown = ~np.isin(y, classes)
    if unknown.any():
        raise ValueError(f"{name} contains labels {np.unique(y[unknown])[:10].tolist()} not in classes {classes.tolist()}.")
    return np.where(y == classes[1], 1.0, -1.0), classes


def check_regression_target(y, name="y"):
    y = np.asarray(y, dtype=np.float64)
    if not np.all(np.isfinite(y)):
        raise ValueError(f"{name} contains NaN or infinity.")
    return y


def check_indices(indices, size, name):
    """Unique in-range integer indices (negative ones count from the end, as in numpy)."""
    idx = np.atleast_1d(np.asarray(indices))
    if idx.size == 0:
        raise ValueError(f"{name} is empty: nothing to change.")
    if idx.dtype == bool:
        raise ValueError(f"{name} must be integer indices, not a boolean mask.")
    if not np.issubdtype(idx.dtype, np.integer):
        if np.issubdtype(idx.dtype, np.floating) and np.all(np.mod(idx, 1) == 0):
            idx = idx.astype(np.int64)
        else:
            raise ValueError(f"{name} must be integer indices, got dtype {idx.dtype}.")
    idx = idx.ravel().astype(np.int64)
    if np.any((idx < -size) | (idx >= size)):
        bad = idx[(idx < -size) | (idx >= size)][:5].tolist()
        raise ValueError(f"{name} {bad} out of range for size {size}.")
    idx = np.where(idx < 0, idx + size, idx)
    if np.unique(idx).shape[0] != idx.shape[0]:
        raise ValueError(f"{name} contains duplicates.")
    if idx.shape[0] >= size:
        raise ValueError(f"{name} would remove all {size}; at least one must remain.")
    return idx
