"""scikit-learn adapters for glru: drop-in, exact and certified model selection."""

from .cross_validation import FallbackWarning, GLRUCrossValidator, cross_val_score
from .stepwise import GLRUStepwiseSelector

__all__ = ["FallbackWarning", "GLRUCrossValidator", "GLRUStepwiseSelector", "cross_val_score"]
