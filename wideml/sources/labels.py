"""Labels for ingest: arrays, label files, and matching labels to per-sample files.

A labels file is a CSV/TSV with one column (a label per sample, in X's row
order) or two columns (sample id or file name, label); an optional header row
is recognised by its column names (``label``, ``class``, ``y``, ``id``,
``file`` ...) or by a text label above numeric ones. Labels come back as
given (:func:`coerce_labels`): all integers written plainly are stored as
integers, all plain decimals as floats, anything else (``007``, ``+1``,
``1.50``, or a mix) as strings. Labels may also
come from a ``.npy`` file, an HDF5 dataset (``file.h5:/y``) or a zarr array directory.

Missing labels (``NA``, ``n/a``, ``NaN``, ``null``, ``None``, empty: see
:mod:`wideml.storage.label_cells`) are refused naming the first lines or
samples, or, with ``drop_unlabelled``, left out (:func:`load_labels` returns
which rows remain). A sample id given twice in a two-column file is refused, and
so is a one-column file whose lines are whitespace-separated fields with unique
first fields (``s0 a``: an id and a label read as one label; genotype sources
read such PLINK phenotype files by :mod:`wideml.sources.genotype_labels`).
"""

from __future__ import annotations

import csv
import gzip
import os
from pathlib import Path

import h5py
import numpy as np
import zarr

from wideml.exceptions import WidemlError
from wideml.sources.locations import split_hdf5_spec
from wideml.storage.label_cells import (
    check_unique_ids,
    clip,
    delimiter_error,
    is_id_name,
    is_number,
    listed,
    missing_error,
    missing_mask,
    other_delimiter,
)
from wideml.storage.writer import check_labels

_LABEL_NAMES = {"label", "labels", "y", "class", "classes", "target", "group", "diagnosis", "outcome", "dx", "condition"}
#: First-column names of a two-column labels file that name files rather than sample ids (ids: :func:`is_id_name`).
_FILE_NAMES = {"file", "filename", "file_name", "name", "path", "image", "scan"}


def delimiter_for(path: str | os.PathLike, delimiter: str | None = None) -> str:
    """``delimiter``, else tab for ``.tsv``/``.tab`` files and comma otherwise."""
    if delimiter:
        return "\t" if delimiter in ("\\t", "tab") else delimiter
    name = str(path).lower().removesuffix(".gz")
    return "\t" if name.endswith((".tsv", ".tab")) else ","


def labels_delimiter(path: str | os.PathLike, delimiter: str | None = None) -> str:
    """The separator of a labels file: ``delimiter`` (``--delimiter``) when the file uses it, else its extension's.

    A labels file separated by its extension's default (comma; tab for ``.tsv``) is read that way even when
    ``delimiter`` is given for a CSV source of another separator; one whose first line is a single cell holding
    ``delimiter`` is read with ``delimiter`` (a tab-separated ``p.csv`` with ``--delimiter '\\t'``).
    """
    default = delimiter_for(path)
    if not delimiter or delimiter_for(path, delimiter) == default:
        return default
    given = delimiter_for(path, delimiter)
    try:
        with open_text(path) as f:
            for row in csv.reader(f, delimiter=default):
                if any(cell.strip() for cell in row):
                    return given if len(row) == 1 and given in row[0] else default
    except (OSError, UnicodeDecodeError, csv.Error, EOFError):
        return given  # the reader that follows names the problem
    return default


def delimiter_fix(sep: str, path: str | os.PathLike) -> str:
    """The fix for a labels file that looks ``sep``-separated: pass ``--delimiter``, or rename/resave it."""
    shown = "'\\t'" if sep == "\t" else repr(sep)
    other = "rename it to .tsv" if sep == "\t" else (
        "save it tab-separated" if delimiter_for(path) == "\t" else "save it comma-separated")
    return f"pass --delimiter {shown} (delimiter={shown}), or {other}"


def open_text(path: str | os.PathLike):
    """Open a (possibly gzipped) text file for the csv module."""
    if str(path).lower().endswith(".gz"):
        return gzip.open(path, "rt", newline="", encoding="utf-8-sig")
    return open(path, newline="", encoding="utf-8-sig")


def not_utf8_error(path: str | os.PathLike, what: str = "labels file") -> WidemlError:
    """One sentence for a text file that is not UTF-8: the first bad byte and its line, and how to re-save it."""
    where = ""
    try:
        opener = gzip.open if str(path).lower().endswith(".gz") else open
        with opener(path, "rb") as f:
            raw = f.read()
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        where = f" (byte 0x{raw[exc.start]:02x} in line {line})"
    except OSError:
        pass
    return WidemlError(f"{what} {str(path)!r} is not UTF-8 text{where}, perhaps Latin-1 or Windows-1252; re-save it as UTF-8 "
                       "(e.g. iconv -f latin1 -t utf-8 OLD > NEW).")


