"""Warm-started solvers that stop on the relative duality gap, or earlier when a caller's
question is already answered (the paper's Remark 3).

- ``"newton"``: SciPy's trust-region Newton-CG (``method="trust-ncg"`` with Hessian-vector
  products), the same algorithm family as LIBLINEAR's ``newton.cpp``; it sees only the
  problem's ``fun``, ``grad`` and ``hessp``. Works for every smooth loss, dense or CSR, with or
  without an intercept, and evaluates an early-exit predicate at every iterate.
- ``"liblinear"``: LIBLINEAR's own trust-region Newton (``liblinear-official``), warm-started
  with ``init_sol``; ``-R`` leaves the bias unregularized. Logistic, squared hinge and squared
  loss with an L2 penalty only. Its own stopping rule is a gradient norm, so it is rerun with a
  tenfold smaller tolerance, warm-started, until the duality gap is small enough, or, where only
  ``stop_when`` is awaited (held-out signs), from 1e-6 a hundredfold smaller each run; a run that
  converges with signs open goes on while its gap falls (:meth:`_GapMonitor.settled`).
- ``"liblinear-dual"``: LIBLINEAR's dual coordinate descent (``-s 1``) for the squared hinge
  with an L2 penalty and no unpenalized intercept (``LinearSVC``'s problem, and
  scikit-learn's solver for it). Its dual solvers take no initial point, so each run is cold:
  at tolerance 1e-9 on the dual's projected gradient, then 1e-13, until the duality gap (or
  ``stop_when``) is satisfied, else finished by trust-region Newton (for held-out signs: 1e-7
  first, and with at least half as many rows as features one run at 1e-4, finished by
  LIBLINEAR's primal; for a loose gap, a start: 1e-4 first; by semismooth Newton after a run
  that leaves a relative gap above 1e-2, near a hard margin, where the dual crawls). Primal
  Newton's generalized Hessian changes with every row that crosses the margin, and where few
  rows hold the optimum (n < d, separable data) its steps zigzag: trust-region Newton took 0.46 s
  to a relative gap of 1e-12 on sparse 2000 × 5000 (2 %), this 0.03 s.
- ``"semismooth"``: damped semismooth Newton with the generalized Hessian formed and factored
  (:mod:`glru.semismooth`), for losses of piecewise constant curvature (squared hinge, smoothed
  hinge, Huber) with an L2 penalty, with or without an intercept. It takes a start and lands on
  the optimum once its iterate is on the optimum's piece; each step costs a d̃ × d̃
  factorization, so it pays for a few hundred features (dense 2000 × 500, squared hinge, a
  10-fold's folds: 0.24 s each against 0.65 s by dual coordinate descent).
- ``"formed-newton"``: the same damped steps for any loss with an L2 penalty (Newton steps with
  the Hessian formed at each, for a smooth loss): where Newton–CG crawls on an ill-conditioned
  Hessian and d̃ is a few hundred (a fold of w8a standardized, 10-fold: 7–11 steps, 0.4–0.8 s,
  against 1.1–1.9 s by Newton–CG and its switch).
- ``"l-bfgs-b"``: the elastic net (kappa > 0) is not smooth. It is solved as a bound-constrained
  smooth problem in (w⁺, w⁻) ≥ 0 with SciPy's L-BFGS-B, then polished by trust-region Newton on
  the active orthant (fixed signs make the L1 term linear), which reaches the exact optimum once
  the signs are right; the duality gap decides when to stop either way.

``method="auto"`` picks the elastic-net path when kappa > 0, semismooth Newton for a piecewise
quadratic loss where its factorizations are cheap (:func:`semismooth_by_default`) unless the rows
are sparse, the start cold and no whole steps apply, and trust-region Newton otherwise — the
fastest in ``benchmarks/bench_solvers.py`` (numbers in ``docs/benchmarks.md``) — with a budget
of Hessian-vector products, past which damped Newton steps with the Hessian formed and factored
take over (``"formed-newton"``, the steps of ``"semismooth"`` on a smooth loss;
:func:`_products_budget`): on ill-conditioned data
(standardized sparse columns) Newton–CG takes thousands of products. A Newton solve whose
trust region collapses (it happens on piecewise quadratic losses at small lam) is finished by
semismooth Newton where that is cheap, else by LIBLINEAR where it applies, else by SciPy's
line-search Newton-CG.
"""

import ctypes
import warnings

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from scipy.optimize import minimize
from scipy.sparse.linalg import LinearOperator, cg

from .anderson import ANDERSON_DEPTH, Anderson
from .bounds import primal_radius, signs_decided
from .costs import factor_seconds, gram_seconds, product_seconds
from .hessian import jacobi_condition
from .intercept import approximate_root
from .losses import Logistic, Squared, SquaredHinge
from .newton_centres import NewtonCentres, weighted_gram
from .penalties import L2
from .problem import Problem, col_norms_sq
from .semismooth import applies as _piecewise_quadratic, pivots_apply, semismooth_newton

METHODS = ("auto", "newton", "liblinear", "liblinear-dual", "semismooth", "formed-newton", "l-bfgs-b")


class SolverResult:
    """Outcome of a solve: the point, its gap evaluation, and how the solve ended."""

    def __init__(self, coef, intercept, evaluation, n_iter, converged, stopped_early, method, signs_decided=None):
        self.coef, self.intercept, self.evaluation = coef, intercept, evaluation
        self.n_iter, self.converged, self.stopped_early, self.method = n_iter, converged, stopped_early, method
        # whether ``stop_when`` decided at this point when asked in full (None: not asked; see _GapMonitor.settled)
        self.signs_decided = signs_decided
        self.dual_eps = None  # the tolerance of LIBLINEAR's dual run that ended the solve, where one did


