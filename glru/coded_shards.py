"""Coded machine unlearning for least squares (Aldaghri, Mahdavifar and Beirami, "Coded Machine
Unlearning"): a binary linear code over data shards, one OLS or ridge learner per coded shard,
their weights averaged, and exact removal of training rows.

The n training rows are shuffled into s uncoded shards; a binary generator matrix G (s × r,
r ≤ s) sums them, row-aligned, into r coded shards (the paper's Algorithm 2); learner j is fitted
on coded shard j and the model is the mean of the learners' weights (Algorithm 1). Forgetting a
row subtracts it from the coded rows it entered and re-solves only those learners (Algorithm 3).
The rate is τ = s/r. τ = 1 (G a permutation) is the uncoded, SISA-like baseline; s = 1 is one
learner on all rows.

Shard layout and the n mod s leftover rows
------------------------------------------
The paper needs equal shards of n̄ = n/s rows. Here every shard has m = ⌈n/s⌉ positions: a
random permutation of the rows fills position t of shard i with slot t·s + i, so the first
n mod s shards are full and the others end in one all-zero padding row (zero features, zero
constant, zero target) when s does not divide n. A zero row adds nothing to any coded sum or
sufficient statistic, and it is exactly what a row becomes once forgotten, so a padded fit is
the fit of ⌈n/s⌉·s rows after forgetting the pads: no training row is dropped (dropping the
leftover would discard data and make those rows' deletion vacuous), shard lengths differ by at
most one, and the exactness argument below covers the pads unchanged. The layout depends on n
and the seed only, never on the data, so it reveals nothing about a forgotten row.

Intercept
---------
The paper has none. Summing rows also sums a constant column: coded row t of learner j would
hold k_j[t], the number of live rows summed into it (G is binary). A learner that fits its own
intercept on the coded rows (a column of ones) models ȳ = x̄·w + β and estimates β = c_j·b
when c_j shards are summed, so the learners' intercepts live on different scales, and once a
forgotten row lowers k_j[t] below c_j for one coded row the model no longer fits that row at all.
Instead the constant 1 is appended to every original row *before* encoding: the intercept is
the (unpenalized) weight of a feature of the code, its coded column is the live count k_j, and
every learner estimates the same per-row intercept b from ȳ_j[t] = x̄_j[t]·w + k_j[t]·b + noise.
Forgetting subtracts the row's 1 along with its x, so the proof below covers b as any other
weight. At τ = 1, k_j ∈ {0, 1} and zero rows add nothing, so learner j is scikit-learn's
``Ridge``/``LinearRegression(fit_intercept=True)`` on its shard's live rows. Predictions are
equivariant under a fixed shift c of the features ((w, b) ↦ (w, b + c·w) maps the solutions
onto each other and leaves the penalty alone), as with scikit-learn's intercept.

Scaling
-------
The paper min-max normalises every feature and the response with the data's own minimum and
maximum. A forgotten row that sets a column's extreme — the heavy-tailed, influential rows coding
is meant for — would stay encoded in the scaler, so nothing here scales: rows are used as
given. Scale with data-independent constants (known ranges) or with a scaler fitted on rows that
are never forgotten. α enters each learner's objective unnormalised, as in scikit-learn's
``Ridge`` on that learner's coded rows; a coded row sums about τ rows, so the same α
regularises relatively less at a higher rate (the paper's λ, with a 1/n on the loss, cannot be
mapped onto it with certainty).

Why forgetting is exact
-----------------------
Write z = (x, 1) (z = x without intercept) and, for shard i and position t, z_{i,t}, y_{i,t}
for the row there, or 0 if the slot is padding or the row has been forgotten. Coded shard j
holds Z̄_j[t] = Σ_i G_ij z_{i,t} and ȳ_j[t] = Σ_i G_ij y_{i,t}.

1. Data. Forgetting the row u at (i, t) sets z_{i,t} and y_{i,t} to 0. Both sums are linear, so
   subtracting G_ij·z_u and G_ij·y_u from row t of every coded shard j with G_ij ≠ 0 gives
   exactly the encoding, with the same G and layout, of the rows not forgotten; no other coded
   row contains u. By induction this holds after any sequence of requests.
2. Statistics. A_j = Z̄_jᵀZ̄_j = Σ_t Z̄_j[t]Z̄_j[t]ᵀ and c_j = Z̄_jᵀȳ_j are sums over coded rows;
   replacing the changed rows' terms (downdate by the old row, update by the new one) gives the
   statistics of the new coded data.
3. Solutions. Learner j minimises F_j(w, b) = ‖ȳ_j − X̄_j w − k_j b‖² + α‖w‖², which depends on
   the data only through (A_j, c_j) up to a constant. With H_j = A_j + diag(αI, 0) positive
   definite the minimiser θ_j = H_j⁻¹c_j is unique, so it equals a retrain on the re-encoded
   shard. H_j is positive definite when α > 0 and the learner has a live row (then k_j ≠ 0, and
   the Schur complement kᵀ(I − X̄(X̄ᵀX̄ + αI)⁻¹X̄ᵀ)k > 0 because that hat matrix has
   eigenvalues < 1), or when Z̄_j has full column rank. Otherwise (OLS on too few rows) the
   minimum-norm least-squares solution of the coded rows is used, a function of the re-encoded
   shard as well. Learners that u did not enter keep their data and their solution.
4. Aggregate. The model is the mean of θ_j over the learners with at least one live row (a
   learner with none has no data, and a zero weight would bias the mean toward 0) — the same
   set a retrain would average.

In floating point the up/downdates add rounding of order eps·‖A_j‖ per request and the solution
moves by about cond(H_j)·eps. The statistics are therefore used only while LAPACK's estimate of
cond₁(H_j) is at most :data:`MAX_CONDITION`; beyond it the learner is re-solved from its coded
rows by least squares (about cond(Z̄_j)·eps = √cond(H_j)·eps) and its statistics are recomputed
from them, which also discards the rounding the updates had accumulated.
"""

