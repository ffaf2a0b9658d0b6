"""Fixtures of the fault tests (a few are shared with the adversarial suite)."""

from adversarial.conftest import adv_data, adv_stores, dask_cluster  # noqa: F401
from adversarial.conftest import fresh_copy  # noqa: F401  (test_resume)
