"""Reading data files for the command line and the benchmarks: LIBSVM/SVMlight or CSV
(optionally gzipped), and the paper's arcene preprocessing."""

import gzip
from pathlib import Path

import numpy as np
from sklearn.datasets import load_svmlight_file


def load(path, label_column=0):
    """(X, y) from a LIBSVM file (sparse CSR) or a CSV file (dense; labels in ``label_column``).

    The format is guessed from the first line: ``index:value`` pairs mean LIBSVM."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        first = f.readline()
    if ":" in first:
        X, y = load_svmlight_file(str(path))
        return X.tocsr(), y
    delimiter = "," if "," in first else None
    skip = 0 if _is_numeric(first, delimiter) else 1  # a header line
    data = np.loadtxt(path, delimiter=delimiter, skiprows=skip, ndmin=2)
    y = data[:, label_column]
    return np.ascontiguousarray(np.delete(data, label_column, axis=1)), y


def _is_numeric(line, delimiter):
    try:
        [float(v) for v in line.split(delimiter)]
        return True
    except ValueError:
        return False


def load_arcene(directory):
    """The GLRU paper's arcene: train + valid stacked (200 × 10,000), constant features dropped
    (d = 9,961), each feature standardized (population variance)."""
    directory = Path(directory)
    parts = [(directory / f"arcene_{p}.data.gz", directory / f"arcene_{p}.labels.gz") for p in ("train", "valid")]
    X = np.vstack([np.loadtxt(f) for f, _ in parts])
    y = np.concatenate([np.loadtxt(f) for _, f in parts])
    return np.ascontiguousarray(standardize(X)), y


def standardize(X):
    """Drop constant columns, then scale each to mean 0 and variance 1."""
    X = X[:, X.std(axis=0) > 0]
    return (X - X.mean(axis=0)) / X.std(axis=0)
