"""The regularized ERM problem, its primal and dual objectives, and its smooth part.

    P(w, b) = (1/n) Σ_i ℓ_{y_i}(x_i·w + b) + Σ_j ρ(w_j)                       (paper's (1))
    D(α)    = −(1/n) Σ_i ℓ*_{y_i}(−α_i) − Σ_j ρ*((1/n) X_{:j}·α),  Σ_i α_i = 0 if b is fitted (5)

``b`` is the unpenalized intercept (ρ_b = 0, whose conjugate adds the constraint Σα = 0), or
absent. The smooth part f(z) = (1/n)Σℓ + (lam/2)‖w‖², z = (w, b), is exposed as
``fun/grad/hessp`` in the manner of LIBLINEAR's ``function`` class, for the Newton solvers.
"""

from functools import cached_property

import numpy as np
import scipy.sparse as sp
from sklearn.utils.extmath import row_norms

from .duality import (EPS, correlation_error, enforce_zero_sum, fenchel_young_gap, gamma, gap_allowance, margin_error,
                      sound_gap)
from .newton_centres import GramPlan

FINE_GAP_RANGE = 100.0  # see assemble_gap


class Problem:
    """Data (X, y), a :class:`~glru.losses.Loss`, an :class:`~glru.penalties.ElasticNet`
    penalty, and whether an unpenalized intercept is fitted. X is a float64 ndarray or CSR."""

    def __init__(self, X, y, loss, penalty, fit_intercept):
        self.X, self.y = X, np.asarray(y, dtype=np.float64)
        self.loss, self.penalty, self.fit_intercept = loss, penalty, bool(fit_intercept)
        self.n, self.d = X.shape
        self._cache_key, self._cache_margins = None, None
        self._cache_abs_key, self._cache_abs_times = None, None
        self._cache_curvature = None
        self._cache_grad_key, self._cache_grad = None, None
        # (curvatures, H): the Hessian for some mean-form curvatures ℓ''_i/n, known without forming it (a
        # fold's at its start, glru.fold_hessian), or a callable that computes it; semismooth Newton starts from
        # it, and leaves its own last one here
        self.known_hessian = None

    @cached_property
    def XT(self):
        """Xᵀ, kept: scipy validates a transposed sparse matrix anew on every ``.T`` (0.2 ms on a9a.t)."""
        return self.X.T

    # ---- data summaries (lazy: certificates need them, a plain solve does not)
    @cached_property
    def abs_X(self):
        """|X| (:func:`absolute`)."""
        return absolute(self.X)

    def abs_times(self, v):
        """|X|·v for v ≥ 0 (the rounding bound of margins): from the kept |X| when X is sparse
        (:attr:`abs_X`, its values only), a block of rows at a time when dense, which keeps no
        copy of X (madelon.t 10-fold: 2.4 MB of its 5.8 MiB peak). Memoised on the last v: a
        gap and the certificate at its point both take it (a tenth of a fold's certification on
        dense 20000 × 600, 5-fold)."""
        key = v.tobytes()
        if key == self._cache_abs_key:
            return self._cache_abs_times
        if sp.issparse(self.X) or "abs_X" in self.__dict__:
            out = np.asarray(self.abs_X @ v).ravel()
        else:
            out = np.empty(self.n)
            for rows in row_slices(self.X):
                out[rows] = np.abs(self.X[rows]) @ v
        self._cache_abs_key, self._cache_abs_times = key, out
        return out

    @cached_property
    def gram_plan(self):
        """The :class:`~glru.newton_centres.GramPlan` of X̃ (made at the first :meth:`hessian`)."""
        return GramPlan(self.X, self.fit_intercept)

    @cached_property
    def col_norms_sq(self):
        return col_norms_sq(self.X)

    @cached_property
    def frobenius_norm(self):
        """An upper bound on ‖X‖_F (rounding included)."""
        return frobenius_bound(row_norms_sq(self.X), self.d)

    @cached_property
    def dual_domain_terms(self):
        """Sums behind Remark 2's clipping (see :func:`dual_domain_terms`)."""
        return dual_domain_terms(self.X, self.loss, self.y)

    @cached_property
    def dual_domain(self):
        """Per column, min and max of X_{:j}·α over the box of dom D (27g, 27j)."""
        return dual_domain_from_terms(self.dual_domain_terms, self.n)

    def column_summaries_after(self, block_col_norms_sq, block_domain_terms, sign, n_new):
        """‖X_{:j}‖² and the dual-domain box of the columns after rows are removed (sign −1) or
        added (+1), from the block's own sums, rounding-safe; ``n_new`` rows remain."""
        col_sq = self.col_norms_sq + sign * block_col_norms_sq
        col_sq = np.maximum(col_sq, 0.0) + 4 * (self.n + 16) * EPS * (self.col_norms_sq + block_col_norms_sq)
        terms = self.dual_domain_terms
        terms = {k: terms[k] + (sign * block_domain_terms[k] if k != "magnitude" else block_domain_terms[k])
                 for k in terms}
        return col_sq, dual_domain_from_terms(terms, max(self.n, n_new))

    # ---- objectives
    def margins(self, w, b=0.0):
        """x_i·w + b for every row, memoised on the last (w, b)."""
        key = (w.tobytes(), float(b))
        if key != self._cache_key:
            self._cache_key, self._cache_margins = key, self.X @ w + b
        return self._cache_margins

    def primal(self, w, b=0.0):
        u = self.margins(w, b)
        return self.loss.value(self.y, u).mean() + self.penalty.value(w)

    def dual_point(self, margins):
        """α from the KKT condition (8), −α_i = ℓ'(x_i·w + b), made feasible (Σα = 0) if b is fitted."""
        alpha = -self.loss.derivative(self.y, margins)
        if self.fit_intercept:
            alpha = enforce_zero_sum(alpha)[0]
        return alpha

    def duality_gap(self, w, b=0.0):
        """Sound duality gap at (w, b) and the dual point that achieves it.

        Returns a :class:`GapEvaluation`. Cost O(nnz(X)).
        """
        u = self.margins(w, b)
        alpha = self.dual_point(u)
        Xt_alpha = self.XT @ alpha
        if self.penalty.lam == 0:
            alpha, Xt_alpha = self._scale_into_dual_domain(alpha, Xt_alpha)
        return assemble_gap(self.loss, self.penalty, self.y, w, u, alpha, Xt_alpha,
                            self.abs_times(np.abs(w)) + abs(b), self.d,
                            data_norm=self.frobenius_norm, zero_sum=self.fit_intercept)

    def _scale_into_dual_domain(self, alpha, Xt_alpha):
        """Without an L2 term ρ* is the indicator of |s| ≤ kappa: scale α toward 0 (feasible for
        ℓ*, and Σα = 0 is kept) until ‖Xᵀα/n‖∞ ≤ kappa, as lasso solvers do for their gaps."""
        largest = np.abs(Xt_alpha).max(initial=0.0) / self.n
        if largest <= self.penalty.kappa:
            return alpha, Xt_alpha
        factor = self.penalty.kappa / largest * (1.0 - 4 * np.finfo(float).eps)
        return alpha * factor, Xt_alpha * factor

    # ---- smooth part f(z), z = w or (w, b), for Newton-type solvers
    def split(self, z):
        return (z[:-1], z[-1]) if self.fit_intercept else (z, 0.0)

    def join(self, w, b):
        return np.append(w, b) if self.fit_intercept else np.array(w, dtype=float)

    def fun(self, z):
        w, b = self.split(z)
        return self.loss.value(self.y, self.margins(w, b)).mean() + 0.5 * self.penalty.lam * (w @ w)

    def grad(self, z):
        """∇f(z), memoised on the last z (a copy each call): a solver's gap check at its iterate
        reads the gradient the solver has just evaluated there."""
        key = z.tobytes()
        if key != self._cache_grad_key:
            w, b = self.split(z)
            g_u = self.loss.derivative(self.y, self.margins(w, b)) / self.n
            g_w = self.XT @ g_u + self.penalty.lam * w
            self._cache_grad_key, self._cache_grad = key, np.append(g_w, g_u.sum()) if self.fit_intercept else g_w
        return self._cache_grad.copy()

    def hessian(self, curvatures):
        """The Hessian (1/n)X̃ᵀDX̃ + λP as a dense (d̃, d̃) array for the mean-form row weights
        ``curvatures`` = ℓ''(x̃_i·z)/n: for a few hundred features (a d̃ × d̃ factorization is
        cheap there)."""
        hessian = self.gram_plan(curvatures)
        penalized = np.arange(self.d)  # the intercept is not penalized
        hessian[penalized, penalized] += self.penalty.lam
        return hessian

    def hessp(self, z, v):
        w, b = self.split(z)
        margins = self.margins(w, b)
        if self._cache_curvature is None or self._cache_curvature[0] is not margins:
            # CG calls hessp many times at one z: the curvatures (and the rows they leave curved) once per point
            curvatures = self.loss.second_derivative(self.y, margins) / self.n
            rows = curved_rows(curvatures)
            if rows is None:
                self._cache_curvature = (margins, curvatures, self.X, self.XT)
            else:
                X = self.X[rows]
                self._cache_curvature = (margins, curvatures[rows], X, X.T)
        _, curv, X, XT = self._cache_curvature
        v_w, v_b = self.split(v)
        t = curv * (X @ v_w + v_b)
        h_w = XT @ t + self.penalty.lam * v_w
        return np.append(h_w, t.sum()) if self.fit_intercept else h_w


