"""Which files of a BIDS tree are the samples: the selection (:class:`BidsQuery`), its checks, and the samples' ids.

The words follow nilearn's ``first_level_from_bids`` (``space_label``,
``sub_labels``, ``derivatives_folder``, ``img_filters``): a file is selected
when its ``space``, ``desc``, suffix and datatype folder equal the values
asked for (an empty value asks for files *without* that entity), every
``filters`` pair ``(entity, value)`` holds, its subject is among
``subjects`` and its session among ``sessions`` (all when None).

Samples
-------
One sample per selected file (per volume of a 4-D file), keyed by its
subject, session and run: the sample id keeps those entities,
``sub-02_ses-1_run-1`` (``sub-02`` when the tree has no sessions or runs; a
4-D file's volumes ``sub-02_ses-1:0``, ``:1`` ...). Sessions and runs are
separate samples; ``average="runs"`` averages the runs of a session into
one sample (``sub-02_ses-1``), ``average="sessions"`` every selected file of
a subject (``sub-02``). Order: by subject label, session label and run, each
sorted as a number when it is one (``run-2`` before ``run-10``), else as text.

``sessions`` selects files by their ``ses`` entity: a subject-level file
without ``ses-`` (fMRIPrep's anatomical template of a multi-session subject)
is not in any session. A selection mixing files with and without ``ses-``
is refused (:func:`check_sessions`): choose ``--session`` or ``--filter ses=``.

Refused, each in one sentence that lists a few candidates: two selected files
for one subject/session/run (naming the entities they differ in and the flag
that chooses: ``--space``, ``--desc``, ``--suffix``, ``--datatype`` or
``--filter ENTITY=VALUE``); an entity, suffix or datatype that differs across
the selected files (e.g. two spaces and no ``--space``: the samples would not
be the same measurement); and a selection that matches nothing (listing the
values present).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields

from wideml.exceptions import WidemlError
from wideml.sources.bids_entities import BidsFile, index_value
from wideml.storage.label_cells import listed

#: The entities that make a sample (kept in its id).
SAMPLE_KEYS = ("sub", "ses", "run")
AVERAGES = ("runs", "sessions")
#: How the user chooses a value of each key (others: ``--filter KEY=VALUE``).
FLAGS = {"space": "--space", "desc": "--desc", "suffix": "--suffix", "datatype": "--datatype", "ses": "--session",
         "sub": "--subjects"}


@dataclass(frozen=True)
class BidsQuery:
    """What to take from a BIDS tree (``wideml.ingest(..., bids=BidsQuery(...))`` or a dict of these fields).

    Parameters
    ----------
    derivatives : str, optional
        A derivatives dataset of the tree, ``derivatives/<name>`` (e.g. ``"fmriprep"``); default the tree itself.
    space, desc, suffix, datatype : str, optional
        Values of the ``space``/``desc`` entities, the suffix (``T1w``, ``bold``) and the datatype folder
        (``anat``, ``func``, ``dwi``); ``""`` selects files without the entity.
    sessions, subjects : sequence of str, optional
        Labels (``"1"`` or ``"ses-1"``; ``"02"`` or ``"sub-02"``), or a comma-separated string; default all.
    filters : mapping or sequence of (entity, value), optional
        Other entities to match, e.g. ``{"task": "rest", "res": "2"}``.
    average : {"runs", "sessions"}, optional
        Average the runs of a session, or all files of a subject, into one sample (3-D scans only).
    """

    derivatives: str | None = None
    space: str | None = None
    desc: str | None = None
    suffix: str | None = None
    datatype: str | None = None
    sessions: tuple | None = None
    subjects: tuple | None = None
    filters: tuple = ()
    average: str | None = None

    def constraints(self) -> list[tuple[str, str]]:
        """``(key, value)`` pairs every selected file must meet (space, desc, suffix, datatype, filters)."""
        named = [(k, getattr(self, k)) for k in ("space", "desc", "suffix", "datatype") if getattr(self, k) is not None]
        return named + list(self.filters)


def _labels(value, prefix: str, name: str) -> tuple | None:
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else list(value)
    labels = tuple(dict.fromkeys(str(v).strip().removeprefix(prefix) for v in items if str(v).strip()))
    if not labels or not all(v.isalnum() and v.isascii() for v in labels):
        raise WidemlError(f"bids {name} must be labels made of letters and digits (e.g. '01,02' or 'sub-01'), "
                          f"not {str(value)!r}; fix the list.")
    return labels


def _filters(value) -> tuple:
    if not value:
        return ()
    pairs = list(value.items()) if isinstance(value, Mapping) else list(value)
    out = []
    for pair in pairs:
        given = pair if isinstance(pair, str) else "=".join(str(p) for p in pair)
        if isinstance(pair, str):
            pair = pair.split("=", 1) if "=" in pair else (pair, None)
        key, val = (list(pair) + [None, None])[:2]
        if not (isinstance(key, str) and key.isalnum() and isinstance(val, str) and (val == "" or val.isalnum())):
            raise WidemlError(f"bids filter {given!r} is not ENTITY=VALUE with letters and digits (e.g. task=rest); fix it.")
        out.append((key, val))
    return tuple(out)


def as_query(bids) -> BidsQuery | None:
    """A :class:`BidsQuery` from ``bids``: True (everything), a mapping of its fields, or a BidsQuery; None/False: None."""
    if bids is None or bids is False:
        return None
    if bids is True:
        return BidsQuery()
    if isinstance(bids, BidsQuery):
        query = bids
    elif isinstance(bids, Mapping):
        names = {f.name for f in fields(BidsQuery)}
        unknown = [k for k in bids if k not in names]
        if unknown:
            raise WidemlError(f"bids options {listed(map(repr, unknown))} are not known; use {', '.join(sorted(names))}.")
        query = BidsQuery(**{k: v for k, v in bids.items()})
    else:
        raise WidemlError(f"bids must be True, a dict of selection fields or a BidsQuery, not {type(bids).__name__}; fix it.")
    for key in ("derivatives", "space", "desc", "suffix", "datatype"):
        value = getattr(query, key)
        if value is not None and not (isinstance(value, str) and (value == "" or value.replace("-", "").replace("_", "").isalnum())):
            raise WidemlError(f"bids {key} must be a label such as 'MNI152NLin2009cAsym', not {value!r}; fix it.")
    if query.average is not None and query.average not in AVERAGES:
        raise WidemlError(f"bids average must be 'runs' or 'sessions', not {query.average!r}; drop it to keep every run as a sample.")
    return BidsQuery(query.derivatives, query.space, query.desc, query.suffix, query.datatype,
                     _labels(query.sessions, "ses-", "sessions"), _labels(query.subjects, "sub-", "subjects"),
                     _filters(query.filters), query.average)


def few(items, limit: int = 3) -> str:
    """The first ``limit`` items in full (file names are not clipped), then "and N more"."""
    items = [str(i) for i in items]
    return ", ".join(items[:limit]) + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _wanted(f: BidsFile, key: str, value: str) -> bool:
    got = f.get(key)
    return got is None if value == "" else got == value


def _shown(key: str, value) -> str:
    return f"{key} (none)" if value is None or value == "" else (f"{key} {value}" if key in ("suffix", "datatype") else f"{key}-{value}")


def select(files: Sequence[BidsFile], query: BidsQuery, where: str) -> list[BidsFile]:
    """The files meeting every constraint of ``query``; none is one sentence listing the values present."""
    constraints = query.constraints()
    chosen = [f for f in files if all(_wanted(f, k, v) for k, v in constraints)]
    if chosen:
        return chosen
    asked = ", ".join(_shown(k, v) for k, v in constraints) or "anything"
    present = "; ".join(f"{k}: {few(sorted({str(f.get(k)) if f.get(k) is not None else '(none)' for f in files}), 6)}"
                        for k, _ in constraints)
    subjects = len({f.entities["sub"] for f in files})
    hint = f" (present {present})" if present else ""
    raise WidemlError(f"no NIfTI file of {where} matches {asked} among its {len(files)} NIfTI file(s) of {subjects} subject(s)"
                      f"{hint}; change the selection.")


def _choose(keys: Sequence[str], files: Sequence[BidsFile] = ()) -> str:
    """The flags choosing among values of ``keys``; for an entity some of ``files`` lack, also the empty filter."""
    flags = []
    for k in keys:
        if k == "extension":
            continue
        flag = FLAGS.get(k, f"--filter {k}=VALUE")
        if k not in FLAGS and any(f.get(k) is None for f in files):
            flag += f" (--filter {k}= for the files without {k})"
        flags.append(flag)
    if not flags:
        return "keep one of the copies (.nii beside .nii.gz)"
    return "choose with " + " or ".join(dict.fromkeys(flags))


def check_sessions(chosen: Sequence[BidsFile]) -> None:
    """Refuse a selection mixing files with and without a ``ses`` entity (one sentence naming examples and the fix).

    fMRIPrep puts a multi-session subject's anatomical template in ``sub-X/anat``
    without ``ses-``, beside the sessions' own files: taking both would count
    the subject twice (or average the template in), and the samples would not
    be one kind of measurement.
    """
    without = [f for f in chosen if f.entities.get("ses") is None]
    if not without or len(without) == len(chosen):
        return
    with_ses = [f for f in chosen if f.entities.get("ses") is not None]
    both = sorted({f.entities["sub"] for f in without} & {f.entities["sub"] for f in with_ses}, key=index_value)
    if both:
        example = f"sub-{both[0]} has {few([f.relative for f in without if f.entities['sub'] == both[0]], 2)} beside its sessions"
    else:
        example = f"{few([f.relative for f in without], 2)} has no ses- while {with_ses[0].relative} has one"
    raise WidemlError(f"the selection mixes {len(without)} file(s) without a session with {len(with_ses)} file(s) in sessions "
                      f"({example}), so they are not one kind of sample; take sessions with --session LABEL[,LABEL] "
                      "or only the files without a session with --filter ses=.")


def _differing(group: Sequence[BidsFile]) -> list[str]:
    keys = dict.fromkeys(k for f in group for k in f.entities)
    keys.update(dict.fromkeys(("suffix", "datatype", "extension")))
    return [k for k in keys if len({f.get(k) for f in group}) > 1]


def sample_key(f: BidsFile) -> tuple:
    """``(sub, ses, run)`` values (None where absent)."""
    return tuple(f.entities.get(k) for k in SAMPLE_KEYS)


def sample_id(key: tuple) -> str:
    """``sub-02_ses-1_run-1`` from the values of :data:`SAMPLE_KEYS` (absent ones left out)."""
    return "_".join(f"{k}-{v}" for k, v in zip(SAMPLE_KEYS, key) if v is not None)


def _order(key: tuple) -> tuple:
    return tuple(index_value(v) for v in key)


def check_one_per_sample(chosen: Sequence[BidsFile]) -> dict[tuple, BidsFile]:
    """``{(sub, ses, run): file}``; two files for one key, or values differing across the files, refused."""
    by_key: dict[tuple, list[BidsFile]] = {}
    for f in chosen:
        by_key.setdefault(sample_key(f), []).append(f)
    clashes = {k: g for k, g in by_key.items() if len(g) > 1}
    if clashes:
        key, group = min(clashes.items(), key=lambda kv: _order(kv[0]))
        differ = _differing(group)
        values = "; ".join(f"{k}: {few(sorted({str(f.get(k)) if f.get(k) is not None else '(none)' for f in group}), 4)}"
                           for k in differ if k != "extension")
        more = f" (and {len(clashes) - 1} more sample(s) with several files)" if len(clashes) > 1 else ""
        raise WidemlError(f"{len(group)} files match {sample_id(key)} after the selection ({few(sorted(f.path.name for f in group))})"
                          f"{more}, differing in {', '.join(differ)}{' (' + values + ')' if values else ''}; {_choose(differ, group)}.")
    files = [g[0] for g in by_key.values()]
    for k in _differing(files):
        if k in SAMPLE_KEYS or k == "extension":
            continue
        seen: dict = {}
        for f in sorted(files, key=lambda f: _order(sample_key(f))):
            seen.setdefault(f.get(k), sample_id(sample_key(f)))
        shown = few([f"{v if v is not None else '(none)'} for {s}" for v, s in seen.items()], 4)
        raise WidemlError(f"the selected files differ in {k} across samples ({shown}), so they are not the same measurement; "
                          f"{_choose([k], files)}.")
    return {k: g[0] for k, g in by_key.items()}


def plan_samples(chosen: Sequence[BidsFile], average: str | None = None) -> tuple[list[str], list[list[BidsFile]]]:
    """The samples: their ids and, per sample, the files averaged into it (one file each without ``average``).

    Parameters
    ----------
    chosen : sequence of BidsFile
        The selected files (:func:`select`).
    average : {None, "runs", "sessions"}

    Returns
    -------
    ids : list of str, in sample order (subject, session, run)
    groups : list of list of BidsFile, one per sample, each in session and run order
    """
    check_sessions(chosen)
    by_key = check_one_per_sample(chosen)
    keys = sorted(by_key, key=_order)
    width = {None: 3, "runs": 2, "sessions": 1}[average]
    groups: dict[tuple, list[BidsFile]] = {}
    for key in keys:
        groups.setdefault(key[:width], []).append(by_key[key])
    return [sample_id(k) for k in groups], list(groups.values())
