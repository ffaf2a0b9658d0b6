"""What each wideml model class writes to a model store: its state and arrays, by symbolic shape.

One :class:`~wideml.models.schema_checks.ModelSchema` per estimator family,
checked by :func:`wideml.models.schema_checks.check_model_contents` before
``_from_model_state`` sees anything. Symbols: ``n_features`` (p),
``n_components`` (d), ``n_classes`` (K), ``n_train`` (training samples),
``n_kpca`` (KPCA components), ``n_ref`` (KPCA reference rows: the training
samples or the Nystrom landmarks); other names are sizes free to take any
value but one value throughout the model.

Each estimator's ``_fitted`` table (:mod:`wideml.estimators.fitted`) says
which attribute each key holds; ``tests/estimators/test_fitted_tables.py``
checks that every table names only keys its schema declares, optional in
both or in neither. A model whose state or arrays differ from its schema is
refused at load.
"""

from __future__ import annotations

from wideml.models.schema_checks import LABEL_KINDS, ArraySpec, ModelSchema

_CLASSES = ArraySpec(("n_classes",), LABEL_KINDS)
_TRAIN_CODES = ArraySpec(("n_train",), "iu", codes_of="n_classes")


GRAM_PROJECTOR = ModelSchema(
    state={"n_features_in": "int", "n_components": "int", "component_kinds": "list[str]", "solver": "str",
           "solver_reason?": "str", "precision": "str", "n_fit_passes?": "int", "n_power_iter?": "int", "subspace_angle?": "float"},
    arrays={
        "classes": _CLASSES,
        "train_codes": _TRAIN_CODES,
        "offset": ArraySpec(("n_components",)),
        "embedding": ArraySpec(("n_train", "n_components")),
        "eigenvalues": ArraySpec(("n_eigen",)),
        "loadings": ArraySpec(("n_features", "n_components"), p_sized=True),
        "class_means": ArraySpec(("n_classes", "n_features"), p_sized=True, optional=True),
        "class_medians": ArraySpec(("n_classes", "n_features"), p_sized=True, optional=True),  # robust LOL/QOQ on a store
    },
    dims={"n_features_in": "n_features", "n_components": "n_components"},
)

LFL = ModelSchema(
    state={"n_features_in": "int", "n_components": "int", "density": "float", "chunk": "int", "solver": "str", "precision?": "str",
           "n_fit_passes?": "int", "random_columns?": "str"},  # random_columns: absent from models saved before LFL's R was nested
    arrays={
        "classes": _CLASSES,
        "train_codes": _TRAIN_CODES,
        "offset": ArraySpec(("n_components",)),
        "embedding": ArraySpec(("n_train", "n_components")),
        "Dm": ArraySpec(("n_classes", "n_deltas")),
        "centroids": ArraySpec(("n_classes", "n_features"), p_sized=True),
    },
    dims={"n_features_in": "n_features", "n_components": "n_components", "chunk": "chunk"},
)

RP = ModelSchema(
    state={"n_features_in": "int", "n_components": "int", "precision": "str", "n_fit_passes?": "int"},
    arrays={
        "classes": _CLASSES,
        "train_codes": _TRAIN_CODES,
        "offset": ArraySpec(("n_components",)),
        "embedding": ArraySpec(("n_train", "n_components")),
    },
    dims={"n_features_in": "n_features", "n_components": "n_components"},
)

ENCODER = ModelSchema(
    state={"n_features_in": "int", "kernels": "list[str]", "kernel": "str", "kernel_scores": "dict", "offset": "float",
           "spearman_mode": "str|null", "precision": "str", "n_fit_passes": "int", "lda_classes": "list", "train_store?": "str|null"},
    arrays={
        "classes": _CLASSES,
        "train_counts": ArraySpec(("n_classes",), "iu"),
        "lda_coef": ArraySpec(("n_lda", "n_classes")),
        "lda_intercept": ArraySpec(("n_lda",)),
        "embedding": ArraySpec(("n_train", "n_classes")),
        "train_codes": ArraySpec(("n_train",), "iu", optional=True, codes_of="n_classes"),
        "class_means": ArraySpec(("n_classes", "n_features"), p_sized=True, optional=True),
        "class_mean_ranks": ArraySpec(("n_classes", "n_features"), p_sized=True, optional=True),
        "rank_sums": ArraySpec(("n_rank_rows", "n_classes"), optional=True),
        "sketch_idx": ArraySpec(("n_sketch",), "iu", optional=True, codes_of="n_features"),
    },
    dims={"n_features_in": "n_features", "n_fit_passes": "n_fit_passes"},
)

_KERNEL_STATE = {
    "basis": {"kernel": "dict", "grand_mean": "float", "n_nonzero": "int", "clipped": "float"},
    # identity: the training store's (its id, a digest of its X files), absent from models saved before it was recorded
    "training": {"path": "str|null", "shape": "list[int]", "identity?": {"store_id": "str|null", "x_files": "str"}},
    "n_features_in": "int",
    "n_fit_passes?": "int",  # absent from models saved before it was recorded (their fits made 1 pass)
}
_KERNEL_DIMS = {"n_features_in": "n_features", "training.shape.0": "n_train", "training.shape.1": "n_features"}
_KERNEL_ARRAYS = {
    "kpca_eigenvalues": ArraySpec(("n_kpca",)),
    "kpca_vectors": ArraySpec(("n_ref", "n_kpca")),
    "kpca_col_means": ArraySpec(("n_ref",)),
    "kpca_offset": ArraySpec(("n_kpca",)),
    "landmarks": ArraySpec(("n_ref",), "iu", optional=True, codes_of="n_train"),
    "X_train": ArraySpec(("n_train", "n_features"), "fiu", p_sized=True, optional=True),
}

KERNEL_PCA = ModelSchema(state=_KERNEL_STATE, arrays=_KERNEL_ARRAYS | {"embedding": ArraySpec(("n_train", "n_kpca"))}, dims=_KERNEL_DIMS)

KERNEL_EMBEDDING = ModelSchema(
    state=_KERNEL_STATE,
    arrays=_KERNEL_ARRAYS | {
        "embedding": ArraySpec(("n_train", "n_components")),
        "components": ArraySpec(("n_components", "n_kpca")),
        "codes": _TRAIN_CODES,
        "classes": _CLASSES,
    },
    dims=_KERNEL_DIMS,
)

KPCA_TRICK = ModelSchema(state=_KERNEL_STATE, arrays=dict(KERNEL_EMBEDDING.arrays) | {"selection_scores": ArraySpec(("n_scores",), optional=True, finite=False)},
                         dims=_KERNEL_DIMS)

#: State of an EmbeddingClassifier: its embedding's class, parameters and state (arrays are the embedding's).
EMBEDDING_CLASSIFIER_STATE = {"embedding_class": "str", "embedding_params": "dict", "embedding_state": "json"}

#: LOLRegressor: a LOL's model plus the least squares on its embedding and the quantile edges of the training target.
LOL_REGRESSOR = ModelSchema(
    state=dict(GRAM_PROJECTOR.state) | {"n_bins": "int", "intercept": "float"},
    arrays=dict(GRAM_PROJECTOR.arrays) | {"coef": ArraySpec(("n_components",)), "bin_edges": ArraySpec(("n_edges",))},
    dims=GRAM_PROJECTOR.dims,
)
