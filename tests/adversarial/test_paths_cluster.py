"""Relative paths, changes of directory and workers that do not see the same files.

Every case runs against real processes: the ``dask_cluster`` fixture's scheduler and workers
(started in another directory, so a relative path that reaches a worker points elsewhere), and,
for the "cannot see" cases, a cluster of this module whose second worker runs in its own mount
namespace (``unshare -m``) with a tmpfs over one folder and another folder mounted read-only.
Each case ends in the answer the same fit gives locally with threads (the oracle), or one
sentence and exit 2 with nothing written.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from wideml.exceptions import WidemlError
from wideml.runtime import use_scheduler
from adversarial.harness import assert_api_refused, assert_no_debris, assert_refused, free_port, run_cli, stop_processes, wait_for_cluster

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


# ----------------------------------------------------------------------------- oracles
@pytest.fixture(scope="module")
def local_lol(adv_stores):
    """LOL + LDA fitted locally with threads on the training store: (model, transform of train, predictions on test)."""
    import wideml

    train, test = adv_stores
    clf = wideml.EmbeddingClassifier(wideml.LOL(n_components=3), "lda").fit(wideml.open_store(train))
    return clf, np.asarray(clf.transform(wideml.open_store(train))), np.asarray(clf.predict(wideml.open_store(test)))


def _loadings(model) -> np.ndarray:
    emb = getattr(model, "embedding_", model)
    return np.asarray(emb.components_)


def _same_subspace(A: np.ndarray, B: np.ndarray, tol: float = 1e-3) -> bool:
    """Rows of A and B span the same subspace and each row matches up to sign."""
    A, B = np.atleast_2d(A), np.atleast_2d(B)
    if A.shape != B.shape:
        return False
    return all(min(np.abs(a - b).max(), np.abs(a + b).max()) <= tol * max(1.0, np.abs(b).max()) for a, b in zip(A, B))


def _work_copy(tmp_path: Path, adv_stores) -> Path:
    """The train and test stores copied into tmp_path/data (the folder the CLI runs in)."""
    data = tmp_path / "data"
    data.mkdir()
    for store in adv_stores:
        shutil.copytree(store, data / store.name)
    return data


# ----------------------------------------------------------------------------- the CLI on a real cluster, relative paths
def test_cli_fit_relative_store_and_output_on_cluster_equals_local(tmp_path, adv_stores, dask_cluster, local_lol):
    """fit with cwd = the stores' folder, a relative store and a relative -o, on workers started elsewhere."""
    import wideml

    data = _work_copy(tmp_path, adv_stores)
    proc = run_cli("fit", "lol", "train.zarr", "-o", "lol.model", "--n-components", "3",
                   "--scheduler", dask_cluster["address"], cwd=data)
    assert proc.returncode == 0, proc.stderr
    model = wideml.load_model(data / "lol.model")
    clf, _, pred = local_lol
    A = _loadings(model)
    assert np.abs(A).max() > 1e-3, "the saved loadings are all zero"
    assert _same_subspace(A, _loadings(clf))
    np.testing.assert_array_equal(np.asarray(model.predict(wideml.open_store(data / "test.zarr"))), pred)
    assert not any(dask_cluster["worker_cwd"].rglob("*.zarr")), "a worker wrote into its own working directory"


def test_cli_transform_relative_model_on_cluster_equals_local(tmp_path, adv_stores, dask_cluster, local_lol):
    """transform with a relative model path and a relative store on the cluster: the local embedding."""
    import wideml

    data = _work_copy(tmp_path, adv_stores)
    clf, Z_local, _ = local_lol
    wideml.save_model(clf, data / "lol.model")
    proc = run_cli("transform", "lol.model", "train.zarr", "-o", "z.npy", "--scheduler", dask_cluster["address"], cwd=data)
    assert proc.returncode == 0, proc.stderr
    Z = np.load(data / "z.npy")
    assert np.ptp(Z, axis=0).min() > 1e-3, "the embedding is constant"
    np.testing.assert_allclose(Z, Z_local, rtol=1e-4, atol=1e-4)


