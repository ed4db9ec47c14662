"""One fold solved on data of its own, its held-out predictions certified (binary, one-vs-rest,
multinomial).

:mod:`glru.cross_validation` certifies every fold from one full fit because the folds share one
X: a fold's problem is the full problem with rows removed. A preprocessing step fitted on each
fold's training rows (a ``StandardScaler`` in a Pipeline) gives every fold data of its own, and
that relation is gone. Each fold is then solved on its own, from a start (the full fit, whose
transformed data are close to a fold's), and, when only the held-out labels are needed, stopped
as soon as the certificate at its iterate decides their signs (Remark 3), at the start itself
where its bounds decide them all (Theorem 1 holds at any centre: nothing is solved then), or by
the chord steps of :mod:`glru.chord` (a logistic fold whose Hessian is cheap to factor);
otherwise solved to rounding level. A sign no certificate decides is read at a point polished
to rounding level, with the zero band of :func:`glru.bounds.zero_band`
(:func:`glru.held_out.held_out_bounds`, as stepwise selection reads its solved candidates).
Multiclass folds (one-vs-rest, multinomial) whose held-out arg-max the start's bounds leave open
are solved to rounding level and certified as the multiclass engines certify their solved
folds.
"""

import warnings

import numpy as np
import scipy.sparse as sp

from .bounds import primal_radius, signs_decided
from .chord import chord_applies, chord_outcome
from .costs import SPARSE_PRODUCT_SECONDS, dense_design_pays_off, factor_seconds, gram_seconds, product_seconds
from .cross_validation import (TOL_ROUNDING, dual_pays_off, pivots_pay_off, primal_applies,
                               primal_pays_off_near_hard_margin)
from .held_out import HeldOutOutcome, certified_bounds, held_out_bounds, nonzero_counts, zero_unused_weights
from .hessian import jacobi_condition
from .losses import SquaredHinge
from .multinomial_cv import centre_fold_outcome, solve_fold, solved_fold_outcome
from .one_vs_rest import outcome_from_classes
from .penalties import L2
from .problem import Problem
from .semismooth import applies as piecewise_quadratic, newton_step
from .solver import (SEMISMOOTH_CHEAP_DIM, SignsDecided, hessian_is_cheap, primal_crawls, semismooth_by_default,
                     solve_held_out)