import time
from dataclasses import dataclass

import numpy as np
import scipy.linalg

# The normal equations lose about log10(cond) digits; above 1e6 they could not promise ~1e-10
# relative agreement with a retrain, so the learner is re-solved from its coded rows instead.
MAX_CONDITION = 1e6

__all__ = ["MAX_CONDITION", "CodedShards", "ForgetCost", "check_generator_matrix", "encode", "generator_matrix",
           "shard_layout", "solve_learner"]


def generator_matrix(n_shards, n_coded, rng):
    """The minimum-cost binary generator matrix: density 1/r, one 1 per row.

    Every uncoded shard (row) goes to exactly one coded shard (column), the cheapest design for
    unlearning (a denser row retrains more learners). Every column is used: a random bijection
    assigns r randomly chosen rows to the r columns, the other rows pick a column uniformly.
    Columns then have disjoint, nonempty supports, so G has full column rank (the paper's two
    conditions) without the paper's resampling loop, which almost never succeeds when r is
    close to s. At r = s, G is a uniformly random permutation matrix: the uncoded baseline.

    Parameters
    ----------
    n_shards : int
        s, the number of uncoded shards (rows of G).
    n_coded : int
        r, the number of coded shards (columns of G), 1 ≤ r ≤ s.
    rng : numpy.random.Generator

    Returns
    -------
    G : ndarray of shape (s, r), dtype int8
    """
    if not 1 <= n_coded <= n_shards:
        raise ValueError(f"need 1 ≤ r ≤ s, got r = {n_coded}, s = {n_shards}.")
    column = rng.integers(n_coded, size=n_shards)
    column[rng.permutation(n_shards)[:n_coded]] = rng.permutation(n_coded)
    G = np.zeros((n_shards, n_coded), dtype=np.int8)
    G[np.arange(n_shards), column] = 1
    return G


def check_generator_matrix(G, n_shards, n_coded):
    """``G`` as an int8 array if it is a valid code of any density (the paper's conditions), else
    ValueError: binary, s × r, no all-zero row (every shard is used), full column rank (no two
    learners see the same data)."""
    G = np.asarray(G)
    if G.shape != (n_shards, n_coded) or not np.isin(G, (0, 1)).all():
        raise ValueError(f"G must be a binary {n_shards} × {n_coded} matrix, got shape {G.shape}.")
    if not G.any(axis=1).all() or np.linalg.matrix_rank(G.astype(np.float64)) < n_coded:
        raise ValueError("G needs a 1 in every row and full column rank.")
    return G.astype(np.int8)


def shard_layout(n_samples, n_shards, rng):
    """A data-independent random assignment of rows to (uncoded shard, position).

    Parameters
    ----------
    n_samples : int
    n_shards : int
        At most ``n_samples``.
    rng : numpy.random.Generator

    Returns
    -------
    shard : ndarray of shape (n_samples,)
        The uncoded shard of each row.
    position : ndarray of shape (n_samples,)
        Its position in the shard, the same position in every coded shard it enters.
    length : int
        m = ⌈n/s⌉; slots not filled are zero padding rows (module docstring).
    """
    if not 1 <= n_shards <= n_samples:
        raise ValueError(f"n_samples = {n_samples} is smaller than n_shards = {n_shards}.")
    slot = np.empty(n_samples, dtype=np.int64)
    slot[rng.permutation(n_samples)] = np.arange(n_samples)
    return slot % n_shards, slot // n_shards, -(-n_samples // n_shards)


