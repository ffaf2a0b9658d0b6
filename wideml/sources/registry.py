"""Which reader opens a source: an ordered table from recognisers to :class:`~wideml.sources.base.Source` classes.

:func:`pick` resolves the source (:func:`wideml.sources.locations.locate`: a
path must exist) and walks :data:`REGISTRY` in order; the first entry whose
recogniser accepts the :class:`~wideml.sources.locations.Location` wins. So
order matters: an HDF5 path with a ``:/dataset`` tail before anything else, a
zarr folder (by its metadata files) before a folder of per-sample files, and
file suffixes last. An entry with ``refuse`` names an input wideml recognises
but cannot ingest (one NIfTI volume is one sample). Nothing recognised is
refused in one sentence listing the kinds wideml reads.

How to add a data format
------------------------
1. Write one file in ``wideml/sources/`` with a subclass of
   :class:`~wideml.sources.base.Source`: its ``kind``, its ``access``
   (``FEATURES`` for random-access arrays; ``ROWS`` for picklable blocks of
   whole samples; ``STREAM`` for sequential row blocks), the options of
   :data:`~wideml.sources.base.SOURCE_OPTIONS` it ``accepts``, a classmethod
   ``open(location, options)`` that reads metadata and labels (no X) and sets
   ``shape``, ``dtype``, the ids, ``labels`` (checked with
   :func:`~wideml.sources.labels.validate_labels` or
   :func:`~wideml.sources.labels.labels_for`), ``feature_shape``/``spatial``
   if any, ``description``, ``what`` and ``title``, and the one block method
   its access names. Array formats subclass
   :class:`~wideml.sources.arrays.ArraySource` and write only ``open_array``.
2. Add one line to :data:`REGISTRY`, e.g.
   ``Entry(suffix(".pgen"), PlinkSource)`` or
   ``Entry(folder_holding("dataset_description.json"), BidsSource)``, before
   any entry that would also accept it.
3. Add the format to :data:`UNKNOWN`'s list, and a case to
   ``tests/sources/test_source_contract.py`` (every registered reader must
   have one). The writer loop, atomic output, labels checks, progress and
   ``wideml ingest`` need no change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from wideml.exceptions import WidemlError
from wideml.sources.base import Source
from wideml.sources.bids import BidsSource, is_bids_folder
from wideml.sources.cifti import CiftiSource
from wideml.sources.delimited import CSV_SUFFIXES, CsvSource
from wideml.sources.folder import FolderSource
from wideml.sources.gifti import GiftiSource
from wideml.sources.hdf5 import Hdf5Source
from wideml.sources.locations import Location, locate
from wideml.sources.npy import MemorySource, NpySource
from wideml.sources.plink import PlinkSource
from wideml.sources.sample_files import NIFTI_SUFFIXES
from wideml.sources.surface_files import CIFTI_SUFFIXES, GIFTI_SUFFIXES, folder_with
from wideml.sources.vcf_zarr import VcfZarrSource, is_vcf_zarr
from wideml.sources.zarr_array import ZARR_MARKERS, ZarrSource
from wideml.storage import schema

Recogniser = Callable[[Location], bool]

#: The sentence for a path no entry recognises (``{path}`` is filled in).
UNKNOWN = ("cannot tell what kind of data {path} holds; give a .npy, .h5/.hdf5 or .csv/.tsv file, a zarr array, "
           "or a folder of per-sample .npy/.nii files, a BIDS dataset, CIFTI-2 .dscalar.nii/.dtseries.nii or GIFTI .func.gii/.shape.gii files, "
           "a PLINK .bed (with .bim/.fam) or a VCF Zarr store.")


@dataclass(frozen=True)
class Entry:
    """One line of the registry: a recogniser and the reader class it selects (or a refusal)."""

    recognises: Recogniser
    source: type[Source] | None = None
    refuse: str | None = None


def in_memory(location: Location) -> bool:
    """An array-like object rather than a path."""
    return location.in_memory


def hdf5_dataset(location: Location) -> bool:
    """``file.h5:/dataset``."""
    return location.dataset is not None


def folder_holding(*names: str) -> Recogniser:
    """A folder holding any of the files ``names`` (e.g. a zarr node's metadata)."""
    def recognises(location: Location) -> bool:
        return location.path is not None and location.path.is_dir() and any((location.path / n).is_file() for n in names)

    return recognises


def any_folder(location: Location) -> bool:
    """Any folder (checked after the folders recognised by their contents)."""
    return location.path is not None and location.path.is_dir()


def suffix(*suffixes: str) -> Recogniser:
    """A path that is not a folder and whose name ends with one of ``suffixes`` (any case)."""
    def recognises(location: Location) -> bool:
        return location.path is not None and not location.path.is_dir() and location.name.endswith(tuple(s.lower() for s in suffixes))

    return recognises


#: Tried in order; the first entry that recognises the source opens it.
REGISTRY: list[Entry] = [
    Entry(in_memory, MemorySource),
    Entry(hdf5_dataset, Hdf5Source),
    Entry(is_vcf_zarr, VcfZarrSource),  # a zarr group holding call_genotype, before plain zarr
    Entry(folder_holding(*ZARR_MARKERS), ZarrSource),
    Entry(is_bids_folder, BidsSource),  # dataset_description.json (or only sub-* folders), before other folders
    Entry(folder_with(CIFTI_SUFFIXES), CiftiSource),  # CIFTI .dscalar.nii etc. before NIfTI folders
    Entry(folder_with(GIFTI_SUFFIXES), GiftiSource),
    Entry(any_folder, FolderSource),
    Entry(suffix(".npy"), NpySource),
    Entry(suffix(*schema.HDF5_SUFFIXES), Hdf5Source),
    Entry(suffix(*CSV_SUFFIXES), CsvSource),
    Entry(suffix(".bed"), PlinkSource),
    Entry(suffix(*CIFTI_SUFFIXES), CiftiSource),
    Entry(suffix(*GIFTI_SUFFIXES), GiftiSource),
    Entry(suffix(*NIFTI_SUFFIXES), refuse="{path} is a single NIfTI volume, i.e. one sample; put one volume per sample "
                                          "in a folder and ingest the folder."),
]


def pick(source) -> tuple[type[Source], Location]:
    """The reader class for ``source`` and its :class:`Location` (nothing is opened).

    Raises
    ------
    WidemlError
        For a path that does not exist, an input wideml refuses (one NIfTI
        volume), or one no entry recognises.
    """
    location = locate(source)
    for entry in REGISTRY:
        if entry.recognises(location):
            if entry.refuse is not None:
                raise WidemlError(entry.refuse.format(path=repr(str(location.path))))
            return entry.source, location
    raise WidemlError(UNKNOWN.format(path=repr(str(location.path))))


def registered() -> list[type[Source]]:
    """The reader classes of :data:`REGISTRY`, each once, in order."""
    return list(dict.fromkeys(e.source for e in REGISTRY if e.source is not None))
