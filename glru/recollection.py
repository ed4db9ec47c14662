"""Hessian-free online unlearning by recollection (Qiao et al., "Efficient Online Unlearning via
Hessian-Free Recollection of Individual Data Statistics"), for a binary logistic and a linear
(squared loss) model.

Training
--------
Per-sample loss ℓ_i(θ) = ℓ(y_i, x_i·w + b) + (α/2)‖w‖², θ = (w, b) ∈ R^D (D = d + 1 with an
intercept, which is not penalized). Clipped mini-batch SGD with the paper's geometric decay::

    θ_{t+1} = θ_t − (η_t/|B_t|) Σ_{i∈B_t} clip_C(∇ℓ_i(θ_t)),   η_t = η₀ q^t,
    clip_C(g) = g · min(1, C/‖g‖)        (per sample, on the full D-vector, penalty included)

The batches come from :func:`batch_schedule`: a fixed seed gives a fixed list of mini-batches
(a fresh permutation per epoch, cut into consecutive batches of ``batch_size``).

The reference: the replay run
-----------------------------
Forgetting a set U approximates w^{−U}: the SAME run (same batches, same η_t, same θ₀ = 0)
replayed with every row of U dropped from each batch it sat in, the coefficient η_t/|B_t| of
the other rows unchanged (the paper's eq. 4–5, its "linear scaling rule"). It is not the
minimiser of the objective on the remaining rows.

Recollections (Stage II, computed during training)
--------------------------------------------------
Let J_i(θ) be the Jacobian of θ ↦ clip_C(∇ℓ_i(θ)) (= H_i, the Hessian of ℓ_i, when the row is
not clipped; (C/‖g‖)(I − ĝĝᵀ)H_i when it is). The recollection of row u follows the
linearisation of the replay difference Δ_t = w_t^{−u} − w_t (the paper's eq. 7–8)::

    a_{t+1} = (I − (η_t/|B_t|) J_{B_t∖{u}}) a_t + [u ∈ B_t] (η_t/|B_t|) clip_C(∇ℓ_u(θ_t))

with J_S = Σ_{i∈S} J_i(θ_t), applied as Hessian-vector products (never forming a D × D
matrix). Forgetting U sets θ ← θ + Σ_{u∈U} a_u (the paper's eq. 10, Stage III) and zeroes
those recollections (the paper's "forgetting the recollections").

One deliberate refinement of the paper: its eq. 8 propagates a_u through J_{B_t} including
u's own Hessian at u's own later steps, though u's gradient term is absent from the replay;
here J_{B_t∖{u}} is used (``exclude_self=True``; ``False`` gives the paper's literal
recursion). It costs the same and removes the self-interaction error.

What is exact and what is approximate
-------------------------------------
- Additivity (the paper's Theorem 1) is exact by construction: forgetting rows one at a time
  gives the same θ as forgetting them together, up to float summation order.
- Linear model, clipping never active (``clip=None`` or C above every per-sample gradient norm
  of the run): the SGD map is affine, so a_u is EXACTLY w^{−u} − w for a single row u (up to
  rounding, ~1e−12 relative), for any number of epochs.
- Linear model, several rows: the true replay difference is not additive. Removing u also
  removes u's Hessian term x̃_u x̃_uᵀ + αP from the later steps of the replay, which then acts
  on the other rows' differences; Σ_u a_u misses these cross terms
  (η_t/|B_t|) J_u Σ_{v≠u} a_v, one order higher in the step size: typically 1–5% of
  ‖w^{−U} − w‖ (5 of 80 rows, η₀ = 0.1), but the rows' effects can cancel in the replay while
  the cross terms do not, and then the error can exceed ‖w^{−U} − w‖ (seen with d = 1). With
  one epoch and all of U inside one mini-batch the sum is again exact.
- Logistic model (and any clipped run): first-order (Taylor) approximation of the replay
  (measured on w8a, 10 rows: 3.8e−7 against 3.1e−3 for the original model). The paper's
  Theorem 2 bound is computed by :func:`error_bound_terms`; it holds in every test but is
  vacuous in practice: with an unpenalized intercept λ = 0, so ρ ≥ 1 and it never contracts,
  and once η_t M > 2 for the densest row (M = ¼‖x̃‖²_max + α) ρ > 1 and it grows
  geometrically in the number of steps (1.8e51 on w8a).

Cost
----
Memory O(n·D) float64 for the recollections (8·n·D bytes: 114 MiB for w8a, n = 49,749 and
D = 301), plus the data and an n·D temporary. Every stored vector takes every step's
Hessian-vector product, so a step costs O(n·(|B|·nnz-per-row + D)) (plus O(n·D) per clipped
row) and training O(E·n²·nnz-per-row + T·n·D), against O(E·n·nnz-per-row) for plain SGD: 144 s
against 0.3 s on w8a, 2 epochs. Forgetting costs O(D) per row and never scans all n rows.
After forgetting, the only per-row traces left are one float of bound bookkeeping per row
(from the row's batch positions) and, in the classifier, the row's class.
"""

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from .losses import get_loss
from .problem import as_dense, row_norms_sq

