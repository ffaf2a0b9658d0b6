"""Shared fit/transform machinery of the Gram-based projections (LOL, QOQ, PCA, rrLDA)."""

from __future__ import annotations

import numbers

import dask.array as da
import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from wideml.algebra.lol import Projection, _check_components
from wideml.estimators.fitted import UNSET, FittedState, array, p_array, read_lazy, state
from wideml.inputs.door import FitInput, fit_input, predict_input
from wideml.estimators.params import (NON_NEGATIVE_INT, NONE, POSITIVE_INT, PRECISION, SEED, CheckedParams, Interval, Options,
                                       PathLike)
from wideml.runner import resume as _resume
from wideml.runner.fit_runner import FitPasses, algebra_threads, run_new_data
from wideml.estimators.gram.randomized_fit import RandomizedFit
from wideml.estimators.gram.small_algebra import inverse_cholesky as _inverse_cholesky
from wideml.estimators.gram import solver as _solver  # choose_solver looked up when a fit runs (tests stand in for it)
from wideml.estimators.gram.solver import folds_loadings
from wideml.runner.workdir import work_array
from wideml.exceptions import WidemlError
from wideml.passes.chunkmath import class_medians, resolve_precision
from wideml.passes.gram import CLASS_MEANS, CLASS_MEDIANS, FEATURE_MEAN, GramPass
from wideml.passes.loadings import LOADINGS, EmitPass, project_pass
from wideml.passes.spec import Pass
from wideml.storage.labels import classes_from_model

SOLVERS = ("auto", "gram", "randomized")


