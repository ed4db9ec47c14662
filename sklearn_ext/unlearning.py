"""Certified data deletion for fitted scikit-learn linear models: :func:`forget` (one request)
and :class:`GLRUUnlearner` (a stream of requests).

The reference is always the exact optimum of the same estimator refitted on the remaining rows
with the same parameters — ``C`` (or Ridge's ``alpha``) held fixed, so in glru's mean form
λ = 1/(n_remaining·C) changes. Every returned model comes with an
:class:`UnlearningCertificate` that bounds its distance to that reference; no update method is
trusted (the methods and the two radii are derived in :mod:`glru.deletion`).

Supported: ``LogisticRegression`` (L2; binary, or multinomial for more classes; the penalized
intercept of ``solver="liblinear"`` too), ``LinearSVC`` (squared hinge, L2; one-vs-rest for
multiclass) and ``Ridge`` (scalar alpha, 1-D target).
"""

import copy
import time
import warnings
from functools import cached_property

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.utils.validation import check_array, check_is_fitted, column_or_1d

import glru
from glru._validation import check_indices, check_regression_target, check_X
from glru.deletion import (
    METHODS,
    MultinomialRowDeletion,
    RowDeletion,
    ngd_constants,
    ngd_noise_scale,
)
from glru.duality import EPS
from glru.held_out import certified_argmax
from glru.multinomial import MultinomialCertificate, solve_multinomial
from glru.multinomial import certified_argmax as pairwise_argmax
from glru.solver import polish

from ._adapters import Unsupported, is_ridge, linear_model, ridge_alpha

__all__ = ["GLRUUnlearner", "UnlearningCertificate", "UnlearningWarning", "certify", "forget"]


class UnlearningWarning(UserWarning):
    """A requested radius could not be certified (it is below what rounding lets a certificate
    resolve); the tightest certificate found is returned."""


