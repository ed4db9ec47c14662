"""Multinomial (softmax) logistic regression: loss, primal, Fenchel dual, sound duality gap,
certified regions for the optimum of a modified problem, and a warm-startable solver.

K classes, labels ``y`` as integer codes 0..K−1, data X (n, d) dense or CSR. Coefficients are
stored as scikit-learn stores them: ``coef`` W of shape (K, d) (row k = w_k), ``intercept`` b of
shape (K,). Scores of a row: t = W x + b ∈ ℝ^K.

Problem (scikit-learn's multinomial ``LogisticRegression(C)``, mean form, λ = 1/(nC))::

    P(W, b) = (1/n) Σ_i ℓ_{y_i}(W x_i + b) + (λ/2) ‖W‖_F²,      ℓ_y(t) = logsumexp(t) − t_y
    D(α)    = −(1/n) Σ_i ℓ*_{y_i}(−α_i) − (1/(2λ)) ‖(1/n) Σ_i α_i x_iᵀ‖_F²,
              α_i ∈ ℝ^K,  Σ_i α_i = 0 ∈ ℝ^K when b is fitted (unpenalized).

ℓ*_y(s) = Σ_k q_k log q_k with q = s + e_y, on {s : q ∈ simplex} (+∞ outside), so
ℓ*_{y_i}(−α_i) is the negative entropy of q_i = e_{y_i} − α_i: a dual point is a matrix Q of
row-stochastic "probabilities" q_i, and the KKT pair is q*_i = softmax(W* x_i + b*) with
W* = (1/(nλ)) Σ_i α*_i x_iᵀ.

Weak duality, directly: ℓ(t_i) + ℓ*(−α_i) ≥ −α_i·t_i (Fenchel–Young) and
(λ/2)‖W‖² + (1/(2λ))‖V‖² ≥ ⟨W, V⟩ with V = (1/n) Σ α_i x_iᵀ; adding them,
P − D ≥ (1/n) Σ_i α_i·(W x_i − t_i) = −(1/n) b·Σ_i α_i = 0 (b = 0, or Σα = 0).

Everything certified here follows the project's rule: an interval may be too wide, never too
narrow; gaps are ``max(G, 0) + allowance`` (:func:`glru.duality.sound_gap`) and every bound is
widened by the rounding error of the arithmetic that produced it. As in the rest of the package,
a dual point whose constraints (rows of Q summing to 1, Σα = 0) hold up to rounding is treated
as feasible, the residual being absorbed in the allowance (it enters the gap only through
(1/n) b·Σα_i, which the |α|·|t| term of the magnitude bounds).
"""

import numpy as np
import scipy.sparse as sp
from scipy.optimize import minimize
from scipy.special import xlogy

from .bounds import dual_radius, primal_radius
from .duality import EPS, gap_allowance, sound_gap
from .problem import as_dense, row_norms_sq
from .solver import newton_polish

__all__ = [
    "Multinomial",
    "MultinomialCertificate",
    "MultinomialGap",
    "MultinomialProblem",
    "MultinomialResult",
    "certified_argmax",
    "enforce_zero_class_sums",
    "log_ratio_lower_bounds",
    "optimal_intercept",
    "polish_multinomial",
    "solve_multinomial",
]

_WIDEN = 1.0 + 8 * EPS
_SQRT2 = np.sqrt(2.0) * (1.0 + 2 * EPS)  # rounded up: multiplies a radius


def _one_hot(y, K):
    E = np.zeros((y.shape[0], K))
    E[np.arange(y.shape[0]), y] = 1.0
    return E


def _check_labels(y, K):
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D integer class codes, got shape {y.shape}.")
    if y.size and not np.issubdtype(y.dtype, np.integer) and not np.all(np.equal(np.mod(y, 1), 0)):
        raise ValueError("y must hold integer class codes 0..K-1.")
    y = y.astype(np.intp)
    K = int(K)
    if K < 2:
        raise ValueError(f"K must be >= 2, got {K}.")
    if y.size and (y.min() < 0 or y.max() >= K):
        raise ValueError(f"y must hold class codes in 0..{K - 1}; got range [{y.min()}, {y.max()}].")
    return y, K


# --------------------------------------------------------------------------- the loss
class Multinomial:
    """ℓ_y(t) = logsumexp(t) − t_y on score vectors t ∈ ℝ^K (the softmax cross-entropy).

    Vectorised over rows: ``y`` (n,) integer codes, ``T`` (n, K) scores.

    - ``value(y, T)``          ℓ_{y_i}(t_i), computed as m + log1p(Σ_{k≠k_max} e^{u_k − m}),
                               u = t − t_y, m = max u ≥ 0: no overflow, accurate near 0
    - ``probabilities(T)``     softmax(t_i)
    - ``gradient(y, T)``       ∇ℓ = softmax(t) − e_y
    - ``hessp(y, T, V)``       ∇²ℓ v = diag(p) v − p (pᵀv),  p = softmax(t)
    - ``conjugate(y, S)``      ℓ*_y(s) = Σ_k q_k log q_k, q = s + e_y ∈ simplex, +∞ outside
    - ``smoothness``           μ = ½: ∇²ℓ = diag(p) − ppᵀ ⪯ ½ I

    Conjugate: sup_t [s·t − lse(t) + t_y] = sup_t [q·t − lse(t)] with q = s + e_y; the
    conjugate of lse is the negative entropy on the simplex (+∞ off it: if Σq ≠ 1, t = c·1
    gives c(Σq − 1) unbounded; if some q_k < 0, t = −c e_k does).

    Smoothness: vᵀ(diag(p) − ppᵀ)v = Var_{k∼p}(v_k) ≤ (max v − min v)²/4 (Popoviciu)
    ≤ 2‖v‖²/4 = ‖v‖²/2, attained at p = (½, ½, 0, …), v = (1, −1, 0, …)/√2. Equivalently ℓ* is
    2-strongly convex on its domain: for Σδ = 0, Σ δ_k²/q_k ≥ (Σ|δ_k|)² ≥ 2‖δ‖²
    (Cauchy–Schwarz with Σq = 1, then ‖δ‖² ≤ (Σδ⁺)² + (Σδ⁻)² = ‖δ‖₁²/2).
    """

    smoothness = 0.5

    @staticmethod
    def probabilities(T):
        T = np.asarray(T, dtype=float)
        Z = np.exp(T - T.max(axis=-1, keepdims=True))
        return Z / Z.sum(axis=-1, keepdims=True)

    def value(self, y, T):
        T = np.asarray(T, dtype=float)
        rows = np.arange(T.shape[0])
        U = T - T[rows, y][:, None]
        top = U.argmax(axis=1)
        m = U[rows, top]
        Z = np.exp(U - m[:, None])
        Z[rows, top] = 0.0
        return m + np.log1p(Z.sum(axis=1))

    def gradient(self, y, T):
        G = self.probabilities(T)
        G[np.arange(G.shape[0]), y] -= 1.0
        return G

    def hessp(self, y, T, V):
        P = self.probabilities(T)
        PV = P * V
        return PV - P * PV.sum(axis=1, keepdims=True)

    def conjugate(self, y, S):
        """ℓ*_y(s) row by row; a row is in the domain when q = s + e_y is in the simplex up to
        rounding (entries ≥ −tol, |Σq − 1| ≤ K·tol, tol = 4u(1 + max|s|)); tiny negative
        entries are read as 0."""
        S = np.asarray(S, dtype=float)
        Q = S.copy()
        Q[np.arange(S.shape[0]), y] += 1.0
        tol = 4 * EPS * (1.0 + np.abs(S).max(axis=1))
        inside = (Q.min(axis=1) >= -tol) & (np.abs(Q.sum(axis=1) - 1.0) <= S.shape[1] * tol)
        Qp = np.maximum(Q, 0.0)
        return np.where(inside, xlogy(Qp, Qp).sum(axis=1), np.inf)


