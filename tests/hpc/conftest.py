"""A real single-node SLURM cluster for the tests of this folder (session-scoped, torn down at the end).

Skipped, with the reason, only when this machine cannot run one (not root, SLURM or munge not
installed, dask-jobqueue missing) and ``CI`` is not set; under ``CI`` any of these is a failure:
``.ci/run`` installs SLURM first (``scripts/setup_slurm.sh``) and the dev extra installs dask-jobqueue.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

from hpc import slurm_node


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "a private SLURM needs root (slurmd runs jobs as root here)"
    missing = slurm_node.missing_binaries()
    if missing:
        return f"SLURM/munge binaries missing ({', '.join(missing)}); run scripts/setup_slurm.sh"
    if importlib.util.find_spec("dask_jobqueue") is None:
        return "dask-jobqueue is not installed; pip install -e '.[hpc]'"
    return None


@pytest.fixture(scope="session")
def slurm():
    """A running single-node SLURM (:class:`slurm_node.SlurmNode`); ``SLURM_CONF`` points at it for the session."""
    reason = _why_not()
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but {reason}")
        pytest.skip(reason)
    node = slurm_node.start()
    previous = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = node.conf
    try:
        yield node
    finally:
        if previous is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = previous
        slurm_node.stop(node)