def refit_fold(X_train, y_train, X_test, loss, penalty, fit_intercept, starts=(), need="labels", polished=False,
               preconditioner=None, stepped=False, known_hessian=None, method=None, learned_eps=None):
    """The exact outcome of one fold: certified bounds on its held-out decision values, its
    labels, and (with ``need="values"``) its solution to rounding level.

    Parameters
    ----------
    X_train, X_test : float64 ndarray or CSR, the fold's training and held-out rows (a narrow CSR
        is solved as a dense array: :func:`glru.costs.dense_design_pays_off`).
    y_train : ndarray, targets in the loss's encoding.
    loss, penalty, fit_intercept : the fold's problem (:class:`glru.problem.Problem`).
    starts : sequence of (coef, intercept)
        Candidate starts (e.g. the full fit, and the fold's solution at a neighbouring C): the
        solve starts from the one with the smallest duality gap (zeros if there is none).
    need : {"labels", "values"}
        "labels" stops as soon as every held-out sign is certified, at the start if its bounds
        decide them all (then nothing is solved).
    polished : bool
        Whether the (one) start is polished to rounding level already (the Newton steps of
        :func:`glru.fold_steps.scaled_fold_starts`): it is then read as it is (the signs its
        bounds leave open, in their zero band) where its duality gap confirms rounding level.
    preconditioner : callable, optional
        v ↦ M⁻¹v, M ≈ the fold's Hessian up to a scale (:meth:`glru.fold_steps.FoldPreconditioner.of_fold`),
        for the conjugate gradients of its polish.
    stepped : bool
        Whether the (one) start is where those Newton–CG steps ended, near the optimum: its ball
        is tried before chord steps (which would form the fold's Hessian first).
    known_hessian : callable, optional
        () ↦ (curvatures, H): the fold's Hessian for the mean-form curvatures of the first start
        (:meth:`glru.fold_hessian.StartGram.fold_hessian`), which semismooth Newton corrects
        instead of forming its own; called only if those steps are taken.
    method : str, optional
        The solve's :func:`glru.solver.solve` method, chosen for all folds from the full fit
        (:func:`liblinear_pays_off`); :func:`fold_method` of the fold if None. With
        ``"liblinear"`` a fold of many held-out rows is solved from its start unchecked, and a
        sign no certificate decides is polished by conjugate gradients.
    learned_eps : glru.solver.LearnedDualTolerance, optional
        Shared by folds solved one after another: the first tolerance of LIBLINEAR's dual's runs,
        where the fold is solved by them, learned from the folds before it.

    Returns
    -------
    HeldOutOutcome (``solved`` is False where the start decided every sign; ``coef``/``intercept``
    are the fold's final point).
    """
    if need not in ("labels", "values"):
        raise ValueError(f"need must be 'labels' or 'values', got {need!r}.")
    if dense_design_pays_off(X_train):
        X_train, X_test = X_train.toarray(), X_test.toarray()
    problem = Problem(X_train, y_train, loss, penalty, fit_intercept)
    # the weights of the columns no training row uses are exactly 0 at the optimum (the penalty is their only
    # term), and a solve from 0 keeps them there; from a start that has them, its point is left within rounding
    # of 0, where a held-out value they alone make (a row whose other columns are all 0) is read by that rounding
    counts = nonzero_counts(X_train)
    starts = [(zero_unused_weights(c, counts), b if fit_intercept else 0.0) for c, b in starts] or \
        [(np.zeros(X_train.shape[1]), 0.0)]
    evaluation = None  # (of the start taken, where several were compared)
    if len(starts) > 1:
        evaluation, coef, intercept = min(((problem.duality_gap(*s), *s) for s in starts), key=lambda e: e[0].gap)
    else:
        coef, intercept = starts[0]
    signs, start_open = None, False
    if need == "labels":
        signs = SignsDecided(X_test)
        chord = chord_applies(problem)
        # the ball at the start decides most leave-one-out folds (a start that fits the fold well);
        # a fold of many held-out rows, one of them near 0, it leaves open: none of the 10-fold
        # folds of a9a.t, mushrooms, w8a and madelon.t with a StandardScaler
        # (a polished start's bounds are computed once, below; at a zero start every decision value is 0,
        # inside the ball's interval: only the box could decide a sign there)
        zero = not (np.any(coef) or intercept) and not loss.box_narrows_ball
        # LIBLINEAR's folds of many held-out rows (liblinear_pays_off, for all folds) start unchecked: a fold's
        # start, the full fit carried over to its scaling, was at relative gaps of 9–15 on the sparse Gaussian shapes
        # of --svc-rows-scaled, its ball deciding nothing, and its gap and bounds cost 0.5–1 ms a fold on
        # 6000 × 400; a run from a start already optimal ends at its first gradient
        unchecked = method == "liblinear" and len(starts) == 1 and X_test.shape[0] > BALL_FIRST_ROWS
        if not polished and not zero and not unchecked and (not chord or stepped or X_test.shape[0] <= BALL_FIRST_ROWS):
            lower, upper, values, evaluation = certified_bounds(
                problem, coef, intercept, X_test, signs_only=True, evaluation=evaluation)
            strength = penalty.strong_convexity  # (the solve's checks then wait for the radius it needs)
            if signs.decided(lower, upper, primal_radius(evaluation.gap, strength) if strength > 0 else None):
                return HeldOutOutcome(lower, upper, values, coef, intercept, solved=False)
            start_open = not evaluation.converged(TOL_ROUNDING)  # (the solve does not evaluate it again)
        start_open = start_open or unchecked
        if chord and not polished:  # decided by chord steps long before rounding level, or a better start for the solve
            outcome, (coef, intercept) = chord_outcome(problem, coef, intercept, X_test,
                                                       lambda lower, upper: ~signs_decided(lower, upper))
            if outcome is not None:
                return outcome
            start_open = False  # (a point the chord steps reached)
    if polished:
        outcome = outcome_at(problem, coef, intercept, X_test, solved=True, evaluation=evaluation)
        if outcome.rounded or need == "labels" and np.all(outcome.decided):
            return outcome
    # LIBLINEAR's folds where liblinear_pays_off chose them (a well-conditioned Hessian, or near a hard margin) are
    # polished by conjugate gradients, quick there, not by a formed Hessian (a Gram matrix of the fold's rows):
    # StandardScaler(with_mean=False) + LinearSVC, 5-fold, sparse Gaussian 20000 × 500 at C = 3 and 75, 328 → 234
    # and 454 → 250 ms (4 folds of 5 polished), 6000 × 400 at C = 75 100 → 88 ms; 1200 × 150, 4000 × 600 and
    # 8000 × 1000 within 2–8 % less
    formed_polish = False if method == "liblinear" else None
    method = fold_method(problem) if method is None else method
    # the column summaries its solve and the bounds below both need, computed once (for the box only:
    # none where it does not narrow the ball)
    summaries = (problem.col_norms_sq, problem.dual_domain) if loss.box_narrows_ball else None
    coef, intercept, evaluation = solve_held_out(
        X_train, y_train, loss, penalty, fit_intercept, coef, intercept, X_test if need == "labels" else None,
        TOL_ROUNDING, method, summaries, signs, preconditioner, start_open, known_hessian,
        evaluation if start_open else None, with_evaluation=True, formed_polish=formed_polish, learned_eps=learned_eps)
    intercept = intercept if fit_intercept else 0.0
    if np.any(coef[counts == 0]):  # (a preconditioned step mixes the columns): 0 again, and evaluated there
        coef, evaluation = zero_unused_weights(coef, counts), None
    outcome = outcome_at(problem, coef, intercept, X_test, solved=True, evaluation=evaluation)
    if need == "labels" and not (outcome.rounded or np.all(outcome.decided)):
        from sklearn.exceptions import ConvergenceWarning  # (as the engine's _warn_unsettled)

        warnings.warn("glru could not solve a fold to rounding level; its held-out labels are read where the "
                      "solver stopped and may differ from an exact refit's.", ConvergenceWarning, stacklevel=2)
    return outcome


