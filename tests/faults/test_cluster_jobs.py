"""Cluster jobs that survive faults: lost workers in every pass kind, fits nested in dask tasks, quiet local:N, TLS.

A private cluster (``cluster_fixture.Cluster``: a real ``dask scheduler`` and two
nanny-managed single-thread ``dask worker`` subprocesses) is SIGKILLed into; the
shared ``dask_cluster`` of the adversarial suite is left alone.
"""

from __future__ import annotations

import subprocess
import sys

import dask
import numpy as np
import pytest

from adversarial.harness import REPO, run_cli
from faults.cluster_fixture import Cluster, Killer

pytest.importorskip("distributed")

N, P, CHUNK = 60, 8000, 100  # 80 feature chunks: a pass takes ~1-2 s on the test cluster, so a kill lands mid-pass


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """A 3-class float64 store of 80 chunks: (path, X, y)."""
    from wideml import write_store

    root = tmp_path_factory.mktemp("faultdata")
    rng = np.random.default_rng(13)
    y = np.arange(N) % 3
    X = rng.standard_normal((N, P)) + 0.08 * y[:, None] * (np.arange(P) < 400)
    write_store(root / "x.zarr", X, y, feature_chunk=CHUNK)
    return root / "x.zarr", X, y


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("faultcluster"))
    try:
        yield c
    finally:
        c.close()


def _threaded(fn, threads: int = 2):
    """``fn()`` on dask's threaded scheduler with as many lanes as the test cluster has worker threads."""
    from wideml.runtime import use_scheduler

    with use_scheduler("threads"), dask.config.set({"wideml.threads": threads}):
        return fn()


def _on_cluster_with_a_kill(cluster: Cluster, fn):
    """Run ``fn()`` on ``cluster`` while a worker is SIGKILLed once the pass has finished its first task."""
    from wideml.runtime import use_scheduler

    cluster.ready()
    pids_before = set(cluster.worker_pids().values())
    killer = Killer(cluster)
    with use_scheduler(cluster.address):
        killer.start()
        try:
            result = fn()
        finally:
            killer.stop.set()
            killer.join()
    assert killer.killed_pid in pids_before, "the worker was not killed while the pass was running"
    cluster.ready()  # the nanny starts it again
    assert killer.killed_pid not in cluster.worker_pids().values()
    return result


def _store(path):
    from wideml import open_store

    return open_store(path)


def _components(est):
    return np.asarray(est.components_)


PASS_KINDS = {
    # pass kind -> (work done with the store, result as arrays)
    "gram": lambda s: _components(__import__("wideml").LOL(3, solver="gram").fit(s)),
    "randomized-sketch": lambda s: _components(__import__("wideml").LOL(3, solver="randomized").fit(s)),
    "lfl": lambda s: _components(__import__("wideml").LFL(3).fit(s)),
    "encoder": lambda s: __import__("wideml").EncoderClassifier().fit(s).predict_proba(np.asarray(s.X[:10])),
}


@pytest.mark.parametrize("kind", sorted(PASS_KINDS))
def test_worker_killed_mid_pass_gives_the_threaded_result(cluster, data, kind):
    path, X, y = data
    work = PASS_KINDS[kind]
    expected = _threaded(lambda: work(_store(path)))
    got = _on_cluster_with_a_kill(cluster, lambda: work(_store(path)))
    if kind == "encoder":  # probabilities: tiny values may differ in their last bits (exp of large negatives)
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)
    else:
        np.testing.assert_array_equal(got, expected)


def test_worker_killed_mid_project_pass(cluster, data):
    """The emit/project pass: transform of a fitted model, a worker killed while it streams the store."""
    from wideml import LOL

    path, X, y = data
    est = _threaded(lambda: LOL(3, solver="gram").fit(_store(path)))
    expected = _threaded(lambda: np.asarray(est.transform(_store(path))))
    got = _on_cluster_with_a_kill(cluster, lambda: np.asarray(est.transform(_store(path))))
    np.testing.assert_array_equal(got, expected)
    assert got.shape == (N, 3)
    offset = got - X @ _components(est).T  # numpy oracle: a projection up to one offset per component
    assert np.ptp(offset, axis=0).max() < 1e-8


