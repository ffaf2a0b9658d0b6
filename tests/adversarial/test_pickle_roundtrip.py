"""Adversarial: a fitted estimator pickled to another process gives the same answers, or refuses; never zeros.

A fit on a store keeps its p-sized arrays in a ``wideml-fit-*`` work folder that is
removed with the fitting process. A pickle used to carry only the folder's path, so
in another process (after the fitting one exited) zarr read the missing chunks as
zeros: all-zero components and predictions at chance. Now a pickle carries those
arrays' values (up to 256 MiB, else it refuses naming wideml.save_model), and any read
of a work-folder array whose folder or chunk file is gone raises.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import wideml

REPO = Path(__file__).resolve().parents[2]

#: name -> constructor expression and training input ("store" or "plain": a plain zarr array of X).
CASES = {
    "lol-gram": ("wideml.LOL(n_components=3, solver='gram')", "store"),
    "lol-randomized": ("wideml.LOL(n_components=3, solver='randomized', random_state=0)", "store"),
    "pca": ("wideml.PCA(n_components=3)", "store"),
    "rrlda": ("wideml.RRLDA(n_components=3)", "store"),
    "lfl": ("wideml.LFL(3)", "store"),
    "encoder-fast": ("wideml.EncoderClassifier()", "store"),
    "encoder-full": ("wideml.EncoderClassifier(kernels=('linear',), form='full')", "store"),
    "kernel-pca-store": ("wideml.KernelPCA(n_components=3)", "store"),
    "kernel-pca-plain": ("wideml.KernelPCA(n_components=3)", "plain"),
    "kernel-lol-plain": ("wideml.KernelLOL(n_components=3)", "plain"),
    "kpca-trick-plain": ("wideml.KPCATrick(learner='dne')", "plain"),
    "classifier-lol": ("wideml.EmbeddingClassifier(wideml.LOL(3))", "store"),
    "classifier-lfl": ("wideml.EmbeddingClassifier(wideml.LFL(3))", "store"),
}

FIT = textwrap.dedent("""
    import json, pickle, sys
    import dask, numpy as np, zarr
    import wideml
    reads_work_folder = lambda v: hasattr(v, "dask") and any(str(k).startswith("wideml-work-folder-") for k in v.dask.layers)
    root, cases = sys.argv[1], json.loads(sys.argv[2])
    dask.config.set({"wideml.workdir": root + "/work"})
    inputs = {"store": wideml.open_store(root + "/train.zarr"), "plain": zarr.open_array(root + "/plain.zarr", mode="r")}
    y = np.load(root + "/y.npy")
    test = np.load(root + "/test.npy")
    used = {}
    for name, (ctor, source) in cases.items():
        est = eval(ctor).fit(inputs[source], y)
        out = {}
        for method in ("transform", "predict"):
            if hasattr(est, method):
                out[method] = np.asarray(getattr(est, method)(test))
                np.save(f"{root}/{name}-{method}.npy", out[method])
        inner = getattr(est, "embedding_", None) if hasattr(est, "classifier_") else None
        holder = inner if inner is not None and hasattr(inner, "components_") else est
        used[name] = any(reads_work_folder(v) for v in vars(holder).values()) or any(
            reads_work_folder(v) for v in vars(getattr(holder, "training_", object())).values())
        with open(f"{root}/{name}.pkl", "wb") as f:
            pickle.dump(est, f)
        if name == "lol-gram":  # a bare fitted array (a dask graph over the work folder), pickled on its own
            with open(f"{root}/bare-components.pkl", "wb") as f:
                pickle.dump(est.components_, f)
    print(json.dumps(used))
""")

LOAD = textwrap.dedent("""
    import json, os, pickle, sys
    import numpy as np
    root, names = sys.argv[1], json.loads(sys.argv[2])
    test = np.load(root + "/test.npy")
    left = [n for n in os.listdir(root + "/work") if n.startswith("wideml-fit-")]
    results = {"work_folders_left": left}
    for name in names:
        with open(f"{root}/{name}.pkl", "rb") as f:
            est = pickle.load(f)
        res = {}
        for method in ("transform", "predict"):
            path = f"{root}/{name}-{method}.npy"
            if os.path.exists(path):
                got, want = np.asarray(getattr(est, method)(test)), np.load(path)
                res[method] = bool(np.array_equal(got, want)) if method == "predict" else float(np.abs(got - want).max())
        results[name] = res
    try:
        with open(f"{root}/bare-components.pkl", "rb") as f:
            arr = pickle.load(f)
        values = np.asarray(arr)
        results["bare"] = {"read": float(np.abs(values).max())}
    except Exception as exc:
        results["bare"] = {"error": type(exc).__name__, "message": str(exc)}
    print(json.dumps(results))
