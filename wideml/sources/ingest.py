"""Ingest data into a feature store with bounded memory (``wideml ingest``).

Sources
-------
* a numpy array (or any 2-D array-like: h5py/zarr arrays, memory maps, dask arrays);
* a ``.npy`` file, memory-mapped (``numpy.load(mmap_mode="r")``);
* an HDF5 dataset: ``file.h5:/path/to/dataset``, or ``file.h5`` with ``dataset=``
  (``--dataset``), or a file holding a single dataset;
* a zarr array directory (v3 or v2; a v2 group holding ``X`` means that array);
* a CSV/TSV file (optionally ``.gz``): one row per sample, an optional header,
  optional label and id columns;
* a folder of per-sample files: one ``.npy`` array per sample (its shape kept
  as ``feature_shape``), or NIfTI images (``.nii``/``.nii.gz``, needs
  ``wideml[neuro]``): 3-D volumes (one sample each) and 4-D series (one sample
  per volume, ids ``<stem>:<t>``), all on one grid and affine, optionally
  masked (``mask=FILE`` or ``"auto"``); the store keeps the spatial reference
  (grid, affine, header fields, mask). See :mod:`wideml.sources.nifti`.

Labels come from an array, a labels file (CSV/TSV with ``label`` or
``id,label`` columns, ``.npy``, ``file.h5:/y`` or a zarr array directory) or a CSV source's label
column; ``labels=None`` makes an unlabelled store (for prediction only). For a
folder, a two-column labels file names the files (or their stems) and so
chooses the samples and their order; with ``label_column`` the labels file is
a table with a header (a BIDS ``participants.tsv``) matched to the files by
subject id (``sub-XX`` in the file name; :mod:`wideml.sources.participants`).

Memory design
-------------
Nothing holds all of X unless all of X fits in a third of the memory budget
(``memory_limit`` or config ``wideml.memory-limit``).

* Array sources (numpy, ``.npy``, HDF5, zarr) are random-access: the copy is cut
  into regions of whole full-height output chunks, one task per region, read
  straight from the source (memory maps read only the pages of the stripe;
  chunked HDF5/zarr sources read whole chunks, and a source chunked along
  samples goes through a two-stage copy). See :mod:`wideml.storage.rechunk`.
* Row sources (CSV rows, per-sample files) arrive one sample at a time, but a
  full-height feature chunk needs a value from every sample. Rather than
  rewriting every chunk once per sample (``n`` rewrites), blocks of ``B``
  samples (``B`` from the budget) are written as row stripes into a temporary
  sample-chunked store, which a second bounded-memory step rechunks into the
  full-height output. Each file is read once, each value written twice. (The
  alternative — memory-map every file once per feature stripe — would re-read
  compressed ``.nii.gz`` volumes once per stripe, so it is not used.)
  See :mod:`wideml.sources.rows`.

Every output is written aside and moved into place only when complete (a
failed ingest leaves nothing behind, temporary stores included).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from wideml.exceptions import WidemlError
from wideml.storage import schema
from wideml.storage.atomic import check_output
from wideml.sources.arrays import ArraySource, from_hdf5, from_memory, from_npy, from_zarr_array, split_hdf5_spec
from wideml.sources.delimited import CSV_SUFFIXES, iter_csv_blocks, keep_rows, scan_csv
from wideml.storage.casts import CastCheck, check_cast_dtypes
from wideml.sources.folder import NIFTI_SUFFIXES, FileRows, folder_samples, probe
from wideml.sources.labels import load_labels, validate_labels
from wideml.storage.label_cells import check_unique_ids
from wideml.sources.rows import write_rows_to_store
from wideml.storage.rechunk import copy_to_store


def output_dtype(source_dtype, dtype=None) -> np.dtype:
    """Stored dtype: ``dtype`` if given, else floats kept (float16 → float32), small ints → float32, others → float64."""
    if dtype is not None:
        try:
            dtype = np.dtype(dtype)
        except TypeError:
            raise WidemlError(f"unknown dtype {dtype!r}; use float32 or float64.") from None
        if not (np.issubdtype(dtype, np.integer) or np.issubdtype(dtype, np.floating)):
            raise WidemlError(f"dtype {dtype} is not a real number type; use float32 or float64.")
        return dtype
    src = np.dtype(source_dtype)
    if src.kind == "f":
        return np.dtype(np.float32) if src.itemsize < 4 else src
    return np.dtype(np.float32) if src.itemsize <= 2 else np.dtype(np.float64)


def _labels(labels, n: int, drop_unlabelled: bool = False, delimiter: str | None = None
            ) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None]:
    """(ids, y, keep): y checked against the ``n`` samples (those of ``keep`` when labels were missing and dropped)."""
    if labels is None:
        return None, None, None
    ids, y, keep = load_labels(labels, delimiter=delimiter, drop_unlabelled=drop_unlabelled)
    if keep is not None and len(keep) != n:
        raise WidemlError(f"the labels have {len(keep)} entries but X has {n} samples; give exactly one label per sample.")
    return ids, validate_labels(y, n if keep is None else int(keep.sum())), keep


def _source_kind(source) -> tuple[str, Any]:
    """Classify ``source``: ("memory", obj), ("npy"|"hdf5"|"zarr"|"csv"|"folder", path)."""
    if not isinstance(source, (str, os.PathLike)):
        return "memory", source
    file, dataset = split_hdf5_spec(str(source))
    path = Path(os.path.abspath(os.path.expanduser(file)))  # the copy tasks may run on workers started elsewhere
    if not path.exists():
        raise WidemlError(f"source {str(path)!r} does not exist; check the path.")
    if dataset is not None:
        return "hdf5", (path, dataset)
    if path.is_dir():
        is_zarr = any((path / name).is_file() for name in ("zarr.json", ".zarray", ".zgroup"))
        return ("zarr" if is_zarr else "folder"), path
    name = path.name.lower()
    if name.endswith(".npy"):
        return "npy", path
    if name.endswith(schema.HDF5_SUFFIXES):
        return "hdf5", (path, None)
    if name.endswith(CSV_SUFFIXES):
        return "csv", path
    if name.endswith(NIFTI_SUFFIXES):
        raise WidemlError(
            f"{str(path)!r} is a single NIfTI volume, i.e. one sample; put one volume per sample in a folder and ingest the folder."
        )
    raise WidemlError(
        f"cannot tell what kind of data {str(path)!r} holds; give a .npy, .h5/.hdf5 or .csv/.tsv file, a zarr array, "
        "or a folder of per-sample .npy/.nii files."
    )


def ingest(
    source,
    out: str | os.PathLike,
    *,
    labels=None,
    label_column: int | str | None = None,
    id_column: int | str | None = None,
    dataset: str | None = None,
    header: bool | str = "auto",
    delimiter: str | None = None,
    feature_chunk: int | None = None,
    dtype=None,
    sample_ids=None,
    feature_ids=None,
    memory_limit: int | str | None = None,
    compressor: str | None = None,
    checksum: bool | None = None,
    allow_lossy_cast: bool = False,
    missing_chunks_are_fill: bool = False,
    mask=None,
    drop_unlabelled: bool = False,
    overwrite: bool = False,
) -> Path:
    """Write ``source`` to a new feature store with full-height feature chunks, in bounded memory.

    Parameters
    ----------
    source : array-like of shape (n_samples, n_features), or str or path-like
        A 2-D array, or the path of a ``.npy`` file, an HDF5 file (``file.h5``,
        ``file.h5:/dataset``), a zarr v3 array, a CSV/TSV file, or a folder of
        per-sample ``.npy``/NIfTI files (see the module docstring).
    out : path-like
        New store; ``.h5``/``.hdf5`` makes an HDF5 file, anything else zarr v3.
    labels : array-like of shape (n_samples,), or path, optional
        Labels, or a labels file (CSV/TSV ``label`` or ``id,label``; ``.npy``;
        ``file.h5:/y``). None (and no ``label_column``) makes an unlabelled store.
    label_column, id_column : int or str, optional
        For a CSV source: the column (header name or 0-based index) with the
        labels / sample ids; they are not features. For a folder: the columns
        of the ``labels`` table (id default: the one column named like a
        subject id, else the one whose values name the files' subjects),
        matched to files by subject id.
    dataset : str, optional
        Dataset inside an HDF5 source.
    header : {"auto", True, False}
        For a CSV source: whether the first line names the columns.
    delimiter : str, optional
        For CSV files (default tab for ``.tsv``, else comma); also for a
        labels file that uses it (a labels file separated by its extension's
        default is read that way).
    feature_chunk : int, optional
        Features per stored chunk (default about config ``chunk-size`` bytes).
    dtype : dtype, optional
        Stored dtype (default: floats kept, integers upcast, CSV as float64).
    sample_ids : array-like of shape (n_samples,), optional
        Overrides ids from a labels file, id column or file names.
    feature_ids : array-like of shape (n_features,), optional
        Overrides a CSV header.
    memory_limit : int or str, optional
        Budget such as ``"2GiB"`` (default config ``wideml.memory-limit``).
    compressor : {"none", "zstd", "lz4"}, optional
        Default config ``compressor``.
    checksum : bool, optional
        crc32c per chunk of the new store, verified on read (default config ``checksum``).
    allow_lossy_cast : bool, default False
        Cast to ``dtype`` even when values change. By default a cast that
        would change a value (float to int of non-integral values, values out
        of the target's range, float64 to float16) is refused naming the first
        such value (:mod:`wideml.storage.casts`); nothing is written.
    missing_chunks_are_fill : bool, default False
        Missing chunks of a zarr/HDF5 source mean the fill value (as zarr reads
        them); the new store records the same (``missing_chunks: "fill"``).
        Without it a missing chunk of the source is an error naming it.
    mask : None, "auto" or path-like, optional
        Folder of NIfTI images only: keep the voxels non-zero (and finite) in
        this NIfTI mask (same grid and affine as the volumes), or ``"auto"``:
        the voxels non-zero in every sample (one extra bounded-memory pass).
        X then holds ``volume[mask]`` per sample.
    drop_unlabelled : bool, default False
        Leave out the samples whose label is missing (``NA``, ``n/a``, ``NaN``,
        ``null``, ``None``, empty) instead of refusing them: rows of a CSV
        source, files or volumes of a folder, and, with a participants table,
        files whose subject has no row. Array sources are refused instead.
    overwrite : bool, default False
        Replace an existing ``out``.

    Returns
    -------
    Path
        ``out``.

    Raises
    ------
    WidemlError
        For a missing or unreadable source, X that is not 2-D or not numeric,
        labels that do not match X or have one class, or an existing output.
    """
    check_output(out, overwrite)
    kind, obj = _source_kind(source)
    if label_column is not None and kind not in ("csv", "folder"):
        raise WidemlError("--label-column (label_column) only applies to a CSV source or a folder; give the labels with --labels FILE instead.")
    if id_column is not None and kind not in ("csv", "folder"):
        raise WidemlError("--id-column (id_column) only applies to a CSV source or a folder; give sample ids in a two-column labels file instead.")
    if kind == "folder" and labels is None and (label_column is not None or id_column is not None):
        raise WidemlError("for a folder, --label-column and --id-column name columns of the labels table; give it with --labels FILE.")
    if kind == "folder" and id_column is not None and label_column is None:
        raise WidemlError("--id-column needs --label-column (the labels table's label column) for a folder; give both.")
    if mask is not None and kind != "folder":
        raise WidemlError("--mask (mask) only applies to a folder of NIfTI volumes; drop it.")
    if drop_unlabelled and labels is None and label_column is None:
        raise WidemlError("--drop-unlabelled (drop_unlabelled) leaves out samples whose label is missing, but no labels were given; "
                          "give --labels or --label-column, or drop it.")
    if sample_ids is not None:
        check_unique_ids(sample_ids, "sample_ids")
    if dataset is not None and kind != "hdf5":
        raise WidemlError("--dataset only applies to an HDF5 source; drop it or give an .h5 file.")
    common = dict(feature_chunk=feature_chunk, memory_limit=memory_limit, overwrite=overwrite, compressor=compressor,
                  checksum=checksum, missing_chunks_are_fill=missing_chunks_are_fill)

    if kind == "csv":
        if labels is not None and label_column is not None:
            raise WidemlError("labels were given both as --labels and as --label-column; give them one way.")
        layout = scan_csv(obj, delimiter=delimiter, header=header, label_column=label_column, id_column=id_column,
                          drop_unlabelled=drop_unlabelled)
        ids, y, keep = _labels(labels, layout.n_samples, drop_unlabelled, delimiter)
        if keep is not None:
            layout = keep_rows(layout, keep)
        n, p = layout.n_samples, layout.n_features
        if layout.labels is not None:
            y = validate_labels(layout.labels, n)
        dt = output_dtype(np.float64, dtype)
        return write_rows_to_store(
            out, n=n, p=p, dtype=dt, iter_blocks=lambda rows: iter_csv_blocks(layout, rows, dt, allow_lossy_cast),
            label=f"ingest {obj.name}", y=y, source=f"csv:{obj}",
            sample_ids=_first(sample_ids, layout.sample_ids, ids), feature_ids=_first(feature_ids, layout.feature_names),
            **common,
        )

    if kind == "folder":
        table = (labels, label_column, id_column, delimiter) if label_column is not None else None
        label_ids, y, keep = ((None, None, None) if labels is None or table
                              else load_labels(labels, delimiter=delimiter, drop_unlabelled=drop_unlabelled))
        keep = keep if label_ids is None else None  # a two-column file: files of missing labels are not named, so left out
        fkind, files, stems = folder_samples(obj, label_ids)
        if fkind == "nifti":
            from wideml.sources.nifti import ingest_nifti_folder

            return ingest_nifti_folder(
                obj, files, out, y=y, y_per_file=label_ids is not None, table=table, drop_unlabelled=drop_unlabelled, keep=keep,
                mask=mask, dtype=dtype, sample_ids=sample_ids, feature_ids=feature_ids, allow_lossy_cast=allow_lossy_cast,
                **common,
            )
        if mask is not None or table is not None:
            raise WidemlError(f"--mask and --label-column apply to folders of NIfTI volumes, and {str(obj)!r} holds .npy files; "
                              "give a labels file with one or two columns (file name, label) and no mask.")
        if keep is not None:
            if len(keep) != len(files):
                raise WidemlError(f"the labels have {len(keep)} entries but {str(obj)!r} holds {len(files)} files; give one label per file.")
            files, stems = [f for f, k in zip(files, keep) if k], stems[keep]
        if y is not None:
            y = validate_labels(y, len(files))
        shape, src_dtype = probe(files[0], fkind)
        p = int(np.prod(shape)) if shape else 1
        dt = output_dtype(src_dtype, dtype)
        check_cast_dtypes(src_dtype, dt, f"the files of {str(obj)!r}", allow_lossy_cast)
        return write_rows_to_store(
            out, n=len(files), p=p, dtype=dt, read_block=FileRows([str(f) for f in files], fkind, shape, dt, allow_lossy_cast),
            label=f"ingest {obj.name}", y=y, source=f"folder:{obj}", sample_ids=_first(sample_ids, stems),
            feature_ids=feature_ids, feature_shape=shape if len(shape) >= 2 or fkind == "nifti" else None, **common,
        )

    src: ArraySource
    if kind == "memory":
        src = from_memory(obj)
    elif kind == "npy":
        src = from_npy(obj)
    elif kind == "hdf5":
        path, spec_dataset = obj
        src = from_hdf5(path, spec_dataset or dataset, missing_fill=missing_chunks_are_fill)
    else:
        src = from_zarr_array(obj, missing_fill=missing_chunks_are_fill)
    ids, y, keep = _labels(labels, src.shape[0], drop_unlabelled, delimiter)
    if keep is not None:
        raise WidemlError(f"{int((~keep).sum())} label(s) are missing, and wideml cannot leave rows out of an array source "
                          "(.npy, HDF5, zarr, in memory); remove those rows from X and the labels, or ingest a CSV or folder.")
    dt = output_dtype(src.dtype, dtype)
    name = "X" if kind == "memory" else repr(src.description.split(":", 1)[-1])
    check_cast_dtypes(src.dtype, dt, name, allow_lossy_cast)
    return copy_to_store(
        src.reader, src.shape, src.chunks, out, dtype=dt, local=src.local, cast=CastCheck(dt, name, allow_lossy_cast),
        label="ingest", y=y, source=src.description, sample_ids=_first(sample_ids, ids), feature_ids=feature_ids,
        **common,
    )


def _first(*values):
    """The first of ``values`` that is not None."""
    for v in values:
        if v is not None:
            return v
    return None


__all__ = ["ingest", "output_dtype"]