def _negentropy(A, y):
    """ℓ*_{y_i}(−α_i) = Σ_k q_k log q_k, q_i = e_{y_i} − α_i, evaluated from α with the y entry as
    (1 − α_y) log1p(−α_y): accurate when q_y is near 1 (α small)."""
    rows = np.arange(A.shape[0])
    Qoff = np.maximum(-A, 0.0)
    Qoff[rows, y] = 0.0
    a_y = np.clip(A[rows, y], 0.0, 1.0)
    return xlogy(Qoff, Qoff).sum(axis=1) + (1.0 - a_y) * np.log1p(-np.minimum(a_y, 1.0 - EPS / 2)) * (a_y < 1.0)


def _alpha_from_probabilities(Q, y):
    """α_i = e_{y_i} − q_i with α_iy = Σ_{k≠y} q_ik (no cancellation when q_iy ≈ 1)."""
    A = -Q
    rows = np.arange(Q.shape[0])
    A[rows, y] = 0.0
    A[rows, y] = -A.sum(axis=1)
    return A


def _probabilities_from_alpha(A, y):
    Q = -A
    rows = np.arange(A.shape[0])
    Q[rows, y] = 1.0 - A[rows, y]
    return np.maximum(Q, 0.0)


def enforce_zero_class_sums(alpha, y):
    """Make Σ_i α_i = 0 ∈ ℝ^K (the dual constraint of an unpenalized intercept) keeping every
    q_i = e_{y_i} − α_i in the simplex; equivalently make the class totals Σ_i q_i equal the
    class counts c.

    Let s = Σ_i α_i = c − m (m = Σ_i q_i, the predicted class totals); Σ_k s_k = 0 because every
    row sums to 1. Mass moves, inside rows, from the over-predicted classes l (s_l < 0) to the
    under-predicted ones k (s_k > 0), φ_kl = s_k (−s_l)/S in total from l to k, S = Σ_k s_k⁺:

    1. proportionally: row i moves F_ikl = t φ_kl q_ik q_il / Z_kl, Z_kl = Σ_i q_ik q_il, so
       every entry changes in proportion to itself (the Kullback–Leibler cost, hence the gap, is
       second order in s; mass added to entries that are ~0 would cost |s|·log(1/q) instead);
       t ∈ [0, 1] is the largest step keeping every q_il ≥ 0 (t = 1 near an optimum);
    2. the rest (1 − t)·s, if any: each surplus column l of q is scaled by 1 − f_l,
       f_l = −s_l/m_l ∈ (0, 1] (the multi-class analogue of
       :func:`glru.duality.enforce_zero_sum`'s shrinking), and the mass r_i = Σ_l f_l q_il taken
       from row i goes to the deficit classes in proportion s_k/S. Always feasible.

    In both, rows keep summing to 1, entries stay ≥ 0, and column l of α gains −s_l, column k
    loses s_k (Σ_i F_ikl = t φ_kl; Σ_i r_i = Σ_l −s_l = S): every column sum becomes 0. At the
    intercept optimum (s = 0) nothing moves. Cost O(nK²).

    Rows of α must sum to 0 to rounding relative to |α_i| (build α_iy as Σ_{k≠y} q_ik, not as
    1 − q_iy). The update is computed on α, whose entries are small near an optimum, not on q: the
    residual Σ_i α_i is then a rounding error relative to Σ_i |α_i| rather than to the class
    counts. This matters because the gap contains (1/n)·b·Σ_i α_i and |b| can be large (near
    separation), and the rounding allowance is sized by |α|·|t|.
    """
    alpha = np.array(alpha, dtype=float)
    y = np.asarray(y)
    s = alpha.sum(axis=0)
    under, over = s > 0, s < 0
    if not over.any() or not under.any():
        return alpha
    Q = _probabilities_from_alpha(alpha, y)
    # 1. proportional flows
    QV, QU = Q[:, under], Q[:, over]
    phi = np.outer(s[under], -s[over]) / s[under].sum()
    Z = QV.T @ QU
    if np.all(Z[phi > 0] > 0):
        with np.errstate(divide="ignore", invalid="ignore"):
            G = np.where(phi > 0, phi / Z, 0.0)
        load = QV @ G                          # out_il / q_il
        peak = load.max(initial=0.0)
        t = 1.0 if peak <= 1.0 else (1.0 - 4 * EPS) / peak
        alpha[:, over] += t * QU * load
        alpha[:, under] -= t * QV * (QU @ G.T)
        s = alpha.sum(axis=0)
        Q = _probabilities_from_alpha(alpha, y)
    # 2. the rest (rounding level after a full proportional step)
    over, under = s < 0, s > 0
    if not over.any() or not under.any():
        return alpha
    m = Q.sum(axis=0)
    factor = np.zeros_like(s)
    factor[over] = np.minimum(-s[over] / m[over], 1.0)
    take = Q * factor                      # q_il f_l: moved out of the over-predicted classes
    alpha += take
    deficit = np.maximum(s, 0.0)
    alpha -= np.outer(take.sum(axis=1), deficit / deficit.sum())
    return alpha


# --------------------------------------------------------------------------- the problem
class MultinomialGap:
    """A sound duality gap at a primal point (W, b) and the dual point built from it."""

    __slots__ = ("gap", "primal", "dual", "alpha", "magnitude", "allowance")

    def __init__(self, gap, primal, dual, alpha, magnitude, allowance):
        self.gap, self.primal, self.dual = gap, primal, dual
        self.alpha, self.magnitude, self.allowance = alpha, magnitude, allowance

    @property
    def relative_gap(self):
        return self.gap / max(abs(self.primal), np.finfo(float).tiny)

    def converged(self, tol):
        """(P − D)/P ≤ tol, or P − D already below what rounding resolves."""
        raw = self.gap - self.allowance
        return bool(np.isfinite(self.gap) and (raw <= tol * abs(self.primal) or raw <= self.allowance))


