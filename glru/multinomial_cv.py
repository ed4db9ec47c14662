"""Exact cross-validation of multinomial (softmax) logistic regression: every fold's held-out
predicted classes, certified from one full fit.

scikit-learn's multinomial ``LogisticRegression(C)`` on a fold with training rows T solves, in
sum form (λ_T = 1/(n_T C), so n_T·λ_T = 1/C = a for every fold),

    F_T(z) = Σ_{i∈T} ℓ_{y_i}(W x_i + b) + (a/2)‖W‖_F²,

the full objective minus the left-out rows' losses. Coordinates z = (W.ravel(), u) with
b = B u, B an orthonormal basis of {Σ_k b_k = 0} (:class:`glru.multinomial.MultinomialProblem`'s
packing), p = K·d + K − 1 of them. The engine

1. fits the full data (:func:`glru.multinomial.solve_multinomial` to a rough gap, then Newton
   steps with the dense Hessian until the gradient stops shrinking: rounding level);
2. forms the full Hessian S = Σ_i A_iᵀ D_i A_i + a·P_W at the optimum once (A_i z = W x_i + b,
   D_i = diag(p_i) − p_i p_iᵀ) and inverts it; a fold's Hessian there is the downdate
   S − A_Vᵀ D_V A_V by its left-out rows V, applied through Woodbury,
   H_T⁻¹ = S⁻¹ + Q D_V (I − G D_V)⁻¹ Qᵀ with Q = S⁻¹A_Vᵀ and G = A_V Q (a |V|K × |V|K system:
   K × K for leave-one-out, batched over a block of folds); folds with many left-out rows form
   H_T and factor it; p > NEWTON_MAX_DIM, or where the dense Hessians are estimated to cost
   more than the folds' conjugate gradients (:func:`_dense_pays_off`, p ≫ n), uses conjugate
   gradients on Hessian-vector products;
3. takes one Newton step of every fold's objective from the full optimum and certifies it, then
   a chord step (the same fold Hessian, the fold's gradient at the new point) for the folds
   left open: these two points are the folds' *centres* (on digits at C = 1 the old optimum
   certifies ~0 % of the leave-one-out folds, the Newton step 98 %);
4. certifies a block of folds at once, reading only products with the full X (left-out rows'
   terms set to 0, nothing copied): the sound duality gap of
   :meth:`~glru.multinomial.MultinomialProblem.duality_gap` (same dual point and arithmetic;
   its rounding allowance sized by Cauchy–Schwarz, |x_i|·|w_k| ≤ ‖x_i‖‖w_k‖), the primal and dual
   radii, and :meth:`~glru.multinomial.MultinomialCertificate.pairwise_bounds` at the held-out
   rows for the pairs (k̂, l) and (l, k̂), k̂ the centre's class, through the KKT identity at
   CANDIDATES training rows per pair (the narrowest first-order intervals, ranked with the full
   fit's probabilities), plus the ball without intercept; other pairs by δ_kl ≥ δ_kk̂ + δ_k̂l. The
   certified arg-max (:func:`glru.multinomial.certified_argmax`) settles a row;
5. iterates the open folds by more chord steps (certified at each) until they are certified, or
   their steps stop shrinking at a gap at rounding level (the iterate is then the optimum to
   rounding, as Newton polishing leaves it, and its arg-max is read), or contract too slowly;
6. solves what is left from its last iterate, through joblib (``Parallel(n_jobs, verbose,
   pre_dispatch)``): Newton steps by conjugate gradients preconditioned with the full Hessian S
   at the optimum (replaced by the fold's own where they converge slowly) to TOL_FULL,
   :func:`solve_multinomial` beyond NEWTON_MAX_DIM (or without dense Hessians) or on failure,
   then polished (chord steps with a factorization at the point reached); the labels are the
   arg-max of the exact scores.

At a rounding-level point, scores within the rounding band of the row's largest
(:func:`_tie_band`, the analogue of :func:`glru.bounds.zero_band`) count as ties, which go to the
first class as numpy's arg-max gives them at an exact solve. With ``need="values"`` every fold is
iterated (5) or solved (6) to rounding level and keeps its coefficients. A fold whose training
rows miss a class is solved directly on the classes present (scikit-learn then fits a K′-class
model; for K′ = 2 its binary model, which is the K = 2 multinomial one with λ doubled). Every
label is certified or read at a rounding-level optimum; nothing is guessed.

The blocks' products are small, so they run with single-threaded BLAS (threads spinning on small
calls cost far more than they give on a loaded machine).
"""

import numpy as np
import scipy.linalg
import scipy.linalg.blas
import scipy.optimize
import scipy.sparse as sp
from joblib import Parallel, delayed
from scipy.sparse.linalg import LinearOperator, cg

from .blas import blas_for, single_threaded_blas
from .bounds import ZERO_BAND_CAP, dual_radius
from .costs import DENSE_SECONDS, product_seconds
from .cross_validation import NEWTON_CG_PASSES, _Clock
from .duality import EPS, gap_allowance, sound_gap
from .fold_steps import forcing_terms
from .held_out import MulticlassOutcome
from .multinomial import (
    _SQRT2,
    _WIDEN,
    Multinomial,
    MultinomialCertificate,
    MultinomialProblem,
    _arc_shifts,
    _sector_min,
    _shifted_log_bounds,
    certified_argmax,
    chain_through,
    narrowest,
    per_class_through,
    polish_multinomial,
    solve_multinomial,
    tighten_through,
)
from .problem import as_dense, row_norms_sq, with_constant_column
from .solver import newton_polish

__all__ = ["MultinomialCrossValidation", "cross_validate_multinomial"]

TOL_FULL = 1e-13        # relative duality gap of every solve before polishing (then: rounding level)
TOL_HUB = 1e-8          # the full fit's rough solve, before Newton steps with the dense Hessian
FULL_NEWTON_STEPS = 20
DAMPED_NEWTON_STEPS = 100
TOL_SANE = 1e-8         # a polished fold solution with a larger relative gap is solved again, cold
COLD_GAP, ROUGH_GAP, ROUGH_STEPS, GAP_EVERY = 10.0, 0.1, 100, 5  # L-BFGS before the Newton steps of a cold start
GAP_CHECK_DECREMENT = 1e4   # the gap is evaluated where the Newton decrement is within this factor of TOL_FULL
PRECONDITIONED_CG_STEPS = 40  # a kept Hessian factorization is refreshed where CG preconditioned by it needs more
TOL_ROUNDING = 1e-15    # a gap this small (relative), or within its rounding allowance, is "at rounding level"
NEWTON_MAX_DIM = 4096   # p above this: no dense Hessian, conjugate gradients per fold
# below it too where the dense Hessians are estimated to cost more than DENSE_ADVANTAGE times the
# folds' conjugate gradients (_dense_pays_off); about DENSE_HESSIANS are formed and factored
DENSE_ADVANTAGE = 30.0
DENSE_HESSIANS = 4
CENTRE_STEPS = 2        # Newton step + chord step: the centre whose certified rows count as certified
CHORD_MAX_STEPS = 30
MAX_HALVINGS = 30       # backtracking of a step that raises the fold's objective
CHORD_CONTRACTION = 0.5  # each chord step must be at most half the previous one
CANDIDATES = 2          # training rows per (held-out row, class pair) in the KKT route
BLOCK_FLOATS = 1 << 18  # a block of folds keeps a few (folds, K, n) arrays of about this many floats (cache-sized)
CHUNK_FLOATS = 1 << 21  # pairwise-bound work arrays
_LOSS = Multinomial()


class MultinomialCrossValidation:
    """Result of :func:`cross_validate_multinomial` (the interface of
    :class:`glru.one_vs_rest.MulticlassCrossValidation`): ``outcomes`` (a
    :class:`glru.held_out.MulticlassOutcome` per fold), the full fit ``coef`` (K, d) and
    ``intercept`` (K,), ``n_certified`` (held-out rows certified at the centres, in folds that
    were not trained further), ``n_retrained`` (folds iterated or solved past the centre),
    ``n_solved`` (of those, folds solved by :func:`solve_multinomial`) and ``timings``."""

    def __init__(self, outcomes, coef, intercept, n_certified, n_solved, timings):
        self.outcomes, self.coef, self.intercept = outcomes, coef, intercept
        self.n_certified = n_certified
        self.n_retrained = sum(o.solved for o in outcomes)
        self.n_solved = n_solved
        self.timings = timings


def cross_validate_multinomial(X, codes, n_classes, folds, lam_for, fit_intercept, *, need="labels", n_jobs=None,
                               verbose=0, pre_dispatch="2*n_jobs"):
    """Held-out predicted classes (``need="labels"``) or exact fold models (``need="values"``)
    of every fold of multinomial logistic regression.

    Parameters
    ----------
    X : float64 ndarray or CSR matrix of shape (n, d) (validated)
    codes : int ndarray of shape (n,)
        Class of each row, in 0 … n_classes − 1; every class occurs in X's rows.
    n_classes : int ≥ 2
    folds : list of :class:`glru.cross_validation.Fold`
        Each fold's training rows must hold at least two classes.
    lam_for : callable(n_train) -> float
        λ of the mean-form problem on n_train rows (scikit-learn: 1/(n_train·C)).
    fit_intercept : bool
        Unpenalized intercept (symmetric: Σ_k b_k = 0).
    need : {"labels", "values"}
    n_jobs, verbose, pre_dispatch : passed to :class:`joblib.Parallel` for the fold solves.

    Returns
    -------
    MultinomialCrossValidation
        Per fold a :class:`glru.held_out.MulticlassOutcome` whose ``classes`` are the codes of
        its training rows, ``lower``/``upper`` per-class score bounds (from the pairwise ones,
        s_k = (1/K)Σ_l (s_k − s_l) since Σ_k s_k = 0), ``winner`` the certified arg-max,
        ``values`` the final centre's scores, and ``coef``/``intercept`` when the fold was
        solved or ``need == "values"`` (coef of shape (1, d) for a two-class fold: scikit-learn's
        binary model).
    """
    if need not in ("labels", "values"):
        raise ValueError(f"need must be 'labels' or 'values', got {need!r}.")
    return _Engine(X, codes, n_classes, folds, lam_for, fit_intercept, need,
                   dict(n_jobs=n_jobs, verbose=verbose, pre_dispatch=pre_dispatch)).run()


