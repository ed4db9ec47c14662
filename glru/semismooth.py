"""Semismooth Newton for L2 problems whose loss has a piecewise constant curvature.

For the squared hinge (and the smoothed hinge, Huber) ℓ'' jumps where a row crosses a kink,
and the objective is piecewise quadratic. Its generalized Hessian at z,

    H(z) = (1/n) X̃ᵀ diag(ℓ''(X̃z)) X̃ + λP,

is exact on the piece z lies in: once the iterate is on the optimum's piece, one Newton step
lands on the optimum (finite termination: Mangasarian's finite Newton method). Whole steps
are taken first, while fewer rows change sides than ever before (block principal pivoting,
:func:`_pivot`): near a hard margin they find the optimum's piece in 5–16 steps. Where they
do not (dense 2000 × 500, LinearSVC: 300–600 rows change sides at every step), the steps are
damped: taken whole where that decreases the objective enough (Armijo), and otherwise
shortened to the objective's minimizer along them, they converge in about 30 (10–20 rows
change a step; 125 at C = 100, where the minimizer stops at the next row's kink). H is formed
once and, after each step, corrected by the Gram matrix of the rows whose curvature changed,
then factored: O(d̃³/3) a step, which pays where d̃ is a few hundred (the whole steps of the
squared hinge go through the dual instead: :class:`_DualPieces`). Trust-region Newton–CG takes
the same steps inexactly and zigzags with the pieces; LIBLINEAR's dual coordinate descent takes
no start and needs many passes for a tight gap (0.65 s a fold of that data set, where these
steps take 0.24 s, gap checks included).

For a smooth loss (logistic) the same steps are damped Newton steps, H formed again at each:
:mod:`glru.solver` takes them where trust-region Newton–CG's Hessian-vector products grow dearer
than a few factorizations (``"formed-newton"``).

The steps are only proposals: the caller's ``check`` (a duality gap, an early-exit
certificate) decides when to stop.
"""

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from .duality import EPS
from .losses import SquaredHinge
from .newton_centres import augmented_rows, weighted_gram

ROOT_STEPS = 40  # evaluations of φ' at most in a line search (regula falsi, Illinois)
SLOPE_SHARE = 1e-6  # of |φ'(0)| that |φ'(t)| must fall to: φ' is piecewise linear, a few evaluations
ARMIJO = 1e-4  # sufficient decrease, as a share of the linear prediction, for a whole step
REFORM_SHARE = 0.25  # more changed rows than this share of n: H is formed again, not corrected


def applies(loss):
    """Whether ``loss`` has a piecewise constant curvature (no self-concordance bound: ℓ''
    jumps), the losses these steps are for."""
    return not np.isfinite(loss.self_concordance)


def semismooth_newton(problem, z, check, max_steps):
    """Semismooth Newton steps on ``problem`` (an L2 :class:`glru.problem.Problem`) from z = (w, b),
    whole ones first where :func:`pivots_apply` (:func:`_pivot`), then damped ones, until
    ``check(coef, intercept)`` returns True, a step is at rounding level or no longer decreases
    the objective, or H cannot be factored (:func:`_factor`). Returns the number of steps taken.
    The damped steps' last Hessian is left as the problem's ``known_hessian``, with the curvatures
    of the last point (the full fit's is a :class:`glru.fold_hessian.StartGram`'s ``known``)."""
    pivoted = 0
    if pivots_apply(problem):
        z, pivoted, done = _pivot(problem, z, check, max_steps)
        if done:
            return pivoted
    steps, curvatures, hessian = _damped_steps(problem, z, check, pivoted, max_steps)
    problem.known_hessian = (curvatures, hessian)
    return steps


