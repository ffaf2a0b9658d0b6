"""The reader interface every ingest format implements: :class:`Source`.

A source is opened from its metadata (and its labels) by :meth:`Source.open`;
nothing of X is read then. It states X's shape and dtype, the sample ids,
feature ids, labels, ``feature_shape`` and spatial reference it found (each
None when it has none), and how it hands out X, its :attr:`Source.access`:

``FEATURES``
    Random access to any block, ``feature_reader()[r0:r1, c0:c1]``, in the
    source's dtype (arrays: numpy, ``.npy``, HDF5, zarr). The writer cuts the
    copy into regions of whole full-height output chunks, casts each block
    and writes it (:func:`wideml.storage.rechunk.copy_to_store`).
``ROWS``
    Random access to blocks of whole samples, ``row_reader(dtype, lossy)(r0, r1)``,
    already cast to the stored dtype (per-sample files). The callable is
    picklable, so blocks are read in parallel tasks.
``STREAM``
    Sequential blocks of whole samples, ``row_stream(rows, dtype, lossy)``
    (a CSV file read from top to bottom, in this process).

Row blocks (``ROWS`` and ``STREAM``) are turned into full-height feature
chunks by :mod:`wideml.sources.rows`. The one writer loop is
:func:`wideml.sources.write.write_source`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from wideml.sources.locations import Location

FEATURES, ROWS, STREAM = "features", "rows", "stream"

#: Options that only some formats understand; a format lists those it takes in :attr:`Source.accepts`.
SOURCE_OPTIONS = ("label_column", "id_column", "mask", "dataset", "impute", "bids")


@dataclass(frozen=True)
class IngestOptions:
    """What :func:`wideml.ingest` passes to :meth:`Source.open` (see its parameters).

    ``labels`` is an array-like or a labels file; ``label_column``/``id_column``
    name columns of a CSV source or of a folder's participants table;
    ``dataset`` names an HDF5 dataset; ``header``/``delimiter`` shape CSV
    parsing (``delimiter`` also that of a labels file); ``mask`` selects voxels
    of NIfTI volumes; ``drop_unlabelled`` leaves out samples whose label is
    missing; ``missing_chunks_are_fill`` reads missing source chunks as fill;
    ``unlabelled`` stores no labels even where the source brings its own (a
    PLINK ``.fam`` phenotype); ``impute`` is the missing-call policy of
    genotype sources (``"none"``: refuse, or ``"mean"``; None means ``"none"``).
    ``bids`` is the selection of a BIDS tree (a
    :class:`~wideml.sources.bids_query.BidsQuery`; None: everything).
    """

    labels: Any = None
    label_column: int | str | None = None
    id_column: int | str | None = None
    dataset: str | None = None
    header: bool | str = "auto"
    delimiter: str | None = None
    mask: Any = None
    drop_unlabelled: bool = False
    missing_chunks_are_fill: bool = False
    unlabelled: bool = False
    impute: str | None = None
    bids: Any = None


class Source(ABC):
    """One opened ingest source: metadata, labels, and one way to read X in blocks.

    Class attributes
    ----------------
    kind : str
        Short name (``"npy"``, ``"csv"`` ...), also what ``wideml ingest`` estimates space by.
    access : {FEATURES, ROWS, STREAM}
        How X is handed out (see the module docstring).
    accepts : frozenset of str
        The options of :data:`SOURCE_OPTIONS` this format understands; giving
        another is refused before the source is opened.

    Attributes (set by :meth:`open`)
    --------------------------------
    shape : (n_samples, n_features)
    dtype : numpy.dtype
        dtype of the values as read (the stored dtype is chosen from it).
    sample_ids, feature_ids : ndarray of shape (n_samples,) / (n_features,), or None
    labels : ndarray of shape (n_samples,), or None
        Checked against ``n_samples`` (and for two classes) by :meth:`open`.
    feature_shape : tuple of int, or None
        Shape each sample is flattened from (per-sample arrays, NIfTI grids).
    spatial : SpatialReference or None
        Grid, affine, header fields and mask of NIfTI volumes.
    feature_table : FeatureTable or None
        Per-feature columns of a non-grid space: variants' chromosome,
        position and alleles; grayordinates' structures and vertices
        (:mod:`wideml.storage.feature_table`).
    chunks : (int, int)
        ``FEATURES`` only: stored chunk shape, ``(1, 1)`` when any block reads cheaply.
    local : bool
        ``FEATURES`` only: the reader cannot leave this process (in-memory data).
    description : str
        Provenance recorded in the store (``"csv:/data/x.csv"``).
    what : str
        How messages name the source (``"'/data/x.npy'"``, ``"X"``).
    title : str
        Progress-bar label.
    stored_dtype : numpy.dtype or None
        The stored dtype when none is asked for (genotype dosages: int8); None:
        chosen from :attr:`dtype` (:func:`wideml.sources.write.output_dtype`).
    brings_labels : bool (class attribute)
        The source holds its own labels (a PLINK ``.fam`` phenotype), taken when
        no labels are given; ``wideml ingest`` then needs neither ``--labels``
        nor ``--unlabelled``.
    """

    kind: ClassVar[str] = ""
    access: ClassVar[str] = FEATURES
    accepts: ClassVar[frozenset[str]] = frozenset()

    shape: tuple[int, int]
    dtype: np.dtype
    sample_ids: np.ndarray | None = None
    feature_ids: np.ndarray | None = None
    labels: np.ndarray | None = None
    feature_shape: tuple[int, ...] | None = None
    spatial: Any = None
    feature_table: Any = None
    chunks: tuple[int, int] = (1, 1)
    local: bool = False
    description: str = ""
    what: str = "X"
    title: str = "ingest"
    stored_dtype: np.dtype | None = None
    brings_labels: ClassVar[bool] = False

    @classmethod
    def check_options(cls, options: IngestOptions) -> None:
        """Refuse option combinations this format cannot use (called before :meth:`open`; default: none)."""

    @classmethod
    @abstractmethod
    def open(cls, location: Location, options: IngestOptions) -> Source:
        """Open the source at ``location`` from its metadata, with its labels and ids; read no X.

        Raises
        ------
        WidemlError
            For an unreadable source, X that is not 2-D or not numeric, or labels that do not fit.
        """

    def feature_reader(self) -> Any:
        """``FEATURES``: an object with ``reader[r0:r1, c0:c1] -> ndarray`` in :attr:`dtype` (picklable unless :attr:`local`)."""
        raise NotImplementedError(f"{type(self).__name__} hands out {self.access}, not feature blocks")

    def row_reader(self, dtype, allow_lossy_cast: bool = False) -> Callable[[int, int], np.ndarray]:
        """``ROWS``: a picklable ``(r0, r1) -> ndarray of shape (r1 - r0, n_features)`` in ``dtype``.

        A cast that would change a value is refused naming it unless ``allow_lossy_cast``.
        """
        raise NotImplementedError(f"{type(self).__name__} hands out {self.access}, not row blocks")

    def row_stream(self, rows: int, dtype, allow_lossy_cast: bool = False) -> Iterator[np.ndarray]:
        """``STREAM``: blocks of ``rows`` samples in order (the last may be shorter), in ``dtype``."""
        raise NotImplementedError(f"{type(self).__name__} hands out {self.access}, not a row stream")


def first(*values):
    """The first of ``values`` that is not None."""
    for v in values:
        if v is not None:
            return v
    return None
