"""Classification on an embedding: LOL/QOQ/PCA/rrLDA followed by scikit-learn's LDA or QDA."""

from __future__ import annotations

from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin, clone
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis, QuadraticDiscriminantAnalysis
from sklearn.utils.validation import check_is_fitted

from wideml.estimators.class_sizes import check_classifier_labels, fit_classifier
from wideml.estimators.gram.lol import LOL
from wideml.estimators.gram.projector import GramProjector
from wideml.estimators.lfl import LFL
from wideml.estimators.rp import RP
from wideml.estimators.params import NONE, CheckedParams, Options, Satisfies
from wideml.exceptions import WidemlError
from wideml.inputs.door import fit_input
from wideml.storage import schema


CLASSIFIERS = ("lda", "qda")


def make_classifier(name: str):
    """scikit-learn's LDA or QDA, by name."""
    if name == "lda":
        return LinearDiscriminantAnalysis()
    if name == "qda":
        return QuadraticDiscriminantAnalysis(reg_param=1e-6)
    raise WidemlError(f"classifier={name!r} is not one of {', '.join(map(repr, CLASSIFIERS))}.")


def _is_projector(value) -> bool:
    return isinstance(value, (GramProjector, LFL, RP))


class EmbeddingClassifier(CheckedParams, ClassifierMixin, TransformerMixin, BaseEstimator):
    """An embedding (LOL, QOQ, PCA, rrLDA) followed by LDA or QDA on the embedded samples.

    The classifier is trained on the embedding's ``embedding_`` (computed
    from the Gram, no extra pass), so ``fit`` costs what the embedding's fit
    costs (2 passes) and ``predict`` one pass over the new data.

    Parameters
    ----------
    embedding : wideml projector, default LOL()
    classifier : {"lda", "qda"}, default "lda"

    Attributes
    ----------
    embedding_ : fitted projector
    classifier_ : fitted LinearDiscriminantAnalysis or QuadraticDiscriminantAnalysis
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> import wideml
    >>> rng = np.random.default_rng(0)
    >>> y = np.repeat([0, 1], 20)
    >>> X = rng.normal(size=(40, 500))
    >>> X[y == 1, :10] += 2.0                    # the classes differ in 10 of 500 features
    >>> clf = wideml.EmbeddingClassifier(wideml.LOL(n_components=2), classifier="lda").fit(X, y)
    >>> clf.predict(X[:3])
    array([0, 0, 0])
    >>> clf.score(X, y)
    1.0
    >>> clf.transform(X).shape                         # the embedding the classifier works on
    (40, 2)
    """

    _parameter_constraints = {
        "embedding": [Satisfies(_is_projector, "a LOL, PCA, RRLDA, LFL or RP instance"), NONE],
        "classifier": [Options(*CLASSIFIERS)],
    }

    def __init__(self, embedding=None, classifier="lda"):
        self.embedding = embedding
        self.classifier = classifier

    def fit(self, X, y=None):
        """Fit the embedding (2 passes over X), then the classifier on the training embedding.

        Parameters (this estimator's and the embedding's) and labels are
        checked before X is read; y may be of any label kind and is required
        (taken from the store when X is a labelled FeatureStore).
        """
        self._validate_parameters()
        if y is None and getattr(X, "y", None) is None:
            raise WidemlError("requires y to be passed, but the target y is None; pass labels (or a store that holds y) to fit.")
        clf = make_classifier(self.classifier)
        emb = clone(self.embedding) if self.embedding is not None else LOL()
        self._check_class_sizes(emb, X, y)
        emb.fit(X, y)
        self.embedding_ = emb
        self._fit_classifier(clf, emb.embedding_, emb.classes_)
        return self

    def _check_parameter_combinations(self) -> None:
        if self.embedding is not None:
            self.embedding._validate_parameters()

    def _check_class_sizes(self, emb, X, y) -> None:
        """Before any pass: the classifier can be fitted on the embedding's dimension with these classes' sizes.

        The labels and the embedding's dimension (``n_components``, or its
        default from the labels) are known up front, so LDA with a single
        sample in every class, or QDA with a class of at most d samples, is
        refused here rather than after the embedding's passes.
        """
        data = fit_input(X, y)  # metadata and labels only
        if emb.n_components is not None:
            d = int(emb.n_components)
        elif hasattr(emb, "_default_components"):
            d = int(emb._default_components(data))
        else:  # LFL, RP: the number of classes
            d = data.n_classes
        check_classifier_labels(self.classifier, data.classes, data.codes, d, rank_bound=data.n_features)

    def _fit_classifier(self, clf, Z, classes):
        self.classifier_ = fit_classifier(clf, Z, classes[self.embedding_.train_codes_])
        self.classes_ = classes
        self.n_features_in_ = self.embedding_.n_features_in_
        if hasattr(self.embedding_, "n_fit_passes_"):  # the classifier is fitted on the embedding: no pass of its own
            self.n_fit_passes_ = self.embedding_.n_fit_passes_

    def _embed(self, X):
        check_is_fitted(self, "classifier_")
        return self.embedding_.transform(X)

    def predict(self, X):
        """Predicted labels, shape (n_samples,); one pass over X."""
        Z = self._embed(X)
        return self.classifier_.predict(Z)

    def predict_proba(self, X):
        """Class probabilities, shape (n_samples, n_classes); one pass over X."""
        Z = self._embed(X)
        return self.classifier_.predict_proba(Z)

    def transform(self, X):
        """The embedding of X, shape (n_samples, n_components); one pass over X."""
        return self._embed(X)

    def decision_function(self, X):
        Z = self._embed(X)
        return self.classifier_.decision_function(Z)

    # -- model store -------------------------------------------------------------------
    def _model_state(self):
        check_is_fitted(self, "classifier_")
        state, arrays = self.embedding_._model_state()
        return {"embedding_class": schema.class_name(type(self.embedding_)),
                "embedding_params": self.embedding_.get_params(deep=False), "embedding_state": state}, arrays

    @classmethod
    def _from_embedding(cls, params: dict, embedding) -> "EmbeddingClassifier":
        """A classifier with these parameters around a fitted embedding (its embedding is refitted by nothing:
        only the small classifier on the embedding's training coordinates is fitted). Model loading builds the
        embedding (:mod:`wideml.models.persistence`) and hands it here."""
        est = cls(**params)
        est.embedding_ = embedding
        est._fit_classifier(make_classifier(est.classifier), embedding.embedding_, embedding.classes_)
        return est

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags
