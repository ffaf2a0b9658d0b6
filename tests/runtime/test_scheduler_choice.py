"""The scheduler wideml computes on: an explicit choice wins, it is named, nested computes never wait on a cluster."""

from __future__ import annotations

import urllib.error
import urllib.request

import dask
import numpy as np
import pytest

from wideml.exceptions import ConfigError
from wideml.runtime import compute, use_scheduler
from wideml.runtime.nested import in_worker_task
from wideml.runtime.scheduler import active_client, describe_scheduler

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def inproc_client():
    """A default ``distributed.Client`` of an in-process cluster (one worker, two threads)."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        yield client


def _where():
    """Inside a task: True if it runs on a dask.distributed worker."""
    return in_worker_task()


def test_explicit_local_scheduler_wins_over_a_default_client(inproc_client):
    assert active_client() is inproc_client  # dask's convention: a default client is used when nothing is chosen
    (ran_on_worker,) = compute(dask.delayed(_where)(), label="where")
    assert ran_on_worker is True
    for spec in ("threads", "sync"):
        with use_scheduler(spec):
            assert active_client() is None
            (ran_on_worker,) = compute(dask.delayed(_where)(), label="where")
            assert ran_on_worker is False, spec
            assert describe_scheduler().startswith(spec)


def test_describe_names_threads_and_sync():
    with use_scheduler("threads"), dask.config.set({"wideml.threads": 3}):
        assert describe_scheduler() == "threads (3 threads)"
    with use_scheduler("sync"):
        assert describe_scheduler() == "sync (1 thread)"


def test_nested_compute_in_a_worker_task_runs_in_that_task(inproc_client, small_xy):
    """A fit inside a task of a one-worker cluster finishes (no waiting on the cluster) and matches the local fit."""
    from wideml import LOL

    X, y = small_xy

    def fit_in_task(X, y):
        assert in_worker_task()
        assert active_client() is None
        est = LOL(2).fit(X, y)
        return np.asarray(est.transform(X))

    got = inproc_client.submit(fit_in_task, X, y, pure=False).result(timeout=60)
    with use_scheduler("threads"):
        est = LOL(2).fit(X, y)
        expected = np.asarray(est.transform(X))
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


def test_nested_threaded_scheduler_inside_a_threaded_task(small_xy):
    """A fit inside a task of dask's threaded scheduler (several at once) gives the direct fit's result."""
    from wideml import LOL

    X, y = small_xy

    def fit(k):
        est = LOL(k).fit(X, y)
        return np.asarray(est.transform(X))

    with use_scheduler("threads"):
        nested = dask.compute(*[dask.delayed(fit)(k) for k in (2, 3)], scheduler="threads")
        direct = [fit(k) for k in (2, 3)]
    for a, b in zip(nested, direct):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_progress_on_a_cluster_goes_to_stderr(inproc_client, capfd):
    x = dask.array.ones((40, 40), chunks=10)
    with dask.config.set({"wideml.progress": True}):
        (total,) = compute(x.sum(), label="ones")
    out, err = capfd.readouterr()
    assert total == 1600
    assert out == ""
    assert "[wideml] ones" in err and "100% Completed" in err


@pytest.mark.parametrize(("value", "expected"), [(False, None), ("false", None), (True, "127.0.0.1:0"),
                                                 ("127.0.0.1:8790", "127.0.0.1:8790"), (":8791", "127.0.0.1:8791")])
def test_dashboard_setting(value, expected):
    from wideml.runtime.local_cluster import dashboard_address

    with dask.config.set({"wideml.dashboard": value}):
        assert dashboard_address() == expected


def test_dashboard_setting_refuses_nonsense():
    from wideml.runtime.local_cluster import dashboard_address

    with dask.config.set({"wideml.dashboard": "somewhere"}), pytest.raises(ConfigError, match="HOST:PORT"):
        dashboard_address()


def test_local_cluster_is_private_and_quiet(recwarn):
    """local:1 binds to 127.0.0.1 on a free port and starts no dashboard (nothing on 8787)."""
    with use_scheduler("local:1"):
        client = active_client()
        info = client.scheduler_info()
        assert client.scheduler.address.startswith("tcp://127.0.0.1:")
        assert not client.scheduler.address.endswith(":8786")
        http_port = info.get("services", {}).get("dashboard")  # distributed's HTTP server (health, metrics)
        assert http_port != 8787
        if http_port:  # serves no dashboard pages
            with pytest.raises(urllib.error.HTTPError) as excinfo:
                urllib.request.urlopen(f"http://127.0.0.1:{http_port}/status", timeout=5)
            assert excinfo.value.code == 404
        assert describe_scheduler().endswith("(1 workers, 1 threads)")
    assert not [w for w in recwarn.list if "port" in str(w.message).lower()]


def test_tls_address_without_tls_settings_is_one_sentence():
    from wideml.runtime.remote import security_for

    with dask.config.set({"distributed.comm.tls.ca-file": None, "distributed.comm.tls.client.cert": None}), \
            pytest.raises(ConfigError, match="TLS") as excinfo:
        security_for("tls://127.0.0.1:8786")
    assert "\n" not in str(excinfo.value)


def test_tls_settings_are_taken_from_dask_config(tmp_path):
    from wideml.runtime.remote import security_for

    ca, cert, key = (tmp_path / name for name in ("ca.pem", "cert.pem", "key.pem"))
    with dask.config.set({"distributed.comm.tls.ca-file": str(ca), "distributed.comm.tls.client.cert": str(cert),
                          "distributed.comm.tls.client.key": str(key)}):
        security = security_for("tls://127.0.0.1:8786")
    assert (security.tls_ca_file, security.tls_client_cert, security.tls_client_key) == (str(ca), str(cert), str(key))