def fold_method(problem):
    """The :func:`glru.solver.solve` method of a fold held as data of its own, or of its full fit:
    the engine's choice for folds without a Newton centre, dual coordinate descent for the squared
    hinge where it pays (the start is no closer than 0 for it: madelon.t with a StandardScaler,
    LinearSVC, C = 10, 0.29 s for two folds instead of 0.91 s by damped semismooth Newton from the
    full fit), unless semismooth Newton's whole steps through the dual pay more
    (:func:`glru.cross_validation.pivots_pay_off`: madelon.t, 10-fold, 0.62 → 0.17 s at C = 1,
    1.15 → 0.17 s at C = 10); and where the Hessian is cheap (:func:`glru.solver.hessian_is_cheap`), Newton steps with
    it formed: on standardized columns Newton–CG crawls (a fold of w8a, 10-fold: 7–11 formed steps,
    0.4–0.8 s, against 1.1–1.9 s by Newton–CG until its products ran out; its full fit 0.8 against
    1.9 s; a9a.t's folds solved for values 1.8× faster)."""
    if type(problem.penalty) is L2 and dual_pays_off(problem.loss, problem.fit_intercept, problem.n, problem.d):
        return "semismooth" if pivots_pay_off(problem) else "liblinear-dual"
    return "formed-newton" if hessian_is_cheap(problem) else "auto"