# --------------------------------------------------------------------------- one solve
def _polished(problem, z, newton):
    """Newton steps until the gradient stops shrinking (with ``newton``: chord steps with the dense
    Hessian factorized at z). Polished here, unconditionally: solve_multinomial(polish=True) keeps
    the unpolished point when the polished one's sound gap is not smaller, a comparison of rounding
    noise there. The factorization ``newton`` kept from its steps may be from an earlier point or
    another problem (the full fit's), whose chord steps stopped short of rounding level (5-fold
    digits: ‖g‖ 1e-12 to 2e-8 where rounding level is 4e-17); one at z gets there in one or two."""
    if newton is None:
        return newton_polish(z, problem.grad, problem.hessp, cg_rtol=1e-10)
    newton._factorize(z)
    return newton_polish(z, problem.grad, problem.hessp, newton_solve=lambda g, _: newton.factor.solve(g))


def _dense_pays_off(X, K, p, n_folds):
    """Whether the dense p × p Hessians (the full fit's Newton steps, S and its inverse, the solved
    folds': about ``DENSE_HESSIANS`` of n·p² + p³/3 multiply-adds) are estimated to cost at most
    ``DENSE_ADVANTAGE`` times the folds' conjugate gradients instead (``NEWTON_CG_PASSES`` pairs of
    products with X for K classes, per fold). The passes are a guess that ill-conditioning (large
    C) makes far too low, hence the wide margin. Measured with them / without, and the ratio of the
    estimates, 3 classes: one-hot 330 × 1126 (p = 3380), 4 folds, 18.9 / 2.7 s, 75 (scikit-learn
    1.5 s; the same scores); dense 593 × 505 at C = 10⁴, 6.8 / 4.8 s, 14; sparse 1876 × 159 at
    C = 10⁴, 13 / 429 s, 11; dense 1158 × 259 at C = 100, 1.8 / 3.5 s, 4.8; dense 1199 × 222,
    1.1 / 2.4 s, 3.2. Leave-one-out on digits (p = 649, 1797 folds) keeps them."""
    if p > NEWTON_MAX_DIM:
        return False
    n = X.shape[0]
    dense = DENSE_HESSIANS * DENSE_SECONDS * (n * p * p + p ** 3 / 3)
    return dense <= DENSE_ADVANTAGE * n_folds * NEWTON_CG_PASSES * 2 * K * product_seconds(X)


def _solve_fold(X, codes, n_classes, lam, fit_intercept, coef, intercept, dense=True, preconditioner=None,
                with_factor=False, polish=True, tol=None):
    """A fold's exact optimum on the classes it holds (codes 0..n_classes−1), from (coef,
    intercept): Newton steps with the dense Hessian if ``dense`` and K·d is small enough
    (NEWTON_MAX_DIM), else :func:`solve_multinomial` to TOL_FULL; then polished (Newton steps
    until the gradient stops shrinking: rounding level). Two classes: scikit-learn's binary
    model, the two-class multinomial one with λ doubled. ``preconditioner``: a factorization of
    a neighbouring problem's Hessian (another solve's, ``with_factor``) for the first Newton
    steps. Returns (coef, intercept) of shape (n_classes, d), (n_classes,), centred, and with
    ``with_factor`` the factorization its polish took at the solution (None without dense
    Hessians). ``polish=False``: the point where the steps reached TOL_FULL, not polished (a
    second call from it polishes it). ``tol``: a relative gap above TOL_FULL where the solve is
    only a start (not polished; ``with_factor``, the factorization is then taken where it ends)."""
    # folds run in parallel through joblib (n_jobs); inside one, BLAS threads cost more than they
    # give (digits raw, leave-one-out: 21 s of fold solves with 2 threads, 8 s with one)
    with single_threaded_blas():
        *solution, factor = _solve_fold_in_thread(X, codes, n_classes, lam, fit_intercept, coef, intercept, dense,
                                                  preconditioner, polish, TOL_FULL if tol is None else tol,
                                                  with_factor)
    return (*solution, factor) if with_factor else tuple(solution)


def _solve_fold_in_thread(X, codes, n_classes, lam, fit_intercept, coef, intercept, dense, preconditioner, polish, tol,
                          with_factor):
    lam = 2.0 * lam if n_classes == 2 else lam
    problem = MultinomialProblem(X, codes, n_classes, lam, fit_intercept)
    z = problem.pack(coef - coef.mean(axis=0), intercept)
    newton = _DenseNewton(problem, preconditioner) if dense and z.size <= NEWTON_MAX_DIM else None
    done = False
    if newton is not None:
        z, done = newton.minimize(z, tol)
    if not done:
        result = solve_multinomial(X, codes, n_classes, lam, fit_intercept, *problem.unpack(z), tol=tol,
                                   polish=False)
        z = problem.pack(result.coef, result.intercept)
    rough = tol > TOL_FULL
    if polish and not rough:
        z = _polished(problem, z, newton)
    elif rough and with_factor and newton is not None:
        newton._factorize(z)
    coef, intercept = problem.unpack(z)
    if not problem.duality_gap(coef - coef.mean(axis=0), intercept).relative_gap <= max(tol, TOL_SANE):
        # far from the optimum after all that (not seen in tests): an exact refit's cold solve
        cold = solve_multinomial(X, codes, n_classes, lam, fit_intercept, tol=TOL_FULL, polish=False)
        z_cold = _polished(problem, problem.pack(cold.coef, cold.intercept), None)
        if problem.fun(z_cold) < problem.fun(z):
            coef, intercept = problem.unpack(z_cold)
    coef = coef - coef.mean(axis=0)
    intercept = intercept - intercept.mean() if fit_intercept else np.zeros(n_classes)
    return coef, intercept, (newton.factor if newton is not None else None)


class _DenseNewton:
    """Newton's method on a (small) :class:`MultinomialProblem` with its dense Hessian. A
    factorization is kept and preconditions conjugate gradients on the Hessian's products at
    later points; it is refreshed only where they do not converge in PRECONDITIONED_CG_STEPS."""

    def __init__(self, problem, factor=None):
        self.problem = problem
        self.penalty = _penalty(problem.K, problem.d, problem.fit_intercept, problem.lam)
        self.precondition = _preconditioning_pays_off(problem)
        # (another problem's factorization only preconditions: a fresh one for exact steps)
        usable = factor is not None and self.precondition and factor.dim == self.penalty.shape[0]
        self.factor = factor if usable else None

    def _factorize(self, z):
        problem = self.problem
        coef, intercept = problem.unpack(z)
        P = _LOSS.probabilities(problem.scores(coef, intercept))
        H = _loss_hessian(problem.X, P, problem.basis, problem.fit_intercept) / problem.n + self.penalty
        self.factor = _Factor(H)

    def newton_step(self, g, z, rtol):
        """−H(z)⁻¹g to relative residual ``rtol``: conjugate gradients on H(z)'s products,
        preconditioned by the kept factorization (a Hessian at an earlier point); a fresh
        factorization at z where they do not get there in PRECONDITIONED_CG_STEPS, or where it
        costs less than they would (``precondition`` false: the step is then exact). Forming the
        Hessian costs n·p² against 4·n·K·d for a product: digits with a StandardScaler (p = 649),
        a fold's Newton steps from the full fit took 4–7 factorizations and 11–20 chord steps;
        these, 1–2 factorizations (none with the full fit's) and 5–8 steps of 24–75 products."""
        if self.factor is not None and self.precondition:
            problem = self.problem
            hessian = LinearOperator((z.size, z.size), matvec=lambda v: problem.hessp(z, v), dtype=float)
            preconditioner = LinearOperator((z.size, z.size), matvec=self.factor.solve, dtype=float)
            step, info = cg(hessian, -g, rtol=rtol, maxiter=PRECONDITIONED_CG_STEPS, M=preconditioner)
            if info == 0 and np.all(np.isfinite(step)):
                return step
        self._factorize(z)
        return -self.factor.solve(g)

    def minimize(self, z, tol=TOL_FULL):
        """Newton steps with a backtracking (Armijo) line search until the relative duality gap is
        ≤ ``tol``, to relative residuals from :func:`glru.fold_steps.forcing_terms`; from a far
        start (:meth:`_rough_start`) L-BFGS first. Returns (the last point, whether it got
        there); every step lowers the objective, so the last point is the best."""
        problem = self.problem
        evaluation = self._gap(z)
        if evaluation.converged(tol):
            return z, True
        z, check = (self._rough_start(z), True) if evaluation.relative_gap > COLD_GAP else (z, False)
        value, g = problem.fun(z), problem.grad(z)
        last, decrement = None, np.inf
        for _ in range(DAMPED_NEWTON_STEPS):
            norm = float(np.linalg.norm(g))
            # the last step's decrement −gᵀs/2, scaled by the gradient's contraction², estimates
            # P(z) − P* (a lower bound of the gap): the gap (2 ms on digits, 8 a solve) is only
            # evaluated where that estimate does not rule convergence out
            if check or (last is not None and
                         decrement * (norm / last[0]) ** 2 <= GAP_CHECK_DECREMENT * tol * abs(value)):
                if self._gap(z).converged(tol):
                    return z, True
            check = False
            rtol = forcing_terms([norm], [last])[0]
            try:
                step = self.newton_step(g, z, rtol)
            except (np.linalg.LinAlgError, ValueError):
                return z, False
            slope = float(g @ step)
            if not (np.all(np.isfinite(step)) and slope < 0):
                return z, False
            t = 1.0
            while True:
                new_value = problem.fun(z + t * step)
                if new_value <= value + 1e-4 * t * slope:
                    break
                t *= 0.5
                if t < 1e-10:
                    return z, False
            z = z + t * step
            value, g, last, decrement = new_value, problem.grad(z), (norm, rtol), -0.5 * slope
        return z, False

    def _gap(self, z):
        coef, intercept = self.problem.unpack(z)
        return self.problem.duality_gap(coef - coef.mean(axis=0), intercept)

    def _rough_start(self, z):
        """L-BFGS steps (SciPy's L-BFGS-B, no bounds) from a start whose relative gap exceeds
        COLD_GAP (zeros: a full fit) until it is at most ROUGH_GAP (checked every GAP_EVERY of
        them), or after ROUGH_STEPS: each costs a gradient, where Newton's first steps from afar
        each need a fresh Hessian (digits with a StandardScaler: the full fit 0.25 → 0.15 s, 20 of
        them to a gap of 0.1). Any point is a valid start for the Newton steps that follow."""
        problem = self.problem
        count = [0]

        def check(x):
            count[0] += 1
            if count[0] % GAP_EVERY == 0 and self._gap(x).relative_gap <= ROUGH_GAP:
                raise StopIteration

        result = scipy.optimize.minimize(problem.fun, z, jac=problem.grad, method="L-BFGS-B", callback=check,
                                         options=dict(maxiter=ROUGH_STEPS, gtol=0.0, ftol=0.0))
        return result.x if problem.fun(result.x) <= problem.fun(z) else z