""")


def _run(code: str, *args: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def round_trip(tmp_path_factory, adv_data):
    """Fit every case in one process (which then exits), unpickle and predict in another: (fit report, load report)."""
    import zarr

    root = tmp_path_factory.mktemp("pickles")
    X, y, Xt, _ = adv_data
    wideml.write_store(root / "train.zarr", X, y, feature_chunk=128)
    plain = zarr.create_array(store=str(root / "plain.zarr"), shape=X.shape, chunks=(X.shape[0], 128), dtype=X.dtype)
    plain[...] = X
    np.save(root / "y.npy", y)
    np.save(root / "test.npy", Xt)
    (root / "work").mkdir()
    used = json.loads(_run(FIT, str(root), json.dumps(CASES)))
    loaded = json.loads(_run(LOAD, str(root), json.dumps(list(CASES))))
    return used, loaded


def test_the_fitting_process_left_no_work_folder(round_trip):
    _, loaded = round_trip
    assert loaded["work_folders_left"] == []


@pytest.mark.parametrize("name", list(CASES))
def test_unpickled_in_another_process_gives_the_same_answers(round_trip, name):
    used, loaded = round_trip
    res = loaded[name]
    assert res, f"{name}: nothing was compared"
    if "transform" in res:
        assert res["transform"] <= 1e-12, f"{name}: transform differs by {res['transform']}"
    if "predict" in res:
        assert res["predict"], f"{name}: predictions differ after the round trip"


def test_every_family_with_work_folder_arrays_is_covered(round_trip):
    used, _ = round_trip
    expected = {"lol-gram", "lol-randomized", "pca", "rrlda", "lfl", "encoder-fast", "encoder-full", "kernel-pca-plain",
                "kernel-lol-plain", "kpca-trick-plain", "classifier-lol", "classifier-lfl"}
    assert {name for name, flag in used.items() if flag} == expected


def test_a_bare_work_folder_array_read_after_the_folder_is_gone_raises(round_trip):
    _, loaded = round_trip
    bare = loaded["bare"]
    assert "read" not in bare, f"read {bare} from a removed work folder instead of raising"
    assert bare["error"] == "WorkFolderGone"
    assert "is gone" in bare["message"] and "wideml.save_model" in bare["message"]
    assert bare["message"].count(". ") == 0  # one sentence


def test_too_large_to_carry_refuses_naming_save_model(adv_stores, monkeypatch):
    from wideml.runner import pickling as _pickling
    from wideml.exceptions import WidemlError

    est = wideml.EmbeddingClassifier(wideml.LOL(3)).fit(wideml.open_store(adv_stores[0]))
    monkeypatch.setattr(_pickling, "EMBED_LIMIT_BYTES", 1000)
    with pytest.raises(TypeError, match=r"wideml\.save_model") as info:
        pickle.dumps(est)
    assert isinstance(info.value, WidemlError)
    assert "MiB" in str(info.value) and str(info.value).count(". ") == 0


def test_a_deleted_chunk_file_of_a_work_folder_array_raises(adv_stores):
    from wideml.exceptions import StoreError

    est = wideml.LOL(3, solver="gram").fit(wideml.open_store(adv_stores[0]))
    folders = list(Path(est._group).parent.parent.glob("wideml-fit-*"))
    chunk = Path(est._group) / "loadings" / "c" / "2" / "0"
    assert chunk.is_file(), folders
    chunk.unlink()
    with pytest.raises(StoreError, match=r"chunk \(2, 0\).*of the fitted array 'loadings'.*missing"):
        np.asarray(est.components_)


def test_pickled_in_the_same_process_does_not_own_the_folder(adv_stores):
    est = wideml.EncoderClassifier(kernels=("linear",)).fit(wideml.open_store(adv_stores[0]))
    group = est._group
    copy = pickle.loads(pickle.dumps(est))
    assert copy._group is None  # a refit of the copy must not remove the original's folder
    copy.fit(wideml.open_store(adv_stores[0]))
    assert os.path.isdir(group)
    np.testing.assert_array_equal(copy.predict(np.asarray(wideml.open_store(adv_stores[1]).X)),
                                  est.predict(np.asarray(wideml.open_store(adv_stores[1]).X)))


def test_joblib_workers_return_fitted_store_estimators_that_predict(adv_stores, adv_data):
    """Estimators fitted on a store in joblib (loky) worker processes come back pickled; the workers then exit."""
    from joblib import Parallel, delayed
    from joblib.externals.loky import get_reusable_executor

    train, test = adv_stores
    ests = [wideml.EmbeddingClassifier(wideml.LOL(3)), wideml.EmbeddingClassifier(wideml.LFL(3))]
    fitted = Parallel(n_jobs=2, backend="loky")(delayed(e.fit)(wideml.open_store(train)) for e in ests)
    get_reusable_executor().shutdown(wait=True)  # the workers exit: their work folders are gone
    Xt = adv_data[2]
    for est, fresh in zip(fitted, ests):
        np.testing.assert_array_equal(est.predict(Xt), fresh.fit(wideml.open_store(train)).predict(Xt))


def test_cross_validate_with_returned_estimators_on_numpy(adv_data):
    """sklearn's cross_validate(..., return_estimator=True, n_jobs=2) on in-memory X (a regression guard)."""
    from sklearn.model_selection import cross_validate

    X, y, Xt, _ = adv_data
    cv = cross_validate(wideml.EmbeddingClassifier(wideml.LOL(3)), X, y, cv=3, n_jobs=2, return_estimator=True)
    assert cv["test_score"].min() > 0.8
    for est in cv["estimator"]:
        assert np.abs(np.asarray(est.embedding_.components_)).max() > 0
        assert (est.predict(Xt) == est.predict(Xt)).all()
