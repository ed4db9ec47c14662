"""scikit-learn adapters for glru: drop-in, exact and certified model selection and data deletion."""

from .coded import CodedShardRegressor
from .cross_validation import FallbackWarning, GLRUCrossValidator, cross_val_score
from .recollection import RecollectionSGDClassifier, RecollectionSGDRegressor
from .search import GLRUSearchCV
from .stepwise import GLRUStepwiseSelector
from .unlearning import GLRUUnlearner, UnlearningCertificate, UnlearningWarning, certify, forget

__all__ = [
    "CodedShardRegressor",
    "FallbackWarning",
    "GLRUCrossValidator",
    "GLRUSearchCV",
    "GLRUStepwiseSelector",
    "GLRUUnlearner",
    "RecollectionSGDClassifier",
    "RecollectionSGDRegressor",
    "UnlearningCertificate",
    "UnlearningWarning",
    "certify",
    "cross_val_score",
    "forget",
]
