"""scikit-learn's estimator checks on numpy input."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from wideml import LOL, PCA, RRLDA, EmbeddingClassifier


@parametrize_with_checks([LOL(2), PCA(2), RRLDA(2), EmbeddingClassifier(LOL(2))])
def test_sklearn_compatible(estimator, check):
    check(estimator)
