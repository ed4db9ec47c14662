"""scikit-learn adapters for glru: drop-in, exact and certified model selection."""

from .cross_validation import FallbackWarning, GLRUCrossValidator, cross_val_score

__all__ = ["FallbackWarning", "GLRUCrossValidator", "cross_val_score"]
