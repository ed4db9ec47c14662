"""Certificates of the candidates of one stepwise step on one fold (:mod:`glru.stepwise`).

For the current fit on features F, every candidate — F without j (eq. 20) or F with j (eq. 21)
— gets a centre (a Newton step from one inverse Hessian, :mod:`glru.hessian`, moved by a few
more batched Newton steps; or the paper's centre) and a certificate on its own problem: the
sound duality gap, the ball (9) on the candidate's features and the exact intercept bracket,
for a block of candidates at once, each as a :class:`glru.held_out.HeldOutOutcome`.
"""

import numpy as np

from .bounds import primal_radius, zero_band
from .certificate import _deviation_norms
from .duality import EPS, enforce_zero_sum, gap_allowance, margin_error
from .held_out import HeldOutOutcome
from .hessian import DenseInverseHessian, LowRankInverseHessian, inverse_hessian
from .intercept import shift_interval
from .problem import as_dense, assemble_gap, row_norms_sq

TOL_ROUNDING = 1e-15  # a gap at rounding level: the centre is the polished optimum
BLOCK_FLOATS = 1 << 20  # candidates are certified a block at a time: (n + d) × block floats
PRE_STEPS = 2  # Newton steps taken from the candidates' Newton centres before certifying them
OUTER_MAX_FLOATS = 1 << 22  # n·d̃² of the row outer products behind exact batched Newton steps


