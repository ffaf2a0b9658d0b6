"""Issue 22, labels round 2: id-named CSV columns, pandas' missing markers, labels kept as given, bool labels, messages.

1. A CSV column whose header names sample ids (``id``, ``participant_id`` ...) never becomes a feature: the one
   such column with unique values is the sample ids (said on stderr), else the ingest asks for ``--id-column``.
2. ``#N/A``, ``<NA>``, ``#NA``, ``N.A.``, ``NULL`` ... are missing labels in every label source.
3. Labels read from text come back as given: ``007`` and ``07`` are two string classes, not one class 7.
4. bool labels stay False/True through ingest, ``wideml info`` and ``wideml predict``.
5. Messages: ``--label-column X --id-column X`` says the two must differ; ``--delimiter`` applies to labels files;
   no "y contain NaN".
"""

from __future__ import annotations

import csv

import numpy as np
import pytest

from wideml.cli.main import main
from wideml.exceptions import WidemlError
from wideml.storage import open_store
from wideml.sources.ingest import ingest
from wideml.sources.labels import read_labels_file
from wideml.storage.label_cells import is_id_name, is_missing
from wideml.storage.labels import normalise_labels


@pytest.fixture(autouse=True)
def _independent_config(restore_dask_config):
    """The CLI sets dask.config globally; keep every test independent."""


def id_csv(path, id_name="id", ids=None, labels=None, extra=""):
    """``id_name,g0,g1,g2,label`` with ids 100..109 (or ``ids``), labels 0/1 (or ``labels``)."""
    ids = list(range(100, 110)) if ids is None else ids
    labels = [i % 2 for i in range(len(ids))] if labels is None else labels
    rows = [f"{id_name},g0,g1,g2,{extra}label"]
    rows += [f"{sid},{i}.5,{2 * i}.25,{-i}.0,{'7,' if extra else ''}{lab}" for i, (sid, lab) in enumerate(zip(ids, labels))]
    path.write_text("\n".join(rows) + "\n")
    return path


def run(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args] + ["--no-progress"])
    out, err = capsys.readouterr()
    return code, out, err


# 1. id-named columns --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["id", "participant_id", "subject_id", "sample_id", "subject", "participant", "Subject ID"])
def test_an_id_named_numeric_column_is_the_sample_ids_not_a_feature(tmp_path, name):
    src = id_csv(tmp_path / "idnum.csv", name)
    store = open_store(ingest(src, tmp_path / "x.zarr", label_column="label"))
    assert store.X.shape == (10, 3)
    assert store.feature_ids.tolist() == ["g0", "g1", "g2"]
    assert store.sample_ids.tolist() == [str(i) for i in range(100, 110)]
    np.testing.assert_allclose(store.X.compute()[:, 0], np.arange(10) + 0.5)


def test_the_cli_says_on_stderr_in_one_line_which_column_became_the_ids(tmp_path, capsys):
    src = id_csv(tmp_path / "idnum.csv")
    code, out, err = run(capsys, "ingest", src, "--label-column", "label", "-o", tmp_path / "x.zarr")
    assert code == 0, err
    notes = [line for line in err.splitlines() if "sample ids" in line]
    assert len(notes) == 1 and "'id'" in notes[0] and "--id-column" in notes[0], err
    assert "10 samples x 3 features" in out


def test_an_id_named_column_with_repeated_values_is_refused_asking_for_id_column(tmp_path, capsys):
    src = id_csv(tmp_path / "dup.csv", ids=[100, 100] + list(range(102, 110)))
    code, _, err = run(capsys, "ingest", src, "--label-column", "label", "-o", tmp_path / "x.zarr")
    assert code == 2 and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and "'100'" in err and "--id-column" in err, err
    assert not (tmp_path / "x.zarr").exists()


def test_two_id_named_columns_are_refused_asking_for_id_column(tmp_path):
    src = id_csv(tmp_path / "two.csv", extra="subject,")
    with pytest.raises(WidemlError, match="2 columns named like sample ids \\(id, subject\\).*--id-column"):
        ingest(src, tmp_path / "x.zarr", label_column="label")
    assert not (tmp_path / "x.zarr").exists()