def _damped_steps(problem, z, check, first, max_steps):
    """:func:`semismooth_newton`'s damped steps, counted from ``first``: (steps, the curvatures of
    the last point, the Hessian for them)."""
    curvatures = _curvatures(problem, z)
    hessian = _first_hessian(problem, curvatures)
    unresolved = 0  # steps whose length φ' alone decided (see _search)
    for step_count in range(first, max_steps):
        if check(*problem.split(z)) or unresolved == UNRESOLVED_STEPS:
            return step_count, curvatures, hessian
        taken = _damped_step(problem, z, hessian)
        if taken is None:
            return step_count, curvatures, hessian
        length, step, resolved = taken
        unresolved += not resolved
        with np.errstate(over="ignore"):  # a wild start (an intercept of 1e249) has no finite norm
            at_rounding = length * np.linalg.norm(step) <= 4 * EPS * (1.0 + np.linalg.norm(z))
        if length == 0.0 or at_rounding:
            return step_count, curvatures, hessian
        z = z + length * step
        new = _curvatures(problem, z)
        hessian = _updated(hessian, problem, np.flatnonzero(new != curvatures), new, curvatures)
        curvatures = new
    check(*problem.split(z))
    return max_steps, curvatures, hessian


def pivots_apply(problem):
    """Whether :func:`semismooth_newton` tries whole steps first: a piecewise quadratic loss, at
    most ``PIVOT_MAX_ROWS_PER_FEATURE`` rows a feature."""
    return applies(problem.loss) and problem.n <= PIVOT_MAX_ROWS_PER_FEATURE * (problem.d + problem.fit_intercept)


def _pivot(problem, z, check, max_steps):
    """Whole Newton steps from z by the block principal pivoting rule of Júdice and Pires
    (1994), which Kim and Park (2011) found fast for nonnegative least squares: (z', steps, done).

    On a piecewise quadratic objective a whole step lands on the minimizer of the current piece's
    quadratic; for the squared hinge that is the exchange, in the dual (α ≥ 0, a linear
    complementarity problem), of every row on the wrong side of its kink. Whole steps are taken
    while fewer rows change sides than at any step before, and ``PIVOT_ALLOWANCE`` more after
    each such record; then the damped steps go on from the point of lowest objective visited.
    Near a hard margin (large C) the damped steps crawl, the line search stopping at the next
    row's kink: LinearSVC(C=29) on dense 548 × 289 took 10–16 whole steps a fold where damped
    steps took 30–110. ``done``: ``check`` returned True at z', or a step could not be formed."""
    curvatures = _curvatures(problem, z)
    pieces = _DualPieces(problem) if dual_pieces_apply(problem) else _PrimalPieces(problem, curvatures)
    best, best_value = z, problem.fun(z)
    fewest, allowance = np.inf, PIVOT_ALLOWANCE
    for step_count in range(max_steps):
        if check(*problem.split(z)):
            return z, step_count, True
        new_z = pieces.minimizer(z, curvatures)
        if new_z is None:
            return z, step_count, True
        new = _curvatures(problem, new_z)
        changed = np.flatnonzero(new != curvatures)
        if changed.size < fewest:
            fewest, allowance = changed.size, PIVOT_ALLOWANCE
        elif allowance > 0:
            allowance -= 1
        else:
            return best, step_count, False
        pieces.moved(changed, new, curvatures)
        z, curvatures = new_z, new
        value = problem.fun(z)
        if value < best_value:
            best, best_value = z, value
    check(*problem.split(z))
    return z, max_steps, True


def dual_pieces_apply(problem):
    """Whether whole steps go through the dual (:class:`_DualPieces`): the squared hinge with no
    unpenalized intercept, its n × n Gram matrix at most ``DUAL_PIECES_MAX_ROWS`` square. Where
    whole steps are tried at all (n ≤ ``PIVOT_MAX_ROWS_PER_FEATURE``·d̃) they cost less than the
    primal's: the Gram matrix once (n²d̃, at most twice the primal's first Hessian), then the rows
    inside the margin, fewer than n, where the primal forms its Hessian again whenever many rows
    change."""
    return type(problem.loss) is SquaredHinge and not problem.fit_intercept and problem.n <= DUAL_PIECES_MAX_ROWS


class _PrimalPieces:
    """The minimizer of the quadratic piece at z: z − H⁻¹∇f(z), H formed once and corrected as
    rows change pieces (d̃ × d̃ factorizations)."""

    def __init__(self, problem, curvatures):
        self.problem, self.hessian = problem, _first_hessian(problem, curvatures)

    def minimizer(self, z, curvatures):
        upper = _factor(self.hessian, self.problem)
        return None if upper is None else z - scipy.linalg.cho_solve((upper, False), self.problem.grad(z))

    def moved(self, changed, new, old):
        self.hessian = _updated(self.hessian, self.problem, changed, new, old)