def encode(Z, y, G, shard, position, length):
    """Algorithm 2: coded shard j, row t = Σ_i G_ij · (row at position t of shard i).

    Parameters
    ----------
    Z : ndarray of shape (n_samples, p)
        The rows, with the constant column already appended when an intercept is fitted.
    y : ndarray of shape (n_samples,)
    G : ndarray of shape (s, r)
    shard, position : ndarray of shape (n_samples,)
    length : int

    Returns
    -------
    Zbar : ndarray of shape (r, length, p)
    ybar : ndarray of shape (r, length)
    """
    r = G.shape[1]
    Zbar, ybar = np.zeros((r, length, Z.shape[1])), np.zeros((r, length))
    for j in range(r):
        rows = np.flatnonzero(G[shard, j])
        weight = G[shard[rows], j].astype(np.float64)
        np.add.at(Zbar[j], position[rows], weight[:, None] * Z[rows])
        np.add.at(ybar[j], position[rows], weight * y[rows])
    return Zbar, ybar


def penalty(n_params, alpha, fit_intercept):
    """diag(α, …, α, 0): the intercept (last weight) is not penalized."""
    p = np.full(n_params, float(alpha))
    if fit_intercept:
        p[-1] = 0.0
    return p


def solve_learner(A, c, Zbar, ybar, pen):
    """One learner's weights, from its statistics when they are well conditioned.

    Parameters
    ----------
    A, c : ndarray of shape (p, p) and (p,)
        Z̄ᵀZ̄ and Z̄ᵀȳ of the learner's coded rows.
    Zbar, ybar : ndarray of shape (m, p) and (m,)
        The coded rows, for the fallback.
    pen : ndarray of shape (p,)
        The penalty's diagonal.

    Returns
    -------
    theta : ndarray of shape (p,)
    from_statistics : bool
        False when the learner was re-solved from its coded rows (ill-conditioned or singular
        H; the caller then refreshes its statistics).
    """
    H = A + np.diag(pen)
    try:
        factor = scipy.linalg.cho_factor(H, lower=False, check_finite=False)
        rcond, info = scipy.linalg.lapack.dpocon(factor[0], np.abs(H).sum(axis=0).max())
        if info == 0 and rcond * MAX_CONDITION >= 1.0:
            return scipy.linalg.cho_solve(factor, c, check_finite=False), True
    except np.linalg.LinAlgError:  # not numerically positive definite
        pass
    return least_squares(Zbar, ybar, pen), False


def least_squares(Zbar, ybar, pen):
    """Minimum-norm minimiser of ‖ȳ − Z̄θ‖² + Σ pen_k θ_k², from the rows (QR-grade accuracy):
    the penalty is the stacked rows √pen_k e_kᵀ with target 0."""
    keep = pen > 0
    design = np.vstack([Zbar, np.diag(np.sqrt(pen))[keep]])
    target = np.concatenate([ybar, np.zeros(keep.sum())])
    # numpy's rank cutoff: LAPACK's default (eps alone) keeps rounding-level singular values,
    # and their huge reciprocals, when columns are exactly dependent
    cutoff = np.finfo(np.float64).eps * max(design.shape)
    return scipy.linalg.lstsq(design, target, cond=cutoff, check_finite=False)[0]


@dataclass
class ForgetCost:
    """What one forget request cost.

    Attributes
    ----------
    rows : tuple of int
        The rows forgotten.
    learners : tuple of int
        The coded shards (learners) they entered, each re-solved once.
    n_coded_rows_updated : int
        Coded rows whose value changed (several forgotten rows may share one).
    n_statistic_updates : int
        Rank-one terms applied to the learners' XᵀX (a downdate and an update per coded row);
        0 with ``method="retrain"``.
    n_rows_retrained : int
        Coded rows the learners were re-solved from: all rows of the affected learners with
        ``method="retrain"``, only those of learners that fell back to least squares with
        ``method="statistics"``.
    method : str
    seconds : float
        Wall-clock time of the request.
    """

    rows: tuple
    learners: tuple
    n_coded_rows_updated: int
    n_statistic_updates: int
    n_rows_retrained: int
    method: str
    seconds: float