# ------------------------------------------------------------------------- estimator ↔ problems
class _Spec:
    """How an estimator's parameters map onto glru problems, and back.

    ``kind`` is "binary", "ovr" (one binary problem per class), "multinomial" or "ridge". In
    the problems' design a penalized intercept is a last column of value ``scaling``."""

    def __init__(self, estimator):
        self.template = estimator
        if is_ridge(estimator):
            self.kind, self.model, self.loss = "ridge", None, glru.losses.Squared()
            self.strength, self.fit_intercept, self.scaling = _ridge_alpha(estimator), estimator.fit_intercept, None
            return
        try:
            model = linear_model(estimator)
        except Unsupported as reason:
            raise ValueError(f"{type(estimator).__name__} cannot be unlearned with certificates: {reason}. "
                             "Supported: LogisticRegression, LinearSVC (squared hinge) and Ridge.") from None
        if model.l1_ratio != 0:
            raise ValueError("an L1 term (l1_ratio > 0) makes the objective non-smooth: Newton-type deletion "
                             "updates need a pure L2 penalty.")
        self.model, self.loss, self.strength = model, model.loss, 1.0 / model.C
        self.fit_intercept, self.scaling = model.fit_intercept, model.intercept_scaling
        self.kind = None  # set from the classes

    @property
    def is_classifier(self):
        return self.kind != "ridge"

    def set_classes(self, classes):
        if self.kind == "ridge":
            return
        if classes.size < 2:
            raise ValueError(f"a classifier needs at least two classes, got {classes.size}.")
        self.classes = classes
        self.kind = "binary" if classes.size == 2 else self.model.multiclass
        if self.kind is None:  # as scikit-learn's own fit raises
            raise ValueError(f"{type(self.model.estimator).__name__}(solver='liblinear') does not fit multiclass "
                             "targets in this scikit-learn; use another solver or a OneVsRestClassifier.")

    def design(self, X):
        return X if self.model is None else self.model.design(X)

    def targets(self, y):
        """Per problem: ±1 labels (binary, one-vs-rest), class codes (multinomial), y (ridge)."""
        if self.kind == "ridge":
            return [np.asarray(y, dtype=float)]
        if self.kind == "binary":
            return [np.where(y == self.classes[1], 1.0, -1.0)]
        codes = np.searchsorted(self.classes, y)
        if self.kind == "multinomial":
            return [codes]
        return [np.where(codes == k, 1.0, -1.0) for k in range(self.classes.size)]

    def reference(self, estimator):
        """The estimator's solution per problem, as (coef in the design, intercept)."""
        coef = np.atleast_2d(np.asarray(estimator.coef_, dtype=float))
        intercept = np.atleast_1d(np.asarray(estimator.intercept_, dtype=float)) * np.ones(coef.shape[0])
        if self.kind == "multinomial":
            return [(coef, intercept if self.fit_intercept else None)]
        if self.scaling is not None:
            coef = np.hstack([coef, intercept[:, None] / self.scaling])
        if not self.fit_intercept:
            intercept = np.zeros(coef.shape[0])
        return [(coef[k], float(intercept[k])) for k in range(coef.shape[0])]

    def estimator(self, points, n_features, like):
        """A fitted copy of the template holding ``points`` (as :meth:`reference` gives them).

        The template is cloned once (``clone`` costs more than a small request's update) and
        shallow-copied per model; the fitted attributes are those of
        :meth:`sklearn_ext._adapters.LinearModel.fitted`."""
        model = copy.copy(self.prototype)
        if self.kind == "ridge":
            coef, intercept = points[0]
            model.coef_, model.intercept_ = np.array(coef, dtype=float), float(intercept)
            model.n_iter_, model.solver_ = None, getattr(like, "solver_", "auto")
        else:
            if self.kind == "multinomial":
                coef, intercept = points[0]
                intercept = np.zeros(coef.shape[0]) if intercept is None or not self.fit_intercept else intercept
            else:
                coef, intercept = np.vstack([c for c, _ in points]), np.array([b for _, b in points])
            coef, intercept = np.array(coef, dtype=float), np.array(intercept, dtype=float)
            if self.scaling is not None:  # the intercept column's weight, back to intercept_
                coef, intercept = coef[:, :-1].copy(), self.scaling * coef[:, -1]
            elif not self.fit_intercept:
                intercept = np.zeros(coef.shape[0])
            model.coef_, model.intercept_ = coef, intercept
            model.classes_ = self.classes.copy()
            model.n_iter_ = np.array([0], dtype=np.int32)
        model.n_features_in_ = n_features
        if hasattr(like, "feature_names_in_"):
            model.feature_names_in_ = like.feature_names_in_
        return model

    @cached_property
    def prototype(self):
        return clone(self.template)

    def problems(self, X_design, targets, points):
        if self.kind == "multinomial":
            (coef, intercept), = points
            return [MultinomialRowDeletion(X_design, targets[0], self.classes.size, self.strength,
                                           self.fit_intercept, coef, intercept)]
        return [RowDeletion(X_design, t, self.loss, self.strength, self.fit_intercept, coef, b)
                for t, (coef, b) in zip(targets, points)]

    def exact_points(self, X_design, targets):
        """The exact optimum of every problem on all rows (solved, then polished to rounding)."""
        n = X_design.shape[0]
        if self.kind == "multinomial":
            result = solve_multinomial(X_design, targets[0], self.classes.size, self.strength / n,
                                       self.fit_intercept, tol=1e-13)
            return [(result.coef, result.intercept if self.fit_intercept else None)]
        points = []
        for t in targets:
            fit = glru.fit(X_design, t, loss=self.loss, lam=self.strength / n, fit_intercept=self.fit_intercept,
                           tol=1e-13, cache_certificates=False)
            points.append(polish(fit.problem, fit.coef_, fit.intercept_))
        return points


def _ridge_alpha(estimator):
    try:
        return ridge_alpha(estimator)
    except Unsupported as reason:
        raise ValueError(f"Ridge cannot be unlearned with certificates: {reason}.") from None


def _spec_of_fitted(estimator):
    spec = _Spec(estimator)
    check_is_fitted(estimator)
    if spec.kind != "ridge":
        spec.set_classes(np.asarray(estimator.classes_))
    elif np.ndim(estimator.coef_) != 1:
        raise ValueError("Ridge with a 2-D target is not supported (fit one Ridge per target).")
    return spec


