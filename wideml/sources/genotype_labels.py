"""Labels tables of genotype sources: PLINK phenotype files and wider tables, read by column.

PLINK reads phenotypes from whitespace-separated files ``FID IID pheno ...``
(``plink --pheno``, optionally with a header ``FID IID name``; plink2 writes
``#FID``/``#IID``), and cohorts often keep phenotypes beside covariates in one
CSV. For a PLINK 1 fileset or a VCF Zarr store, :func:`read_table` reads a
labels file that is such a table: whitespace-separated, more than two
columns, or with ``label_column``/``id_column`` given. Other labels (one or
two delimited columns, ``.npy``, HDF5, zarr, arrays) are read as for every
source, by :func:`wideml.sources.labels.load_labels`.

* Separator: ``delimiter`` when given (``' '``: any run of spaces or tabs);
  else the extension's (comma; tab for ``.tsv``) when the first line holds
  it; else any run of spaces or tabs.
* Header: a first line naming an id column (``FID``, ``IID``, ``#IID``,
  ``id``, ``sample_id`` ...), a column given by name, a label column name
  (``pheno``, ``label`` ...), or text above a numeric last column.
* Columns: ``label_column``/``id_column`` by header name or 0-based index.
  Without them, two columns are (IID, label) and three are (FID, IID, label)
  (PLINK's layout: without a header, or with ``FID IID`` first); a header's
  ``IID``/``FID`` (or one id-like name) picks the id column; any other table
  needs ``label_column``.
* Missing labels: the shared markers (``NA``, empty ...; see
  :mod:`wideml.storage.label_cells`) and PLINK's ``-9``, refused or, with
  ``drop_unlabelled``, left out. A label column of exactly 0, 1 and 2 is
  refused: PLINK reads 0 as missing beside 1 = control, 2 = case.
* Matching (:func:`wideml.sources.genotypes.select_samples`): by (FID, IID)
  when both the table and the source (a ``.fam``) have families, else by IID.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from wideml.exceptions import WidemlError
from wideml.sources.labels import coerce_labels, delimiter_for, labels_delimiter, open_text
from wideml.sources.locations import split_hdf5_spec
from wideml.storage.label_cells import (
    check_unique_columns,
    check_unique_ids,
    clip,
    is_id_name,
    is_number,
    listed,
    missing_error,
    missing_mask,
)

#: PLINK's missing-phenotype code.
PLINK_MISSING = "-9"
#: Header names (lower-case, ``#`` stripped) of a family-id and an individual-id column.
FID_NAMES = frozenset({"fid", "family_id", "famid", "family"})
IID_NAMES = frozenset({"iid", "individual_id", "indid"})
#: Header names of a label column (the last column's name marks a header).
LABEL_NAMES = frozenset({"pheno", "phenotype", "label", "labels", "y", "class", "target", "diagnosis", "dx", "outcome"})


@dataclass(frozen=True)
class LabelTable:
    """The rows of a labels table that have a label.

    Attributes
    ----------
    fids : ndarray of str, shape (n_rows,), or None
        Family ids, when the table has them.
    ids : ndarray of str, shape (n_rows,)
        Individual (sample) ids.
    labels : ndarray of shape (n_rows,)
        Labels as given (:func:`wideml.sources.labels.coerce_labels`).
    """

    fids: np.ndarray | None
    ids: np.ndarray
    labels: np.ndarray


def _table_path(spec) -> Path | None:
    """The path of a labels spec that is a text file (not ``.npy``, HDF5, a folder or an array), else None."""
    if not isinstance(spec, (str, os.PathLike)):
        return None
    file, dataset = split_hdf5_spec(str(spec))
    path = Path(file)
    if dataset is not None or path.suffix.lower() == ".npy" or not path.is_file():
        return None
    return path


def _separator(path: Path, delimiter: str | None) -> str | None:
    """The field separator, None for any run of whitespace."""
    if delimiter == " ":
        return None
    if delimiter:
        return labels_delimiter(path, delimiter)
    default = delimiter_for(path)
    with open_text(path) as f:
        for line in f:
            if line.strip():
                return default if default in line else None
    return default


def _rows(path: Path, delimiter: str | None) -> tuple[list[list[str]], list[str]]:
    """Non-blank rows of the table (cells stripped) and their line names."""
    where = f"labels file {str(path)!r}"
    rows, lines = [], []
    try:
        sep = _separator(path, delimiter)
        with open_text(path) as f:
            if sep is None:
                for number, line in enumerate(f, 1):
                    if line.split():
                        rows.append(line.split())
                        lines.append(f"line {number}")
            else:
                reader = csv.reader(f, delimiter=sep)
                for row in reader:
                    row = [cell.strip() for cell in row]
                    if any(row):
                        rows.append(row)
                        lines.append(f"line {reader.line_num}")
    except (OSError, UnicodeDecodeError, csv.Error, EOFError) as exc:
        raise WidemlError(f"cannot read {where} ({type(exc).__name__}); give a text table of sample ids and labels.") from None
    if not rows:
        raise WidemlError(f"{where} is empty; give one label per sample.")
    return rows, lines


def _has_header(rows: list[list[str]], names: list[str]) -> bool:
    first = [c.lower().lstrip("#") for c in rows[0]]
    if any(c in FID_NAMES or c in IID_NAMES or is_id_name(c) for c in first) or first[-1] in LABEL_NAMES:
        return True
    if any(n in rows[0] for n in names):
        return True
    return len(rows) > 1 and not is_number(rows[0][-1]) and all(is_number(r[-1]) for r in rows[1:])


def _index(spec, header: list[str] | None, width: int, where: str, flag: str) -> int:
    """A column given by header name or 0-based index."""
    text = str(spec).strip()
    if header is not None and text in header:
        check_unique_columns(header, text, where, flag)
        return header.index(text)
    try:
        index = int(text)
    except ValueError:
        shown = f"its columns: {listed(header)}" if header is not None else "it has no header line"
        raise WidemlError(f"{where} has no column {clip(text)!r} ({shown}); name one of its columns with {flag}, "
                          "or give a 0-based index.") from None
    if not 0 <= index < width:
        raise WidemlError(f"{flag} {index} is outside the {width} columns of {where}; give a 0-based index below {width}.")
    return index


def _columns(header: list[str] | None, width: int, label_column, id_column, where: str) -> tuple[int, int, int | None]:
    """(label, id, family id or None) column indices."""
    lower = [c.lower().lstrip("#") for c in header] if header is not None else None

    def named(names) -> int | None:
        hits = [i for i, c in enumerate(lower or []) if c in names]
        return hits[0] if len(hits) == 1 else None

    plink_layout = lower is None or (width >= 3 and lower[0] in FID_NAMES and lower[1] in IID_NAMES)
    if label_column is not None:
        lab = _index(label_column, header, width, where, "--label-column")
    elif width == 2:
        lab = 1
    elif width == 3 and (plink_layout or lower[-1] in LABEL_NAMES):
        lab = 2
    else:
        raise WidemlError(f"{where} has {width} columns; name the label column with --label-column NAME|INDEX (label_column=) "
                          "and, if needed, the id column with --id-column (id_column=).")
    if id_column is not None:
        idc = _index(id_column, header, width, where, "--id-column")
    elif lower is not None:
        idc = named(IID_NAMES)
        if idc is None:
            like = [i for i, c in enumerate(lower) if i != lab and is_id_name(c)]
            idc = like[0] if len(like) == 1 else (1 - lab if width == 2 else (1 if plink_layout and lab != 1 else None))
    else:
        idc = 1 - lab if width == 2 else (1 if lab != 1 else None)
    if idc is None:
        raise WidemlError(f"{where}: cannot tell which column holds the sample ids; name it with --id-column NAME|INDEX (id_column=).")
    if idc == lab:
        raise WidemlError(f"{where}: the id column and the label column are both column {lab}; name two different columns.")
    fid = named(FID_NAMES) if lower is not None else (0 if width >= 3 and idc == 1 else None)
    return lab, idc, (fid if fid not in (lab, idc) else None)


def read_table(spec, label_column=None, id_column=None, delimiter: str | None = None,
               drop_unlabelled: bool = False) -> LabelTable | None:
    """The labels table of a genotype source (see the module docstring), or None for labels read as for every source.

    Parameters
    ----------
    spec : array-like or path
        The ``labels`` given.
    label_column, id_column : int or str, optional
        Columns of the table, by header name or 0-based index.
    delimiter : str, optional
        ``--delimiter`` (``' '``: any whitespace).
    drop_unlabelled : bool
        Leave out rows whose label is missing instead of refusing them.

    Returns
    -------
    LabelTable or None
        None when ``spec`` is not a text table this module reads (one column, two delimited columns,
        ``.npy``, HDF5, zarr, an array) and no column is named.
    """
    flags = label_column is not None or id_column is not None
    path = _table_path(spec)
    if path is None:
        if flags and not isinstance(spec, (str, os.PathLike)):
            raise WidemlError("--label-column/--id-column (label_column/id_column) name columns of a labels file; give the "
                              "labels as a CSV/TSV or PLINK phenotype file, or drop them.")
        return None
    rows, lines = _rows(path, delimiter)
    width = len(rows[0])
    whitespace = _separator(path, delimiter) is None
    if not flags and (width == 1 or (width == 2 and not whitespace)):
        return None
    where = f"labels file {str(path)!r}"
    for row, line in zip(rows, lines):
        if len(row) != width:
            raise WidemlError(f"{where} has {len(row)} columns in {line} but {width} in the first; make every line alike.")
    names = [str(c) for c in (label_column, id_column) if c is not None]
    header = rows[0] if _has_header(rows, names) else None
    lab, idc, fid = _columns(header, width, label_column, id_column, where)
    body, places = (rows[1:], lines[1:]) if header is not None else (rows, lines)
    if not body:
        raise WidemlError(f"{where} has a header but no labels; give one label per sample.")
    ids = np.array([r[idc] for r in body], dtype=str)
    fids = np.array([r[fid] for r in body], dtype=str) if fid is not None else None
    keys = ids if fids is None else np.char.add(np.char.add(fids, " "), ids)
    check_unique_ids(keys, where, places)
    cells = np.array([r[lab] for r in body], dtype=object)
    missing = missing_mask(cells) | (cells == PLINK_MISSING)
    if missing.any():
        if not drop_unlabelled:
            raise missing_error(where, list(keys[missing]))
        if missing.all():
            raise WidemlError(f"every label in {where} is missing (-9, NA, empty ...); give the samples labels.")
        ids, cells = ids[~missing], cells[~missing]
        fids = fids[~missing] if fids is not None else None
    if set(cells.tolist()) == {"0", "1", "2"}:
        raise WidemlError(f"{where} holds the labels 0, 1 and 2, which PLINK reads as missing, control and case; write missing "
                          "labels as -9 or NA (or recode them) so that 0 is not taken as a third class.")
    return LabelTable(fids, ids, coerce_labels(cells))


__all__ = ["LabelTable", "read_table"]
