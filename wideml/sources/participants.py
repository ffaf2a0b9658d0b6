"""Labels from a participants table (BIDS ``participants.tsv`` or any CSV/TSV), matched to files by subject id.

``--labels FILE --label-column NAME [--id-column NAME]`` for a folder source:
the table has a header row; the label column is named (or given as a
0-based index). Without ``--id-column`` the id column is guessed only when
that is unambiguous: the one column named like a subject id
(``participant_id``, ``subject``, ``id`` ...), else the one column whose
values name the files' subjects; otherwise the user is asked for it, with the
candidates. A header naming the label or id column twice is refused. An id ``sub-01`` or ``01`` matches every file whose
name carries the BIDS entity ``sub-01`` (``sub-01_T1w.nii.gz``,
``sub-01_ses-2_task-x_bold.nii.gz``), whatever the table's row order; a
subject's label goes to all its files (and every volume of a 4-D file).

Labels ``n/a`` (BIDS), ``NA``, ``#N/A``, ``<NA>``, ``NaN``, ``null``, ``None`` or empty (any case) count as
missing (:mod:`wideml.storage.label_cells`). Files without a
label and ids without a file are refused in one sentence (how many, up to 5
names) — or, with ``drop_unlabelled`` (``--drop-unlabelled``), files without
a label (no row, or a missing label) are left out; ids without a file are
still refused unless their label is missing too.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import numpy as np

from wideml.exceptions import WidemlError
from wideml.sources.labels import (
    coerce_labels,
    delimiter_fix,
    labels_delimiter,
    not_utf8_error,
    open_text,
)
from wideml.storage.label_cells import (
    check_unique_columns,
    clip,
    delimiter_error,
    is_id_name,
    is_missing,
    listed,
    other_delimiter,
)

_SUBJECT = re.compile(r"(?:^|_)sub-([A-Za-z0-9]+)(?=[_.]|$)")


def subject_of(name: str) -> str | None:
    """The BIDS subject label in a file name or stem (``sub-01_T1w`` → ``01``), or None."""
    found = _SUBJECT.search(name)
    return found.group(1) if found else None


def subject_key(value: str) -> str:
    """A table id as a subject label: ``sub-01`` and ``01`` both give ``01``."""
    value = str(value).strip()
    return value.removeprefix("sub-")


def _column(header: list[str], name, path: Path, flag: str) -> int:
    if str(name) in header:
        check_unique_columns(header, str(name), f"labels file {str(path)!r}", flag)
        return header.index(str(name))
    if str(name).isdigit() and int(name) < len(header):
        return int(name)
    raise WidemlError(f"labels file {str(path)!r} has no column {clip(name)!r} (its columns: {listed(header)}); "
                      f"name one of them with {flag}.")


def _guess_id_column(header: list[str], body: list[list[str]], lab: int, path: Path, file_names) -> int:
    """The id column when only one can be meant: one column named like an id, else one whose values name the files' subjects."""
    named = [i for i, h in enumerate(header) if i != lab and is_id_name(h)]
    if len(named) == 1:
        return named[0]
    if len(named) > 1 and len({header[i] for i in named}) == 1:
        check_unique_columns(header, header[named[0]], f"labels file {str(path)!r}", "--id-column")
    subjects = {subject_of(name) for name in file_names or []} - {None}
    matching = []
    if subjects:
        for i in (named or [i for i in range(len(header)) if i != lab]):
            hits = len(subjects & {subject_key(r[i]) for r in body})
            if hits * 2 >= len(subjects):
                matching.append(i)
    if len(matching) == 1:
        return matching[0]
    candidates = [header[i] for i in (matching or named or [i for i in range(len(header)) if i != lab])]
    raise WidemlError(f"labels file {str(path)!r}: cannot tell which column holds the subject ids (candidates: {listed(candidates)}); "
                      "name it with --id-column.")