def _check_data(spec, X, y, n_features=None):
    """X as float64 ndarray/CSR, y as a 1-D array; the labels must be exactly the classes."""
    X = check_X(check_array(X, accept_sparse="csr", dtype=np.float64, input_name="X"))
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(f"X has {X.shape[1]} features, but the estimator was fitted with {n_features}.")
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y.ravel()
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D, got shape {y.shape}.")
    y = column_or_1d(y)
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]} entries.")
    if spec.kind == "ridge":
        return X, check_regression_target(y)
    present = np.unique(y)
    if not np.array_equal(present, spec.classes):
        raise ValueError(f"y holds the labels {present[:10].tolist()}, but the estimator was fitted with the "
                         f"classes {spec.classes[:10].tolist()}: X, y are not the estimator's training data.")
    return X, y


def _check_remaining(spec, counts, removed_labels):
    """``counts``: rows per class in the training data; ``removed_labels``: the removed rows' labels."""
    if spec.kind == "ridge":
        return
    left = counts - np.bincount(np.searchsorted(spec.classes, removed_labels), minlength=counts.size)
    if np.any(left == 0):
        gone = spec.classes[left == 0]
        raise ValueError(f"forgetting these rows removes every row of class {gone[:10].tolist()}: the retrained "
                         "estimator would have fewer classes (or, for two classes, no valid model).")


def _class_counts(spec, y):
    return None if spec.kind == "ridge" else np.bincount(np.searchsorted(spec.classes, y), minlength=spec.classes.size)


def _check_method(method, max_radius, epsilon, delta):
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}.")
    if max_radius is not None and not (np.isfinite(max_radius) and max_radius >= 0):
        raise ValueError(f"max_radius must be a finite number ≥ 0, got {max_radius!r}.")
    if (epsilon is None) != (delta is None):
        raise ValueError("epsilon and delta go together: give both or neither.")
    if epsilon is not None:
        if method != "ngd":
            raise ValueError(f"epsilon/delta calibrate NGD's noise: use method='ngd', not {method!r}.")
        if max_radius is not None:
            raise ValueError("max_radius cannot be combined with epsilon: refining the noisy model removes the noise.")
        if not (epsilon > 0 and 0 < delta < 1):
            raise ValueError(f"need epsilon > 0 and 0 < delta < 1, got epsilon={epsilon!r}, delta={delta!r}.")
        if epsilon >= 1:
            warnings.warn(f"epsilon={epsilon!r}: the Gaussian mechanism's σ = (γ/ε)√(2 log(1.25/δ)) is proven for "
                          "ε < 1 only.", UnlearningWarning, stacklevel=3)


def _ngd_constants(spec, X_design, targets):
    """NGD's constants (:func:`glru.deletion.ngd_constants`) of the estimator's single problem:
    they depend on the training data only, not on the request."""
    if spec.kind not in ("binary", "ridge"):
        raise ValueError("NGD noise is calibrated for a single binary or regression problem (releasing one "
                         "noisy model per class would compose the privacy budgets).")
    if spec.kind == "binary" and not isinstance(spec.loss, glru.losses.Logistic):
        raise ValueError("NGD noise needs a Lipschitz Hessian (Assumption 1.b): the squared hinge has none.")
    return ngd_constants(spec.loss, X_design, targets[0], spec.strength, spec.fit_intercept)


def _noise_scale(constants, m, n, epsilon, delta):
    """σ of NGD's noise for m rows removed out of n."""
    sigma, _ = ngd_noise_scale(epsilon, delta, m, n, **{k: constants[k] for k in ["mu", "C", "M", "Q", "K"]})
    return sigma


# ------------------------------------------------------------------------- the updates
def _update(problems, removed, method, max_radius, noise_scale=0.0, rng=None):
    """Apply ``method`` to every problem; refine to ``max_radius`` (Frobenius over problems).
    Returns (points, certificates, refinement steps)."""
    target = None if max_radius is None else max_radius / np.sqrt(len(problems)) * (1 - 4 * EPS)
    points, certificates, steps = [], [], 0
    for problem in problems:
        coef, intercept = problem.point(removed, "newton" if method == "exact" else method, noise_scale, rng)
        if method == "exact" or target is not None:
            # refine() certifies its result; a point already within the target costs one gradient more
            coef, intercept, cert, n = problem.refine(removed, coef, intercept,
                                                      max_radius=0.0 if method == "exact" else target)
            steps += n
        else:
            cert = problem.certify(removed, coef, intercept)
        if isinstance(cert, MultinomialCertificate):
            coef, intercept = cert.coef, cert.intercept
        points.append((coef, intercept))
        certificates.append(cert)
    return points, certificates, steps