__all__ = [
    "Recollections",
    "batch_schedule",
    "clipped_sgd",
    "error_bound_terms",
    "gaussian_noise_std",
    "step_sizes",
    "train_with_recollections",
]

LOSSES = ("logistic", "squared")


# ---- the training schedule ------------------------------------------------------------------------

def batch_schedule(n_samples, batch_size, n_epochs, seed):
    """The deterministic list of mini-batches: per epoch, a permutation cut into consecutive batches.

    Parameters
    ----------
    n_samples, batch_size, n_epochs : int
    seed : int
        Seeds :func:`numpy.random.default_rng`; the same seed gives the same schedule.

    Returns
    -------
    batches : list of ndarray of int
        ``n_epochs * ceil(n_samples / batch_size)`` index arrays; the last one of an epoch may
        be shorter.
    """
    rng = np.random.default_rng(seed)
    batches = []
    for _ in range(n_epochs):
        order = rng.permutation(n_samples)
        batches.extend(order[start:start + batch_size] for start in range(0, n_samples, batch_size))
    return batches


def step_sizes(n_steps, eta0, decay):
    """η_t = η₀ q^t for t = 0 … n_steps − 1 (decayed per step, as the paper's code does)."""
    return eta0 * decay ** np.arange(n_steps, dtype=np.float64)


# ---- one step's linearisation ---------------------------------------------------------------------

@dataclass
class _Step:
    """Everything about θ_t and batch B_t that the gradient and its Jacobian need."""

    X: object            # the batch rows, (m, d) dense or CSR
    d1: np.ndarray       # ℓ'(y_i, t_i)
    d2: np.ndarray       # ℓ''(y_i, t_i)
    scale: np.ndarray    # clip factors s_i = min(1, C/‖g_i‖)
    penalty: np.ndarray  # αPθ (zero on the intercept)
    clipped: np.ndarray  # rows with ‖g_i‖ > C
    unit: np.ndarray     # (m_clipped, D) the clipped rows' gradient directions ĝ_i
    alpha: float
    fit_intercept: bool

    @cached_property
    def dense(self):
        """X̃ of the batch rows as a dense (m, D) array, formed once per step."""
        return _dense_rows(self.X, self.fit_intercept)

    @cached_property
    def curv(self):
        """ĝ_iᵀ x̃_i for the clipped rows."""
        return np.einsum("ij,ij->i", self.dense[self.clipped], self.unit)


def _dense_rows(X, fit_intercept):
    """X̃ = [X, 1] as a dense (m, D) array (X itself when dense and no intercept: no caller
    writes to it)."""
    dense = as_dense(X)
    return np.hstack([dense, np.ones((dense.shape[0], 1))]) if fit_intercept else dense