class MultinomialProblem:
    """P(W, b) and D(α) above for data (X, y) with K classes and λ = ``lam`` > 0.

    The smooth objective is exposed as ``fun/grad/hessp`` of a flat vector
    z = (W.ravel(), u) with b = B u, B an orthonormal basis of {b : Σ_k b_k = 0}: the objective
    is invariant to b + c·1, and this parametrisation removes that null direction (the intercept
    stays symmetric, as scikit-learn's is).
    """

    loss = Multinomial()

    def __init__(self, X, y, K, lam, fit_intercept=True):
        if not sp.issparse(X):
            X = np.asarray(X, dtype=np.float64)
        elif X.format != "csr":
            X = X.tocsr()
        self.X = X
        self.y, self.K = _check_labels(y, K)
        self.n, self.d = X.shape
        if self.y.shape[0] != self.n:
            raise ValueError(f"X has {self.n} rows but y has {self.y.shape[0]} labels.")
        lam = float(lam)
        if not (np.isfinite(lam) and lam > 0):
            raise ValueError(f"lam must be a finite number > 0, got {lam!r}.")
        self.lam = lam
        self.fit_intercept = bool(fit_intercept)
        self.counts = np.bincount(self.y, minlength=self.K).astype(float)
        if self.fit_intercept and np.any(self.counts == 0):
            raise ValueError("With an unpenalized intercept every class 0..K-1 needs a training row "
                             f"(class counts {self.counts.astype(int).tolist()}): otherwise no optimum exists.")
        self.onehot = _one_hot(self.y, self.K)
        self.basis = np.linalg.qr(np.eye(self.K)[:, :-1] - 1.0 / self.K)[0]  # (K, K−1), orthonormal
        self._cache = (None, None)

    # ---- summaries
    @property
    def abs_X(self):
        return abs(self.X)

    @property
    def row_norms(self):
        if not hasattr(self, "_row_norms"):
            self._row_norms = np.sqrt(row_norms_sq(self.X))
        return self._row_norms

    def scores(self, coef, intercept=None):
        """T = X Wᵀ + b, (n, K)."""
        # (Wᵀ copied to C order: BLAS's product with the transposed view took twice as long on digits)
        T = np.asarray(self.X @ np.ascontiguousarray(np.asarray(coef, dtype=float).T))
        if self.fit_intercept and intercept is not None:
            T = T + np.asarray(intercept, dtype=float)
        return T

    # ---- objectives
    def primal(self, coef, intercept=None):
        T = self.scores(coef, intercept)
        return self.loss.value(self.y, T).mean() + 0.5 * self.lam * float(np.sum(coef * coef))

    def dual_point(self, T):
        """α from the KKT condition α_i = e_{y_i} − softmax(t_i), with Σα = 0 enforced by
        :func:`enforce_zero_class_sums` when the intercept is fitted."""
        alpha = _alpha_from_probabilities(self.loss.probabilities(T), self.y)
        if self.fit_intercept:
            alpha = enforce_zero_class_sums(alpha, self.y)
        return alpha

    def coef_from_dual(self, alpha):
        """W(α) = (1/(nλ)) Σ_i α_i x_iᵀ, the primal point of the dual's KKT condition."""
        return np.asarray(self.X.T @ alpha).T / (self.n * self.lam)

    def dual(self, alpha):
        """D(α); −∞ if some e_{y_i} − α_i leaves the simplex (or Σα ≠ 0 beyond rounding when b is fitted)."""
        alpha = np.asarray(alpha, dtype=float)
        conj = self.loss.conjugate(self.y, -alpha)
        if self.fit_intercept:
            tol = 8 * (self.n + 16) * EPS * (1.0 + np.abs(alpha).sum(axis=0))
            if np.any(np.abs(alpha.sum(axis=0)) > tol):
                return -np.inf
        V = np.asarray(self.X.T @ alpha) / self.n
        return -conj.mean() - float(np.sum(V * V)) / (2 * self.lam)

    def duality_gap(self, coef, intercept=None, alpha=None):
        """Sound gap P(W, b) − D(α) (clamped at 0, plus a rounding allowance), with α the KKT
        dual point of (W, b) unless given (a given α must be feasible: e_{y_i} − α_i in the
        simplex, Σα = 0 with an intercept; see :meth:`dual`). Cost O(nnz(X)·K)."""
        coef = np.asarray(coef, dtype=float)
        b = np.zeros(self.K) if (intercept is None or not self.fit_intercept) else np.asarray(intercept, float)
        T = self.scores(coef, b)
        loss_terms = self.loss.value(self.y, T)
        if alpha is None:
            alpha = self.dual_point(T)
        conj_terms = _negentropy(alpha, self.y)
        V = np.asarray(self.X.T @ alpha) / self.n  # (d, K)
        pen = 0.5 * self.lam * float(np.sum(coef * coef))
        pen_conj = float(np.sum(V * V)) / (2 * self.lam)
        primal = loss_terms.sum() / self.n + pen
        dual = -conj_terms.sum() / self.n - pen_conj
        abs_T = np.asarray(self.abs_X @ np.abs(coef).T) + np.abs(b)
        magnitude = (loss_terms.sum() + np.abs(conj_terms).sum() + float(np.sum(np.abs(alpha) * abs_T))) / self.n \
            + pen + pen_conj
        gap = float(sound_gap(primal, dual, magnitude, self.n, self.d + self.K))
        return MultinomialGap(gap, primal, dual, alpha, magnitude,
                              float(gap_allowance(magnitude, self.n, self.d + self.K)))

    # ---- smooth objective of z = (W.ravel(), u), b = B u
    def pack(self, coef, intercept=None):
        coef = np.asarray(coef, dtype=float).reshape(self.K, self.d)
        if not self.fit_intercept:
            return coef.ravel().copy()
        b = np.zeros(self.K) if intercept is None else np.asarray(intercept, dtype=float)
        return np.concatenate([coef.ravel(), self.basis.T @ b])

    def unpack(self, z):
        coef = z[:self.K * self.d].reshape(self.K, self.d)
        if not self.fit_intercept:
            return coef, np.zeros(self.K)
        b = self.basis @ z[self.K * self.d:]
        return coef, b - b.mean()

    def _state(self, z):
        key = z.tobytes()
        if self._cache[0] != key:
            coef, b = self.unpack(z)
            T = self.scores(coef, b)
            self._cache = (key, (coef, T, self.loss.probabilities(T)))
        return self._cache[1]

    def fun(self, z):
        coef, T, _ = self._state(z)
        return self.loss.value(self.y, T).mean() + 0.5 * self.lam * float(np.sum(coef * coef))

    def grad(self, z):
        coef, _, P = self._state(z)
        G = (P - self.onehot) / self.n
        g_W = np.asarray(self.X.T @ G).T + self.lam * coef
        if not self.fit_intercept:
            return g_W.ravel()
        return np.concatenate([g_W.ravel(), self.basis.T @ G.sum(axis=0)])

    def hessian(self, z):
        """The dense Hessian of ``fun`` at z (O(n K² d²): for small problems)."""
        _, _, P = self._state(z)
        K, d = self.K, self.d
        Xa = as_dense(self.X)
        if self.fit_intercept:
            Xa = np.hstack([Xa, np.ones((self.n, 1))])
        H = -np.einsum("ik,il,ia,ic->kalc", P, P, Xa, Xa, optimize=True)
        diag = np.einsum("ik,ia,ic->kac", P, Xa, Xa, optimize=True)
        H[np.arange(K), :, np.arange(K), :] += diag
        H = H / self.n
        H[:, :d, :, :d] += self.lam * np.eye(K * d).reshape(K, d, K, d)
        if not self.fit_intercept:
            return H.reshape(K * d, K * d)
        H_WW = H[:, :d, :, :d].reshape(K * d, K * d)
        H_Wb = H[:, :d, :, d].reshape(K * d, K)
        H_bb = H[:, d, :, d]
        B = self.basis
        top = np.hstack([H_WW, H_Wb @ B])
        bottom = np.hstack([(H_Wb @ B).T, B.T @ H_bb @ B])
        return np.vstack([top, bottom])

    def hessp(self, z, v):
        _, _, P = self._state(z)
        V_W = v[:self.K * self.d].reshape(self.K, self.d)
        dT = np.asarray(self.X @ np.ascontiguousarray(V_W.T))
        if self.fit_intercept:
            dT += self.basis @ v[self.K * self.d:]
        # M = (diag(p_i) − p_i p_iᵀ) dt_i / n row by row, with p_iᵀdt_i as one row-wise dot
        M = dT - np.einsum("ik,ik->i", P, dT)[:, None]
        M *= P
        M /= self.n
        h_W = np.asarray(self.X.T @ M).T + self.lam * V_W
        if not self.fit_intercept:
            return h_W.ravel()
        return np.concatenate([h_W.ravel(), self.basis.T @ M.sum(axis=0)])