def liblinear_pays_off(problem, coef, intercept, dropped):
    """Whether the folds of ``problem`` (the full data; its folds, each scaled its own way, leave
    out the rows ``dropped``) are solved faster by LIBLINEAR's trust-region Newton (``"liblinear"``)
    from the full fit (coef, intercept) than as :func:`fold_method` has them, where that is
    ``"auto"`` (semismooth Newton's damped steps up to ``SEMISMOOTH_CHEAP_DIM``, Newton–CG
    beyond) or ``"formed-newton"`` (the damped steps, the Hessian formed) for the squared hinge on
    sparse rows (:func:`liblinear_may_pay_off`):

    - near a hard margin (:func:`glru.cross_validation.primal_pays_off_near_hard_margin`, as the
      engine's folds): StandardScaler(with_mean=False) + LinearSVC, 5-fold, on the sparse Gaussian
      shapes of ``benchmarks/bench_cross_validation.py --svc-rows``: 4000 × 600 at C = 3 and 75
      1.24 and 5.3 s, 8000 × 1000 6.2 and 39 s (Newton–CG ran out of products, and semismooth
      Newton's damped steps stopped at a kink a few rows on: 290 steps a fold, each a 601 × 601
      factorization), scikit-learn 0.2–0.95 s; 1200 × 150 at C = 3 and 75, 38 → 22 and 92 → 59 ms;
    - where a fold of semismooth Newton, ``FOLD_STEPS`` factorizations and a Gram matrix of the
      rows (its first Hessian and the rows its steps move), is estimated (:mod:`glru.costs`) to
      cost at least ``PRIMAL_ADVANTAGE`` times ``PRIMAL_PRODUCTS`` of LIBLINEAR's passes over the
      rows (each row counted as ``PRIMAL_ROW_VALUES`` stored values), and the full fit's Hessian
      (``problem``'s :attr:`~glru.problem.Problem.known_hessian`, (curvatures, H) that its solve left;
      else formed at (coef, intercept) and left there, for the folds' StartGram should they stay
      semismooth), scaled to a unit diagonal as LIBLINEAR preconditions its conjugate gradients,
      has a condition number of at most ``PRIMAL_MAX_CONDITION`` (:func:`glru.hessian.jacobi_condition`).
      StandardScaler(with_mean=False) + LinearSVC on sparse Gaussian values (the full fit's
      condition, semismooth Newton's and LIBLINEAR's folds): 6000 × 400, 5-fold, C = 0.1, 3, 75
      (880–2200) 90–107 against 46–91 ms; 20000 × 500 (570–680) 324–452 against 215–412 ms;
      1200 × 150, C = 0.1 (130) 23 against 15 ms; 3559 × 256, C = 1.5, 10-fold (55) 59 against
      43 ms; 1755 × 359, C = 0.49, 5-fold (750) 54 against 23 ms. Standardized one-hot columns are
      conditioned far worse (a9a.t, a8a, mushrooms, w8a at C = 0.1 and 1: 2.5e5–1.8e7), where
      LIBLINEAR's conjugate gradients crawl (a9a.t 0.11 → 1.86 s). Semismooth Newton stays where
      its factorizations and Gram matrices are cheap against LIBLINEAR's passes: 10000 × 200
      (condition 240–340) 59–60 against 60–91 ms; 7088 × 219 (0.5 %: two values a row),
      C = 0.88 (52), 63 against 73 ms; 9801 × 24, 1369 × 34, 338 × 14.

    Never where LIBLINEAR would crawl at the full fit (:func:`glru.solver.primal_crawls`), near a hard
    margin too."""
    if not (liblinear_may_pay_off(problem) and primal_applies(problem.loss, problem.X, dropped)) \
            or primal_crawls(problem, coef, intercept):
        return False
    if primal_pays_off_near_hard_margin(problem, coef, intercept, dropped):
        return True
    if not semismooth_by_default(problem):
        return False
    semismooth = FOLD_STEPS * factor_seconds(problem.d + problem.fit_intercept) + gram_seconds(problem.X)
    primal = PRIMAL_PRODUCTS * SPARSE_PRODUCT_SECONDS * (problem.X.nnz + PRIMAL_ROW_VALUES * problem.n)
    if semismooth < PRIMAL_ADVANTAGE * primal:
        return False
    if problem.known_hessian is None:  # (left for the folds' StartGram, should they stay semismooth)
        curvatures = problem.loss.second_derivative(problem.y, problem.margins(coef, intercept)) / problem.n
        problem.known_hessian = (curvatures, problem.hessian(curvatures))
    return jacobi_condition(problem.known_hessian[1]) <= PRIMAL_MAX_CONDITION


