"""Coded machine unlearning as a scikit-learn regressor: :class:`CodedShardRegressor`.

An ensemble of OLS or ridge learners on coded data shards whose training rows can be forgotten
exactly (:meth:`CodedShardRegressor.forget`) at the cost of re-solving one learner per row. The
math, the intercept and scaling choices and the exactness proof are in :mod:`glru.coded_shards`.
"""

import numbers
from dataclasses import asdict

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted, validate_data

from glru.coded_shards import CodedShards

__all__ = ["CodedShardRegressor"]


class CodedShardRegressor(RegressorMixin, BaseEstimator):
    """Averaged OLS/ridge learners on coded shards, with exact unlearning of training rows.

    The training rows are shuffled into ``n_shards`` uncoded shards; a random binary generator
    matrix with one 1 per row sums them, row-aligned, into r = ``n_shards / rate`` coded shards
    (Aldaghri, Mahdavifar and Beirami, "Coded Machine Unlearning"). One learner minimising
    ``‖ȳ_j − X̄_j w − k_j b‖² + alpha ‖w‖²`` is fitted per coded shard and the weights are
    averaged. :meth:`forget` removes rows from the coded shards they entered and re-solves only
    those learners; the result equals retraining them on the re-encoded shards.

    Parameters
    ----------
    alpha : float, default=0.0
        Ridge penalty of every learner, unnormalised as in :class:`~sklearn.linear_model.Ridge`
        on that learner's coded rows; 0 is ordinary least squares.
    n_shards : int, default=10
        s, the number of uncoded shards; shards have ⌈n/s⌉ positions, the last one zero padding
        in shards that get ⌊n/s⌋ rows (:mod:`glru.coded_shards`).
    rate : float, default=1.0
        τ = s/r in [1, n_shards]: r = round(n_shards / rate) coded shards (Python's ``round``;
        the effective rate is ``rate_``). 1 is uncoded sharding (SISA-like); n_shards is a single learner on the sum
        of all shards.
    fit_intercept : bool, default=True
        Fit an unpenalized intercept: a constant column appended to every row *before*
        encoding, so each learner's intercept is the per-row intercept (:mod:`glru.coded_shards`).
        At rate 1 this is scikit-learn's intercept on each shard.
    random_state : int, RandomState instance or None, default=None
        Draws the shard layout and the generator matrix (never from the data).

    Attributes
    ----------
    coef_ : ndarray of shape (n_features_in_,)
        The averaged weights.
    intercept_ : float
        The averaged intercept (0.0 without ``fit_intercept``).
    shard_coefs_ : ndarray of shape (n_coded_shards_, n_features_in_)
        Each learner's weights; zeros for a learner whose rows have all been forgotten (it is
        left out of the average).
    shard_intercepts_ : ndarray of shape (n_coded_shards_,)
    generator_matrix_ : ndarray of shape (n_shards, n_coded_shards_), dtype int8
        G: uncoded shard i enters coded shard j when ``G[i, j] == 1``.
    n_coded_shards_ : int
    rate_ : float
        The effective rate n_shards / n_coded_shards_.
    row_shard_ : ndarray of shape (n_samples,)
        The uncoded shard of each training row.
    row_position_ : ndarray of shape (n_samples,)
        Its position in that shard and in the coded shard it enters.
    n_forgotten_ : int
    forgotten_ : ndarray of shape (n_samples,), dtype bool
    forget_history_ : list of dict
        Per :meth:`forget` request: ``rows``, ``learners`` re-solved, ``n_coded_rows_updated``,
        ``n_statistic_updates`` (rank-one up/downdates of XᵀX), ``n_rows_retrained`` (coded rows
        learners were retrained on), ``method`` and ``seconds``.
    coded_shards_ : glru.coded_shards.CodedShards
        The coded data, statistics and learners (keeps the training rows, zeroing forgotten ones).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Defined when X has string feature names.

    Notes
    -----
    Nothing is scaled: a scaler fitted on all rows (the paper min-max normalises) would keep a
    forgotten row's influence. Scale with data-independent constants, or with a scaler fitted on
    rows that are never forgotten.

    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from sklearn_ext.coded import CodedShardRegressor
    >>> X, y = make_regression(n_samples=400, n_features=5, noise=1.0, random_state=0)
    >>> model = CodedShardRegressor(alpha=1.0, n_shards=8, rate=2, random_state=0).fit(X, y)
    >>> model.forget([3, 17]).n_forgotten_
    2
    >>> model.forget_history_[-1]["n_coded_rows_updated"]
    2
    """

    _parameter_constraints = {
        "alpha": [Interval(numbers.Real, 0, None, closed="left")],
        "n_shards": [Interval(numbers.Integral, 1, None, closed="left")],
        "rate": [Interval(numbers.Real, 1, None, closed="left")],
        "fit_intercept": ["boolean"],
        "random_state": ["random_state"],
    }

    def __init__(self, alpha=0.0, n_shards=10, rate=1.0, fit_intercept=True, random_state=None):
        self.alpha, self.n_shards, self.rate = alpha, n_shards, rate
        self.fit_intercept, self.random_state = fit_intercept, random_state

    def fit(self, X, y):
        """Encode the shards and fit one learner per coded shard.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : object
        """
        self._validate_params()
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True)
        if self.rate > self.n_shards:
            raise ValueError(f"rate = {self.rate} exceeds n_shards = {self.n_shards}: fewer than one coded shard.")
        n_coded = round(self.n_shards / self.rate)  # ≥ 1: rate ≤ n_shards was checked above
        # the glru math takes a numpy Generator; seed it from scikit-learn's random_state
        seed = check_random_state(self.random_state).randint(np.iinfo(np.int32).max)
        self.coded_shards_ = CodedShards(X, y, self.n_shards, n_coded, self.alpha, self.fit_intercept,
                                         np.random.default_rng(seed))
        self.generator_matrix_ = self.coded_shards_.G
        self.n_coded_shards_, self.rate_ = n_coded, self.n_shards / n_coded
        self.row_shard_, self.row_position_ = self.coded_shards_.shard, self.coded_shards_.position
        self.forget_history_ = []
        self._publish()
        return self

    def forget(self, rows, *, method="statistics"):
        """Exactly unlearn training rows: the model becomes the one retraining the affected
        learners on their re-encoded shards gives (same G and layout).

        Parameters
        ----------
        rows : int or array-like of int
            Indices into the rows ``fit`` was given; distinct, in range, not yet forgotten.
        method : {"statistics", "retrain"}, default="statistics"
            Re-solve each affected learner from its downdated XᵀX and Xᵀy (O(p²) per row plus
            one p × p solve), or retrain it on its coded rows (O(n̄p²)). Same model either way.

        Returns
        -------
        self : object

        Raises
        ------
        ValueError
            A row out of range, repeated, or already forgotten, or no row would remain; the
            model is left unchanged.
        """
        check_is_fitted(self)
        cost = self.coded_shards_.forget(rows, method=method)
        self.forget_history_.append(asdict(cost))
        self._publish()
        return self

    def predict(self, X):
        """The averaged linear model's predictions.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return X @ self.coef_ + self.intercept_

    def _publish(self):
        """Copy the ensemble's current model into the fitted attributes."""
        shards = self.coded_shards_
        self.coef_, self.intercept_ = shards.coef.copy(), shards.intercept
        theta = shards.theta
        self.shard_coefs_ = (theta[:, :-1] if shards.fit_intercept else theta).copy()
        self.shard_intercepts_ = theta[:, -1].copy() if shards.fit_intercept else np.zeros(theta.shape[0])
        self.forgotten_ = shards.forgotten.copy()
        self.n_forgotten_ = int(self.forgotten_.sum())