# --------------------------------------------------------------------------- solver
class MultinomialResult:
    """coef (K, d), intercept (K,) (Σ_k b_k = 0; zeros without intercept), the gap evaluation."""

    def __init__(self, coef, intercept, evaluation, n_iter, converged, problem):
        self.coef, self.intercept, self.evaluation = coef, intercept, evaluation
        self.n_iter, self.converged, self.problem = n_iter, converged, problem


def solve_multinomial(X, y, K, lam, fit_intercept=True, W0=None, b0=None, *, tol=1e-10, max_iter=1000,
                      polish=True):
    """Minimise P(W, b) by trust-region Newton-CG (``scipy.optimize.minimize(method="trust-ncg")``
    with Hessian-vector products; trust-krylov, then line-search Newton-CG, take over if it
    stalls), warm-started at (W0, b0), until the relative duality gap is ≤ ``tol``; then
    (``polish=True``) Newton-CG steps until the gradient stops shrinking, i.e. to rounding level
    (what an exact refit computes; see :func:`glru.solver.polish`).

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n, d)
    y : array of int, shape (n,), class codes 0..K−1
    K : int
    lam : float > 0, λ = 1/(nC) for scikit-learn's ``LogisticRegression(C)``
    fit_intercept : bool, unpenalized intercept
    W0 : (K, d), b0 : (K,), optional warm start (zeros by default)
    tol : float, relative duality gap target
    max_iter : int, total iterations of the SciPy methods

    Returns
    -------
    MultinomialResult
    """
    problem = MultinomialProblem(X, y, K, lam, fit_intercept)
    W0 = np.zeros((problem.K, problem.d)) if W0 is None else np.asarray(W0, dtype=float)
    z0 = problem.pack(W0 - W0.mean(axis=0), b0)
    best = {}

    def check(z):
        coef, b = problem.unpack(z)
        ev = problem.duality_gap(coef, b)
        if "ev" not in best or ev.gap <= best["ev"].gap:
            best.update(z=z.copy(), ev=ev)
        return ev.converged(tol)

    n_iter = 0
    if not check(z0):
        count = [0]

        def callback(intermediate_result):
            count[0] += 1
            if check(intermediate_result.x):
                raise StopIteration

        # trust-ncg is the fastest where it works; on badly scaled data with a tiny lam its trust
        # region can collapse (measured: ‖x‖ ~ 1e2, lam ~ 5e-6, no progress in 1000 iterations),
        # where trust-krylov and line-search Newton-CG still converge, and elsewhere it needs
        # several hundred iterations but gets there. So each method runs in rounds from the best
        # point so far, and the next one takes over after a round that did not divide the gap by 10.
        # Last, for small problems, trust-exact on the dense Hessian (robust: measured 27
        # iterations where trust-ncg needs 600 and the others stall).
        done = False
        methods = _SOLVER_METHODS + (("trust-exact",) if z0.size <= _DENSE_HESSIAN_SIZE else ())
        for method in methods:
            while not done and count[0] < max_iter:
                before = best["ev"].gap
                options = dict(gtol=0.0) if method.startswith("trust") else dict(xtol=1e-300)
                options["maxiter"] = max(min(_SOLVER_ROUND, max_iter - count[0]), 1)
                second = dict(hess=problem.hessian) if method == "trust-exact" else dict(hessp=problem.hessp)
                with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # trlib's own overflows
                    res = minimize(problem.fun, best["z"], jac=problem.grad, method=method,
                                   callback=callback, options=options, **second)
                done = res.status == 99 or check(res.x)
                if not best["ev"].gap < 0.1 * before:
                    break
            if done:
                break
        n_iter = count[0]
    z = best["z"]
    if polish:
        coef, b = polish_multinomial(problem, *problem.unpack(z))
        check(problem.pack(coef, b))
        z = best["z"]
    coef, b = problem.unpack(z)
    ev = best["ev"]
    return MultinomialResult(coef, b, ev, n_iter, ev.converged(tol), problem)


_SOLVER_METHODS = ("trust-ncg", "trust-krylov", "newton-cg")
_SOLVER_ROUND = 200
_DENSE_HESSIAN_SIZE = 400


def polish_multinomial(problem, coef, intercept=None, max_steps=20):
    """Newton steps (H s = −g by conjugate gradients on ``hessp``) from (W, b) until ‖g‖ stops
    shrinking. Returns (coef, intercept)."""
    z = newton_polish(problem.pack(coef, intercept), problem.grad, problem.hessp, max_steps, cg_rtol=1e-10)
    return problem.unpack(z)


