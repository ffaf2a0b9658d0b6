"""The user-world findings on CIFTI/GIFTI ingest (notes uw_surface), one test each, plus their edges.

1. FreeSurfer ``lh.``/``rh.`` and HCP ``.L.``/``.R.`` GIFTI names are paired like ``hemi-L``/``hemi-R``
   (never one sample per hemisphere); ambiguous names are refused in one sentence.
2. Untagged files of different vertex counts name the real fix (name the hemispheres), not only "resample".
3. nibabel's log lines and warnings do not reach the user around our reads (and are restored after).
4. Gzipped CIFTI (``.dscalar.nii.gz``) is recognised and refused with "decompress it".
5. A two-column labels file may name the samples wideml gives a multi-map file (``one:0`` ...).

Oracles: nibabel's ``darrays[t].data`` / ``get_fdata()`` read in memory; LOL fitted in memory.
"""

from __future__ import annotations

import gzip
import logging
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

from surface_scans import brain_axis, save_cifti, save_gifti
from wideml.cli.main import main
from wideml.estimators.gram.lol import LOL
from wideml.exceptions import WidemlError
from wideml.sources.ingest import ingest
from wideml.storage import open_store

nib = pytest.importorskip("nibabel")


def _refused(tmp_path, capsys, source, match, *extra, labels=None):
    out = tmp_path / "bad.zarr"
    with pytest.raises(WidemlError, match=match):
        ingest(source, out, labels=labels)
    args = ["--labels", str(labels)] if labels is not None else ["--unlabelled"]
    code = main(["ingest", str(source), "-o", str(out), "--no-progress", *args, *map(str, extra)])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists() and [p for p in tmp_path.iterdir() if p.name.startswith(".bad.zarr")] == []
    return err


def _participants(tmp_path, n=10):
    path = tmp_path / "p10.tsv"
    path.write_text("participant_id\tgroup\n" + "".join(f"sub-{s:02d}\t{'control' if s <= n // 2 else 'patient'}\n"
                                                        for s in range(1, n + 1)))
    return path


def _darrays(path):
    return np.stack([np.asarray(d.data) for d in nib.load(str(path)).darrays])


# 1, 2 ------------------------------------------------------------------------------------------------------------

NAMINGS = {"freesurfer": ("sub-{s:02d}.lh.thickness.func.gii", "sub-{s:02d}.rh.thickness.func.gii", "sub-{s:02d}.thickness"),
           "freesurfer-prefix": ("lh.sub-{s:02d}_thickness.func.gii", "rh.sub-{s:02d}_thickness.func.gii", "sub-{s:02d}_thickness"),
           "hcp": ("sub-{s:02d}.L.thickness.32k_fs_LR.func.gii", "sub-{s:02d}.R.thickness.32k_fs_LR.func.gii",
                   "sub-{s:02d}.thickness.32k_fs_LR")}


@pytest.mark.parametrize("n_right", [50, 40], ids=["equal", "unequal"])
@pytest.mark.parametrize("naming", list(NAMINGS))
def test_lh_rh_and_L_R_names_are_paired_left_then_right(tmp_path, naming, n_right):
    left_name, right_name, stem = NAMINGS[naming]
    folder = tmp_path / "g"
    folder.mkdir()
    rng = np.random.default_rng(0)
    rows, y = [], []
    for s in range(1, 11):
        lp = save_gifti(nib, rng.standard_normal((1, 50)) + (s > 5) * (np.arange(50) % 4 == 0), folder / left_name.format(s=s))
        rp = save_gifti(nib, rng.standard_normal((1, n_right)), folder / right_name.format(s=s))
        rows.append(np.hstack([_darrays(lp), _darrays(rp)]))
        y.append("control" if s <= 5 else "patient")
    X = np.vstack(rows)
    if naming == "freesurfer-prefix":  # participants tables match sub-XX only at the start or after "_": labels per sample
        ingest(folder, tmp_path / "g.zarr", labels=np.asarray(y), feature_chunk=17)
    else:
        ingest(folder, tmp_path / "g.zarr", labels=_participants(tmp_path), label_column="group", feature_chunk=17)
    store = open_store(tmp_path / "g.zarr")
    assert store.X.shape == (10, 50 + n_right)  # one sample per subject, not one per hemisphere
    np.testing.assert_array_equal(store.X.compute(), X)
    np.testing.assert_array_equal(store.y, y)
    assert list(store.sample_ids) == [stem.format(s=s) for s in range(1, 11)]
    assert store.feature_table.info["hemispheres"] == [{"hemisphere": "L", "structure": "CortexLeft", "n_vertices": 50},
                                                       {"hemisphere": "R", "structure": "CortexRight", "n_vertices": n_right}]
    if naming == "freesurfer" and n_right == 50:
        on_store = LOL(n_components=2).fit(store)
        in_memory = LOL(n_components=2).fit(X.astype(np.float32), np.asarray(y))
        np.testing.assert_allclose(on_store.transform(X.astype(np.float32)), in_memory.transform(X.astype(np.float32)),
                                   rtol=1e-4, atol=1e-4)