class CodedShards:
    """The coded data, the learners' statistics and weights (Algorithm 1), and Algorithm 3.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
    n_shards : int
        s.
    n_coded : int
        r, 1 ≤ r ≤ s (rate τ = s/r).
    alpha : float
        Ridge penalty of every learner (0: OLS).
    fit_intercept : bool
        Append the constant column before encoding (module docstring).
    rng : numpy.random.Generator
        Draws the layout and G.
    G : ndarray of shape (s, r), optional
        A binary generator matrix of any density (:func:`check_generator_matrix`) to use instead
        of the minimum-cost :func:`generator_matrix`; a denser row makes its rows enter, and
        their removal re-solve, several learners.

    Attributes
    ----------
    G, shard, position, length
        The code and the layout (:func:`generator_matrix`, :func:`shard_layout`).
    Zbar, ybar : ndarray
        The coded shards.
    A, c : ndarray of shape (r, p, p) and (r, p)
        The learners' statistics Z̄ᵀZ̄ and Z̄ᵀȳ.
    theta : ndarray of shape (r, p)
        The learners' weights, intercept last; zero for a learner without live rows.
    n_live : ndarray of shape (r,)
        Live rows per learner.
    contributors : ndarray of shape (r, m)
        Live rows summed into each coded row.
    forgotten : ndarray of shape (n_samples,), dtype bool
    """

    def __init__(self, X, y, n_shards, n_coded, alpha, fit_intercept, rng, G=None):
        n = X.shape[0]
        self.alpha, self.fit_intercept = float(alpha), bool(fit_intercept)
        self.shard, self.position, self.length = shard_layout(n, n_shards, rng)
        if G is None:
            self.G = generator_matrix(n_shards, n_coded, rng)
        else:
            self.G = check_generator_matrix(G, n_shards, n_coded)
        # the rows are kept (as the paper's master keeps its data) because Algorithm 3 subtracts
        # a forgotten row from its coded rows; a forgotten row is zeroed here as well
        self.Z = np.hstack([X, np.ones((n, 1))]) if self.fit_intercept else np.array(X, dtype=np.float64)
        self.y = np.array(y, dtype=np.float64)
        self.pen = penalty(self.Z.shape[1], self.alpha, self.fit_intercept)
        self.Zbar, self.ybar = encode(self.Z, self.y, self.G, self.shard, self.position, self.length)
        # batched BLAS products, as the retrain path forms them (np.einsum, unoptimised, ran an
        # unblocked loop ~15x slower)
        Zbar_t = self.Zbar.transpose(0, 2, 1)
        self.A = Zbar_t @ self.Zbar
        self.c = (Zbar_t @ self.ybar[:, :, None])[:, :, 0]
        self.n_live = np.count_nonzero(self.G[self.shard], axis=0)
        self.contributors = np.zeros((n_coded, self.length), dtype=np.int64)
        for j in range(n_coded):
            np.add.at(self.contributors[j], self.position, self.G[self.shard, j] != 0)
        self.forgotten = np.zeros(n, dtype=bool)
        self.theta = np.zeros((n_coded, self.Z.shape[1]))
        for j in range(n_coded):
            # the statistics were just computed from the coded rows: nothing to refresh on a fallback
            self.theta[j] = solve_learner(self.A[j], self.c[j], self.Zbar[j], self.ybar[j], self.pen)[0]

    # ---- the model
    @property
    def weights(self):
        """The averaged weights (w, b) over learners with live rows: shape (p,)."""
        return self.theta[self.n_live > 0].mean(axis=0)

    @property
    def coef(self):
        return self.weights[:-1] if self.fit_intercept else self.weights

    @property
    def intercept(self):
        return float(self.weights[-1]) if self.fit_intercept else 0.0

    # ---- Algorithm 3
    def forget(self, rows, method="statistics"):
        """Exactly unlearn training rows; all-or-nothing.

        Parameters
        ----------
        rows : array-like of int
            Indices into the training rows, distinct, in range, not already forgotten.
        method : {"statistics", "retrain"}
            Re-solve each affected learner from its downdated statistics, or retrain it from
            its coded rows. Both give the retrain's model (module docstring).

        Returns
        -------
        cost : ForgetCost

        Raises
        ------
        ValueError
            Bad rows, or the request would forget every remaining row; nothing changes.
        """
        start = time.perf_counter()
        rows = self.check_rows(rows)
        if method not in ("statistics", "retrain"):
            raise ValueError(f'method must be "statistics" or "retrain", got {method!r}.')
        changes = self._coded_changes(rows)
        n_live = self.n_live - np.count_nonzero(self.G[self.shard[rows]], axis=0)
        if not n_live.any():
            raise ValueError("This request would forget every remaining training row.")
        updates = {j: self._update_learner(j, *change, method, n_live[j]) for j, change in changes.items()}
        # commit only now: every check and solve above left the state untouched
        for j, (Zj, yj, Aj, cj, theta, _) in updates.items():
            self.Zbar[j], self.ybar[j], self.A[j], self.c[j], self.theta[j] = Zj, yj, Aj, cj, theta
            self.contributors[j, changes[j][0]] -= changes[j][3]
        self.n_live = n_live
        self.forgotten[rows] = True
        self.Z[rows], self.y[rows] = 0.0, 0.0
        n_changed = sum(change[0].size for change in changes.values())
        return ForgetCost(
            rows=tuple(int(u) for u in rows), learners=tuple(int(j) for j in updates),
            n_coded_rows_updated=int(n_changed),
            n_statistic_updates=2 * int(n_changed) if method == "statistics" else 0,
            n_rows_retrained=int(sum(u[5] for u in updates.values())),
            method=method, seconds=time.perf_counter() - start,
        )

    def check_rows(self, rows):
        """``rows`` as distinct, in-range indices of rows not yet forgotten, or ValueError."""
        rows = np.atleast_1d(np.asarray(rows))
        n = self.forgotten.shape[0]
        if rows.size == 0:
            raise ValueError("rows is empty: nothing to forget.")
        if rows.dtype == bool or not np.issubdtype(rows.dtype, np.integer) or rows.ndim != 1:
            raise ValueError(f"rows must be a 1-d sequence of integer indices, got dtype {rows.dtype}.")
        bad = rows[(rows < 0) | (rows >= n)]
        if bad.size:
            raise ValueError(f"rows {bad[:5].tolist()} are out of range for {n} training rows.")
        unique, counts = np.unique(rows, return_counts=True)
        if (counts > 1).any():
            raise ValueError(f"rows {unique[counts > 1][:5].tolist()} appear more than once in the request.")
        again = rows[self.forgotten[rows]]
        if again.size:
            raise ValueError(f"rows {again[:5].tolist()} have already been forgotten.")
        return rows.astype(np.int64)

    def _coded_changes(self, rows):
        """{learner j: (coded positions t, amounts to subtract from Z̄_j[t] and ȳ_j[t], number of
        forgotten rows summed into each)}."""
        changes = {}
        for j in np.flatnonzero(self.G[self.shard[rows]].any(axis=0)):
            mine = rows[self.G[self.shard[rows], j] != 0]
            g = self.G[self.shard[mine], j].astype(np.float64)
            t, where = np.unique(self.position[mine], return_inverse=True)
            dZ, dy = np.zeros((t.size, self.Z.shape[1])), np.zeros(t.size)
            np.add.at(dZ, where, g[:, None] * self.Z[mine])  # rows sharing a coded row add up
            np.add.at(dy, where, g * self.y[mine])
            changes[int(j)] = (t, dZ, dy, np.bincount(where, minlength=t.size))
        return changes

    def _update_learner(self, j, t, dZ, dy, n_removed, method, n_live):
        """Learner j's new coded rows, statistics and weights (copies; nothing is modified)."""
        Zj, yj = self.Zbar[j].copy(), self.ybar[j].copy()
        old_Z, old_y = Zj[t].copy(), yj[t].copy()
        Zj[t] -= dZ
        yj[t] -= dy
        # a coded row left without contributors is exactly zero, as a re-encoding makes it
        # (the subtraction would leave rounding residue)
        empty = t[self.contributors[j, t] == n_removed]
        Zj[empty], yj[empty] = 0.0, 0.0
        new_Z, new_y = Zj[t], yj[t]
        if method == "statistics":
            A = self.A[j] - old_Z.T @ old_Z + new_Z.T @ new_Z
            c = self.c[j] - old_Z.T @ old_y + new_Z.T @ new_y
        else:
            A, c = Zj.T @ Zj, Zj.T @ yj
        if n_live == 0:  # no data left: the learner leaves the average
            return Zj, yj, np.zeros_like(A), np.zeros_like(c), np.zeros_like(c), 0
        theta, from_stats = solve_learner(A, c, Zj, yj, self.pen)
        retrained = self.length if (method == "retrain" or not from_stats) else 0
        if not from_stats and method == "statistics":  # fresh statistics drop the updates' rounding
            A, c = Zj.T @ Zj, Zj.T @ yj
        return Zj, yj, A, c, theta, retrained