def optimal_intercept(problem, coef, intercept=None, max_steps=50):
    """argmin_b P(W, b) for fixed W (symmetric, Σ_k b_k = 0) by damped Newton in the K−1
    dimensional sum-zero subspace; an approximation: any b is sound for the certificates, a
    better one gives a smaller gap. Returns b (zeros without an intercept)."""
    if not problem.fit_intercept:
        return np.zeros(problem.K)
    T0 = np.asarray(problem.X @ np.asarray(coef, dtype=float).T)
    B = problem.basis
    b = np.zeros(problem.K) if intercept is None else np.asarray(intercept, dtype=float) - np.mean(intercept)

    def f(b):
        return problem.loss.value(problem.y, T0 + b).mean()

    value = f(b)
    for _ in range(max_steps):
        P = problem.loss.probabilities(T0 + b)
        g = B.T @ (P.sum(axis=0) - problem.counts) / problem.n
        H = B.T @ ((np.diag(P.sum(axis=0)) - P.T @ P) / problem.n) @ B
        try:
            step = -B @ np.linalg.solve(H, g)
        except np.linalg.LinAlgError:
            break
        if not np.all(np.isfinite(step)):
            break
        t = 1.0
        while t > 1e-10:
            new_value = f(b + t * step)
            if new_value < value:
                break
            t *= 0.5
        else:
            break
        b, value = b + t * step, new_value
    return b - b.mean()


# --------------------------------------------------------------------------- certificates
ARC_PIECES = 32


def _log_down(v):
    """A lower bound of log(v) for v ≥ 0 computed with rounding (−∞ at v ≤ 0)."""
    with np.errstate(divide="ignore"):
        out = np.log(np.maximum(v, 0.0) * (1.0 - 4 * EPS))
    return out - 4 * EPS * np.abs(np.where(np.isfinite(out), out, 0.0))


def _log_up(v):
    """An upper bound of log(v) for v > 0 computed with rounding."""
    with np.errstate(divide="ignore"):
        out = np.log(v * (1.0 + 4 * EPS))
    return out + 4 * EPS * np.abs(np.where(np.isfinite(out), out, 0.0))


