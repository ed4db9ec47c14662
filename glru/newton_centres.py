"""Newton steps toward the optimum of each training fold, from one Hessian.

Theorem 1 holds for any centre; the fitted full-data optimum z = (w, b) is the paper's (cheap,
loose), and one Newton step of the fold's objective from z is far tighter (notes §6). In sum
form, with x̃_i = (x_i, 1) when an intercept is fitted and P the projection that drops it,

    F_T(z) = Σ_{i∈T} ℓ_i(x̃_i·z) + (a_T/2)‖Pz‖²,   a_T = n_T·λ_T  (= 1/C in scikit-learn's C),
    ∇F_T(z) = X̃ᵀℓ' − X̃_Vᵀℓ'_V + a_T Pz,
    ∇²F_T(z) = S + (a_T − a) P − X̃_Vᵀ D_V X̃_V,   S = X̃ᵀDX̃ + aP  (the full Hessian, once),

V being the held-out rows. With C fixed a_T = a (up to rounding, which only moves the
centre), so each fold's Hessian is a rank-|V| downdate of S: Woodbury from one Cholesky factor
of S costs O(|V|·d̃² + |V|³) per fold (O(d̃²) for leave-one-out); large folds form their Hessian
directly (O(nnz_V·d̃ + d̃³)).

The Hessian is evaluated once, at the point the object is built at. Reused at other points
(:meth:`NewtonCentres.full_solver`, and the fold solvers applied to later gradients) its steps
are chord steps (Newton steps with a frozen Hessian): they converge linearly, at a rate that
shrinks with the distance between the points. That is how a rough full fit is polished and the
folds are iterated without forming another Hessian. Nothing here is trusted: the steps are only
centres, certified by their duality gaps.
"""

import numpy as np
import scipy.linalg
import scipy.sparse as sp

try:  # SciPy's own SpGEMM and scatter kernels, private: the public product stands in if they ever move
    from scipy.sparse._sparsetools import csr_matmat as _csr_matmat, csr_todense as _csr_todense
except ImportError:
    _csr_matmat = _csr_todense = None

BLOCK_GRAMS_FLOATS = 1 << 20  # the folds' Gram matrices are kept up to 8 MiB