class CandidateCertifier:
    """Centres and certificates of every candidate of one fold (steps 2–3 of :mod:`glru.stepwise`)."""

    def __init__(self, fit, direction, candidates, need):
        self.fit, self.direction, self.candidates, self.need = fit, direction, candidates, need
        fold = fit.fold
        self.strength = fold.y_train.size * fold.penalty.lam
        self.position = np.searchsorted(fit.support, candidates) if direction == "backward" else None
        if direction == "forward":
            self.X_new_train, self.X_new_test = fold.columns(candidates)
        # the features of each candidate: F's columns, one of them dropped, or one column added
        self.test_sq = row_norms_sq(fit.X_test)
        if fit.fit_intercept:
            x_ref_F = fit.x_ref[fit.support]
            self.train_sq = _deviation_norms(fit.X_train, x_ref_F) ** 2
            self.test_sq = _deviation_norms(fit.X_test, x_ref_F) ** 2

    def outcomes(self):
        """Every candidate's :class:`HeldOutOutcome` on this fold, a block of candidates at a time."""
        fit, n = self.fit, self.candidates.size
        self._prepare_newton()
        out = [None] * n
        block = max(1, BLOCK_FLOATS // (fit.X_train.shape[0] + fit.X_test.shape[0] + fit.support.size + 1))
        for start in range(0, n, block):
            part = np.arange(start, min(n, start + block))
            if self.need == "values":  # every candidate is solved: its centre is only a warm start
                centres = self._newton_centres(part) if self.inverse is not None else self._paper_centres(part)
                out[start:start + part.size] = [self._uncertified(p, c, *centres) for c, p in enumerate(part)]
            elif self.inverse is None:
                out[start:start + part.size] = self._certify(part, *self._paper_centres(part))
            else:
                out[start:start + part.size] = self._certify_newton(part)
        return out

    def _certify_newton(self, part):
        """Certificates at the (stepped) Newton centres, intersected with the paper's centre's
        where signs are left open (computed in full only where its radius is smaller)."""
        if self.low_rank is not None:
            out = self.low_rank.newton(part)
            paper = self.low_rank.paper
        else:
            out = self._certify(part, *self._stepped_centres(part))
            radii = np.array([o.radius for o in out])
            paper = lambda q: self._certify(q, *self._paper_centres(q), max_radius=radii[q - part[0]])  # noqa: E731
        weak = np.array([p for p, o in zip(part, out) if not np.all(o.decided)], dtype=np.intp)
        if weak.size:
            for p, outcome in zip(weak, paper(weak)):
                first = out[p - part[0]]
                out[p - part[0]] = _intersect(first, outcome, self.centre(p) if first.coef is None else None)
        return out

    def chord(self, part, outcomes):
        """One Newton step (:meth:`_step`) for candidates ``part`` from the centres of their
        ``outcomes``; returns the new outcomes (certified and intersected with the old bounds,
        unless ``need == "values"``) and the step lengths."""
        W, new, b, sizes = self._step(part, *self._to_block(part, outcomes))
        if self.need == "values":
            return [self._uncertified(p, c, W, new, b) for c, p in enumerate(part)], sizes
        return self._certify(part, W, new, b, known=outcomes), sizes

    def _stepped_centres(self, part):
        """The Newton centres moved by ``PRE_STEPS`` more Newton (or chord) steps before their
        first certificate: a step costs two products, a certificate an intercept bracket per
        candidate, and on a9a.t (backward, 123 → 10) two steps left 176 of 7,571 candidates to
        refine instead of 4,946 (8 s instead of 12)."""
        W, new, b = self._newton_centres(part)
        for _ in range(PRE_STEPS):
            W, new, b, _ = self._step(part, W, new, b)
        return W, new, b

    def _step(self, part, W, new, b):
        """One Newton step from the centres (W, new, b): with each candidate's own Hessian when
        they are small (:meth:`_newton_steps`), else a chord step (the Hessian frozen at the
        current fit, :meth:`_chord_steps`). Returns the new centres and the step lengths."""
        fit, y, a = self.fit, self.fit.fold.y_train, self.strength
        U = np.asarray(fit.X_train @ W) + b
        if new is not None:
            X_new = as_dense(self.X_new_train[:, part])
            U += X_new * new
        slopes = fit.loss.derivative(y[:, None], U)
        G = np.asarray(fit.X_train.T @ slopes).reshape(W.shape) + a * W
        if fit.fit_intercept:
            G = np.vstack([G, slopes.sum(axis=0)])
        g_new = np.einsum("ij,ij->j", X_new, slopes) + a * new if new is not None else None
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            exact = self._newton_steps(part, U, G, X_new if new is not None else None, g_new)
            Y, new_step = exact if exact is not None else self._chord_steps(part, G, g_new)
            sizes = np.sqrt((Y ** 2).sum(axis=0) + new_step ** 2)
        # near separation a step can blow up: it is not taken, and its infinite length makes the
        # caller treat the candidate as stalled
        wild = ~np.isfinite(sizes)
        Y[:, wild], new_step[wild], sizes[wild] = 0.0, 0.0, np.inf
        if new is not None:
            new = new - new_step
        f = fit.support.size
        W, b = W - Y[:f], (b - Y[f] if fit.fit_intercept else b)
        return W, new, b, sizes

    def _chord_steps(self, part, G, g_new):
        """H⁻¹-steps with the Hessian of the current fit, constrained to each candidate's features."""
        Y = self.inverse.solve(G)
        columns = np.arange(part.size)
        if g_new is None:  # the step that keeps the removed coefficient at 0 (see _newton_centres)
            pos = self.position[part]
            Y = Y - self.inverse.columns(pos) * (Y[pos, columns] / self.diagonal[pos])
            Y[pos, columns] = 0.0
            return Y, np.zeros(part.size)
        # block elimination of the added coordinate through its Schur complement
        new_step = (g_new - np.einsum("ij,ij->j", self.coupling[:, part], Y)) / self.schur[part]
        return Y - self.solved[:, part] * new_step, new_step

    def _newton_steps(self, part, U, G, X_new, g_new):
        """Exact Newton steps, each candidate's own Hessian at its own centre (quadratic
        convergence), when the candidates have few coefficients: the Hessians of a block are
        one product of the curvatures with the n × d̃² row outer products. None otherwise."""
        fit = self.fit
        if self.outer is None:
            return None
        curvatures = fit.loss.second_derivative(fit.fold.y_train[:, None], U)
        H = np.tensordot(curvatures, self.outer, axes=(0, 0))  # (m, d̃, d̃)
        f_tilde = H.shape[1]
        H[:, np.arange(f_tilde), np.arange(f_tilde)] += self.strength * self.penalized
        rhs = G.T.copy()
        if X_new is not None:
            weighted = curvatures * X_new
            coupling = weighted.T @ self.dense_F  # (m, d̃)
            corner = np.einsum("ij,ij->j", weighted, X_new) + self.strength
            H = np.concatenate([np.concatenate([H, coupling[:, :, None]], axis=2),
                                np.concatenate([coupling, corner[:, None]], axis=1)[:, None, :]], axis=1)
            rhs = np.concatenate([rhs, g_new[:, None]], axis=1)
        else:  # the removed coordinate is fixed at 0: its row and column become the identity's
            pos, rows = self.position[part], np.arange(part.size)
            H[rows, pos, :], H[rows, :, pos], rhs[rows, pos] = 0.0, 0.0, 0.0
            H[rows, pos, pos] = 1.0
        try:
            solution = np.linalg.solve(H, rhs[:, :, None])[:, :, 0]
        except np.linalg.LinAlgError:
            return None
        if not np.all(np.isfinite(solution)):
            return None
        if X_new is None:
            return solution.T, np.zeros(part.size)
        return solution[:, :f_tilde].T, solution[:, f_tilde]

    def _to_block(self, part, outcomes):
        """(W over F, new coefficients, intercepts) of the outcomes' centres (see _candidate_coef)."""
        coefs = [o.coef for o in outcomes]
        b = np.array([o.intercept for o in outcomes], dtype=float)
        if self.direction == "backward":
            W = np.column_stack([np.insert(w, pos, 0.0) for w, pos in zip(coefs, self.position[part])])
            return W, None, b
        where = np.searchsorted(self.fit.support, self.candidates[part])
        new = np.array([w[i] for w, i in zip(coefs, where)])
        W = np.column_stack([np.delete(w, i) for w, i in zip(coefs, where)]) if coefs[0].size > 1 \
            else np.zeros((0, part.size))
        return W, new, b

    # ---- centres: (W over F, new coefficients or None, intercepts), one column per candidate
    def _prepare_newton(self):
        """The inverse Hessian at the current fit (None for the elastic net, or when too large),
        and what the Newton steps of every candidate share."""
        fit = self.fit
        self.inverse = self.outer = self.low_rank = None
        if fit.problem.penalty.kappa > 0 or not fit.problem.penalty.lam > 0:
            return
        if fit.support.size == 0:
            self.inverse = _intercept_only_inverse(fit)
        else:
            self.inverse = inverse_hessian(fit.X_train, fit.fold.y_train, fit.loss, fit.fit_intercept, fit.coef,
                                           fit.intercept, self.strength)
        if self.inverse is None:
            return
        self.z = np.append(fit.coef, fit.intercept) if fit.fit_intercept else fit.coef
        f_tilde, n = fit.support.size + fit.fit_intercept, fit.fold.y_train.size
        self.outer = None  # the rows' outer products x̃x̃ᵀ, for exact Newton steps when small
        if n * f_tilde * f_tilde <= OUTER_MAX_FLOATS:
            dense = as_dense(fit.X_train)
            self.dense_F = np.hstack([dense, np.ones((n, 1))]) if fit.fit_intercept else dense
            self.outer = self.dense_F[:, :, None] * self.dense_F[:, None, :]
            self.penalized = np.append(np.ones(fit.support.size), 0.0) if fit.fit_intercept \
                else np.ones(fit.support.size)
        if self.direction == "backward":
            self.diagonal = self.inverse.diagonal()
            if isinstance(self.inverse, LowRankInverseHessian) and not fit.fit_intercept and self.need == "labels":
                self.low_rank = _LowRankRemovals(self)
            return
        # the added coordinate's coupling h_j = X̃_Fᵀ D x_j, H⁻¹h_j and Schur complement, per candidate
        curvatures = fit.loss.second_derivative(fit.fold.y_train, fit.margins)
        self.slopes = fit.loss.derivative(fit.fold.y_train, fit.margins)
        f, n_new = fit.support.size, self.candidates.size
        self.coupling = np.empty((f + fit.fit_intercept, n_new))
        self.schur, self.gradient = np.empty(n_new), np.empty(n_new)
        block = max(1, BLOCK_FLOATS // (fit.X_train.shape[0] + f + 1))
        for start in range(0, n_new, block):
            part = slice(start, start + block)
            X_new = as_dense(self.X_new_train[:, part])
            weighted = curvatures[:, None] * X_new
            coupling = np.asarray(fit.X_train.T @ weighted).reshape(f, X_new.shape[1])
            if fit.fit_intercept:
                coupling = np.vstack([coupling, weighted.sum(axis=0)])
            self.coupling[:, part] = coupling
            self.schur[part] = np.einsum("ij,ij->j", X_new, weighted) + self.strength
            self.gradient[part] = X_new.T @ self.slopes
        self.solved = self.inverse.solve(self.coupling)
        self.schur -= np.einsum("ij,ij->j", self.coupling, self.solved)
        self.schur = np.where(self.schur > 0, self.schur, np.inf)  # no curvature: no step

    def _newton_centres(self, part):
        """Removal: z − (z_j/[H⁻¹]_jj)·H⁻¹e_j (the quadratic model's minimiser with z_j = 0);
        addition: the Newton step of the enlarged problem, by block elimination."""
        fit, z, f = self.fit, self.z, self.fit.support.size
        if self.direction == "backward":
            pos = self.position[part]
            Z = z[:, None] - self.inverse.columns(pos) * (z[pos] / self.diagonal[pos])
            Z[pos, np.arange(pos.size)] = 0.0
            return Z[:f], None, (Z[f] if fit.fit_intercept else np.zeros(pos.size))
        step = -self.gradient[part] / self.schur[part]
        Z = z[:, None] - self.solved[:, part] * step
        return Z[:f], step, (Z[f] if fit.fit_intercept else np.zeros(part.size))

    def _paper_centres(self, part):
        """Eq. (20): the fit with w_j = 0; eq. (21): the new w_j from KKT (7), ∂ρ*(x_jᵀα/n)."""
        fit = self.fit
        W = np.repeat(fit.coef[:, None], part.size, axis=1)
        b = np.full(part.size, fit.intercept)
        if self.direction == "backward":
            W[self.position[part], np.arange(part.size)] = 0.0
            return W, None, b
        alpha = fit.problem.dual_point(fit.margins)
        correlation = np.asarray(self.X_new_train[:, part].T @ alpha).ravel() / fit.fold.y_train.size
        penalty = fit.problem.penalty
        new = penalty.conjugate_gradient(correlation) if penalty.lam > 0 else np.zeros(part.size)
        return W, new, b

    # ---- certificates
    def _certify(self, part, W, new, b, max_radius=None, known=None):
        """The outcomes of the candidates ``part`` at centres (W, new, b); with ``max_radius``,
        bounds only for the candidates whose radius is below it (infinite otherwise: the
        intercept's bracket is the expensive part). ``known`` are earlier outcomes of the same
        candidates: their bounds are intersected in, and the intercept's bracket is computed only
        if the ball could decide a row they left open."""
        fit, fold, loss = self.fit, self.fit.fold, self.fit.loss
        y, penalty = fold.y_train, fold.penalty
        U = np.asarray(fit.X_train @ W) + b
        values = np.asarray(fit.X_test @ W) + b
        if new is not None:
            X_new, X_new_test = as_dense(self.X_new_train[:, part]), as_dense(self.X_new_test[:, part])
            U += X_new * new
            values += X_new_test * new
        A = -loss.derivative(y[:, None], U)
        if fit.fit_intercept:
            A = np.column_stack([enforce_zero_sum(a)[0] for a in A.T]) if A.size else A
        XtA = np.asarray(fit.X_train.T @ A).reshape(fit.support.size, part.size)
        columns = np.arange(part.size)
        if self.direction == "backward":  # the removed feature's column is not in the problem
            XtA[self.position[part], columns] = 0.0
        else:
            W, XtA = np.vstack([W, new]), np.vstack([XtA, np.einsum("ij,ij->j", X_new, A)])
        train_sq, test_sq = self._spread_sq(part, new is not None)
        d = max(fit.support.size + (new is not None) - (self.direction == "backward"), 1)
        norms = np.sqrt((W ** 2).sum(axis=0))
        abs_margins = (fold.train_norms[:, None] * norms + np.abs(b)) * (1 + 1e-12)  # ≥ |x_i|·|w| + |b|
        ev = assemble_gap(loss, penalty, y, W, U, A, XtA, abs_margins, d)  # every candidate's, by columns
        rounded = ev.converged(TOL_ROUNDING)
        radii = primal_radius(ev.gap, penalty.strong_convexity)
        bands = self._zero_bands(A, U)
        out = []
        for c, p in enumerate(part):
            w, norm_w, radius = W[:, c], norms[c], radii[c]
            if max_radius is not None and not radius < max_radius[c]:  # no tighter than what is known
                infinite = np.full(values.shape[0], np.inf)
                out.append(HeldOutOutcome(-infinite, infinite, values[:, c], None, b[c], solved=False))
                continue
            spread = radius * np.sqrt(test_sq[:, c])
            centre = values[:, c]
            # rounding of x·ŵ + b̂: γ_d·(|x|·|ŵ| + |b̂|) ≤ γ_d·(‖x‖‖ŵ‖ + |b̂|), ‖x‖ over all columns
            err = 2 * (d + 16) * EPS * (fold.test_norms * norm_w + abs(b[c])) + 4 * EPS * (np.abs(centre) + spread)
            lower, upper = centre - spread - err, centre + spread + err
            if fit.fit_intercept:
                lower, upper = self._with_intercept(lower, upper, radius, y, U[:, c], np.sqrt(train_sq[:, c]),
                                                    margin_error(abs_margins[:, c], d),
                                                    None if known is None else ~known[c].decided)
            if known is not None:  # the earlier bounds of the same problem stay sound
                lower, upper = np.maximum(lower, known[c].lower), np.minimum(upper, known[c].upper)
            decided = np.all((lower > 0) | (upper <= 0))
            outcome = HeldOutOutcome(lower, upper, centre, None if decided else self._candidate_coef(p, w), b[c],
                                  solved=False)
            outcome.rounded, outcome.radius, outcome.zero_band = bool(rounded[c]), radius, bands[:, c]
            out.append(outcome)
        return out

    def _zero_bands(self, A, U):
        """:func:`glru.bounds.zero_band` of the held-out rows for a block of candidates (row
        norms over all columns bound those over any candidate's)."""
        fit, fold = self.fit, self.fit.fold
        train, test = fold.train_norms, fold.test_norms
        curvature = None
        if fit.fit_intercept:
            train, test = np.sqrt(train ** 2 + 1.0), np.sqrt(test ** 2 + 1.0)
            curvature = fit.loss.second_derivative(fold.y_train[:, None], U).sum(axis=0)
        return zero_band(test, A, train, self.strength, fit.support.size + 1, curvature)

    def _uncertified(self, p, c, W, new, b):
        w = W[:, c] if new is None else np.append(W[:, c], new[c])
        infinite = np.full(self.fit.X_test.shape[0], np.inf)
        return HeldOutOutcome(-infinite, infinite, np.zeros_like(infinite), self._candidate_coef(p, w), b[c], solved=False)

    def centre(self, p):
        """(coef, intercept) of candidate p's first centre, rebuilt (see :meth:`Step.centre`)."""
        part = np.array([p])
        W, new, b = self._newton_centres(part) if self.inverse is not None else self._paper_centres(part)
        w = W[:, 0] if new is None else np.append(W[:, 0], new[0])
        return self._candidate_coef(p, w), float(b[0])

    def _candidate_coef(self, p, w):
        """The centre on the candidate's own (sorted) features: F without j, or F with j inserted."""
        f = self.fit.support.size
        if self.direction == "backward":
            return np.delete(w, self.position[p])
        return np.insert(w[:f], np.searchsorted(self.fit.support, self.candidates[p]), w[f])

    def _with_intercept(self, lower, upper, radius, y, margins, train_spread, margin_err, open_rows=None):
        """Shift the ball's interval by the intercept's exact [τ_lo, τ_hi] (glru.intercept),
        computed only if the ball alone decides a row (one that ``open_rows`` leaves open). (The
        O(1) Taylor bound, from column sums of the whole block, was measured: it settled too few
        candidates on a9a.t to pay for itself.)"""
        decides = (lower > 0) | (upper < 0)
        if open_rows is not None:
            decides &= open_rows
        if self.need == "labels" and not np.any(decides):
            return np.full_like(lower, -np.inf), np.full_like(upper, np.inf)
        tau_lo, tau_hi = shift_interval(self.fit.loss, radius, rows=lambda: (y, margins, train_spread, margin_err),
                                        exact=True)
        return lower + tau_lo, upper + tau_hi

    def _spread_sq(self, part, adding):
        """Squared ‖x_S − x̄_S‖ (‖x_S‖ without intercept) of the training and held-out rows for
        each candidate's features S, from those over F, rounded up."""
        fit = self.fit
        x_ref = fit.x_ref[self.candidates[part]] if fit.fit_intercept else np.zeros(part.size)
        test_cols = as_dense(self.X_new_test[:, part]) if adding else \
            as_dense(fit.X_test[:, self.position[part]])
        test_terms = (test_cols - x_ref) ** 2
        test = self._adjust(self.test_sq, test_terms, adding)
        train = None
        if fit.fit_intercept:
            train_cols = as_dense(self.X_new_train[:, part]) if adding else \
                as_dense(fit.X_train[:, self.position[part]])
            train = self._adjust(self.train_sq, (train_cols - x_ref) ** 2, adding)
        return train, test

    def _adjust(self, base_sq, terms, adding):
        d = self.fit.support.size + 17
        if adding:
            return (base_sq[:, None] + terms) * (1 + 4 * d * EPS)
        return np.maximum(base_sq[:, None] - terms, 0.0) + 8 * d * EPS * base_sq[:, None]


def _intersect(a, b, centre=None):
    """Both intervals are sound; keep the tighter of each, and the first centre (``centre``
    when ``a`` dropped its own), unless the pair is now certified."""
    lower, upper = np.maximum(a.lower, b.lower), np.minimum(a.upper, b.upper)
    coef, intercept = centre if centre is not None else (a.coef, a.intercept)
    outcome = HeldOutOutcome(lower, upper, a.values, coef, intercept, solved=False)
    # the values, and so whether they are at rounding level and their zero band, are a's
    outcome.rounded, outcome.radius, outcome.zero_band = a.rounded, min(a.radius, b.radius), a.zero_band
    if np.all(outcome.decided):
        outcome.coef = None
    return outcome


class _LowRankRemovals:
    """Certificates of every single-feature removal in O(n) each after O(n²·d) shared work,
    for an L2 penalty without intercept when n ≪ d (Woodbury inverse Hessian).

    The Newton centre of removing j is ŵ = w − c_j h_j with c_j = w_j/[H⁻¹]_jj and
    h_j = (e_j − Xᵀr_j)/a, r_j = R x_j (the j-th column of R X as computed: h_j is defined by it,
    so the centre is one exact vector, with its j-th entry set to 0). Everything the gap and
    the bounds need is a product with n-vectors:

        Xŵ = Xw − c_j (x_j − G r_j)/a,  Vŵ = Vw − c_j (v_j − VXᵀ r_j)/a,
        ‖ŵ‖² ≤ ‖w‖² − 2c_j w·h_j + c_j²‖h_j‖²  (the j-th entry's rounding residue only adds),
        ‖X_{F∖j}ᵀα‖² = αᵀGα − (x_j·α)²,   G = XXᵀ.

    Their rounding errors are bounded with the same products in absolute values (|X||X|ᵀ for
    G) and added to the gap and to the held-out bounds, so nothing is less sound than an
    explicit evaluation. The paper's centre (w_j := 0) is the same computation with h_j = e_j.
    """

    def __init__(self, certifier):
        fit, inverse = certifier.fit, certifier.inverse
        self.certifier, self.fit = certifier, fit
        X, V, w = as_dense(fit.X_train), as_dense(fit.X_test), fit.coef
        self.X, self.V, self.a = X, V, inverse.a
        n, d = X.shape
        self.gamma = 2.0 * (n + d + 32) * EPS  # dot products and sums of at most n + d terms
        absX, absV, RX = np.abs(X), np.abs(V), inverse.row_space_solve(X)
        absRX = np.abs(RX)
        self.G, self.Gabs = X @ X.T, absX @ absX.T
        C, Cabs = V @ X.T, absV @ absX.T
        self.u0, self.v0 = X @ w, V @ w
        self.abs_u0, self.abs_v0 = absX @ np.abs(w), absV @ np.abs(w)
        a = self.a
        self.M, self.EM = (X - self.G @ RX) / a, (absX + self.Gabs @ absRX) / a
        self.Mv, self.EMv = (V - C @ RX) / a, (absV + Cabs @ absRX) / a
        xr = np.einsum("ij,ij->j", X, RX)
        self.wh = (w - RX.T @ self.u0) / a
        self.hh = (1.0 - 2.0 * xr + np.einsum("ij,ij->j", RX, self.G @ RX)) / a ** 2
        self.mag_wh = (np.abs(w) + absRX.T @ self.abs_u0) / a
        self.xr_abs = np.einsum("ij,ij->j", absX, absRX)
        self.mag_hh = (1.0 + 2.0 * self.xr_abs + np.einsum("ij,ij->j", absRX, self.Gabs @ absRX)) / a ** 2
        self.ww = w @ w
        self.test_sq = certifier.test_sq

    def newton(self, part):
        pos = self.certifier.position[part]
        w_j = self.fit.coef[pos]
        c = w_j / self.certifier.diagonal[pos]
        # |w_j − c·h_jj| left at the removed coordinate (then set to 0): c·[H⁻¹]_jj rounds, and
        # h_jj = (1 − x_j·r_j)/a differs from the computed [H⁻¹]_jj by x_j·r_j's rounding
        residue = 4 * EPS * np.abs(w_j) + np.abs(c) * self.gamma * self.xr_abs[pos] / self.a
        return self._outcomes(part, pos, c, self.M[:, pos], self.EM[:, pos], self.Mv[:, pos], self.EMv[:, pos],
                              self.wh[pos], self.hh[pos], self.mag_wh[pos], self.mag_hh[pos], residue)

    def paper(self, part):
        pos = self.certifier.position[part]
        w = self.fit.coef[pos]
        ones = np.ones_like(w)
        # h_j = e_j exactly: the j-th entry is exactly 0, no residue
        return self._outcomes(part, pos, w, self.X[:, pos], 0.0, self.V[:, pos], 0.0, w, ones, np.abs(w), ones,
                              residue=np.zeros_like(w))

    def _outcomes(self, part, pos, c, M, EM, Mv, EMv, wh, hh, mag_wh, mag_hh, residue):
        fit, loss, gamma = self.fit, self.fit.loss, self.gamma
        y, lam, n = fit.fold.y_train[:, None], fit.fold.penalty.lam, self.X.shape[0]
        x_j, v_j = self.X[:, pos], self.V[:, pos]
        U = self.u0[:, None] - M * c
        U_err = gamma * (self.abs_u0[:, None] + np.abs(c) * EM) + np.abs(x_j) * residue
        values = self.v0[:, None] - Mv * c
        values_err = gamma * (self.abs_v0[:, None] + np.abs(c) * EMv) + np.abs(v_j) * residue
        norm_sq = self.ww - 2 * c * wh + c * c * hh
        norm_sq_err = gamma * (self.ww + 2 * np.abs(c) * mag_wh + c * c * mag_hh)
        loss_terms = loss.value(y, U)
        A = -loss.derivative(y, U)
        conj_terms = loss.conjugate(y, -A)
        xa = np.einsum("ij,ij->j", x_j, A)
        correlation_sq = np.einsum("ij,ij->j", A, self.G @ A) - xa * xa
        absA = np.abs(A)
        correlation_err = gamma * (np.einsum("ij,ij->j", absA, self.Gabs @ absA) + np.einsum("ij,ij->j", np.abs(x_j), absA) ** 2)
        pen, pen_conj = 0.5 * lam * np.maximum(norm_sq, 0.0), np.maximum(correlation_sq, 0.0) / (2 * lam * n * n)
        primal = loss_terms.sum(axis=0) / n + pen
        dual = -conj_terms.sum(axis=0) / n - pen_conj
        magnitude = (loss_terms.sum(axis=0) + np.abs(conj_terms).sum(axis=0)) / n + pen + pen_conj
        smooth = loss.smoothness if np.isfinite(loss.smoothness) else 0.0
        # margins off by U_err change Σℓ by at most |ℓ'|·err + (μ/2)·err² per row
        extra = (np.einsum("ij,ij->j", absA, U_err) + 0.5 * smooth * (U_err ** 2).sum(axis=0)) / n \
            + 0.5 * lam * norm_sq_err + correlation_err / (2 * lam * n * n)
        allowance = gap_allowance(magnitude, n, self.X.shape[1]) + extra
        gap = np.maximum(primal - dual, 0.0) + allowance
        radius = np.sqrt(2.0 * gap / lam) * (1 + 8 * EPS)
        d = self.X.shape[1] + 17
        test_sq = np.maximum(self.test_sq[:, None] - v_j * v_j, 0.0) + 8 * d * EPS * self.test_sq[:, None]
        spread = radius * np.sqrt(test_sq)
        err = values_err + 4 * EPS * (np.abs(values) + spread)
        lower, upper = values - spread - err, values + spread + err
        raw = gap - allowance
        bands = self.certifier._zero_bands(A, U)
        out = []
        for c_, p in enumerate(part):
            outcome = HeldOutOutcome(lower[:, c_], upper[:, c_], values[:, c_], None, 0.0, solved=False)
            outcome.zero_band = bands[:, c_]
            outcome.rounded = bool(raw[c_] <= TOL_ROUNDING * abs(primal[c_]) or raw[c_] <= allowance[c_])
            if not np.all(outcome.decided):
                outcome.coef = self.certifier.centre(p)[0]
            out.append(outcome)
        return out


def _intercept_only_inverse(fit):
    """The inverse Hessian with no features yet: of Σℓ''_i (the intercept's), or 0 × 0 without
    one; None if there is no curvature."""
    hessian = np.zeros((0, 0))
    if fit.fit_intercept:
        hessian = np.array([[fit.loss.second_derivative(fit.fold.y_train, fit.margins).sum()]])
    try:
        return DenseInverseHessian(hessian)
    except np.linalg.LinAlgError:
        return None
