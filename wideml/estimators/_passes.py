"""One fit's passes over X: numbered and labelled ("KernelPCA fit, pass 1/1: Gram") and counted into ``n_fit_passes_``.

A fit makes a known number of passes over X (its ``n_fit_passes``). It runs
each of them through one :class:`FitPasses`, which gives the pass its number
in the progress label, runs it (or takes its result from a completed
checkpoint of a resumable fit, :func:`wideml.estimators._resume.run_pass`)
and counts it; :meth:`FitPasses.record` then sets the estimator's
``n_fit_passes_``, which tests compare with the chunk reads counted on the
store (``tests/estimators/test_fit_passes.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from wideml.estimators._resume import run_pass
from wideml.runtime.checkpoint import PassCheckpoint


def _same(value: Any) -> Any:
    return value


class FitPasses:
    """The passes over X of one fit of ``estimator``: each numbered "pass i/total" in its label, and counted.

    Parameters
    ----------
    estimator : estimator
        The estimator being fitted; its class name starts every label, and
        :meth:`record` sets its ``n_fit_passes_``.
    total : int
        Passes over X the fit makes (the estimator's documented count).

    Attributes
    ----------
    done : int
        Passes run so far. A pass whose result came from a completed checkpoint
        counts too: the fit consists of it, and ``n_fit_passes_`` states what a
        fit costs, as the projectors' does.
    """

    def __init__(self, estimator: Any, total: int):
        self.estimator = estimator
        self.total = int(total)
        self.done = 0

    def label(self, what: str) -> str:
        """Progress label of the next pass, e.g. ``"KernelLOL fit, pass 1/1: Gram"``."""
        return f"{type(self.estimator).__name__} fit, pass {self.done + 1}/{self.total}: {what}"

    def run(self, checkpoint: PassCheckpoint | None, build: Callable[[PassCheckpoint | None], Any], what: str, *,
            to_state: Callable[[Any], Any] = _same, from_state: Callable[[Any], Any] = _same) -> Any:
        """Run the next pass over X (the graph ``build(checkpoint)``) and count it.

        Parameters
        ----------
        checkpoint : PassCheckpoint or None
            The pass's checkpoints in a resumable fit (its saved result is used when complete), else None.
        build : callable
            ``build(checkpoint)`` returns the pass's dask graph (one collection).
        what : str
            What the pass computes, for its label.
        to_state, from_state : callable, optional
            Conversions of the result to and from its checkpointable form.

        Returns
        -------
        The pass's result.
        """
        if self.done >= self.total:
            raise RuntimeError(f"{type(self.estimator).__name__} fit ran more than its {self.total} pass(es) over X")
        value = run_pass(checkpoint, build, self.label(what), to_state=to_state, from_state=from_state)
        self.done += 1
        return value

    def record(self) -> None:
        """Set the estimator's ``n_fit_passes_`` to the passes run (all ``total`` of them must have run)."""
        if self.done != self.total:
            raise RuntimeError(f"{type(self.estimator).__name__} fit ran {self.done} of its {self.total} pass(es) over X")
        self.estimator.n_fit_passes_ = self.done


__all__ = ["FitPasses"]