def assemble_gap(loss, penalty, y, w, margins, alpha, Xt_alpha, abs_margins, d, data_norm=None, zero_sum=False):
    """The sound gap P(w, b) − D(α) from the margins x_i·w + b, a feasible α and Xᵀα.

    ``abs_margins`` bounds |x_i|·|w| + |b| for every row (any upper bound is sound); it sizes
    the rounding allowance. Given ``data_norm`` ≥ ‖X‖_F (of the rows summed), the gap is the
    smaller of P − D and :func:`glru.duality.fenchel_young_gap` (``zero_sum``: Σα = 0 is a
    constraint, an unpenalized intercept), which resolves it to first order near the optimum.
    Shared by :meth:`Problem.duality_gap` and the batched fold gaps of
    :mod:`glru.cross_validation`, which compute the products as matrix-matrix products. With
    2-D ``w``, ``margins``, ``alpha``, ``Xt_alpha`` and ``abs_margins`` (one column per point,
    :mod:`glru.stepwise`) every field of the result is an array over the columns.
    """
    n = y.shape[0]
    if margins.ndim == 2:  # many points at once, one per column
        y = y[:, None]
    loss_terms = loss.value(y, margins)
    conj_terms = loss.conjugate(y, -alpha)
    pen_w = penalty.value_terms(w).sum(axis=0)
    pen_conj = penalty.conjugate_terms(Xt_alpha / n).sum(axis=0)
    primal = loss_terms.sum(axis=0) / n + pen_w
    dual = -conj_terms.sum(axis=0) / n - pen_conj
    magnitude = (loss_terms.sum(axis=0) + np.abs(conj_terms).sum(axis=0) + (np.abs(alpha) * abs_margins).sum(axis=0)) \
        / n + pen_w + pen_conj
    classic = gap_allowance(magnitude, n, d)
    gap, allowance, floor = sound_gap(primal, dual, magnitude, n, d), classic, classic
    if data_norm is not None and penalty.strong_convexity > 0:
        # the finer form is at least P − D minus its allowance, so where P − D exceeds its allowance
        # FINE_GAP_RANGE times it could not shrink the gap by 2/FINE_GAP_RANGE of it: it is not
        # evaluated there (most of a solver's iterations); the floor it would reach still is
        if np.ndim(primal) == 0:  # Python floats: most calls are a solver's, one point at a time
            near = float(primal) - float(dual) <= FINE_GAP_RANGE * float(allowance)
        else:
            with np.errstate(invalid="ignore"):
                near = bool(np.any(primal - dual <= FINE_GAP_RANGE * allowance))
        if near:
            fine, fine_allowance, fine_floor = fenchel_young_gap(loss, penalty, y, w, margins, alpha, Xt_alpha,
                                                                 margin_error(abs_margins, d), data_norm, zero_sum)
            finer = fine < gap
            gap, allowance = np.where(finer, fine, gap), np.where(finer, fine_allowance, allowance)
            floor = np.minimum(fine_floor, floor)
            floor = float(floor) if np.ndim(floor) == 0 else floor
        else:
            floor = (data_norm, penalty.strong_convexity)  # computed if asked (GapEvaluation.floor)
        if np.ndim(gap) == 0:
            gap, allowance = float(gap), float(allowance)
    return GapEvaluation(gap, primal, dual, alpha, Xt_alpha, margins, magnitude, allowance,
                         loss_terms.sum(axis=0), conj_terms.sum(axis=0), floor, classic)


