"""Exact stepwise feature selection: the held-out predictions of every candidate feature set,
certified from one fit per fold (the paper's Stepwise-GLRU, Algorithms 4–5, with better centres).

A step starts from the current feature set F. Its candidates are F without one feature j
(backward, eq. 20) or F with one feature j added (forward, eq. 21). For every fold (training
rows T, held-out rows V) the engine

1. solves the problem on (X_T restricted to F) exactly, warm-started from the previous step;
2. centres every candidate's certificate at one Newton step from that fit, all from one
   inverse Hessian (:mod:`glru.hessian`): for a removal the "optimal brain surgeon" step
   z − (z_j/[H⁻¹]_jj)·H⁻¹e_j, which is the minimiser of the quadratic model with z_j = 0; for an
   addition the Newton step of the enlarged problem through the Schur complement of the new
   coordinate; then two more Newton (or chord) steps for all candidates together, which cost
   far less than the certificates they save. Without a usable Hessian (elastic net, or too
   large) the centres are the paper's: z with z_j = 0, and the new coefficient from KKT (7);
3. certifies the centres of a block of candidates at once (:mod:`glru.candidates`; Theorem 1
   + Corollary 1 on the candidate's own problem; margins, dual points and correlations as
   matrix products), and re-certifies still undecided ones at the paper's centre, keeping the
   intersection;
4. leaves the undecided (candidate, fold) pairs to the caller, which decides which candidates
   are worth pursuing (the bounds on a candidate's score may already exclude it:
   :mod:`sklearn_ext.stepwise`): :meth:`Step.refine` takes batched Newton (or chord) steps for
   their open pairs and certifies them again; :meth:`Step.resolve` solves what refinement
   cannot settle — warm-started at the centre, stopped as soon as the held-out signs are
   certified — in parallel through joblib.

A label that no certificate decides comes from a solve polished until its Newton steps stop
shrinking (:func:`glru.solver.polish`): the most exact refit floating point allows.
"""

import numpy as np
import scipy.sparse as sp
from joblib import Parallel, delayed

from .candidates import TOL_ROUNDING, CandidateCertifier
from .certificate import curvature_weighted_mean
from .duality import EPS
from .held_out import HeldOutOutcome, held_out_bounds
from .problem import Problem, row_norms_sq
from .solver import dense_newton_solve, optimal_intercept, polish, solve, solve_held_out

TOL_FIT = 1e-10  # relative gap of each fold's fit on the current features (then polished)
CHORD_CONTRACTION = 0.5  # a chord step must at least halve the last one, or the pair is settled
NEWTON_MAX_DIM = 256  # candidate solves by exact Newton steps up to this many coefficients


class FeatureSearch:
    """The folds of one data set, and each fold's fit on the current features.

    Parameters
    ----------
    X : float64 ndarray or CSR; y : ±1 targets (the loss's encoding).
    loss : glru.losses.Loss
    folds : list of (train, test) index arrays
    penalty_for : callable(n_train) -> penalty
    fit_intercept : bool (unpenalized intercept)
    fixed : sequence of int
        Columns always in the model and never candidates (a penalized intercept's constant column).
    need : {"labels", "values"}
        Held-out labels, or the exact solution of every candidate (for value-based scorers).
    n_jobs, verbose, pre_dispatch : joblib.Parallel options of the candidate solves.
    """

    def __init__(self, X, y, loss, folds, penalty_for, fit_intercept, fixed=(), need="labels", n_jobs=None,
                 verbose=0, pre_dispatch="2*n_jobs"):
        self.loss, self.fit_intercept, self.need = loss, fit_intercept, need
        self.fixed = np.asarray(fixed, dtype=np.intp)
        self.parallel = dict(n_jobs=n_jobs, verbose=verbose, pre_dispatch=pre_dispatch)
        self.folds = [_FoldData(X, y, train, test, penalty_for(len(train))) for train, test in folds]
        self.d = X.shape[1]

    def step(self, support, direction):
        """Certify every candidate of ``direction`` ("backward" or "forward") from ``support``
        (sorted feature indices). Returns a :class:`Step`."""
        support = np.union1d(np.asarray(support, dtype=np.intp), self.fixed)
        if direction == "backward":
            candidates = np.setdiff1d(support, self.fixed)
        else:
            candidates = np.setdiff1d(np.arange(self.d), support)
        step = Step(self, support, direction, candidates)
        for fold in self.folds:
            fit = _CurrentFit(fold, support, self.loss, self.fit_intercept)
            certifier = CandidateCertifier(fit, direction, candidates, self.need)
            step.current.append(fit)
            step.certifiers.append(certifier)
            step.outcomes.append(certifier.outcomes())
        return step

    def advance(self, step, position):
        """Make candidate ``position`` of ``step`` the current feature set of every fold: the next
        fits start from its solutions (or certified centres)."""
        for k, fold in enumerate(self.folds):
            fold.start = (step.candidate_support(position), *step.centre(k, position))