class NewtonCentres:
    """Hessian of the full objective at (coef, intercept), and Newton steps of its folds.

    Parameters
    ----------
    X : ndarray or CSR of shape (n, d); d + 1 ≤ a few thousand (S is dense d̃ × d̃).
    y, loss : targets and :class:`glru.losses.Loss`.
    fit_intercept : bool
    coef, intercept : where the Hessian is evaluated, and the origin of :meth:`step`.
    strength : float
        a = n·λ of the full-data problem.
    blocks : list of index arrays, optional
        Disjoint row sets whose Gram matrices :meth:`fold_solver` will need (K-fold's held-out
        rows): formed once, summed into the Hessian, and released by the fold solver that uses
        each.
    """

    def __init__(self, X, y, loss, fit_intercept, coef, intercept, strength, blocks=None):
        self.X, self.y, self.loss, self.fit_intercept = X, y, loss, fit_intercept
        self.XT = X.T  # kept: scipy validates a transposed sparse matrix anew on every .T
        self.strength = strength
        self.mask = np.ones(X.shape[1] + fit_intercept)  # P: the intercept is not penalized
        if fit_intercept:
            self.mask[-1] = 0.0
        z = self._join(coef, intercept)
        self.margins = self._margins(z)
        self.curvatures = loss.second_derivative(y, self.margins)
        self.block_grams = self._block_grams(blocks)
        if self.block_grams:
            rest = outside(np.concatenate(blocks), X.shape[0])
            gram = sum(self.block_grams) + self._gram(rest, self.curvatures[rest])
        else:
            gram = self._gram(None, self.curvatures)
        self.hessian = gram + np.diag(strength * self.mask)
        self._factor = self._counts = None
        self.recentre(coef, intercept, self.margins)

    def recentre(self, coef, intercept, margins=None):
        """Move the origin of :meth:`step` to (coef, intercept), keeping the Hessian (and its
        factor, and ``margins``, where it was evaluated): the folds' steps from there are then
        chord steps, which the certificates account for (:mod:`glru.curvature`)."""
        self.z = self._join(coef, intercept)
        self.slopes = self.loss.derivative(self.y, self._margins(self.z) if margins is None else margins)
        self.loss_gradient = self._transpose_times(None, self.slopes)

    def reevaluate(self, margins):
        """Move the Hessian to ``margins`` where a row's curvature changed: for losses whose
        curvature is piecewise constant (squared hinge, Huber), those are the rows that crossed a
        kink, and the update (a Gram matrix of those rows) is the exact Hessian there. The factor
        is recomputed when next needed. Not with kept block Gram matrices (made at the old
        curvatures)."""
        curvatures = self.loss.second_derivative(self.y, margins)
        rows = np.flatnonzero(curvatures != self.curvatures)
        if rows.size:
            self.hessian += self._gram(rows, curvatures[rows] - self.curvatures[rows])
            self._factor = None
        self.curvatures, self.margins = curvatures, margins

    def full_solver(self, g):
        """S⁻¹g: the chord step of the full-data problem (sum form)."""
        return scipy.linalg.cho_solve(self._full_factor(), g)

    def step(self, held_out, strength, solver=None):
        """The point one Newton step from the origin for the fold without rows ``held_out``,
        whose objective has a_T = ``strength``. Returns (coef, intercept), or None if the fold's
        Hessian is singular (e.g. no curvature left for the intercept). ``solver`` is the
        fold's :meth:`fold_solver` if already built."""
        solver = solver or self.fold_solver(held_out, strength)
        if solver is None:
            return None
        rows = np.asarray(held_out)
        gradient = self.loss_gradient - self._transpose_times(rows, self.slopes[rows]) + strength * self.mask * self.z
        z = self.z - solver(gradient)
        if not np.all(np.isfinite(z)):
            return None
        return (z[:-1], z[-1]) if self.fit_intercept else (z, 0.0)

    def _block_grams(self, blocks):
        """X̃_BᵀDX̃_B of each of the disjoint row sets ``blocks`` (the folds' held-out rows), kept
        for :meth:`fold_solver` when they fit in ``BLOCK_GRAMS_FLOATS``; their sum is most of
        the Hessian, which then costs nothing more. Empty if not kept."""
        dim = self.mask.shape[0]
        if not blocks or len(blocks) * dim * dim > BLOCK_GRAMS_FLOATS:
            return []
        if np.bincount(np.concatenate(blocks), minlength=self.X.shape[0]).max(initial=0) > 1:
            return []  # overlapping sets: not a partition
        return [self._gram(b, self.curvatures[b]) for b in blocks]

    def _take_block_gram(self, block):
        """The kept Gram matrix of ``block``, released: each fold factors its Hessian once."""
        gram, self.block_grams[block] = self.block_grams[block], None
        return gram

    def fold_solver(self, held_out, strength, block=None):
        """A :class:`FoldSolver`, g ↦ ∇²F_T⁻¹ g for the fold without rows ``held_out`` (a
        factorization kept for further steps with the same matrix), or None if that Hessian is
        not positive definite. ``block``: the index of ``held_out`` among the blocks the object
        was built with, whose kept Gram matrix is then reused.

        Features with no stored entry in the fold's training rows are decoupled exactly: their
        Hessian rows are a_T·e_j, which the downdate S − X̃_VᵀDX̃_V only reproduces up to
        rounding. Solving them as g_j / a_T keeps their coefficients exactly 0 at the fold's
        optimum, so a held-out row made only of such features gets the decision value 0 (and
        the label) an exact refit gives it."""
        rows = np.asarray(held_out)
        upper = None
        try:
            if abs(strength - self.strength) <= 1e-12 * self.strength and 4 * rows.shape[0] < self.mask.shape[0]:
                solve = self._woodbury_solver(rows)
            else:
                gram = self._take_block_gram(block) if block is not None and self.block_grams else None
                gram = self._gram(rows, self.curvatures[rows]) if gram is None else gram
                hessian = np.subtract(self.hessian, gram, out=gram)  # in place: one d̃ × d̃ array
                hessian[np.diag_indices_from(hessian)] += (strength - self.strength) * self.mask
                upper = scipy.linalg.cholesky(hessian, overwrite_a=True)
                solve = _cholesky_solve(upper)
        except (np.linalg.LinAlgError, ValueError):
            return None
        if self._counts is None:
            self._counts = self._column_counts(None)
        unseen = np.flatnonzero(self._counts == self._column_counts(rows))
        return FoldSolver(solve, upper, unseen, strength)

    def updated_solver(self, solver, rows, weights):
        """The :class:`FoldSolver` of UᵀU + X̃_Rᵀ diag(weights) X̃_R, U = ``solver.upper`` (a directly
        factored fold): the fold's Hessian with the curvature of the rows R changed by ``weights``
        (any sign), e.g. re-evaluated where the fold's iterate has moved them. None if that
        matrix is not positive definite."""
        hessian = self._gram(rows, weights)
        hessian += solver.upper.T @ solver.upper
        try:
            upper = scipy.linalg.cholesky(hessian, overwrite_a=True)
        except (np.linalg.LinAlgError, ValueError):
            return None
        return FoldSolver(_cholesky_solve(upper), upper, solver.unseen, solver.strength)

    def _column_counts(self, rows):
        """Stored entries per feature column of X_R (R = all rows when ``rows`` is None)."""
        block = self.X if rows is None else self.X[rows]
        if sp.issparse(block):
            return np.bincount(block.indices, minlength=block.shape[1])
        return np.count_nonzero(block, axis=0)

    # ---- linear algebra on X̃ = [X, 1] without forming it
    def _join(self, coef, intercept):
        return np.append(coef, intercept) if self.fit_intercept else np.array(coef, dtype=float)

    def _margins(self, z):
        w, b = (z[:-1], z[-1]) if self.fit_intercept else (z, 0.0)
        return np.asarray(self.X @ w).ravel() + b

    def _transpose_times(self, rows, v):
        """X̃_Rᵀv (R = all rows when ``rows`` is None)."""
        transposed = self.XT if rows is None else self.X[rows].T
        out = np.asarray(transposed @ v).ravel()
        return np.append(out, v.sum()) if self.fit_intercept else out

    def _gram(self, rows, weights):
        """X̃_Rᵀ diag(weights) X̃_R (R = all rows when ``rows`` is None)."""
        return weighted_gram(self.X, weights, self.fit_intercept, rows)

    def _full_factor(self):
        if self._factor is None:
            self._factor = scipy.linalg.cho_factor(self.hessian)
        return self._factor

    def _woodbury_solver(self, rows):
        """(S − X̃_VᵀDX̃_V)⁻¹ with E = D^{1/2}X̃_V:  S⁻¹g + S⁻¹Eᵀ (I − E S⁻¹Eᵀ)⁻¹ E S⁻¹g."""
        factor = self._full_factor()
        E = augmented_rows(self.X, rows, self.fit_intercept) * np.sqrt(self.curvatures[rows])[:, None]
        Sinv_Et = scipy.linalg.cho_solve(factor, E.T)
        capacitance = scipy.linalg.lu_factor(np.eye(rows.shape[0]) - E @ Sinv_Et, check_finite=True)

        def solver(g):
            Sinv_g = scipy.linalg.cho_solve(factor, g, check_finite=False)
            return Sinv_g + Sinv_Et @ scipy.linalg.lu_solve(capacitance, E @ Sinv_g, check_finite=False)
        return solver