class _DualPieces:
    """The same minimizer through the dual, for the squared hinge with no unpenalized intercept:
    with z_i = y_i x_i, C = 1/(λn) and I the rows with curvature (y_i x_i·w < 1), the piece's
    minimizer is w = Σ_I α_i z_i, where (Z_I Z_Iᵀ + I/2C) α_I = 1 (set the gradient
    −(2/n) Z_Iᵀ(1 − Z_I w) + λw to 0, α = 2C(1 − Z_I w)). It costs an n × n Gram matrix once
    and an |I| × |I| factorization a step, where the primal forms and factors d̃ × d̃: a fold of
    make_classification 1418 × 1453 (5-fold, C = 34) took 12 steps either way, 0.12–0.47 s
    against 1.0–2.2 s in the primal."""

    def __init__(self, problem):
        self.problem, X, y = problem, problem.X, problem.y
        gram = X @ X.T
        self.gram = gram.toarray() if sp.issparse(gram) else np.asarray(gram)
        self.gram *= y[:, None]  # (in place: no second n × n array)
        self.gram *= y[None, :]
        self.ridge = 0.5 * problem.penalty.lam * problem.n  # 1/(2C)

    def minimizer(self, z, curvatures):
        rows = np.flatnonzero(curvatures)
        block = self.gram[np.ix_(rows, rows)]
        block[np.diag_indices_from(block)] += self.ridge
        try:
            alpha = scipy.linalg.cho_solve(scipy.linalg.cho_factor(block, check_finite=False), np.ones(rows.size))
        except np.linalg.LinAlgError:
            return None
        return np.asarray(self.problem.X[rows].T @ (self.problem.y[rows] * alpha)).ravel()

    def moved(self, changed, new, old):
        pass


PIVOT_ALLOWANCE = 3  # whole steps past the fewest rows changed (Kim and Park's p̄)
# Whole steps are tried with at most this many rows a feature. The squared hinge's dual is the linear
# complementarity problem of Z Zᵀ + I/2C (z_i = y_i x_i): with more rows than features n − d̃ of its
# eigenvalues are 1/2C, and near a hard margin whole exchanges overshoot. They found the optimum in
# 5–16 steps at 0.8–1.9 rows a feature (make_classification 1418 × 1453 and 548 × 289, C ≈ 30; dense
# Gaussian 600 × 500); at 2.6–4 (1000 × 250 at C = 100, 2000 × 500 at C = 1 and 100, 3716 × 1159 at
# C = 73) they never did, and cost a tenth of the damped steps' time
PIVOT_MAX_ROWS_PER_FEATURE = 2.0
DUAL_PIECES_MAX_ROWS = 4096  # the dual's Gram matrix is n × n (128 MiB at this size)


def newton_step(problem, z):
    """One damped step of :func:`semismooth_newton` from z, its Hessian formed there: the new
    point (z itself where H cannot be factored or no step decreases the objective)."""
    taken = _damped_step(problem, z, problem.hessian(_curvatures(problem, z)))
    return z if taken is None else z + taken[0] * taken[1]


def _damped_step(problem, z, hessian):
    """(length, step, resolved): the Newton step −H⁻¹∇f(z), its length from :func:`_search` and
    whether the objective's values resolved it, or None where H cannot be factored."""
    upper = _factor(hessian, problem)
    if upper is None:
        return None
    gradient = problem.grad(z)
    step = -scipy.linalg.cho_solve((upper, False), gradient)
    length, resolved = _search(problem, z, step, float(gradient @ step))
    return length, step, resolved