def _xt_dot(X, V, fit_intercept):
    """X̃ V for V of shape (D, k)."""
    d = X.shape[1]
    out = np.asarray(X @ V[:d])
    return out + V[d] if fit_intercept else out


def _xt_transpose_dot(X, W, fit_intercept):
    """X̃ᵀ W for W of shape (m, k)."""
    out = np.asarray(X.T @ W)
    return np.vstack([out, W.sum(axis=0, keepdims=True)]) if fit_intercept else out


def _linearize(X, y, loss, theta, rows, alpha, clip, fit_intercept):
    Xb = X[rows]
    d = X.shape[1]
    t = _xt_dot(Xb, theta, fit_intercept)
    d1, d2 = loss.derivative(y[rows], t), loss.second_derivative(y[rows], t)
    penalty = np.zeros_like(theta)
    penalty[:d] = alpha * theta[:d]
    # ‖d1 x̃ + αPθ‖² expanded so that no dense per-sample gradient is formed for unclipped rows
    x_norm2 = row_norms_sq(Xb) + fit_intercept
    xw = t - theta[d] if fit_intercept else t
    norm = np.sqrt(np.maximum(d1 * d1 * x_norm2 + 2 * alpha * d1 * xw + penalty @ penalty, 0.0))
    clipped = norm > clip if clip is not None else np.zeros(len(rows), dtype=bool)
    scale = np.ones(len(rows))
    scale[clipped] = clip / norm[clipped]
    unit = np.zeros((0, theta.shape[0]))
    if clipped.any():
        dense = _dense_rows(Xb[clipped], fit_intercept)
        unit = (d1[clipped, None] * dense + penalty) / norm[clipped, None]
    return _Step(Xb, d1, d2, scale, penalty, clipped, unit, alpha, fit_intercept)


def _clipped_gradients(step):
    """clip_C(∇ℓ_i(θ_t)) for the batch rows, as the columns of a (D, m) array."""
    return ((step.d1[:, None] * step.dense + step.penalty) * step.scale[:, None]).T


def _clipped_gradient_sum(step):
    d = step.X.shape[1]
    total = _xt_transpose_dot(step.X, (step.scale * step.d1)[:, None], step.fit_intercept).ravel()
    total[:d] += step.scale.sum() * step.penalty[:d]
    return total


def _penalty_mask(step, D):
    mask = np.ones(D)
    mask[step.X.shape[1]:] = 0.0       # the intercept is not penalized
    return mask


def _propagate(step, R, coefficient):
    """R ← (I − k Σ_{i∈B} J_i) R in place, for R of shape (D, k'), by Hessian-vector products.

    J_i v = s_i [H_i v − [clipped] ĝ_i ĝ_iᵀ H_i v] with H_i v = ℓ''_i x̃_i (x̃_iᵀ v) + αPv.
    In place because R is the n-column matrix of all recollections: every temporary of its
    size costs as much memory traffic as the products themselves.
    """
    d = step.X.shape[1]
    Z = _xt_dot(step.X, R, step.fit_intercept)                         # x̃_iᵀ v, (m, k')
    correction = None
    if step.clipped.any():
        c, unit = step.clipped, step.unit
        hv = (step.d2[c] * step.curv)[:, None] * Z[c] + step.alpha * (unit[:, :d] @ R[:d])   # ĝ_iᵀ H_i v
        correction = step.scale[c, None] * hv
    R[:d] *= 1.0 - coefficient * step.alpha * step.scale.sum()
    W = (coefficient * step.scale * step.d2)[:, None] * Z
    R[:d] -= step.X.T @ W                 # X̃ᵀ W, split to avoid stacking an R-sized array
    if step.fit_intercept:
        R[d] -= W.sum(axis=0)
    if correction is not None:
        R += unit.T @ (coefficient * correction)