class FoldSolver:
    """g ↦ M⁻¹g for one fold's Hessian M (callable), with M's upper Cholesky factor ``upper``
    (M = UᵀU) when the fold's Hessian was formed and factored directly (None with Woodbury).
    Features ``unseen`` by the fold's training rows are solved as g_j / a_T (see
    :meth:`NewtonCentres.fold_solver`)."""

    def __init__(self, solve, upper, unseen, strength):
        self._solve, self.upper, self.unseen, self.strength = solve, upper, unseen, strength

    def __call__(self, g):
        step = self._solve(g)
        if self.unseen.size:
            step[self.unseen] = g[self.unseen] / self.strength
        return step


def _cholesky_solve(upper):
    """g ↦ M⁻¹g for M = UᵀU, U = ``upper``."""
    return lambda g: scipy.linalg.cho_solve((upper, False), g)


def augmented_rows(X, rows, fit_intercept):
    """X̃_R = [X_R, 1] (without the 1s if no intercept) as a dense array: for a few rows."""
    block = X[rows]
    block = block.toarray() if sp.issparse(block) else np.asarray(block)
    if fit_intercept:
        block = np.hstack([block, np.ones((block.shape[0], 1))])
    return block


def outside(rows, n):
    """The sorted indices of 0..n−1 not in ``rows`` (a mask: O(n), where np.setdiff1d sorts)."""
    mask = np.ones(n, dtype=bool)
    mask[rows] = False
    return np.flatnonzero(mask)