def _factor(hessian, problem):
    """The upper Cholesky factor of H, or, where no row has curvature left for the unpenalized
    intercept (a cold start of the smoothed hinge: every row on a linear piece), of H with λ
    on the intercept's diagonal too: any positive definite matrix gives a descent direction, and
    the line search does the rest. None if neither is positive definite."""
    try:
        return scipy.linalg.cholesky(hessian, check_finite=True)
    except (np.linalg.LinAlgError, ValueError):
        if not problem.fit_intercept:
            return None
    shifted = hessian.copy()
    shifted[-1, -1] += problem.penalty.lam
    try:
        return scipy.linalg.cholesky(shifted, check_finite=True)
    except (np.linalg.LinAlgError, ValueError):
        return None


def _curvatures(problem, z):
    """ℓ''(x̃_i·z)/n, the mean form's row weights of H."""
    return problem.loss.second_derivative(problem.y, problem.margins(*problem.split(z))) / problem.n


def _first_hessian(problem, curvatures):
    """H for ``curvatures``: the problem's known Hessian (:attr:`glru.problem.Problem.known_hessian`,
    computed here at its first use) corrected by the rows whose curvature differs, else formed."""
    known = problem.known_hessian
    if known is None:
        return problem.hessian(curvatures)
    if callable(known):
        known = problem.known_hessian = known()
    reference, hessian = known
    return _updated(hessian.copy(), problem, np.flatnonzero(curvatures != reference), curvatures, reference)


def _updated(hessian, problem, changed, new, old):
    """The Hessian for curvatures ``new``, from ``hessian`` formed for ``old`` where they differ
    in the rows ``changed`` only: formed again where those are many, else corrected in place."""
    if changed.size > REFORM_SHARE * new.size:
        return problem.hessian(new)
    if changed.size:
        _add_rows(hessian, problem, changed, new[changed] - old[changed])
    return hessian


def _add_rows(hessian, problem, rows, weights):
    """hessian += X̃_Rᵀ diag(weights) X̃_R for rows R: up to ``FEW_ROWS`` as one dense product, for
    which the d̃ × d̃ passes of :func:`weighted_gram` (a zeroed buffer, its triangle mirrored) cost
    more than the product of 10–20 rows, what a step near the optimum changes; more by
    :func:`weighted_gram`, which keeps sparse rows sparse. Made dense, the 1000–5000 rows a step
    of a cold solve changes cost 40 times more: LinearSVC's full fit on sparse Gaussian
    20000 × 500 (5 %) took 0.21 s, 0.15 s of it in these products."""
    if rows.size <= FEW_ROWS:
        block = augmented_rows(problem.X, rows, problem.fit_intercept)
        hessian += block.T @ (weights[:, None] * block)
    else:
        hessian += weighted_gram(problem.X, weights, problem.fit_intercept, rows)


FEW_ROWS = 32


def _line_search(problem, z, step, slope):
    """The step length of :func:`_search` (for chord steps)."""
    return _search(problem, z, step, slope)[0]


