"""The one fit runner: a fit's passes over X, its BLAS-thread rule and its model work directory.

A fit makes a known number of passes over X (its ``n_fit_passes``). It runs
each of them through one :class:`FitPasses`, which

- gives the pass its number in the progress label
  ("KernelPCA fit, pass 1/1: Gram"), runs its dask graph, or the same chunk
  functions directly on an in-memory array (``local=``, no graph, one BLAS
  thread), or takes its result from a completed checkpoint of a resumable fit
  (:func:`wideml.runner.resume.run_pass`), and counts it;
- makes the model group the passes write p-sized arrays into
  (:meth:`FitPasses.model_group`: in the resumable fit's work directory, else
  a fresh folder of the estimator's ``workdir``), and moves a resumed fit's
  group out of the work directory when its passes are done
  (:meth:`FitPasses.settle`);
- sets ``n_fit_passes_`` (:meth:`FitPasses.record`), which tests compare with
  the chunk reads counted on the store (``tests/estimators/test_fit_passes.py``).

The BLAS-thread rule lives here too: work on n x K or n x l matrices, and
in-memory chunk functions, run on one BLAS thread (:func:`one_blas_thread`):
threads gain nothing on such shapes and spin against the other cores'
work on a shared machine; n x n algebra is threaded only from
``SMALL_ALGEBRA_N`` samples up (:func:`algebra_threads`). Inside dask tasks
the scheduler's rule applies (:mod:`wideml.runtime.compute`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from wideml.runner import resume as _resume
from wideml.runtime.checkpoint import PassCheckpoint

#: Below this many samples n x n algebra runs on one BLAS thread: OpenBLAS threads on small
#: matrices gain little and, on a busy machine, spin against other work (measured up to 30x slower).
SMALL_ALGEBRA_N = 1500

_CONTROLLER = None


def one_blas_thread():
    """Context running BLAS on one thread (n x K and n x l algebra, in-memory chunk functions)."""
    global _CONTROLLER
    if _CONTROLLER is None:
        from threadpoolctl import ThreadpoolController

        _CONTROLLER = ThreadpoolController()  # inspecting the loaded BLAS libraries once (~ms), not per call
    return _CONTROLLER.limit(limits=1, user_api="blas")


def algebra_threads(n: int):
    """Context for n x n algebra: one BLAS thread below ``SMALL_ALGEBRA_N`` samples, all threads from there up."""
    return one_blas_thread() if n < SMALL_ALGEBRA_N else contextlib.nullcontext()


def _same(value: Any) -> Any:
    return value


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
    """

    def __init__(self, estimator: Any, total: int, session: Any = None, data: Any = None, *, name: str | None = None,
                 first: int = 1):
        self.estimator = estimator
        self.total = int(total)
        self.session = session
        self.name = name if name is not None else f"{type(estimator).__name__} fit"
        self.first = int(first)
        self.done = 0
        # in-memory X of one feature chunk: its graphs run in this thread (no task scheduling; BLAS threads free)
        self.in_process = data is not None and data.in_memory and data.X.numblocks[1] == 1

    def label(self, what: str) -> str:
        """Progress label of the next pass, e.g. ``"KernelLOL fit, pass 1/1: Gram"``."""
        return f"{self.name}, pass {self.done + 1}/{self.total}: {what}"

    def checkpoint(self, kind: str, **key: Any) -> PassCheckpoint | None:
        """Checkpoints of the next pass in a resumable fit (None otherwise), keyed by ``kind`` and ``key``."""
        return _resume.pass_checkpoint(self.session, self.first + self.done, self.total, f"{self.name}, pass {self.done + 1}/{self.total}",
                                       kind=kind, **key)

    def run(self, checkpoint: PassCheckpoint | None, build: Callable[[PassCheckpoint | None], Any], what: str, *,
            local: Callable[[], Any] | None = None, to_state: Callable[[Any], Any] = _same,
            from_state: Callable[[Any], Any] = _same) -> Any:
        """Run the next pass over X and count it.

        Parameters
        ----------
        checkpoint : PassCheckpoint or None
            The pass's checkpoints in a resumable fit (its saved result is used when complete), else None.
        build : callable
            ``build(checkpoint)`` returns the pass's dask graph (one collection).
        what : str
            What the pass computes, for its label.
        local : callable, optional
            The same pass run directly on an in-memory X (no graph, one BLAS
            thread); when given it is run instead of the graph.
        to_state, from_state : callable, optional
            Conversions of the result to and from its checkpointable form.

        Returns
        -------
        The pass's result.
        """
        if self.done >= self.total:
            raise RuntimeError(f"{self.name} ran more than its {self.total} pass(es) over X")
        if local is not None:
            with one_blas_thread():
                value = local()
        else:
            with self._scheduler():
                value = _resume.run_pass(checkpoint, build, self.label(what), to_state=to_state, from_state=from_state)
        self.done += 1
        return value

    def _scheduler(self):
        """The synchronous scheduler for :attr:`in_process` input when no cluster client is active, else the active one."""
        if not self.in_process:
            return contextlib.nullcontext()
        from wideml.runtime.scheduler import active_client

        if active_client() is not None:
            return contextlib.nullcontext()
        import dask

        return dask.config.set(scheduler="sync")

    def model_group(self, arrays: dict) -> str:
        """The zarr group the passes fill with p-sized arrays ``name -> (shape, chunks[, dtype])`` (float64 by default).

        In a resumable fit it is the session's (reused when resuming); otherwise
        a fresh folder of the estimator's ``workdir``, owned by the estimator
        (:func:`wideml.runner.workdir.new_model_group`).
        """
        if self.session is not None:
            return _resume.model_group(self.session, arrays)
        from wideml.runner.workdir import new_model_group

        return new_model_group(self.estimator, getattr(self.estimator, "workdir", None), arrays)

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
        return self.done


__all__ = ["SMALL_ALGEBRA_N", "FitPasses", "algebra_threads", "one_blas_thread"]