def weighted_gram(X, weights, fit_intercept, rows=None, single=False):
    """X̃_Rᵀ diag(weights) X̃_R as a dense (d̃, d̃) array, X̃ = [X, 1] with an intercept, R = ``rows``
    (all rows if None; ``weights`` are R's), a chunk of rows at a time; weights of any sign.
    Sparse rows with at most ``FEW_PAIRS`` pairs of stored values in all are summed pair by pair
    (:func:`_add_gram_by_pairs`). More are multiplied as sparse matrices, or made dense for BLAS
    where that is faster: rows with nnz_i² > d²/DENSE_ROW_RATIO. A sparse product costs about
    nnz_i² multiply-adds a row at ~8 ns each with SciPy's symbolic pass (~5 ns without,
    :func:`_add_transpose_product`), BLAS syrk d²/2 at ~0.1 ns; measured on one core, the two
    broke even near nnz_i² = d²/80
    (a9a.t, 14 of 122 features a row: equally fast; mushrooms, 21 of 112: 2× faster dense; w8a's
    rows of 40 to 114 of 300 features, most of those its refreshes touch: 1.4× faster dense), and
    ratios from 35 to 100 measured alike once the symbolic pass was gone. With ``single`` (a Gram
    matrix that only preconditions) dense rows are multiplied in float32, by a syrk twice as fast,
    and rows go dense from nnz_i² > d²/DENSE_ROW_RATIO_SINGLE (binary 20000 × 500 (5 %), 45 of 500
    features a row: 0.20 s sparse, 0.12 s dense in float32). Besides the result, one d × d buffer
    while it is formed (none for the rows kept sparse where there is no intercept)."""
    d = X.shape[1]
    gram = np.zeros((d + fit_intercept,) * 2)
    dense = True  # every row, for a dense X
    if sp.issparse(X):
        lengths = np.diff(X.indptr.astype(np.int64))
        lengths = lengths if rows is None else lengths[rows]
        if int(lengths @ lengths) <= FEW_PAIRS:
            _add_gram_by_pairs(gram, X, weights, fit_intercept, rows, lengths)
            return gram
        dense = (DENSE_ROW_RATIO_SINGLE if single else DENSE_ROW_RATIO) * lengths.astype(float) ** 2 > d * d
    for in_dense in (False, True):
        chosen = np.equal(dense, in_dense)
        if np.all(chosen):
            _add_gram(gram, X, weights, fit_intercept, rows, in_dense, single)
        elif np.any(chosen):
            part = np.flatnonzero(chosen)
            _add_gram(gram, X, weights[part], fit_intercept, part if rows is None else np.asarray(rows)[part],
                      in_dense, single)
    return gram


def _add_gram_by_pairs(gram, X, weights, fit_intercept, rows, lengths):
    """gram += X̃_Rᵀ diag(weights) X̃_R for CSR X (``lengths``: the rows' counts of stored values,
    int64), summed over the pairs of stored values of each row (Σ nnz_i² of them) by one
    ``np.bincount``: a few NumPy passes, where SciPy's sparse product builds five sparse matrices a
    call, about 0.15 ms whatever their size. Those calls are the rows whose curvature changed at a
    chord or semismooth step: LinearSVC 5-fold on sparse 1040 × 121 (C = 62) forms 31 Gram
    matrices a run, 24 of them of fewer than 128 rows, and took 17–18 ms by SciPy's product, 13 ms
    this way. Duplicate entries add up as they should."""
    d = X.shape[1]
    rows = np.arange(X.shape[0]) if rows is None else np.asarray(rows)
    firsts = X.indptr[rows].astype(np.int64)
    offsets = np.cumsum(lengths) - lengths  # of each row's values among the chosen ones
    owner = np.repeat(np.arange(rows.size), lengths)
    stored = np.arange(owner.size) - offsets[owner] + firsts[owner]
    columns, values = X.indices[stored].astype(np.int64), X.data[stored]
    squares = lengths * lengths
    pair_owner = np.repeat(np.arange(rows.size), squares)
    within = np.arange(pair_owner.size) - np.repeat(np.cumsum(squares) - squares, squares)
    width = lengths[pair_owner]
    first, second = offsets[pair_owner] + within // width, offsets[pair_owner] + within % width
    products = np.bincount(columns[first] * d + columns[second],
                           weights=weights[pair_owner] * values[first] * values[second], minlength=d * d)
    gram[:d, :d] += products.reshape(d, d)
    if fit_intercept:
        column = np.bincount(columns, weights=weights[owner] * values, minlength=d)
        gram[:d, d] += column
        gram[d, :d] += column
        gram[d, d] += weights.sum()