def liblinear_may_pay_off(problem):
    """The shapes :func:`liblinear_pays_off` judges: the squared hinge on sparse rows with an L2
    penalty, whose folds :func:`fold_method` leaves to semismooth Newton's damped steps or
    Newton–CG (``"auto"``, ``"formed-newton"``)."""
    return sp.issparse(problem.X) and type(problem.loss) is SquaredHinge and type(problem.penalty) is L2 \
        and fold_method(problem) in ("auto", "formed-newton")


def start_by_liblinear(problem):
    """Whether a full fit that only starts the folds (to a rough gap) is LIBLINEAR's trust-region
    Newton: where :func:`liblinear_may_pay_off`, with at most ``START_PRIMAL_ROWS_PER_FEATURE``
    rows a feature; its folds may be LIBLINEAR's too (:func:`liblinear_pays_off`). Otherwise it
    is :func:`fold_method`'s, semismooth Newton's damped steps with the Hessian formed, whose
    factorizations cost little with many rows a feature. The engine's rough full fit
    (:class:`glru.cross_validation._Engine`) weighs LIBLINEAR against trust-region Newton–CG
    instead, and stops at 16 rows a feature (``ROUGH_PRIMAL_ROWS_PER_FEATURE``). With that limit
    here, StandardScaler(with_mean=False) + LinearSVC on the 10 drawn configurations of 16.6 to 82
    rows a feature (``benchmarks/bench_cross_validation.py --random``, seeds 1212 to 9909) took 0.99–1.19
    times as long as without (7272:35, 7593 × 327 at C = 81, 5-fold: 97 against 82 ms; 1212:39,
    6086 × 306 at C = 71: 111 against 104 ms, its full fit 20 against 11 ms), and the four of 121 to
    488 rows a feature 0.96–1.02 times (6161:5, 8779 × 17: 64 against 66 ms; docs/benchmarks.md,
    forty-fifth session)."""
    return liblinear_may_pay_off(problem) and problem.n <= START_PRIMAL_ROWS_PER_FEATURE * (
        problem.d + problem.fit_intercept)


START_PRIMAL_ROWS_PER_FEATURE = 100


# semismooth Newton's damped steps a fold (7–8 measured on sparse Gaussian 1755 × 359, 5 on 7088 × 219), LIBLINEAR's
# passes over a fold's rows (its runs at 1e-6, 1e-8, ... together: 40–60 on sparse Gaussian 6000 × 400 and
# 10000 × 200, C = 0.1 to 75, each row costing what PRIMAL_ROW_VALUES stored values do: its loss term and calls; a
# pass over 400,000 values took 104, 297 and 1600 µs in rows of 32, 8 and 2), and the condition number up to which
# LIBLINEAR's conjugate gradients are quick (see liblinear_pays_off)
FOLD_STEPS, PRIMAL_PRODUCTS, PRIMAL_ROW_VALUES, PRIMAL_ADVANTAGE = 8, 60, 10, 2.0
PRIMAL_MAX_CONDITION = 1e4


def start_gram_pays_off(problem):
    """Whether the folds of ``problem``'s shape (its full data), each scaled its own way, are better
    given their first Hessian by a :class:`glru.fold_hessian.StartGram` than left to form it: its
    loss's curvature is piecewise constant (at a fold's start its training rows' curvatures are the
    full fit's, exactly), its folds are solved by semismooth Newton's damped steps
    (:func:`fold_method`), which start from a formed Hessian, and a Gram matrix of its rows is
    estimated (:mod:`glru.costs`) to cost at least ``START_GRAM_MIN_SECONDS``."""
    if not piecewise_quadratic(problem.loss) or gram_seconds(problem.X) < START_GRAM_MIN_SECONDS:
        return False
    method = fold_method(problem)
    return method == "formed-newton" or method == "auto" and semismooth_by_default(problem)