def _radius(cert):
    return cert.primal_radius if isinstance(cert, MultinomialCertificate) else cert.radius


def _warn_if_wide(certificate, max_radius):
    if max_radius is not None and certificate.radius > max_radius:
        warnings.warn(f"the tightest certified radius is {certificate.radius:.3g} > max_radius={max_radius:.3g} "
                      "(below what the duality gap and gradient can resolve in floating point).",
                      UnlearningWarning, stacklevel=3)


# ------------------------------------------------------------------------- certificate
class UnlearningCertificate:
    """What is certain about the exact retrain after a deletion, seen from the returned model.

    "The retrain" is the exact optimum of the estimator refitted with the same parameters on
    the remaining rows (C or alpha held fixed). All bounds are sound in floating point: they may
    be too wide, never too narrow.

    Attributes
    ----------
    radius : float
        Bound on ‖coef_returned − coef_retrain‖₂ (Frobenius over classes for multiclass). The
        intercept is not included (see ``intercept_radius``). It is the root of the sum of the
        per-problem squared radii, each the smaller of the duality gap's √(2G/λ) and the gradient
        radius of :mod:`glru.deletion` (multinomial: the gap's, over the centred coef).
    radii : ndarray
        Per binary problem (one per class for one-vs-rest; one for binary, Ridge, multinomial);
        for a penalized intercept (``LinearSVC``, ``solver="liblinear"``) each also bounds that
        intercept's weight, intercept_/intercept_scaling.
    gap : float
        Duality gap of the reduced problem at the returned model, in glru's mean form (the sum
        over the problems of a one-vs-rest model: the gap of their sum).
    gaps : ndarray
        Per problem.
    method : str
    n_removed, n_samples : int
        Rows forgotten so far (cumulative for :class:`GLRUUnlearner`) and rows remaining.
    noise_scale : float
        σ of NGD's Gaussian noise (0 without ε, δ). The bounds are about the noisy model returned.
    n_refinement_steps : int
        Newton/chord steps and exact solves taken to reach ``max_radius`` (or rounding, "exact").
    seconds : float
        Wall-clock time of the update and its certificate.
    """

    def __init__(self, spec, parts, returned, original, method, n_removed, noise_scale, n_steps, seconds):
        self._spec, self._parts = spec, parts
        self.returned_estimator, self.original_estimator = returned, original
        self.method, self.n_removed, self.noise_scale = method, int(n_removed), float(noise_scale)
        self.n_refinement_steps, self.seconds = int(n_steps), seconds
        self.gaps = np.array([p.gap for p in parts], dtype=float)
        self.radii = np.array([_radius(p) for p in parts], dtype=float)
        self.gap = float(self.gaps.sum())
        self.radius = float(np.sqrt(np.sum(self.radii ** 2)) * (1 + 4 * (len(parts) + 2) * EPS))
        part = parts[0]
        self.n_samples = int(part.problem.n if isinstance(part, MultinomialCertificate) else part.n_samples)

    def __repr__(self):
        return (f"UnlearningCertificate(method={self.method!r}, n_removed={self.n_removed}, radius={self.radius:.3g}, "
                f"gap={self.gap:.3g})")

    @property
    def intercept_radius(self):
        """Bound on ‖intercept_returned − intercept_retrain‖₂: 0 without an intercept;
        ``intercept_scaling`` × radii for a penalized one; for an unpenalized one, the widest
        side of glru's certified intercept interval (:mod:`glru.intercept`, O(nnz) per problem
        on first use); inf for multinomial (its certificate bounds score differences, not b)."""
        spec = self._spec
        if spec.kind == "multinomial":
            return np.inf if spec.fit_intercept else 0.0
        if spec.scaling is not None:
            return float(spec.scaling * self.radius)
        if not spec.fit_intercept:
            return 0.0
        sides = []
        for part in self._parts:
            cert = part.certificate()
            lo, hi = cert.intercept_bounds(intercept="exact")
            sides.append(max(hi - cert.intercept_centre, cert.intercept_centre - lo))
        return float(np.sqrt(np.sum(np.square(sides))) * (1 + 8 * EPS))

    def decision_bounds(self, X_eval):
        """Certified ``lower ≤ retrain.decision_function(X_eval) ≤ upper`` (``predict`` for Ridge),
        elementwise: shape (m,) for binary and Ridge, (m, n_classes) for multiclass.

        Multinomial: the scores s_k = w_k·x + b_k with Σ_k w_k = 0 and Σ_k b_k = 0 (scikit-learn's
        symmetric parametrisation) satisfy s_k = (1/K)Σ_l (s_k − s_l), so the bounds are the means
        of glru's certified pairwise bounds (:meth:`~glru.multinomial.MultinomialCertificate.pairwise_bounds`)."""
        X_eval = self._check_eval(X_eval)
        if self._spec.kind == "multinomial":
            lower, upper = self._parts[0].pairwise_bounds(X_eval)
            K = lower.shape[1]
            return lower.sum(axis=2) / K - _sum_error(lower), upper.sum(axis=2) / K + _sum_error(upper)
        X_design = self._spec.design(X_eval)
        bounds = [p.certificate().decision_bounds(X_design, intercept="exact") for p in self._parts]
        lower = np.column_stack([lo for lo, _ in bounds])
        upper = np.column_stack([hi for _, hi in bounds])
        if len(bounds) == 1:
            return lower[:, 0], upper[:, 0]
        return lower, upper

    def unchanged(self, X_eval, against="returned", atol=None):
        """Rows of ``X_eval`` whose prediction is certified to be the same for the exact retrain as
        for the returned model (``against="returned"``) or the model before the deletion
        (``"original"``).

        Classifiers: True where the certified decision bounds determine the retrain's predicted
        class (binary: lower > 0 or upper ≤ 0, scikit-learn's ``decision > 0`` rule; multiclass:
        one class's bounds beat all others', first index on ties; multinomial from the pairwise
        bounds) and that class is what ``against`` predicts. False means "not certified", not
        "changed". Ridge: True where the certified interval of the retrain's prediction lies
        within ``atol`` of ``against``'s prediction (``atol`` required)."""
        if against not in ("returned", "original"):
            raise ValueError(f"against must be 'returned' or 'original', got {against!r}.")
        X_eval = self._check_eval(X_eval)
        model = self.returned_estimator if against == "returned" else self.original_estimator
        predicted = model.predict(X_eval)
        spec = self._spec
        if spec.kind == "ridge":
            if atol is None or not atol >= 0:
                raise ValueError("Ridge predictions are real numbers: unchanged() needs atol ≥ 0.")
            lower, upper = self.decision_bounds(X_eval)
            return (lower >= predicted - atol) & (upper <= predicted + atol)
        if spec.kind == "multinomial":
            winner = pairwise_argmax(*self._parts[0].pairwise_bounds(X_eval))
        else:
            lower, upper = self.decision_bounds(X_eval)
            if lower.ndim == 1:
                winner = np.where(lower > 0, 1, np.where(upper <= 0, 0, -1))
            else:
                winner = certified_argmax(lower, upper)
        decided = winner >= 0
        labels = spec.classes[np.maximum(winner, 0)]
        return decided & (labels == predicted)

    def _check_eval(self, X_eval):
        n_features = self.returned_estimator.n_features_in_
        X_eval = check_X(check_array(X_eval, accept_sparse="csr", dtype=np.float64, input_name="X_eval"))
        if X_eval.shape[1] != n_features:
            raise ValueError(f"X_eval has {X_eval.shape[1]} features, expected {n_features}.")
        return X_eval