# up to this many pairs of stored values (Σ nnz_i² over the rows) a sparse Gram matrix is summed by
# _add_gram_by_pairs, beyond by SciPy's sparse product; with an intercept, d = 122 to 500, the two took
# 24 / 149 µs at 70 pairs, 122 / 182 µs at 6931, 205 / 300 µs at 6355 (d = 500), 394 / 351 µs at 23133
FEW_PAIRS = 1 << 14

DENSE_ROW_RATIO = 60.0  # a little on the sparse side of where the two break even (see weighted_gram)
# float32 syrk accumulated in place: the break-even triples (binary 20000 × 500 (5 %), rows of 45 features on
# average: 0.157 s at 2×, 0.118 s at 3×, 0.115 s at 4×; w8a 0.062, 0.062 and 0.065 s)
DENSE_ROW_RATIO_SINGLE = 3 * DENSE_ROW_RATIO


def _add_gram(gram, X, weights, fit_intercept, rows, dense, single=False):
    """gram += X̃_Rᵀ diag(weights) X̃_R, the rows as dense (in float32 with ``single``) or as
    sparse matrices, a chunk at a time."""
    d = X.shape[1]
    # BLAS syrk fills the upper triangle only, accumulated in a Fortran-ordered buffer of the rows'
    # precision (no d × d temporary a chunk: binary 20000 × 500 (5 %) in float32, 0.17 → 0.15 s); the
    # sparse products are scattered into a contiguous buffer (SciPy's kernel for it takes no strides;
    # gram[:d, :d] has them with an intercept), gram itself without one (8d² bytes fewer at the peak)
    into_gram = not (dense or fit_intercept)
    out = gram if into_gram else \
        np.zeros((d, d), dtype=np.float32 if dense and single else float, order="F" if dense else "C")
    count = X.shape[0] if rows is None else len(rows)
    per_row = X.nnz / max(X.shape[0], 1) if sp.issparse(X) and not dense else d
    # dense chunks are 2**17 floats. A sparse chunk's product is written out and added into ``out`` whole, up
    # to d² entries a chunk whatever its rows: chunks of d²/4 stored values (at least 2**15), whose copies (the
    # chunk, its weighted copy, its transpose: 36 bytes a value) take about the Gram matrix's own 8d² bytes.
    # Against 2**15 a chunk: sparse 7244 × 683 (39 values a row) 57 → 31 ms, 2517 × 1932 (98) 167 → 68 ms,
    # Gaussian 20000 × 500 (25) 57 → 40 ms and 10000 × 1000 (20) 32 → 19 ms (unchanged where d² ≤ 2**17)
    size = max(1, int((1 << 17 if dense else max(1 << 15, d * d // 4)) // max(per_row, 1.0)))
    for start in range(0, count, size):
        chunk = slice(start, start + size)
        part = X[chunk] if rows is None else X[rows[chunk]]
        w = weights[chunk]
        if dense:
            part = part.toarray() if sp.issparse(part) else part
            part = part.astype(out.dtype, copy=False)
            _add_symmetric_product(out, part, w)
            column = w.astype(part.dtype, copy=False) @ part
        else:
            # the stored values scaled in a copy (multiply() would go through COO)
            weighted = part.copy()
            weighted.data *= np.repeat(w, np.diff(part.indptr))
            _add_transpose_product(out, part, weighted)
            column = np.asarray(weighted.sum(axis=0)).ravel()
        if fit_intercept:
            gram[:d, d] += column
            gram[d, :d] += column
            gram[d, d] += w.sum()
    if not into_gram:
        gram[:d, :d] += out
    if dense:
        gram[:d, :d] += np.triu(out, 1).T


class GramPlan:
    """:func:`weighted_gram` of one X (all its rows) for many weights, the Hessians of a Newton
    solve: the rows are split once into dense and sparse ones, and the sparse rows' transpose is
    kept, so that their part is one SpGEMM of it with the weighted rows (no chunks, no
    conversions) and the intercept's column one product (w8a standardized: 57 → 37 ms a matrix;
    a9a.t 8.6 → 5.7 ms). Keeps a transposed copy of the sparse rows (and, where some rows are
    dense, of the sparse rows themselves)."""

    def __init__(self, X, fit_intercept):
        self.X, self.fit_intercept = X, fit_intercept
        self.transposed = None
        if sp.issparse(X) and _csr_matmat is not None:
            d = X.shape[1]
            dense = DENSE_ROW_RATIO * np.diff(X.indptr).astype(float) ** 2 > d * d
            self.dense_rows, self.sparse_rows = np.flatnonzero(dense), np.flatnonzero(~dense)
            self.sparse = X if not self.dense_rows.size else X[self.sparse_rows]
            self.transposed = self.sparse.T.tocsr()

    def __call__(self, weights):
        """X̃ᵀ diag(weights) X̃ as a dense (d̃, d̃) array."""
        if self.transposed is None:
            return weighted_gram(self.X, weights, self.fit_intercept)
        d = self.X.shape[1]
        if self.dense_rows.size:
            gram = weighted_gram(self.X, weights[self.dense_rows], self.fit_intercept, self.dense_rows)
            weights = weights[self.sparse_rows]
        else:
            gram = np.zeros((d + self.fit_intercept,) * 2)
        sparse = self.sparse
        weighted = sp.csr_matrix((sparse.data * np.repeat(weights, np.diff(sparse.indptr)), sparse.indices,
                                  sparse.indptr), shape=sparse.shape)
        out = np.zeros((d, d))
        _add_transpose_product(out, sparse, weighted, self.transposed)
        gram[:d, :d] += out
        if self.fit_intercept:
            column = self.transposed @ weights
            gram[:d, d] += column
            gram[d, :d] += column
            gram[d, d] += weights.sum()
        return gram


def _add_transpose_product(out, A, B, transposed=None):
    """out += AᵀB for CSR matrices A and B with as many rows, ``out`` C-contiguous (``transposed``:
    Aᵀ as CSR, where the caller keeps it). SciPy's SpGEMM
    kernel (``csr_matmat``) runs on Aᵀ's CSR arrays into buffers sized by a bound on the
    product's stored entries, min(d_A·d_B, Σ_i nnz(A_i)·nnz(B_i)), instead of SciPy's symbolic
    pass (``csr_matmat_maxnnz``) that counts them exactly: a third of a sparse Gram matrix's time
    (w8a, a9a.t); its kernel ``csr_todense`` then adds the product into ``out`` without a sparse
    result (indexing out by NumPy took as long as the product on binary 20000 × 500, whose
    Gram matrix is dense: 0.27 → 0.17 s). SciPy's public product where the private kernels are
    missing or refuse the arrays."""
    transposed = A.T.tocsr() if transposed is None else transposed
    index_types = {a.dtype for a in (transposed.indptr, transposed.indices, B.indptr, B.indices)}
    if _csr_matmat is not None and len(index_types) == 1:  # the kernel takes one index type
        bound = min(out.size, int(np.diff(A.indptr).astype(np.int64) @ np.diff(B.indptr)))
        indptr = np.empty(out.shape[0] + 1, dtype=transposed.indices.dtype)
        indices = np.empty(bound, dtype=transposed.indices.dtype)
        data = np.empty(bound)
        try:
            _csr_matmat(out.shape[0], out.shape[1], transposed.indptr, transposed.indices, transposed.data,
                        B.indptr, B.indices, B.data, indptr, indices, data)
            _csr_todense(out.shape[0], out.shape[1], indptr, indices, data, out)
        except (TypeError, ValueError):
            pass
        else:
            return
    out += (transposed @ B).toarray()


def _add_symmetric_product(out, A, w):
    """out += the upper triangle of Aᵀ diag(w) A, in place: BLAS syrk of √|w|·A, rows of either
    sign apart (given as (√|w|A)ᵀ, which is Fortran-ordered: no copy on the way to BLAS), into
    ``out``, which must be Fortran-ordered in A's precision (else BLAS writes into a copy). Float32
    rows serve a Gram matrix that only preconditions: 20000 × 600 in 0.17–0.18 s against 0.29–0.34 s."""
    if not (out.flags.f_contiguous and out.dtype == A.dtype):
        raise ValueError("out must be Fortran-ordered in the rows' precision: BLAS would write into a copy.")
    negative = w < 0
    syrk = scipy.linalg.blas.ssyrk if A.dtype == np.float32 else scipy.linalg.blas.dsyrk
    for sign, chosen in ((1.0, ~negative), (-1.0, negative)):
        if chosen.all():
            B = A * np.sqrt(sign * w).astype(A.dtype)[:, None]
        elif chosen.any():
            B = A[chosen] * np.sqrt(sign * w[chosen]).astype(A.dtype)[:, None]
        else:
            continue
        syrk(sign, B.T, beta=1.0, c=out, overwrite_c=True)