def test_cli_encoder_relative_store_on_cluster_equals_local(tmp_path, adv_stores, dask_cluster):
    """The encoder (which fitted at chance on zeros) fitted with a relative store on the cluster: local predictions."""
    import wideml

    data = _work_copy(tmp_path, adv_stores)
    proc = run_cli("fit", "encoder", "train.zarr", "-o", "enc.model", "--kernels", "linear,euclidean",
                   "--scheduler", dask_cluster["address"], cwd=data)
    assert proc.returncode == 0, proc.stderr
    local = wideml.EncoderClassifier(kernels=("linear", "euclidean")).fit(wideml.open_store(adv_stores[0]))
    test = wideml.open_store(adv_stores[1])
    model = wideml.load_model(data / "enc.model")
    pred = np.asarray(model.predict(test))
    np.testing.assert_array_equal(pred, np.asarray(local.predict(test)))
    assert np.mean(pred == test.y) > 0.9, "the encoder fitted at chance"


def test_cli_rechunk_and_ingest_relative_output_on_cluster(tmp_path, adv_stores, adv_data, dask_cluster):
    """rechunk and ingest with relative inputs and outputs on the cluster write the same data (numpy oracle)."""
    import wideml

    X, y, _, _ = adv_data
    data = _work_copy(tmp_path, adv_stores)
    np.save(data / "x.npy", X)
    np.save(data / "y.npy", y)
    proc = run_cli("rechunk", "train.zarr", "re.zarr", "--feature-chunk", "100", "--scheduler", dask_cluster["address"], cwd=data)
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("ingest", "x.npy", "--labels", "y.npy", "-o", "in.zarr", "--feature-chunk", "50",
                   "--scheduler", dask_cluster["address"], cwd=data)
    assert proc.returncode == 0, proc.stderr
    for name in ("re.zarr", "in.zarr"):
        store = wideml.open_store(data / name)
        np.testing.assert_array_equal(np.asarray(store.X), X)
        np.testing.assert_array_equal(store.y, y)
    assert_no_debris(data)


def test_cli_scheduler_without_port_is_one_sentence(tmp_path, adv_stores):
    proc = run_cli("fit", "lol", adv_stores[0], "-o", tmp_path / "m.model", "--scheduler", "tcp://127.0.0.1", cwd=tmp_path)
    assert_refused(proc, "tcp://127.0.0.1", "port")
    assert not (tmp_path / "m.model").exists()


def test_cli_unreachable_scheduler_is_one_sentence(tmp_path, adv_stores):
    proc = run_cli("fit", "lol", adv_stores[0], "-o", tmp_path / "m.model", "--scheduler", f"tcp://127.0.0.1:{free_port()}",
                   cwd=tmp_path)
    assert_refused(proc, "cannot reach", "dask scheduler")
    assert not (tmp_path / "m.model").exists()
    assert_no_debris(tmp_path)


# ----------------------------------------------------------------------------- the API: relative paths and chdir
def test_api_open_store_relative_then_chdir_equals_oracle(tmp_path, adv_stores, adv_data, monkeypatch):
    """open_store("train.zarr") from its folder, then a change of directory, then fit: the numpy fit."""
    import wideml

    X, y, _, _ = adv_data
    data = _work_copy(tmp_path, adv_stores)
    monkeypatch.chdir(data)
    store = wideml.open_store("train.zarr")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    lol = wideml.LOL(n_components=3).fit(store)
    oracle = wideml.LOL(n_components=3).fit(X, y)
    assert _same_subspace(np.asarray(lol.components_), np.asarray(oracle.components_))