class GapEvaluation:
    """A duality gap evaluated from scratch at a primal point, with the sums it was built from."""

    __slots__ = ("gap", "primal", "dual", "alpha", "Xt_alpha", "margins", "magnitude", "allowance",
                 "loss_sum", "conj_sum", "_floor", "classic_allowance")

    def __init__(self, gap, primal, dual, alpha, Xt_alpha, margins, magnitude, allowance, loss_sum, conj_sum,
                 floor=None, classic_allowance=None):
        self.gap, self.primal, self.dual = gap, primal, dual
        self.alpha, self.Xt_alpha, self.margins = alpha, Xt_alpha, margins
        self.magnitude, self.allowance = magnitude, allowance
        self.loss_sum, self.conj_sum = loss_sum, conj_sum  # Σℓ(u_i) and Σℓ*(−α_i), the (17b/c) sums
        # the rounding allowance of P − D itself (the gap's, unless the Fenchel–Young form is finer)
        self.classic_allowance = allowance if classic_allowance is None else classic_allowance
        # a number, or (‖X‖_F bound, λ) for the Fenchel–Young floor to be computed when asked
        self._floor = allowance if floor is None else floor

    def with_rows(self, alpha, Xt_alpha, margins):
        """The same gap with other per-row arrays attached (the rows of another indexing of the
        same problem), every other field kept as it is."""
        copy = object.__new__(GapEvaluation)
        for name in self.__slots__:
            setattr(copy, name, getattr(self, name))
        copy.alpha, copy.Xt_alpha, copy.margins = alpha, Xt_alpha, margins
        return copy

    @property
    def floor(self):
        """The allowance this evaluation would have at the optimum: no point's gap goes below it.
        Where the Fenchel–Young form was not evaluated (P − D far above its allowance), its
        floor 2e²/λ (:func:`glru.duality.correlation_error`) is computed here, on first use:
        a solver's many evaluations never ask for it."""
        if isinstance(self._floor, tuple):
            data_norm, lam = self._floor
            e = correlation_error(self.alpha, self.Xt_alpha / self.alpha.shape[0], data_norm)[0]
            floor = np.minimum(2 * e * e / lam, self.classic_allowance)
            self._floor = float(floor) if np.ndim(floor) == 0 else floor
        return self._floor

    @property
    def relative_gap(self):
        """Sound gap over |P| (includes the rounding allowance)."""
        return self.gap / max(abs(self.primal), np.finfo(float).tiny)

    def converged(self, tol):
        """(P − D)/P ≤ tol, or the gap is already below what rounding can resolve: the
        Fenchel–Young form's allowance, or P − D's own (a solver whose steps are judged by P
        stops improving there; elementwise for an evaluation of many points). An infinite gap
        (an infeasible dual point, e.g. lasso far from the optimum) never converges."""
        with np.errstate(invalid="ignore"):
            raw = self.gap - self.allowance
            classic_raw = np.maximum(self.primal - self.dual, 0.0)
            return np.isfinite(self.gap) & ((raw <= tol * np.abs(self.primal)) | (raw <= self.allowance)
                                            | (classic_raw <= self.classic_allowance))


