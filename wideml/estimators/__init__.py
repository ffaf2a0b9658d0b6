"""scikit-learn estimators; the only layer that triggers computation."""

from wideml.estimators.classifier import EmbeddingClassifier
from wideml.estimators.cv import CVReport, DimensionCV, cross_validate_dims
from wideml.estimators.lfl import LFL
from wideml.estimators.lol import LOL, PCA, RRLDA

__all__ = ["CVReport", "DimensionCV", "EmbeddingClassifier", "LFL", "LOL", "PCA", "RRLDA", "cross_validate_dims"]