def test_an_explicit_id_column_is_used_as_before(tmp_path):
    src = id_csv(tmp_path / "idnum.csv", ids=[f"s{i}" for i in range(10)])
    store = open_store(ingest(src, tmp_path / "x.zarr", label_column="label", id_column="id"))
    assert store.sample_ids.tolist() == [f"s{i}" for i in range(10)] and store.X.shape == (10, 3)


def test_one_id_name_rule_for_csv_sources_and_labels_tables():
    for name in ("id", "ID", "participant_id", "subject", "sample_id", "Subject ID", "sample-id", "sub"):
        assert is_id_name(name), name
    for name in ("g0", "label", "identity", "age", "file"):
        assert not is_id_name(name), name


# 2. missing markers -------------------------------------------------------------------------------------------

NEW_MARKERS = ["#N/A", "<NA>", "#NA", "N.A.", "n.a.", "#N/A N/A", "-NaN", "1.#QNAN", "-1.#IND", " <na> "]


@pytest.mark.parametrize("marker", NEW_MARKERS)
def test_pandas_missing_markers_are_missing_in_a_csv_label_column(tmp_path, marker):
    labels = ["a", "b"] * 5
    labels[3] = marker
    src = id_csv(tmp_path / "d.csv", ids=[f"s{i}" for i in range(10)], labels=labels)
    with pytest.raises(WidemlError, match="1 missing label.*line 5.*--drop-unlabelled"):
        ingest(src, tmp_path / "o.zarr", label_column="label", id_column="id")
    store = open_store(ingest(src, tmp_path / "o.zarr", label_column="label", id_column="id", drop_unlabelled=True))
    assert sorted(set(store.y.tolist())) == ["a", "b"] and store.X.shape[0] == 9


@pytest.mark.parametrize("marker", ["#N/A", "<NA>", "#NA", "N.A."])
def test_pandas_missing_markers_are_missing_in_python_labels_and_labels_files(tmp_path, marker):
    with pytest.raises(WidemlError, match="missing value"):
        normalise_labels(np.array(["a", marker, "b"]), "y")
    (tmp_path / "l.csv").write_text(f"a\n{marker}\nb\n")
    with pytest.raises(WidemlError, match="missing label"):
        read_labels_file(tmp_path / "l.csv")


def test_dash_zero_and_question_mark_stay_classes():
    for cell in ("-", "0", "?", "nil", "N"):
        assert not is_missing(cell), cell


# 3. labels as given ---------------------------------------------------------------------------------------------

def test_zero_padded_labels_stay_strings_as_given(tmp_path):
    src = id_csv(tmp_path / "d.csv", ids=[f"s{i}" for i in range(10)], labels=["007", "010"] * 5)
    store = open_store(ingest(src, tmp_path / "o.zarr", label_column="label", id_column="id"))
    assert store.y.dtype.kind == "U" and sorted(set(store.y.tolist())) == ["007", "010"]


def test_007_and_07_are_two_classes_not_one(tmp_path):
    src = id_csv(tmp_path / "d.csv", ids=[f"s{i}" for i in range(10)], labels=["007", "07"] * 5)
    store = open_store(ingest(src, tmp_path / "o.zarr", label_column="label", id_column="id"))
    assert sorted(set(store.y.tolist())) == ["007", "07"]


@pytest.mark.parametrize("cells, expected", [
    (["+1", "2"], ["+1", "2"]),
    (["1", "1.0"], ["1", "1.0"]),
    (["1.50", "2"], ["1.50", "2"]),
    (["1", "2"], [1, 2]),
    (["-3", "4"], [-3, 4]),
])
def test_a_labels_file_gives_its_labels_back_as_given(tmp_path, cells, expected):
    (tmp_path / "l.csv").write_text("\n".join(cells * 2) + "\n")
    _, labels = read_labels_file(tmp_path / "l.csv")
    assert labels.tolist() == expected * 2
    assert labels.dtype.kind == ("U" if isinstance(expected[0], str) else "i")


# 4. bool labels -------------------------------------------------------------------------------------------------

