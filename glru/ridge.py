"""Exact held-out predictions of Ridge regression for every fold and every alpha at once.

scikit-learn's Ridge objective, y of shape (n,) or (n, m), the intercept b unpenalized::

    min_{w, b}  ‖y − Xw − 1bᵀ‖² + alpha ‖w‖²                                              (R)

For each fold (T, V) — rows T train, rows V are held out — and each alpha, the prediction on V
of the exact minimizer of (R) over the rows T. One factorization of the full data serves every
alpha and every fold; folds that the closed form cannot resolve to rounding are re-solved
from their own normal equations.

Why the closed form is exact
----------------------------
**1. Centering by a fixed vector is absorbed by the intercept.** For any fixed c ∈ ℝᵈ,
``Xw + 1b = (X − 1cᵀ)w + 1(b + cᵀw)``. The map (w, b) ↦ (w, b + cᵀw) is a bijection that leaves
the penalty alpha‖w‖² unchanged, so (R) on any subset of rows of X and (R) on the same rows of
X − 1cᵀ have minimizers related by it, with identical predictions ``x·w + b = (x − c)·w + b'``
at every point x. Hence every fold may use the same centred design X̃ = X − 1μᵀ, μ the
full-data column means, although each fold's refit (scikit-learn's) centres by its own
training means: the two give the same predictions.

**2. The full-data hat matrix.** Let Z = [X̃, 1], θ = (w, b), P = diag(alpha·I_d, 0) and
A = ZᵀZ + P. As X̃ᵀ1 = 0, A = diag(X̃ᵀX̃ + alpha·I, n): positive definite for alpha > 0. So the
fit is θ = A⁻¹Zᵀy and ŷ = Hy with

    H = Z A⁻¹ Zᵀ = J + X̃(X̃ᵀX̃ + alpha·I)⁻¹X̃ᵀ,     J = 11ᵀ/n.

Without an intercept Z = X, P = alpha·I and J = 0.

**3. Held-out residuals.** Let rows split into T and V, A_T = A − Z_VᵀZ_V = Z_TᵀZ_T + P the
matrix of the refit on T in the same coordinates (positive definite when alpha > 0 and T ≠ ∅;
by 1. its predictions are scikit-learn's refit's), θ_T its solution and r = y_V − Z_Vθ_T the
held-out residual. From Z_Tᵀy_T = Zᵀy − Z_Vᵀy_V::

    A_T θ_T = Aθ − Z_Vᵀy_V   ⇒   Aθ_T = Aθ − Z_Vᵀ r   ⇒   θ_T = θ − A⁻¹Z_Vᵀ r.

Multiplying by Z_V: y_V − r = ŷ_V − H_VV r, i.e. with e = y − ŷ the full-data residuals,

    e_V = (I − H_VV) r,      r = (I − H_VV)⁻¹ e_V,      held-out prediction = y_V − r.     (B)

For leave-one-out this is r_i = e_i / (1 − h_ii). By the determinant lemma
det(A_T) = det(A)·det(I − H_VV), so I − H_VV is nonsingular exactly when the refit has a unique
solution: always, for alpha > 0 — but it may be nearly singular (below).
(B) needs T ∪ V = all rows (T, V disjoint); other splits are refit directly.

How G = I − H is computed
-------------------------
One symmetric eigendecomposition, of the smaller Gram matrix, chosen by shape:

* ``n ≤ d`` ("gram"): X̃X̃ᵀ = QΛQᵀ, Q an orthonormal basis of 1⊥ when the intercept is
  fitted (1 is deflated exactly by a Householder reflection), of ℝⁿ otherwise. Then QQᵀ = I − J
  and ``G = Q diag(g) Qᵀ``, g = alpha/(λ + alpha) ∈ (0, 1], ``e = Gy``: no cancellation;
  rounding errors are of order eps·max_k g_k·‖y‖, so G and e may both be O(alpha) (alpha → 0
  interpolates) and still be accurate relative to each other.
* ``n > d`` ("covariance"): X̃ᵀX̃ = VΛVᵀ (d × d; a sparse X is never densified, only
  d-column blocks of rows of B = X̃V are formed), ``G = I − J − B diag(1/(λ + alpha)) Bᵀ`` and
  ``e = ỹ − B diag(1/(λ + alpha)) Bᵀỹ``, ỹ = y − ȳ: both subtract, rounding errors of order
  eps·‖y‖.

A dense X is centred before its Gram matrix is formed; a sparse X is not (that would densify
it): its uncentred XXᵀ is deflated (gram) or nμμᵀ is subtracted from XᵀX (covariance), as
scikit-learn's RidgeCV does, which loses accuracy when column means dwarf their spread.

Near-singular folds
-------------------
(B) divides a small e_V by a small I − H_VV when a fold's rows carry leverage near 1 (a row
alone in some column, alpha → 0 with n ≤ d, ...): both are then dominated by rounding. The
rounding error of the computed G and e is ≲ c·eps·s·‖y‖, with the scale s = max_k g_k (gram) or
1 (covariance), so that of r is ≲ c·eps·s·‖y‖·‖(I − H_VV)⁻¹‖. A fold is accepted when LAPACK's
condition estimate (Cholesky + ``dpocon``, 1-norm) gives

    1 / ‖(I − H_VV)⁻¹‖₁  ≥  RCOND_TOL · s,      RCOND_TOL = 1e-5,

bounding that error by ≈ c·eps/RCOND_TOL ≈ 2e-11·c relative to ‖y‖. Otherwise (or if the
Cholesky factorization fails) that fold is solved at that alpha from its own normal equations,
centred by its own training means (1.). Exactness does not depend on the threshold: (B) is an
identity, so both branches compute the same exact refit; the threshold only decides whose
rounding is acceptable. The direct solve has the rounding of a standard solve, set by the
conditioning of the fold's own problem, not of (B): a row alone in its column, held out, leaves
that column zero and its weight exactly 0, a well-posed refit that (B) would get as 0/0.
"""

