"""A pass over X as an object: how to build its graph (or run it in memory), and what its checkpoint holds.

A fit declares each of its passes as a :class:`Pass` and hands it to the fit
runner (:meth:`wideml.runner.fit_runner.FitPasses.run`), which numbers it,
labels it, runs it, checkpoints it in a resumable fit and counts it. The fit
never sees a checkpoint: the runner gives the pass's graph the checkpoint of
its lanes (:meth:`Pass.graph`), and saves or restores the pass's result
through :meth:`Pass.save` / :meth:`Pass.restore`.

The pass modules define the passes of every fit (:class:`wideml.passes.gram.GramPass`,
:class:`wideml.passes.sketch.SketchPass`, :class:`wideml.passes.loadings.EmitPass`,
:class:`wideml.passes.lfl.LflPass`, :class:`wideml.passes.crossgram.CrossGramPass`,
and the encoder's in :mod:`wideml.passes.encoder`); :class:`Pass` itself,
built from callables, declares a pass that is never checkpointed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from wideml.runtime.checkpoint import digest


class Pass:
    """One pass over X, as the fit runner runs it.

    Parameters
    ----------
    graph : callable, optional
        ``graph()`` returns the pass's dask graph (one collection). Subclasses
        override :meth:`graph` instead.
    local : callable, optional
        The same pass run directly on an in-memory X (no graph; the runner
        runs it on one BLAS thread). When set it is run instead of the graph.

    Attributes
    ----------
    kind : str or None
        Names the pass in its checkpoint's key; None (the default) for a pass
        that is never checkpointed.
    local : callable or None
    """

    kind: str | None = None

    def __init__(self, graph: Callable[[], Any] | None = None, *, local: Callable[[], Any] | None = None):
        self._graph = graph
        self.local = local

    def graph(self, lanes: Any = None) -> Any:
        """The pass's dask graph; ``lanes`` (the runner's checkpoint of a resumable pass, else None) makes it resumable."""
        return self._graph()

    def key(self) -> dict:
        """What the pass's result depends on besides the fit's fingerprint (a changed key restarts its checkpoint)."""
        return {}

    def save(self, result: Any) -> Any:
        """The result as a checkpointable nesting of tuples, lists, dicts, arrays and numbers."""
        return result

    def restore(self, state: Any) -> Any:
        """The result saved by :meth:`save`."""
        return state


def fields_state(value: Any) -> tuple:
    """A dataclass's fields, in order, as a checkpointable tuple (rebuilt with ``Class(*state)``)."""
    return tuple(getattr(value, f.name) for f in dataclasses.fields(value))


__all__ = ["Pass", "digest", "fields_state"]