def test_api_relative_zarr_array_on_cluster_equals_oracle(tmp_path, adv_data, dask_cluster, monkeypatch):
    """zarr.open_array("rel.zarr") (a relative LocalStore root) passed to LOL.fit on the cluster."""
    import zarr

    import wideml

    X, y, _, _ = adv_data
    monkeypatch.chdir(tmp_path)
    zarr.create_array("rel.zarr", shape=X.shape, chunks=(X.shape[0], 128), dtype="float32")[...] = X
    arr = zarr.open_array("rel.zarr", mode="r")
    with use_scheduler(dask_cluster["address"]):
        lol = wideml.LOL(n_components=3).fit(arr, y)
        Z = np.asarray(lol.transform(arr))
    oracle = wideml.LOL(n_components=3).fit(X, y)
    assert _same_subspace(np.asarray(lol.components_), np.asarray(oracle.components_))
    np.testing.assert_allclose(np.abs(Z), np.abs(oracle.transform(X)), rtol=1e-3, atol=1e-3)


def test_api_relative_zarr_array_after_chdir_is_refused(tmp_path, adv_data, monkeypatch):
    """A zarr array opened relatively, then the directory changed (another array of that name there): refused."""
    import zarr

    import wideml

    X, y, _, _ = adv_data
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    monkeypatch.chdir(first)
    zarr.create_array("rel.zarr", shape=X.shape, chunks=(X.shape[0], 128), dtype="float32")[...] = X
    arr = zarr.open_array("rel.zarr", mode="r")
    monkeypatch.chdir(second)
    zarr.create_array("rel.zarr", shape=(X.shape[0], 10), chunks=(X.shape[0], 5), dtype="float32")
    with pytest.raises(WidemlError) as excinfo:
        wideml.LOL(n_components=3).fit(arr, y)
    assert_api_refused(excinfo, "rel.zarr", "absolute path")


def test_api_relative_h5py_dataset_on_cluster_equals_oracle(tmp_path, adv_data, dask_cluster, monkeypatch):
    """An h5py dataset of a file opened relatively, fitted on the cluster (it used to fail to deserialise)."""
    h5py = pytest.importorskip("h5py")
    import wideml

    X, y, _, _ = adv_data
    monkeypatch.chdir(tmp_path)
    with h5py.File("rel.h5", "w") as f:
        f.create_dataset("X", data=X, chunks=(X.shape[0], 128))
    with h5py.File("rel.h5", "r") as f, use_scheduler(dask_cluster["address"]):
        lol = wideml.LOL(n_components=3).fit(f["X"], y)
    oracle = wideml.LOL(n_components=3).fit(X, y)
    assert _same_subspace(np.asarray(lol.components_), np.asarray(oracle.components_))


def test_api_relative_workdir_on_cluster_equals_oracle(tmp_path, adv_stores, adv_data, dask_cluster, monkeypatch):
    """workdir="wd" (relative) on the cluster: the fitted arrays land in tmp_path/wd and equal the numpy fit."""
    import wideml

    X, y, _, _ = adv_data
    monkeypatch.chdir(tmp_path)
    with use_scheduler(dask_cluster["address"]):
        lol = wideml.LOL(n_components=3, workdir="wd").fit(wideml.open_store(adv_stores[0]))
        A = np.asarray(lol.components_)
    assert os.path.isabs(lol._group) and lol._group.startswith(str(tmp_path / "wd"))
    assert _same_subspace(A, np.asarray(wideml.LOL(n_components=3).fit(X, y).components_))
    assert not (dask_cluster["worker_cwd"] / "wd").exists()


def test_api_dask_from_zarr_relative_on_cluster_equals_oracle(tmp_path, adv_data, dask_cluster, monkeypatch):
    """dask's own from_zarr("rel.zarr") (fsspec makes the path absolute) on the cluster: checked on the workers, correct."""
    import dask.array as da
    import zarr

    import wideml

    X, y, _, _ = adv_data
    monkeypatch.chdir(tmp_path)
    zarr.create_array("rel.zarr", shape=X.shape, chunks=(X.shape[0], 128), dtype="float32")[...] = X
    with use_scheduler(dask_cluster["address"]):
        lol = wideml.LOL(n_components=3).fit(da.from_zarr("rel.zarr"), y)
    assert _same_subspace(np.asarray(lol.components_), np.asarray(wideml.LOL(n_components=3).fit(X, y).components_))