import numpy as np
import scipy.sparse as sp
from scipy import linalg
from scipy.linalg import lapack

from ._validation import check_X

__all__ = ["RCOND_TOL", "held_out_predictions"]

RCOND_TOL = 1e-5
_ROW_BLOCK_ELEMENTS = 1 << 21  # rows of B formed at a time, in entries (16 MB): bounded memory


def held_out_predictions(X, y, folds, alphas, fit_intercept=True, *, method="auto"):
    """Held-out predictions of every fold's exact Ridge refit, for every alpha.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,) or (n_samples, n_targets)
    folds : iterable of (train, test) pairs
        Integer row indices (or boolean masks), as a scikit-learn splitter yields them: leave-one-
        out, K-fold, or any split (train ∪ test need not be all rows; train may repeat rows).
    alphas : float or array-like of shape (n_alphas,)
        Penalties, positive and finite.
    fit_intercept : bool, default=True
        Fit an unpenalized intercept, as ``sklearn.linear_model.Ridge`` does.
    method : {"auto", "block", "refit"}, default="auto"
        "block": the closed form (B) of the module docstring for every fold of a partition (folds
        whose train ∪ test is not all rows, and near-singular folds, are still refit). "refit":
        solve every fold from its own normal equations. "auto": whichever costs fewer flops,
        per fold (leave-one-out always uses the closed form).

    Returns
    -------
    predictions : list of ndarray, one per fold
        Fold k's entry has shape (n_alphas, len(test_k)) for 1-D y, (n_alphas, len(test_k),
        n_targets) for 2-D y (alphas in the order given): the prediction ``X[test_k] @ coef + intercept`` of
        ``Ridge(alpha, fit_intercept).fit(X[train_k], y[train_k])``, to rounding.
    """
    return _held_out(X, y, folds, alphas, fit_intercept, method)[0]


def _held_out(X, y, folds, alphas, fit_intercept, method):
    """:func:`held_out_predictions` and counts of how each fold was solved (for the tests)."""
    if method not in ("auto", "block", "refit"):
        raise ValueError(f"method must be 'auto', 'block' or 'refit', got {method!r}.")
    X = check_X(X)
    n, d = X.shape
    y2, was_1d = _check_targets(y, n)
    alphas = _check_alphas(alphas)
    folds = _check_folds(folds, n)
    n_alphas = alphas.shape[0]
    block = _block_folds(folds, n, d, n_alphas, method)
    out = [np.empty((n_alphas, 0, y2.shape[1])) if test.shape[0] == 0 else None for _, test in folds]
    stats = {"block": 0, "refit": 0, "fallback": 0}
    if block:
        full = _FullFit(X, y2, alphas, fit_intercept)
        singles = [k for k in block if folds[k][1].shape[0] == 1]
        pending = _leave_one_out(full, y2, folds, singles, out)
        for k in block:
            if folds[k][1].shape[0] != 1:
                pending.extend((k, a) for a in _block_fold(full, y2, folds[k][1], out, k))
        stats["block"] = len(block)
        stats["fallback"] = len(pending)
        _refit_pending(X, y2, folds, alphas, fit_intercept, pending, out)
    for k in range(len(folds)):
        if out[k] is None:
            out[k] = _refit_fold(X, y2, *folds[k], alphas, fit_intercept)
            stats["refit"] += 1
    if was_1d:
        out = [p[:, :, 0] for p in out]
    return out, stats