def _own_jacobian(step, V):
    """Column i of V (D, m) times J_i, the Jacobian of batch row i alone."""
    D = V.shape[0]
    mask = _penalty_mask(step, D)[:, None]
    dense = step.dense                                                 # (m, D)
    z = np.einsum("ij,ji->i", dense, V)                                # x̃_iᵀ v_i
    out = dense.T * (step.scale * step.d2 * z) + step.alpha * step.scale * (mask * V)
    if step.clipped.any():
        c = step.clipped
        unit = step.unit
        hv = step.d2[c] * step.curv * z[c] + step.alpha * np.einsum("ij,ji->i", unit * mask.T, V[:, c])
        out[:, c] -= unit.T * (step.scale[c] * hv)
    return out


# ---- training ------------------------------------------------------------------------------------

def _check_problem(X, y, loss):
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}.")
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]} entries.")
    if loss == "logistic" and not np.all(np.abs(y) == 1.0):
        raise ValueError("The logistic loss needs labels encoded as −1/+1.")
    return get_loss(loss)


def clipped_sgd(X, y, loss, *, alpha, clip, batches, etas, fit_intercept=True, keep=None):
    """Plain clipped, decayed mini-batch SGD; with ``keep`` it is the replay run without some rows.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n, d)
    y : ndarray of shape (n,)
        −1/+1 for ``"logistic"``.
    loss : {"logistic", "squared"}
    alpha : float
        L2 penalty α of each per-sample loss (not on the intercept).
    clip : float or None
        Per-sample gradient clipping level C; None clips nothing.
    batches : list of ndarray
        From :func:`batch_schedule`.
    etas : ndarray
        From :func:`step_sizes`, one per batch.
    fit_intercept : bool, default=True
    keep : ndarray of bool of shape (n,), default=None
        Rows to train on. Dropped rows leave their batches, and the other rows keep their
        coefficient η_t/|B_t| (|B_t| the original batch size), as the paper's retraining does.

    Returns
    -------
    theta : ndarray of shape (d + fit_intercept,)
    """
    loss = _check_problem(X, y, loss)
    theta = np.zeros(X.shape[1] + fit_intercept)
    for rows, eta in zip(batches, etas):
        coefficient = eta / len(rows)
        if keep is not None:
            rows = rows[keep[rows]]
        if len(rows):
            step = _linearize(X, y, loss, theta, rows, alpha, clip, fit_intercept)
            theta -= coefficient * _clipped_gradient_sum(step)
    return theta


def train_with_recollections(X, y, loss, *, alpha, clip, batches, etas, fit_intercept=True, exclude_self=True):
    """Train by clipped SGD and record every row's recollection on the way (Stages I and II).

    Parameters
    ----------
    X, y, loss, alpha, clip, batches, etas, fit_intercept
        As in :func:`clipped_sgd`.
    exclude_self : bool, default=True
        Propagate a_u through the Jacobian of its batch without u's own term (exact for a
        single row of the linear model); False follows the paper's eq. 8 literally.

    Returns
    -------
    theta : ndarray of shape (D,)
        The trained parameters (w, b); equal to :func:`clipped_sgd` on the same arguments.
    recollections : ndarray of shape (D, n)
        Column u is a_u, so that θ + a_u approximates the replay run without row u.
    """
    loss = _check_problem(X, y, loss)
    D = X.shape[1] + fit_intercept
    theta = np.zeros(D)
    R = np.zeros((D, X.shape[0]))
    for rows, eta in zip(batches, etas):
        step = _linearize(X, y, loss, theta, rows, alpha, clip, fit_intercept)
        coefficient = eta / len(rows)
        own = R[:, rows]                                   # a copy: the values before this step
        _propagate(step, R, coefficient)
        grads = _clipped_gradients(step)
        added = grads + _own_jacobian(step, own) if exclude_self else grads
        R[:, rows] += coefficient * added
        theta -= coefficient * grads.sum(axis=1)
    return theta, R


# ---- the paper's error bound and noise ------------------------------------------------------------