def _sum_error(bounds):
    """Rounding bound of the mean over the last axis of ``bounds`` (finite entries)."""
    finite = np.where(np.isfinite(bounds), np.abs(bounds), 0.0)
    return 2 * (bounds.shape[2] + 2) * EPS * finite.sum(axis=2)


# ------------------------------------------------------------------------- one request
def forget(estimator, X, y, rows, *, method="exact", max_radius=None, epsilon=None, delta=None,
           random_state=None):
    """Remove training rows from a fitted linear estimator, with a certificate.

    Parameters
    ----------
    estimator : fitted LogisticRegression, LinearSVC or Ridge
        Never modified.
    X, y : the data the estimator was fitted on (the same rows, in the same order).
    rows : array-like of int
        Indices into (X, y) of the rows to forget.
    method : {"exact", "newton", "influence", "pru", "ngd"}, default="exact"
        The update (formulas in :mod:`glru.deletion`), from the estimator's own solution:
        "exact" solves the reduced problem warm-started, to rounding level; "newton" takes one
        Newton step of the reduced objective; "influence" the influence-function step (old
        Hessian); "pru" the projective residual update; "ngd" natural-gradient unlearning.
    max_radius : float, optional
        Refine (chord Newton steps, then an exact solve) until ``certificate.radius ≤ max_radius``.
    epsilon, delta : float, optional
        With ``method="ngd"``: add the Gaussian noise of NGD's Algorithm 1 for (ε, δ)-unlearning
        (constants in :func:`glru.deletion.ngd_constants`; binary logistic or Ridge, without an
        unpenalized intercept). The guarantee assumes the estimator is at its exact optimum.
    random_state : int, Generator or None
        For the noise.

    Returns
    -------
    new_estimator : a fitted clone of ``estimator``
    certificate : UnlearningCertificate

    Raises
    ------
    NotFittedError, ValueError
        An unfitted or unsupported estimator, X/y inconsistent with it, rows empty, repeated or out
        of range, or a deletion that leaves a class without rows.
    """
    start = time.perf_counter()
    _check_method(method, max_radius, epsilon, delta)
    spec = _spec_of_fitted(estimator)
    X, y = _check_data(spec, X, y, estimator.n_features_in_)
    removed = check_indices(rows, X.shape[0], "rows")
    _check_remaining(spec, _class_counts(spec, y), y[removed])
    X_design, targets = spec.design(X), spec.targets(y)
    reference = spec.reference(estimator)
    problems = spec.problems(X_design, targets, reference)
    noise = 0.0 if epsilon is None else \
        _noise_scale(_ngd_constants(spec, X_design, targets), removed.size, X.shape[0], epsilon, delta)
    points, parts, steps = _update(problems, removed, method, max_radius, noise, random_state)
    returned = spec.estimator(points, X.shape[1], estimator)
    original = spec.estimator(reference, X.shape[1], estimator)
    certificate = UnlearningCertificate(spec, parts, returned, original, method, removed.size, noise, steps,
                                        time.perf_counter() - start)
    _warn_if_wide(certificate, max_radius)
    return returned, certificate