def _as_given_int(text: str) -> bool:
    """Whether ``text`` is an integer written the way ``str(int)`` writes it (not ``007``, ``+3``, ``1_000`` or ``-0``)."""
    try:
        return str(int(text)) == text
    except ValueError:
        return False


def _as_given_float(text: str) -> bool:
    """Whether ``text`` is a finite float written the way ``repr(float)`` writes it (``1.5``, ``2.0``; not ``1.50`` or ``1e3``)."""
    try:
        value = float(text)
    except ValueError:
        return False
    return bool(np.isfinite(value)) and repr(value) == text


def coerce_labels(values) -> np.ndarray:
    """Label texts as int64 when every one is an integer written as ``str(int)`` writes it, as float64 when every one
    is a float written as ``repr(float)`` writes it, else as str: labels come back as given.

    So ``007`` and ``07`` stay two string classes (never one class 7), ``+1`` and ``1.50`` stay strings, and
    ``1`` with ``1.0`` are two classes, not one.
    """
    values = [str(v).strip() for v in values]
    if all(_as_given_int(v) for v in values):
        try:
            return np.array([int(v) for v in values], dtype=np.int64)
        except OverflowError:
            return np.array(values, dtype=str)
    if all(_as_given_float(v) for v in values):
        return np.array([float(v) for v in values], dtype=np.float64)
    return np.array(values, dtype=str)


def _whitespace_table(rows: list[list[str]]) -> bool:
    """Whether one-cell rows are whitespace-separated fields, ids first: each splits into the same number (2 or more)
    of fields and the first fields are all different (read whole, every line would be a class of one sample)."""
    fields = [row[0].split() for row in rows]
    return (len(rows) > 1 and len(fields[0]) > 1 and all(len(f) == len(fields[0]) for f in fields)
            and len({f[0] for f in fields}) == len(fields))


def _file_cells(path: Path, delimiter: str | None) -> tuple[np.ndarray | None, list[str], list[str]]:
    """A labels CSV/TSV as (ids or None, raw label cells, line names), the header row left out."""
    try:
        with open_text(path) as f:
            reader = csv.reader(f, delimiter=labels_delimiter(path, delimiter))
            rows, lines = [], []
            for row in reader:
                row = [cell.strip() for cell in row]
                if any(row):
                    rows.append(row)
                    lines.append(f"line {reader.line_num}")
    except FileNotFoundError:
        raise WidemlError(f"labels file {str(path)!r} does not exist; check the path.") from None
    except UnicodeDecodeError:
        raise not_utf8_error(path) from None
    except (OSError, csv.Error) as exc:
        raise WidemlError(f"cannot read labels file {str(path)!r} ({type(exc).__name__}); give a CSV with one label per line.") from None
    if not rows:
        raise WidemlError(f"labels file {str(path)!r} is empty; give one label per sample.")
    width = len(rows[0])
    sep = other_delimiter(rows[0], labels_delimiter(path, delimiter)) if len(rows) > 1 else None
    if sep is not None and all(sep in r[0] for r in rows if len(r) == 1):
        raise delimiter_error(f"labels file {str(path)!r}", sep, delimiter_fix(sep, path))
    if width == 1 and not delimiter and _whitespace_table(rows):
        raise WidemlError(f"labels file {str(path)!r} looks whitespace-separated (every line holds {len(rows[0][0].split())} "
                          f"fields, the first unique, e.g. {clip(rows[0][0])!r}), so each whole line would be one label; save it "
                          "comma-separated (id,label), or pass --delimiter ' ' (delimiter=' ') if one space separates the fields.")
    if width not in (1, 2):
        raise WidemlError(
            f"labels file {str(path)!r} has {width} columns; name the label column with --label-column NAME "
            "(label_column=) and, if needed, the id column with --id-column, or give one column (label) or two (id, label)."
        )
    for row, line in zip(rows, lines):
        if len(row) != width:
            raise WidemlError(f"labels file {str(path)!r} has {len(row)} columns in {line} but {width} in the first; make every line alike.")
    first = [c.lower() for c in rows[0]]
    body_numeric = len(rows) > 1 and all(is_number(r[-1]) for r in rows[1:])
    if first[-1] in _LABEL_NAMES or (width == 2 and (is_id_name(first[0]) or first[0] in _FILE_NAMES)) or (body_numeric and not is_number(rows[0][-1])):
        rows, lines = rows[1:], lines[1:]
    if not rows:
        raise WidemlError(f"labels file {str(path)!r} has a header but no labels; give one label per sample.")
    ids = np.array([r[0] for r in rows], dtype=str) if width == 2 else None
    if ids is not None:
        check_unique_ids(ids, f"labels file {str(path)!r}", lines)
    return ids, [r[-1] for r in rows], lines


