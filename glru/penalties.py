"""Separable penalties Σ_j ρ(w_j) on the coefficients, with their convex conjugates.

The intercept is never part of the penalty: an unpenalized intercept b has ρ_b = 0, whose
conjugate is the indicator of {0}; in the dual it becomes the constraint Σ_i α_i = 0, which
:mod:`glru.dual` enforces. A penalized intercept is an ordinary column of constants.

Each penalty provides, vectorised over coefficients:

- ``value(w)``                   Σ_j ρ(w_j)
- ``conjugate(s)``               Σ_j ρ*(s_j)
- ``conjugate_gradient(s)``      ∂ρ*(s) (single-valued when ``strong_convexity`` > 0)
- ``conjugate_gradient_bounds``  inf and sup of ∂ρ*(s), ±inf where unbounded (lam = 0)
- ``strong_convexity``           λ: ρ is λ-strongly convex (Theorem 1 (i) needs λ > 0)
- ``fenchel_young(w, s)``        ρ(w_j) + ρ*(s_j) − w_j s_j ≥ 0 and its rounding error (λ > 0)
"""

import numpy as np

from .duality import EPS, UNDERFLOW

__all__ = ["ElasticNet", "L2", "get_penalty"]


class ElasticNet:
    """ρ(t) = (lam/2) t² + kappa |t|, lam ≥ 0, kappa ≥ 0.

    ρ*(s) = ([|s| − kappa]₊)² / (2 lam) and ∂ρ*(s) = sign(s)[|s| − kappa]₊ / lam; with
    lam = 0 (lasso) ρ* is the indicator of [−kappa, kappa] and ∂ρ* is 0 inside, ±∞ outside.
    """

    def __init__(self, lam, kappa=0.0):
        lam, kappa = float(lam), float(kappa)
        if not (np.isfinite(lam) and lam >= 0):
            raise ValueError(f"lam must be a finite number >= 0, got {lam!r}.")
        if not (np.isfinite(kappa) and kappa >= 0):
            raise ValueError(f"kappa must be a finite number >= 0, got {kappa!r}.")
        self.lam, self.kappa = lam, kappa

    @property
    def strong_convexity(self):
        return self.lam

    def value(self, w):
        return 0.5 * self.lam * np.dot(w, w) + self.kappa * np.abs(w).sum()

    def value_terms(self, w):
        """ρ(w_j) for each j."""
        return 0.5 * self.lam * w * w + self.kappa * np.abs(w)

    def _excess(self, s):
        return np.maximum(np.abs(s) - self.kappa, 0.0)

    def conjugate_terms(self, s):
        """ρ*(s_j) for each j."""
        e = self._excess(s)
        if self.lam > 0:
            return e * e / (2 * self.lam)
        return np.where(e > 0, np.inf, 0.0)

    def conjugate(self, s):
        return self.conjugate_terms(s).sum()

    def conjugate_gradient(self, s):
        if self.lam == 0:
            raise ValueError("∂ρ* is set-valued when lam = 0; use conjugate_gradient_bounds.")
        return np.sign(s) * self._excess(s) / self.lam

    def fenchel_young(self, w, s):
        """(ρ(w_j) + ρ*(s_j) − w_j s_j ≥ 0 for each j, a bound on its rounding error); lam > 0.

        With r = s − lam·w − kappa·sign(w) (0 when s ∈ ∂ρ(w)) it is r²/(2 lam) where s lies on
        w's side beyond kappa, and otherwise the sum of non-negative terms
        |w|(kappa − sign(w)s) + lam w²/2 + ([|s| − kappa]₊)²/(2 lam); in both cases |r| bounds
        the slope of the value in s, w and kappa, so the error is a few ulps of the value and
        of |r| times the size of the parts of r.
        """
        lam, kappa = self.lam, self.kappa
        sign = np.sign(w)
        r = s - lam * w - kappa * sign
        excess = self._excess(s)
        aligned = sign * s > kappa
        value = np.where(aligned, r * r / (2 * lam),
                         np.abs(w) * (kappa - sign * s) + 0.5 * lam * w * w + excess * excess / (2 * lam))
        slack = 4 * EPS * (np.abs(s) + lam * np.abs(w) + kappa)
        return value, (2 * np.abs(r) + slack) * slack / lam + 8 * EPS * value + UNDERFLOW

    def conjugate_gradient_bounds(self, s_lower, s_upper):
        """Sound bounds [inf ∂ρ*(s_lower), sup ∂ρ*(s_upper)]: ∂ρ* is monotone."""
        if self.lam > 0:
            return self.conjugate_gradient(s_lower), self.conjugate_gradient(s_upper)
        # ∂ρ* is 0 on (−kappa, kappa), [0, ∞] at kappa, [−∞, 0] at −kappa, ±∞ beyond; with
        # kappa = 0 the point 0 is both ends, where ∂ρ* is all of ℝ
        lower = np.where(s_lower <= -self.kappa, -np.inf, 0.0)
        upper = np.where(s_upper >= self.kappa, np.inf, 0.0)
        return lower, upper

    def __repr__(self):
        return f"{type(self).__name__}(lam={self.lam!r}, kappa={self.kappa!r})"


class L2(ElasticNet):
    """ρ(t) = (lam/2) t²; ρ*(s) = s²/(2 lam); ∂ρ*(s) = s/lam."""

    def __init__(self, lam):
        super().__init__(lam, 0.0)

    def __repr__(self):
        return f"L2(lam={self.lam!r})"


def get_penalty(lam, kappa=0.0):
    """The penalty of ``(lam/2)‖w‖² + kappa‖w‖₁``."""
    return L2(lam) if float(kappa) == 0.0 else ElasticNet(lam, kappa)
