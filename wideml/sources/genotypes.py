"""What the genotype sources (PLINK 1 ``.bed``, VCF Zarr) share: dosages, the missing-call policy, samples and variants.

Dosages
-------
X[s, v] is the number of copies of the *counted allele* of variant v that
sample s carries: for PLINK 1 the ``.bim`` file's allele 1 (bed-reader's
``count_A1=True``, PLINK's own default), for VCF Zarr every non-reference
allele (allele index > 0 counts as 1, summed over the ploidy). The feature
table (kind ``"genome"``: ``chrom``, ``pos``, ``allele_1``, ``allele_2``)
always names the counted allele ``allele_1``.

Missing calls
-------------
``impute="none"`` (the default) refuses a source with a missing call, in one
sentence naming the variant and sample and the fix; the check runs block by
block while copying, like lossy casts, so nothing is left behind. Dosages are
then stored as int8. ``impute="mean"`` replaces each missing call by the mean
dosage of the variant's called genotypes among the stored samples (computed
in float64), so the stored dtype is float32; a variant with no call at all is
refused. The policy and the number of imputed calls (counted in one extra
bounded-memory read before anything is written) are recorded in the feature
table's ``info`` (``missing_calls``, ``n_imputed``), kept in the store's attrs.

Samples and labels
------------------
:func:`select_samples` matches labels to the source's sample ids: a
one-column labels file (or an array) gives one label per sample in the
source's order, a two-column one (id, label) is matched by id, and so is a
PLINK phenotype file (``FID IID pheno`` or ``IID label``, whitespace-separated)
or a wider table whose columns ``label_column``/``id_column`` name
(:mod:`wideml.sources.genotype_labels`: by (FID, IID) when both the table and
the ``.fam`` have families; PLINK's ``-9`` is a missing label); samples left
without a label, and those whose label is missing, are refused or, with
``drop_unlabelled``, left out (the reader then reads only the kept samples,
in the source's order). A PLINK source brings its own labels (the ``.fam``
phenotype), which ``labels`` overrides and ``unlabelled`` drops.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from wideml.exceptions import WidemlError
from wideml.sources.arrays import ArraySource
from wideml.sources.base import IngestOptions
from wideml.sources.genotype_labels import read_table
from wideml.sources.labels import load_labels, validate_labels
from wideml.storage.feature_table import FeatureTable
from wideml.storage.label_cells import listed, missing_error

#: Accepted values of ``impute`` (``--impute``).
IMPUTE_POLICIES = ("none", "mean")

#: The fix named when a missing call is refused.
IMPUTE_FIX = ("ingest with --impute mean (impute='mean') to fill each variant's missing calls with its mean dosage, "
              "or remove them first (e.g. plink --geno 0 for variants, --mind 0 for samples)")


def check_impute(impute: str | None) -> str:
    """``impute`` checked (None means ``"none"``)."""
    value = "none" if impute is None else impute
    if value not in IMPUTE_POLICIES:
        raise WidemlError(f"impute={impute!r} is not a missing-call policy; use 'none' (refuse missing calls) or 'mean'.")
    return value


def value_dtype(impute: str) -> np.dtype:
    """dtype the genotype reader hands out and the store keeps: int8 dosages, float32 once means are imputed."""
    return np.dtype(np.float32) if impute == "mean" else np.dtype(np.int8)


class Namer:
    """Names variant ``j`` and stored sample ``i`` for messages (read only when a message needs them)."""

    def variant(self, j: int) -> str:  # pragma: no cover - each format defines it
        raise NotImplementedError

    def sample(self, i: int) -> str:  # pragma: no cover - each format defines it
        raise NotImplementedError


def finish_block(dosage: np.ndarray, missing: np.ndarray, impute: str, c0: int, rows, namer: Namer, what: str) -> np.ndarray:
    """Apply the missing-call policy to a block of dosages of whole variants.

    Parameters
    ----------
    dosage : ndarray of int8, shape (n_stored, w)
        Dosages of variants ``c0 .. c0 + w`` for every stored sample (missing entries arbitrary).
    missing : ndarray of bool, shape (n_stored, w)
    impute : {"none", "mean"}
    c0 : int
        Index of the block's first variant.
    rows : ndarray of int or None
        File positions of the stored samples (None: all, in order), for messages.
    namer : Namer
    what : str
        How messages name the source.

    Returns
    -------
    ndarray of shape (n_stored, w)
        int8 (``"none"``) or float32 with each missing call replaced by its variant's mean (``"mean"``).

    Raises
    ------
    WidemlError
        A missing call under ``"none"`` (the first in the block, by variant then sample), or a
        variant without any call under ``"mean"``.
    """
    if impute == "none":
        if missing.any():
            j, i = np.argwhere(missing.T)[0]
            sample = int(i) if rows is None else int(rows[i])
            raise WidemlError(f"{what} has a missing genotype call (variant {namer.variant(c0 + int(j))!r}, "
                              f"sample {namer.sample(sample)!r}); {IMPUTE_FIX}.")
        return dosage
    called = (~missing).sum(axis=0)
    if (called == 0).any():
        j = int(np.flatnonzero(called == 0)[0])
        raise WidemlError(f"{what} has no called genotype for variant {namer.variant(c0 + j)!r} among the stored samples, so it "
                          "has no mean to impute; remove it first (e.g. plink --geno) or choose other samples.")
    sums = np.where(missing, 0, dosage).sum(axis=0, dtype=np.float64)
    means = (sums / called).astype(np.float32)
    out = dosage.astype(np.float32)
    np.copyto(out, np.broadcast_to(means, out.shape), where=missing)
    return out


def fill_variant_ids(ids: np.ndarray, chrom: np.ndarray, pos: np.ndarray, ref: np.ndarray, alt: np.ndarray,
                     absent: np.ndarray, what: str) -> np.ndarray:
    """Variant ids: the file's own, else ``chrom:pos:ref:alt`` where ``absent``; a repeated id is refused.

    Duplicates are refused rather than renamed, so a feature id always names one variant of the file
    (a model's feature ids are matched to new data by name).
    """
    ids = np.asarray(ids, dtype=str)
    if absent.any():
        made = np.char.add(np.char.add(np.char.add(np.char.add(np.char.add(np.char.add(
            chrom[absent].astype(str), ":"), pos[absent].astype(str)), ":"), ref[absent].astype(str)), ":"), alt[absent].astype(str))
        ids = ids.astype(object)
        ids[absent] = made
        ids = ids.astype(str)
    uniq, first, counts = np.unique(ids, return_index=True, return_counts=True)
    if (counts > 1).any():
        dup = str(uniq[counts > 1][np.argmin(first[counts > 1])])
        at = np.flatnonzero(ids == dup)[:2]
        raise WidemlError(f"{what} names two variants {dup!r} (variants {at[0]} and {at[1]}, 0-based); give them distinct ids "
                          "(e.g. plink2 --set-all-var-ids @:#:\\$r:\\$a) or remove the duplicates (plink --rm-dup).")
    return ids


def genome_table(chrom, pos, allele_1, allele_2, info: dict):
    """The store's :class:`~wideml.storage.feature_table.FeatureTable` of kind ``"genome"`` (``allele_1`` is counted)."""
    return FeatureTable("genome", {"chrom": np.asarray(chrom, dtype=str), "pos": np.asarray(pos, dtype=np.int64),
                                   "allele_1": np.asarray(allele_1, dtype=str), "allele_2": np.asarray(allele_2, dtype=str)},
                        info)


@dataclass(frozen=True)
class Selection:
    """Which samples a genotype source stores, and their labels.

    Attributes
    ----------
    rows : ndarray of int64, shape (n_stored,), or None
        File positions of the stored samples, increasing (None: every sample, in file order).
    sample_ids : ndarray of str, shape (n_stored,)
    labels : ndarray of shape (n_stored,) or None
    """

    rows: np.ndarray | None
    sample_ids: np.ndarray
    labels: np.ndarray | None


def select_samples(ids: np.ndarray, options: IngestOptions, what: str, own=None, fids: np.ndarray | None = None) -> Selection:
    """Match the labels to the source's samples (see the module docstring).

    Parameters
    ----------
    ids : ndarray of str, shape (n_samples,)
        The source's sample ids, unique, in file order.
    options : IngestOptions
        ``labels``, ``unlabelled``, ``drop_unlabelled``, ``delimiter``.
    what : str
        How messages name the source.
    own : (labels, missing, where, fix) or None
        The source's own labels (a ``.fam`` phenotype): values, a boolean mask of the missing ones,
        how messages name their file, and the fix for missing ones; used when ``labels`` is None.
    fids : ndarray of str, shape (n_samples,), or None
        The samples' family ids (a ``.fam``), matched with those of a labels table that has them.

    Returns
    -------
    Selection
    """
    n = len(ids)
    if options.unlabelled:
        if options.labels is not None:
            raise WidemlError("labels and unlabelled=True (--unlabelled) contradict each other; give one of them.")
        return Selection(None, ids, None)
    table = None if options.labels is None else read_table(
        options.labels, options.label_column, options.id_column, options.delimiter, options.drop_unlabelled)
    if table is not None:
        if table.fids is not None and fids is not None:
            keys, lab_keys = _pairs(fids, ids), _pairs(table.fids, table.ids)
        else:
            keys, lab_keys = ids, table.ids
        rows, y = _match_ids(keys, lab_keys, table.labels, options.drop_unlabelled, what)
    elif options.labels is not None:
        lab_ids, y, keep = load_labels(options.labels, delimiter=options.delimiter, drop_unlabelled=options.drop_unlabelled)
        if lab_ids is None:
            total = len(y) if keep is None else len(keep)
            if total != n:
                raise WidemlError(f"the labels have {total} entries but {what} has {n} samples; give one label per sample "
                                  "(or two columns, sample id and label, matched by id).")
            rows = None if keep is None else np.flatnonzero(keep)
        else:
            rows, y = _match_ids(ids, lab_ids, y, options.drop_unlabelled, what)
    elif own is not None:
        values, missing, where, fix = own
        if missing.all():
            raise WidemlError(f"{where} gives no sample a phenotype (all missing); {fix}.")
        if missing.any() and not options.drop_unlabelled:
            raise missing_error(where, list(ids[missing]), "leave those samples out with --drop-unlabelled "
                                                           "(drop_unlabelled=True), or give --labels FILE")
        rows = np.flatnonzero(~missing) if missing.any() else None
        y = values[~missing]
    else:
        if options.drop_unlabelled:
            raise WidemlError("--drop-unlabelled (drop_unlabelled) leaves out samples whose label is missing, but no labels were "
                              "given; give --labels, or drop it.")
        return Selection(None, ids, None)
    kept = ids if rows is None else ids[rows]
    return Selection(None if rows is None else rows.astype(np.int64), kept, validate_labels(y, len(kept)))


def _pairs(fids: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """``"FID IID"`` keys."""
    return np.char.add(np.char.add(np.asarray(fids, dtype=str), " "), np.asarray(ids, dtype=str))


def _match_ids(ids: np.ndarray, lab_ids: np.ndarray, y: np.ndarray, drop: bool, what: str) -> tuple[np.ndarray | None, np.ndarray]:
    """Rows (file order) and labels of a two-column labels file matched to the source's sample ids."""
    pos = {str(s): i for i, s in enumerate(ids)}
    unknown = [str(s) for s in lab_ids if str(s) not in pos]
    if unknown:
        raise WidemlError(f"{len(unknown)} sample id(s) of the labels file are not samples of {what} ({listed(unknown)}); "
                          f"fix the ids (the source's look like {listed(ids[:3])}).")
    at = np.array([pos[str(s)] for s in lab_ids], dtype=np.int64)
    order = np.argsort(at)
    rows, y = at[order], np.asarray(y)[order]
    if len(rows) < len(ids) and not drop:
        left = np.setdiff1d(np.arange(len(ids)), rows)
        raise WidemlError(f"{len(left)} sample(s) of {what} have no label ({listed(ids[left])}); add them to the labels file, "
                          "or leave them out with --drop-unlabelled (drop_unlabelled=True).")
    return (None if len(rows) == len(ids) else rows), y


class GenotypeSource(ArraySource):
    """A genotype matrix read in blocks of whole variants (``access = FEATURES``, full-height source chunks).

    Subclasses (PLINK 1, VCF Zarr) set ``kind``, ``stored_dtype`` and write ``open``.
    """

    accepts = frozenset({"impute", "label_column", "id_column"})

    @classmethod
    def check_options(cls, options: IngestOptions) -> None:
        """``label_column``/``id_column`` name columns of the labels table, so they need ``labels``."""
        if (options.label_column is not None or options.id_column is not None) and options.labels is None:
            raise WidemlError("--label-column/--id-column (label_column/id_column) name columns of the labels table of a "
                              "genotype source; give the table with --labels FILE (labels=), or drop them.")

    def set_samples(self, selection: Selection) -> None:
        """Record the stored samples' ids and labels."""
        self.sample_ids, self.labels = selection.sample_ids, selection.labels


def count_missing(reader, n_variants: int, block: int) -> int:
    """Missing calls of the stored samples, reading ``block`` variants at a time (one bounded-memory read).

    ``reader.missing_count(c0, c1)`` counts those of variants ``c0 .. c1``.
    """
    return int(sum(reader.missing_count(c0, min(n_variants, c0 + block)) for c0 in range(0, n_variants, block)))


def scan_block(n_stored: int, bytes_per_value: int, budget: int = 64 << 20) -> int:
    """Variants per block of the missing-call count, so a block holds about ``budget`` bytes."""
    return int(max(1, budget // max(1, n_stored * bytes_per_value)))
