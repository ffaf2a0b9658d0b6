"""The randomized solver of the Gram-based projections: a sketch, power steps until the subspace converges, the loadings.

Mixed into :class:`wideml.estimators.gram.projector.GramProjector`, which provides
the fit's runner (``self._passes``), the parameters (n_oversamples,
n_power_iter, max_power_iter, tol, random_state) and the method hooks
(``_centring``, ``_first_moment``, ``_n_delta_columns``, ``_randomized_projection``...).
"""

from __future__ import annotations

import os
import shutil
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from wideml.algebra.randomized import orthonormal_basis, randomized_coefficients
from wideml.algebra.subspace_iteration import SubspaceIteration
from wideml.inputs.door import FitInput
from wideml.runner.fit_runner import one_blas_thread
from wideml.runner.workdir import work_array
from wideml.exceptions import WidemlError
from wideml.passes.gram import CLASS_MEANS, CLASS_MEDIANS
from wideml.passes.loadings import LOADINGS, assemble_loadings
from wideml.passes.sketch import SKETCH_BASIS, SketchPass
from wideml.runtime import compute


class RandomizedFit:
    """The randomized solver's fit steps (see the module docstring)."""

    def _sketch_passes(self, data: FitInput, d: int, median: bool, group, fold: bool):
        """The randomized solver's passes over X: a sketch, then power steps until the subspace converges.

        Each pass after the sketch applies M M^T to the orthonormal basis Q of
        the last result; its Rayleigh-Ritz matrix Q^T M M^T Q gives the top
        Ritz subspace of span(Q), compared with the previous one
        (:class:`~wideml.algebra.subspace_iteration.SubspaceIteration`). The
        iteration stops once that subspace has converged to ``tol`` and at
        least n_power_iter power steps were made, or after max_power_iter
        power steps (then with a ConvergenceWarning: the fit is valid, its
        subspace only less accurate than ``tol``). Every pass is checkpointed
        under its own Q, so a resumed fit retraces the same iterates.

        Returns (Q, last pass's result, centroid Gram, further sums of the
        sketch pass). With ``fold`` the sketch pass also accumulates the
        centroid embedding and every pass that may be the last writes
        Z = M^T Q into ``group`` (see :func:`wideml.passes.sketch.sketch_pass`).
        """
        if not self._supports_randomized():
            raise WidemlError(f"{self._method_name()} needs solver='gram' (its per-class directions come from the Gram).")
        n, K = data.n_samples, data.n_classes
        n_eigen = d - self._n_delta_columns(K, d)
        width = min(n, n_eigen + self.n_oversamples)
        kw = dict(n_cols=width, seed=self._seed(), centring=self._centring(), precision=self._resolved_precision(data.X.dtype))
        first = self._passes.run(SketchPass(data.X, data.codes, K, medians=median, out_group=group,
                                            embed_first=self._first_moment() if fold else None, **kw),
                                 "sketch and class statistics")
        Y, cg_means, cg_meds, sums = first
        tracker = SubspaceIteration(n_eigen, self.tol)
        while True:
            with one_blas_thread():  # n x l algebra
                Q = orthonormal_basis(Y)
            may_stop = tracker.steps >= self.n_power_iter  # power steps made before this pass
            capped = tracker.steps >= self.max_power_iter
            final = fold and (may_stop or capped)  # a pass that may be the last keeps Z = M^T Q for the loadings
            step = self._passes.run(SketchPass(data.X, data.codes, K, Q=Q, final=final, out_group=group if final else None, **kw),
                                    "power iteration until the subspace converges")
            Y = step[3]["MQ"] if final else step[0]  # M M^T Q
            with one_blas_thread():
                converged = tracker.update(Q, step[3]["ZtZ"] if final else Q.T @ Y)
            if (may_stop and converged) or capped:
                break
        self._record_iteration(tracker, converged)
        return Q, step, cg_meds if median else cg_means, sums

    def _record_iteration(self, tracker, converged: bool) -> None:
        """Keep the power steps taken and the last angle for the fitted model, and warn when the cap came first."""
        steps = tracker.steps - 1  # passes after the sketch, less the last (Rayleigh-Ritz) one
        self._iteration = (steps, None if tracker.steps < 2 else float(tracker.angle))
        state = "converged" if converged else "stopped at max_power_iter"
        self._iteration_note = f"; {steps} power iteration{'' if steps == 1 else 's'}, {state}: {tracker.summary()}"
        # the runner was told the most passes the fit could make; it made these
        self._passes.total = self._passes.done + (0 if self.__dict__.get("_folding") else 1)
        if not converged:
            warnings.warn(f"{self._method_name()}'s randomized solver stopped after max_power_iter={self.max_power_iter} power iterations "
                          f"before its subspace converged ({tracker.summary()}); the fit is valid but less "
                          "accurate: raise max_power_iter or n_oversamples, or use solver='gram'.", ConvergenceWarning, stacklevel=4)

    def _fit_randomized_store(self, data: FitInput, d: int, median: bool, group: str):
        """Randomized solver on a store: n_power_iter + 2 passes over X, loadings assembled from the model group.

        The final pass writes Z = M^T Q (p x l) into the model group; the
        loadings [C^T E, Z W / sqrt(values)] then need only p-sized arrays, so
        no emit pass over X is made. The training embedding (X - 1 m^T) A comes
        from the sketch pass (centroid part) and the final pass (eigen part).
        """
        basis_dir = os.path.join(group, SKETCH_BASIS)
        os.makedirs(basis_dir, exist_ok=True)
        done = False
        try:
            _, step, centroid_gram, sums = self._sketch_passes(data, d, median, group, fold=True)
            XZ, T = step[0], step[3]["ZtZ"]
            with one_blas_thread():  # l x l algebra
                E, Ws, kinds, vals = randomized_coefficients(data.codes, data.n_classes, d, T, first_moment=self._first_moment(),
                                                             centroid_gram=centroid_gram)
            self._passes.add_array(group, LOADINGS, (data.n_features, d), (data.X.chunks[1][0], d))
            ((shift, AtA),) = compute(assemble_loadings(group, data.X.chunks[1], CLASS_MEDIANS if median else CLASS_MEANS, basis_dir, E, Ws),
                                      label=f"{type(self).__name__} fit: loadings from the model group (no pass over X)")
            done = True
        finally:
            if done or self._passes.session is None:  # an interrupted resumable fit keeps the final pass's Z files for the rerun
                shutil.rmtree(basis_dir, ignore_errors=True)
        group = self._settle(group)
        parts = ([sums["XU"] @ E] if E.shape[1] else []) + ([XZ @ Ws] if Ws.shape[1] else [])
        components, embedding, shift = self._maybe_orthogonalize(work_array(group, LOADINGS), np.hstack(parts), shift, AtA)
        return components, embedding, shift, vals, kinds

    def _fit_randomized(self, data: FitInput, d: int, median: bool, group):
        """Randomized solver whose loadings then come from an emit pass (in-memory input, or tiny n)."""
        Q, step, centroid_gram, _ = self._sketch_passes(data, d, median, group, fold=False)
        with one_blas_thread():  # n x l algebra
            proj = self._randomized_projection(data.codes, data.n_classes, d, Q, step[0], centroid_gram)
        return proj, None, None