# below it a fold's Gram matrix costs about what the StartGram's terms do (a Gram matrix of the held-out rows, the
# d̃² terms): 10-fold StandardScaler + LinearSVC on sparse Gaussian data, estimated 0.34–0.56 ms: 8–11 % less time
# in the folds' solves (8744 × 48, 8078 × 191, 4994 × 30); 0.11–0.2 ms: alike; 0.004–0.007 ms: 4–7 % more
START_GRAM_MIN_SECONDS = 2.5e-4


def steps_together_pay_off(problem):
    """Whether the folds of ``problem``'s shape, each scaled its own way, are better started by
    Newton–CG steps taken for all of them together (:func:`glru.fold_steps.scaled_fold_starts`,
    products with the unscaled X shared by the folds) than each solved on its own, the loss
    smooth: where a fold would be solved by Newton–CG (:func:`fold_method` is "auto", and no
    chord steps apply), and, though chord steps apply, on dense rows whose Gram matrix costs at
    least ``STEP_GRAM_PRODUCTS`` products with X (:mod:`glru.costs`; d ≳ 60). madelon.t with a
    StandardScaler, 10-fold: 0.16 s for all ten folds to a relative gap of 1e-13, where SciPy's
    trust-region Newton–CG took 40–50 ms a fold (90–100 products each, one vector at a time).
    The chord forms and factors each fold's own Hessian at least once; the steps take the full
    fit's, factored once, as their preconditioner (:func:`glru.fold_steps.fold_preconditioner`).
    make_classification with a StandardScaler, 5-fold / 10-fold, chord → steps: 2000 × 200
    0.160 / 0.259 → 0.104 / 0.186 s, 10000 × 200 1.12 / 2.05 → 0.56 / 0.81 s, 500 × 100
    0.051 / 0.076 → 0.034 / 0.049 s; with fewer columns the chord is faster (1000 × 20 and
    breast_cancer, 10 and 15 products: 10–25 % slower by steps). Sparse rows are left to the
    chord: their one-hot columns, standardized, made the steps crawl (a9a.t 0.45 → 0.69 s,
    mushrooms 0.33 → 1.18 s, w8a 3.3 → 25 s, 5-fold)."""
    if type(problem.penalty) is not L2 or not np.isfinite(problem.loss.self_concordance):
        return False
    if chord_applies(problem):
        return not sp.issparse(problem.X) and gram_seconds(problem.X) >= STEP_GRAM_PRODUCTS * product_seconds(problem.X)
    return fold_method(problem) == "auto"


STEP_GRAM_PRODUCTS = 30


def outcome_at(problem, coef, intercept, X_test, solved=False, evaluation=None):
    """The :class:`~glru.held_out.HeldOutOutcome` of ``problem``'s held-out rows ``X_test`` at
    (coef, intercept): the bounds certified there; with ``solved`` (the point is where a solve
    ended), also whether it is at rounding level, where the undecided signs are read.
    ``evaluation``: the point's gap evaluation, if made already."""
    if not solved:
        lower, upper, values, _ = certified_bounds(problem, coef, intercept, X_test, evaluation=evaluation)
        return HeldOutOutcome(lower, upper, values, coef, intercept, solved=False)
    # (the box's bounds only on the rows whose sign the ball's leave open: at a solved point they narrow little)
    lower, upper, values, band, evaluation = held_out_bounds(problem, coef, intercept, X_test, evaluation,
                                                             signs_only=True)
    outcome = HeldOutOutcome(lower, upper, values, coef, intercept, solved=True)
    outcome.rounded = outcome.settled = evaluation.converged(TOL_ROUNDING)
    outcome.zero_band = band
    return outcome