def _preconditioning_pays_off(problem):
    """Whether :class:`_DenseNewton` keeps a factorization to precondition conjugate gradients:
    where a fresh Hessian (n·p² + p³/3) costs more than the most they take (PRECONDITIONED_CG_STEPS
    products, four passes over X's entries for K classes each). Wine with a StandardScaler (p = 41)
    factors afresh at every step; digits (p = 649) keeps its factorizations."""
    p = problem.K * problem.d + (problem.K - 1 if problem.fit_intercept else 0)
    stored = problem.X.nnz if sp.issparse(problem.X) else problem.X.size
    return problem.n * p * p + p ** 3 / 3 > PRECONDITIONED_CG_STEPS * 4 * stored * problem.K


# --------------------------------------------------------------------------- the engine
class _Engine:
    def __init__(self, X, codes, K, folds, lam_for, fit_intercept, need, parallel):
        if sp.issparse(X):
            X = X.tocsr()
        self.X, self.codes, self.K, self.folds = X, np.asarray(codes, dtype=np.intp), int(K), folds
        self.lam_for, self.fit_intercept, self.need, self.parallel = lam_for, bool(fit_intercept), need, parallel
        self.verbose = parallel["verbose"]
        self.n, self.d = X.shape
        self.p = self.K * self.d + (self.K - 1 if self.fit_intercept else 0)
        self.block = max(1, BLOCK_FLOATS // (self.n * self.K))   # folds per block
        self.sq_norms = row_norms_sq(X)
        self.norms_up = np.sqrt(self.sq_norms) * (1.0 + 2 * (self.d + 8) * EPS)   # ≥ ‖x_i‖ computed
        counts = np.bincount(self.codes, minlength=self.K)
        self.dropped, self.present = [], []
        for f in folds:  # rows outside a fold's training rows: its held-out rows, and any the splitter leaves out
            dropped = f.outside_training(self.n)
            self.dropped.append(dropped)
            left = counts - np.bincount(self.codes[dropped], minlength=self.K)
            self.present.append(np.flatnonzero(left > 0))
        if any(p.size < 2 for p in self.present):
            raise ValueError("every fold's training rows must hold at least two classes")
        # the full problem: its packing z = (W.ravel(), u), b = B u, is every fold's
        self.problem = MultinomialProblem(X, self.codes, self.K, lam_for(self.n), self.fit_intercept)
        self.onehot, self.basis = self.problem.onehot, self.problem.basis

    # ---- driver
    def run(self):
        clock = _Clock()
        lam = self.problem.lam
        self.a = self.n * lam
        self.penalty = _penalty(self.K, self.d, self.fit_intercept, self.a)
        dense = self.dense = _dense_pays_off(self.X, self.K, self.p, len(self.folds))
        if dense:
            # damped Newton steps with the dense Hessian from 0 (quadratic convergence, and the Hessian at
            # the optimum is needed anyway: digits 0.45 s, where trust-region Newton–CG to TOL_HUB took 1.2 s
            # of 1700 products), trust-region Newton–CG where they stall; then polished to rounding level.
            # One BLAS thread on small data, as the folds' solves (digits: 0.96 s on two)
            with blas_for(self.X, self.p):
                z, done = _DenseNewton(self.problem).minimize(self.problem.pack(np.zeros((self.K, self.d)),
                                                                                np.zeros(self.K)))
                self.W0, self.b0 = self.problem.unpack(z)
                if not done:
                    full = solve_multinomial(self.X, self.codes, self.K, lam, self.fit_intercept, self.W0, self.b0,
                                             tol=TOL_HUB, polish=False)
                    self.W0, self.b0 = full.coef, full.intercept
                self._polish_full()
        else:  # solve_multinomial's own polishing
            full = solve_multinomial(self.X, self.codes, self.K, lam, self.fit_intercept, tol=TOL_FULL, polish=False)
            self.W0, self.b0 = polish_multinomial(full.problem, full.coef, full.intercept)
        self.W0 = self.W0 - self.W0.mean(axis=0)
        self.b0 = self.b0 - self.b0.mean() if self.fit_intercept else np.zeros(self.K)
        self.z0 = self.problem.pack(self.W0, self.b0)
        self._at(self.z0)
        with np.errstate(divide="ignore"):
            self.inverse_P0T = 1.0 / np.ascontiguousarray(self.P0.T)
        clock.lap("full fit")
        complete = [k for k, p in enumerate(self.present) if p.size == self.K]
        self.hinv = self.S_factor = None
        if dense:
            with blas_for(self.X, self.p):
                self.S = self._hessian(self.P0) + self.penalty
                self.S_factor = _Factor(self.S)
                self.hinv = _inverse(self.S_factor)
        clock.lap("hessian")
        outcomes = [None] * len(self.folds)
        centres = {}
        self.n_certified = 0
        with single_threaded_blas():  # many small products: threads cost more than they give
            for block in self._blocks(complete):
                self._run_block(block, outcomes, centres)
        self._say(f"certified {self.n_certified} of {sum(f.test.size for f in self.folds)} held-out predictions "
                  "at the centres")
        clock.lap("centres")
        to_solve = [k for k in range(len(self.folds)) if outcomes[k] is None]
        if to_solve:
            self._say(f"solving {len(to_solve)} of {len(self.folds)} folds")
            self._solve(to_solve, centres, outcomes)
        clock.lap("solves")
        return MultinomialCrossValidation(outcomes, self.W0, self.b0, self.n_certified, len(to_solve), clock.laps)

    def _at(self, z):
        """Probabilities P0, gradient g0 and objective value at z (sum form): W-part XᵀR + aW,
        u-part Bᵀ Σ_i R_i, R = P0 − one-hot."""
        W, b = self.problem.unpack(z)
        T = np.asarray(self.X @ W.T) + b
        self.P0 = _LOSS.probabilities(T)
        R = self.P0 - self.onehot
        g_W = (np.asarray(self.X.T @ R).T + self.a * W).ravel()
        self.g0 = np.concatenate([g_W, R.sum(axis=0) @ self.basis]) if self.fit_intercept else g_W
        self.loss0 = _LOSS.value(self.codes, T)
        self.loss_sum0 = float(self.loss0.sum())
        return self.loss_sum0 + 0.5 * self.a * float(np.sum(W * W))

    def _polish_full(self):
        """Newton steps on the full problem with its dense Hessian (backtracking on the
        objective) until the gradient stops shrinking: the optimum to rounding level."""
        z = self.problem.pack(self.W0 - self.W0.mean(axis=0), self.b0 - self.b0.mean())
        value = self._at(z)
        g = self.g0
        for _ in range(FULL_NEWTON_STEPS):
            H = self._hessian(self.P0) + self.penalty
            try:
                step = -_Factor(H).solve(g)
            except (np.linalg.LinAlgError, ValueError):
                break
            t, accepted = 1.0, False
            while t > 1e-8:
                new_value = self._at(z + t * step)
                if new_value <= value or np.linalg.norm(self.g0) < np.linalg.norm(g):
                    accepted = True
                    break
                t *= 0.5
            if not accepted or not np.linalg.norm(self.g0) < np.linalg.norm(g):
                break
            z, g, value = z + t * step, self.g0, new_value
            if np.linalg.norm(t * step) <= 4 * EPS * (1.0 + np.linalg.norm(z)):
                break
        self.W0, self.b0 = self.problem.unpack(z)

    def _blocks(self, indices):
        """Blocks of folds sharing a fold solver kind: Woodbury for folds with the same number of
        left-out rows s (s·K ≤ p/2, batched), a dense factorization or CG one fold at a time."""
        groups = {}
        for k in indices:
            s = self.dropped[k].size
            kind = ("woodbury", s) if self.hinv is not None and 0 < s * self.K <= max(self.p // 2, self.K) else \
                ("dense", k) if self.hinv is not None else ("cg", k)
            groups.setdefault(kind, []).append(k)
        for kind, members in groups.items():
            step = self.block if kind[0] == "woodbury" else 1
            for start in range(0, len(members), step):
                yield kind[0], members[start:start + step]

    def _run_block(self, block, outcomes, centres):
        """Newton step, chord steps and certificates for one block of folds; folds neither
        certified nor settled at rounding level get their best iterate as centre for a solve.

        Every step is safeguarded: a point where the fold's objective is higher than at the
        last accepted one (the full optimum to start with; near separation with weak
        regularization the Newton step can overshoot by orders of magnitude) is replaced by the
        midpoint, up to MAX_HALVINGS times; then the fold is solved from its last accepted point."""
        kind, ks = block
        solver = _FoldSolvers(self, kind, ks)
        m = len(ks)
        state = self._block_state(ks)
        n_T, lam_T = state.n_T, state.lam_T
        # one Newton step from the full optimum, with the fold's gradient there
        base = np.tile(self.z0, (m, 1))                      # last accepted point of each fold
        base_primal = np.array([(self.loss_sum0 - self.loss0[self.dropped[k]].sum()) / t for k, t in zip(ks, n_T)]) \
            + 0.5 * lam_T * float(np.sum(self.W0 * self.W0))   # the fold's objective at the full optimum
        Z = base - solver.apply(self._fold_gradient_at_optimum(ks, n_T * lam_T), np.arange(m))
        accepted = np.zeros(m, dtype=int)                    # accepted centres per fold
        halvings = np.zeros(m, dtype=int)
        active = np.arange(m)                                # positions in the block still iterated
        previous = np.full(m, np.inf)
        labels = self.need == "labels"
        for _ in range(CHORD_MAX_STEPS + MAX_HALVINGS):
            Z[active] = self._centred(Z[active])
            ev = state.evaluate(active, Z[active])
            uphill = ~(ev.primal <= base_primal[active] + ev.allowance + 4 * EPS * np.abs(base_primal[active]))
            retry = active[uphill]
            halvings[retry] += 1
            give_up = retry[halvings[retry] > MAX_HALVINGS]
            Z[give_up] = base[give_up]
            retry = retry[halvings[retry] <= MAX_HALVINGS]
            Z[retry] = base[retry] + 0.5 * (Z[retry] - base[retry])
            ok = np.flatnonzero(~uphill)
            active, ev = active[ok], ev.subset(ok)
            base[active], base_primal[active] = Z[active], ev.primal
            accepted[active] += 1
            halvings[active] = 0
            finished = np.zeros(active.size, dtype=bool)
            if labels and active.size:  # certified: done (at a centre, or after more chord steps: retrained)
                winners = state.bounds(active, ev)
                finished = np.array([bool(np.all(winners[pos] >= 0)) for pos in active])
                for pos in active[finished]:
                    if accepted[pos] <= CENTRE_STEPS:
                        self.n_certified += winners[pos].size
                    outcomes[ks[pos]] = state.outcome(pos, solved=accepted[pos] > CENTRE_STEPS)
            rest = np.flatnonzero(~finished)
            active, ev = active[rest], ev.subset(rest)
            if active.size:
                steps = solver.apply(state.gradients(ev), active)
                sizes = np.linalg.norm(steps, axis=1)
                stalled = ~np.all(np.isfinite(steps), axis=1) | ~(sizes < previous[active]) | \
                    (sizes <= 4 * EPS * (1.0 + np.linalg.norm(Z[active], axis=1)))
                # steps that stopped shrinking, at a gap at rounding level: the iterate is the optimum
                # to rounding (what polish_multinomial's Newton steps leave), its values are exact. (A
                # gap at rounding level alone pins W only to √(2G/λ).) A fold whose steps stall above
                # rounding level, or contract slowly before it, is solved from its iterate
                settled = stalled & ev.rounded
                if settled.any():
                    done = np.flatnonzero(settled)
                    if not labels:
                        state.bounds(active[done], ev.subset(done))
                    for j, pos in zip(done, active[done]):
                        outcomes[ks[pos]] = state.outcome(pos, solved=True, ev=ev, row=j)
                moving = ~stalled & (ev.rounded | (sizes <= CHORD_CONTRACTION * previous[active]))
                previous[active[moving]] = sizes[moving]
                Z[active[moving]] -= steps[moving]
                active = active[moving]
            active = np.union1d(active, retry)
            if active.size == 0:
                break
        for pos in range(m):
            if outcomes[ks[pos]] is None:
                centres[ks[pos]] = self.problem.unpack(base[pos])

    # ---- the solves
    def _solve(self, indices, centres, outcomes):
        tasks = []
        for k in indices:
            classes = self.present[k]
            W, b = centres.get(k, (self.W0, self.b0))
            W, b = W[classes], b[classes]
            W, b = W - W.mean(axis=0), b - b.mean()
            train = self.folds[k].train
            local = np.searchsorted(classes, self.codes[train])
            # (the full Hessian at the optimum preconditions its Newton steps; sum form: CG is blind to the
            # scale. Leave-one-out on raw digits factorized each of its 141 solved folds twice, now once)
            tasks.append(delayed(_solve_fold)(self.X[train], local, classes.size, self.lam_for(train.size),
                                              self.fit_intercept, W, b, self.dense, self.S_factor))
        solved = Parallel(**self.parallel)(tasks)
        complete = [(k, s) for k, s in zip(indices, solved) if self.present[k].size == self.K]
        for block in range(0, len(complete), self.block):
            part = complete[block:block + self.block]
            ks = [k for k, _ in part]
            m = len(ks)
            state = self._block_state(ks)
            Z = np.array([self.problem.pack(*s) for _, s in part])
            ev = state.evaluate(np.arange(m), Z)
            state.bounds(np.arange(m), ev)
            for pos, k in enumerate(ks):
                outcomes[k] = state.outcome(pos, solved=True, ev=ev, row=pos)
        for k, (coef, intercept) in zip(indices, solved):
            if self.present[k].size < self.K:
                outcomes[k] = self._partial_outcome(k, coef, intercept)

    def _partial_outcome(self, k, coef, intercept):
        """A fold whose training rows miss a class, solved on the classes present: certified
        bounds at its solution (:func:`solved_fold_outcome`)."""
        classes, fold = self.present[k], self.folds[k]
        train = fold.train
        return solved_fold_outcome(self.X[train], np.searchsorted(classes, self.codes[train]), classes,
                                   self.lam_for(train.size), self.fit_intercept, coef, intercept, self.X[fold.test],
                                   self.norms_up[train], self.norms_up[fold.test])

    # ---- coordinates and the full problem
    def _block_state(self, ks):
        n_T = np.array([self.folds[k].train.size for k in ks])
        return _BlockState(self, ks, n_T, np.array([self.lam_for(int(t)) for t in n_T], dtype=float))

    def _unpack_many(self, Z):
        """(W (m, K, d), b (m, K)) of the rows of Z, both centred over classes."""
        m = Z.shape[0]
        W = Z[:, :self.K * self.d].reshape(m, self.K, self.d)
        W = W - W.mean(axis=1, keepdims=True)
        if not self.fit_intercept:
            return W, np.zeros((m, self.K))
        b = Z[:, self.K * self.d:] @ self.basis.T
        return W, b - b.mean(axis=1, keepdims=True)

    def _centred(self, Z):
        """Project W onto Σ_k w_k = 0, where every fold's optimum is (it cannot move away from it)."""
        Z = Z.copy()
        m = Z.shape[0]
        W = Z[:, :self.K * self.d].reshape(m, self.K, self.d)
        Z[:, :self.K * self.d] = (W - W.mean(axis=1, keepdims=True)).reshape(m, -1)
        return Z

    def _fold_gradient_at_optimum(self, ks, a_T):
        """∇F_T(z0) = ∇F(z0) − Σ_{i∈V} A_iᵀ(p_i − e_{y_i}) + (a_T − a) P_W z0, per fold of a block
        (:meth:`_blocks`: the folds have equal numbers of left-out rows)."""
        out = np.tile(self.g0, (len(ks), 1))
        Kd = self.K * self.d
        rows = np.concatenate([self.dropped[k] for k in ks])
        XV = as_dense(self.X[rows]).reshape(len(ks), -1, self.d)
        RV = (self.P0[rows] - self.onehot[rows]).reshape(len(ks), -1, self.K)
        out[:, :Kd] -= np.einsum("msk,msa->mka", RV, XV).reshape(len(ks), Kd)
        if self.fit_intercept:
            out[:, Kd:] -= RV.sum(axis=1) @ self.basis
        out[:, :Kd] += (a_T - self.a)[:, None] * self.z0[:Kd]
        return out

    def _hessian(self, P, rows=None):
        """Σ_{i ∈ rows} A_iᵀ D_i A_i in packed coordinates (no penalty), D_i = diag(p_i) − p_i p_iᵀ."""
        X = self.X if rows is None else self.X[rows]
        return _loss_hessian(X, P if rows is None else P[rows], self.basis, self.fit_intercept)

    def _say(self, message):
        if self.verbose:
            print(f"[glru multinomial cross-validation] {message}", flush=True)


def _loss_hessian(X, P, basis, fit_intercept):
    """Σ_i A_iᵀ (diag(p_i) − p_i p_iᵀ) A_i (the loss part of the sum-form Hessian) in packed
    coordinates z = (W.ravel(), u), b = B u, for rows X (dense or CSR) with probabilities P."""
    n_rows, d = X.shape
    K = P.shape[1]
    Xa = with_constant_column(X) if fit_intercept else X
    da = Xa.shape[1]
    if not sp.issparse(Xa):  # Σ_i (diag(p_i) − p_i p_iᵀ) ⊗ x̃_i x̃_iᵀ: one product for each part
        Y = (P[:, :, None] * Xa[:, None, :]).reshape(n_rows, K * da)
        Ht = -(Y.T @ Y).reshape(K, da, K, da)
        # the diagonal blocks Σ_i p_ik x̃_i x̃_iᵀ are the blocks of X̃ᵀY (digits: 4.4 → 1 ms against K products)
        diagonal = (Xa.T @ Y).reshape(da, K, da)
        for k in range(K):
            Ht[k, :, k, :] += diagonal[:, k, :]
    else:  # block by block, X̃ᵀ diag(p_k(δ_kj − p_j)) X̃
        Ht = np.zeros((K, da, K, da))
        for k in range(K):
            for j in range(k, K):
                block = sp.csr_matrix(Xa.multiply((P[:, k] * ((k == j) - P[:, j]))[:, None])).T @ Xa
                block = as_dense(block)
                Ht[k, :, j, :] = block
                Ht[j, :, k, :] = block.T
    if not fit_intercept:
        return Ht.reshape(K * d, K * d)
    HWW = Ht[:, :d, :, :d].reshape(K * d, K * d)
    HWb = Ht[:, :d, :, d].reshape(K * d, K) @ basis
    Hbb = basis.T @ Ht[:, d, :, d] @ basis
    return np.block([[HWW, HWb], [HWb.T, Hbb]])


class _Factor:
    """A symmetric positive (semi)definite matrix, factored for solves: Cholesky, or, where
    rounding leaves it indefinite (curvature underflowing near separation), its eigenvalues
    clipped at a small positive floor (a modified Newton step; every step is still tested)."""

    def __init__(self, H):
        H = 0.5 * (H + H.T)
        self.dim = H.shape[0]
        try:
            self.cholesky, self.eigen = scipy.linalg.cho_factor(H), None
        except np.linalg.LinAlgError:
            values, vectors = np.linalg.eigh(H)
            floor = max(float(np.abs(values).max(initial=0.0)) * 1e3 * EPS, np.finfo(float).tiny)
            self.cholesky, self.eigen = None, (np.maximum(values, floor), vectors)

    def solve(self, g):
        if self.cholesky is not None:
            if g.ndim == 1:  # two triangular solves: 0.1 ms for p = 649, where LAPACK's potrs takes 0.3–0.4
                factor, lower = self.cholesky
                half = scipy.linalg.blas.dtrsv(factor, g, trans=0 if lower else 1, lower=lower)
                return scipy.linalg.blas.dtrsv(factor, half, trans=1 if lower else 0, lower=lower)
            return scipy.linalg.cho_solve(self.cholesky, g, check_finite=False)  # (steps are checked)
        values, vectors = self.eigen
        return vectors @ ((vectors.T @ g) / (values if g.ndim == 1 else values[:, None]))


def _inverse(factor):
    """The symmetric inverse of a :class:`_Factor`'s matrix."""
    inv = factor.solve(np.eye(factor.dim))
    return 0.5 * (inv + inv.T)


def _penalty(K, d, fit_intercept, weight):
    """The penalty's Hessian in packed coordinates, weight·P_W: weight on the K·d coefficients of
    W, 0 on the intercept's K − 1."""
    diagonal = np.zeros(K * d + (K - 1 if fit_intercept else 0))
    diagonal[:K * d] = weight
    return np.diag(diagonal)


# --------------------------------------------------------------------------- fold Hessians
class _FoldSolvers:
    """g ↦ H_T⁻¹ g for the folds of a block, H_T the fold's Hessian at the full optimum.

    - ``woodbury`` (folds with s left-out rows, batched): H_T = S − A_Vᵀ D_V A_V, so
      H_T⁻¹ = S⁻¹ + Q E Qᵀ with Q = S⁻¹A_Vᵀ (p × sK), E = D_V (I − G D_V)⁻¹, G = A_V Q.
    - ``dense`` (one fold): H_T formed by the downdate and factored.
    - ``cg`` (one fold, p too large for a dense S): conjugate gradients on H_T's products.
    """

    def __init__(self, engine, kind, ks):
        self.engine, self.kind, self.ks = engine, kind, ks
        e = engine
        K, d, p = e.K, e.d, e.p
        if kind == "woodbury":
            m = len(ks)
            rows = np.concatenate([e.dropped[k] for k in ks])
            s = e.dropped[ks[0]].size
            Hinv = e.hinv
            HW = Hinv[:, :K * d].reshape(p * K, d)                       # [(π, k), a]
            XR = e.X[rows]
            Q = np.asarray(XR @ HW.T).reshape(rows.size, p, K)           # S⁻¹ (e_k ⊗ x_r, ·)
            if e.fit_intercept:
                Q += (Hinv[:, K * d:] @ e.basis.T)[None]                 # + S⁻¹ (0, Bᵀe_k)
            Q = Q.reshape(m, s, p, K).transpose(0, 2, 1, 3).reshape(m, p, s * K)   # columns (v, k)
            XV = as_dense(XR).reshape(m, s, d)
            QW = Q[:, :K * d, :].reshape(m, K, d, s * K)
            G = np.einsum("mva,mjax->mvjx", XV, QW, optimize=True)      # (m, s, K, sK)
            if e.fit_intercept:
                G = G + np.einsum("ju,mux->mjx", e.basis, Q[:, K * d:, :])[:, None]
            G = G.reshape(m, s * K, s * K)
            PV = e.P0[rows].reshape(m, s, K)
            D = np.zeros((m, s, K, s, K))
            for v in range(s):
                D[:, v, :, v, :] = PV[:, v, :, None] * np.eye(K) - PV[:, v, :, None] * PV[:, v, None, :]
            D = D.reshape(m, s * K, s * K)
            M = np.eye(s * K) - G @ D
            with np.errstate(all="ignore"):
                try:
                    self.E = D @ np.linalg.inv(M)
                except np.linalg.LinAlgError:
                    self.E = np.stack([D[j] @ np.linalg.pinv(M[j]) for j in range(m)])
            self.Q = Q
        elif kind == "dense":
            self.factor = _Factor(e.S - e._hessian(e.P0, e.dropped[ks[0]]))
        else:  # cg: products with the fold's Hessian at the full optimum, held-out rows masked
            self.mask = np.ones(e.n)
            self.mask[e.dropped[ks[0]]] = 0.0

    def apply(self, G, positions):
        """Rows of G (gradients of the block's folds at ``positions``) ↦ rows of H_T⁻¹G."""
        if self.kind == "woodbury":
            e = self.engine
            out = G @ e.hinv
            Q = self.Q[positions]
            x = np.einsum("mpx,mp->mx", Q, G)
            x = np.einsum("mxy,my->mx", self.E[positions], x)
            return out + np.einsum("mpx,mx->mp", Q, x)
        if self.kind == "dense":
            return self.factor.solve(G.T).T
        return np.array([self._cg(g) for g in G])

    def _cg(self, g):
        e = self.engine
        K, d = e.K, e.d
        P = e.P0
        mask = self.mask

        def hessp(v):
            W = v[:K * d].reshape(K, d)
            dT = np.asarray(e.X @ W.T)
            if e.fit_intercept:
                dT = dT + e.basis @ v[K * d:]
            PV = P * dT
            M = (PV - P * PV.sum(axis=1, keepdims=True)) * mask[:, None]
            hW = np.asarray(e.X.T @ M).T + e.a * W
            if not e.fit_intercept:
                return hW.ravel()
            return np.concatenate([hW.ravel(), e.basis.T @ M.sum(axis=0)])
        op = LinearOperator((e.p, e.p), matvec=hessp, dtype=float)
        step, _ = cg(op, g, rtol=1e-10, maxiter=20 * e.p)
        return step


# --------------------------------------------------------------------------- certificates
class _Evaluation:
    """Per-fold quantities at a block's current centres (rows = the evaluated folds)."""

    def __init__(self, **fields):
        self.__dict__.update(fields)

    def subset(self, rows):
        rows = np.asarray(rows, dtype=np.intp)
        return _Evaluation(**{name: value[rows] for name, value in self.__dict__.items()})


class _BlockState:
    """Certificates of a block of folds at given centres, computed with products of the full X
    (the left-out rows' terms set to 0, nothing copied), and the folds' outcomes.

    Arrays over a block are class-major, (folds, K, n): sums over classes are K vector adds."""

    def __init__(self, engine, ks, n_T, lam_T):
        self.e, self.ks, self.n_T, self.lam_T = engine, ks, n_T, lam_T
        m = len(ks)
        # (position, row) of every left-out row of the block's folds
        self.out_pos = np.concatenate([np.full(engine.dropped[k].size, j) for j, k in enumerate(ks)]).astype(np.intp)
        self.out_row = np.concatenate([engine.dropped[k] for k in ks]).astype(np.intp)
        self.W = np.zeros((m, engine.K, engine.d))
        self.b = np.zeros((m, engine.K))
        self.lower = [None] * m
        self.upper = [None] * m
        self.winner = [None] * m
        self.values = [None] * m

    def _left_out(self, positions):
        """(index into ``positions``, row) of the left-out rows of those folds."""
        where = np.full(len(self.ks), -1)
        where[positions] = np.arange(len(positions))
        j = where[self.out_pos]
        keep = j >= 0
        return j[keep], self.out_row[keep]

    def evaluate(self, positions, Z):
        """Sound duality gaps of the folds at ``positions`` at centres Z (rows), with the
        arithmetic of :meth:`glru.multinomial.MultinomialProblem.duality_gap` (mean form,
        KKT dual point made feasible by the class-sum enforcement), except that the rounding
        allowance's Σ_i |α_i|·(|X||W|ᵀ)_i is bounded by Cauchy–Schwarz, |x_i|·|w_k| ≤ ‖x_i‖‖w_k‖
        (a larger allowance, without another product with X); the folds' sum-form gradients
        (for the chord steps) are computed on demand."""
        e = self.e
        K, d, n = e.K, e.d, e.n
        W, b = e._unpack_many(Z)
        m = W.shape[0]
        n_T, lam = self.n_T[positions].astype(float), self.lam_T[positions]
        out_j, out_row = self._left_out(positions)
        T = _times_Xt(e.X, W.reshape(m * K, d)).reshape(m, K, n) + b[:, :, None]
        loss, A = _loss_and_alpha(T, e.codes)                    # A = e_y − softmax, (m, K, n)
        del T
        loss[out_j, out_row] = 0.0
        A[out_j, :, out_row] = 0.0
        raw = A
        if e.fit_intercept:
            A = _enforce_zero_class_sums(A, e.codes, out_j, out_row)
        XtA = _times_X(A.reshape(m * K, n), e.X).reshape(m, K, d)
        conj = _negentropy_stack(A, e.codes)                      # (m, n)
        w_norms = np.sqrt(np.einsum("mkd,mkd->mk", W, W)) * (1.0 + 2 * (d + 8) * EPS)
        absA = np.abs(A)
        abs_sum = np.einsum("mk,mk->m", (absA @ e.norms_up).reshape(m, K), w_norms) \
            + np.einsum("mk,mk->m", absA.sum(axis=2), np.abs(b))      # ≥ Σ_i |α_i|·(|X||W|ᵀ + |b|)_i
        abs_sum *= 1.0 + 4 * (n + K + 8) * EPS
        V = XtA / n_T[:, None, None]
        pen = 0.5 * lam * np.einsum("mkd,mkd->m", W, W)
        pen_conj = np.einsum("mkd,mkd->m", V, V) / (2 * lam)
        loss_sum, conj_sum = loss.sum(axis=1), conj.sum(axis=1)
        primal = loss_sum / n_T + pen
        dual = -conj_sum / n_T - pen_conj
        magnitude = (loss_sum + np.abs(conj).sum(axis=1) + abs_sum) / n_T + pen + pen_conj
        gap = sound_gap(primal, dual, magnitude, n_T, d + K)
        allowance = gap_allowance(magnitude, n_T, d + K)
        excess = gap - allowance
        rounded = np.isfinite(gap) & ((excess <= TOL_ROUNDING * np.abs(primal)) | (excess <= allowance))
        r_P = np.sqrt(2.0 * gap / lam) * _WIDEN                   # glru.bounds.primal_radius
        r_D = dual_radius(gap, n_T, Multinomial.smoothness)
        self.W[positions], self.b[positions] = W, b
        return _Evaluation(raw=raw, strength=n_T * lam, rounded=rounded, A=A, W=W, b=b, r_P=r_P, r_D=r_D, gap=gap,
                           primal=primal, allowance=allowance)

    def gradients(self, ev):
        """Sum-form gradients of the evaluated folds at their centres, (m, p): W-part
        a_T W − Σ_i α_i x_iᵀ (α before the class-sum enforcement), u-part −Bᵀ Σ_i α_i."""
        e = self.e
        m, K, n = ev.raw.shape
        gradient = (ev.strength[:, None, None] * ev.W - _times_X(ev.raw.reshape(m * K, n), e.X).reshape(m, K, e.d))
        gradient = gradient.reshape(m, K * e.d)
        if e.fit_intercept:
            gradient = np.hstack([gradient, -ev.raw.sum(axis=2) @ e.basis])
        return gradient

    def bounds(self, positions, ev):
        """Pairwise score-difference bounds at the held-out rows of the folds at ``positions``
        (rows of ``ev``), their certified arg-max and per-class bounds; returns the winners per
        position (dict)."""
        e = self.e
        tests = [e.folds[self.ks[pos]].test for pos in positions]
        pf = np.concatenate([np.full(t.size, j) for j, t in enumerate(tests)]).astype(np.intp)
        pr = np.concatenate(tests).astype(np.intp)
        left_out = [e.dropped[self.ks[pos]] for pos, t in zip(positions, tests) for _ in range(t.size)]
        lower, low, up, values = _pairwise_bounds(e, ev, pf, pr, left_out)
        winner = certified_argmax(lower, -lower.transpose(0, 2, 1))
        out, start = {}, 0
        for j, pos in enumerate(positions):
            rows = slice(start, start + tests[j].size)
            self.winner[pos], self.lower[pos], self.upper[pos] = winner[rows], low[rows], up[rows]
            self.values[pos] = values[rows]
            out[pos] = self.winner[pos]
            start += tests[j].size
        return out

    def outcome(self, pos, solved, ev=None, row=None):
        """The fold's outcome at its last evaluated centre (coefficients kept when solved or
        when the caller needs the fold models). With ``ev`` (and the fold's ``row`` in it), the
        centre is at rounding level: scores within :func:`_tie_band` of a row's largest count
        as ties with it (the first class wins, as numpy's arg-max of the exact scores)."""
        if ev is not None:
            e, fold = self.e, self.e.folds[self.ks[pos]]
            R = -ev.raw[row][:, fold.train].T                        # softmax − one-hot at the training rows
            z_norm = np.sqrt(np.sum(ev.W[row] ** 2) + np.sum(ev.b[row] ** 2))
            band = _tie_band(R, e.norms_up[fold.train], e.norms_up[fold.test], ev.strength[row], e.basis,
                             e.fit_intercept, e.d, z_norm)
            self.values[pos] = _snap_ties(self.values[pos], band)
        keep = solved or self.e.need == "values"
        coef = self.W[pos].copy() if keep else None
        intercept = self.b[pos].copy() if keep else None
        return MulticlassOutcome(np.arange(self.e.K), self.lower[pos], self.upper[pos], self.values[pos], solved,
                                 coef, intercept, winner=self.winner[pos])


def solve_fold(X, codes, n_classes, lam, fit_intercept, coef=None, intercept=None, preconditioner=None,
               with_factor=False, polish=True, tol=None):
    """:func:`_solve_fold` of one problem (codes 0..n_classes−1, λ of its rows), from (coef,
    intercept) or zeros, with dense Hessians where they pay off (:func:`_dense_pays_off`).
    ``with_factor``: also return the factorized Hessian at the solution, to pass as the
    ``preconditioner`` of its folds' solves: their Hessians at their own optima are close to it
    (digits with a StandardScaler, 5-fold: no fold factorizes before its polish, a fold's
    Newton steps 70 → 45 ms). ``polish``, ``tol``: see :func:`_solve_fold`."""
    d = X.shape[1]
    coef = np.zeros((n_classes, d)) if coef is None else coef
    intercept = np.zeros(n_classes) if intercept is None else intercept
    p = n_classes * d + (n_classes - 1 if fit_intercept else 0)
    return _solve_fold(X, codes, n_classes, lam, fit_intercept, coef, intercept, _dense_pays_off(X, n_classes, p, 1),
                       preconditioner, with_factor, polish, tol)


def centre_fold_outcome(X_train, codes, classes, lam, fit_intercept, coef, intercept, X_test, arc_pieces=None,
                        pairs="all"):
    """The :class:`MulticlassOutcome` certified at any centre (coef, intercept) of the problem on
    a fold's training rows (as :func:`solved_fold_outcome` takes it), not solved: the arg-max of
    its rows that the bounds leave open is unknown. ``arc_pieces``, ``pairs``: see
    :class:`MultinomialCertificate` (one piece and the predicted class's pairs suffice near the
    optimum)."""
    lower, upper = _fold_bounds(X_train, codes, classes, lam, fit_intercept, coef, intercept, X_test, arc_pieces,
                                pairs)[1:]
    low, up = _per_class(lower, upper)
    values = np.asarray(X_test @ coef.T) + intercept
    return MulticlassOutcome(classes, low, up, values, False, None, None, winner=certified_argmax(lower, upper))


def _fold_bounds(X_train, codes, classes, lam, fit_intercept, coef, intercept, X_test, arc_pieces=None, pairs="all"):
    """(problem, lower, upper): the fold's :class:`MultinomialProblem` (λ doubled for two classes:
    scikit-learn's binary model is the difference of the two rows) and the pairwise bounds
    certified at (coef, intercept) (``arc_pieces``, ``pairs``: see :class:`MultinomialCertificate`)."""
    lam = lam * (2.0 if classes.size == 2 else 1.0)
    problem = MultinomialProblem(X_train, codes, classes.size, lam, fit_intercept)
    certificate = MultinomialCertificate(problem, coef, intercept, arc_pieces=arc_pieces)
    return (problem, *certificate.pairwise_bounds(X_test, candidates=CANDIDATES, pairs=pairs))


def solved_fold_outcome(X_train, codes, classes, lam, fit_intercept, coef, intercept, X_test, train_norms=None,
                        test_norms=None):
    """The :class:`MulticlassOutcome` of a problem solved by :func:`_solve_fold` on its training
    rows (``codes`` 0..m−1 of the m ``classes`` they hold, λ of its rows): certified bounds at the
    solution (:class:`MultinomialCertificate`), its tie band, and its coef/intercept (two classes:
    scikit-learn's binary model, one row). ``*_norms``: upper bounds on the rows' norms as
    computed (built here if None)."""
    def norms_up(X):
        return np.sqrt(row_norms_sq(X)) * (1.0 + 2 * (X.shape[1] + 8) * EPS)

    train_norms = norms_up(X_train) if train_norms is None else train_norms
    test_norms = norms_up(X_test) if test_norms is None else test_norms
    # one sector of the log-ratio bounds, and route (b) for the pairs of the predicted class only: at
    # rounding level their width matters only where the values' tie band decides anyway (digits with a
    # StandardScaler: 0.11 → 0.01 s a fold for the sector, 42 → 21 ms for the pairs)
    problem, lower, upper = _fold_bounds(X_train, codes, classes, lam, fit_intercept, coef, intercept, X_test,
                                         arc_pieces=1, pairs="top")
    values = np.asarray(X_test @ coef.T) + intercept
    R = _LOSS.probabilities(problem.scores(coef, intercept)) - problem.onehot
    band = _tie_band(R, train_norms, test_norms, X_train.shape[0] * problem.lam, problem.basis, fit_intercept,
                     X_train.shape[1], np.sqrt(np.sum(coef ** 2) + np.sum(intercept ** 2)))
    values = _snap_ties(values, band)
    winner = certified_argmax(lower, upper)
    low, up = _per_class(lower, upper)
    low_top, up_top = per_class_through(lower, values.argmax(axis=1))  # (sound whichever class is used)
    low, up = np.maximum(low, low_top), np.minimum(up, up_top)
    if classes.size == 2:  # scikit-learn's binary model: one row, the difference of the two
        coef, intercept = (coef[1] - coef[0])[None, :], np.array([intercept[1] - intercept[0]])
    return MulticlassOutcome(classes, low, up, values, True, coef, intercept, winner=winner)


def _tie_band(R, train_norms, eval_norms, strength, basis, fit_intercept, d, z_norm):
    """Half-width of the band within which two scores of a row, read at a point polished to
    rounding level, cannot be told apart (the multinomial analogue of
    :func:`glru.bounds.zero_band`): the sum-form gradient there is zero up to its rounding error,
    γ Σ_i ‖r_i‖‖x_i‖ for W and γ Σ_i ‖r_i‖ for the intercept (r_i = softmax − one-hot of training
    row i, γ = 2(n + d + K + 32)u), so W is within that over a = n·λ of the optimum and b within
    the intercept's over the smallest curvature of Bᵀ(Σ_i diag(p_i) − p_i p_iᵀ)B; a score
    difference moves by √2 times those (‖x‖ for W). The iterations also stop at steps of
    4u(1 + ‖z‖) (:func:`glru.solver.newton_polish`'s floor): 16u(1 + ‖z‖)‖x̃‖ is added. Doubled
    for the exact refit's own, and capped at ``ZERO_BAND_CAP`` as the binary band. Exact ties (e.g.
    classes whose training rows are all 0, without intercept) then go to the first class, as in a
    cold exact solve that keeps the symmetry."""
    n, K = R.shape
    gamma = 2.0 * (n + d + K + 32) * EPS
    norms = np.sqrt(np.einsum("nk,nk->n", R, R))
    band = np.sqrt(2.0) * eval_norms * gamma * float(norms @ train_norms) / strength
    band = band + np.sqrt(2.0) * 16 * EPS * (1.0 + z_norm) * np.sqrt(eval_norms ** 2 + fit_intercept)
    if fit_intercept:
        P = R.copy()
        P[P < 0] += 1.0                                             # softmax back from r = p − e_y
        curvature = basis.T @ (np.diag(P.sum(axis=0)) - P.T @ P) @ basis
        smallest = np.linalg.eigvalsh(curvature)[0] if K > 1 else 0.0
        if smallest > 0:  # (no curvature: no intercept term, as glru.bounds.zero_band)
            band = band + np.sqrt(2.0) * gamma * norms.sum() / smallest
    return np.minimum(2.0 * band, ZERO_BAND_CAP)  # (the cap: see glru.bounds.zero_band)


def _snap_ties(values, band):
    """Scores within ``band`` (per row) of the row's largest set to it: numpy's arg-max then
    takes the first of them."""
    top = values.max(axis=1, keepdims=True)
    return np.where(values >= top - np.asarray(band)[:, None], top, values)


def _times_Xt(X, M):
    """M Xᵀ (dense result) for dense M and X dense or CSR."""
    if sp.issparse(X):
        return np.asarray(X @ M.T).T
    return M @ X.T


def _times_X(M, X):
    """M X (dense result) for dense M and X dense or CSR."""
    if sp.issparse(X):
        return np.asarray(X.T @ M.T).T
    return M @ X


def _loss_and_alpha(T, y):
    """ℓ_{y_i}(t_i) (m, n) as :meth:`Multinomial.value` computes it (m + log1p of the sum of the
    other terms, the first largest one left out), and α_i = e_{y_i} − softmax(t_i) with
    α_iy = Σ_{k≠y} q_ik (:func:`glru.multinomial._alpha_from_probabilities`), for scores
    T (m, K, n) (class-major). T is overwritten."""
    m, K, n = T.shape
    cols = np.arange(n)
    U = np.subtract(T, T[:, y, cols][:, None, :], out=T)
    peak = U.max(axis=1)                                        # ≥ 0 (u_y = 0)
    U -= peak[:, None, :]
    below = U < 0.0
    E = np.exp(U, out=U)                                        # exactly 1 at the largest terms
    # the terms other than the first largest: those below it, and the ties (each exactly 1)
    rest = np.where(below, E, 0.0).sum(axis=1) + (K - 1 - below.sum(axis=1))
    loss = peak + np.log1p(rest)
    E /= (1.0 + rest)[:, None, :]                               # softmax
    A = np.negative(E, out=E)
    A[:, y, cols] = 0.0
    A[:, y, cols] = -A.sum(axis=1)
    return loss, A


def _negentropy_stack(A, y):
    """:func:`glru.multinomial._negentropy` for a stack A (m, K, n) (q log q as a product with a
    logarithm: scipy's xlogy is several times slower; q = 0 gives 0)."""
    m, K, n = A.shape
    cols = np.arange(n)
    a_y = np.clip(A[:, y, cols], 0.0, 1.0)
    Qoff = np.maximum(-A, 0.0)
    Qoff[:, y, cols] = 0.0
    terms = np.log(np.maximum(Qoff, np.finfo(float).tiny))
    terms *= Qoff
    return terms.sum(axis=1) + (1.0 - a_y) * np.log1p(-np.minimum(a_y, 1.0 - EPS / 2)) * (a_y < 1.0)


def _probabilities_from_alpha(A, y, out_j=None, out_row=None):
    """q_i = e_{y_i} − α_i (clipped at 0) for a stack A (m, K, n); 0 at the left-out rows."""
    Q = -A
    cols = np.arange(A.shape[2])
    Q[:, y, cols] = 1.0 - A[:, y, cols]
    Q = np.maximum(Q, 0.0, out=Q)
    if out_j is not None:
        Q[out_j, :, out_row] = 0.0
    return Q


def _enforce_zero_class_sums(alpha, y, out_j, out_row):
    """:func:`glru.multinomial.enforce_zero_class_sums` for each fold of a stack α (m, K, n),
    over its training rows (the left-out rows have α = 0 and stay so), same arithmetic."""
    s = alpha.sum(axis=2)                                       # (m, K)
    under, over = s > 0, s < 0
    active = over.any(axis=1) & under.any(axis=1)
    if not active.any():
        return alpha
    alpha = alpha.copy()
    Q = _probabilities_from_alpha(alpha, y, out_j, out_row)
    # 1. proportional flows from the over-predicted classes l to the under-predicted ones k
    total = np.where(under, s, 0.0).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        phi = np.where(under[:, :, None] & over[:, None, :],
                       s[:, :, None] * (-s[:, None, :]) / np.where(total > 0, total, 1.0)[:, None, None], 0.0)
        Z = Q @ Q.transpose(0, 2, 1)
        flows = active & np.all((Z > 0) | (phi <= 0), axis=(1, 2))
        G = np.where((phi > 0) & flows[:, None, None], phi / Z, 0.0)   # (m, K_k, K_l)
    if flows.any():
        # rows l (over-predicted) of (Gᵀ − G)Q are out_il/q_il ≥ 0, rows k (under) −in_ik/q_ik ≤ 0:
        # G is supported on under × over, so each entry gets one of the two products
        load = (G.transpose(0, 2, 1) - G) @ Q
        peak = np.maximum(load.max(axis=(1, 2)), 0.0)
        t = np.where(peak <= 1.0, 1.0, (1.0 - 4 * EPS) / np.where(peak > 0, peak, 1.0))
        t = np.where(flows, t, 0.0)[:, None, None]
        load *= Q
        load *= t
        alpha += load
        s = alpha.sum(axis=2)
    # 2. the rest (rounding level after a full proportional step): where the class sums are not
    # already zero to the rounding tolerance with which MultinomialProblem.dual accepts them
    over, under = s < 0, s > 0
    n_T = alpha.shape[2] - np.bincount(out_j, minlength=alpha.shape[0])
    tol = 8 * (n_T[:, None] + 16) * EPS * (1.0 + np.abs(alpha).sum(axis=2))
    rest = over.any(axis=1) & under.any(axis=1) & np.any(np.abs(s) > tol, axis=1)
    if not rest.any():
        return alpha
    Q = _probabilities_from_alpha(alpha, y, out_j, out_row)
    mass = Q.sum(axis=2)
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(over & rest[:, None], np.minimum(-s / np.where(mass > 0, mass, 1.0), 1.0), 0.0)
        deficit = np.maximum(s, 0.0)
        share = np.where(rest[:, None], deficit / np.where(deficit.sum(axis=1, keepdims=True) > 0,
                                                          deficit.sum(axis=1, keepdims=True), 1.0), 0.0)
    take = Q * factor[:, :, None]
    alpha += take - take.sum(axis=1, keepdims=True) * share[:, :, None]
    return alpha


def _log_ratio_pair(qa, qb, radius, K):
    """Lower bounds of log(q*_a/q*_b) for ‖q* − q‖₂ ≤ radius (K classes), elementwise over arrays
    qa, qb and radius (broadcast): :func:`glru.multinomial.log_ratio_lower_bounds` for one pair."""
    a, c = _arc_shifts(radius, K)
    return _sector_min(*_shifted_log_bounds(qa[..., None], qb[..., None], a, c))


def _pairwise_bounds(e, ev, pf, pr, left_out):
    """Bounds at held-out rows ``pr`` of the evaluated folds ``pf`` (rows of ``ev``):
    lower[c, k, l] ≤ s*_k − s*_l (upper = −lowerᵀ), per-class bounds (c, K) and the centre's
    scores (c, K), by the routes of :meth:`MultinomialCertificate.pairwise_bounds`:

    (a) without intercept, the primal ball, for every pair;
    (b) the KKT identity at training rows i: for the centre's class k̂ and each l, the pairs
        (k̂, l) and (l, k̂) through the CANDIDATES rows with the narrowest interval (ranked with
        the full fit's probabilities: no pass over the fold's rows); the other pairs by
        δ_kl ≥ δ_kk̂ + δ_k̂l.

    ``left_out[c]`` are the rows outside pair c's fold (never used as KKT rows).

    Per-class (Σ_k s*_k = 0): s_k = (1/K)Σ_l δ_kl, i.e. s_k̂ = (1/K)Σ_l δ_k̂l and
    s_k = (1/K)Σ_{l≠k} δ_k̂l − ((K−1)/K) δ_k̂k, each pair bounded once (no double counting); and,
    without intercept, (1/K)Σ_l δ_kl from route (a)."""
    K, d, n = e.K, e.d, e.n
    n_pairs = pr.size
    gamma_d = 2.0 * (d + 16) * EPS
    Xe = as_dense(e.X[pr])
    W = ev.W[pf]                                                    # (c, K, d)
    S_eval = np.einsum("ca,cka->ck", Xe, W)
    E_eval = gamma_d * np.einsum("ca,cka->ck", np.abs(Xe), np.abs(W))
    values = S_eval + ev.b[pf]
    r_P, r_D = ev.r_P[pf], ev.r_D[pf]
    top = values.argmax(axis=1)
    lower = np.full((n_pairs, K, K), -np.inf)
    chunk = max(1, CHUNK_FLOATS // (n * K))
    for start in range(0, n_pairs, chunk):
        sl = slice(start, min(start + chunk, n_pairs))
        part = np.arange(sl.start, sl.stop)
        pair_of = np.concatenate([np.full(left_out[j].size, i) for i, j in enumerate(part)]).astype(np.intp)
        rows_out = np.concatenate([left_out[j] for j in part]).astype(np.intp)
        idx, usable = _candidates(e, pr[sl], Xe[sl], top[sl], r_P[sl], r_D[sl], pair_of, rows_out)
        _route_b(e, ev, lower, sl, pf[sl], idx, usable, top[sl], Xe[sl], S_eval[sl], E_eval[sl], r_P[sl], r_D[sl])
    lower = chain_through(lower, top)
    if not e.fit_intercept:  # route (a)
        norms = e.norms_up[pr]
        C = S_eval[:, :, None] - S_eval[:, None, :]
        err = E_eval[:, :, None] + E_eval[:, None, :] + 2 * EPS * np.abs(C)
        spread = (_SQRT2 * r_P * _WIDEN * norms)[:, None, None]
        lower = np.maximum(lower, C - spread - err - 4 * EPS * (np.abs(C) + spread))
    lower[:, np.arange(K), np.arange(K)] = 0.0
    low, up = per_class_through(lower, top)
    if not e.fit_intercept:
        low_a, up_a = _per_class(lower, -lower.transpose(0, 2, 1))
        low, up = np.maximum(low, low_a), np.minimum(up, up_a)
    return lower, low, up, values


def _candidates(e, rows, Xe, top, r_P, r_D, pair_of, left_out):
    """For each held-out row and each class l, the CANDIDATES training rows i of its fold with the
    smallest √2·r_P‖x − x_i‖ + r_D(1/q_ik̂ + 1/q_il), q the full fit's probabilities: a
    first-order width of route (b)'s interval for the pair (k̂, l). Returns the rows (c, q, K)
    and whether each is usable (a training row of the fold with a finite score)."""
    cross = _times_Xt(e.X, Xe)                                      # (c, n)
    dist = np.sqrt(np.maximum(e.sq_norms[rows][:, None] + e.sq_norms[None, :] - 2 * cross, 0.0))
    inv = e.inverse_P0T                                             # 1/q of the full fit, (K, n)
    with np.errstate(divide="ignore"):
        score = (_SQRT2 * r_P)[:, None, None] * dist[:, None, :] + r_D[:, None, None] * (inv[None] + inv[top][:, None])
    score[pair_of, :, left_out] = np.inf                            # rows outside the pair's fold
    picks, best = narrowest(score, CANDIDATES, axis=2)              # (c, K, q)
    return picks.transpose(0, 2, 1), np.isfinite(best).transpose(0, 2, 1)   # (c, q, K)


def _route_b(e, ev, lower, sl, c_f, idx, usable, top, Xe, S_eval, E_eval, r_P, r_D):
    """Route (b) of :meth:`MultinomialCertificate.pairwise_bounds` for the pairs (k̂, l) and
    (l, k̂) through the training rows ``idx[:, :, l]``, maximised into ``lower[sl]``. An unusable
    candidate (e.g. left out of the fold: no KKT identity there) contributes −∞."""
    K, d = e.K, e.d
    gamma_d = 2.0 * (d + 16) * EPS
    c, q, _ = idx.shape
    pairs = np.arange(c)
    Xt = as_dense(e.X[idx.ravel()]).reshape(c, q, K, d)
    W = ev.W[c_f]                                                   # (c, K, d)
    Wtop = W[pairs, top]                                            # (c, d)
    absXt = np.abs(Xt)
    S_l = np.einsum("cqla,cla->cql", Xt, W)                         # candidate rows' scores for l …
    S_k = np.einsum("cqla,ca->cql", Xt, Wtop)                       # … and for k̂
    E_l = gamma_d * np.einsum("cqla,cla->cql", absXt, np.abs(W))
    E_k = gamma_d * np.einsum("cqla,ca->cql", absXt, np.abs(Wtop))
    diff = Xe[:, None, None, :] - Xt
    dist = np.sqrt(np.einsum("cqla,cqla->cql", diff, diff)) * (1.0 + 2 * (d + 8) * EPS)
    # the fold's dual probabilities q = e_y − α at the candidates, for classes k̂ and l
    A = ev.A[c_f[:, None, None], :, idx]                            # (c, q, K_l, K)
    yc = e.codes[idx]
    ls = np.arange(K)
    A_l = A[:, :, ls, ls]
    A_k = np.take_along_axis(A, np.broadcast_to(top[:, None, None, None], (c, q, K, 1)), axis=3)[..., 0]
    q_l = np.maximum(np.where(yc == ls, 1.0 - A_l, -A_l), 0.0)
    q_k = np.maximum(np.where(yc == top[:, None, None], 1.0 - A_k, -A_k), 0.0)
    q_l, q_k = np.where(usable, q_l, 0.0), np.where(usable, q_k, 0.0)
    radius = r_D[:, None, None]
    Se_k, Ee_k = S_eval[pairs, top][:, None, None], E_eval[pairs, top][:, None, None]
    Se_l, Ee_l = S_eval[:, None, :], E_eval[:, None, :]
    C = (Se_k - S_k) - (Se_l - S_l)                                 # Ŵ(x − x_i) for δ_k̂l
    err = Ee_k + E_k + EPS * (np.abs(Se_k) + np.abs(S_k)) + Ee_l + E_l + EPS * (np.abs(Se_l) + np.abs(S_l)) \
        + 2 * EPS * np.abs(C)
    spread = _SQRT2 * r_P[:, None, None] * _WIDEN * dist
    tighten_through(lower, np.arange(sl.start, sl.stop), top, C, spread, err, _log_ratio_pair(q_k, q_l, radius, K),
                    _log_ratio_pair(q_l, q_k, radius, K))


def _per_class(lower, upper):
    """Per-class score bounds from pairwise ones: Σ_k s_k = 0 gives s_k = (1/K) Σ_l (s_k − s_l)."""
    K = lower.shape[1]
    with np.errstate(invalid="ignore"):
        lo = lower.sum(axis=2) / K
        up = upper.sum(axis=2) / K
        slack_lo = 2 * (K + 2) * EPS * np.abs(lower).sum(axis=2) / K
        slack_up = 2 * (K + 2) * EPS * np.abs(upper).sum(axis=2) / K
    lo, up = lo - slack_lo, up + slack_up
    return np.where(np.isnan(lo), -np.inf, lo), np.where(np.isnan(up), np.inf, up)
