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
  (grid, affine, header fields, mask). See :mod:`wideml.sources.nifti`;
* genotypes (needs ``wideml[genomics]`` for PLINK): a PLINK 1 fileset
  (``data.bed`` with its ``.bim``/``.fam``; labels from the ``.fam`` phenotype
  unless given) or a VCF Zarr store (bio2zarr's layout, recognised by its
  ``call_genotype`` array), stored as int8 allele dosages with the feature
  table of the variants; see :mod:`wideml.sources.genotypes`.

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

The package
-----------
:func:`ingest` checks the options, asks :mod:`wideml.sources.registry` which
reader opens the source (one file per format: :mod:`~wideml.sources.npy`,
:mod:`~wideml.sources.hdf5`, :mod:`~wideml.sources.zarr_array`,
:mod:`~wideml.sources.delimited`, :mod:`~wideml.sources.folder`,
:mod:`~wideml.sources.nifti`), opens it (metadata and labels, no X: a
:class:`~wideml.sources.base.Source`) and hands it to the one writer loop,
:func:`wideml.sources.write.write_source`. The registry's docstring says how
to add a format.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from wideml.exceptions import WidemlError
from wideml.sources.base import IngestOptions, Source
from wideml.sources.locations import Location
from wideml.sources.bids import BidsSource, bids_location
from wideml.sources.bids_query import as_query
from wideml.sources.plink import fileset_part
from wideml.sources.registry import pick
from wideml.sources.write import output_dtype, write_source
from wideml.storage.atomic import check_output
from wideml.storage.label_cells import check_unique_ids


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
    bids=None,
    unlabelled: bool = False,
    impute: str | None = None,
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
    bids : True, dict or BidsQuery, optional
        Read ``source`` as a BIDS dataset folder (recognised without it when
        it holds ``dataset_description.json``) and choose its scans, e.g.
        ``{"derivatives": "fmriprep", "space": "MNI152NLin2009cAsym", "desc": "preproc",
        "suffix": "T1w", "sessions": "1,2", "subjects": ["01", "02"], "filters": {"task": "rest"},
        "average": "runs"}``; labels from its ``participants.tsv`` with
        ``label_column``; the mask from its ``desc-brain_mask`` files unless
        ``mask`` is given. See :mod:`wideml.sources.bids`.
    unlabelled : bool, default False
        Store no labels even where the source brings its own (a PLINK ``.fam``
        phenotype, taken when ``labels`` is None).
    impute : {None, "none", "mean"}, optional
        Genotype sources only: missing calls refused (None, ``"none"``) or
        replaced by the variant's mean dosage (``"mean"``, stored as float32;
        the policy and the number of imputed calls are recorded in the store's
        feature table). See :mod:`wideml.sources.genotypes`.

    Returns
    -------
    Path
        ``out``.

    Raises
    ------
    WidemlError
        For a missing or unreadable source, X that is not 2-D or not numeric,
        labels that do not match X or have one class, or an existing output.

    Examples
    --------
    >>> import numpy as np
    >>> import wideml
    >>> np.save("ingest_example.npy", np.arange(24, dtype=np.float32).reshape(4, 6))
    >>> path = wideml.ingest("ingest_example.npy", "ingest_example.zarr", labels=["a", "a", "b", "b"])
    >>> store = wideml.open_store(path)
    >>> store.n_samples, store.n_features, store.class_counts()
    (4, 6, {'a': 2, 'b': 2})
    """
    check_output(out, overwrite)
    query = as_query(bids)
    reader, location = pick_source(source) if query is None else (BidsSource, bids_location(source))
    given = {"label_column": label_column, "id_column": id_column, "mask": mask, "dataset": dataset}
    options = IngestOptions(labels=labels, label_column=label_column, id_column=id_column, dataset=dataset, header=header,
                            delimiter=delimiter, mask=mask, drop_unlabelled=drop_unlabelled,
                            missing_chunks_are_fill=missing_chunks_are_fill, bids=query,
                            unlabelled=unlabelled, impute=impute)
    for name in ("label_column", "id_column"):
        _check_applies(reader, name, given[name])
    reader.check_options(options)
    _check_applies(reader, "mask", mask)
    if drop_unlabelled and labels is None and label_column is None and not reader.brings_labels:
        raise WidemlError("--drop-unlabelled (drop_unlabelled) leaves out samples whose label is missing, but no labels were given; "
                          "give --labels or --label-column, or drop it.")
    if sample_ids is not None:
        check_unique_ids(sample_ids, "sample_ids")
    _check_applies(reader, "dataset", dataset)
    _check_applies(reader, "impute", impute)
    if unlabelled and (labels is not None or label_column is not None):
        raise WidemlError("unlabelled=True (--unlabelled) and labels contradict each other; give one of them.")
    src = reader.open(location, options)
    if dtype is None:
        dtype = src.stored_dtype
    return write_source(src, out, dtype=dtype, allow_lossy_cast=allow_lossy_cast, sample_ids=sample_ids, feature_ids=feature_ids,
                        feature_chunk=feature_chunk, memory_limit=memory_limit, overwrite=overwrite, compressor=compressor,
                        checksum=checksum, missing_chunks_are_fill=missing_chunks_are_fill)


#: The sentence for an option given to a source that does not take it (:attr:`Source.accepts`).
NOT_FOR_THIS_SOURCE = {
    "label_column": "--label-column (label_column) only applies to a CSV source, a folder or the --labels table of a genotype source "
                    "(.bed, VCF Zarr); give a labels file of one column (label) or two (id, label) instead.",
    "id_column": "--id-column (id_column) only applies to a CSV source, a folder or the --labels table of a genotype source "
                 "(.bed, VCF Zarr); give sample ids in a two-column labels file instead.",
    "mask": "--mask (mask) only applies to a folder of NIfTI volumes; drop it.",
    "dataset": "--dataset only applies to an HDF5 source; drop it or give an .h5 file.",
    "impute": "--impute (impute) only applies to genotype sources (a PLINK .bed fileset or a VCF Zarr store); drop it.",
}


def _check_applies(reader: type[Source], name: str, value) -> None:
    """Refuse option ``name`` (given as ``value``) for a source that does not take it."""
    if value is not None and name not in reader.accepts:
        raise WidemlError(NOT_FOR_THIS_SOURCE[name])


def pick_source(source) -> tuple[type[Source], Location]:
    """The reader class for ``source`` and its location (:func:`wideml.sources.registry.pick`), nothing opened.

    A PLINK 1 fileset named by its ``.bim``/``.fam`` or by its bare prefix is refused naming its ``.bed``.

    Raises
    ------
    WidemlError
        For a source that does not exist, is refused, or is not recognised.
    """
    if isinstance(source, (str, os.PathLike)) and "://" not in str(source):
        wrong = fileset_part(source)
        if wrong is not None:
            raise WidemlError(wrong)
    return pick(source)


def source_kind(source) -> tuple[str, Any]:
    """``(kind, what)`` of ``source`` without opening it, for the free-space estimate of ``wideml ingest``:
    ``("memory", obj)``, ``("hdf5", (path, dataset))``, else ``(kind, path)`` (``kind`` a reader's :attr:`Source.kind`)."""
    reader, location = pick_source(source)
    if location.in_memory:
        return reader.kind, location.obj
    if reader.kind == "hdf5":
        return reader.kind, (location.path, location.dataset)
    return reader.kind, location.path


__all__ = ["ingest", "output_dtype", "pick_source", "source_kind"]
