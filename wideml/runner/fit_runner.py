"""The one fit runner: a fit's passes over X, its BLAS-thread rule and its model work directory.

A fit makes a known number of passes over X (its ``n_fit_passes``). It
declares each of them as a :class:`~wideml.passes.spec.Pass` (how to build its
graph, its in-memory form, what its checkpoint holds) and hands it to one
:class:`FitPasses`, which

- gives the pass its number in the progress label
  ("KernelPCA fit, pass 1/1: Gram"), runs its dask graph, or the same chunk
  functions directly on an in-memory array (the pass's ``local`` form, no
  graph, one BLAS thread), and counts it;
- in a resumable fit, gives the pass its checkpoint (keyed by its number, its
  ``kind`` and its ``key()``), hands the checkpoint to the pass's graph (whose
  lanes save into it), saves the pass's result, and takes the result of a
  completed pass from its checkpoint instead (:func:`wideml.runner.resume.run_pass`);
  the fit never sees a checkpoint;
- makes the model group the passes write p-sized arrays into
  (:meth:`FitPasses.model_group`: in the resumable fit's work directory, else
  a fresh folder of the estimator's ``workdir``), and moves a resumed fit's
  group out of the work directory when its passes are done
  (:meth:`FitPasses.settle`);
- sets ``n_fit_passes_`` (:meth:`FitPasses.record`), which tests compare with
  the chunk reads counted on the store (``tests/runner/test_fit_passes.py``).

:func:`run_new_data` runs a pass over new data (``transform``, ``predict``:
not a fit's, not counted, never checkpointed) the same way.

The BLAS-thread rule lives here too: work on n x K or n x l matrices, and
in-memory chunk functions, run on one BLAS thread (:func:`one_blas_thread`):
threads gain nothing on such shapes and spin against the other cores'
work on a shared machine; n x n algebra is threaded only from
``SMALL_ALGEBRA_N`` samples up (:func:`algebra_threads`). Inside dask tasks
the scheduler's rule applies (:mod:`wideml.runtime.compute`).
"""

from __future__ import annotations

import contextlib
from typing import Any

import dask
import numpy as np
from threadpoolctl import ThreadpoolController

from wideml.passes.spec import Pass
from wideml.runner import resume as _resume
from wideml.runner.workdir import new_model_group
from wideml import runtime  # runtime.compute, looked up when a pass runs (tests record the labels through it)
from wideml.runtime import scheduler
from wideml.runtime.checkpoint import PassCheckpoint
from wideml.runtime.memory_watch import watch

#: Below this many samples n x n algebra runs on one BLAS thread: OpenBLAS threads on small
#: matrices gain little and, on a busy machine, spin against other work (measured up to 30x slower).
SMALL_ALGEBRA_N = 1500

_CONTROLLER = None


def one_blas_thread():
    """Context running BLAS on one thread (n x K and n x l algebra, in-memory chunk functions)."""
    global _CONTROLLER
    if _CONTROLLER is None:
        _CONTROLLER = ThreadpoolController()  # inspecting the loaded BLAS libraries once (~ms), not per call
    return _CONTROLLER.limit(limits=1, user_api="blas")


def algebra_threads(n: int):
    """Context for n x n algebra: one BLAS thread below ``SMALL_ALGEBRA_N`` samples, all threads from there up."""
    return one_blas_thread() if n < SMALL_ALGEBRA_N else contextlib.nullcontext()


