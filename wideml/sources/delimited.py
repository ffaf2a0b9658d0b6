"""CSV/TSV sources: one row per sample, scanned once, then streamed in blocks of rows.

The file is opened twice: a scan (:mod:`wideml.sources.delimited_scan`)
counts the rows (and collects the label and id columns, so labels are checked
before any X is written), then a stream (:class:`CsvSource`) parses blocks of rows into float arrays. Only one block of rows (plus the text
of one line) is in memory at a time. ``.gz`` files are read through gzip.

Rows whose label is missing (``NA``, ``n/a``, empty ...: see
:mod:`wideml.storage.label_cells`) are refused naming their lines, or left out
of X, the labels and the ids with ``drop_unlabelled``. A header naming the
label or id column twice, a sample id given twice, and a file whose first line
is one column holding ``;`` (another separator) are refused.

Without ``id_column`` a column whose header names sample ids (``id``,
``participant_id``, ``subject``, ``sample_id`` ...: the rule of
:func:`wideml.storage.label_cells.is_id_name`, shared with labels tables) is
never read as a feature: the one such column becomes the sample ids when its
values are unique (said on stderr in one line); two such columns, or repeated
or empty values, are refused asking for ``--id-column``.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from operator import itemgetter
from pathlib import Path

import numpy as np

from wideml.exceptions import WidemlError
from wideml.sources.base import STREAM, IngestOptions, Source, first
from wideml.sources.delimited_scan import (
    CSV_SUFFIXES,
    CsvLayout,
    is_number,
    keep_rows,
    scan_csv,
)
from wideml.sources.labels import labels_for, open_text, validate_labels
from wideml.sources.locations import Location
from wideml.storage.casts import CastCheck, check_cast_dtypes

__all__ = ["CSV_SUFFIXES", "CsvSource", "iter_csv_blocks"]


class CsvSource(Source):
    """A CSV/TSV file (optionally ``.gz``): one row per sample, read as a stream of row blocks.

    Labels come from ``label_column`` or from ``labels`` (not both); with
    ``drop_unlabelled`` rows whose label is missing are left out of X, the
    labels and the ids. Values are parsed as float64.
    """

    kind = "csv"
    access = STREAM
    accepts = frozenset({"label_column", "id_column"})

    def __init__(self, layout: CsvLayout):
        self.layout = layout
        self.shape = (layout.n_samples, layout.n_features)
        self.dtype = np.dtype(np.float64)
        self.feature_ids = layout.feature_names
        self.description, self.what, self.title = f"csv:{layout.path}", repr(str(layout.path)), f"ingest {layout.path.name}"

    @classmethod
    def open(cls, location: Location, options: IngestOptions) -> CsvSource:
        """Scan the file (labels, ids, row count), then apply a labels file's rows and labels."""
        if options.labels is not None and options.label_column is not None:
            raise WidemlError("labels were given both as --labels and as --label-column; give them one way.")
        layout = scan_csv(location.path, delimiter=options.delimiter, header=options.header, label_column=options.label_column,
                          id_column=options.id_column, drop_unlabelled=options.drop_unlabelled)
        ids, y, keep = labels_for(options.labels, layout.n_samples, options.drop_unlabelled, options.delimiter)
        if keep is not None:
            layout = keep_rows(layout, keep)
        if layout.labels is not None:
            y = validate_labels(layout.labels, layout.n_samples)
        src = cls(layout)
        src.labels, src.sample_ids = y, first(layout.sample_ids, ids)
        return src

    def row_stream(self, rows: int, dtype, allow_lossy_cast: bool = False) -> Iterator[np.ndarray]:
        return iter_csv_blocks(self.layout, rows, dtype, allow_lossy_cast)


def _bad_cell(values, line: int, cols: list[int], path: Path) -> WidemlError:
    for value, col in zip(values, cols):
        if not is_number(value):
            what = "an empty cell" if not value.strip() else f"the non-numeric value {value.strip()!r}"
            return WidemlError(
                f"{str(path)!r} has {what} at line {line}, column {col + 1}; X must be all numbers — "
                "name text columns with --label-column/--id-column, or clean the file."
            )
    return WidemlError(f"{str(path)!r} has a value at line {line} that is not a number; X must be all numbers.")


def iter_csv_blocks(layout: CsvLayout, rows: int, dtype, allow_lossy_cast: bool = False) -> Iterator[np.ndarray]:
    """Yield X in blocks of ``rows`` samples (the last may be shorter), parsed to ``dtype``.

    Values are parsed as float64 and cast to ``dtype`` block by block; a cast
    that would change a value is refused naming it
    (:mod:`wideml.storage.casts`) unless ``allow_lossy_cast``.

    Parameters
    ----------
    layout : CsvLayout
    rows : int
    dtype : dtype
    allow_lossy_cast : bool, default False

    Yields
    ------
    ndarray of shape (<= rows, n_features)
    """
    p, cols, path = layout.n_features, layout.feature_cols, layout.path
    check_cast_dtypes(np.float64, dtype, repr(str(path)), allow_lossy_cast)
    cast = CastCheck(dtype, repr(str(path)), allow_lossy_cast)
    pick = None if len(cols) == layout.width else itemgetter(*cols)
    block = np.empty((rows, p), dtype=np.float64)
    k, r0, data_row = 0, 0, -1
    with open_text(path) as f:
        reader = csv.reader(f, delimiter=layout.delimiter)
        skip = layout.has_header
        for row in reader:
            if not any(cell.strip() for cell in row):
                continue
            if skip:
                skip = False
                continue
            data_row += 1
            if data_row in layout.skip_rows:
                continue
            if len(row) != layout.width:
                raise WidemlError(
                    f"line {reader.line_num} of {str(path)!r} has {len(row)} values but the first line has {layout.width}; "
                    "every line needs the same number of columns."
                )
            values = row if pick is None else pick(row)
            if p == 1 and pick is not None:
                values = [values]
            try:
                block[k] = np.asarray(values, dtype=np.float64)
            except ValueError:
                raise _bad_cell(values, reader.line_num, cols, path) from None
            k += 1
            if k == rows:
                yield cast(block, r0, 0)
                block, k, r0 = np.empty((rows, p), dtype=np.float64), 0, r0 + rows
    if k:
        yield cast(block[:k], r0, 0)