class Step:
    """The candidates of one step and what is known of their held-out predictions.

    Attributes
    ----------
    candidates : ndarray
        Feature removed (backward) or added (forward) by each candidate.
    outcomes : list (folds) of list (candidates) of :class:`HeldOutOutcome`
    current : list of the folds' fits on the current features.
    """

    def __init__(self, search, support, direction, candidates):
        self.search, self.support, self.direction, self.candidates = search, support, direction, candidates
        self.outcomes, self.current, self.certifiers = [], [], []
        self._last_step = {}  # (fold, position) -> length of its last chord step

    def candidate_support(self, position):
        j = self.candidates[position]
        return self.support[self.support != j] if self.direction == "backward" \
            else np.sort(np.append(self.support, j))

    def centre(self, k, position):
        """(coef, intercept) of a candidate's current centre (or solution) on fold k. Certified
        pairs drop their centres (d floats each, for thousands of candidates); they are rebuilt
        here when needed."""
        outcome = self.outcomes[k][position]
        if outcome.coef is not None:
            return outcome.coef, outcome.intercept
        return self.certifiers[k].centre(position)

    def open_pairs(self, position):
        """Folds whose held-out predictions of this candidate are not known exactly yet."""
        return [k for k in range(len(self.outcomes)) if self._open(k, position)]

    def _open(self, k, position):
        outcome = self.outcomes[k][position]
        return not outcome.solved and (self.search.need == "values" or not np.all(outcome.decided))

    def refine(self, positions):
        """One Newton (or chord) step for every open (candidate, fold) pair of ``positions``, all
        of a fold's at once, each certified again. A pair whose steps stop shrinking is settled if its gap
        is at rounding level (its centre is then the polished optimum, as glru.solver.polish
        would leave it). Returns the positions that still have an open pair that cannot be
        refined (no Hessian, or stalled above rounding level): :meth:`resolve` them."""
        stuck = set()
        for k, certifier in enumerate(self.certifiers):
            part = np.array([p for p in positions if self._open(k, p)], dtype=np.intp)
            if part.size == 0:
                continue
            if certifier.inverse is None:
                stuck.update(part.tolist())
                continue
            current = [self.outcomes[k][p] for p in part]
            moved, sizes = certifier.chord(part, current)
            for p, old, outcome, size in zip(part, current, moved, sizes):
                scale = 1.0 + np.linalg.norm(old.coef) + abs(old.intercept)
                # a step that blew up has infinite length (CandidateCertifier._step): stalled, also
                # as a pair's first step, where no previous length bounds it
                stalled = not np.isfinite(size) or size > CHORD_CONTRACTION * self._last_step.get((k, p), np.inf)
                if size <= 4 * EPS * scale or stalled:
                    if old.rounded:  # settled at the point the steps cannot improve
                        old.solved = True
                    else:
                        stuck.add(int(p))
                    continue
                self._last_step[(k, p)] = size
                self.outcomes[k][p] = outcome
        return sorted(stuck)

    def resolve(self, positions):
        """Solve the open (candidate, fold) pairs of ``positions``, in parallel through joblib."""
        search = self.search
        pairs = [(p, k) for p in positions for k in self.open_pairs(p)]
        if not pairs:
            return 0
        tol = TOL_ROUNDING if search.need == "values" else TOL_FIT

        def task(p, k):
            fold, (coef, intercept) = search.folds[k], self.centre(k, p)
            X_train, X_test = fold.columns(self.candidate_support(p))
            return delayed(_solve_candidate)(
                X_train, fold.y_train, search.loss, fold.penalty, search.fit_intercept, coef, intercept, X_test,
                search.need == "labels", tol)
        results = Parallel(**search.parallel)(task(p, k) for p, k in pairs)
        for (p, k), (coef, intercept, lower, upper, values, band) in zip(pairs, results):
            self.outcomes[k][p] = HeldOutOutcome(lower, upper, values, coef, intercept, solved=True)
            self.outcomes[k][p].zero_band = band
        return len(pairs)