class FitPasses:
    """The passes over X of one fit of ``estimator``: each numbered "pass i/total" in its label, and counted.

    Parameters
    ----------
    estimator : estimator or None
        The estimator being fitted; its class name starts every label,
        :meth:`model_group` ties the work folder to it and :meth:`record` sets
        its ``n_fit_passes_``. None for a run that is not a fit (a
        cross-validation): :meth:`record` then only checks the count.
    total : int
        Passes over X the fit makes (the estimator's documented count).
    session : wideml.runtime.checkpoint.Session, optional
        The resumable fit's session (:func:`wideml.runner.resume.begin`), else None.
    data : FitInput, optional
        The fit's input. In-memory X that is one feature chunk has its pass
        graphs run in the calling thread on dask's synchronous scheduler (unless
        a dask.distributed client is active): a one-task graph gains nothing
        from the thread pool, and LOL on 100 x 1000 fits in 6 ms instead of 13.
    name : str, optional
        What the labels call the run (default ``"<class name> fit"``), e.g.
        ``"cross-validation"``.
    first : int, default 1
        Checkpoint index of the first pass: a run that shares a resumable
        session with fits numbers its checkpoints apart from theirs.

    Attributes
    ----------
    done : int
        Passes run so far. A pass whose result came from a completed checkpoint
        counts too: the fit consists of it, and ``n_fit_passes_`` states what a
        fit costs.
    log : list of dict
        One entry per pass run: ``pass`` (1-based), ``what`` it computed,
        ``seconds`` of wall time and ``peak_rss_bytes``, this process's resident
        memory sampled during the pass (:func:`wideml.runtime.memory_watch.watch`).
        :meth:`record` hands it to the estimator as ``pass_log_``.
    """

    def __init__(self, estimator: Any, total: int, session: Any = None, data: Any = None, *, name: str | None = None,
                 first: int = 1):
        self.estimator = estimator
        self.total = int(total)
        self.session = session
        self.name = name if name is not None else f"{type(estimator).__name__} fit"
        self.first = int(first)
        self.done = 0
        self.log: list[dict] = []
        self._data = data

    @property
    def in_process(self) -> bool:
        """Whether the fit's graphs run in this thread: in-memory X of one feature chunk (no task scheduling; BLAS threads free).

        Asked only when a pass runs a graph, so a fit whose passes all run
        their in-memory form never builds a dask view of X.
        """
        data = self._data
        return data is not None and data.in_memory and data.X.numblocks[1] == 1

    @classmethod
    def for_fit(cls, estimator: Any, total: int, data: Any, *, keyed_by: Any = None) -> FitPasses:
        """The runner of ``estimator.fit(data)``: resumable when the fit is (a store's fit inside a resumable block).

        Parameters
        ----------
        estimator : estimator
        total : int
            Passes over X the fit makes.
        data : FitInput
            The fit's input (its fingerprint keys the fit's checkpoints: :func:`wideml.runner.resume.begin`).
        keyed_by : FitInput-like, optional
            What the fingerprint is taken from instead of ``data`` (its ``X``,
            ``in_memory``, ``source`` and ``codes``; a kernel fit's stored training X).
        """
        return cls(estimator, total, _resume.begin(estimator, data if keyed_by is None else keyed_by), data)

    @classmethod
    def for_run(cls, name: str, fingerprint: str, params: dict, data: Any, total: int, *, first: int = 1,
                resumable: bool = True) -> FitPasses:
        """The runner of a run that is not one estimator's fit (a cross-validation), named ``name`` in its labels.

        It checkpoints in a resumable block on a store, its checkpoints keyed by
        ``fingerprint`` (the run's name) and ``params``
        (:func:`wideml.runner.resume.begin_with`), or in the session a fit of the
        same block has begun; ``resumable=False`` never checkpoints. ``first``
        numbers its checkpoints apart from a fit's sharing the session.
        """
        session = (_resume.begin_with(data, fingerprint, params) or _resume.begun()) if resumable else None
        return cls(None, total, session, data, name=name, first=first)

    def label(self, what: str) -> str:
        """Progress label of the next pass, e.g. ``"KernelLOL fit, pass 1/1: Gram"``."""
        return f"{self.name}, pass {self.done + 1}/{self.total}: {what}"

    def _checkpoint(self, step: Pass) -> PassCheckpoint | None:
        """The checkpoints of the next pass in a resumable fit (None otherwise), keyed by the pass's kind and key."""
        if self.session is None or step.kind is None:
            return None
        return _resume.pass_checkpoint(self.session, self.first + self.done, self.total, f"{self.name}, pass {self.done + 1}/{self.total}",
                                       kind=step.kind, **step.key())

    def run(self, step: Pass, what: str) -> Any:
        """Run the next pass over X and count it.

        Parameters
        ----------
        step : Pass
            The pass: its ``local`` form when it has one (run directly on the
            in-memory X, one BLAS thread), else its graph, computed under its
            label; in a resumable fit its checkpoint gives a completed pass's
            result, and else receives its lanes and its result.
        what : str
            What the pass computes, for its label.

        Returns
        -------
        The pass's result.
        """
        if self.done >= self.total:
            raise RuntimeError(f"{self.name} ran more than its {self.total} pass(es) over X")
        with watch() as usage:
            if step.local is not None:
                with one_blas_thread():
                    value = step.local()
            else:
                checkpoint = self._checkpoint(step)
                with self._scheduler():
                    value = _resume.run_pass(checkpoint, step, self.label(what))
        self.done += 1
        self.log.append({"pass": self.done, "what": what, "seconds": round(usage.seconds, 6), "peak_rss_bytes": usage.peak_rss_bytes})
        return value

    def _scheduler(self):
        """The synchronous scheduler for :attr:`in_process` input when no cluster client is active, else the active one."""
        if not self.in_process or scheduler.active_client() is not None:
            return contextlib.nullcontext()
        return dask.config.set(scheduler="sync")

    def model_group(self, arrays: dict) -> str:
        """The zarr group the passes fill with p-sized arrays ``name -> (shape, chunks[, dtype])`` (float64 by default).

        In a resumable fit it is the session's (reused when resuming); otherwise
        a fresh folder of the estimator's ``workdir``, owned by the estimator
        (:func:`wideml.runner.workdir.new_model_group`).
        """
        if self.session is not None:
            return _resume.model_group(self.session, arrays)
        return new_model_group(self.estimator, getattr(self.estimator, "workdir", None), arrays)

    def add_array(self, group: str, name: str, shape: tuple[int, ...], chunks: tuple[int, ...]) -> None:
        """Add the empty float64 array ``name`` to the model group (a resumed fit keeps the one its interrupted run filled)."""
        _resume.ensure_array(group, name, shape, chunks)

    def settle(self, group: str | None) -> str | None:
        """A resumable fit's finished model group, moved out of its work directory (removed once the fit succeeds)."""
        if self.session is None or group is None:
            return group
        return _resume.settle_group(self.estimator, group, getattr(self.estimator, "workdir", None))

    def record(self) -> int:
        """Set the estimator's ``n_fit_passes_`` to the passes run (all ``total`` of them must have run); returns the count."""
        if self.done != self.total:
            raise RuntimeError(f"{self.name} ran {self.done} of its {self.total} pass(es) over X")
        if self.estimator is not None:
            self.estimator.n_fit_passes_ = self.done
            self.estimator.pass_log_ = list(self.log)
        return self.done


def run_new_data(step: Pass, label: str, offset: Any = None) -> Any:
    """Run a pass over new data (``transform``, ``predict``; not a fit's: not counted, never checkpointed).

    The one recipe of every estimator's projection of new data: the pass's
    ``local`` form when it has one (the new data already in memory; no graph,
    one BLAS thread), else its graph computed under ``label``; then the fitted
    ``offset`` subtracted, when given, so the result is in the centred
    coordinates of the training embedding.

    Parameters
    ----------
    step : Pass
        E.g. ``Pass(lambda: project_pass(X, loadings))``.
    label : str
        Progress label, e.g. ``"LOL transform: one pass"``.
    offset : ndarray or float, optional

    Returns
    -------
    The pass's result, less ``offset``.
    """
    if step.local is not None:
        with one_blas_thread():
            out = step.local()
    else:
        (out,) = runtime.compute(step.graph(), label=label)
    return out if offset is None else np.subtract(out, offset)


__all__ = ["SMALL_ALGEBRA_N", "FitPasses", "algebra_threads", "one_blas_thread", "run_new_data"]