def read_labels_file(path: str | os.PathLike, delimiter: str | None = None) -> tuple[np.ndarray | None, np.ndarray]:
    """Read a labels CSV/TSV (missing labels refused).

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
    ids, labels, _ = load_labels(Path(path), delimiter)
    return ids, labels


def read_labels(spec, delimiter: str | None = None) -> tuple[np.ndarray | None, np.ndarray]:
    """Labels from an array-like, a CSV/TSV file, a ``.npy`` file, ``file.h5:/dataset`` or a zarr array directory.

    Missing labels are refused (see :func:`load_labels` to leave them out).

    Returns
    -------
    ids : ndarray of str or None
    labels : ndarray of shape (n_samples,)
    """
    ids, labels, _ = load_labels(spec, delimiter)
    return ids, labels


def _raw_labels(spec, delimiter: str | None) -> tuple[np.ndarray | None, object, list[str] | None, str, bool]:
    """(ids, raw values, place names or None, where, from_text_file) of any labels spec."""
    if not isinstance(spec, (str, os.PathLike)):
        arr = np.asarray(spec)
        if arr.ndim != 1:
            raise WidemlError(f"labels must be 1-D (one label per sample), got shape {arr.shape}; flatten them.")
        return None, arr, None, "the labels", False
    file, dataset = split_hdf5_spec(str(spec))
    path = Path(file)
    where = f"labels file {str(spec)!r}"
    if dataset is not None:
        if not path.is_file():
            raise WidemlError(f"labels file {str(path)!r} does not exist; check the path.")
        with h5py.File(path, "r") as handle:
            if dataset.lstrip("/") not in handle:
                raise WidemlError(f"{str(path)!r} has no dataset {dataset!r} for the labels; check the name.")
            return None, coerce_labels_array(handle[dataset.lstrip("/")][()]), None, where, False
    if path.is_dir():
        try:
            return None, coerce_labels_array(zarr.open_array(str(path), mode="r")[...]), None, where, False
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
        return None, coerce_labels_array(arr), None, where, False
    ids, cells, lines = _file_cells(path, delimiter)
    return ids, cells, lines, where, True


def load_labels(spec, delimiter: str | None = None, drop_unlabelled: bool = False
                ) -> tuple[np.ndarray | None, np.ndarray, np.ndarray | None]:
    """Labels of any spec (as :func:`read_labels`), with missing labels refused or left out.

    Parameters
    ----------
    spec : array-like or path
    delimiter : str, optional
    drop_unlabelled : bool
        Leave out the rows whose label is missing instead of refusing them.

    Returns
    -------
    ids : ndarray of str or None
        Ids of the rows kept (two-column files).
    labels : ndarray
        Labels of the rows kept.
    keep : ndarray of bool or None
        None when every row has a label, else which rows of the source remain.
    """
    ids, values, places, where, text = _raw_labels(spec, delimiter)
    missing = missing_mask(np.asarray(values, dtype=object) if text else np.asarray(values))
    keep = None
    if missing.any():
        names = np.asarray(places if places is not None else [f"sample {i}" for i in range(len(missing))], dtype=object)
        shown = ids[missing] if ids is not None else names[missing]
        if not drop_unlabelled:
            raise missing_error(where, list(shown))
        if missing.all():
            raise WidemlError(f"every label in {where} is missing (NA, n/a, empty ...); give the samples labels.")
        keep = ~missing
        ids = ids[keep] if ids is not None else None
        values = np.asarray(values, dtype=object)[keep] if text else np.asarray(values)[keep]
    return ids, (coerce_labels(values) if text else values), keep


def coerce_labels_array(arr) -> np.ndarray:
    """Labels array from an HDF5/npy dataset: bytes decoded, 1-D required."""
    arr = np.asarray(arr)
    if arr.ndim != 1:
        raise WidemlError(f"labels must be 1-D (one label per sample), got shape {arr.shape}; flatten them.")
    if arr.dtype.kind in "SO":
        arr = np.array([v.decode() if isinstance(v, bytes) else str(v) for v in arr], dtype=str)
    return arr


def labels_for(labels, n: int, drop_unlabelled: bool = False, delimiter: str | None = None
               ) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None]:
    """(ids, y, keep) of a labels spec for ``n`` samples: y checked against them (against those of ``keep``
    when missing labels were dropped); all None without labels."""
    if labels is None:
        return None, None, None
    ids, y, keep = load_labels(labels, delimiter=delimiter, drop_unlabelled=drop_unlabelled)
    if keep is not None and len(keep) != n:
        raise WidemlError(f"the labels have {len(keep)} entries but X has {n} samples; give exactly one label per sample.")
    return ids, validate_labels(y, n if keep is None else int(keep.sum())), keep


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
        shown = listed(missing)
        raise WidemlError(f"{len(missing)} sample(s) in the labels file have no file in the folder ({shown}); fix the names or add the files "
                          "(to match a participants table by subject id, sub-XX in the file names, name its label column with --label-column).")
    seen: set[Path] = set()
    for f in out:
        if f in seen:
            raise WidemlError(f"file {f.name!r} is listed twice in the labels file; give each sample one line.")
        seen.add(f)
    return out
