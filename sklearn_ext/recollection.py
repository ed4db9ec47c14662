"""Linear models trained by clipped SGD that can forget training rows in O(d) each:
:class:`RecollectionSGDClassifier` (binary logistic regression) and
:class:`RecollectionSGDRegressor` (squared loss), the estimators of :mod:`glru.recollection`
(the Hessian-free online unlearning method of Qiao et al.).

``forget(rows)`` approximates the model of REPLAYING the same SGD run (same seed, hence the same
mini-batches and step sizes) without those rows, not the minimiser on the remaining rows.
For the regressor without active clipping, forgetting one row equals that replay exactly;
anything else is a first-order approximation (see :mod:`glru.recollection`).
"""

from numbers import Integral, Real

import numpy as np
from scipy.special import expit
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data

from glru.losses import get_loss
from glru.problem import row_norms_sq
from glru.recollection import Recollections, batch_schedule, error_bound_terms, step_sizes, train_with_recollections

__all__ = ["RecollectionSGDClassifier", "RecollectionSGDRegressor"]

_PARAMETERS_DOC = """
    Parameters
    ----------
    alpha : float, default=1e-4
        L2 penalty (α/2)‖w‖² added to every per-sample loss (the intercept is not penalized).
    eta0 : float, default=0.05
        Initial step size η₀.
    decay : float, default=0.999
        Step size decay q per SGD step: η_t = η₀ q^t, t counting steps over all epochs
        (the paper's geometric decay). 1.0 keeps the step constant.
    clip : float or None, default=10.0
        Per-sample gradient clipping level C (penalty included). None clips nothing; the
        error bound, and hence calibrated noise, then is infinite.
    batch_size : int, default=32
    n_epochs : int, default=10
    fit_intercept : bool, default=True
    epsilon : float in (0, 1] or None, default=None
        None: ``forget`` adds no noise. Otherwise ``forget`` adds Gaussian noise calibrated by
        the Gaussian mechanism to the paper's error bound for all rows forgotten so far,
        σ = bound·√(2 ln(1.25/δ))/ε per coefficient (for (ε, δ)-unlearning against the replay
        model carrying the same noise, under the paper's assumptions). The bound is loose:
        expect σ of the order of η₀·C·(number of steps at full step size).
    delta : float in (0, 1), default=1e-5
        δ of the calibrated noise. ``epsilon`` and ``delta`` are read by each ``forget`` call.
    random_state : int, RandomState instance or None, default=None
        Seeds the mini-batch schedule (hence the replay reference) and the noise.
"""

_ATTRIBUTES_DOC = """
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Defined when X has string feature names.
    n_iter_ : int
        Epochs run (``n_epochs``).
    t_ : int
        SGD steps run.
    recollections_ : ndarray of shape (n_samples, n_features_in_ + fit_intercept)
        Row u is the recollection a_u (coefficients, then the intercept): adding it to the
        fitted parameters approximates the replay without row u. Zero once u is forgotten.
        Memory: 8·n_samples·(n_features_in_ + 1) bytes.
    n_forgotten_ : int
        Rows forgotten so far.
    forgotten_ : ndarray of bool of shape (n_samples,)
    error_bound_ : float
        The paper's Theorem 2 bound on the L2 distance between the current (noise-free)
        parameters and the replay without the forgotten rows; 0 before any forgetting.
    noise_std_ : float
        Std per parameter of the Gaussian noise added so far.
"""