def as_dense(X):
    """X as a dense ndarray (a block of rows or columns, or a small product)."""
    return X.toarray() if sp.issparse(X) else np.asarray(X)


def frobenius_bound(row_norms_sq, d):
    """An upper bound on ‖X‖_F from its rows' computed ‖x_i‖² (sums of at most d squares)."""
    return float(np.sqrt(row_norms_sq.sum() * (1 + gamma(row_norms_sq.size + d + 2)))) * (1 + 2 * EPS)


def row_norms_sq(X):
    """‖x_i‖² for every row (dense or sparse), without copying a CSR X (scikit-learn's
    ``row_norms``: one compiled pass over the stored values)."""
    if not sp.issparse(X):
        return np.einsum("ij,ij->i", X, X)
    return row_norms(X if X.format == "csr" else X.tocsr(), squared=True)


def absolute(X):
    """|X|: X itself when no entry is negative (counts, one-hot, tf-idf), else a copy of its
    values (a CSR or CSC matrix shares X's index arrays: a third of a copy of it)."""
    values = X.data if sp.issparse(X) else X
    if values.size == 0 or values.min() >= 0:
        return X
    if sp.issparse(X) and X.format in ("csr", "csc"):
        return type(X)((np.abs(X.data), X.indices, X.indptr), shape=X.shape)
    return abs(X)