def test_api_user_dask_array_over_relative_zarr_on_cluster_is_refused(tmp_path, adv_data, dask_cluster, monkeypatch):
    """A user's dask array over a zarr array opened relatively reaches the workers: refused, not read as zeros."""
    import dask.array as da
    import zarr

    import wideml

    X, y, _, _ = adv_data
    monkeypatch.chdir(tmp_path)
    zarr.create_array("rel.zarr", shape=X.shape, chunks=(X.shape[0], 128), dtype="float32")[...] = X
    Xd = da.from_array(zarr.open_array("rel.zarr", mode="r"), chunks=(X.shape[0], 128))
    with use_scheduler(dask_cluster["address"]), pytest.raises(WidemlError) as excinfo:
        wideml.LOL(n_components=3).fit(Xd, y)
    assert_api_refused(excinfo, "relative", "rel.zarr", "absolute path")


# ----------------------------------------------------------------------------- in-memory stores
@pytest.mark.parametrize("how", ["MemoryStore", "memory://"])
def test_api_memory_zarr_on_cluster_is_refused(adv_data, dask_cluster, how):
    import zarr

    import wideml

    X, y, _, _ = adv_data
    target = zarr.storage.MemoryStore() if how == "MemoryStore" else f"memory://adv-{os.getpid()}-{time.time_ns()}"
    arr = zarr.create_array(target, shape=X.shape, chunks=(X.shape[0], 128), dtype="float32")
    arr[...] = X
    with use_scheduler(dask_cluster["address"]), pytest.raises(WidemlError) as excinfo:
        wideml.LOL(n_components=3).fit(arr, y)
    assert_api_refused(excinfo, "in-memory zarr array", "cluster workers", "numpy array")


def test_api_memory_zarr_locally_equals_oracle(adv_data):
    """On the local threaded scheduler an in-memory zarr array still works (it never leaves the process)."""
    import zarr

    import wideml

    X, y, _, _ = adv_data
    arr = zarr.create_array(zarr.storage.MemoryStore(), shape=X.shape, chunks=(X.shape[0], 128), dtype="float32")
    arr[...] = X
    lol = wideml.LOL(n_components=3).fit(arr, y)
    assert _same_subspace(np.asarray(lol.components_), np.asarray(wideml.LOL(n_components=3).fit(X, y).components_))


# ----------------------------------------------------------------------------- workers that cannot see the files
def _unshare_works() -> bool:
    if sys.platform != "linux" or shutil.which("unshare") is None or os.geteuid() != 0:
        return False
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", "mount -t tmpfs none /mnt && umount /mnt"],
                           capture_output=True)
    return probe.returncode == 0


@pytest.fixture(scope="module")
def split_cluster(tmp_path_factory, adv_stores):
    """A scheduler, a worker "seeing" (same view as the tests) and a worker "blind" in its own mount namespace.

    In "blind"'s namespace: ``hidden/`` is covered by an empty tmpfs (it sees the folder, none of
    its contents), ``twin/`` by a tmpfs holding a *different* store under the same name as the
    tests' (``twin/train.zarr`` is the test store there), and ``readonly/`` is mounted read-only.
    """
    if not _unshare_works():
        pytest.skip("needs root and unshare -m with tmpfs mounts to give one worker another view of the filesystem")
    base = tmp_path_factory.mktemp("split")
    hidden, twin, readonly, cwd = base / "hidden", base / "twin", base / "readonly", base / "elsewhere"
    for folder in (hidden, twin, readonly, cwd):
        folder.mkdir()
    shutil.copytree(adv_stores[0], hidden / "train.zarr")
    shutil.copytree(adv_stores[0], twin / "train.zarr")
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    env = dict(os.environ, DASK_DISTRIBUTED__WORKER__DAEMON="False", PYTHONWARNINGS="ignore")
    logs = base / "logs"
    logs.mkdir()
    worker = [sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", "1", "--no-dashboard"]
    blind_script = (
        f"mount -t tmpfs none {hidden} && "
        f"mount -t tmpfs none {twin} && cp -r {adv_stores[1]} {twin / 'train.zarr'} && "
        f"mount --bind {readonly} {readonly} && mount -o remount,bind,ro {readonly} && "
        f"exec {' '.join(worker)} --name blind --local-directory {base / 'wb'}"
    )
    procs = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", str(port),
                               "--dashboard-address", ":0"], cwd=base, env=env, stdout=open(logs / "s.log", "w"), stderr=subprocess.STDOUT),
             subprocess.Popen([*worker, "--name", "seeing", "--local-directory", str(base / "ws")], cwd=cwd, env=env,
                              stdout=open(logs / "seeing.log", "w"), stderr=subprocess.STDOUT),
             subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c", blind_script], cwd=cwd, env=env,
                              stdout=open(logs / "blind.log", "w"), stderr=subprocess.STDOUT)]
    try:
        wait_for_cluster(address, 2, logs / "blind.log", "the split cluster")
        yield {"address": address, "hidden": hidden, "twin": twin, "readonly": readonly}
    finally:
        stop_processes(procs)