def certify(estimator, X, y):
    """The certificate of a fitted estimator with respect to the exact fit on (X, y): how far its
    ``coef_`` can be from the optimum (e.g. a warm-started refit that stopped at its ``tol``)."""
    spec = _spec_of_fitted(estimator)
    X, y = _check_data(spec, X, y, estimator.n_features_in_)
    reference = spec.reference(estimator)
    problems = spec.problems(spec.design(X), spec.targets(y), reference)
    none = np.zeros(0, dtype=np.int64)
    parts = [p.certify(none, *point) for p, point in zip(problems, reference)]
    return UnlearningCertificate(spec, parts, estimator, estimator, "none", 0, 0.0, 0, None)


# ------------------------------------------------------------------------- a stream of requests
class GLRUUnlearner(BaseEstimator):
    """Fit once, then forget rows request after request, each with a certificate.

    ``fit`` solves the estimator's problem exactly (glru, polished to rounding) and keeps what
    makes every request cheap: the Hessian at the optimum and its Cholesky factor (a request
    downdates it by its rows' curvature through Woodbury's identity, O(k·d² + k³) for k rows
    forgotten so far), the gradient there and the rows' norms (for rounding bounds). Every
    request's update is taken from the full-data optimum for the union of all rows forgotten
    so far, so a sequence of requests gives the model one request with their union would, and
    ``certificate_`` is cumulative: it bounds the distance to the exact retrain on all
    remaining rows. A request
    costs O(k·d² + k³) for the step plus two passes over X (X·w and Xᵀ[ℓ′, α]) and O(n)
    elementwise work for the certificate.

    Parameters
    ----------
    estimator : LogisticRegression, LinearSVC or Ridge (unfitted; its parameters are used)
    method, max_radius, epsilon, delta : as in :func:`forget` (per request).
    random_state : int, Generator or None
        Seed of the noise stream (a fresh draw per request).

    Attributes
    ----------
    estimator_ : the current model (a fitted clone of ``estimator``)
    original_estimator_ : the exact fit on all rows
    certificate_ : UnlearningCertificate or None (before any request)
    n_forgotten_ : int
    forgotten_ : ndarray of int
        Rows forgotten so far, in request order.
    history_ : list of dict
        Per request: ``rows``, ``n_forgotten``, ``method``, ``radius``, ``gap``, ``seconds``,
        ``n_refinement_steps``.
    """

    def __init__(self, estimator, *, method="newton", max_radius=None, epsilon=None, delta=None, random_state=None):
        self.estimator, self.method, self.max_radius = estimator, method, max_radius
        self.epsilon, self.delta, self.random_state = epsilon, delta, random_state

    def fit(self, X, y):
        """Fit ``estimator`` exactly on (X, y) and prepare for deletions."""
        spec = _Spec(self.estimator)
        X_input = X
        X = check_X(check_array(X, accept_sparse="csr", dtype=np.float64, input_name="X"))
        if spec.kind != "ridge":
            spec.set_classes(np.unique(column_or_1d(np.asarray(y))))
        X, y = _check_data(spec, X, y)
        self._spec, self._y, self._counts = spec, y, _class_counts(spec, y)
        X_design = spec.design(X)
        targets = spec.targets(y)
        points = spec.exact_points(X_design, targets)
        self._problems = [problem.prepare() for problem in spec.problems(X_design, targets, points)]
        self._X_design, self._targets, self._ngd_constants = X_design, targets, None
        self.original_estimator_ = spec.estimator(points, X.shape[1], _FeatureNames(X_input))
        self.estimator_ = self.original_estimator_
        self.n_features_in_ = X.shape[1]
        if spec.is_classifier:
            self.classes_ = spec.classes
        if hasattr(self.original_estimator_, "feature_names_in_"):
            self.feature_names_in_ = self.original_estimator_.feature_names_in_
        self.certificate_, self.n_forgotten_ = None, 0
        self.forgotten_ = np.zeros(0, dtype=np.int64)
        self.history_ = []
        self._rng = np.random.default_rng(self.random_state)
        return self

    def forget(self, rows):
        """Forget ``rows`` (indices into the training set given to ``fit``). Returns self."""
        check_is_fitted(self, "original_estimator_")
        start = time.perf_counter()
        _check_method(self.method, self.max_radius, self.epsilon, self.delta)
        n = self._X_design.shape[0]
        rows = check_indices(rows, n, "rows")
        again = np.intersect1d(rows, self.forgotten_)
        if again.size:
            raise ValueError(f"rows {again[:10].tolist()} were already forgotten.")
        removed = np.concatenate([self.forgotten_, rows])
        if removed.size >= n:
            raise ValueError(f"forgetting these rows would remove all {n} training rows.")
        _check_remaining(self._spec, self._counts, self._y[removed])
        noise = 0.0
        if self.epsilon is not None:
            if self._ngd_constants is None:  # data only: computed once (O(nnz)), not per request
                self._ngd_constants = _ngd_constants(self._spec, self._X_design, self._targets)
            noise = _noise_scale(self._ngd_constants, removed.size, n, self.epsilon, self.delta)
        points, parts, steps = _update(self._problems, removed, self.method, self.max_radius, noise, self._rng)
        estimator = self._spec.estimator(points, self.n_features_in_, self.original_estimator_)
        certificate = UnlearningCertificate(self._spec, parts, estimator, self.original_estimator_, self.method,
                                            removed.size, noise, steps, time.perf_counter() - start)
        _warn_if_wide(certificate, self.max_radius)
        self.estimator_, self.certificate_, self.forgotten_ = estimator, certificate, removed
        self.n_forgotten_ = int(removed.size)
        self.history_.append(dict(rows=rows, n_forgotten=self.n_forgotten_, method=self.method,
                                  radius=certificate.radius, gap=certificate.gap, seconds=certificate.seconds,
                                  n_refinement_steps=steps))
        return self

    def predict(self, X):
        return self.estimator_.predict(X)

    def decision_function(self, X):
        return self.estimator_.decision_function(X) if self._spec.is_classifier else self.estimator_.predict(X)

    def score(self, X, y):
        return self.estimator_.score(X, y)


class _FeatureNames:
    """What a fitted estimator made of the input's column names (none for arrays)."""

    def __init__(self, X):
        columns = getattr(X, "columns", None)
        if columns is not None and all(isinstance(c, str) for c in columns):
            self.feature_names_in_ = np.asarray(columns, dtype=object)
