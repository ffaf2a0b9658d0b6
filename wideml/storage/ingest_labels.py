"""Labels for ingest: arrays, label files, and matching labels to per-sample files.

A labels file is a CSV/TSV with one column (a label per sample, in X's row
order) or two columns (sample id or file name, label); an optional header row
is recognised by its column names (``label``, ``class``, ``y``, ``id``,
``file`` ...) or by a text label above numeric ones. Labels that are all
integers are stored as integers, anything else as strings. Labels may also
come from a ``.npy`` file, an HDF5 dataset (``file.h5:/y``) or a zarr array directory.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

import numpy as np

from wideml.exceptions import WidemlError
from wideml.storage.writer import check_labels

_LABEL_NAMES = {"label", "labels", "y", "class", "classes", "target", "group", "diagnosis", "outcome", "dx", "condition"}
_ID_NAMES = {"id", "ids", "sample", "sample_id", "sampleid", "subject", "subject_id", "participant_id", "file", "filename",
             "file_name", "name", "path", "image", "scan"}


def delimiter_for(path: str | os.PathLike, delimiter: str | None = None) -> str:
    """``delimiter``, else tab for ``.tsv``/``.tab`` files and comma otherwise."""
    if delimiter:
        return "\t" if delimiter in ("\\t", "tab") else delimiter
    name = str(path).lower().removesuffix(".gz")
    return "\t" if name.endswith((".tsv", ".tab")) else ","


def open_text(path: str | os.PathLike):
    """Open a (possibly gzipped) text file for the csv module."""
    if str(path).lower().endswith(".gz"):
        import gzip

        return gzip.open(path, "rt", newline="", encoding="utf-8-sig")
    return open(path, newline="", encoding="utf-8-sig")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def coerce_labels(values) -> np.ndarray:
    """Label strings as int64 when they are all integers, else as str."""
    values = [str(v).strip() for v in values]
    try:
        return np.array([int(v) for v in values], dtype=np.int64)
    except ValueError:
        pass
    try:
        floats = np.array([float(v) for v in values])
        if np.all(np.isfinite(floats)) and np.all(floats == np.round(floats)):
            return floats.astype(np.int64)
    except ValueError:
        pass
    return np.array(values, dtype=str)


def read_labels_file(path: str | os.PathLike, delimiter: str | None = None) -> tuple[np.ndarray | None, np.ndarray]:
    """Read a labels CSV/TSV.

    Parameters
    ----------
    path : path-like
    delimiter : str, optional
        Default from the extension (tab for ``.tsv``).

    Returns
    -------
    ids : ndarray of str, shape (n_samples,), or None
        First column of a two-column file (sample ids or file names).
    labels : ndarray of shape (n_samples,)
    """
    path = Path(path)
    try:
        with open_text(path) as f:
            rows = [[cell.strip() for cell in row] for row in csv.reader(f, delimiter=delimiter_for(path, delimiter))]
    except FileNotFoundError:
        raise WidemlError(f"labels file {str(path)!r} does not exist; check the path.") from None
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise WidemlError(f"cannot read labels file {str(path)!r} ({exc}); give a CSV with one label per line.") from None
    rows = [r for r in rows if any(r)]
    if not rows:
        raise WidemlError(f"labels file {str(path)!r} is empty; give one label per sample.")
    width = len(rows[0])
    if width not in (1, 2):
        raise WidemlError(
            f"labels file {str(path)!r} has {width} columns; name the label column with --label-column NAME "
            "(label_column=) and, if needed, the id column with --id-column, or give one column (label) or two (id, label)."
        )
    for i, row in enumerate(rows, 1):
        if len(row) != width:
            raise WidemlError(f"labels file {str(path)!r} has {len(row)} columns in line {i} but {width} in line 1; make every line alike.")
    first = [c.lower() for c in rows[0]]
    body_numeric = len(rows) > 1 and all(_is_number(r[-1]) for r in rows[1:])
    if first[-1] in _LABEL_NAMES or (width == 2 and first[0] in _ID_NAMES) or (body_numeric and not _is_number(rows[0][-1])):
        rows = rows[1:]
    if not rows:
        raise WidemlError(f"labels file {str(path)!r} has a header but no labels; give one label per sample.")
    labels = coerce_labels(r[-1] for r in rows)
    ids = np.array([r[0] for r in rows], dtype=str) if width == 2 else None
    return ids, labels


def read_labels(spec, delimiter: str | None = None) -> tuple[np.ndarray | None, np.ndarray]:
    """Labels from an array-like, a CSV/TSV file, a ``.npy`` file, ``file.h5:/dataset`` or a zarr array directory.

    Returns
    -------
    ids : ndarray of str or None
    labels : ndarray of shape (n_samples,)
    """
    if not isinstance(spec, (str, os.PathLike)):
        arr = np.asarray(spec)
        if arr.ndim != 1:
            raise WidemlError(f"labels must be 1-D (one label per sample), got shape {arr.shape}; flatten them.")
        return None, arr
    from wideml.storage.ingest_arrays import split_hdf5_spec

    file, dataset = split_hdf5_spec(str(spec))
    path = Path(file)
    if dataset is not None:
        import h5py

        if not path.is_file():
            raise WidemlError(f"labels file {str(path)!r} does not exist; check the path.")
        with h5py.File(path, "r") as handle:
            if dataset.lstrip("/") not in handle:
                raise WidemlError(f"{str(path)!r} has no dataset {dataset!r} for the labels; check the name.")
            return None, coerce_labels_array(handle[dataset.lstrip("/")][()])
    if path.is_dir():
        import zarr

        try:
            return None, coerce_labels_array(zarr.open_array(str(path), mode="r")[...])
        except WidemlError:
            raise
        except Exception:  # noqa: BLE001 - not a zarr array, or a corrupt one
            raise WidemlError(f"labels path {str(path)!r} is a folder but not a zarr array; give a CSV, .npy or zarr array of labels.") from None
    if path.suffix.lower() == ".npy":
        if not path.is_file():
            raise WidemlError(f"labels file {str(path)!r} does not exist; check the path.")
        try:
            arr = np.load(path, allow_pickle=False)
        except ValueError:
            raise WidemlError(f"labels file {str(path)!r} holds Python objects; save the labels as numbers or fixed-width strings.") from None
        return None, coerce_labels_array(arr)
    return read_labels_file(path, delimiter)


def coerce_labels_array(arr) -> np.ndarray:
    """Labels array from an HDF5/npy dataset: bytes decoded, 1-D required."""
    arr = np.asarray(arr)
    if arr.ndim != 1:
        raise WidemlError(f"labels must be 1-D (one label per sample), got shape {arr.shape}; flatten them.")
    if arr.dtype.kind in "SO":
        arr = np.array([v.decode() if isinstance(v, bytes) else str(v) for v in arr], dtype=str)
    return arr


def validate_labels(y, n_samples: int) -> np.ndarray:
    """Check one label per sample and at least two classes, with the ingest-specific fix in the message."""
    y = np.asarray(y)
    if y.ndim == 1 and y.shape[0] == n_samples and len(np.unique(y)) < 2:
        only = np.unique(y)
        raise WidemlError(
            f"the labels have only one class ({only[0].item()!r}); a training store needs at least two classes — "
            "check the labels, or ingest with --unlabelled (labels=None) for a prediction-only store."
        )
    return check_labels(y, n_samples)


def match_files(files: list[Path], ids: np.ndarray, stem) -> list[Path]:
    """Order per-sample files like the labels file's first column (file names or sample ids).

    Parameters
    ----------
    files : list of Path
        The sample files found in the folder.
    ids : ndarray of str
        File names (with or without extension) or sample ids, one per label.
    stem : callable
        File name without its data extension (``sub-01.nii.gz`` → ``sub-01``).

    Returns
    -------
    list of Path, in the labels' order.
    """
    by_name = {f.name: f for f in files}
    by_stem = {stem(f): f for f in files}
    out, missing = [], []
    for key in ids:
        key_name = Path(str(key)).name
        f = by_name.get(key_name) or by_stem.get(key_name) or by_stem.get(stem(Path(key_name)))
        if f is None:
            missing.append(str(key))
        else:
            out.append(f)
    if missing:
        shown = ", ".join(missing[:3]) + (" ..." if len(missing) > 3 else "")
        raise WidemlError(f"{len(missing)} sample(s) in the labels file have no file in the folder ({shown}); fix the names or add the files "
                          "(to match a participants table by subject id, sub-XX in the file names, name its label column with --label-column).")
    seen: set[Path] = set()
    for f in out:
        if f in seen:
            raise WidemlError(f"file {f.name!r} is listed twice in the labels file; give each sample one line.")
        seen.add(f)
    return out