class GramProjector(RandomizedFit, FittedState, CheckedParams, TransformerMixin, BaseEstimator):
    """Base class: one Gram pass, n x n algebra, one emit pass.

    Subclasses implement :meth:`_projection` (pure algebra on the Gram) and
    :meth:`_uses_medians`.
    """

    #: Passes over X made by ``fit`` with the Gram solver (Gram/statistics pass + emit pass);
    #: the randomized solver makes q + 2 on a store (sketch, q power steps, final; the
    #: loadings are assembled from the model group) and q + 3 on in-memory input or
    #: when Z would outweigh a quarter of X (see :func:`folds_loadings`), q being the power
    #: steps it took to converge (``n_power_iter_``, between n_power_iter and max_power_iter).
    n_fit_passes = 2

    def _uses_medians(self) -> bool:
        return False

    def _projection(self, G, codes, n_classes, P, Q, n_features, n_components) -> Projection:  # pragma: no cover - abstract
        raise NotImplementedError

    # -- parameters -----------------------------------------------------------------
    _parameter_constraints = {
        "n_components": [POSITIVE_INT, NONE],
        "solver": [Options(*SOLVERS)],
        "precision": [PRECISION],
        "workdir": [PathLike(), NONE],
        "n_oversamples": [NON_NEGATIVE_INT],
        "n_power_iter": [NON_NEGATIVE_INT],
        "max_power_iter": [NON_NEGATIVE_INT],
        "tol": [Interval(0, None, closed="neither")],
        "random_state": [SEED, NONE],
    }

    def _check_parameter_combinations(self) -> None:
        if self.max_power_iter < self.n_power_iter:
            raise WidemlError(f"{type(self).__name__} parameters n_power_iter={self.n_power_iter} and max_power_iter={self.max_power_iter} "
                              "do not go together; max_power_iter caps the power iterations, so make it at least n_power_iter.")

    def component_bound(self, n_samples: int, n_classes: int, n_features: int) -> int:
        """The most components this method can fit on ``n_samples`` samples of ``n_classes`` classes and ``n_features`` features.

        Reads no data (the CLI's ``cv`` caps its dimensions with it before any pass).

        Returns
        -------
        int
        """
        return self._component_bound(n_samples, n_classes, n_features)

    def _component_bound(self, n: int, n_classes: int, p: int) -> int:
        """Most components the data allow (LOL/QOQ: K-1 centroid differences + min(n - K, p) directions, and never
        more than the p dimensions the loadings live in)."""
        return min((n_classes - 1) + min(n - n_classes, p), p)

    def _check_class_sizes(self, data: FitInput) -> None:
        """Refuse, before any pass, classes too small for the method (none by default)."""

    def _target_required(self) -> bool:
        """Whether ``fit`` needs labels (every method but PCA)."""
        return True

    def _resolved_precision(self, dtype) -> str:
        return resolve_precision(self.precision, dtype)

    def _default_components(self, data: FitInput) -> int:
        return max(1, min(data.n_classes, data.n_samples - 1, data.n_features))

    # -- fit ---------------------------------------------------------------------------
    @_resume.auto_resumable
    def fit(self, X, y=None):
        """Fit the projection.

        Parameters
        ----------
        X : array-like, dask array, zarr/h5py array or FeatureStore of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Labels of any kind (taken from the store when X is a FeatureStore
            and y is None); optional for PCA, required by the other methods.

        Returns
        -------
        self

        Notes
        -----
        Parameters are checked (:meth:`_validate_parameters`) before X is read.
        With the Gram solver, makes **two passes** over X: the
        Gram/class-statistics pass, then the emit pass that writes the p x d
        loadings chunk by chunk. With the randomized solver, makes
        **q + 2 passes** over a store (q + 3 over in-memory input, or when n
        is so small that the p x l matrix Z would outweigh a quarter of X:
        :func:`folds_loadings`), q the power iterations it took to converge
        to ``tol`` (at least n_power_iter, at most max_power_iter; recorded
        in ``n_power_iter_``). ``n_fit_passes_`` records the count.
        """
        self._validate_parameters()
        data = fit_input(X, y, require_labels=self._target_required())
        self._fit_data(data)
        return self

    def _fit_data(self, data: FitInput) -> None:
        n, p, K = data.n_samples, data.n_features, data.n_classes
        d = self.n_components if self.n_components is not None else self._default_components(data)
        # a bound no method exceeds, checked before any pass (each method's exact limit follows from the Gram)
        bound = self._component_bound(n, K, p)
        _check_components(d, bound, self._method_name(), f"n_samples = {n}, n_classes = {K}, n_features = {p}")
        self._check_class_sizes(data)
        median = self._uses_medians()
        group = None
        solver, reason = self._choose_solver(data, d)
        fold = solver == "randomized" and not data.in_memory and folds_loadings(n, d, self.n_oversamples, data.X.dtype.itemsize)
        self._folding = fold
        total = self._n_passes(solver, not fold)
        # the fit's runner: a resumable fit's session (inside wideml.runtime.checkpoint.resumable), else none
        self._passes = FitPasses.for_fit(self, total, data)
        try:
            if not data.in_memory:
                width = data.X.chunks[1][0]
                arrays = {FEATURE_MEAN: ((p,), (width,)), CLASS_MEANS: ((K, p), (K, width)), CLASS_MEDIANS: ((K, p), (K, width))}
                group = self._passes.model_group(arrays)
            if fold:
                components, embedding, shift, eigenvalues, kinds = self._fit_randomized_store(data, d, median, group)
            else:
                components, embedding, shift, eigenvalues, kinds = self._fit_with_emit(data, d, median, group, solver, total)
        finally:
            passes = self.__dict__.pop("_passes")
            self.__dict__.pop("_folding", None)
        group = self.__dict__.pop("_settled_group", group)
        self.classes_ = data.classes
        self.train_codes_ = data.codes
        self.n_features_in_ = p
        self.n_components_ = d
        self.offset_ = shift
        self.embedding_ = embedding
        self.eigenvalues_ = eigenvalues
        self.component_kinds_ = list(kinds)
        self.solver_ = solver
        self.solver_reason_ = reason + self.__dict__.pop("_iteration_note", "")
        if solver == "randomized":
            self.n_power_iter_, self.subspace_angle_ = self.__dict__.pop("_iteration")
        else:
            self.n_power_iter_ = self.subspace_angle_ = None
        passes.record()  # n_fit_passes_: the passes run, which must be all ``total`` of them
        self.precision_ = self._resolved_precision(data.X.dtype)
        self.provenance_ = dict(data.source)
        self.feature_layout_ = data.layout
        self._group = group
        self.components_ = components.T
        if group is not None:
            self.class_means_ = work_array(group, CLASS_MEANS)
            self.class_medians_ = work_array(group, CLASS_MEDIANS) if median else None  # robust fits' centroids (maps)

    def _fit_with_emit(self, data: FitInput, d: int, median: bool, group, solver: str, total: int):
        """Gram solver (any input) or randomized solver on in-memory input: the loadings come from an emit pass over X."""
        p, K = data.n_features, data.n_classes
        if solver == "gram":
            proj, embedding, P = self._fit_gram(data, d, median, group)
        else:
            proj, embedding, P = self._fit_randomized(data, d, median, group)
        medians = None
        if median:
            if data.in_memory:
                medians = class_medians(data.numpy_X, data.codes, K)  # middle pairs averaged in float64, as the passes do
            else:
                medians = work_array(group, CLASS_MEDIANS)
        if group is not None:
            self._passes.add_array(group, LOADINGS, (p, d), (data.X.chunks[1][0], d))
        emitted = self._passes.run(EmitPass(data.X, proj.B, proj.Dm if median else None, group_path=group, medians=medians,
                                            with_embedding=embedding is None, precision=self._resolved_precision(data.X.dtype)),
                                   "emit loadings")
        shift, A, XA, AtA = emitted
        shift = np.asarray(shift, dtype=np.float64)
        group = self._settle(group)
        components = A if A is not None else work_array(group, LOADINGS)  # (p, d)
        if embedding is None:  # randomized: X_c A from the emit pass
            embedding = XA - shift
            components, embedding, shift = self._maybe_orthogonalize(components, embedding, shift, AtA)
        return components, embedding, shift, proj.eigenvalues, proj.kinds

    def _settle(self, group):
        """A resumable fit's model group, moved out of the work directory once the last pass is done."""
        if self._passes.session is not None and group is not None:
            group = self._settled_group = self._passes.settle(group)
        return group

    def _maybe_orthogonalize(self, components, embedding, shift, AtA):
        if getattr(self, "orthogonalize", False):
            Rinv = _inverse_cholesky(AtA)
            return components @ Rinv, embedding @ Rinv, shift @ Rinv
        return components, embedding, shift

    def _first_moment(self) -> str | None:
        """Centroids whose differences lead the components ("mean", "median") or None."""
        return None

    def _n_passes(self, solver: str, emit: bool = False) -> int:
        """Most passes over X of one fit: 2 (Gram), max_power_iter + 2 (randomized, loadings from Z) or + 3 (with an emit pass).

        The randomized solver stops once its subspace has converged, and then
        tells the runner how many it made (:meth:`_record_iteration`).
        """
        if solver == "gram":
            return 2
        return self.max_power_iter + (3 if emit else 2)

    def _choose_solver(self, data: FitInput, d: int) -> tuple[str, str]:
        if not self._supports_randomized():  # whatever was asked: this method has one solver
            return "gram", f"{self._method_name()} has only the Gram solver (its directions come from the Gram)"
        if self.solver == "gram":
            return "gram", "solver='gram' was asked for"
        if self.solver == "randomized":
            return "randomized", "solver='randomized' was asked for"
        return _solver.choose_solver(data.n_samples, data.n_features, d, self.n_power_iter, self.n_oversamples,
                             itemsize=data.X.dtype.itemsize)

    def _supports_randomized(self) -> bool:
        return True

    def _fit_gram(self, data: FitInput, d: int, median: bool, group):
        n, K = data.n_samples, data.n_classes
        stats = self._passes.run(GramPass(data.X, data.codes, K, median_subsets=[np.arange(n)] if median else [],
                                          precision=self._resolved_precision(data.X.dtype), out_group=group),
                                 "Gram and class statistics")
        P, Q = (stats.medians[0].P, stats.medians[0].Q) if median else (None, None)
        with algebra_threads(n):
            proj = self._projection(stats.G, data.codes, K, P, Q, data.n_features, d)
            return proj, proj.embed(stats.G, P), P

    def _seed(self) -> int:
        rs = self.random_state
        if rs is None:
            return int(np.random.SeedSequence().entropy % (2**63))
        if not isinstance(rs, numbers.Integral):
            raise WidemlError(f"random_state must be an integer or None (keyed random matrices need an integer seed), got {rs!r}.")
        return int(rs)

    def _method_name(self) -> str:
        return type(self).__name__

    def _n_delta_columns(self, n_classes: int, d: int) -> int:
        return 0

    def _centring(self) -> str:
        return "class"

    # -- transform ---------------------------------------------------------------------
    def transform(self, X):
        """Project X onto the fitted components.

        Parameters
        ----------
        X : array-like, dask array, zarr/h5py array or FeatureStore of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_components)
            Coordinates X A - m^T A, the same centred coordinates as ``embedding_``.

        Notes
        -----
        Makes **one pass** over X (and reads the loadings once).
        """
        check_is_fitted(self, "components_")
        Xd = predict_input(X, self.n_features_in_, type(self).__name__, layout=getattr(self, "feature_layout_", None))
        return run_new_data(Pass(lambda: project_pass(Xd, self.components_.T, self.precision)),
                            f"{type(self).__name__} transform: one pass", offset=self.offset_)

    def fit_transform(self, X, y=None, **fit_params):
        """Fit, then return the training embedding (from the Gram: no extra pass)."""
        return self.fit(X, y).embedding_

    # -- model store: the fitted attributes a model keeps -------------------------------
    _fitted = (
        state("n_features_in_", load=int),
        state("n_components_", load=int),
        state("component_kinds_"),
        state("solver_"),
        state("solver_reason_", default=""),  # absent from early models
        state("n_power_iter_", optional=True),  # randomized fits: power iterations taken
        state("subspace_angle_", optional=True),  # randomized fits: last change of the subspace between iterates (rad)
        state("precision_"),
        state("n_fit_passes_", default=UNSET),  # absent from models saved before it was recorded
        array("classes_", load=classes_from_model),  # text classes: zarr reads StringDType, back to <U
        array("train_codes_"),
        array("offset_"),
        array("embedding_"),
        array("eigenvalues_"),
        p_array("components_", "loadings", save=np.transpose, load=lambda a: read_lazy(a).T),
        p_array("class_means_", optional=True),
        p_array("class_medians_", optional=True),  # robust LOL/QOQ on a store
    )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = self._target_required()
        return tags
