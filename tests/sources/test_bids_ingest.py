"""BIDS derivatives to feature stores: the oracle is nibabel's read of the selected files, masked with numpy.

Every store X is compared with ``nibabel.load(path).get_fdata()[mask]`` of
the files the selection names, in the stated order (subject, session, run),
with ``mask`` the AND of the scans' ``desc-brain_mask`` files computed here;
ids, labels (participants.tsv by subject) and the spatial reference are
checked, across feature chunkings, the one-stage and two-stage (row stripes
then rechunk) copies, and zarr/HDF5 outputs. A LOL fit on the ingested store
equals the fit on the same arrays in memory.
"""

from __future__ import annotations

import numpy as np
import pytest

import wideml
from conftest import store_name
from test_bids_tree import GROUPS, OTHER, SESSIONS, SPACE, SUBJECTS, make_tree
from wideml.storage import open_store

nib = pytest.importorskip("nibabel")
ANAT = {"derivatives": "fmriprep", "space": SPACE, "desc": "preproc", "suffix": "T1w"}
FUNC = {"derivatives": "fmriprep", "space": SPACE, "desc": "stat", "filters": {"task": "rest"}}


@pytest.fixture
def tree(tmp_path):
    return make_tree(nib, tmp_path)


def read(path, mask) -> np.ndarray:
    """The oracle: nibabel's own read of one file at the mask."""
    return np.asarray(nib.load(str(path)).get_fdata(), dtype=np.float64)[mask]


def and_of(tree, paths) -> np.ndarray:
    mask = np.ones(tree.brain.shape, bool)
    for p in paths:
        mask &= np.asarray(nib.load(str(p)).dataobj) != 0
    return mask


def anat_paths(tree, rest="desc-preproc_T1w", space=SPACE):
    return [tree.path(s, e, "anat", f"space-{space}_{rest}.nii.gz") for s in SUBJECTS for e in SESSIONS]


@pytest.mark.parametrize("memory", [None, "8KiB"], ids=["one-stage", "two-stage"])
@pytest.mark.parametrize("chunk", [7, None])
def test_anat_store_equals_nibabel_read_of_the_selected_files_masked(tree, tmp_path, fmt, memory, chunk):
    out = wideml.ingest(tree.root, tmp_path / store_name(fmt), bids=ANAT, label_column="group", feature_chunk=chunk,
                        memory_limit=memory)
    store = open_store(out)
    mask = and_of(tree, anat_paths(tree, "desc-brain_mask"))
    assert mask.sum() >= tree.brain.sum() and not np.array_equal(mask, np.ones_like(mask))
    want = np.stack([read(p, mask) for p in anat_paths(tree)])
    np.testing.assert_array_equal(store.X.compute(), want.astype(np.float32))
    np.testing.assert_array_equal(store.sample_ids, [f"sub-{s}_ses-{e}" for s in SUBJECTS for e in SESSIONS])
    np.testing.assert_array_equal(store.y, [GROUPS[s] for s in SUBJECTS for _ in SESSIONS])
    np.testing.assert_array_equal(store.spatial.mask, mask)
    np.testing.assert_allclose(store.spatial.affine, tree.affine, atol=1e-6)


def test_another_space_is_another_store_and_its_own_masks(tree, tmp_path):
    store = open_store(wideml.ingest(tree.root, tmp_path / "o.zarr", bids={**ANAT, "space": OTHER}, label_column="group"))
    mask = and_of(tree, anat_paths(tree, "desc-brain_mask", OTHER))
    np.testing.assert_array_equal(store.spatial.mask, tree.brain)
    np.testing.assert_array_equal(store.X.compute(), np.stack([read(p, mask) for p in anat_paths(tree, space=OTHER)]).astype(np.float32))


def func_paths(tree, runs=("1", "2")):
    return [(s, e, r, tree.path(s, e, "func", f"task-rest_run-{r}_space-{SPACE}_desc-stat_bold.nii.gz"))
            for s in SUBJECTS for e in SESSIONS for r in runs]


def test_runs_and_sessions_are_separate_samples_with_their_ids(tree, tmp_path):
    store = open_store(wideml.ingest(tree.root, tmp_path / "f.zarr", bids=FUNC, label_column="group", feature_chunk=5))
    found = func_paths(tree)
    masks = [tree.path(s, e, "func", f"task-rest_run-{r}_space-{SPACE}_desc-brain_mask.nii.gz") for s, e, r, _ in found]
    mask = and_of(tree, masks)
    np.testing.assert_array_equal(mask, tree.brain)  # the runs' masks differ at one voxel each: the intersection drops both
    np.testing.assert_array_equal(store.sample_ids, [f"sub-{s}_ses-{e}_run-{r}" for s, e, r, _ in found])
    np.testing.assert_array_equal(store.X.compute(), np.stack([read(p, mask) for *_, p in found]).astype(np.float32))
    np.testing.assert_array_equal(store.y, [GROUPS[s] for s, *_ in found])