def error_bound_terms(batches, etas, *, n_samples, clip, strong_convexity, smoothness):
    """The paper's Theorem 2 bound on ‖w^{−U} − w − Σ_{u∈U} a_u‖, split as c₀ + Σ_{u∈U} c_u.

    In the form its proof derives before the closing "for convenience" restatement, written
    per step so that any schedule works (with constant ρ and η_t = η q^t it is the paper's
    (2η²C/(1−q))[(ρ^T−q^T)/(ρ−q) − (ρ^T−q^{2T})/(ρ−q²)] + Σ_u (2Cη/|B|) Σ_e ρ^{T−t_e(u)−1} q^{t_e(u)}).
    With P_k = Π_{s>k} ρ_s, ρ_s = max(|1 − η_s λ|, |1 − η_s M|) (Lemma 2) and
    D_k = 2C Σ_{s<k} η_s (Lemma 1, ‖w_k^{−U} − w_k‖ ≤ D_k)::

        c₀  = Σ_k P_k η_k D_k                          (Taylor remainders along the run)
        c_u = Σ_{steps t with u ∈ B_t} P_t η_t 2C/|B_t|  (u's gradient taken at w_t, not w_t^{−U})

    The closing restatement of the theorem multiplies the c_u terms by a further 2η²C/(1 − q);
    the proof's form is used here. c₀ only counts when U is non-empty (forgetting nothing
    is exact).

    Assumptions (the paper's): per-sample losses λ-strongly convex and M-smooth; the
    Taylor remainder of each step bounded by ‖Δ_t‖ (per-sample Hessians varying by at most 1:
    true for the logistic loss when ‖x̃‖² ≤ 4, and trivially for the squared loss, whose
    remainder is 0); Lemma 2 applied to the clipped map as to the unclipped one. The proof is
    a sketch and the bound is very loose (see the module docstring); the tests check it
    empirically.

    Parameters
    ----------
    batches, etas
        The schedule.
    n_samples : int
    clip : float or None
        C; None (no clipping) makes the bound infinite.
    strong_convexity, smoothness : float
        λ and M of the per-sample losses.

    Returns
    -------
    common : float
        c₀.
    per_row : ndarray of shape (n_samples,)
        c_u.
    """
    if clip is None:
        return np.inf, np.full(n_samples, np.inf)
    etas = np.asarray(etas, dtype=np.float64)
    rho = np.maximum(np.abs(1 - etas * strong_convexity), np.abs(1 - etas * smoothness))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        log_rho = np.log(rho)
        # P_k = Π_{s=k+1}^{T−1} ρ_s
        later = np.exp(np.concatenate([np.cumsum(log_rho[::-1])[::-1][1:], [0.0]]))
        lemma1 = 2 * clip * np.concatenate([[0.0], np.cumsum(etas)[:-1]])
        common = float(np.sum(later * etas * lemma1))
        per_row = np.zeros(n_samples)
        for rows, weight in zip(batches, later * etas * 2 * clip):
            per_row[rows] += weight / len(rows)
    common = np.inf if np.isnan(common) else common
    return common, np.nan_to_num(per_row, nan=np.inf)


def gaussian_noise_std(sensitivity, epsilon, delta):
    """σ = Δ₂ √(2 ln(1.25/δ)) / ε, the Gaussian mechanism the paper's Theorem 3 uses.

    Adding N(0, σ²I) to a model whose distance to the replay model is at most Δ₂ makes it
    (ε, δ)-indistinguishable from the replay model with the same noise, for 0 < ε ≤ 1.
    """
    if not 0 < epsilon <= 1:
        raise ValueError(f"epsilon must be in (0, 1] for the Gaussian mechanism, got {epsilon!r}.")
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}.")
    return sensitivity * np.sqrt(2 * np.log(1.25 / delta)) / epsilon


# ---- Stage III: forgetting -----------------------------------------------------------------------