def _solve_candidate(X_train, y_train, loss, penalty, fit_intercept, coef, intercept, X_test, labels_only, tol):
    """Solve one candidate on one fold from its centre. With few features, Newton steps with the
    exact Hessian from the (already close) centre reach rounding level in a few O(nnz·d) steps;
    if they do not converge, the general solver takes over."""
    problem = Problem(X_train, y_train, loss, penalty, fit_intercept)
    converged = False
    if penalty.kappa == 0 and X_train.shape[1] + fit_intercept <= NEWTON_MAX_DIM:
        try:
            coef, intercept = polish(problem, coef, intercept, newton_solve=dense_newton_solve(problem))
            converged = problem.duality_gap(coef, intercept).converged(tol)
        except np.linalg.LinAlgError:  # a Hessian without curvature (e.g. the intercept's, near separation)
            pass
    if not converged:
        coef, intercept = solve_held_out(X_train, y_train, loss, penalty, fit_intercept, coef, intercept,
                                         X_test if labels_only else None, tol)
    lower, upper, values, band, _ = held_out_bounds(problem, coef, intercept, X_test)
    return coef, intercept, lower, upper, values, band


class _FoldData:
    """One fold's rows, kept column-sliceable, and where its next fit starts."""

    def __init__(self, X, y, train, test, penalty):
        self.X_train, self.X_test = X[train], X[test]
        if sp.issparse(X):
            self.X_train, self.X_test = self.X_train.tocsc(), self.X_test.tocsc()
        self.y_train, self.penalty = y[train], penalty
        self.train_norms = np.sqrt(row_norms_sq(X[train]))  # over all columns: ≥ over any subset
        self.test_norms = np.sqrt(row_norms_sq(X[test]))
        self.start = None  # (support, coef, intercept) of the last chosen candidate

    def columns(self, columns):
        """(X_T, X_V) restricted to ``columns`` (CSR when sparse)."""
        if sp.issparse(self.X_train):
            return self.X_train[:, columns].tocsr(), self.X_test[:, columns].tocsr()
        return self.X_train[:, columns], self.X_test[:, columns]

    def warm_start(self, support, fit_intercept):
        coef = np.zeros(support.size)
        if self.start is None:
            return coef, 0.0
        previous, previous_coef, intercept = self.start
        where = np.searchsorted(previous, support)
        found = (where < previous.size) & (previous[np.minimum(where, previous.size - 1)] == support)
        coef[found] = previous_coef[where[found]]
        return coef, intercept if fit_intercept else 0.0


class _CurrentFit:
    """A fold's exact fit on the current features F, and what every candidate shares."""

    def __init__(self, fold, support, loss, fit_intercept):
        self.fold, self.support, self.loss, self.fit_intercept = fold, support, loss, fit_intercept
        self.X_train, self.X_test = fold.columns(support)
        self.problem = Problem(self.X_train, fold.y_train, loss, fold.penalty, fit_intercept)
        coef, intercept = fold.warm_start(support, fit_intercept)
        if support.size == 0:
            intercept = optimal_intercept(self.problem, coef, 0.0) if fit_intercept else 0.0
        else:
            result = solve(self.problem, coef, intercept, tol=TOL_FIT)
            coef, intercept = polish(self.problem, result.coef, result.intercept)
        self.coef, self.intercept = coef, intercept
        self.margins = np.asarray(self.X_train @ coef).ravel() + intercept
        if fit_intercept:  # the intercept bound's x̄ (any fixed point is valid: glru.intercept)
            self.x_ref = curvature_weighted_mean(fold.X_train, loss.second_derivative(fold.y_train, self.margins))

    def held_out(self):
        """The current fit's own held-out predictions (the score of the current feature set)."""
        lower, upper, values, band, _ = held_out_bounds(self.problem, self.coef, self.intercept, self.X_test)
        outcome = HeldOutOutcome(lower, upper, values, self.coef, self.intercept, solved=True)
        outcome.zero_band = band
        return outcome