def test_cli_store_a_worker_cannot_see_is_refused(tmp_path, split_cluster):
    """The store is on a folder worker "blind" does not see (a tmpfs over it): refused, naming the worker."""
    out = tmp_path / "m.model"
    proc = run_cli("fit", "lol", split_cluster["hidden"] / "train.zarr", "-o", out, "--scheduler", split_cluster["address"],
                   cwd=tmp_path)
    message = assert_refused(proc, "blind", "cannot see", "train.zarr", "shared by all workers")
    assert "seeing" not in message
    assert not out.exists()
    assert_no_debris(tmp_path)


def test_cli_store_a_worker_sees_differently_is_refused(tmp_path, split_cluster):
    """At the same path worker "blind" finds another store (another shape): refused as a different store."""
    out = tmp_path / "m.model"
    proc = run_cli("fit", "lol", split_cluster["twin"] / "train.zarr", "-o", out, "--scheduler", split_cluster["address"],
                   cwd=tmp_path)
    assert_refused(proc, "blind", "different store", "train.zarr", "shared by all workers")
    assert not out.exists()
    assert_no_debris(tmp_path)


def test_cli_output_folder_a_worker_cannot_write_is_refused(adv_stores, split_cluster):
    """-o into a folder worker "blind" has read-only: refused before the fit, naming the worker and the folder."""
    out = split_cluster["readonly"] / "m.model"
    proc = run_cli("fit", "lol", adv_stores[0], "-o", out, "--scheduler", split_cluster["address"], cwd=split_cluster["readonly"])
    assert_refused(proc, "blind", "cannot write", "output folder", str(split_cluster["readonly"]))
    assert not out.exists()
    assert_no_debris(split_cluster["readonly"])


def test_api_workdir_a_worker_sees_as_another_folder_is_refused(adv_stores, split_cluster):
    """workdir= on a folder that is another (empty) folder on worker "blind": refused before any pass."""
    import wideml

    with use_scheduler(split_cluster["address"]), pytest.raises(WidemlError) as excinfo:
        wideml.LOL(n_components=3, workdir=split_cluster["hidden"]).fit(wideml.open_store(adv_stores[0]))
    assert_api_refused(excinfo, "blind", "work directory", "shared by all workers")
    assert not any(p.name.startswith("wideml-fit-") for p in split_cluster["hidden"].iterdir())


def test_api_save_model_into_folder_a_worker_sees_as_another_is_refused(adv_stores, split_cluster):
    """save_model on the cluster into a folder "blind" sees as another one: refused (its chunks would be lost)."""
    import wideml

    with use_scheduler(split_cluster["address"]):
        clf = wideml.EmbeddingClassifier(wideml.LOL(n_components=3), "lda").fit(wideml.open_store(adv_stores[0]))
        with pytest.raises(WidemlError) as excinfo:
            wideml.save_model(clf, split_cluster["hidden"] / "m.model")
    assert_api_refused(excinfo, "blind", "different folder", "output folder")
    assert not (split_cluster["hidden"] / "m.model").exists()
    assert_no_debris(split_cluster["hidden"])