def read_table(path, label_column, id_column=None, delimiter: str | None = None,
               file_names: list[str] | None = None) -> tuple[np.ndarray, list[str]]:
    """Ids and raw label cells of a participants table.

    Parameters
    ----------
    path : path-like
        CSV/TSV (optionally ``.gz``) with a header row.
    label_column, id_column : str or int
        Column names (or 0-based indices); without ``id_column`` the one
        column named like a subject id, else the one column whose values
        name the subjects of ``file_names``; otherwise refused, listing the
        candidates.
    delimiter : str, optional
    file_names : list of str, optional
        The folder's file names, to recognise the id column by its values.

    Returns
    -------
    ids : ndarray of str, shape (n_rows,)
    cells : list of str, the label column's raw cells
    """
    path = Path(path)
    try:
        with open_text(path) as f:
            rows = [[c.strip() for c in row] for row in csv.reader(f, delimiter=labels_delimiter(path, delimiter)) if any(c.strip() for c in row)]
    except FileNotFoundError:
        raise WidemlError(f"labels file {str(path)!r} does not exist; check the path.") from None
    except UnicodeDecodeError:
        raise not_utf8_error(path) from None
    except (OSError, csv.Error) as exc:
        raise WidemlError(f"cannot read labels file {str(path)!r} ({type(exc).__name__}); give a CSV/TSV with a header row.") from None
    if len(rows) < 2:
        raise WidemlError(f"labels file {str(path)!r} has no rows below its header; give one row per participant.")
    header = rows[0]
    sep = other_delimiter(header, labels_delimiter(path, delimiter))
    if sep is not None:
        raise delimiter_error(f"labels file {str(path)!r}", sep, delimiter_fix(sep, path))
    lab = _column(header, label_column, path, "--label-column")
    for i, row in enumerate(rows[1:], 2):
        if len(row) != len(header):
            raise WidemlError(f"labels file {str(path)!r} has {len(row)} columns in line {i} but {len(header)} in its header; make every line alike.")
    if id_column is None:
        idx = _guess_id_column(header, rows[1:], lab, path, file_names)
    else:
        idx = _column(header, id_column, path, "--id-column")
    if idx == lab and id_column is not None:
        raise WidemlError(f"labels file {str(path)!r}: --id-column and --label-column both name column {clip(header[lab])!r}; "
                          "the id column and the label column must differ: give two different columns.")
    if idx == lab:
        raise WidemlError(f"labels file {str(path)!r}: the id column and the label column are both {clip(header[lab])!r}; "
                          "name the id column with --id-column.")
    return np.array([r[idx] for r in rows[1:]], dtype=str), [r[lab] for r in rows[1:]]


def match_subjects(file_names: list[str], ids: np.ndarray, cells: list[str], where: str,
                   drop_unlabelled: bool = False) -> tuple[list[int], np.ndarray]:
    """Give each file its subject's label.

    Parameters
    ----------
    file_names : list of str
        The folder's files (names), in sample order.
    ids, cells : the table's id column and raw label cells.
    where : str
        The labels file, for the error.
    drop_unlabelled : bool
        Leave out files without a label instead of refusing.

    Returns
    -------
    keep : list of int
        Indices into ``file_names`` of the labelled files, in their order.
    labels : ndarray of shape (len(keep),)
        Integers when every label is one, else strings.
    """
    table: dict[str, str] = {}
    for raw, cell in zip(ids, cells):
        key = subject_key(raw)
        if key in table:
            raise WidemlError(f"participant {clip(raw)!r} is listed twice in labels file {where!r}; give each participant one row.")
        table[key] = cell
    keep, no_row, no_label, seen = [], [], [], set()
    for i, name in enumerate(file_names):
        subject = subject_of(name)
        if subject is None or subject not in table:
            no_row.append(name)
        elif is_missing(table[subject]):
            no_label.append(name)
            seen.add(subject)
        else:
            keep.append(i)
            seen.add(subject)
    no_file = [f"sub-{k}" for k, cell in table.items() if k not in seen and not (drop_unlabelled and is_missing(cell))]
    parts = []
    if no_row and not drop_unlabelled:
        parts.append(f"{len(no_row)} file(s) have no row in it ({listed(no_row, 3)})")
    if no_label and not drop_unlabelled:
        parts.append(f"{len(no_label)} file(s) have a missing label such as n/a ({listed(no_label, 3)})")
    if no_file:
        parts.append(f"{len(no_file)} participant id(s) have no file in the folder ({listed(no_file, 3)})")
    if parts:
        fix = "fix the table or the folder" + ("" if drop_unlabelled or not (no_row or no_label) else
                                                ", or pass --drop-unlabelled to leave those files out")
        raise WidemlError(f"labels file {where!r} (matched by sub-XX in file names): {'; '.join(parts)}; {fix}.")
    if not keep:
        raise WidemlError(f"no file has a label in labels file {where!r}; check the subject ids (sub-XX in the file names).")
    return keep, coerce_labels([table[subject_of(file_names[i])] for i in keep])
