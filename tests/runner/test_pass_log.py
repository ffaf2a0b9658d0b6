"""Each fit records its passes (what, wall time, sampled peak memory); saved models keep the log and reports show it."""

import time

import numpy as np

import wideml
from wideml.runtime.memory_watch import watch


def test_watch_sees_memory_allocated_inside_its_block():
    with watch() as before:
        pass
    with watch() as usage:
        block = np.ones(50_000_000 // 8)  # 50 MB, touched (an mmap of its own: new resident pages)
        block += 1
        time.sleep(0.2)  # held for 4 sampling intervals: the peak is sampled, a shorter spike may be missed
        del block
    assert usage.seconds > 0
    assert usage.peak_rss_bytes >= before.peak_rss_bytes + 40_000_000


def test_a_store_fit_logs_each_of_its_passes_and_the_model_keeps_them(make_store, tmp_path):
    path, X, y = make_store(n=60, p=300, feature_chunk=100)
    lol = wideml.LOL(n_components=3).fit(wideml.open_store(path))
    log = lol.pass_log_
    assert [e["pass"] for e in log] == list(range(1, lol.n_fit_passes_ + 1))
    assert all(e["seconds"] > 0 and e["peak_rss_bytes"] > 10_000_000 and e["what"] for e in log)
    out = wideml.save_model(lol, tmp_path / "lol.model")
    again = wideml.load_model(out)
    assert again.provenance_["passes"] == log


def test_a_classifier_model_keeps_its_embeddings_pass_log(make_store, tmp_path):
    path, X, y = make_store(n=60, p=300, feature_chunk=100)
    clf = wideml.EmbeddingClassifier(wideml.PCA(n_components=3)).fit(wideml.open_store(path))
    out = wideml.save_model(clf, tmp_path / "clf.model")
    assert wideml.load_model(out).provenance_["passes"] == clf.embedding_.pass_log_
