"""What every label source shares: the missing-label markers, short lists of offenders, duplicate ids, delimiters.

A label cell is *missing* when it is None, NaN, pandas NA, or text that is
empty, whitespace only, or (any case) one of :data:`MISSING_MARKERS`: pandas'
default ``na_values`` (``NA``, ``N/A``, ``#N/A``, ``#N/A N/A``, ``#NA``,
``<NA>``, ``NaN``, ``-NaN``, ``NULL``, ``None``, ``1.#IND``, ``1.#QNAN`` ...,
the spellings spreadsheets, R and pandas write for a missing cell) plus
``N.A.``. ``-``, ``?`` and ``0`` are not markers: they can be real classes.
Every label source (participants tables, CSV/TSV label columns,
labels files, label arrays given in Python) uses :func:`is_missing`, so a
class called "NA" never reaches a store or a model: such samples are refused
in one sentence naming the first few, or left out with ``--drop-unlabelled``
(``drop_unlabelled=True``) where the source allows it.

Messages list at most :data:`SHOWN` items, then "and N more", and clip long
names, so a sentence stays short whatever the file holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from wideml.exceptions import WidemlError

#: Label texts that mean "no label" (compared stripped and lower-cased): pandas' default ``na_values`` and "n.a.".
MISSING_MARKERS = frozenset({"", "na", "n/a", "n.a.", "nan", "-nan", "null", "none", "#n/a", "#n/a n/a", "#na", "<na>",
                             "1.#ind", "-1.#ind", "1.#qnan", "-1.#qnan"})
#: Column names that mean "sample ids", compared by :func:`is_id_name` (the rule shared by every labels table and CSV source).
ID_NAMES = frozenset({"participant_id", "participant", "participants", "subject_id", "subject", "subjects", "sub", "subj",
                      "subj_id", "subjid", "sub_id", "id", "ids", "sample_id", "sampleid", "sample", "samples"})
#: Offending items named in one message.
SHOWN = 5
#: The fix for missing labels, in every message about them.
DROP_FIX = "give them labels, or pass --drop-unlabelled (drop_unlabelled=True) to leave those samples out"


def is_missing(value) -> bool:
    """Whether one label value means "no label" (None, NaN, pandas NA, or a missing marker such as ``NA``)."""
    if value is None:
        return True
    if isinstance(value, (bytes, np.bytes_)):
        value = value.decode("utf-8", errors="replace")
    if isinstance(value, (str, np.str_)):
        return value.strip().lower() in MISSING_MARKERS
    if isinstance(value, (float, np.floating)):
        return bool(np.isnan(value))
    return type(value).__name__ in ("NAType", "NaTType")


def is_id_name(name) -> bool:
    """Whether a column name means sample ids (``id``, ``participant_id``, ``Subject ID``, ``sample-id`` ...: :data:`ID_NAMES`).

    Compared stripped and lower-cased, with spaces and hyphens read as underscores.
    """
    return str(name).strip().lower().replace(" ", "_").replace("-", "_") in ID_NAMES


def is_number(text: str) -> bool:
    """Whether the text of one cell reads as a number (what ``float`` accepts: ``3``, ``-0.5``, ``1e3``, ``nan``).

    The rule every delimited-text source shares: a header row is one whose cells are not all numbers, and a
    label column of numbers is told from its header this way.
    """
    try:
        float(text)
    except ValueError:
        return False
    return True


def missing_mask(values) -> np.ndarray:
    """Boolean mask of the missing entries of a 1-D label sequence (any dtype)."""
    arr = np.asarray(values) if not isinstance(values, np.ndarray) else values
    if arr.dtype.kind == "f":
        return np.isnan(arr)
    if arr.dtype.kind in "biu":
        return np.zeros(arr.shape, dtype=bool)
    return np.fromiter((is_missing(v) for v in arr.ravel()), dtype=bool, count=arr.size).reshape(arr.shape)


def clip(name, limit: int = 40) -> str:
    """``name`` as text, cut to ``limit`` characters with "..." (for column names and cells in messages)."""
    text = str(name)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def listed(items: Iterable, limit: int = SHOWN) -> str:
    """The first ``limit`` items, clipped, then "and N more"."""
    items = [clip(i) for i in items]
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def missing_error(where: str, names: Sequence, fix: str = DROP_FIX) -> WidemlError:
    """One sentence: ``where`` has missing labels at ``names`` (rows, files or ids), and the fix."""
    return WidemlError(f"{where} has {len(names)} missing label(s) such as NA or n/a ({listed(names)}); {fix}.")


def check_unique_ids(ids: Sequence, where: str, places: Sequence | None = None) -> None:
    """Refuse a sample id given twice, naming the id and where it occurs (``places``: a name per id, e.g. "line 3").

    Raises
    ------
    WidemlError
        ``where`` gives one id to two samples.
    """
    ids = [str(i) for i in ids]
    if len(set(ids)) == len(ids):
        return
    places = [str(p) for p in places] if places is not None else [f"sample {i}" for i in range(len(ids))]
    seen: dict[str, list[str]] = {}
    for key, place in zip(ids, places):
        seen.setdefault(key, []).append(place)
    twice = [(k, v) for k, v in seen.items() if len(v) > 1]
    key, at = twice[0]
    more = f" (and {len(twice) - 1} more id(s) given twice)" if len(twice) > 1 else ""
    raise WidemlError(f"{where} gives sample id {clip(key)!r} to {listed(at, 3)}{more}; give every sample its own id.")


def check_unique_columns(header: Sequence[str], name: str, where: str, flag: str) -> None:
    """Refuse a header that names column ``name`` more than once (the first would be taken silently)."""
    at = [str(i) for i, h in enumerate(header) if h == name]
    if len(at) > 1:
        raise WidemlError(f"{where} has {len(at)} columns named {clip(name)!r} (0-based {', '.join(at[:5])}); "
                          f"rename one, or give the column's 0-based index with {flag}.")


def other_delimiter(first_row: Sequence[str], delimiter: str) -> str | None:
    """The separator a one-column first row seems to use instead of ``delimiter`` (``;``, tab, ``|`` or ``,``), or None."""
    if len(first_row) != 1:
        return None
    for sep in (";", "\t", "|", ","):
        if sep != delimiter and sep in first_row[0]:
            return sep
    return None


def delimiter_error(where: str, sep: str, fix: str) -> WidemlError:
    """The file looks ``sep``-separated: one sentence with the fix."""
    shown = "tab" if sep == "\t" else repr(sep)
    return WidemlError(f"{where} looks {shown}-separated (its first line is one column holding {shown}); {fix}.")


__all__ = ["ID_NAMES", "MISSING_MARKERS", "check_unique_columns", "check_unique_ids", "clip", "delimiter_error", "is_id_name", "is_number",
           "is_missing", "listed", "missing_error", "missing_mask", "other_delimiter"]