def solve(problem, coef_init=None, intercept_init=0.0, *, tol=1e-6, max_iter=1000,
          stop_when=None, method="auto", start_open=False, start_evaluation=None, dual_eps=None):
    """Minimise ``problem``'s primal until relative gap ≤ ``tol`` or ``stop_when`` holds.

    Parameters
    ----------
    problem : glru.problem.Problem
    coef_init, intercept_init : warm start (zeros by default).
    tol : float
        Stop when (P − D)/P ≤ tol (the paper's criterion, default 1e-6).
    max_iter : int
        Outer iterations of the chosen method.
    stop_when : callable(Certificate) -> bool, optional
        Early exit: evaluated on a certificate of each iterate (O(nnz) each); the solve stops
        as soon as it returns True, e.g. once the sign of a held-out prediction is certified.
    method : {"auto", "newton", "liblinear", "liblinear-dual", "semismooth", "formed-newton", "l-bfgs-b"}
    start_open : bool, default=False
        The caller has evaluated the start and found it open (its gap above ``tol``, ``stop_when``
        False): no method but the elastic-net path evaluates it again. A gap and a sign check:
        10 % of a fold's time on sparse binary 6000 × 2000 by LIBLINEAR's primal; with a
        StandardScaler, 10-fold on sparse 7032 × 103, 2 of a fold's 4 gap evaluations by semismooth
        Newton (the other, its last point's, is :func:`solve_held_out`'s ``with_evaluation``).
    start_evaluation : GapEvaluation, optional
        With ``start_open``, the start's gap evaluation, where the caller has it: the point the
        result falls back on if no other is checked (else the start is evaluated then).
    dual_eps : float, optional
        ``method="liblinear-dual"``: the tolerance of LIBLINEAR's first run, where the caller knows
        one that suits this problem (e.g. from a fold like it); None: chosen by its shape and
        what is asked.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}.")
    if not tol > 0:
        raise ValueError(f"tol must be > 0, got {tol!r}.")
    auto = method == "auto"
    coef = np.zeros(problem.d) if coef_init is None else np.array(coef_init, dtype=float)
    intercept = float(intercept_init) if problem.fit_intercept else 0.0
    if auto:
        method = _auto_method(problem, cold=not (np.any(coef) or intercept))
    open_start = (coef, intercept, start_evaluation) if start_open else None
    if method == "liblinear":
        if not _liblinear_applies(problem):
            raise ValueError("method='liblinear' needs an L2 penalty and a logistic, squared_hinge or squared loss.")
        return _solve_liblinear(problem, coef, intercept, tol, max_iter, stop_when, open_start=open_start)
    if method == "liblinear-dual":
        if not _liblinear_dual_applies(problem):
            raise ValueError("method='liblinear-dual' needs the squared hinge, an L2 penalty and no "
                             "unpenalized intercept.")
        return _solve_liblinear_dual(problem, coef, tol, max_iter, stop_when, open_start, first_eps=dual_eps)
    if method == "semismooth":
        if not _semismooth_applies(problem):
            raise ValueError("method='semismooth' needs an L2 penalty and a loss of piecewise constant curvature "
                             "(squared hinge, smoothed hinge, Huber).")
        return _solve_semismooth(problem, coef, intercept, tol, max_iter, stop_when, open_start)
    if method == "formed-newton":
        if not (problem.penalty.kappa == 0 and problem.penalty.lam > 0):
            raise ValueError("method='formed-newton' needs an L2 penalty (lam > 0, kappa = 0).")
        return _solve_semismooth(problem, coef, intercept, tol, max_iter, stop_when, open_start)
    if problem.penalty.kappa > 0:
        return _solve_elastic_net(problem, coef, intercept, tol, max_iter, stop_when)
    if method == "l-bfgs-b":
        raise ValueError("method='l-bfgs-b' is the elastic-net path; it needs kappa > 0.")
    return _solve_newton(problem, coef, intercept, tol, max_iter, stop_when,
                         max_products=_products_budget(problem) if auto else None, open_start=open_start)


def _auto_method(problem, cold):
    # measured (docs/benchmarks.md): trust-region Newton is faster than LIBLINEAR's own (primal)
    # trust-region Newton through its Python binding in 40 of 44 cold and 40 of 44 warm
    # configurations (all logistic ones). LIBLINEAR's dual coordinate descent beats both on cold
    # squared-hinge fits (see the module's docstring) but is not chosen here: it takes no start,
    # and it visits the rows in the order of C's rand(), so two equal calls stop at different
    # points within the tolerance; callers that certify or polish what it returns ask for it.
    # Semismooth Newton where its factorizations are cheap (:func:`semismooth_by_default`), for
    # larger d̃ where callers can weigh them against the data's size (glru.cross_validation); on
    # sparse rows from a cold start with more than a few rows a feature (no whole steps:
    # pivots_apply) only after trust-region Newton has spent its products (_products_budget): from
    # 0 each damped step moves thousands of rows across their kinks, and their sparse Gram matrices
    # cost what a hundred products do (LinearSVC on sparse Gaussian 20000 × 500 (5 %): 0.107 s in
    # 9 steps; trust-region Newton 0.033 s, 11 iterations). Dense rows' Gram matrices go by BLAS
    # at a tenth of that (make_classification 2000 × 400, C = 75: 0.023 s in 7 steps, 0.029 s
    # the other way); with whole steps, semismooth Newton from 0 is the faster (548 × 289, C = 29:
    # 14 whole steps, 0.013 s; from trust-region Newton's point 0.049 s)
    if problem.penalty.kappa > 0:
        return "l-bfgs-b"
    cold_sparse = cold and sp.issparse(problem.X) and not pivots_apply(problem)
    return "semismooth" if semismooth_by_default(problem) and not cold_sparse else "newton"


def semismooth_by_default(problem):
    """Whether semismooth Newton applies and its d̃ × d̃ factorizations are cheap enough (d̃ ≤
    ``SEMISMOOTH_CHEAP_DIM``, a few ms each) for it to be the default for a piecewise quadratic loss.
    There trust-region Newton–CG zigzags with the pieces, and on columns scaled over decades
    its CG crawls: squared hinge, 2179 × 154 sparse with columns scaled over six decades,
    C = 44: 11.5 s against 0.02 s; dense 1824 × 165, C = 0.11: 0.78 s against 0.04 s. Where both
    are quick (unscaled columns) they take the same few ms."""
    return _semismooth_applies(problem) and problem.d + problem.fit_intercept <= SEMISMOOTH_CHEAP_DIM


SEMISMOOTH_CHEAP_DIM = 512


def hessian_is_cheap(problem):
    """Whether ``problem`` has an L2 penalty (λ > 0), d̃ ≤ ``SEMISMOOTH_CHEAP_DIM`` and a Hessian
    formed and factored (a Gram matrix, and two d̃ × d̃ factorizations: a factor and its inverse
    for the chord's certificates) costs at most ``CHEAP_HESSIAN_PRODUCTS`` products with X
    (:mod:`glru.costs`): where the chord of :mod:`glru.chord` refers to one, and the folds and full
    fit of a Pipeline whose steps learn from the rows are solved by ``"formed-newton"``."""
    penalty, dim = problem.penalty, problem.d + problem.fit_intercept
    return penalty.kappa == 0 and penalty.lam > 0 and dim <= SEMISMOOTH_CHEAP_DIM and \
        gram_seconds(problem.X) + 2 * factor_seconds(dim) <= CHEAP_HESSIAN_PRODUCTS * product_seconds(problem.X)


# estimated Hessian / product costs with a StandardScaler, 10-fold: a9a.t 140, mushrooms 212, w8a 236,
# madelon.t (dense 540 × 501) 560, where four chord references cost 100–290 ms a fold against 27 ms
# for trust-region Newton–CG, its Hessian well conditioned
CHEAP_HESSIAN_PRODUCTS = 300


def optimal_intercept(problem, coef, intercept):
    """argmin_b Σ ℓ(x_i·w + b) for fixed w (a 1-D monotone root), or ``intercept`` if none."""
    base = problem.margins(coef, intercept)  # memoised: the solver has just evaluated it
    loss, y = problem.loss, problem.y
    root = approximate_root(lambda t: loss.derivative(y, base + t).sum(),
                            lambda t: loss.second_derivative(y, base + t).sum(), 1.0)
    return intercept if root is None or not np.isfinite(root) else intercept + root


class _GapMonitor:
    """Evaluates the gap (and the early-exit predicate) at iterates; raises StopIteration."""

    def __init__(self, problem, tol, stop_when, open_start=None):
        self.problem, self.tol, self.stop_when = problem, tol, stop_when
        self.best = None
        self.stopped_early = False
        self.skipped = None  # the last iterate check_iterate skipped, until a check follows
        self.signs_decided = None  # stop_when's full verdict at the best point, where settled() asked it
        # (coef, intercept, its GapEvaluation or None): a start the caller found open (its gap above tol,
        # stop_when False), which a check does not evaluate again; with its evaluation, the first best point
        self.open_start = open_start
        if open_start is not None and open_start[2] is not None:
            self.best = (np.array(open_start[0], dtype=float), open_start[1], open_start[2])

    def check(self, coef, intercept):
        start = self.open_start
        if start is not None and intercept == start[1] and np.array_equal(coef, start[0]):
            return False
        return self._evaluate(coef, intercept)

    def _evaluate(self, coef, intercept):
        problem = self.problem
        if problem.fit_intercept:
            intercept = optimal_intercept(problem, coef, intercept)
        ev = problem.duality_gap(coef, intercept)
        self.skipped = None
        if self.best is None or ev.gap <= self.best[2].gap:
            self.best = (coef.copy(), intercept, ev)
            self.signs_decided = None
        if ev.converged(self.tol):
            return True
        if self.stop_when is not None:
            from .certificate import certificate_at

            if self.stop_when(certificate_at(problem, coef, intercept, ev)):
                self.stopped_early = True
                return True
        return False

    def check_iterate(self, coef, intercept):
        """:meth:`check` at an iterate of a Newton-type solve, skipped (False) where its gradient
        shows it far from both the gap asked for and the radius ``stop_when`` waits for: a check
        costs passes over X (the intercept's root, the margins, Xᵀα, the rounding bound; the
        bounds of held-out rows), as much as the iteration itself on a fold of w8a standardized.
        With an L2 penalty and the intercept at its optimum, the dual point of the KKT condition
        has the gap ‖g_w‖²/(2λ) exactly (Fenchel–Young: Σℓ(u_i) + ℓ*(ℓ'(u_i)) = Σu_iℓ'(u_i)), and
        Theorem 1's radius √(2G/λ) = ‖g_w‖/λ; g_w at the iterate's own intercept stands in for
        it. Only a saving: the solve's last point is always checked."""
        problem, best = self.problem, self.best
        if best is None or problem.penalty.kappa > 0 or not problem.penalty.lam > 0:
            return self.check(coef, intercept)
        g_w = problem.grad(problem.join(coef, intercept))[:problem.d]  # (memoised: the solver's own)
        lam = problem.penalty.lam
        gap = float(g_w @ g_w) / (2 * lam)
        needed = max(self.tol * abs(best[2].primal), best[2].allowance)
        waits_for = getattr(self.stop_when, "waits_for", None)
        if gap > FAR_GAP * needed and (self.stop_when is None or (
                waits_for is not None and waits_for(np.sqrt(2 * gap / lam) / FAR_RADIUS))):
            self.skipped = (coef.copy(), intercept)
            return False
        return self.check(coef, intercept)

    def settled(self, previous_gap):
        """After :meth:`check` returned True at a run's end: whether a solve by runs of tightening
        tolerance (LIBLINEAR's) ends. It goes on where it converged with the held-out signs of
        ``stop_when`` open, which a tighter run may decide: P − D at its rounding, the Fenchel–Young
        gap above its own finer one, and cut tenfold since ``previous_gap`` (the gap before the
        last run). The signs are asked in full here (the question :func:`solve_held_out` asks of a
        converged point; its answer is kept in the result). A run more costs less than the Newton
        polish that follows a solve ending with signs open: a fold (10-fold) of LinearSVC on
        sparse Gaussian 8000 × 2000 converged at a relative gap of 5e-12 with a sign open, and its
        polish took 24 ms."""
        coef, intercept, ev = self.best
        if self.stop_when is None or self.stopped_early or ev.gap - ev.allowance <= ev.allowance \
                or not ev.gap < 0.1 * previous_gap:
            return True
        if self.signs_decided is None:  # (asked once a best point: the dual's primal finish starts at its last)
            from .certificate import certificate_at

            full = dict(always=True) if isinstance(self.stop_when, SignsDecided) else {}  # (past its skipping)
            self.signs_decided = bool(self.stop_when(certificate_at(self.problem, coef, intercept, ev), **full))
        return self.signs_decided

    def stalled(self, previous_gap):
        """Whether the last run of a solve by runs of tightening tolerance (LIBLINEAR's), its point
        open, left the best gap above ``STALLED_GAP_CUT`` of ``previous_gap`` (the gap before it): the
        solver is at the floor of its own stopping rule, and a tighter run stops there too."""
        return not self.best_point()[2].gap < STALLED_GAP_CUT * previous_gap

    def check_skipped(self):
        """:meth:`check` the last iterate :meth:`check_iterate` skipped, if no check followed it."""
        return self.skipped is not None and self.check(*self.skipped)

    def open_best(self):
        """The best point so far as the ``open_start`` of a solver that goes on from it, if it is
        open (its gap above tol: a check found ``stop_when`` False there), else None."""
        best = self.best
        return best if best is not None and not (self.stopped_early or best[2].converged(self.tol)) else None

    def done(self, tol):
        return self.stopped_early or (self.best is not None and self.best[2].converged(tol))

    def start_point(self):
        """(coef, intercept) to go on from: the best point so far, else the open start (not evaluated)."""
        return (self.best if self.best is not None else self.open_start)[:2]

    def best_point(self):
        """(coef, intercept, GapEvaluation) of the best point so far (an open start given without
        its evaluation, where no other point was checked, evaluated now)."""
        if self.best is None:
            self._evaluate(*self.open_start[:2])
        return self.best

    def result(self, method, n_iter):
        coef, intercept, ev = self.best_point()
        converged = ev.converged(self.tol)
        return SolverResult(coef, intercept, ev, n_iter, converged, self.stopped_early and not converged, method,
                            self.signs_decided)


# a run of LIBLINEAR's that leaves its open point's gap above this share of the gap before it has
# stalled (:meth:`_GapMonitor.stalled`). A half ended runs too soon: on folds of StandardScaler +
# LinearSVC on sparse Gaussian rows a run that cut the gap by 24 % or 44 % was followed by one to
# rounding level (0.3 ms), where the semismooth step that finished instead cost 1.5–3.6 ms
STALLED_GAP_CUT = 0.9


# how far an iterate's gap estimate (and its radius) may be from what is asked for before its check is
# skipped (:meth:`_GapMonitor.check_iterate`)
FAR_GAP, FAR_RADIUS = 16.0, 4.0


def _solve_newton(problem, coef, intercept, tol, max_iter, stop_when, max_products=None, open_start=None,
                  tried=frozenset()):
    """Trust-region Newton-CG, for at most ``max_products`` Hessian-vector products if given
    (:func:`_products_budget`); where it stalls or spends them, finish with Newton steps with
    the Hessian formed (:func:`glru.semismooth.semismooth_newton`: semismooth Newton for a
    piecewise quadratic loss where cheap; damped Newton for a smooth one whose products were
    spent), else with LIBLINEAR (where it applies and no early exit is asked for) or SciPy's
    line-search Newton-CG, each from the best point so far. ``open_start``: see
    :class:`_GapMonitor`. ``tried``: the methods ("newton", "semismooth", "liblinear") that ran
    before in this solve's chain of finishes, which does not hand back to them (but for this one,
    which always finishes semismooth Newton's steps): each hands on to the others where it stalls,
    and on a problem where all three stall (LinearSVC(C=38) on 28 × 371, columns scaled over six
    decades) the chain went round 40 times a fold (20 s for 10 folds)."""
    monitor = _GapMonitor(problem, tol, stop_when, open_start)
    if monitor.check(coef, intercept):
        return monitor.result("newton", 0)
    n_iter = _run_scipy(problem, monitor, "trust-ncg", min(max_iter, _TRUST_NCG_BUDGET), max_products)
    if monitor.done(tol) or n_iter >= max_iter:
        return monitor.result("newton", n_iter)
    best_coef, best_intercept, _ = monitor.best_point()
    tried = tried | {"newton"}
    if "semismooth" not in tried and (max_products is not None or semismooth_by_default(problem)):
        finish = _solve_semismooth(problem, best_coef, best_intercept, tol, max_iter - n_iter, stop_when,
                                   monitor.open_best(), tried)
        finish.n_iter += n_iter
        finish.method = "newton+" + finish.method
        return finish
    if stop_when is None and _liblinear_applies(problem) and "liblinear" not in tried:
        finish = _solve_liblinear(problem, best_coef, best_intercept, tol, max_iter - n_iter, tried=tried)
        finish.n_iter += n_iter
        finish.method = "newton+liblinear"
        return finish
    n_iter += _run_scipy(problem, monitor, "newton-cg", max_iter - n_iter)
    return monitor.result("newton", n_iter)


def _products_budget(problem):
    """Hessian-vector products ``method="auto"``'s trust-region Newton–CG may take before damped
    Newton steps with the Hessian formed and factored take over (None: no limit): the estimated
    cost (:mod:`glru.costs`) of ``FORMED_STEPS`` such steps, a Gram matrix and a d̃ × d̃
    factorization each, for an L2 penalty and d̃ ≤ ``FORMED_MAX_DIM``: past it, formed Newton steps
    for a smooth loss, semismooth Newton for a piecewise quadratic one (beyond
    ``SEMISMOOTH_CHEAP_DIM``, where it is not the default: near a hard margin Newton–CG crawls there,
    LinearSVC(C=3.4) on make_classification 1327 × 882, 10-fold, took 700–880 iterations a fold,
    10 s each, where semismooth Newton's whole steps took 14–18, 0.05 s).
    Newton–CG needs few products where the Hessian is well conditioned and thousands where it is
    not: a fold of w8a standardized (10-fold, logistic) took 1475 products (2.3 s) from the full
    fit, where the formed steps take 7 (0.03 s each). Measured 10-fold with a StandardScaler
    (:mod:`glru.fold_refit`'s solves) and the switch at any rate (before
    ``ILL_CONDITIONED_PRODUCTS``), no budget / ``FORMED_STEPS`` = 4, 2, 1, 0: w8a 18.5 / 13.1,
    11.1, 9.3, 10.5 s; a9a.t 2.45 / 2.04, 1.59, 1.44, 1.35 s; mushrooms and madelon.t (well
    conditioned) unchanged down to 1, madelon.t 0.24 → 1.3 s at 0 (Gram matrices of 600 × 500
    dense at every step)."""
    dim = problem.d + problem.fit_intercept
    if not (problem.penalty.kappa == 0 and problem.penalty.lam > 0 and dim <= FORMED_MAX_DIM):
        return None
    step, product = gram_seconds(problem.X) + factor_seconds(dim), 2 * product_seconds(problem.X)
    return max(int(FORMED_STEPS * step / product), FORMED_MIN_PRODUCTS) if product > 0 else FORMED_MIN_PRODUCTS


FORMED_STEPS = 1  # (the estimates put a Gram matrix at twice, a product at half, their measured cost)
# on small data a step's Python overhead outweighs its arithmetic: the products Newton–CG may always take
FORMED_MIN_PRODUCTS = 50
FORMED_MAX_DIM = 2048  # the formed Hessian is a d̃ × d̃ array (32 MiB at this size)
# products an iteration from which Newton–CG counts as ill-conditioned: 60 random logistic problems (up
# to 3000 × 300, columns over four decades, separable or not, lam 1e-7 to 0.1) took 4.7 s by
# Newton–CG alone, 4.4 s with the switch at any rate, 3.4 s from 10, 2.6 s from 20 on average (42 → 32
# switched); standardized a9a.t and w8a 10-fold kept their gains at 20 and lost them at 40. Switching
# also at the first iteration of 20 (with the extended line search of the formed steps): 5.3 → 3.8–4.6 s
# on another machine, Newton–CG alone 7.5–9.4 s there (benchmarks/bench_formed_newton.py)
ILL_CONDITIONED_PRODUCTS = 20


def _semismooth_applies(problem):
    """Whether ``method="semismooth"`` applies: an L2 penalty (λ > 0) and a loss whose curvature
    is piecewise constant."""
    return problem.penalty.kappa == 0 and problem.penalty.lam > 0 and _piecewise_quadratic(problem.loss)


def _solve_semismooth(problem, coef, intercept, tol, max_iter, stop_when, open_start=None, tried=frozenset()):
    """Damped semismooth Newton (:mod:`glru.semismooth`) with the gap monitor as its stopping
    rule; finished by trust-region Newton from its best point where its steps end short of the
    gap (rounding level of the objective, or a Hessian it cannot factor). ``open_start``: see
    :class:`_GapMonitor`; ``tried``: see :func:`_solve_newton`."""
    monitor = _GapMonitor(problem, tol, stop_when, open_start)
    steps = semismooth_newton(problem, problem.join(coef, intercept), monitor.check_iterate, max_iter)
    monitor.check_skipped()
    label = "semismooth" if _piecewise_quadratic(problem.loss) else "formed-newton"
    if monitor.done(tol) or steps >= max_iter:
        return monitor.result(label, steps)
    best_coef, best_intercept, _ = monitor.best_point()
    finish = _solve_newton(problem, best_coef, best_intercept, tol, max_iter - steps, stop_when,
                           open_start=monitor.open_best(), tried=tried | {"semismooth"})
    finish.n_iter += steps
    finish.method = label + "+" + finish.method
    return finish


# trust-ncg converges in a few dozen iterations on the smooth losses; on piecewise quadratic
# ones (squared hinge at small lam) its trust region can collapse and it crawls for thousands
# (measured: madelon, lam = 1e-4, 1000 iterations to a relative gap of 6e-2)
_TRUST_NCG_BUDGET = 200


def _run_scipy(problem, monitor, method, max_iter, max_products=None):
    """Run a SciPy Hessian-free Newton method from the monitor's best point until the monitor
    says stop or, given ``max_products``, once that many Hessian-vector products are spent at
    ``ILL_CONDITIONED_PRODUCTS`` or more an iteration, on average or in the current one (many CG
    iterations a step: an
    ill-conditioned Hessian, which factoring it cures; few a step is a long way to go, where it
    does not); returns the number of iterations. trust-ncg is restarted if its trust region
    collapses near the optimum."""
    products, iterations, before = 0, 0, 0  # before: the products spent before this iteration
    options = dict(gtol=0.0) if method == "trust-ncg" else dict(xtol=1e-300)

    def hessp(z, v):
        nonlocal products
        products += 1
        ill_conditioned = products > ILL_CONDITIONED_PRODUCTS * iterations \
            or products - before >= ILL_CONDITIONED_PRODUCTS
        if max_products is not None and products > max_products and ill_conditioned:
            raise _ProductsSpent
        return problem.hessp(z, v)

    def callback(intermediate_result):
        nonlocal iterations, before
        iterations, before = iterations + 1, products
        if monitor.check_iterate(*problem.split(intermediate_result.x)):
            raise StopIteration

    for _ in range(3):
        z = problem.join(*monitor.start_point())
        try:
            res = minimize(problem.fun, z, jac=problem.grad, hessp=hessp, method=method,
                           callback=callback, options=dict(options, maxiter=max(max_iter - iterations, 1)))
        except _ProductsSpent:  # the monitor holds the best iterate so far
            break
        if res.status == 99 or iterations >= max_iter or monitor.check(*problem.split(res.x)):
            break
    monitor.check_skipped()  # (where the products ran out at an iterate whose check was skipped)
    return iterations


class _ProductsSpent(Exception):
    """Raised out of SciPy's solver when its Hessian-vector products pass their budget."""


# ---------------------------------------------------------------- LIBLINEAR
_LIBLINEAR_SOLVER = {Logistic: 0, SquaredHinge: 2, Squared: 11}


def _liblinear_applies(problem):
    if not (type(problem.penalty) is L2 and problem.penalty.lam > 0 and type(problem.loss) in _LIBLINEAR_SOLVER):
        return False
    # with a single class LIBLINEAR returns a degenerate model
    return not problem.loss.is_classification or (problem.y.min() < 0 < problem.y.max())


def dual_solves(loss, fit_intercept):
    """Whether ``method="liblinear-dual"`` applies to this loss, given an L2 penalty and both
    classes."""
    return type(loss) is SquaredHinge and not fit_intercept


def _liblinear_dual_applies(problem):
    return dual_solves(problem.loss, problem.fit_intercept) and _liblinear_applies(problem)


def _liblinear_C(problem, solver):
    # LIBLINEAR minimises ½‖w‖² + C Σ ℓ(x_i·w); ours is λ(½‖w‖² + (1/(nλ)) Σ ℓ). Its "L2-loss SVR"
    # with p = 0 is (t − y)², twice our squared loss.
    return 1.0 / (problem.n * problem.penalty.lam) / (2.0 if solver == 11 else 1.0)


def _liblinear_problem(problem):
    """``problem``'s data as a LIBLINEAR ``problem``, built vectorised: LIBLINEAR's Python
    constructor copies a CSR matrix one row per Python iteration unless numba is installed (not
    a dependency): 7 ms of a 28 ms dual solve on a fold of sparse 2000 × 5000, this 0.4 ms. The
    layout is its own (``x_space`` of feature nodes, each row ending in a bias node and a −1
    terminator, ``rowptr`` to the rows, which ``set_bias`` uses). A dense X gives every value a
    node, zeros too (they add exact zeros to LIBLINEAR's products), with no CSR conversion: 4 ms
    of a 20 ms fold of LinearSVC on dense 400 × 500 went to that conversion."""
    from liblinear import liblinear as ll

    n, d = problem.X.shape
    ll_problem = ll.problem.__new__(ll.problem)
    ll_problem.l, ll_problem.n, ll_problem.bias = n, d, -1
    if sp.issparse(problem.X):
        X = sp.csr_matrix(problem.X)
        if not X.has_sorted_indices:  # LIBLINEAR walks a row's nodes in increasing index
            X = X.sorted_indices()
        ll_problem.rowptr = X.indptr.astype(np.int64) + 2 * np.arange(n + 1)
        x_space = np.empty(X.nnz + 2 * n, dtype=ll.feature_node)
        # a mask of the stored values' nodes (a byte a node; positions as int64 took 16 bytes a value)
        stored = np.ones(x_space.size, dtype=bool)
        stored[ll_problem.rowptr[1:] - 1] = stored[ll_problem.rowptr[1:] - 2] = False
        index = x_space["index"]
        index[stored], x_space["value"][stored] = X.indices, X.data
        np.add(index, 1, out=index, where=stored)
        index[~stored] = -1
    else:
        ll_problem.rowptr = np.arange(n + 1, dtype=np.int64) * (d + 2)
        nodes = np.empty((n, d + 2), dtype=ll.feature_node)
        nodes["index"][:, :d], nodes["value"][:, :d], nodes["index"][:, d:] = np.arange(1, d + 1), problem.X, -1
        x_space = nodes.ravel()
    ll_problem.x_space = x_space
    ll_problem.y = (ctypes.c_double * n).from_buffer_copy(np.ascontiguousarray(problem.y, dtype=np.float64))
    ll_problem.x = (ctypes.POINTER(ll.feature_node) * n)()
    rows = np.ctypeslib.as_array(ctypes.cast(ll_problem.x, ctypes.POINTER(ctypes.c_uint64)), (n,))
    rows[:] = ll_problem.rowptr[:-1] * ctypes.sizeof(ll.feature_node) + x_space.ctypes.data
    ll_problem.set_bias(1.0 if problem.fit_intercept else -1.0)
    return ll_problem


def _liblinear_train(ll_problem, options, init=None):
    """LIBLINEAR's weights for ``options`` (from ``init`` where its solver takes one)."""
    from liblinear import liblinear as ll

    param = ll.parameter(options)
    if init is not None:
        buffer = (ctypes.c_double * init.shape[0])(*init)
        param.init_sol = ctypes.cast(buffer, ctypes.POINTER(ctypes.c_double))
    error = ll.liblinear.check_parameter(ll_problem, param)
    if error:
        raise ValueError(f"LIBLINEAR rejected its parameters: {error.decode()}")
    model = ll.toPyModel(ll.liblinear.train(ll_problem, param))
    # LIBLINEAR orders the labels +1, −1 for a ±1 target, so w needs no sign flip
    return np.ctypeslib.as_array(model.w, shape=(ll_problem.n,)).copy()


# the dual solver's tolerance on its projected gradient (entries of order 1), the first and the
# last tried. Each run is cold and its cost grows slowly with log(1/eps) (sparse 2000 × 5000:
# 0.010, 0.017, 0.027 s at 1e-3, 1e-6, 1e-9, 0.083 s at 1e-12), so a looser first run, which
# certified 4 of 10 folds at 1e-5 on binary 5000 × 3000, costs more than it saves
_DUAL_EPS_FIRST, _DUAL_EPS_LAST, _DUAL_EPS_FACTOR = 1e-9, 1e-13, 1e-4
# … but where only held-out signs are asked for (``stop_when``), 1e-7 first: it decided every sign of
# every fold of four 10-fold shapes (binary 3000 × 20000, Gaussian 1000 × 20000, binary 5000 × 3000,
# synthetic sparse 2000 × 5000; 1e-6 left 1–2 folds of three of them open) in 80 % of the time of 1e-9
# (0.39 against 0.49 s on binary 3000 × 20000, 0.25 against 0.30 s on sparse 2000 × 5000)
_DUAL_EPS_SIGNS = 1e-7
# … and where rows are at least half the features (``_DUAL_PRIMAL_MIN_ROWS_PER_FEATURE``; only
# signs asked for), one run at 1e-4, then LIBLINEAR's primal trust-region Newton from its point
# (``_solve_liblinear``: 1e-6 first), a few cheap steps from there: a fold (10-fold) of sparse
# Gaussian 2000 × 2000 took 17 + 3 ms against 30 ms at 1e-7, of binary 3000 × 3000 45–63 + 5–16 ms
# against 70–103 ms, of Gaussian 3000 × 2000 35–48 + 3–5 ms against 50–72 ms. With far fewer rows
# than features the primal steps cost about what the dual's last digits do (binary 3000 × 20000:
# 28–34 + 12–15 ms against 53–55 ms) or more (Gaussian 1000 × 20000: 2 + 7 against 4 ms), and 1e-7
# stays.
_DUAL_EPS_PRIMAL_START, _DUAL_PRIMAL_MIN_ROWS_PER_FEATURE = 1e-4, 0.5
# A solve to a loose gap (tol ≥ _DUAL_ROUGH_TOL: a start) takes scikit-learn's own tolerance first: it left
# relative gaps of 1.6e-7, 1.4e-5 and 3.8e-6 on a fold (10-fold) of sparse Gaussian 2000 × 2000, binary
# 3000 × 3000 and binary 3000 × 20000, in 6.5, 23 and 12 ms against 11, 39 and 19 ms at 1e-7
_DUAL_EPS_ROUGH, _DUAL_ROUGH_TOL = 1e-4, 1e-6
# Where semismooth Newton is cheap (d̃ ≤ SEMISMOOTH_CHEAP_DIM) one run at 1e-3 is its start instead:
# on columns scaled over decades the dual crawls, and LIBLINEAR, at its iteration limit, switches
# to its primal trust-region Newton, which crawls too (219 × 305, six decades, C = 12: 2.8 s at
# 1e-9, then 1.7 s at 1e-13, then 11.4 s of trust-region Newton; 0.28 s this way). On 12 unscaled
# problems of up to 400 × 600 the dual alone took 1.4–68 ms, this way 2.3–215 ms (11 of 12 ≤ 83 ms).
# So only where the columns' squared norms spread over more than _DUAL_CRAWL_SPREAD (two decades of
# scale; :func:`_dual_may_crawl`): LinearSVC 10-fold on dense 400 × 500 took 0.22 s that way and 0.13 s
# by the dual and LIBLINEAR's primal (C = 0.1: 0.16 → 0.11 s, C = 10: 0.28 → 0.22 s); on sparse
# Gaussian 300 × 400 (10 %) 0.096 → 0.024 s (scikit-learn 0.022 s)
_DUAL_EPS_START, _DUAL_CRAWL_SPREAD = 1e-3, 1e4


def _dual_may_crawl(problem):
    """Whether X's nonzero columns' squared norms spread over more than ``_DUAL_CRAWL_SPREAD``
    (features of mixed units, or counts of rare and common words), where LIBLINEAR's dual
    coordinate descent may crawl."""
    norms = problem.col_norms_sq[problem.col_norms_sq > 0]
    return norms.size > 0 and norms.max() > _DUAL_CRAWL_SPREAD * norms.min()


def dual_crawled(problem, evaluation):
    """Whether LIBLINEAR's dual, after a run ending at ``evaluation`` (its best point's), left a relative gap above
    ``_DUAL_CRAWL_GAP`` where semismooth Newton's factorizations are affordable (d̃ ≤
    ``SEMISMOOTH_FINISH_DIM``): near a hard margin with correlated rows coordinate descent
    crawls, and so does the primal trust-region Newton after it, its Hessian's condition number in
    the billions. make_classification 1418 × 1453 (redundant features), C = 34, a fold of 5: the
    dual at 1e-4 left a relative gap of 1.7e3 in 0.3 s, at 1e-7 still 2e-3 in 5.2 s; LIBLINEAR's
    primal took 5–9 s a run. Semismooth Newton from the 1e-4 point took 11–16 whole steps through the
    dual (0.12–0.47 s) to rounding level.
    Where the dual does not crawl its 1e-4 runs leave 1e-7–1e-5 (Gaussian 2000 × 2000, binary
    3000 × 3000, binary 3000 × 20000)."""
    return problem.d + problem.fit_intercept <= SEMISMOOTH_FINISH_DIM and evaluation.relative_gap > _DUAL_CRAWL_GAP


_DUAL_CRAWL_GAP = 1e-2
SEMISMOOTH_FINISH_DIM = 2048  # (d̃³/3 flops a factorization: 2.9e9, about 60 ms here)


def dual_eps_factor(problem, stop_when, evaluation):
    """The factor of LIBLINEAR's dual's next tolerance after a run left its point (gap evaluation
    ``evaluation``) open, where ``stop_when`` tells the radius its open signs need
    (:meth:`SignsDecided.needed_radius`): the factor that brings the radius to
    ``DUAL_SIGN_SHARE`` of that, at least a tenfold cut and at most ``_DUAL_EPS_FACTOR``'s. The runs'
    certified radii fall in proportion to their tolerance (sparse 497 × 987, LinearSVC(C=1), a fold
    of 5: 2.5e-3, 2.2e-4, 3.4e-5, 2.7e-6, 2.8e-7 from 1e-4 to 1e-8; sparse 626 × 1648 with a
    StandardScaler at C = 45: 0.31, 0.024, 2.8e-3, 2.8e-4, 2.7e-5), and a decade more costs a run
    10–15 % more, a run that falls short a whole run. None where ``stop_when`` tells no radius."""
    needed = getattr(stop_when, "needed_radius", None)
    needed = np.inf if needed is None else needed()
    radius = primal_radius(evaluation.gap, problem.penalty.strong_convexity)
    if not (np.isfinite(needed) and radius > 0):
        return None
    return float(min(max(DUAL_SIGN_SHARE * needed / radius, _DUAL_EPS_FACTOR), 0.1))


DUAL_SIGN_SHARE = 0.5


class LearnedDualTolerance:
    """The first tolerance of LIBLINEAR's dual's runs (``dual_eps`` of :func:`solve`) for folds alike
    solved one after another: None, the solver's own rule, until a fold's run decides its solve
    (:attr:`SolverResult.dual_eps`), then that run's tolerance, for the folds after it. Where the
    first run left a fold's signs open, a run aimed at the radius they need followed
    (:func:`dual_eps_factor`); the other folds need about the same, and a run that falls short costs a
    whole run. As the engine's probe fold teaches its folds (:meth:`glru.cross_validation._Engine._probe`),
    for a Pipeline's folds, which cannot share one probe: each is scaled its own way. StandardScaler +
    LinearSVC(C = 45), sparse 626 × 1648, 10-fold: the first fold was decided at 1e-8 after a run at
    1e-7, as 5 of the 9 others were (2 aimed at 5e-9 to 6e-9, 2 decided at 1e-7); from 1e-8 each of
    the 9 took one run, 68 → 56 ms (docs/benchmarks.md, forty-sixth session)."""

    def __init__(self):
        self.eps = None

    def learn(self, result):
        """Keep the tolerance of the dual run that ended ``result`` (a :class:`SolverResult`), if it is
        the first such."""
        if self.eps is None and result.dual_eps is not None:
            self.eps = result.dual_eps


def _solve_liblinear_dual(problem, coef, tol, max_iter, stop_when, open_start=None, first_eps=None):
    """LIBLINEAR's dual coordinate descent (``-s 1``), unless ``coef`` is good enough already:
    each run cold with a tighter tolerance (:func:`dual_eps_factor` after the first that leaves
    signs open), until the gap or ``stop_when`` is satisfied (a run that
    converges with signs open goes on: :meth:`_GapMonitor.settled`); finished
    from its best point if its last tolerance (or its own iteration limit) leaves the gap open:
    by semismooth Newton where that is cheap and the dual may crawl (:func:`_dual_may_crawl`:
    one loose run, then semismooth Newton), by LIBLINEAR's primal trust-region Newton after a
    single run where rows are at least half the features and only ``stop_when`` is awaited
    (``_DUAL_EPS_PRIMAL_START``), else by trust-region Newton; and by semismooth Newton after any
    run that leaves the gap far open (:func:`dual_crawled`). A zero ``coef`` is not checked:
    every run starts there anyway; nor is an ``open_start`` (:class:`_GapMonitor`). ``first_eps``: the
    first run's tolerance, where the caller knows a better one than these rules (None)."""
    monitor = _GapMonitor(problem, tol, stop_when, open_start)
    if (np.any(coef) or max_iter < 1) and monitor.check(coef, 0.0):
        return monitor.result("liblinear-dual", 0)
    options = f"-s 1 -c {_liblinear_C(problem, 1)!r} -q"
    ll_problem = _liblinear_problem(problem)
    # where semismooth Newton is cheap, one loose run gives it its start (see _DUAL_EPS_START); with
    # at least half as many rows as features, for held-out signs, LIBLINEAR's primal (_DUAL_EPS_PRIMAL_START)
    cheap = semismooth_by_default(problem) and _dual_may_crawl(problem)
    primal = not cheap and stop_when is not None and problem.n >= _DUAL_PRIMAL_MIN_ROWS_PER_FEATURE * problem.d
    eps = first_eps if first_eps is not None else _DUAL_EPS_START if cheap else _DUAL_EPS_PRIMAL_START if primal \
        else _DUAL_EPS_SIGNS if stop_when else _DUAL_EPS_ROUGH if tol >= _DUAL_ROUGH_TOL else _DUAL_EPS_FIRST
    n_iter, gap, crawls, targeted = 0, np.inf, False, False
    while n_iter < max_iter and eps >= _DUAL_EPS_LAST:
        n_iter += 1
        converged = monitor.check(_liblinear_train(ll_problem, options + f" -e {eps!r}"), 0.0)
        if converged and (cheap or monitor.settled(gap)):
            result = monitor.result("liblinear-dual", n_iter)
            result.dual_eps = eps
            return result
        crawls = not cheap and dual_crawled(problem, monitor.best_point()[2])
        if cheap or primal or crawls:
            break
        gap = monitor.best_point()[2].gap
        # a run aimed at the radius the open signs need; after one that fell short, the usual cut, then aimed
        # again from the radius it reached (no run of many small cuts where the radius stopped falling with
        # the tolerance)
        factor = None if targeted else dual_eps_factor(problem, stop_when, monitor.best_point()[2])
        targeted = factor is not None
        eps *= factor or _DUAL_EPS_FACTOR
    if n_iter >= max_iter:
        return monitor.result("liblinear-dual", n_iter)
    finishing = _solve_semismooth if cheap or crawls else _solve_liblinear if primal else _solve_newton
    # (LIBLINEAR's primal goes on with this monitor: its start, the best point, is checked already)
    finish = finishing(problem, monitor.best_point()[0], 0.0, tol, max_iter - n_iter, stop_when,
                       **(dict(ll_problem=ll_problem, monitor=monitor) if finishing is _solve_liblinear else
                          dict(open_start=monitor.open_best())))
    finish.n_iter += n_iter
    finish.method = "liblinear-dual+" + finish.method
    return finish


def _solve_liblinear(problem, coef, intercept, tol, max_iter, stop_when=None, ll_problem=None, monitor=None,
                     open_start=None, tried=frozenset()):
    """LIBLINEAR's trust-region Newton (``-s 0``, ``2`` or ``11``) from (coef, intercept), rerun
    warm with a tighter tolerance until the gap or ``stop_when`` is satisfied (see
    ``_PRIMAL_EPS_SIGNS``), finished by trust-region Newton where its tolerances run out. From 0,
    where semismooth Newton is cheap, the first run is loose (``CRAWL_PROBE_EPS``), and semismooth
    Newton finishes from its point where the runs would crawl there (:func:`primal_crawls`).
    ``ll_problem``: :func:`_liblinear_problem` of ``problem``, and ``monitor``: the
    :class:`_GapMonitor` that has checked (coef, intercept) already, where the caller has them;
    ``open_start``: see :class:`_GapMonitor`; ``tried``: see :func:`_solve_newton`."""
    solver = _LIBLINEAR_SOLVER[type(problem.loss)]
    tried = tried | {"liblinear"}
    options = f"-s {solver} -c {_liblinear_C(problem, solver)!r} -q" + (" -p 0" if solver == 11 else "")
    if problem.fit_intercept:
        options += " -B 1 -R"
    ll_problem = _liblinear_problem(problem) if ll_problem is None else ll_problem
    if monitor is None:
        monitor = _GapMonitor(problem, tol, stop_when, open_start)
        if monitor.check(coef, intercept):
            return monitor.result("liblinear", 0)
    eps, factor = (_PRIMAL_EPS_SIGNS, _PRIMAL_EPS_SIGNS_FACTOR) if stop_when is not None else \
        (1e-2 if solver != 11 else 1e-4, 0.1)
    # (the checked start's intercept is the optimal one for its coef)
    z = problem.join(*monitor.start_point())
    # from 0, where semismooth Newton is cheap, a loose run first tells whether the runs would crawl
    # (primal_crawls); it is the first run of the schedule where that starts as loose, else an extra one
    guarded = semismooth_by_default(problem) and not np.any(z)
    n_iter, previous_gap = 0, np.inf
    while n_iter < max_iter:
        n_iter += 1
        loose = guarded and n_iter == 1
        extra = loose and eps < CRAWL_PROBE_EPS and n_iter < max_iter
        z, start = _liblinear_train(ll_problem, options + f" -e {CRAWL_PROBE_EPS if extra else eps!r}", init=z), z
        if loose and "semismooth" not in tried and primal_crawls(problem, *problem.split(z)):
            finish = _solve_semismooth(problem, *problem.split(z), tol, max_iter - n_iter, stop_when,
                                       open_start=monitor.open_best(), tried=tried)
            finish.n_iter += n_iter
            finish.method = "liblinear+semismooth"
            return finish
        if extra:  # (not checked: a point this loose decides nothing the next run's does not)
            continue
        converged = monitor.check(*problem.split(z))
        # (a run whose start meets its tolerance already returns it: not a stall)
        stalled = not converged and monitor.stalled(previous_gap) and not np.array_equal(z, start)
        if (converged and monitor.settled(previous_gap)) or stalled or eps < 1e-15:
            break
        previous_gap = monitor.best_point()[2].gap
        eps *= factor
    result = monitor.result("liblinear", n_iter)
    if not (result.converged or result.stopped_early) and n_iter < max_iter:
        # LIBLINEAR's stopping rule is relative to its gradient at 0 and can stall far from the
        # gap tolerance (e.g. targets of order 1e-10), and it stops where a step's decrease is
        # within 1e-12 of the objective, short of rounding level: once a run no longer cuts the
        # gap, finished from its best point as a warm "auto" solve is: by semismooth Newton where
        # that is the default (a piecewise quadratic loss, d̃ ≤ SEMISMOOTH_CHEAP_DIM; trust-region
        # Newton–CG crawls at the kinks there), else by Newton. StandardScaler + LinearSVC(C=70.7),
        # sparse 6086 × 306, a fold of 5: runs at 1e-10 to 1e-16 all left 4.5e-11, then 46 iterations
        # of Newton–CG (49 ms) left it too, and one semismooth step reached 2.5e-16
        name, finishing = ("semismooth", _solve_semismooth) if _auto_method(problem, cold=False) == "semismooth" \
            else ("newton", _solve_newton)
        if name in tried:  # (that method ran before this one in the chain, and stalled)
            return result
        finish = finishing(problem, result.coef, result.intercept, tol, max_iter - n_iter, stop_when,
                           open_start=monitor.open_best(), tried=tried)
        finish.n_iter += n_iter
        finish.method = "liblinear+" + finish.method
        return finish
    return result


def primal_crawls(problem, coef, intercept, rows_per_coordinate=1):
    """Whether LIBLINEAR's primal trust-region Newton would crawl on ``problem`` near (coef, intercept),
    where semismooth Newton is cheap (:func:`semismooth_by_default`) and can take over: fewer rows
    with curvature there than coordinates (the Hessian is λP plus a matrix of lower rank; than
    ``rows_per_coordinate`` times them where the point is a full fit judged for its folds, whose optima
    hold fewer: ``FULL_FIT_CRAWL_ROWS_PER_COORDINATE``), and the
    Jacobi-scaled Hessian's condition estimate (:func:`glru.hessian.jacobi_condition`, the conditioning
    LIBLINEAR's diagonally preconditioned conjugate gradients converge by) above ``CRAWL_CONDITION``.
    The count costs a pass over the rows; the condition, a Gram matrix of the rows with curvature and
    a factorization, only where the count allows it. LinearSVC, 5-fold, on thresholded
    ``make_classification`` (2–5 rows a feature, 43–56 % stored): where the condition at a fold's loose
    point (LIBLINEAR at 1e-2 from 0) was above 1e6, semismooth Newton took 0.03–0.77 of the time (a fold
    of 1159 × 259 at C = 8.9: 0.22 against 2.1 s), and 1.0 on one; on the 34 drawn configurations of
    sparse rows whose folds LIBLINEAR solves (d̃ ≤ 512), where it took 0.20–0.80 of semismooth
    Newton's time, the condition was 7 to 1.1e5 (docs/benchmarks.md, forty-sixth session)."""
    if not semismooth_by_default(problem):
        return False
    curvatures = problem.loss.second_derivative(problem.y, problem.margins(coef, intercept)) / problem.n
    rows = np.flatnonzero(curvatures)
    if rows.size >= rows_per_coordinate * (problem.d + problem.fit_intercept):
        return False
    hessian = weighted_gram(problem.X, curvatures[rows], problem.fit_intercept, rows)
    hessian[np.arange(problem.d), np.arange(problem.d)] += problem.penalty.lam  # (the intercept is not penalized)
    return jacobi_condition(hessian) > CRAWL_CONDITION


# the condition above which LIBLINEAR's primal crawls (see primal_crawls), and the loose first run of a
# solve from 0 that tells it (0.4–1.9 ms on a fold of the drawn configurations above)
CRAWL_CONDITION, CRAWL_PROBE_EPS = 1e6, 1e-2
# a full fit judged for folds that start there (LIBLINEAR's warm runs to rounding level): LinearSVC(C = 151) on
# 453 × 161, 5-fold, roc_auc, held 242 rows inside its margin, a fold's optimum 132, and its LIBLINEAR runs took
# 0.1–1.3 s each (13.1 → 0.52 s). Not at the cold solves' loose points: there twice the coordinates cost 12–52 %
# more on four of the 34 drawn configurations above (9909:24, d̃ = 457: 17.5 → 26.6 ms)
FULL_FIT_CRAWL_ROWS_PER_COORDINATE = 2


# Where only held-out signs are asked for (``stop_when``), the first run stops at 1e-6 (LIBLINEAR's
# gradient norm relative to the one at 0), each next one a hundredfold tighter. A fold of LinearSVC on
# sparse binary 8000 × 2000 (2 %): 0.18 s to a relative gap of 1e-8 at 1e-6, 0.25 s to 1e-13 at 1e-8.
# LinearSVC 10-fold on six shapes of 1.5 to 4 rows a feature (benchmarks' --svc-shapes and --shapes):
# 1e-5, 1e-7 or 1e-8 first took 0.98–1.21 times as long; tenfold steps 0.94–1.11 times
_PRIMAL_EPS_SIGNS, _PRIMAL_EPS_SIGNS_FACTOR = 1e-6, 1e-2


# ---------------------------------------------------------------- elastic net
def _solve_elastic_net(problem, coef, intercept, tol, max_iter, stop_when):
    monitor = _GapMonitor(problem, tol, stop_when)
    if monitor.check(coef, intercept):
        return monitor.result("l-bfgs-b", 0)
    d, kappa = problem.d, problem.penalty.kappa
    n_iter = 0
    # w = s∘u: L-BFGS-B runs on u, whose Hessian has a diagonal of about 1 (Jacobi scaling; the
    # bounds u± ≥ 0 are those of w±). On columns scaled over decades it crawled on w: 190 × 48
    # sparse logistic, six decades, l1_ratio = 0.2, C = 18: relative gap 0.6 after 1000 iterations
    s = _jacobi_scale(problem)

    def fun_grad(v):
        w, b = s * (v[:d] - v[d:2 * d]), v[2 * d:]
        z = problem.join(w, b[0] if problem.fit_intercept else 0.0)
        g = problem.grad(z)
        value = problem.fun(z) + kappa * (s @ (v[:d] + v[d:2 * d]))
        g_u = s * g[:d]
        grad = np.concatenate([g_u + kappa * s, -g_u + kappa * s, g[d:]])
        return value, grad

    def callback(intermediate_result):
        nonlocal n_iter
        n_iter += 1
        v = intermediate_result.x
        b = v[2 * d] if problem.fit_intercept else 0.0
        if monitor.check(s * (v[:d] - v[d:2 * d]), b):
            raise StopIteration

    u = coef / s
    v0 = np.concatenate([np.maximum(u, 0), np.maximum(-u, 0), [monitor.best[1]] if problem.fit_intercept else []])
    bounds = [(0, None)] * (2 * d) + [(None, None)] * int(problem.fit_intercept)
    # A loose L-BFGS-B phase finds the signs; the orthant Newton polish makes it exact.
    minimize(fun_grad, v0, jac=True, method="L-BFGS-B", bounds=bounds, callback=callback,
             options=dict(maxiter=max_iter, ftol=0.0, gtol=0.0, maxcor=20))
    if monitor.best[2].relative_gap > tol and not monitor.stopped_early:
        n_iter += _polish_orthant(problem, monitor, max_iter)
    return monitor.result("l-bfgs-b", n_iter)


def _jacobi_scale(problem):
    """s_j = 1/√h_j, h_j = μ‖X_{:j}‖²/n + λ, an upper bound on the smooth part's Hessian diagonal
    (μ the loss's smoothness): the variables u = w/s have Hessian diagonals of at most 1."""
    curvature = problem.loss.smoothness if np.isfinite(problem.loss.smoothness) else 1.0
    return 1.0 / np.sqrt(curvature * problem.col_norms_sq / problem.n + problem.penalty.lam)


def _polish_orthant(problem, monitor, max_rounds):
    """Trust-region Newton on the orthant of the best point, with its support fixed.

    With signs σ fixed on a support S, κ‖w‖₁ = κ σ·w_S is linear, so the restricted problem is
    smooth and strongly convex; its solution is the elastic-net optimum if it keeps the signs
    and |∂f/∂w_j| ≤ κ off the support. Violators are moved in or out and the round repeats.
    """
    kappa, rounds = problem.penalty.kappa, 0
    for rounds in range(1, min(max_rounds, 20) + 1):
        coef, intercept, _ = monitor.best
        grad = problem.grad(problem.join(coef, intercept))[:problem.d]
        signs = np.sign(coef)
        entering = (signs == 0) & (np.abs(grad) > kappa)
        signs[entering] = -np.sign(grad[entering])
        support = np.flatnonzero(signs)
        sub = Problem(problem.X[:, support], problem.y, problem.loss, L2(problem.penalty.lam), problem.fit_intercept)
        linear = np.append(kappa * signs[support], 0.0) if problem.fit_intercept else kappa * signs[support]
        z0 = sub.join(coef[support], intercept)
        res = minimize(lambda z: sub.fun(z) + linear @ z, z0, jac=lambda z: sub.grad(z) + linear,
                       hessp=sub.hessp, method="trust-ncg", options=dict(gtol=1e-14, maxiter=200))
        # trust-ncg ends where the objective's rounding hides its decrease, short of rounding level in
        # the gradient on columns scaled over decades (relative gap 5e-12, ‖g‖ 2e-8, in 20 rounds):
        # Newton steps while the gradient shrinks get there
        w_s, b = sub.split(newton_polish(res.x, lambda z: sub.grad(z) + linear, sub.hessp, cg_rtol=1e-10))
        w_s = np.where(np.sign(w_s) == signs[support], w_s, 0.0)  # project back onto the orthant
        new = np.zeros(problem.d)
        new[support] = w_s
        if monitor.check(new, b):
            break
        if monitor.best[0] is not None and not np.array_equal(monitor.best[0], new):
            break  # no progress: the polish did not improve on the best point
    return rounds


def warn_not_converged(result, tol):
    if not result.converged and not result.stopped_early:
        from sklearn.exceptions import ConvergenceWarning

        warnings.warn(
            f"glru solver ({result.method}) stopped at relative gap {result.evaluation.relative_gap:.3g} "
            f"> tol={tol:g} after {result.n_iter} iterations; increase max_iter.",
            ConvergenceWarning, stacklevel=3,
        )


def polish(problem, coef, intercept, max_steps=20, newton_solve=None, accelerate=False, decrement_tol=0.0,
           objective=None, preconditioner=None):
    """Newton steps from a solved point until the gradient stops shrinking (L2 penalty only).

    A duality gap cannot resolve the optimum better than its rounding allowance: at a relative
    gap of 1e-11 a decision value is only pinned to about √(2·gap/λ)·‖x‖ (1e-3 on a9a.t with
    λ = 6.8e-5). Newton steps converge quadratically to the point where the gradient is zero up
    to rounding, which decides the sign of a decision value that no certificate can: what an
    exact refit computes. Each step solves H s = −g by conjugate gradients on ``hessp``, or with
    ``newton_solve(g, z)`` ≈ H⁻¹g when given (e.g. a factorization of a nearby Hessian: chord
    steps, linear convergence, no Hessian-vector products; or :func:`dense_newton_solve`, the
    exact Hessian at z: quadratic convergence when d is small); a step that does not reduce ‖g‖ ends the
    polish (rounding level reached), and so does a step whose Newton decrement gᵀH⁻¹g (≈ twice the
    suboptimality before it) is at most ``decrement_tol``, where a duality gap is all that is
    needed. ``objective``: damped steps instead (:func:`newton_polish`). ``preconditioner``: v ↦ M⁻¹v
    for the conjugate gradients, M ≈ the Hessian up to a scale. Returns (coef, intercept).
    """
    if problem.penalty.kappa > 0:
        return coef, intercept
    z = newton_polish(problem.join(coef, intercept), problem.grad, problem.hessp, max_steps, newton_solve,
                      accelerate=accelerate, decrement_tol=decrement_tol, objective=objective,
                      preconditioner=preconditioner)
    return problem.split(z)


def newton_polish(z, grad, hessp, max_steps=20, newton_solve=None, cg_rtol=1e-4, accelerate=False,
                  decrement_tol=0.0, objective=None, preconditioner=None):
    """The loop of :func:`polish` on a flat parameter vector z of any smooth objective given by
    ``grad(z)`` and ``hessp(z, v)``: Newton steps (CG to relative residual ``cg_rtol``, or
    ``newton_solve(g, z)``) while ‖g‖ shrinks, and until a step's decrement −gᵀs is at most
    ``decrement_tol``. ``accelerate``: the next point combines the last steps
    (:class:`glru.anderson.Anderson`), for chord steps (a frozen Hessian: linear convergence).
    With ``objective`` (a callable of z) each step is halved until the objective decreases
    instead (damped Newton: global convergence from a cold start). ``preconditioner``: v ↦ M⁻¹v
    for the conjugate gradients. Returns z."""
    anderson = Anderson(ANDERSON_DEPTH) if accelerate else None
    g = grad(z)
    # near separation the curvature underflows: CG can break down (0/0) and a step can blow up;
    # such a step is not taken (its gradient is not smaller), and the polish ends where it is
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for _ in range(max_steps):
            if newton_solve is not None:
                try:
                    step = -newton_solve(g, z)
                except (np.linalg.LinAlgError, ValueError):  # no curvature to factor (Huber with an
                    break  # intercept, every residual on a linear piece): the polish ends at the solved point
            else:
                hessian = LinearOperator((z.size, z.size), matvec=lambda v, at=z: hessp(at, v), dtype=float)
                M = None if preconditioner is None else LinearOperator((z.size, z.size), matvec=preconditioner,
                                                                       dtype=float)
                step, _ = cg(hessian, -g, rtol=cg_rtol, maxiter=10 * z.size, M=M)  # inexact Newton: ‖g‖ × cg_rtol
            if not np.all(np.isfinite(step)):
                break
            if objective is not None:
                step = _damped(objective, z, step)
                if step is None:
                    break
            z_new = z + step if anderson is None else anderson.next(z, step)
            g_new = grad(z_new)
            if objective is None and not np.linalg.norm(g_new) < np.linalg.norm(g):
                break
            decrement = -float(g @ step)
            z, g = z_new, g_new
            if np.linalg.norm(step) <= 4 * np.finfo(float).eps * (1.0 + np.linalg.norm(z)) or decrement <= decrement_tol:
                break
    return z


def _damped(objective, z, step, max_halvings=30):
    """``step`` halved until objective(z + step) < objective(z), or None if that never happens."""
    f = objective(z)
    for _ in range(max_halvings):
        if objective(z + step) < f:
            return step
        step = 0.5 * step
    return None


def subsampled_newton(problem, coef=None, intercept=0.0, *, stride=4, max_steps=20, decrement_rtol=1e-3):
    """A rough L2 optimum by Newton steps whose Hessian is formed on about n/``stride`` rows
    (O(nnz/stride·d + d³) a step), each backtracked until the objective decreases.

    The rows are drawn with probabilities proportional to their curvature D_i
    (:func:`curvature_sample`) and weighted by the inverse: an unbiased estimate that keeps
    every row of large curvature. Near separation most rows have almost none and a few carry
    the Hessian; every ``stride``-th row misses them (w8a: the third step overshot, where the
    sample's steps now follow the exact Newton's 8 steps). Weighing rows by their share of the
    trace, D_i‖x̃_i‖², would favour long rows, whose cost in the Gram matrix grows with the
    square of their length (on w8a: twice the time, no fewer steps). The sampled Hessian's
    diagonal is raised to the exact one where it falls short (one pass over X's squared
    values): a feature rare in the sample would otherwise get almost no curvature. Where a step
    still has to be shortened, the sample is not to be trusted: L-BFGS (gradients only)
    finishes the rough solve. Stops where the Newton decrement gᵀH⁻¹g (≈ twice the
    suboptimality) is at most ``decrement_rtol`` times the objective, or after ``max_steps``:
    beyond that point the sampled Hessian's error makes its steps converge only linearly, and a
    Hessian on all rows (chord steps) does better. Only a starting point: nothing downstream
    trusts it. Returns (coef, intercept, steps taken)."""
    n = problem.n
    z = problem.join(np.zeros(problem.d) if coef is None else coef, intercept)
    f, taken = problem.fun(z), 0
    penalty_diagonal = np.append(np.full(problem.d, problem.penalty.lam), [0.0] * problem.fit_intercept)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for _ in range(max_steps):
            c, b = problem.split(z)
            g = problem.grad(z)
            # mean form: H ≈ (1/n) Σ_R (D_i/p_i) x̃_i x̃_iᵀ + λP, its diagonal raised to the exact one's
            curvatures = problem.loss.second_derivative(problem.y, problem.margins(c, b)) / n
            rows, weights = curvature_sample(curvatures, max(1, n // stride))
            hessian = weighted_gram(problem.X, curvatures[rows] * weights, problem.fit_intercept, rows)
            exact = np.append(col_norms_sq(problem.X, curvatures), [curvatures.sum()] * problem.fit_intercept)
            diagonal = np.diag_indices_from(hessian)
            hessian[diagonal] = np.maximum(hessian[diagonal] + penalty_diagonal, exact + penalty_diagonal)
            try:
                step = scipy.linalg.cho_solve(scipy.linalg.cho_factor(hessian), g)
            except (np.linalg.LinAlgError, ValueError):
                break
            if not np.all(np.isfinite(step)) or g @ step <= decrement_rtol * f:
                break
            t = 1.0
            for _ in range(30):
                f_new = problem.fun(z - t * step)
                if f_new < f:
                    break
                t *= 0.5
            else:
                break
            z, f, taken = z - t * step, f_new, taken + 1
            if t < 1.0:  # the sample misjudges the curvature
                z = _limited_memory_bfgs(problem, z, LBFGS_ROUGH_STEPS, decrement_rtol)
                break
    return (*problem.split(z), taken)


def curvature_sample(scores, size):
    """About ``size`` rows drawn with probabilities p_i = min(1, c·scores_i), Σp_i = size, and
    their weights 1/p_i: (sorted rows, weights). Systematic sampling along the rows' order (a
    row is taken where the running sum of p crosses a half-integer): deterministic, every row
    with p_i = 1 taken, and Σ_R w_i v_i an unbiased estimate of Σ_i v_i for a uniformly random
    offset, which the fixed offset ½ stands in for."""
    scores = np.maximum(np.nan_to_num(scores), 0.0)
    probabilities = np.zeros_like(scores)
    capped = np.zeros(scores.size, dtype=bool)
    for _ in range(64):  # water-filling: rows whose p would exceed 1 are taken surely
        rest = scores[~capped].sum()
        if rest <= 0.0:
            break
        probabilities = np.where(capped, 1.0, scores * ((size - capped.sum()) / rest))
        over = probabilities > 1.0
        if not over.any():
            break
        capped |= over
    probabilities = np.minimum(probabilities, 1.0)
    crossings = np.floor(np.cumsum(probabilities) + 0.5)
    rows = np.flatnonzero(np.diff(crossings, prepend=0.0) >= 1.0)
    return rows, 1.0 / probabilities[rows]


LBFGS_ROUGH_STEPS = 50


def _limited_memory_bfgs(problem, z, max_steps, rtol):
    """SciPy's L-BFGS-B from z, at most ``max_steps`` iterations, stopped when an iteration
    lowers the objective by less than ``rtol``·1e-3 of it. Gradients only: where a Hessian,
    even a sampled one, costs many gradients and misjudges the curvature."""
    result = minimize(lambda v: (problem.fun(v), problem.grad(v)), z, jac=True, method="L-BFGS-B",
                      options=dict(maxiter=max_steps, ftol=1e-3 * rtol, gtol=0.0))
    return result.x if np.all(np.isfinite(result.x)) and result.fun <= problem.fun(z) else z


def dense_newton_solve(problem, frozen=False):
    """``newton_solve`` for :func:`polish` with the exact Hessian at each point, formed densely
    (O(nnz·d + d³) a step: for a few hundred features at most); with ``frozen``, the Hessian at
    the first point, kept: chord steps, which contract at the rate the Hessian moves, tiny from
    a solved point (a fold of w8a standardized: 5 Gram matrices of 60 ms, now one)."""
    hessian = None

    def newton_solve(g, z):
        nonlocal hessian
        if hessian is None or not frozen:
            coef, intercept = problem.split(z)
            strength = problem.n * problem.penalty.lam  # sum form: H_sum = n·H_mean
            hessian = NewtonCentres(problem.X, problem.y, problem.loss, problem.fit_intercept, coef, intercept,
                                    strength)
        return problem.n * hessian.full_solver(g)
    return newton_solve


# a certificate's held-out bounds are computed again once its radius is within this factor of the
# radius the open rows were last seen to need
SIGN_CHECK_SLACK = 2.0


class SignsDecided:
    """``stop_when`` of a solve whose held-out rows ``X_test`` only need their signs: True once
    the certificate decides every one (bounds with the exact intercept bracket and the box).

    A check that leaves rows open estimates the radius they need, the radius times the smallest
    |value|/half-width among them (half-widths shrink with the radius), and the next checks are
    skipped until the radius is within ``SIGN_CHECK_SLACK`` of it: the bounds cost passes over
    the training rows (the intercept's bracket) that an iterate far from deciding does not
    need. A check first takes the bounds before that bracket
    (:meth:`~glru.certificate.Certificate.unshifted_decision_bounds`), which decide whatever the
    certified ones do, and more: the bracket only where they decide every sign (a fold of w8a
    standardized: 5 checks of 50 ms, 35 of them the bracket, before the one that stops). Only a
    saving: a stop the skip delays comes at a later iterate (at worst the solve's own
    tolerance, where ``always`` checks)."""

    def __init__(self, X_test):
        self.X_test, self.check_below = X_test, np.inf
        self.bounds = None  # (coef, intercept, lower, upper) of the last certified bounds: see sign_bounds_at

    def __call__(self, cert, always=False):
        gated = cert.penalty.strong_convexity > 0
        radius = cert.radius if gated else None
        if gated and not always and (self.waits_for(cert.radius) or not self.decided(
                *cert.unshifted_decision_bounds(self.X_test), radius)):
            # (the bounds before the intercept's bracket: what they leave open, the bracket does too)
            return False
        lower, upper = cert.sign_bounds(self.X_test, intercept="exact")
        self.bounds = (cert.coef_centre, cert.intercept_centre, lower, upper)
        return self.decided(lower, upper, radius)

    def needed_radius(self):
        """The radius the open rows were last seen to need (∞ before a check found rows open with
        finite bounds)."""
        return self.check_below / SIGN_CHECK_SLACK

    def waits_for(self, radius):
        """Whether a check at a certificate of this radius is skipped (it waits for a smaller one)."""
        return radius > self.check_below

    def decided(self, lower, upper, radius=None):
        """Whether the bounds (lower, upper) on X_test's decision values, certified within
        ``radius`` (None: no strongly convex penalty), decide every sign; if not, the next checks
        wait for the radius the open rows need."""
        open_rows = ~signs_decided(lower, upper)
        if not open_rows.any():
            return True
        lower, upper = lower[open_rows], upper[open_rows]
        if radius is not None and np.isfinite(lower).all() and np.isfinite(upper).all():
            half, middle = 0.5 * (upper - lower), 0.5 * (upper + lower)
            self.check_below = SIGN_CHECK_SLACK * radius * float(np.min(np.abs(middle) / half))
        else:  # an iterate whose bounds overflow (a wild start) tells nothing of the radius needed
            self.check_below = np.inf
        return False


def solve_held_out(X_train, y_train, loss, penalty, fit_intercept, coef, intercept, X_test, tol, method="auto",
                   column_summaries=None, signs=None, preconditioner=None, start_open=False, known_hessian=None,
                   start_evaluation=None, with_evaluation=False, formed_polish=None, dual_eps=None,
                   with_bounds=False, learned_eps=None):
    """Solve the problem on (X_train, y_train) from (coef, intercept) by :func:`solve`'s
    ``method``, to relative gap ``tol`` and then polished (:func:`polish`); with ``X_test``,
    stop as soon as the signs of its decision values are certified (Remark 3). Returns (coef,
    intercept). A module-level function of plain arrays, so that joblib can ship it to other
    processes or a cluster. ``column_summaries``: X_train's (‖X_{:j}‖², dual-domain box) where the
    caller has them (:meth:`Problem.column_summaries_after`): built here, they are a pass over
    X_train in small blocks, 8 ms of a 20 ms leave-one-out solve on sparse 1000 × 5000. ``signs``:
    the :class:`SignsDecided` of X_test to go on with, where the caller has checked the start
    (its next check waits for the radius the open rows need). ``preconditioner``: v ↦ M⁻¹v for
    the polish's conjugate gradients (M ≈ the Hessian up to a scale), where it is not formed.
    ``start_open``, ``start_evaluation``: the caller found (coef, intercept) open on this problem,
    with that gap evaluation if given (:func:`solve`). ``known_hessian``: :attr:`Problem.known_hessian`
    (for semismooth Newton's steps). ``with_evaluation``: (coef, intercept, the GapEvaluation there
    or None where the point was polished after the solve) is returned. ``formed_polish``: whether
    the polish forms the Hessian (None: where the solve ended on formed steps or it is cheap,
    :func:`_formed_polish_pays`). ``dual_eps``: see :func:`solve`. ``with_bounds``: (coef, intercept, the
    certified (lower, upper, values) of X_test's decision values there, or None where the point was
    polished) is returned (:func:`sign_bounds_at`): where the solve stopped on the signs, they cost
    the held-out rows' bounds at the gap the solve evaluated last, not another gap (as certifying
    the point again would: 3.1 of 20 ms, LinearSVC 5-fold on sparse 2941 × 604). ``learned_eps``: a
    :class:`LearnedDualTolerance` that gives ``dual_eps`` where that is None, and learns from this solve."""
    from .certificate import certificate_at  # (certificate imports this module)

    problem = Problem(X_train, y_train, loss, penalty, fit_intercept)
    problem.known_hessian = known_hessian
    if column_summaries is not None:  # the values of the two cached properties
        problem.col_norms_sq, problem.dual_domain = column_summaries
    stop_when = signs if signs is not None else None if X_test is None else SignsDecided(X_test)
    if dual_eps is None and learned_eps is not None:
        dual_eps = learned_eps.eps
    result = solve(problem, coef, intercept, tol=tol, stop_when=stop_when, method=method, start_open=start_open,
                   start_evaluation=start_evaluation, dual_eps=dual_eps)
    if learned_eps is not None:
        learned_eps.learn(result)
    if not (result.converged or result.stopped_early):
        # a start the solver cannot leave (squared hinge, columns scaled over four decades, C = 100:
        # trust-region Newton and LIBLINEAR after it stalled at relative gap 1.0 from a fold's centre,
        # where a cold solve converges): once more from 0, the better point kept
        cold = solve(problem, None, 0.0, tol=tol, stop_when=stop_when, method=method)
        result = cold if cold.converged or cold.stopped_early or cold.evaluation.gap < result.evaluation.gap \
            else result
    # a solve that converges stops before asking stop_when: its point may settle the signs too
    # (dual coordinate descent jumps from an open sign to the gap's rounding level in one run)
    decided = result.signs_decided
    if decided is None:
        decided = stop_when is not None and stop_when(
            certificate_at(problem, result.coef, result.intercept, result.evaluation), always=True)
    if result.stopped_early or decided:
        if with_bounds:
            return result.coef, result.intercept, sign_bounds_at(problem, result, X_test, stop_when)
        return (result.coef, result.intercept, result.evaluation) if with_evaluation else (result.coef, result.intercept)
    # a sign no certificate decides, or values: polished, with the Hessian formed where the solve found
    # its products dear (it ended on those steps) or it costs few of them
    formed = result.method.endswith("formed-newton") or _formed_polish_pays(problem) if formed_polish is None \
        else formed_polish
    polished = polish(problem, result.coef, result.intercept,
                      newton_solve=dense_newton_solve(problem, frozen=True) if formed else None,
                      preconditioner=None if formed else preconditioner)
    return (*polished, None) if with_evaluation or with_bounds else polished


def sign_bounds_at(problem, result, X_test, signs):
    """(lower, upper, values) of X_test's decision values at ``result``'s point: the bounds of
    :meth:`~glru.certificate.Certificate.sign_bounds` (as far as the signs need them) certified by the
    gap evaluation the solve made there, and the values themselves. The bounds are those the solve's
    :class:`SignsDecided` ``signs`` last computed where that was at this point (the check that stopped
    the solve, or asked of its end), else computed here."""
    from .held_out import certified_bounds  # (held_out imports certificate, which imports this module)

    if signs.bounds is not None:
        coef, intercept, lower, upper = signs.bounds
        if intercept == result.intercept and np.array_equal(coef, result.coef):
            return lower, upper, np.asarray(X_test @ result.coef).ravel() + result.intercept
    return certified_bounds(problem, result.coef, result.intercept, X_test, signs_only=True,
                            evaluation=result.evaluation)[:3]


def _formed_polish_pays(problem):
    """Whether :func:`polish` from a solved point costs less with the Hessian formed and factored
    once (chord steps) than with conjugate gradients: an L2 penalty, d̃ ≤ ``FORMED_MAX_DIM`` and
    a Gram matrix and a factorization estimated at most ``POLISH_PRODUCTS`` products with X."""
    dim = problem.d + problem.fit_intercept
    if not (problem.penalty.kappa == 0 and problem.penalty.lam > 0 and dim <= FORMED_MAX_DIM):
        return False
    return gram_seconds(problem.X) + factor_seconds(dim) <= POLISH_PRODUCTS * product_seconds(problem.X)


# a polish by conjugate gradients takes 2–3 Newton steps of tens to hundreds of products on columns
# scaled over decades; with a StandardScaler (full fits of 10-fold): mushrooms, logistic 33 ms against
# 9 ms formed (estimated at 212 products), squared hinge 29 against 6 ms; a9a.t, squared hinge 18
# against 9 ms (140); madelon.t 13 against 11–15 ms (250)
POLISH_PRODUCTS = 300
