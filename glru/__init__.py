"""glru: exact, certified model selection for regularized linear models.

The math (losses, penalties, duality gaps, certificates, solvers); nothing here knows about
scikit-learn estimators — :mod:`sklearn_ext` adapts those.
"""

from . import losses, penalties
from .certificate import Certificate, certificate_at
from .fit import Fit, fit
from .problem import Problem
from .solver import solve

__version__ = "0.1.0"
__all__ = ["Certificate", "Fit", "Problem", "certificate_at", "fit", "losses", "penalties", "solve"]