def absolute_times(X, v):
    """|X|·v, a block of rows at a time (:func:`row_slices`) where X is dense with negative
    entries: no copy of |X| (its fresh pages cost more than the arithmetic: 0.7 ms a fold of
    make_classification 4000 × 50 standardized, against 0.04 ms in a loop); :func:`absolute` of
    a sparse X (its values only)."""
    if sp.issparse(X):
        return np.asarray(absolute(X) @ v).ravel()
    if X.size == 0 or X.min() >= 0:
        return X @ v
    out = np.empty(X.shape[0])
    for rows in row_slices(X):
        np.dot(np.abs(X[rows]), v, out=out[rows])
    return out


def col_norms_sq(X, weights=None):
    """‖X_{:j}‖² for every column (dense or sparse), or Σ_i weights_i X_ij² (the diagonal of
    XᵀDX), a block of rows at a time (no copy of X)."""
    if not sp.issparse(X):
        return np.einsum("ij,ij->j", X, X) if weights is None else np.einsum("ij,i,ij->j", X, weights, X)
    X = X.tocsr()
    total = np.zeros(X.shape[1])
    for rows in row_slices(X):  # the stored values of these rows, as views of X's arrays
        start, stop = X.indptr[rows.start], X.indptr[min(rows.stop, X.shape[0])]
        squares = X.data[start:stop] ** 2
        if weights is not None:
            squares *= np.repeat(weights[rows], np.diff(X.indptr[rows.start:rows.stop + 1]))
        total += np.bincount(X.indices[start:stop], weights=squares, minlength=X.shape[1])
    return total


def with_constant_column(X, value=1.0):
    """X (dense or CSR) with a column of ``value`` appended. A CSR X gets one stored value more at
    the end of each row (sorted indices stay sorted; duplicate entries are summed first, as SciPy's
    ``hstack`` sums them): ``hstack`` goes through COO, 0.31 ms on sparse 4720 × 158 (1.2 %) and
    4.0 ms on 6974 × 321 (19 %), against 0.16 and 2.5 ms."""
    n, d = X.shape
    if not sp.issparse(X):
        return np.hstack([X, np.full((n, 1), value, dtype=np.result_type(X.dtype, float))])
    X = X.tocsr()
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    ends = X.indptr[1:]
    indices = np.insert(X.indices.astype(np.result_type(X.indices.dtype, np.min_scalar_type(d)), copy=False),
                        ends, d)
    data = np.insert(X.data.astype(float, copy=False), ends, value)
    out = sp.csr_matrix((data, indices, X.indptr + np.arange(n + 1, dtype=X.indptr.dtype)), shape=(n, d + 1))
    out.has_canonical_format = True  # (X's rows were, and each gains its largest index once)
    return out


def compact_indices(X):
    """A CSR X with 32-bit index arrays where they fit (a copy of the indices only; the values
    are shared), else X. Every sparse transpose or row selection otherwise makes its own 32-bit
    copy of 64-bit indices (SciPy downcasts them): several copies of X's index array."""
    if not sp.issparse(X) or X.indices.dtype == np.int32 or max(X.nnz, X.shape[1]) >= np.iinfo(np.int32).max:
        return X
    return sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)), shape=X.shape, copy=False)


def curved_rows(curvatures):
    """Indices of the rows at which some column of ``curvatures`` (ℓ'' of each row: (n,), or
    (n, m) for m points) is not 0, or None where they are more than ``CURVED_SHARE`` of the
    rows. Hessian products X̃ᵀDX̃v then skip the flat rows, as LIBLINEAR's L2-loss SVC does
    (its subXv on the active set): a squared hinge is flat past the margin, on 75 % of the
    rows of LinearSVC's optimum on sparse Gaussian 10000 × 1000 (2 %) and 82 % on binary
    20000 × 500 (5 %). The products are unchanged: a flat row only adds exact zeros."""
    curved = curvatures != 0 if curvatures.ndim == 1 else np.any(curvatures != 0, axis=1)
    rows = np.flatnonzero(curved)
    return rows if rows.size <= CURVED_SHARE * curvatures.shape[0] else None


CURVED_SHARE = 0.75  # (slicing the rows costs about one product with them; a Newton step takes several)