# ---- input checks
def _check_targets(y, n):
    y = np.asarray(y, dtype=np.float64)
    if y.ndim not in (1, 2) or y.shape[0] != n:
        raise ValueError(f"y must have shape ({n},) or ({n}, n_targets); got {y.shape}.")
    if not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN or infinity.")
    return (y[:, None] if y.ndim == 1 else y), y.ndim == 1


def _check_alphas(alphas):
    alphas = np.atleast_1d(np.asarray(alphas, dtype=np.float64))
    if alphas.ndim != 1 or alphas.size == 0:
        raise ValueError(f"alphas must be a number or a non-empty 1-D array; got shape {alphas.shape}.")
    if not np.all(np.isfinite(alphas)) or np.any(alphas <= 0):
        raise ValueError(f"alphas must be positive and finite; got {alphas.tolist()[:10]}.")
    return alphas


def _check_folds(folds, n):
    checked = []
    for k, fold in enumerate(folds):
        try:
            train, test = fold
        except (TypeError, ValueError):
            raise ValueError(f"folds[{k}] is not a (train, test) pair.") from None
        train, test = _rows(train, n, f"folds[{k}] train"), _rows(test, n, f"folds[{k}] test")
        if train.shape[0] == 0:
            raise ValueError(f"folds[{k}] has no training rows.")
        checked.append((train, test))
    if not checked:
        raise ValueError("folds is empty.")
    return checked


def _rows(idx, n, name):
    idx = np.asarray(idx)
    if idx.dtype == bool:
        if idx.shape != (n,):
            raise ValueError(f"{name} is a boolean mask of shape {idx.shape}, expected ({n},).")
        return np.flatnonzero(idx)
    idx = idx.ravel()
    if idx.size and idx.dtype.kind not in "iu":
        raise ValueError(f"{name} must hold integer row indices, got dtype {idx.dtype}.")
    idx = idx.astype(np.intp, copy=False)
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise ValueError(f"{name} has indices out of range for {n} rows.")
    return idx


def _is_partition(train, test, n):
    """(B) holds when every row is in exactly one of train and test: n indices covering n rows."""
    if train.shape[0] + test.shape[0] != n:
        return False
    covered = np.zeros(n, dtype=bool)
    covered[train] = True
    covered[test] = True
    return bool(covered.all())


def _block_folds(folds, n, d, n_alphas, method):
    """Folds to compute by (B): partitions only, and under "auto" only when (B) costs fewer flops
    (n_alphas Cholesky factorizations of a |V|×|V| block) than a refit (one eigendecomposition
    of the fold's own Gram matrix, then a cheap solve per alpha)."""
    if method == "refit":
        return []
    chosen = []
    for k, (train, test) in enumerate(folds):
        if test.shape[0] == 0 or not _is_partition(train, test, n):
            continue
        v, t = test.shape[0], train.shape[0]
        s = min(t, d)
        block_cost = n_alphas * v * v * (min(n, d) + v / 3)
        refit_cost = t * d * s + 4 * s ** 3 + n_alphas * (s * s + v * d)
        if method == "block" or v == 1 or block_cost <= refit_cost:
            chosen.append(k)
    return chosen


