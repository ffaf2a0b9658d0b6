"""Writers that put p-sized maps back into a non-grid feature space, by the kind of the model's feature table.

A model fitted on a store with a :class:`~wideml.storage.feature_table.FeatureTable`
(variants of a genome, grayordinates of a CIFTI file, vertices of a GIFTI
surface) keeps that table; :func:`wideml.maps.write_maps` calls the writer
registered here for its ``kind`` once per map. A writer has the signature::

    write_space(folder: Path, name: str, values: ndarray (p,), table: FeatureTable,
                plotter: str | None) -> list[str]

and returns the names of the files it wrote inside ``folder`` (the
folder is the maps' write-aside location; it is renamed into place at the end).

How to add a space: write one function in a file of this package and add one
line to :data:`SPACE_WRITERS`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from wideml.maps.genome import write_genome
from wideml.maps.surface import write_cifti, write_gifti
from wideml.storage.feature_table import FeatureTable

SpaceWriter = Callable[[Path, str, np.ndarray, FeatureTable, "str | None"], list[str]]

#: Feature-table kind -> writer of one map in that space.
SPACE_WRITERS: dict[str, SpaceWriter] = {
    "cifti": write_cifti,  # <name>.dscalar.nii on the training brain-model axis (wideml.maps.surface)
    "gifti": write_gifti,  # <name>.func.gii per hemisphere (wideml.maps.surface)
    "genome": write_genome,  # <name>_manhattan.png (wideml.maps.genome); top tables get chrom/pos/alleles (maps.files.TOP_COLUMNS)
}


def space_files(folder: Path, name: str, values: np.ndarray, table: FeatureTable | None, plotter: str | None) -> list[str]:
    """Files of one map in its feature table's space (none when there is no table or no writer for its kind)."""
    if table is None or table.kind not in SPACE_WRITERS:
        return []
    return list(SPACE_WRITERS[table.kind](folder, name, values, table, plotter))