@dataclass(eq=False)
class Recollections:
    """A trained model, its rows' recollections, and what has been forgotten (Stage III).

    Every operation here costs O(D) per row named, never O(n): the running totals below are
    kept so that no call scans all rows.

    Attributes
    ----------
    theta : ndarray of shape (D,)
        Current parameters (w, b): the trained ones plus the forgotten rows' recollections
        plus any noise.
    matrix : ndarray of shape (D, n)
        Column u is a_u; zero once u is forgotten.
    bound_common, bound_rows
        :func:`error_bound_terms`.
    forgotten : ndarray of bool of shape (n,)
    n_forgotten : int
    forgotten_bound : float
        Σ of ``bound_rows`` over the forgotten rows.
    noise_var : float
        Variance per coordinate of the Gaussian noise added so far.
    """

    theta: np.ndarray
    matrix: np.ndarray
    bound_common: float
    bound_rows: np.ndarray
    forgotten: np.ndarray = field(default=None)
    n_forgotten: int = 0
    forgotten_bound: float = 0.0
    noise_var: float = 0.0

    def __post_init__(self):
        if self.forgotten is None:
            self.forgotten = np.zeros(self.matrix.shape[1], dtype=bool)

    def check_rows(self, rows):
        """``rows`` as an int array of distinct, in-range, not yet forgotten row indices."""
        rows = np.asarray(rows)
        if rows.ndim != 1 or (rows.size and rows.dtype.kind not in "iu"):
            raise ValueError(f"rows must be a 1-D sequence of integer row indices, got {rows!r}.")
        rows = rows.astype(np.intp)
        n = self.matrix.shape[1]
        outside = (rows < 0) | (rows >= n)
        if outside.any():
            raise ValueError(f"rows {rows[outside][:10].tolist()} are out of range [0, {n}).")
        if np.unique(rows).size != rows.size:
            raise ValueError("rows contains the same row more than once.")
        again = self.forgotten[rows]
        if again.any():
            raise ValueError(f"rows {rows[again][:10].tolist()} were already forgotten.")
        return rows

    def error_bound(self, rows=()):
        """The Theorem 2 bound for everything forgotten so far plus ``rows`` (distinct, not yet
        forgotten); 0 for nothing."""
        rows = np.asarray(rows, dtype=np.intp)
        if self.n_forgotten + rows.size == 0:
            return 0.0
        return self.bound_common + self.forgotten_bound + float(self.bound_rows[rows].sum())

    def noise_std_for(self, rows, epsilon, delta):
        """Total noise std the model must carry once ``rows`` are forgotten too."""
        sensitivity = self.error_bound(rows)
        if not np.isfinite(sensitivity):
            raise ValueError("Calibrated noise needs a finite error bound: set a clipping level C.")
        return gaussian_noise_std(sensitivity, epsilon, delta)

    def forget(self, rows, *, epsilon=None, delta=None, rng=None):
        """θ ← θ + Σ_{u∈rows} a_u (+ noise), then erase those recollections; O(D) per row.

        With ``epsilon``, Gaussian noise tops the model's accumulated noise up to the std of
        :func:`gaussian_noise_std` for the bound of ALL rows forgotten so far (independent
        Gaussians add their variances), so every published model carries exactly the noise
        that its own forgotten set requires.
        """
        rows = self.check_rows(rows)
        if rows.size == 0:
            return self
        target = self.noise_std_for(rows, epsilon, delta) ** 2 if epsilon is not None else None
        self.theta = self.theta + self.matrix[:, rows].sum(axis=1)
        if target is not None and target > self.noise_var:
            rng = np.random.default_rng(rng)
            self.theta = self.theta + rng.normal(scale=np.sqrt(target - self.noise_var), size=self.theta.shape)
            self.noise_var = target
        self.matrix[:, rows] = 0.0
        self.forgotten[rows] = True
        self.n_forgotten += rows.size
        self.forgotten_bound += float(self.bound_rows[rows].sum())
        return self