def test_one_freesurfer_hemisphere_is_that_hemisphere(tmp_path):
    folder = tmp_path / "lh"
    folder.mkdir()
    for s in range(4):
        save_gifti(nib, np.full((1, 30), s, float), folder / f"sub-{s:02d}.lh.thickness.func.gii")
    ingest(folder, tmp_path / "l.zarr", labels=np.array([0, 1, 0, 1]))
    store = open_store(tmp_path / "l.zarr")
    assert store.feature_table.info["hemispheres"] == [{"hemisphere": "L", "structure": "CortexLeft", "n_vertices": 30}]
    assert list(store.sample_ids) == [f"sub-{s:02d}.thickness" for s in range(4)] and store.feature_ids[0] == "L:0"


@pytest.mark.parametrize("case,match", [
    ("missing-rh", r"'sub-02\.lh\.thickness\.func\.gii' has no right-hemisphere file beside it"),
    ("mixed", r"mix names with and without a hemisphere .*\(sub-09_thick\.func\.gii without\)"),
    ("both-in-one-name", r"'sub-02\.lh\.thickness\.R\.func\.gii' names both hemispheres"),
    ("twice", r"'sub-02\.lh\.thickness\.func\.gii' and 'sub-02\.thickness\.L\.func\.gii' are both the left hemisphere "
              r"of sample 'sub-02\.thickness'"),
])
def test_ambiguous_hemisphere_names_are_one_sentence(tmp_path, capsys, case, match):
    folder = tmp_path / "g"
    folder.mkdir()
    for s in range(1, 4):
        save_gifti(nib, np.zeros((1, 20)), folder / f"sub-{s:02d}.lh.thickness.func.gii")
        save_gifti(nib, np.ones((1, 20)), folder / f"sub-{s:02d}.rh.thickness.func.gii")
    if case == "missing-rh":
        (folder / "sub-02.rh.thickness.func.gii").unlink()
    elif case == "mixed":
        save_gifti(nib, np.zeros((1, 20)), folder / "sub-09_thick.func.gii")
    elif case == "both-in-one-name":
        (folder / "sub-02.lh.thickness.func.gii").rename(folder / "sub-02.lh.thickness.R.func.gii")
    else:  # another left file of sample sub-02.thickness under another convention
        save_gifti(nib, np.zeros((1, 20)), folder / "sub-02.thickness.L.func.gii")
    _refused(tmp_path, capsys, folder, match)


def test_untagged_files_of_other_vertex_counts_say_to_name_the_hemispheres(tmp_path, capsys):
    folder = tmp_path / "g"
    folder.mkdir()
    save_gifti(nib, np.zeros((1, 50)), folder / "sub-01_a.func.gii")
    save_gifti(nib, np.zeros((1, 40)), folder / "sub-01_b.func.gii")
    err = _refused(tmp_path, capsys, folder, r"'sub-01_b\.func\.gii' has 40 vertices but 'sub-01_a\.func\.gii' has 50, and their "
                                             r"names give no hemisphere; .*name them hemi-L/hemi-R .* resample")
    assert "lh." in err


def test_tagged_files_of_one_hemisphere_with_other_vertex_counts_still_say_resample(tmp_path, capsys):
    folder = tmp_path / "g"
    folder.mkdir()
    save_gifti(nib, np.zeros((1, 50)), folder / "sub-01.lh.thickness.func.gii")
    save_gifti(nib, np.zeros((1, 40)), folder / "sub-02.lh.thickness.func.gii")
    err = _refused(tmp_path, capsys, folder, r"has 40 vertices but .* has 50; every file of the left hemisphere must be on one "
                                             r"surface — resample it")
    assert "hemi-L/hemi-R" not in err