def _search(problem, z, step, slope):
    """(t, resolved): a step length t > 0 along ``step`` for φ(t) = f(z + t·step), f the problem's
    smooth objective: 1 where the whole step decreases f enough (Armijo), else the minimizer of φ, the
    root of φ' (increasing: f is convex) by regula falsi in its Illinois variant, one O(n)
    evaluation each on the margins moved by X̃·step; then halved until φ(t) < φ(0) (rounding
    can defeat φ'), 0 if it never is. Near a hard margin (large C) the minimizer stops at the
    next row's kink, one or two rows a step: taking whole steps where they pay cut dense 1000 ×
    250, LinearSVC(C=100), from 163 steps to 125 (10-fold 5.2 → 3.7 s).

    For a smooth loss a whole step after which φ still falls steeply (φ'(1) < −``EXTEND_SHARE``
    ·|φ'(0)|) is extended to φ's minimizer beyond 1 (at most ``EXTEND_MAX``): where rows sit deep
    in the logistic loss's exponential tail (near-separable data, small λ) the quadratic model
    underestimates how far their margins must move, and undamped Newton steps advance them by
    about one unit each (a fold of w8a standardized: 9–14 steps from the full fit's solution,
    the gradient shrinking 2.7-fold a step, for 7–11 extended). Near the optimum φ'(1) ≈ 0 and
    the step stays whole: quadratic convergence is kept.

    Where the decrease a step promises, |φ'(0)|, is below the rounding of the objective's values
    (``resolved`` False), φ' alone decides t: it sums the loss's derivatives, with no
    cancellation of values near φ(0). A gradient still far above its own rounding can lie
    there, on columns scaled over decades: their large curvature makes −gᵀH⁻¹g tiny while the
    small curvatures let ‖g‖ hold a duality gap of 1e-10 (600 × 60, four decades, λ = 1e-4)."""
    if not slope < 0:
        return 0.0, True
    w, b = problem.split(z)
    s_w, s_b = problem.split(step)
    margins = problem.margins(w, b)  # (memoised; nothing below evaluates other margins)
    moves = np.asarray(problem.X @ s_w).ravel() + s_b
    lam, y, loss, n = problem.penalty.lam, problem.y, problem.loss, problem.n
    linear, quadratic = float(w @ s_w), float(s_w @ s_w)

    def derivative(t):
        return float(loss.derivative(y, margins + t * moves) @ moves) / n + lam * (linear + t * quadratic)

    def value(t):
        w_t = w + t * s_w
        return float(loss.value(y, margins + t * moves).mean()) + 0.5 * lam * float(w_t @ w_t)

    start, whole = value(0.0), value(1.0)
    if whole <= start + ARMIJO * slope:
        smooth = np.isfinite(loss.self_concordance)
        return (_extended(derivative, value, slope, whole) if smooth else 1.0), True
    f_upper = derivative(1.0)
    t = _root(derivative, 0.0, 1.0, slope, f_upper, slope) if f_upper > 0 else 1.0
    if -slope <= RESOLUTION * EPS * abs(start):
        return t, False
    for _ in range(30):
        if value(t) < start:
            return t, True
        t *= 0.5
    return 0.0, True


RESOLUTION = 64  # ulps of the objective's value below which its differences do not decide a step
# steps a semismooth Newton solve takes where φ' alone decides them: Newton's steps converge
# quadratically there, and the solve's check (a duality gap) stops it sooner at the optimum
UNRESOLVED_STEPS = 3


EXTEND_SHARE = 0.1  # of |φ'(0)|: a steeper fall of φ at t = 1 extends a whole step (smooth losses)
EXTEND_MAX = 64.0  # the longest extension, in whole steps


def _extended(derivative, value, slope, whole):
    """The step length past 1 where φ (convex, ``value``) stops falling, found by doubling and
    :func:`_root` on φ' (``derivative``), if φ'(1) < −``EXTEND_SHARE``·|``slope``| and φ is lower
    there than at 1 (``whole``, the value there); else 1."""
    lower, f_lower = 1.0, derivative(1.0)
    if not f_lower < -EXTEND_SHARE * abs(slope):
        return 1.0
    upper, f_upper = 2.0, derivative(2.0)
    while f_upper < 0 and upper < EXTEND_MAX:
        lower, f_lower, upper = upper, f_upper, 2.0 * upper
        f_upper = derivative(upper)
    t = _root(derivative, lower, upper, f_lower, f_upper, slope) if f_upper > 0 else upper
    return t if np.isfinite(t) and value(t) < whole else 1.0


def _root(derivative, lower, upper, f_lower, f_upper, slope):
    """The root of the increasing φ' between ``lower`` and ``upper`` (φ' values ``f_lower`` < 0 <
    ``f_upper``) by regula falsi in its Illinois variant, to |φ'| ≤ ``SLOPE_SHARE``·|``slope``|
    or ``ROOT_STEPS`` evaluations."""
    t, kept = upper, 0
    for _ in range(ROOT_STEPS):
        trial = (lower * f_upper - upper * f_lower) / (f_upper - f_lower)
        if not lower < trial < upper:
            trial = 0.5 * (lower + upper)
        f_trial, t = derivative(trial), trial
        if abs(f_trial) <= SLOPE_SHARE * abs(slope):
            break
        if f_trial > 0:  # Illinois: an end kept twice in a row has its value halved
            upper, f_upper = trial, f_trial
            f_lower = 0.5 * f_lower if kept == -1 else f_lower
            kept = -1
        else:
            lower, f_lower = trial, f_trial
            f_upper = 0.5 * f_upper if kept == 1 else f_upper
            kept = 1
    return t