def refit_one_vs_rest_fold(X_train, codes_train, X_test, loss, penalty, fit_intercept, coef, intercept,
                           need="values"):
    """The exact :class:`~glru.held_out.MulticlassOutcome` of a one-vs-rest fold on data of its
    own: each class its training rows hold solved against the rest to rounding level
    (:func:`refit_fold`, ``need="values"``: an arg-max needs every class's value) from the full
    fit's row of ``coef`` (n_classes, d) and ``intercept``. With ``need="labels"`` none is
    solved where the bounds at those rows already decide every held-out arg-max."""
    present = np.unique(codes_train)
    problems = {c: Problem(X_train, np.where(codes_train == c, 1.0, -1.0), loss, penalty, fit_intercept)
                for c in present}
    points = {c: (coef[c], intercept[c] if fit_intercept else 0.0) for c in present}
    if need == "labels":
        # where Newton steps with the Hessian formed are cheap, up to CERTIFY_STEPS of them for every
        # class, each followed by the certificates (leave-one-out on iris + StandardScaler, LinearSVC:
        # 35 of 150 folds decided at the start, 139 after one step, 149 after two); the solves below
        # start where they end
        steps = CERTIFY_STEPS if type(penalty) is L2 and X_train.shape[1] + fit_intercept <= SEMISMOOTH_CHEAP_DIM \
            else 0
        moved = present
        at = {}
        for taken in range(steps + 1):
            at.update({c: outcome_at(problems[c], *points[c], X_test) for c in moved})
            outcome = outcome_from_classes(present, at, solved=False)
            if np.all(outcome.decided) or taken == steps:
                break
            # only the classes that may still win an open row move (the others' bounds stand)
            open_rows = ~outcome.decided
            best = outcome.lower[open_rows].max(axis=1, keepdims=True)
            moved = present[np.any(outcome.upper[open_rows] >= best, axis=0)]
            points.update({c: problems[c].split(newton_step(problems[c], problems[c].join(*points[c])))
                           for c in moved})
        if np.all(outcome.decided):
            return outcome
    per_class = {c: refit_fold(X_train, problems[c].y, X_test, loss, penalty, fit_intercept, [points[c]],
                               need="values") for c in present}
    return outcome_from_classes(present, per_class, solved=True)


# held-out rows up to which the ball at a fold's start is tried before chord steps
BALL_FIRST_ROWS = 1

# damped Newton steps a one-vs-rest fold with a label scorer takes before its classes are solved
CERTIFY_STEPS = 2


def refit_multinomial_fold(X_train, codes_train, X_test, lam, fit_intercept, coef, intercept, need="values",
                           preconditioner=None):
    """The exact :class:`~glru.held_out.MulticlassOutcome` of a multinomial fold on data of its
    own, on the classes its training rows hold (λ of its rows), from the full fit's ``coef``
    (n_classes, d) and ``intercept``: solved and polished to rounding level, then certified.
    With ``need="labels"`` a fold of one held-out row is not solved where the bounds at that
    start already decide its arg-max, nor polished where those at the solve's end decide every
    held-out arg-max. ``preconditioner``: the full fit's factorized Hessian
    (:func:`glru.multinomial_cv.solve_fold` ``with_factor``), for a fold that holds every class."""
    present = np.unique(codes_train)
    local = np.searchsorted(present, codes_train)
    # the bounds at the start decide most leave-one-out folds, and cost a solve's worth (digits with a
    # StandardScaler, 5-fold: 0.23 s a fold, decided no held-out row): tried for one held-out row only
    if need == "labels" and X_test.shape[0] <= BALL_FIRST_ROWS:
        outcome = centre_fold_outcome(X_train, local, present, lam, fit_intercept, coef[present], intercept[present],
                                      X_test)
        if np.all(outcome.decided):
            return outcome
    W, b = solve_fold(X_train, local, present.size, lam, fit_intercept, coef[present], intercept[present],
                      preconditioner if present.size == coef.shape[0] else None, polish=need == "values")
    if need == "labels":
        # the bounds where the Newton steps reached a relative gap of 1e-13 decide every held-out label of
        # most folds, and then the polish (a factorization) is not needed: digits with a StandardScaler,
        # 5-fold, all five folds
        outcome = centre_fold_outcome(X_train, local, present, lam, fit_intercept, W, b, X_test, arc_pieces=1,
                                      pairs="top")
        if np.all(outcome.decided):
            outcome.solved = True
            return outcome
        W, b = solve_fold(X_train, local, present.size, lam, fit_intercept, W, b)  # (polished from there)
    return solved_fold_outcome(X_train, local, present, lam, fit_intercept, W, b, X_test)