def log_ratio_lower_bounds(Q, radius, pieces=None):
    """L[i, k, l] ≤ log(q*_ik / q*_il) for every q*_i in the simplex with ‖q*_i − q_i‖₂ ≤ radius
    (and Σ_k (q*_ik − q_ik) = 0). The upper bound of log(q*_ik/q*_il) is −L[i, l, k].

    Proof. Write q*_ik = q_ik − a, q*_il = q_il + c. φ(a, c) = log(q_ik − a) − log(q_il + c)
    is decreasing in a and in c, so only a⁺ = max(a, 0), c⁺ = max(c, 0) matter, and
    (a⁺)² + (c⁺)² ≤ ‖q*_i − q_i‖² ≤ r². Each of a⁺, c⁺ is also at most r·√((K−1)/K), the
    largest coordinate of a zero-sum vector of norm r. Cover the quarter disc by the sectors
    θ ∈ [θ_j, θ_{j+1}], θ_j = jπ/(2J): there a⁺ ≤ r cos θ_j and c⁺ ≤ r sin θ_{j+1}, so
    φ ≥ min_j φ(min(r cos θ_j, r_c), min(r sin θ_{j+1}, r_c)) (which tends to the exact minimum
    over the disc as J grows). Finally q*_il ≤ 1, so log q*_il ≤ log min(q_il + c, 1).
    −∞ when q_ik ≤ a is possible (no information). Rounding: cos/sin and radii rounded up, logs
    bounded by :func:`_log_down` / :func:`_log_up`. Cost O(n K² J), J = ``pieces`` (default
    ``ARC_PIECES``); J = 1 covers the quarter disc by the square a⁺, c⁺ ≤ r, at most √2 times
    the disc's widening (−r(1/q_k + 1/q_l) against −r·√(1/q_k² + 1/q_l²) for small r).
    """
    Q = np.asarray(Q, dtype=float)
    n, K = Q.shape
    a, c = _arc_shifts(float(radius), K, ARC_PIECES if pieces is None else pieces)   # (J,)
    L = np.empty((n, K, K))
    step = max(1, int(2e6 // (K * K * a.shape[-1])))
    for start in range(0, n, step):
        q = Q[start:start + step, :, None]
        num, den = _shifted_log_bounds(q, q, a, c)                             # (rows, K, J)
        L[start:start + step] = _sector_min(num[:, :, None, :], den[:, None, :, :])   # (rows, K, K)
    L[:, np.arange(K), np.arange(K)] = 0.0
    return L


def _arc_shifts(radius, K, pieces=None):
    """The bounds a_j ≥ a⁺, c_j ≥ c⁺ of the J = ``pieces`` sectors (default ``ARC_PIECES``) of
    :func:`log_ratio_lower_bounds` for the radius r (a number, or an array: then of shape
    r.shape + (J,)), rounded up."""
    r = np.asarray(radius, dtype=float) * _WIDEN
    r_coord = r * np.sqrt((K - 1) / K) * _WIDEN + 8 * K * EPS
    theta = np.linspace(0.0, np.pi / 2, (ARC_PIECES if pieces is None else pieces) + 1)
    r, r_coord = r[..., None], r_coord[..., None]
    # + 2u absolute: q is read from α (q_iy = 1 − α_iy) with an absolute rounding error ≤ u
    a = np.minimum(r * np.cos(theta[:-1]) * _WIDEN + 4 * EPS * r, r_coord) + 2 * EPS
    c = np.minimum(r * np.sin(theta[1:]) * _WIDEN + 4 * EPS * r, r_coord) + 2 * EPS
    return a, c


def _shifted_log_bounds(q_num, q_den, a, c):
    """Lower bounds of log(q_num − a) and upper bounds of log(min(q_den + c, 1)), elementwise."""
    # log(q_ik − a_j): the subtraction's rounding (relative u) made conservative, then a lower log bound
    num = _log_down((q_num - a) * (1.0 - 2 * EPS) - 2 * EPS * a)
    den = _log_up(np.minimum((q_den + c) * (1.0 + 2 * EPS), 1.0))
    return num, den


def _sector_min(num, den):
    """min over the sectors (last axis) of num − den, widened by the subtraction's rounding."""
    with np.errstate(invalid="ignore"):
        diff = num - den
    diff = diff - 2 * EPS * np.abs(np.where(np.isfinite(diff), diff, 0.0))
    return diff.min(axis=-1)


class MultinomialCertificate:
    """Where the optimum (W*, b*) of ``problem`` can be, from any centre (Ŵ, b̂).

    The centre's W is first centred over classes (Ŵ − 1·mean_k ŵ_kᵀ): W* satisfies
    Σ_k w*_k = 0 (W* = (1/(nλ))Σ α*_i x_iᵀ and Σ_k α*_ik = 0), so this projection onto a subspace
    containing W* cannot move Ŵ away from it, and it changes every row's scores by a common
    constant, leaving the loss unchanged while ‖W‖ does not grow. With ``refit_intercept`` the
    centre's b is replaced by argmin_b P(Ŵ, b) (:func:`optimal_intercept`; any b is sound).

    Regions (G the sound gap of (Ŵ, b̂, α̂), α̂ the KKT dual point of (Ŵ, b̂), made feasible):

    - primal (``primal_radius``): ‖W* − Ŵ‖_F ≤ r_P = √(2G/λ). P(W, b) − (λ/2)‖W‖_F² is jointly
      convex in (W, b), so P(Z) ≥ P(Z*) + (λ/2)‖W − W*‖_F² at the minimiser Z* = (W*, b*)
      (∇P(Z*) = 0), and P(Ŵ, b̂) − P(Z*) ≤ P(Ŵ, b̂) − D(α̂) = G. Holds with an unpenalized b.
    - dual (``dual_radius``): ‖α* − α̂‖_F ≤ r_D = √(2nμG) = √(nG), μ = ½. ℓ* is (1/μ)-strongly
      convex on its domain (:class:`Multinomial`), so D is 1/(nμ)-strongly concave on the convex
      feasible set (Σα = 0 included) that contains α̂ and its maximiser α*:
      D(α*) − D(α̂) ≥ ‖α* − α̂‖²/(2nμ), and D(α*) = P(Z*) ≤ P(Ŵ, b̂) gives D(α*) − D(α̂) ≤ G.
      Row by row: ‖q*_i − q̂_i‖₂ ≤ r_D with q*_i = softmax(W* x_i + b*) = e_{y_i} − α*_i.
    - pairwise score differences at a new row x (:meth:`pairwise_bounds`):
      δ*_kl(x) = (w*_k − w*_l)·x + b*_k − b*_l.
      (a) no intercept: (ŵ_k − ŵ_l)·x ± √2·r_P·‖x‖₂, since (w_k − w_l)·x = ⟨W, (e_k − e_l)xᵀ⟩_F
          and ‖(e_k − e_l)xᵀ‖_F = √2‖x‖ (exact over the ball);
      (b) with or without intercept, for ANY training row i: the KKT identity
          softmax(W* x_i + b*) = q*_i gives (w*_k − w*_l)·x_i + b*_k − b*_l = log(q*_ik/q*_il), so
          δ*_kl(x) = (w*_k − w*_l)·(x − x_i) + log(q*_ik/q*_il)
                   ∈ (ŵ_k − ŵ_l)·(x − x_i) ± √2·r_P‖x − x_i‖ + [L_ikl, −L_ilk]
          with L from :func:`log_ratio_lower_bounds` (q*_i within r_D of q̂_i). Every row gives a
          sound interval; the intersection over the candidate rows is returned (intersected with
          (a) when there is no intercept).
      Upper bounds are −(lower bound of δ*_lk); every term is widened by its rounding error.

    ``arc_pieces``: the sectors of :func:`log_ratio_lower_bounds` (default ``ARC_PIECES``).
    """

    def __init__(self, problem, coef, intercept=None, refit_intercept=False, evaluation=None, arc_pieces=None):
        self.problem, self.arc_pieces = problem, arc_pieces
        coef = np.asarray(coef, dtype=float).reshape(problem.K, problem.d)
        self.coef = coef - coef.mean(axis=0)
        if not problem.fit_intercept:
            b = np.zeros(problem.K)
        elif refit_intercept:
            b = optimal_intercept(problem, self.coef, intercept)
        else:
            b = np.zeros(problem.K) if intercept is None else np.asarray(intercept, dtype=float)
        self.intercept = b
        if evaluation is None:
            evaluation = problem.duality_gap(self.coef, b)
        self.evaluation = evaluation
        self.gap = evaluation.gap
        self.primal_radius = float(primal_radius(self.gap, problem.lam))
        self.dual_radius = float(dual_radius(self.gap, problem.n, Multinomial.smoothness))
        self.alpha = evaluation.alpha
        self.dual_probabilities = _probabilities_from_alpha(self.alpha, problem.y)
        self._log_lower = None

    @property
    def log_ratio_lower(self):
        """(n, K, K) lower bounds of log(q*_ik/q*_il) (computed once, O(nK²J))."""
        if self._log_lower is None:
            self._log_lower = log_ratio_lower_bounds(self.dual_probabilities, self.dual_radius, self.arc_pieces)
        return self._log_lower

    def pairwise_bounds(self, X_eval, candidates=None, chunk_size=None, pairs="all"):
        """Bounds lower[m, k, l] ≤ δ*_kl(x_m) ≤ upper[m, k, l], δ* = s*_k − s*_l the difference of
        the optimum's scores s* = W* x + b* (see the class docstring for the proof).

        Parameters
        ----------
        X_eval : (m, d) ndarray or sparse matrix
        candidates : None, int or array of int
            Training rows used in route (b): all rows (None); for each x and each l, the
            ``candidates`` rows with the narrowest interval for the pair (k̂, l), k̂ the centre's
            predicted class (width 2√2·r_P‖x − x_i‖ + that of [L_ik̂l, −L_ilk̂]), so up to
            ``candidates``·K rows (int); or the given row indices (array). Any subset is sound;
            more rows give tighter bounds.
        pairs : {"all", "top"}
            With int ``candidates``: route (b) for every pair through the union of the rows picked
            (K² intervals a row), or ("top") for the pairs (k̂, l) and (l, k̂) through the rows
            picked for each, 2K intervals a row, the others by δ_kl ≥ δ_kk̂ + δ_k̂l
            (:func:`chain_through`): what decides the arg-max at a solved point, where the pairs
            without k̂ matter little (a fold of digits with a StandardScaler: 42 → 21 ms, and its
            per-class bounds through k̂, :func:`per_class_through`, are narrower).
        """
        problem = self.problem
        X_eval = X_eval if sp.issparse(X_eval) else np.atleast_2d(np.asarray(X_eval, dtype=float))
        m, K, n, d = X_eval.shape[0], problem.K, problem.n, problem.d
        W = self.coef
        rP = self.primal_radius
        gamma_d = 2.0 * (d + 16) * EPS
        absW = np.abs(W)
        S_eval = np.asarray(X_eval @ W.T)                            # (m, K)
        E_eval = gamma_d * np.asarray(abs(X_eval) @ absW.T)          # rounding bound of S_eval
        lower = np.full((m, K, K), -np.inf)
        if not problem.fit_intercept:  # route (a)
            norms = np.sqrt(row_norms_sq(X_eval)) * (1.0 + 2 * (d + 8) * EPS)
            C = S_eval[:, :, None] - S_eval[:, None, :]
            err = E_eval[:, :, None] + E_eval[:, None, :] + 2 * EPS * np.abs(C)
            spread = _SQRT2 * rP * _WIDEN * norms[:, None, None]
            lower = C - spread - err - 4 * EPS * (np.abs(C) + spread)
        # route (b)
        if isinstance(candidates, (int, np.integer)) and candidates * K >= n:
            candidates = None
        S_train = np.asarray(problem.X @ W.T)                        # (n, K)
        E_train = gamma_d * np.asarray(problem.abs_X @ absW.T)
        scores = (S_eval, E_eval, S_train, E_train)
        if candidates is None or not isinstance(candidates, (int, np.integer)):
            rows = None if candidates is None else np.asarray(candidates, dtype=np.intp)
            self._route(X_eval, np.arange(m), lower, scores, rows, None, chunk_size)
        else:
            top = (S_eval + self.intercept).argmax(axis=1)            # the centre's predicted class
            for k, pool, width in self._candidate_pools(X_eval, top, candidates):
                if pairs == "all":
                    self._route(X_eval, np.flatnonzero(top == k), lower, scores, pool, (width, candidates), chunk_size)
                else:
                    self._route_top(k, X_eval, np.flatnonzero(top == k), lower, scores, pool, width, candidates,
                                    chunk_size)
            if pairs != "all":
                lower = chain_through(lower, top)
        lower[:, np.arange(K), np.arange(K)] = 0.0
        upper = -lower.transpose(0, 2, 1)
        return lower, upper

    def _candidate_pools(self, X_eval, top, candidates):
        """(k, pool, width) for each predicted class k of the rows: the training rows that can be
        among the ``candidates`` narrowest for some pair (k, l) at some row of X_eval, and their
        widths (pool, K) of [L_ikl, −L_ilk]. A row's score at x is that width plus
        2√2·r_P‖x − x_i‖ ≤ 2√2·r_P(max‖x‖ + ‖x_i‖): a row whose width alone exceeds the
        ``candidates``-th smallest of those upper bounds is never picked, so the picks for the pairs
        (k, l ≠ k) are those among all rows. At a solution polished to rounding r_P is tiny and
        the pools are small (a fold of digits with a StandardScaler: 51–221 of 1437 rows, its
        bounds 0.07 → 0.025 s); far from the optimum they hold every row. (Which rows are picked
        only tightens the bounds: any subset is sound.)"""
        L_log = self.log_ratio_lower
        with np.errstate(invalid="ignore"):
            pair_width = -L_log - L_log.transpose(0, 2, 1)                # (n, K, K), NaN-free where finite
        # (1.01: above the rounding and widening of the distances _route computes; a row pruned by a
        # too-small reach would only loosen the bounds, never make them unsound)
        reach = 2 * _SQRT2 * self.primal_radius * 1.01 * (np.sqrt(row_norms_sq(X_eval).max(initial=0.0))
                                                          + self.problem.row_norms)
        for k in np.unique(top):
            width = pair_width[:, k, :]                                  # (n, K)
            upper_score = width + reach[:, None]
            threshold = np.partition(np.where(np.isnan(upper_score), np.inf, upper_score), candidates - 1,
                                     axis=0)[candidates - 1]
            # (the pair (k, k), whose bound is 0 whatever the rows, ranks nothing; NaN widths are kept)
            keep = np.flatnonzero(np.any(np.delete(~(width > threshold), k, axis=1), axis=1))
            yield k, keep, width[keep]

    def _route(self, X_eval, eval_rows, lower, scores, rows, ranked, chunk_size):
        """lower[eval_rows] ∩= route (b)'s bounds through the training ``rows`` (all if None), from
        ``scores`` = (S_eval, E_eval, S_train, E_train), the centre's scores and their rounding; with
        ``ranked`` = (widths (rows, K) of the pairs (k̂, l), q), only the q rows of narrowest
        interval per pair at each evaluation row (k̂ its predicted class)."""
        K, d = self.problem.K, self.problem.d
        S_eval, E_eval, S_train, E_train = scores
        rP = self.primal_radius
        L_log = self.log_ratio_lower
        n_rows = self.problem.n if rows is None else rows.size
        if chunk_size is None:
            chunk_size = max(1, int(4e6 // max(n_rows * max(K * K, d), 1)))
        for start in range(0, eval_rows.size, chunk_size):
            at = eval_rows[start:start + chunk_size]
            dist = self._distances(X_eval[at], rows)                   # (c, n_rows)
            idx = np.broadcast_to(np.arange(n_rows), dist.shape)
            if ranked is not None:
                # for each pair (k̂, l), the rows with the narrowest interval; their union
                width, q = ranked
                score = 2 * _SQRT2 * rP * dist[:, :, None] + width[None, :, :]
                pick = narrowest(np.where(np.isnan(score), np.inf, score), q)[0]   # (c, q, K)
                idx = pick.reshape(pick.shape[0], -1)
                dist = np.take_along_axis(dist, idx, axis=1)
            if rows is not None:
                idx = rows[idx]
            Se = S_eval[at][:, None, :]                                  # (c, 1, K)
            Ee = E_eval[at][:, None, :]
            St, Et = S_train[idx], E_train[idx]                          # (c, q, K)
            Z = Se - St                                                  # (c, q, K): Ŵ(x − x_i), up to rounding
            C = Z[:, :, :, None] - Z[:, :, None, :]                      # (c, q, K, K)
            errZ = Ee + Et + EPS * (np.abs(Se) + np.abs(St))
            err = errZ[:, :, :, None] + errZ[:, :, None, :] + 2 * EPS * np.abs(C)
            spread = (_SQRT2 * rP * _WIDEN) * dist[:, :, None, None]
            L_rows = L_log[idx]
            # the sum's own rounding: a few ulps of the magnitudes added
            sum_err = 4 * EPS * (np.abs(C) + spread + np.abs(np.where(np.isfinite(L_rows), L_rows, 0.0)))
            with np.errstate(invalid="ignore"):
                bound = C - spread - err - sum_err + L_rows
            lower[at] = np.maximum(lower[at], np.where(np.isnan(bound), -np.inf, bound).max(axis=1))

    def _route_top(self, k, X_eval, eval_rows, lower, scores, rows, width, q, chunk_size):
        """:meth:`_route` for the pairs (k, l) and (l, k) only, k the centre's class at every row of
        ``eval_rows``, each pair through its own ``q`` training ``rows`` of narrowest interval."""
        K = self.problem.K
        S_eval, E_eval, S_train, E_train = scores
        classes = np.arange(K)
        chunk_size = chunk_size or max(1, int(4e6 // max(rows.size * max(K, self.problem.d), 1)))
        for start in range(0, eval_rows.size, chunk_size):
            at = eval_rows[start:start + chunk_size]
            dist = self._distances(X_eval[at], rows)                   # (c, pool)
            score = 2 * _SQRT2 * self.primal_radius * dist[:, :, None] + width[None, :, :]
            pick = narrowest(np.where(np.isnan(score), np.inf, score), q)[0]   # (c, q, K): rows for the pair (k̂, l)
            dist = np.take_along_axis(dist[:, :, None], pick, axis=1)
            idx = rows[pick]
            Se, Ee = S_eval[at][:, None, :], E_eval[at][:, None, :]   # (c, 1, K)
            St, Et = S_train[idx, classes], E_train[idx, classes]      # (c, q, K): each row's score for l
            St_k, Et_k = S_train[idx, k], E_train[idx, k]              # … and for k̂
            C = (Se[..., k:k + 1] - St_k) - (Se - St)                  # Ŵ(x − x_i) for δ_k̂l
            err = (Ee[..., k:k + 1] + Et_k + EPS * (np.abs(Se[..., k:k + 1]) + np.abs(St_k))
                   + Ee + Et + EPS * (np.abs(Se) + np.abs(St)) + 2 * EPS * np.abs(C))
            spread = (_SQRT2 * self.primal_radius * _WIDEN) * dist
            L_log = self.log_ratio_lower
            tighten_through(lower, at, np.full(at.size, k), C, spread, err, L_log[idx, k, classes],
                            L_log[idx, classes, k])

    def _distances(self, X_block, rows=None):
        """Upper bounds of ‖x − x_i‖₂ for x in X_block and training rows i (all, or ``rows``):
        ‖x‖² + ‖x_i‖² − 2x·x_i by matrix products, plus a bound on its rounding error (the
        cancellation near x = x_i), dense or sparse alike (the differences x − x_i, formed for
        dense rows, took 0.56 s of a 5-fold on digits with a StandardScaler)."""
        Xt = self.problem.X if rows is None else self.problem.X[rows]
        d = Xt.shape[1]
        xb, xt = row_norms_sq(X_block), row_norms_sq(Xt)
        cross = np.asarray(as_dense(X_block @ Xt.T))
        abs_cross = np.asarray(as_dense(abs(X_block) @ abs(Xt).T))
        sq = xb[:, None] + xt[None, :] - 2.0 * cross
        allowance = 2.0 * (d + 16) * EPS * (xb[:, None] + xt[None, :] + 2.0 * abs_cross)
        return np.sqrt(np.maximum(sq, 0.0) + allowance) * _WIDEN

    def predict(self, X_eval, candidates=None):
        """Certified arg-max class of each row of X_eval (−1 where undecided)."""
        return certified_argmax(*self.pairwise_bounds(X_eval, candidates))


def narrowest(score, q, axis=1):
    """(indices, values) of the ``q`` smallest entries of ``score`` along ``axis`` (that axis of
    length q in both), by repeated arg-min: for q of 1 or 2, a fifth of a partition's time (the
    bounds at a solved fold of digits: 7 → 1.5 ms). ``score`` is overwritten; NaN counts as the
    smallest (pass +∞ instead where it should count last)."""
    picks, values = [], []
    for _ in range(min(q, score.shape[axis])):
        pick = np.expand_dims(score.argmin(axis=axis), axis)
        picks.append(pick)
        values.append(np.take_along_axis(score, pick, axis=axis))
        np.put_along_axis(score, pick, np.inf, axis=axis)
    return np.concatenate(picks, axis=axis), np.concatenate(values, axis=axis)


def tighten_through(lower, rows, top, C, spread, err, L_kl, L_lk):
    """lower[rows] ∩= route (b)'s bounds of the pairs (k̂, l) and (l, k̂), k̂ = ``top`` (one per
    row), each the best over its candidate training rows (axis 1 of the (c, q, K) arrays): the
    centre's Ŵ(x − x_i) for δ_k̂l (``C``) and its rounding (``err``), the ball's ``spread`` and
    the log-ratio lower bounds L_ik̂l and L_ilk̂ at the candidates."""
    classes = np.arange(lower.shape[1])
    for L, Cs, first, second in ((L_kl, C, top[:, None], classes[None, :]),
                                 (L_lk, -C, classes[None, :], top[:, None])):
        sum_err = 4 * EPS * (np.abs(Cs) + spread + np.abs(np.where(np.isfinite(L), L, 0.0)))
        with np.errstate(invalid="ignore"):
            route = Cs - spread - err - sum_err + L
        best = np.where(np.isnan(route), -np.inf, route).max(axis=1)   # (c, K)
        lower[rows[:, None], first, second] = np.maximum(lower[rows[:, None], first, second], best)


def chain_through(lower, top):
    """``lower`` with every pair's bound raised to δ_kl ≥ δ_kk̂ + δ_k̂l (the sum rounded down),
    k̂ = ``top`` (one per row); the pairs through k̂ are kept."""
    rows = np.arange(lower.shape[0])
    to_top, from_top = lower[rows, :, top], lower[rows, top, :]   # lower bounds of δ_kk̂ and δ_k̂l, (m, K)
    with np.errstate(invalid="ignore"):
        chained = to_top[:, :, None] + from_top[:, None, :]
        chained = chained - 2 * EPS * np.abs(np.where(np.isfinite(chained), chained, 0.0))
    lower = np.maximum(lower, np.where(np.isnan(chained), -np.inf, chained))
    lower[rows, top, :], lower[rows, :, top] = from_top, to_top
    return lower


def per_class_through(lower, top):
    """Per-class score bounds (low, up), (m, K), from the pairs through k̂ = ``top`` (Σ_k s*_k = 0):
    s_k̂ = (1/K)Σ_l δ_k̂l and s_k = (1/K)Σ_{l≠k} δ_k̂l − ((K−1)/K)δ_k̂k, each pair bounded once.
    ``lower`` holds 0 on its diagonal (δ_kk = 0)."""
    K = lower.shape[1]
    rows = np.arange(lower.shape[0])
    lo_top, up_top = lower[rows, top, :], -lower[rows, :, top]      # bounds of δ_k̂l, (m, K)
    with np.errstate(invalid="ignore"):
        sum_lo, sum_up = lo_top.sum(axis=1), up_top.sum(axis=1)
        mag = (np.abs(lo_top) + np.abs(up_top)).sum(axis=1)
        low = (sum_lo[:, None] - lo_top) / K - (K - 1) / K * up_top
        up = (sum_up[:, None] - up_top) / K - (K - 1) / K * lo_top
        low[rows, top], up[rows, top] = sum_lo / K, sum_up / K
        slack = 2 * (K + 4) * EPS * (mag[:, None] + np.abs(lo_top) + np.abs(up_top))
    low, up = low - slack, up + slack
    return np.where(np.isnan(low), -np.inf, low), np.where(np.isnan(up), np.inf, up)


def certified_argmax(lower, upper=None):
    """The class k = argmax_k s*_k (numpy's first-index rule on ties) where the bounds prove it,
    −1 elsewhere.

    ``lower[m, k, l] ≤ s*_k − s*_l ≤ upper[m, k, l]`` (upper defaults to −lowerᵀ). Class k is
    certified when, for every l ≠ k, lower[k, l] > 0, or l > k and lower[k, l] = upper[k, l] = 0
    (a difference known to be exactly 0, e.g. x = 0 without intercept: the tie goes to the first
    index, k). A difference that may be 0 or of either sign is never resolved (conservative).
    """
    lower = np.asarray(lower, dtype=float)
    if upper is None:
        upper = -lower.transpose(0, 2, 1)
    K = lower.shape[1]
    later = np.triu(np.ones((K, K), dtype=bool), 1)  # l > k
    wins = (lower > 0) | (later & (lower == 0) & (upper == 0))
    wins[:, np.arange(K), np.arange(K)] = True
    ok = wins.all(axis=2)                           # (m, K)
    return np.where(ok.any(axis=1), ok.argmax(axis=1), -1)