# ---- the full-data factorization
class _FullFit:
    """One eigendecomposition of the full (centred) data, and from it, for every alpha, the
    residuals e = (I − H)y, blocks of G = I − H, and the rounding scale s of the docstring."""

    def __init__(self, X, y2, alphas, fit_intercept):
        n, d = X.shape
        self.X, self.n, self.alphas, self.fit_intercept = X, n, alphas, fit_intercept
        self.mu = _column_means(X) if fit_intercept else np.zeros(d)
        yc = y2 - y2.mean(axis=0) if fit_intercept else y2
        if n <= d:
            self._gram(X, yc)
        else:
            self._covariance(X, yc)

    def _gram(self, X, yc):
        n = self.n
        if sp.issparse(X):
            K = (X @ X.T).toarray()  # uncentred: the deflation below removes the mean exactly
        else:
            Xc = X - self.mu
            K = Xc @ Xc.T
        if self.fit_intercept:
            # Householder reflection P with P(1/√n) = −e₁: trailing block of PKP = Gram on 1⊥
            v = np.full(n, 1.0 / np.sqrt(n))
            v[0] += 1.0
            beta = 2.0 / (v @ v)
            K = K - np.outer(v, beta * (v @ K))
            K = (K - np.outer(K @ v, beta * v))[1:, 1:]
        lam, W = linalg.eigh((K + K.T) / 2, check_finite=False)
        lam = np.maximum(lam, 0.0)  # X̃X̃ᵀ is PSD; negative values are rounding
        if self.fit_intercept:
            Q = np.vstack([np.zeros((1, n - 1)), W])
            Q -= np.outer(v, beta * (v[1:] @ W))  # Q = P[:, 1:] W, orthonormal basis of 1⊥
        else:
            Q = W
        self.mode, self.Q = "gram", Q
        self.g = self.alphas[:, None] / (lam[None, :] + self.alphas[:, None])  # (n_alphas, r)
        Qty = Q.T @ yc
        self.e = np.stack([Q @ (g[:, None] * Qty) for g in self.g])  # (n_alphas, n, m)
        self.scale = self.g.max(axis=1, initial=0.0)

    def _covariance(self, X, yc):
        if sp.issparse(X):
            C = (X.T @ X).toarray()
            Xty = np.asarray(X.T @ yc)
            if self.fit_intercept:
                C -= self.X.shape[0] * np.outer(self.mu, self.mu)
                Xty -= np.outer(self.mu, yc.sum(axis=0))
        else:
            Xc = X - self.mu
            C, Xty = Xc.T @ Xc, Xc.T @ yc
        lam, V = linalg.eigh((C + C.T) / 2, check_finite=False)
        lam = np.maximum(lam, 0.0)
        self.mode, self.V, self.muV = "covariance", V, self.mu @ V
        self.B = None if sp.issparse(X) else Xc @ V  # dense: as large as X̃, which it replaces
        self.D = 1.0 / (lam[None, :] + self.alphas[:, None])  # (n_alphas, d)
        Vty = V.T @ Xty
        self.e = np.empty((self.alphas.shape[0],) + yc.shape)
        for a, D in enumerate(self.D):
            z = D[:, None] * Vty
            if self.B is not None:
                self.e[a] = yc - self.B @ z
            else:
                w = V @ z
                self.e[a] = yc - (np.asarray(X @ w) - self.mu @ w)
        self.scale = np.ones(self.alphas.shape[0])

    def rows_B(self, rows):
        """Rows of B = X̃V, formed from X (sparse X: only these rows, still sparse until × V)."""
        if self.B is not None:
            return self.B[rows]
        return np.asarray(self.X[rows] @ self.V) - self.muV

    def diag(self, rows):
        """diag(G)[rows] for every alpha, shape (n_alphas, len(rows))."""
        if self.mode == "gram":
            return self.g @ (self.Q[rows] ** 2).T
        step = max(1, _ROW_BLOCK_ELEMENTS // self.V.shape[0])
        out = np.empty((self.alphas.shape[0], rows.shape[0]))
        for start in range(0, rows.shape[0], step):
            B = self.rows_B(rows[start:start + step])
            out[:, start:start + step] = 1.0 - self.D @ (B ** 2).T
        return out - (1.0 / self.n if self.fit_intercept else 0.0)

    def blocks(self, rows):
        """G[rows, rows] for each alpha, as a generator of (|V|, |V|) arrays."""
        if self.mode == "gram":
            Qv = self.Q[rows]
            for g in self.g:
                yield (Qv * g) @ Qv.T
            return
        Bv = self.rows_B(rows)
        base = np.eye(rows.shape[0]) - (1.0 / self.n if self.fit_intercept else 0.0)
        for D in self.D:
            yield base - (Bv * D) @ Bv.T


def _column_means(X):
    return np.asarray(X.mean(axis=0)).ravel()


# ---- the closed form (B)
def _leave_one_out(full, y2, folds, singles, out):
    """r_i = e_i / G_ii for the single-row folds, all at once; returns the (fold, alpha) pairs
    whose G_ii fails the condition test."""
    if not singles:
        return []
    rows = np.array([folds[k][1][0] for k in singles])
    G = full.diag(rows)  # (n_alphas, len(rows))
    ok = G >= RCOND_TOL * full.scale[:, None]
    safe = np.where(ok, G, 1.0)
    pred = y2[rows][None] - full.e[:, rows] / safe[:, :, None]  # (n_alphas, len(rows), m)
    pred[~ok] = np.nan  # filled in by the refits
    for j, k in enumerate(singles):
        out[k] = pred[:, j:j + 1]
    bad_fold, bad_alpha = np.nonzero(~ok.T)
    return [(singles[j], a) for j, a in zip(bad_fold.tolist(), bad_alpha.tolist())]


def _block_fold(full, y2, test, out, k):
    """(B) for one fold, every alpha; returns the alphas whose I − H_VV fails the condition test."""
    pred = np.full((full.alphas.shape[0], test.shape[0], y2.shape[1]), np.nan)
    failed = []
    for a, G in enumerate(full.blocks(test)):
        r = _solve_if_well_conditioned(G, full.e[a, test], RCOND_TOL * full.scale[a])
        if r is None:
            failed.append(a)
        else:
            pred[a] = y2[test] - r
    out[k] = pred
    return failed


def _solve_if_well_conditioned(G, rhs, floor):
    """G⁻¹ rhs when 1/‖G⁻¹‖₁ (LAPACK's estimate) ≥ floor, else None."""
    anorm = np.abs(G).sum(axis=0).max()
    try:
        factor = linalg.cho_factor(G, lower=False, check_finite=False)
    except linalg.LinAlgError:
        return None
    rcond, info = lapack.dpocon(factor[0], anorm, uplo="U")
    if info != 0 or not rcond * anorm >= floor:  # `not >=` also rejects NaN
        return None
    return linalg.cho_solve(factor, rhs, check_finite=False)


# ---- direct refits
def _refit_pending(X, y2, folds, alphas, fit_intercept, pending, out):
    """Refit the (fold, alpha) pairs that (B) could not resolve, each fold once for its alphas."""
    by_fold = {}
    for k, a in pending:
        by_fold.setdefault(k, []).append(a)
    for k, alpha_ids in by_fold.items():
        alpha_ids = np.array(sorted(alpha_ids))
        out[k][alpha_ids] = _refit_fold(X, y2, *folds[k], alphas[alpha_ids], fit_intercept)


def _refit_fold(X, y2, train, test, alphas, fit_intercept):
    """Predictions on ``test`` of (R) fitted on the rows ``train``, from that fold's own normal
    equations centred by its own means: primal (X̄ᵀX̄ + alpha·I)w = X̄ᵀȳ when it has more rows than
    columns, else dual (X̄X̄ᵀ + alpha·I)c = ȳ, w = X̄ᵀc; one eigendecomposition serves every alpha.

    Returns an array of shape (n_alphas, len(test), n_targets).
    """
    XT, yT, XV = X[train], y2[train], X[test]
    nT, d = XT.shape
    mu = _column_means(XT) if fit_intercept else np.zeros(d)
    ybar = yT.mean(axis=0) if fit_intercept else np.zeros(yT.shape[1])
    yc = yT - ybar
    dense = not sp.issparse(XT)
    Xc = XT - mu if dense else None
    if nT > d:
        if dense:
            C, rhs = Xc.T @ Xc, Xc.T @ yc
        else:
            C = (XT.T @ XT).toarray() - nT * np.outer(mu, mu)
            rhs = np.asarray(XT.T @ yc) - np.outer(mu, yc.sum(axis=0))
        lam, V = linalg.eigh((C + C.T) / 2, check_finite=False)
        lam, Vr = np.maximum(lam, 0.0), V.T @ rhs
        coefs = [V @ (Vr / (lam + alpha)[:, None]) for alpha in alphas]
    else:
        if dense:
            K = Xc @ Xc.T
        else:
            K = (XT @ XT.T).toarray()
            if fit_intercept:
                means = K.mean(axis=0)
                K = K - means[:, None] - means[None, :] + means.mean()
        lam, U = linalg.eigh((K + K.T) / 2, check_finite=False)
        lam, Ur = np.maximum(lam, 0.0), U.T @ yc
        duals = [U @ (Ur / (lam + alpha)[:, None]) for alpha in alphas]
        # w = X̄ᵀc = Xᵀc − μ(1ᵀc): the mean is subtracted exactly, whatever 1ᵀc's rounding
        coefs = [(Xc.T @ c) if dense else np.asarray(XT.T @ c) - np.outer(mu, c.sum(axis=0)) for c in duals]
    out = np.empty((alphas.shape[0], test.shape[0], y2.shape[1]))
    for a, w in enumerate(coefs):
        out[a] = np.asarray(XV @ w) - mu @ w + ybar
    return out