class _RecollectionSGD(BaseEstimator):
    """Shared fit/forget of the two estimators; subclasses set the loss and the target."""

    _loss = None

    _parameter_constraints = {
        "alpha": [Interval(Real, 0, None, closed="left")],
        "eta0": [Interval(Real, 0, None, closed="neither")],
        "decay": [Interval(Real, 0, 1, closed="right")],
        "clip": [Interval(Real, 0, None, closed="neither"), None],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "n_epochs": [Interval(Integral, 1, None, closed="left")],
        "fit_intercept": ["boolean"],
        "epsilon": [Interval(Real, 0, 1, closed="right"), None],
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "random_state": ["random_state"],
    }

    def __init__(self, *, alpha=1e-4, eta0=0.05, decay=0.999, clip=10.0, batch_size=32, n_epochs=10,
                 fit_intercept=True, epsilon=None, delta=1e-5, random_state=None):
        self.alpha, self.eta0, self.decay, self.clip = alpha, eta0, decay, clip
        self.batch_size, self.n_epochs, self.fit_intercept = batch_size, n_epochs, fit_intercept
        self.epsilon, self.delta, self.random_state = epsilon, delta, random_state

    def _fit(self, X, target):
        seed = check_random_state(self.random_state).randint(np.iinfo(np.int32).max)
        schedule_seed, noise_seed = np.random.SeedSequence(seed).spawn(2)
        self._schedule = (X.shape[0], self.batch_size, self.n_epochs, schedule_seed, self.eta0, self.decay)
        batches, etas = self._make_schedule()
        options = dict(alpha=self.alpha, clip=self.clip, batches=batches, etas=etas, fit_intercept=self.fit_intercept)
        with np.errstate(over="raise", invalid="raise"):
            try:
                theta, matrix = train_with_recollections(X, target, self._loss, **options)
            except FloatingPointError as error:
                raise ValueError(f"SGD diverged ({error}): lower eta0 or set clip.") from None
        if not (np.isfinite(theta).all() and np.isfinite(matrix).all()):
            raise ValueError("SGD diverged (non-finite parameters): lower eta0 or set clip.")
        common, per_row = error_bound_terms(batches, etas, n_samples=X.shape[0], clip=self.clip,
                                            strong_convexity=0.0 if self.fit_intercept else self.alpha,
                                            smoothness=self._smoothness(X))
        self._state = Recollections(theta, matrix, common, per_row)
        self._noise_rng = np.random.default_rng(noise_seed)
        self.n_iter_, self.t_ = self.n_epochs, len(batches)
        self._publish()
        return self

    def sgd_schedule(self):
        """The mini-batches and step sizes of the fitted run: what a replay must reuse.

        Returns
        -------
        batches : list of ndarray of int
            Row indices of each SGD step's mini-batch, in order.
        etas : ndarray of shape (len(batches),)
            The step size η_t of each step.
        """
        check_is_fitted(self)
        return self._make_schedule()

    def _make_schedule(self):
        n_samples, batch_size, n_epochs, seed, eta0, decay = self._schedule
        batches = batch_schedule(n_samples, batch_size, n_epochs, seed)
        return batches, step_sizes(len(batches), eta0, decay)

    def _smoothness(self, X):
        """M: the largest eigenvalue of any per-sample Hessian, ℓ''_max ‖x̃‖² + α."""
        return get_loss(self._loss).smoothness * (row_norms_sq(X).max() + self.fit_intercept) + self.alpha

    def _publish(self):
        state, d = self._state, self.n_features_in_
        self._set_coefficients(state.theta[:d], state.theta[d] if self.fit_intercept else 0.0)
        self.n_forgotten_ = state.n_forgotten
        self.error_bound_ = state.error_bound()
        self.noise_std_ = float(np.sqrt(state.noise_var))

    @property
    def recollections_(self):
        # a read-only view, so that pickling stores the matrix once and forget() shows through
        view = self._state.matrix.T.view()
        view.flags.writeable = False
        return view

    @property
    def forgotten_(self):
        view = self._state.forgotten.view()
        view.flags.writeable = False
        return view

    def _decision(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        return np.asarray(X @ np.ravel(self.coef_)).ravel() + np.ravel(self.intercept_)[0]

    def _check_remaining(self, rows):
        """Raise ValueError if forgetting ``rows`` would leave nothing to model."""
        if self._state.n_forgotten + rows.size >= self._state.forgotten.size:
            raise ValueError("Forgetting these rows would forget every training row.")

    def _forgotten_now(self, rows):
        """Hook for bookkeeping once ``rows`` are forgotten."""

    def forget(self, rows):
        """Remove training rows from the model in O(n_features) each, without the data.

        The new parameters are the current ones plus the rows' recollections (plus calibrated
        noise when ``epsilon`` is set); the recollections are then erased. Forgetting rows one
        call at a time gives the same model as one call with all of them (without noise).

        Parameters
        ----------
        rows : array-like of int
            Indices into the rows of X passed to ``fit``.

        Returns
        -------
        self : object

        Raises
        ------
        ValueError
            A row given twice, out of range or already forgotten; forgetting every row (or,
            for the classifier, every row of a class). The model is then left unchanged.
        """
        check_is_fitted(self)
        rows = self._state.check_rows(rows)
        self._check_remaining(rows)
        self._state.forget(rows, epsilon=self.epsilon, delta=self.delta, rng=self._noise_rng)
        self._forgotten_now(rows)
        self._publish()
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


class RecollectionSGDClassifier(ClassifierMixin, _RecollectionSGD):
    __doc__ = f"""Binary L2 logistic regression trained by clipped, decayed mini-batch SGD that can
    forget training rows in O(n_features) each (Hessian-free recollection, Qiao et al.).

    During ``fit`` every training row's recollection is recorded (memory O(n_samples ·
    n_features)); ``forget(rows)`` then approximates, to first order, the model of replaying the
    same SGD run without those rows. See :mod:`glru.recollection` for the method, the error
    bound and its assumptions.
    {_PARAMETERS_DOC}
    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    coef_ : ndarray of shape (1, n_features_in_)
    intercept_ : ndarray of shape (1,)
    {_ATTRIBUTES_DOC}
    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_ext.recollection import RecollectionSGDClassifier
    >>> X, y = make_classification(n_samples=200, random_state=0)
    >>> model = RecollectionSGDClassifier(random_state=0).fit(X, y)
    >>> model.forget([3, 17]).n_forgotten_
    2
    """

    _loss = "logistic"

    def fit(self, X, y):
        """Train, recording every row's recollection.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Two classes.

        Returns
        -------
        self : object
        """
        self._validate_params()
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64)
        check_classification_targets(y)
        y_type = type_of_target(y, input_name="y")
        self.classes_ = np.unique(y)
        if self.classes_.size < 2:
            raise ValueError("The classifier needs samples of 2 classes; y has one class.")
        if y_type != "binary":
            raise ValueError(f"Only binary classification is supported. The type of the target is {y_type}.")
        self._row_is_positive = y == self.classes_[1]
        positives = int(self._row_is_positive.sum())
        self._rows_left = np.array([y.size - positives, positives])   # per class, kept so forget stays O(rows)
        return self._fit(X, np.where(self._row_is_positive, 1.0, -1.0))

    def _set_coefficients(self, coef, intercept):
        self.coef_ = coef.reshape(1, -1).copy()
        self.intercept_ = np.array([intercept], dtype=np.float64)

    def _removed_per_class(self, rows):
        positives = int(self._row_is_positive[rows].sum())
        return np.array([rows.size - positives, positives])

    def _check_remaining(self, rows):
        if (self._rows_left - self._removed_per_class(rows)).min() == 0:
            raise ValueError("Forgetting these rows would forget every training row of a class.")

    def _forgotten_now(self, rows):
        self._rows_left = self._rows_left - self._removed_per_class(rows)

    def decision_function(self, X):
        """x·w + b; positive values predict ``classes_[1]``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        scores : ndarray of shape (n_samples,)
        """
        return self._decision(X)

    def predict(self, X):
        """Class labels.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        labels : ndarray of shape (n_samples,)
        """
        positive = self._decision(X) > 0          # first, so that an unfitted model raises NotFittedError
        return self.classes_[positive.astype(int)]

    def predict_proba(self, X):
        """Probabilities of ``classes_`` under the logistic model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, 2)
        """
        positive = expit(self._decision(X))
        return np.column_stack([1.0 - positive, positive])

    def predict_log_proba(self, X):
        """Logarithms of :meth:`predict_proba`, computed stably.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        log_proba : ndarray of shape (n_samples, 2)
        """
        t = self._decision(X)
        return np.column_stack([-np.logaddexp(0.0, t), -np.logaddexp(0.0, -t)])

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags


class RecollectionSGDRegressor(RegressorMixin, _RecollectionSGD):
    __doc__ = f"""L2-penalized least squares trained by clipped, decayed mini-batch SGD that can
    forget training rows in O(n_features) each (Hessian-free recollection, Qiao et al.).

    During ``fit`` every training row's recollection is recorded (memory O(n_samples ·
    n_features)). ``forget(rows)`` approximates the model of replaying the same SGD run without
    those rows; with no clipping active during training the SGD map is affine and forgetting a
    single row equals that replay exactly. Several rows: exact up to second-order cross terms
    between the forgotten rows (see :mod:`glru.recollection`).
    {_PARAMETERS_DOC}
    Attributes
    ----------
    coef_ : ndarray of shape (n_features_in_,)
    intercept_ : float
    {_ATTRIBUTES_DOC}
    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from sklearn_ext.recollection import RecollectionSGDRegressor
    >>> X, y = make_regression(n_samples=200, n_features=5, noise=1.0, random_state=0)
    >>> model = RecollectionSGDRegressor(clip=None, eta0=0.02, random_state=0).fit(X, y / 100)
    >>> model.forget([3]).n_forgotten_
    1
    """

    _loss = "squared"

    def fit(self, X, y):
        """Train, recording every row's recollection.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : object
        """
        self._validate_params()
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64, y_numeric=True)
        return self._fit(X, y.astype(np.float64))

    def _set_coefficients(self, coef, intercept):
        self.coef_ = coef.copy()
        self.intercept_ = float(intercept)

    def predict(self, X):
        """x·w + b.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        return self._decision(X)