def row_slices(X, entries=1 << 15):
    """Slices of consecutive rows of X holding about ``entries`` stored values each (d per row
    when dense): the unit in which temporaries derived from X are built, so that they stay
    small instead of copying X."""
    per_row = X.nnz / max(X.shape[0], 1) if sp.issparse(X) else X.shape[1]
    rows = max(1, int(entries // max(per_row, 1.0)))
    return (slice(start, start + rows) for start in range(0, X.shape[0], rows))


def dual_domain_terms(X, loss, y):
    """Per-column pieces of min/max of X_{:j}·α over α ∈ dom D's box (25): the finite lower
    and upper sums, the number of infinite terms in each, and Σ_i |X_ij|(|a_i| + |c_i|) over the
    finite ends (for the rounding bound). Kept as sums so that removing rows is a subtraction
    (Remark 2's (27g) and (27j)). Rows are taken a block of 2¹⁵ stored values at a time
    (:func:`row_slices`): a block's temporaries then stay near 2 MiB instead of several copies
    of X."""
    dom_lo, dom_hi = loss.conjugate_domain(y)
    a, c = -dom_hi, -dom_lo  # α_i ∈ [a_i, c_i]
    a_fin, c_fin = np.where(np.isfinite(a), a, 0.0), np.where(np.isfinite(c), c, 0.0)
    a_inf, c_inf = (~np.isfinite(a)).astype(float), (~np.isfinite(c)).astype(float)
    ends = (a_fin, c_fin, a_inf, c_inf) if a_inf.any() or c_inf.any() else (a_fin, c_fin)
    if sp.issparse(X):
        X = X.tocsr()
        if not X.has_canonical_format:  # an entry stored twice has one sign, of its sum
            X = X.copy()
            X.sum_duplicates()
    terms = np.zeros((len(ends) + 1, X.shape[1]))  # lower, upper, magnitude, and the counts if any
    for rows in row_slices(X):
        terms += _sparse_terms_block(X, rows, ends) if sp.issparse(X) else _dense_terms_block(X[rows], rows, ends)
    if len(ends) == 2:  # no infinite end
        terms = np.vstack([terms, np.zeros((2, X.shape[1]))])
    lower, upper, magnitude, lower_inf, upper_inf = terms
    return dict(lower=lower, upper=upper, magnitude=magnitude, lower_inf=lower_inf, upper_inf=upper_inf)


def _dense_terms_block(X, rows, ends):
    """The rows of :func:`dual_domain_terms`' sums for a dense block of rows: its positive and
    negative parts times the ends [a, c] (and their infinite counts where there are any)."""
    a_fin, c_fin = ends[0][rows], ends[1][rows]
    pos, neg = np.maximum(X, 0.0), np.minimum(X, 0.0)
    out = [pos.T @ a_fin + neg.T @ c_fin, pos.T @ c_fin + neg.T @ a_fin,
           np.abs(X).T @ (np.abs(a_fin) + np.abs(c_fin))]
    if len(ends) == 4:
        a_inf, c_inf = ends[2][rows], ends[3][rows]
        is_pos, is_neg = (X > 0).astype(float), (X < 0).astype(float)
        out += [is_pos.T @ a_inf + is_neg.T @ c_inf, is_pos.T @ c_inf + is_neg.T @ a_inf]
    return np.array(out)


def _sparse_terms_block(X, rows, ends):
    """The same sums for the stored values of a block of rows of CSR X, read from its arrays (one
    weighted count per sum over the column indices): building each block's positive and negative
    parts as matrices and multiplying them by the ends took three times as long (6 ms of a 33 ms
    fold of a9a.t with a StandardScaler, LinearSVC)."""
    first, last = X.indptr[rows.start], X.indptr[min(rows.stop, X.shape[0])]
    values, columns = X.data[first:last], X.indices[first:last]
    row = np.repeat(np.arange(rows.start, rows.start + np.diff(X.indptr[rows.start:rows.stop + 1]).size),
                    np.diff(X.indptr[rows.start:rows.stop + 1]))
    positive = values > 0
    a_fin, c_fin = ends[0][row], ends[1][row]
    low_end, high_end = np.where(positive, a_fin, c_fin), np.where(positive, c_fin, a_fin)
    weights = [values * low_end, values * high_end, np.abs(values) * (np.abs(a_fin) + np.abs(c_fin))]
    if len(ends) == 4:
        a_inf, c_inf = ends[2][row], ends[3][row]
        negative = values < 0
        weights += [positive * a_inf + negative * c_inf, positive * c_inf + negative * a_inf]
    d = X.shape[1]
    return np.array([np.bincount(columns, weights=w, minlength=d) for w in weights])


def dual_domain_from_terms(terms, n):
    slack = 2.0 * (n + 16) * EPS * terms["magnitude"]
    return (np.where(terms["lower_inf"] > 0, -np.inf, terms["lower"] - slack),
            np.where(terms["upper_inf"] > 0, np.inf, terms["upper"] + slack))