# 3 ---------------------------------------------------------------------------------------------------------------

class _Records(logging.Handler):
    def __init__(self):
        super().__init__(level=1)
        self.records = []

    def emit(self, record):
        self.records.append(record)


@pytest.mark.parametrize("what", ["plain-nifti", "garbage", "gifti-garbage"])
def test_nibabel_logs_nothing_around_our_reads_and_is_restored(tmp_path, capsys, what):
    folder = tmp_path / "f"
    folder.mkdir()
    if what == "plain-nifti":
        nib.save(nib.Nifti1Image(np.random.default_rng(0).random((4, 5, 6)).astype("f4"), np.eye(4)),
                 str(folder / "sub-01_x.dscalar.nii"))
        match = r"named like a CIFTI-2 file but is a Nifti1Image"
    elif what == "garbage":
        (folder / "sub-10_x.dscalar.nii").write_bytes(np.random.default_rng(1).bytes(2000))
        match = r"cannot read CIFTI file"
    else:
        (folder / "sub-10_x.func.gii").write_bytes(np.random.default_rng(1).bytes(2000))
        match = r"cannot read GIFTI file"
    logger = logging.getLogger("nibabel.global")
    seen = _Records()
    logger.addHandler(seen)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            _refused(tmp_path, capsys, folder, match)
        assert seen.records == [] and [w for w in caught if "nibabel" in (w.filename or "")] == []
        assert not logger.disabled
        logger.warning("after")  # the logger works again once our reads are done
        assert [r.getMessage() for r in seen.records] == ["after"]
    finally:
        logger.removeHandler(seen)