@pytest.mark.parametrize("average, width", [("runs", 2), ("sessions", 1)])
def test_averaging_is_explicit_and_equals_the_mean_of_the_files(tree, tmp_path, average, width):
    store = open_store(wideml.ingest(tree.root, tmp_path / "a.zarr", bids={**FUNC, "average": average}, label_column="group"))
    groups: dict = {}
    for s, e, r, p in func_paths(tree):
        groups.setdefault((s, e, r)[:width], []).append(read(p, tree.brain))
    np.testing.assert_array_equal(store.sample_ids, ["_".join(f"{k}-{v}" for k, v in zip(("sub", "ses"), key)) for key in groups])
    want = np.stack([np.mean(g, axis=0) for g in groups.values()]).astype(np.float32)
    np.testing.assert_array_equal(store.X.compute(), want)
    assert store.dtype == np.float32


def test_subjects_and_sessions_choose_samples_and_other_rows_of_the_table_are_fine(tree, tmp_path):
    store = open_store(wideml.ingest(tree.root, tmp_path / "s.zarr", bids={**ANAT, "subjects": ["sub-03", "02"], "sessions": "2"},
                                     label_column="group"))
    np.testing.assert_array_equal(store.sample_ids, ["sub-02_ses-2", "sub-03_ses-2"])  # sorted, not in the order asked
    np.testing.assert_array_equal(store.y, ["patient", "control"])


def test_mask_file_or_auto_replaces_the_tree_masks_and_unlabelled_stores_no_labels(tree, tmp_path):
    one = tree.path("01", "1", "anat", f"space-{SPACE}_desc-brain_mask.nii.gz")
    store = open_store(wideml.ingest(tree.root, tmp_path / "m.zarr", bids=ANAT, mask=one))
    np.testing.assert_array_equal(store.spatial.mask, tree.anat_mask["01", "1"])
    assert store.y is None
    auto = open_store(wideml.ingest(tree.root, tmp_path / "auto.zarr", bids=ANAT, mask="auto", label_column="group"))
    want = np.all([np.asarray(nib.load(str(p)).dataobj) != 0 for p in anat_paths(tree)], axis=0)
    np.testing.assert_array_equal(auto.spatial.mask, want)


def test_the_derivatives_folder_itself_is_a_dataset_and_finds_the_raw_participants_table(tree, tmp_path):
    store = open_store(wideml.ingest(tree.deriv, tmp_path / "d.zarr", label_column="group",
                                     bids={k: v for k, v in ANAT.items() if k != "derivatives"}))
    np.testing.assert_array_equal(store.y, [GROUPS[s] for s in SUBJECTS for _ in SESSIONS])


def test_drop_unlabelled_leaves_out_subjects_with_na_and_keeps_the_rest(tree, tmp_path):
    table = tree.root / "participants.tsv"
    table.write_text(table.read_text().replace("sub-03\t32\tcontrol", "sub-03\t32\tn/a"))
    store = open_store(wideml.ingest(tree.root, tmp_path / "n.zarr", bids=ANAT, label_column="group", drop_unlabelled=True,
                                     mask="auto"))
    np.testing.assert_array_equal(store.sample_ids, ["sub-01_ses-1", "sub-01_ses-2", "sub-02_ses-1", "sub-02_ses-2"])


def test_the_registry_recognises_the_dataset_without_bids_flags(tree):
    from wideml.sources.bids import BidsSource
    from wideml.sources.registry import pick

    assert pick(tree.root)[0] is BidsSource


def test_lol_on_the_ingested_store_equals_lol_on_the_same_arrays_in_memory(tree, tmp_path):
    store = open_store(wideml.ingest(tree.root, tmp_path / "f.zarr", bids=FUNC, label_column="group", feature_chunk=9))
    found = func_paths(tree)
    X = np.stack([read(p, tree.brain) for *_, p in found]).astype(np.float32)
    y = np.array([GROUPS[s] for s, *_ in found])
    on_store = wideml.LOL(n_components=3).fit(store)
    in_memory = wideml.LOL(n_components=3).fit(X, y)
    np.testing.assert_allclose(on_store.transform(store), in_memory.transform(X), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.abs(on_store.components_), np.abs(in_memory.components_), rtol=1e-4, atol=1e-5)


def test_4d_series_give_one_sample_per_volume_and_cannot_be_averaged(tree, tmp_path):
    from nifti_scans import save

    from wideml.exceptions import WidemlError

    series = {}
    for s, e, r, p in func_paths(tree):
        series[s, e, r] = np.stack([tree.func[s, e, r], tree.func[s, e, r] * 2], axis=-1)
        save(nib, series[s, e, r], tree.affine, p)
    store = open_store(wideml.ingest(tree.root, tmp_path / "4d.zarr", bids=FUNC, label_column="group"))
    keys = [k for *k, _ in func_paths(tree)]
    np.testing.assert_array_equal(store.sample_ids, [f"sub-{s}_ses-{e}_run-{r}:{t}" for s, e, r in keys for t in (0, 1)])
    np.testing.assert_array_equal(store.X.compute(), np.stack([series[tuple(k)][tree.brain][:, t] for k in keys for t in (0, 1)]))
    np.testing.assert_array_equal(store.y, [GROUPS[k[0]] for k in keys for _ in (0, 1)])
    with pytest.raises(WidemlError, match="averages 3-D scans.*is a 4-D series"):
        wideml.ingest(tree.root, tmp_path / "avg.zarr", bids={**FUNC, "average": "runs"}, label_column="group")
    assert not (tmp_path / "avg.zarr").exists()
