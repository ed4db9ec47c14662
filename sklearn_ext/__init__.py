"""scikit-learn adapters for glru: drop-in, exact and certified model selection."""

from .cross_validation import FallbackWarning, GLRUCrossValidator, cross_val_score
from .search import GLRUSearchCV
from .stepwise import GLRUStepwiseSelector

__all__ = ["FallbackWarning", "GLRUCrossValidator", "GLRUSearchCV", "GLRUStepwiseSelector", "cross_val_score"]