def test_cli_prints_only_our_sentence_for_a_plain_nifti_named_dscalar(tmp_path):
    """End to end, as the tester ran it: stderr is exactly one line (nibabel's own handler writes to the real stderr)."""
    folder = tmp_path / "a11"
    folder.mkdir()
    nib.save(nib.Nifti1Image(np.zeros((4, 5, 6), np.float32), np.eye(4)), str(folder / "sub-01_x.dscalar.nii"))
    (folder / "sub-02_x.dscalar.nii").write_bytes(os.urandom(2000))
    script = "import sys; from wideml.cli.main import main; sys.exit(main(sys.argv[1:]))"
    run = subprocess.run([sys.executable, "-c", script, "ingest", str(folder), "-o", str(tmp_path / "x.zarr"), "--unlabelled",
                          "--no-progress"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr
    assert run.stderr.strip().splitlines() == [run.stderr.strip()] and "sizeof_hdr" not in run.stderr, run.stderr
    assert "named like a CIFTI-2 file but is a Nifti1Image" in run.stderr


# 4 ---------------------------------------------------------------------------------------------------------------

def _gz_folder(tmp_path, n=3):
    axis = brain_axis(nib)
    folder = tmp_path / "gz"
    folder.mkdir()
    for s in range(n):
        plain = save_cifti(nib, np.full((1, len(axis)), s, np.float32), axis, tmp_path / f"sub-{s:02d}_x.dscalar.nii")
        (folder / f"sub-{s:02d}_x.dscalar.nii.gz").write_bytes(gzip.compress(plain.read_bytes()))
        plain.unlink()
    return folder


def test_gzipped_cifti_is_recognised_and_refused_with_decompress(tmp_path, capsys):
    folder = _gz_folder(tmp_path)
    match = r"'.*sub-00_x\.dscalar\.nii\.gz' is gzip-compressed; .*decompress it"
    err = _refused(tmp_path, capsys, folder, match)
    assert "reshape" not in err and "6-D" not in err
    _refused(tmp_path, capsys, folder / "sub-01_x.dscalar.nii.gz", r"sub-01_x\.dscalar\.nii\.gz' is gzip-compressed")


def test_gzip_bytes_under_a_plain_cifti_name_say_decompress(tmp_path, capsys):
    folder = _gz_folder(tmp_path)
    (folder / "sub-00_x.dscalar.nii.gz").rename(tmp_path / "sub-00_x.dscalar.nii")
    _refused(tmp_path, capsys, tmp_path / "sub-00_x.dscalar.nii", r"'.*sub-00_x\.dscalar\.nii' is gzip-compressed .*decompress")


# 5 ---------------------------------------------------------------------------------------------------------------

@pytest.fixture
def series(tmp_path):
    axis = brain_axis(nib, n_left=20, n_right=20)[:50]
    rng = np.random.default_rng(3)
    folder = tmp_path / "dtf"
    folder.mkdir()
    one = save_cifti(nib, rng.standard_normal((6, 50)).astype(np.float32), axis, folder / "one.dtseries.nii", series=True)
    two = save_cifti(nib, rng.standard_normal((3, 50)).astype(np.float32), axis, folder / "two.dtseries.nii", series=True)
    three = save_cifti(nib, rng.standard_normal((2, 50)).astype(np.float32), axis, folder / "three.dtseries.nii", series=True)
    return folder, nib.load(str(one)).get_fdata(), nib.load(str(two)).get_fdata(), nib.load(str(three)).get_fdata()


@pytest.mark.parametrize("where", ["file", "folder"])
def test_labels_keyed_by_the_sample_ids_wideml_gives(tmp_path, series, where):
    folder, one = series[:2]
    labels = tmp_path / "idl2.csv"
    labels.write_text("id,label\n" + "".join(f"one:{t},{'ab'[t >= 3]}\n" for t in range(6)))
    source = folder / "one.dtseries.nii" if where == "file" else folder
    ingest(source, tmp_path / "c.zarr", labels=labels)
    store = open_store(tmp_path / "c.zarr")
    assert list(store.sample_ids) == [f"one:{t}" for t in range(6)]
    np.testing.assert_array_equal(store.X.compute(), one)
    np.testing.assert_array_equal(store.y, list("aaabbb"))


def test_sample_id_labels_choose_and_order_samples_and_mix_with_file_names(tmp_path, series):
    folder, one, two, three = series
    labels = tmp_path / "ids.csv"
    labels.write_text("id,label\ntwo:2,x\none:4,y\ntwo.dtseries.nii:0,y\nthree.dtseries.nii,x\n")
    ingest(folder, tmp_path / "c.zarr", labels=labels)
    store = open_store(tmp_path / "c.zarr")
    assert list(store.sample_ids) == ["two:2", "one:4", "two:0", "three:0", "three:1"]
    np.testing.assert_array_equal(store.X.compute(), np.vstack([two[[2]], one[[4]], two[[0]], three]))
    assert list(store.y) == ["x", "y", "y", "x", "x"]


@pytest.mark.parametrize("text,match", [
    ("one:0,a\none:9,b\n", r"'one:9' in the labels file names time point or map 9 of 'one\.dtseries\.nii', which holds 6 "
                           r"\(one:0 to one:5\)"),
    ("one:0,a\none:0,b\n", r"gives sample id 'one:0' to line 2, line 3; give every sample its own id"),
    ("one:1,a\none.dtseries.nii,b\n", r"sample 'one:1' is labelled twice in the labels file"),
    ("one:1,a\nfour:0,b\n", r"1 sample\(s\) in the labels file have no file in the folder \(four:0\)"),
])
def test_bad_sample_id_labels_are_one_sentence(tmp_path, capsys, series, text, match):
    labels = tmp_path / "bad.csv"
    labels.write_text("id,label\n" + text)
    _refused(tmp_path, capsys, series[0], match, labels=labels)


def test_gifti_pairs_take_sample_id_labels(tmp_path):
    folder = tmp_path / "g"
    folder.mkdir()
    rng = np.random.default_rng(5)
    parts = []
    for s in range(2):
        lp = save_gifti(nib, rng.standard_normal((2, 10)), folder / f"sub-{s:02d}_hemi-L_x.func.gii")
        rp = save_gifti(nib, rng.standard_normal((2, 8)), folder / f"sub-{s:02d}_hemi-R_x.func.gii")
        parts.append(np.hstack([_darrays(lp), _darrays(rp)]))
    labels = tmp_path / "ids.csv"
    labels.write_text("id,label\nsub-01_x:1,a\nsub-00_x:0,b\nsub-00_x:1,a\n")
    ingest(folder, tmp_path / "g.zarr", labels=labels)
    store = open_store(tmp_path / "g.zarr")
    assert list(store.sample_ids) == ["sub-01_x:1", "sub-00_x:0", "sub-00_x:1"]
    np.testing.assert_array_equal(store.X.compute(), np.vstack([parts[1][[1]], parts[0][[0]], parts[0][[1]]]))
    assert list(store.y) == ["a", "b", "a"]