def test_fit_submitted_as_a_task_finishes_and_matches(cluster, data):
    """A fit inside a dask task runs in that task (no deadlock even with one thread per worker)."""
    path, X, y = data
    cluster.ready()

    def fit_in_task(p):
        from wideml import LOL, open_store

        est = LOL(3, solver="gram").fit(open_store(p))  # held: its work folder goes when it is collected
        return np.asarray(est.components_)

    futures = [cluster.client.submit(fit_in_task, str(path), pure=False) for _ in range(2)]  # both workers busy
    got = [f.result(timeout=120) for f in futures]
    expected = _threaded(lambda: _components(__import__("wideml").LOL(3, solver="gram").fit(_store(path))), threads=3)
    for g in got:
        np.testing.assert_allclose(g, expected, rtol=1e-10, atol=1e-12)


def test_gridsearch_with_joblib_dask_backend(cluster, adv_data):
    """GridSearchCV(n_jobs=2) under joblib's dask backend runs on the cluster and gives the local grid's scores."""
    import joblib
    from distributed import Client, get_task_stream
    from sklearn.model_selection import GridSearchCV

    from wideml import LOL, EmbeddingClassifier

    X, y, _, _ = adv_data
    grid = {"embedding__n_components": [2, 4]}
    local = GridSearchCV(EmbeddingClassifier(LOL(2)), grid, cv=3).fit(X, y)
    cluster.ready()
    with Client(cluster.address, timeout="5s") as client, joblib.parallel_backend("dask"), \
            get_task_stream(client) as stream:
        remote = GridSearchCV(EmbeddingClassifier(LOL(2)), grid, cv=3, n_jobs=2).fit(X, y)
    assert len(stream.data) >= 6  # the 2 x 3 fits ran as tasks on the workers
    np.testing.assert_allclose(remote.cv_results_["mean_test_score"], local.cv_results_["mean_test_score"], atol=1e-12)
    assert remote.best_params_ == local.best_params_
    assert local.cv_results_["mean_test_score"].max() > 0.9  # well-separated classes: a meaningful grid


def test_predict_progress_goes_to_stderr_on_a_cluster(cluster, adv_stores, adv_data, tmp_path):
    """``wideml predict --progress --scheduler tcp://...``: stdout holds the predictions only, the bar is on stderr."""
    from wideml import LOL, EmbeddingClassifier, open_store, save_model

    train, test = adv_stores
    _, _, Xt, yt = adv_data
    model = tmp_path / "m"
    est = EmbeddingClassifier(LOL(3)).fit(open_store(train))
    save_model(est, model)
    expected = est.predict(Xt)
    cluster.ready()
    loud = subprocess.run([sys.executable, "-m", "wideml.cli.main", "predict", str(model), str(test), "--progress",
                           "--scheduler", cluster.address], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert loud.returncode == 0, loud.stderr
    rows = [line.split("\t") for line in loud.stdout.splitlines()]
    assert len(rows) == len(yt) and all(len(row) == 2 for row in rows), loud.stdout[:500]  # no bar in the output
    np.testing.assert_array_equal(np.array([int(row[1]) for row in rows]), expected)
    assert "Completed" in loud.stderr and "[wideml]" in loud.stderr
    assert f"wideml: scheduler {cluster.address}" in loud.stderr


def test_two_local_clusters_at_once_are_quiet(adv_stores, adv_data, tmp_path):
    """Two ``--scheduler local:1`` runs overlap: both succeed, no warnings (no dashboard on 8787, free ports)."""
    train, _ = adv_stores
    cmd = [sys.executable, "-m", "wideml.cli.main", "fit", "lol", str(train), "--n-components", "2", "--progress",
           "--scheduler", "local:1", "-o"]
    procs = [subprocess.Popen([*cmd, str(tmp_path / f"m{i}")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              cwd=REPO) for i in range(2)]
    outs = [proc.communicate(timeout=120) for proc in procs]
    for proc, (out, err) in zip(procs, outs):
        assert proc.returncode == 0, err
        lines = [line for line in err.splitlines() if line.strip() and not line.startswith(("[wideml]", "\r", "["))]
        assert len(lines) == 1 and lines[0].startswith("wideml: scheduler tcp://127.0.0.1:"), err  # no warnings
        assert "1 workers, 1 threads" in lines[0]
        assert "warning" not in err.lower() and "8787" not in err
    from wideml import load_model

    _, _, Xt, _ = adv_data
    a, b = (np.asarray(load_model(tmp_path / f"m{i}").transform(Xt)) for i in range(2))
    np.testing.assert_array_equal(a, b)
    assert np.isfinite(a).all() and np.abs(a).max() > 0


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory):
    """A real ``dask scheduler`` + one ``dask worker`` speaking TLS with a self-signed certificate (openssl)."""
    import os
    import shutil
    import time

    from adversarial.harness import free_port

    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    base = tmp_path_factory.mktemp("tls")
    cert, key = base / "cert.pem", base / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    tls = ["--tls-ca-file", str(cert), "--tls-cert", str(cert), "--tls-key", str(key)]
    port = free_port()
    address = f"tls://127.0.0.1:{port}"
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    log = open(base / "cluster.log", "w")
    procs = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--protocol", "tls", "--host",
                               "127.0.0.1", "--port", str(port), "--no-dashboard", *tls], cwd=base, env=env, stdout=log,
                              stderr=subprocess.STDOUT),
             subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", "1",
                               "--no-nanny", "--no-dashboard", *tls], cwd=base, env=env, stdout=log, stderr=subprocess.STDOUT)]
    settings = {"distributed.comm.tls.ca-file": str(cert), "distributed.comm.tls.client.cert": str(cert),
                "distributed.comm.tls.client.key": str(key)}
    try:
        from distributed import Client
        from distributed.security import Security

        deadline = time.time() + 60
        while True:
            try:
                with dask.config.set(settings), Client(address, timeout="5s", security=Security()) as client:
                    client.wait_for_workers(1, timeout=30)
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.5)
        yield address, settings
    finally:
        for proc in reversed(procs):  # worker first; a worker without a nanny may linger on terminate
            proc.terminate()
            try:
                proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