def test_bool_labels_stay_false_true_in_info_and_predict(tmp_path, capsys):
    rng = np.random.default_rng(0)
    y = np.array([True, False] * 10)
    X = rng.standard_normal((20, 30)) + 2.0 * y[:, None]
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", y)
    code, out, err = run(capsys, "ingest", tmp_path / "X.npy", "--labels", tmp_path / "y.npy", "-o", tmp_path / "s.zarr")
    assert code == 0, err
    assert "(False: 10, True: 10)" in out, out
    assert open_store(tmp_path / "s.zarr").y.dtype == bool
    code, out, err = run(capsys, "info", tmp_path / "s.zarr")
    assert code == 0 and "(False: 10, True: 10)" in out, out
    code, _, err = run(capsys, "fit", "lol", tmp_path / "s.zarr", "-o", tmp_path / "m.zarr", "--n-components", "2")
    assert code == 0, err
    code, _, err = run(capsys, "predict", tmp_path / "m.zarr", tmp_path / "s.zarr", "-o", tmp_path / "p.csv")
    assert code == 0, err
    with open(tmp_path / "p.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["sample_id", "prediction", "p_False", "p_True"]
    assert {r[1] for r in rows[1:]} == {"False", "True"}


# 5. messages ----------------------------------------------------------------------------------------------------

def test_nan_labels_message_has_no_grammar_slip():
    with pytest.raises(WidemlError) as err:
        normalise_labels(np.array([1.0, np.nan, 2.0]), "y")
    message = str(err.value)
    assert "y contain" not in message and message.startswith("the labels y must not contain NaN or inf (sample 1")


def test_a_tab_separated_labels_csv_is_read_with_delimiter_tab(tmp_path, capsys):
    rng = np.random.default_rng(1)
    np.save(tmp_path / "X.npy", rng.standard_normal((6, 4)))
    (tmp_path / "l.csv").write_text("sample\tlabel\n" + "".join(f"s{i}\t{'ab'[i % 2]}\n" for i in range(6)))
    code, _, err = run(capsys, "ingest", tmp_path / "X.npy", "--labels", tmp_path / "l.csv", "-o", tmp_path / "a.zarr")
    assert code == 2 and "--delimiter '\\t'" in err and "rename it to .tsv" in err and "save it" not in err, err
    code, _, err = run(capsys, "ingest", tmp_path / "X.npy", "--labels", tmp_path / "l.csv", "--delimiter", "\\t",
                       "-o", tmp_path / "b.zarr")
    assert code == 0, err
    store = open_store(tmp_path / "b.zarr")
    assert store.sample_ids.tolist() == [f"s{i}" for i in range(6)] and store.y.tolist() == ["a", "b"] * 3


def test_a_comma_labels_file_is_still_read_beside_a_semicolon_csv_source(tmp_path):
    (tmp_path / "d.csv").write_text("".join(f"{i}.5;{i}.25\n" for i in range(6)))
    (tmp_path / "l.csv").write_text("".join(f"s{i},{'ab'[i % 2]}\n" for i in range(6)))
    store = open_store(ingest(tmp_path / "d.csv", tmp_path / "o.zarr", labels=tmp_path / "l.csv", delimiter=";"))
    assert store.X.shape == (6, 2) and store.y.tolist() == ["a", "b"] * 3


@pytest.fixture
def scans(tmp_path):
    from nifti_scans import make_scans

    return make_scans(pytest.importorskip("nibabel"), tmp_path, n=6)


def test_label_column_and_id_column_the_same_says_they_must_differ(scans, tmp_path, capsys):
    code, _, err = run(capsys, "ingest", scans.folder, "--labels", scans.participants, "--label-column", "group",
                       "--id-column", "group", "-o", tmp_path / "o.zarr")
    assert code == 2 and "must differ" in err and "name the id column with --id-column" not in err, err
    assert not (tmp_path / "o.zarr").exists()


def test_a_tab_separated_participants_csv_is_read_with_delimiter_tab(scans, tmp_path, capsys):
    table = tmp_path / "p.csv"
    table.write_text(scans.participants.read_text())
    code, _, err = run(capsys, "ingest", scans.folder, "--labels", table, "--label-column", "group", "--delimiter", "\\t",
                       "-o", tmp_path / "o.zarr")
    assert code == 0, err
    store = open_store(tmp_path / "o.zarr")
    assert sorted(store.y.tolist()) == sorted(scans.y.tolist())
