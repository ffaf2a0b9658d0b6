"""The scan of a CSV/TSV source: its layout, label and id columns, before any X is parsed.

The scan reads the file once as text: it finds the delimiter, whether the
first line is a header, the label and id columns (``label_column``,
``id_column``, or the one column named like sample ids), and counts the data
rows, so labels and ids are checked before any X is written. See
:mod:`wideml.sources.delimited` for the rules and the stream that follows.
"""

from __future__ import annotations

import csv
import os
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from wideml.exceptions import WidemlError
from wideml.sources.labels import coerce_labels, delimiter_for, open_text
from wideml.storage.label_cells import (
    check_unique_columns,
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

CSV_SUFFIXES = (".csv", ".tsv", ".tab", ".txt", ".csv.gz", ".tsv.gz", ".txt.gz")


@dataclass
class CsvLayout:
    """What the scan of a CSV file found.

    Attributes
    ----------
    path : Path
    delimiter : str
    has_header : bool
    width : int
        Cells per line.
    n_samples : int
        Data rows.
    feature_cols : list of int
        Columns holding X, in order.
    feature_names : ndarray of str or None
        Header names of those columns.
    labels, sample_ids : ndarray or None
        From ``label_column`` / ``id_column`` (rows kept only).
    skip_rows : frozenset of int
        Data rows (0-based, header not counted) left out, e.g. for a missing label.
    """

    path: Path
    delimiter: str
    has_header: bool
    width: int
    n_samples: int
    feature_cols: list[int]
    feature_names: np.ndarray | None
    labels: np.ndarray | None
    sample_ids: np.ndarray | None
    skip_rows: frozenset = field(default_factory=frozenset)

    @property
    def n_features(self) -> int:
        return len(self.feature_cols)


def _column(spec: int | str | None, header: list[str] | None, width: int, what: str, path: Path) -> int | None:
    """Index of a column given by header name or 0-based index (negative counts from the end)."""
    if spec is None:
        return None
    text = str(spec).strip()
    if header is not None and text in header:
        check_unique_columns(header, text, repr(str(path)), f"--{what.replace(' ', '-')}")
        return header.index(text)
    try:
        index = int(text)
    except ValueError:
        if header is None:
            raise WidemlError(f"{what} {text!r} is a name but {str(path)!r} has no header line; give the column's 0-based index instead.") from None
        shown = listed(header)
        raise WidemlError(f"{str(path)!r} has no column {clip(text)!r} for the {what} (columns: {shown}); give a header name or a 0-based index.") from None
    if not -width <= index < width:
        raise WidemlError(f"{what} index {index} is outside the {width} columns of {str(path)!r}; give a 0-based index below {width}.")
    return index % width


def _guess_id_column(header: list[str], lab: int | None, path: Path) -> int | None:
    """The one column named like sample ids (:func:`~wideml.storage.label_cells.is_id_name`), None if there is none.

    A numeric ``id`` column must never become a feature silently; two such columns are refused (which one is meant?).
    """
    named = [i for i, h in enumerate(header) if i != lab and is_id_name(h)]
    if len(named) > 1:
        raise WidemlError(f"{str(path)!r} has {len(named)} columns named like sample ids ({listed([header[i] for i in named])}); "
                          "name the id column with --id-column (id_column=), and rename any of them that holds a feature.")
    return named[0] if named else None


def _check_guessed_ids(ids: np.ndarray, name: str, path: Path) -> None:
    """Take the guessed id column only when its values are unique and non-empty, and say so on stderr in one line."""
    empty = [str(v) for v in ids if not str(v).strip()]
    twice = [v for v, c in zip(*np.unique(ids, return_counts=True)) if c > 1]
    if empty or twice:
        what = "empty values" if empty else f"repeated values such as {clip(twice[0])!r}"
        raise WidemlError(f"column {clip(name)!r} of {str(path)!r} is named like sample ids but has {what}; name the id column "
                          "with --id-column (id_column=), or rename that column if it holds a feature.")
    print(f"wideml: using column {clip(name)!r} of {path.name!r} as the sample ids (named like an id, values unique); "
          "pass --id-column to choose another, or rename it to keep it as a feature.", file=sys.stderr)


def _first_record(path: Path, delimiter: str) -> list[str]:
    try:
        with open_text(path) as f:
            for row in csv.reader(f, delimiter=delimiter):
                if any(cell.strip() for cell in row):
                    return [cell.strip() for cell in row]
    except (OSError, UnicodeDecodeError, csv.Error, EOFError) as exc:
        raise WidemlError(f"cannot read {str(path)!r} as text ({exc}); give a CSV file of numbers.") from None
    raise WidemlError(f"{str(path)!r} is empty; give one line per sample.")


def scan_csv(
    path: str | os.PathLike,
    *,
    delimiter: str | None = None,
    header: bool | str = "auto",
    label_column: int | str | None = None,
    id_column: int | str | None = None,
    drop_unlabelled: bool = False,
) -> CsvLayout:
    """Find the layout of a CSV file and read its label and id columns (X is not parsed).

    Parameters
    ----------
    path : path-like
    delimiter : str, optional
        Default tab for ``.tsv``, else comma.
    header : {"auto", True, False}
        Whether the first line holds column names; ``"auto"`` decides from
        whether it has text in a feature column (or a named label/id column).
    label_column, id_column : int or str, optional
        Column (name or 0-based index) holding the labels / sample ids.
        Without ``id_column``, the one column named like sample ids (``id``,
        ``participant_id`` ...) is the id column if its values are unique;
        otherwise refused, asking for ``id_column``.
    drop_unlabelled : bool
        Leave out rows whose label is missing instead of refusing them.

    Returns
    -------
    CsvLayout
    """
    path = Path(path)
    delim = delimiter_for(path, delimiter)
    first = _first_record(path, delim)
    width = len(first)
    sep = None if delimiter else other_delimiter(first, delim)
    if sep is not None:
        shown = "'\\t'" if sep == "\t" else repr(sep)
        raise delimiter_error(repr(str(path)), sep, f"pass --delimiter {shown} (delimiter={shown})")
    named = [s for s in (label_column, id_column) if s is not None and not str(s).strip().lstrip("-").isdigit()]
    if header == "auto":
        special = {_column(s, None, width, "column", path) for s in (label_column, id_column)
                   if s is not None and str(s).strip().lstrip("-").isdigit()}
        has_header = bool(named) or any(not is_number(c) for i, c in enumerate(first) if i not in special)
    else:
        has_header = bool(header)
    names = first if has_header else None
    lab = _column(label_column, names, width, "label column", path)
    sid = _column(id_column, names, width, "id column", path)
    if lab is not None and lab == sid:
        raise WidemlError("the label column and the id column are the same column; give two different columns.")
    guessed = sid is None and id_column is None and names is not None
    if guessed:
        sid = _guess_id_column(names, lab, path)
        guessed = sid is not None
    feature_cols = [i for i in range(width) if i not in (lab, sid)]
    if not feature_cols:
        raise WidemlError(f"{str(path)!r} has no feature columns besides the label and id columns; check the column options.")
    labels, ids, lines, n = [], [], [], 0
    with open_text(path) as f:
        reader = csv.reader(f, delimiter=delim)
        skip = has_header
        for row in reader:
            if not any(cell.strip() for cell in row):
                continue
            if skip:
                skip = False
                continue
            if len(row) != width:
                raise WidemlError(
                    f"line {reader.line_num} of {str(path)!r} has {len(row)} values but the first line has {width}; "
                    "every line needs the same number of columns."
                )
            n += 1
            lines.append(f"line {reader.line_num}")
            if lab is not None:
                labels.append(row[lab].strip())
            if sid is not None:
                ids.append(row[sid].strip())
    if n == 0:
        raise WidemlError(f"{str(path)!r} has no data rows; give one line per sample.")
    keep = np.ones(n, dtype=bool)
    if lab is not None:
        missing = missing_mask(np.array(labels, dtype=object))
        if missing.any() and not drop_unlabelled:
            raise missing_error(f"the label column of {str(path)!r}", [ln for ln, m in zip(lines, missing) if m])
        if missing.all():
            raise WidemlError(f"every label in the label column of {str(path)!r} is missing (NA, n/a, empty ...); give the samples labels.")
        keep = ~missing
    kept_lines = [ln for ln, k in zip(lines, keep) if k]
    sample_ids = np.array(ids, dtype=str)[keep] if sid is not None else None
    if sample_ids is not None and guessed:
        _check_guessed_ids(sample_ids, first[sid], path)
    elif sample_ids is not None:
        check_unique_ids(sample_ids, f"the id column of {str(path)!r}", kept_lines)
    return CsvLayout(
        path=path, delimiter=delim, has_header=has_header, width=width, n_samples=int(keep.sum()), feature_cols=feature_cols,
        feature_names=np.array([first[i] for i in feature_cols], dtype=str) if has_header else None,
        labels=coerce_labels(np.array(labels, dtype=object)[keep]) if lab is not None else None,
        sample_ids=sample_ids, skip_rows=frozenset(np.flatnonzero(~keep).tolist()),
    )


def keep_rows(layout: CsvLayout, keep: np.ndarray) -> CsvLayout:
    """The layout with only the rows ``keep`` (a mask over its ``n_samples`` rows, e.g. from a labels file) left in."""
    keep = np.asarray(keep, dtype=bool)
    if keep.shape != (layout.n_samples,):
        raise WidemlError(f"the labels have {keep.size} entries but {str(layout.path)!r} has {layout.n_samples} rows; "
                          "give exactly one label per row.")
    rows = np.array([r for r in range(layout.n_samples + len(layout.skip_rows)) if r not in layout.skip_rows])
    return replace(layout, n_samples=int(keep.sum()), skip_rows=layout.skip_rows | frozenset(rows[~keep].tolist()),
                   labels=None if layout.labels is None else layout.labels[keep],
                   sample_ids=None if layout.sample_ids is None else layout.sample_ids[keep])