def test_fit_on_a_tls_scheduler_with_dask_tls_settings(tls_cluster, data):
    """tls:// works with dask's own distributed.comm.tls.* settings; without them it is one sentence."""
    from wideml import LOL
    from wideml.exceptions import ConfigError
    from wideml.runtime import use_scheduler

    address, settings = tls_cluster
    path, X, y = data
    expected = _threaded(lambda: _components(LOL(3, solver="gram").fit(_store(path))), threads=1)
    with dask.config.set(settings), use_scheduler(address) as name:
        assert name == address
        from wideml.runtime.scheduler import describe_scheduler

        assert describe_scheduler().startswith(f"{address} (1 workers, 1 threads)")
        got = _components(LOL(3, solver="gram").fit(_store(path)))
    np.testing.assert_array_equal(got, expected)
    with dask.config.set({"distributed.comm.tls.ca-file": None, "distributed.comm.tls.client.cert": None}), \
            pytest.raises(ConfigError, match="TLS"), use_scheduler(address):
        pass
    proc = run_cli("fit", "lol", path, "-o", path.parent / "never", "--scheduler", address,
                   env={"DASK_DISTRIBUTED__COMM__TLS__CA_FILE": "", "DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT": ""})
    from adversarial.harness import assert_refused

    assert_refused(proc, "tls")
    assert not (path.parent / "never").exists()


def test_kernel_model_on_a_lazy_non_store_array_is_copied_by_the_workers_and_saved_without_a_pass(cluster, data, tmp_path):
    """KernelPCA on a plain zarr array (not a wideml store), fitted on the cluster from another directory: the workers
    copy X's chunks into the model's work folder during the fit's one pass; save_model then reads nothing of the user's
    array (it is deleted first), and the loaded model transforms as the threaded fit does."""
    import os
    import shutil

    import zarr

    from wideml import KernelPCA, load_model, save_model
    from wideml.runtime import use_scheduler

    path, X, y = data
    raw = tmp_path / "raw.zarr"
    z = zarr.create_array(str(raw), shape=X.shape, chunks=(N, CHUNK * 10), dtype=X.dtype)
    z[...] = X
    expected = _threaded(lambda: KernelPCA(3, kernel="rbf", sigma=50.0).fit(zarr.open_array(str(raw), mode="r")).transform(X[:7]))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    cwd = os.getcwd()
    os.chdir(elsewhere)  # relative workdir: resolved to an absolute path before any graph carries it
    try:
        cluster.ready()
        with use_scheduler(cluster.address), dask.config.set({"wideml.workdir": "wd"}):  # kernel models: the config's workdir
            est = KernelPCA(3, kernel="rbf", sigma=50.0).fit(zarr.open_array(str(raw), mode="r"))
            folders = [f for f in (elsewhere / "wd").iterdir() if f.name.startswith("wideml-fit-")]
            assert len(folders) == 1 and (folders[0] / "fitted.zarr" / "X_train").is_dir()  # the workers' copy of X
            shutil.rmtree(raw)  # the user's array is gone: the model must not need it any more
            save_model(est, tmp_path / "kpca.model")
            got = load_model(tmp_path / "kpca.model").transform(X[:7])
    finally:
        os.chdir(cwd)
    assert est.n_fit_passes_ == 1
    np.testing.assert_allclose(got, expected, rtol=1e-8, atol=1e-10)
