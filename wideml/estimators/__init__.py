"""scikit-learn estimators; the only layer that triggers computation."""

from wideml.estimators.classifier import EmbeddingClassifier
from wideml.estimators.gram.cv import CVReport, DimensionCV, cross_validate_dims
from wideml.estimators.encoder.cv import cross_validate_encoder
from wideml.estimators.encoder.estimator import EncoderClassifier
from wideml.estimators.kernel.kernel_lol import KernelLOL
from wideml.estimators.kernel.kpca import KernelPCA
from wideml.estimators.kernel.kpca_trick import KPCATrick
from wideml.estimators.lfl import LFL
from wideml.estimators.rp import RP
from wideml.estimators.gram.lol import LOL, PCA, RRLDA
from wideml.estimators.regression import LOLRegressor
from wideml.estimators.two_sample import TwoSampleResult, two_sample_test

__all__ = [
    "CVReport", "DimensionCV", "EmbeddingClassifier", "EncoderClassifier", "KPCATrick", "KernelLOL", "KernelPCA",
    "LFL", "LOL", "LOLRegressor", "PCA", "RP", "RRLDA", "TwoSampleResult", "cross_validate_dims", "cross_validate_encoder",
    "two_sample_test",
]
