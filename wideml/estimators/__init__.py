"""scikit-learn estimators; the only layer that triggers computation."""

from wideml.estimators.classifier import EmbeddingClassifier
from wideml.estimators.gram.cv import CVReport, DimensionCV, cross_validate_dims
from wideml.estimators.encoder.cv import cross_validate_encoder
from wideml.estimators.encoder.estimator import EncoderClassifier
from wideml.estimators.kernel.kernel_lol import KernelLOL
from wideml.estimators.kernel.kpca import KernelPCA
from wideml.estimators.kernel.kpca_trick import KPCATrick
from wideml.estimators.lfl import LFL
from wideml.estimators.gram.lol import LOL, PCA, RRLDA

__all__ = [
    "CVReport", "DimensionCV", "EmbeddingClassifier", "EncoderClassifier", "KPCATrick", "KernelLOL", "KernelPCA",
    "LFL", "LOL", "PCA", "RRLDA", "cross_validate_dims", "cross_validate_encoder",
]
