"""What the encoder's modules share without importing the estimator (which imports them all).

``fast``, ``full``, ``model_state`` and ``cv`` work on the estimator being
fitted or applied; they name it :data:`Encoder` here rather than importing
:class:`~wideml.estimators.encoder.estimator.EncoderClassifier`, which imports
them, so no import circle runs through the estimator.
"""

from __future__ import annotations

from typing import TypeAlias

from sklearn.base import BaseEstimator

#: The :class:`~wideml.estimators.encoder.estimator.EncoderClassifier` being fitted or applied
#: (its parameters and fitted attributes are read and set by name).
Encoder: TypeAlias = BaseEstimator

__all__ = ["Encoder"]
