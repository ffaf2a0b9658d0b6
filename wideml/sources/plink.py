"""PLINK 1 binary filesets: ``data.bed`` with ``data.bim`` (variants) and ``data.fam`` (samples) beside it.

Read with bed-reader (``pip install 'wideml[genomics]'``). The ``.bed`` file is
variant-major, so a block of variants for all samples is one read: the source
hands out feature blocks (full-height source chunks), opened lazily in each
copy task.

Checked before anything is read from the ``.bed``: the ``.bim`` and ``.fam``
files exist and every line has its six fields (any whitespace, blank lines
skipped); the ``.bed`` starts with PLINK's magic bytes in variant-major mode
(mode byte 1; 0 is the old sample-major mode, anything else no .bed);
its size is exactly ``3 + n_variants * ceil(n_samples / 4)`` bytes (a
truncated ``.bed``, or a ``.fam``/``.bim`` of other data, is refused; a
``.fam`` with up to 3 extra lines in the last byte's padding cannot be told
from the size alone).

Ids
---
* samples: the ``.fam`` IID when IIDs are unique in the file, else
  ``FID_IID`` (FID, underscore, IID); a repeated (FID, IID) pair is refused.
* variants: the ``.bim`` id, or ``chrom:pos:allele_2:allele_1`` where it is
  ``.`` (REF:ALT as ``plink --vcf`` writes the alleles); a repeated id is refused.

X holds the count of ``.bim`` allele 1 (bed-reader's ``count_A1=True``,
PLINK's default) as int8; missing calls follow the policy of
:mod:`wideml.sources.genotypes`. Labels are the ``.fam`` phenotype (6th
column: 1 = control, 2 = case, kept as the integers 1 and 2; -9 and 0 are
missing) unless ``labels`` is given (a labels file, also PLINK's ``FID IID
pheno`` phenotype file matched by family and individual id: see
:mod:`wideml.sources.genotype_labels`) or ``unlabelled``; a quantitative
phenotype (any other number) is refused as labels.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from wideml.exceptions import WidemlError
from wideml.sources.base import IngestOptions
from wideml.sources.genotypes import (
    GenotypeSource,
    Namer,
    check_impute,
    count_missing,
    fill_variant_ids,
    finish_block,
    genome_table,
    scan_block,
    select_samples,
    value_dtype,
)
from wideml.sources.locations import Location
from wideml.storage.label_cells import check_unique_ids

#: First bytes of a PLINK 1 .bed file: magic number, then 0x01 for variant-major.
BED_MAGIC = b"\x6c\x1b"
VARIANT_MAJOR = 1
SAMPLE_MAJOR = 0
#: bed-reader's int8 value of a missing call.
BED_MISSING = -127
#: .fam phenotype values meaning "missing" (PLINK 1).
FAM_MISSING = ("-9", "0", "NA", "na", "nan", "NaN")


def _records(path: Path, what: str, fields: int) -> tuple[list[list[str]], list[int]]:
    """Whitespace-separated records of a .fam/.bim file (blank lines skipped) and their 1-based line numbers."""
    try:
        text = path.open(encoding="utf-8")
    except FileNotFoundError:
        raise WidemlError(f"{what} {str(path)!r} is missing; put the .bim and .fam files beside the .bed, with the same name.") from None
    except OSError as exc:
        raise WidemlError(f"cannot read {what} {str(path)!r} ({exc.strerror or exc}); check the file.") from None
    records, lines = [], []
    with text:
        try:
            for number, line in enumerate(text, 1):
                cells = line.split()
                if not cells:
                    continue
                if len(cells) != fields:
                    raise WidemlError(f"{what} {str(path)!r} has {len(cells)} fields on line {number} but needs {fields}; "
                                      "fix the line (fields are separated by spaces or tabs).")
                records.append(cells)
                lines.append(number)
        except UnicodeDecodeError:
            raise WidemlError(f"{what} {str(path)!r} is not a text file; give the PLINK .{path.suffix.lstrip('.')} text file.") from None
    if not records:
        raise WidemlError(f"{what} {str(path)!r} is empty; a PLINK fileset needs at least one sample and one variant.")
    return records, lines


def _columns(records: list[list[str]]) -> list[np.ndarray]:
    return [np.array(col, dtype=str) for col in zip(*records)]


def _sample_ids(fid: np.ndarray, iid: np.ndarray, fam: Path, lines: list[int]) -> tuple[np.ndarray, str]:
    """IIDs when unique, else FID_IID; a repeated (FID, IID) pair refused."""
    if len(np.unique(iid)) == len(iid):
        return iid, "iid"
    pairs = np.char.add(np.char.add(fid, "_"), iid)
    keys = [f"{f} {i}" for f, i in zip(fid, iid)]
    check_unique_ids(keys, f".fam file {str(fam)!r} (family and individual ids)", [f"line {n}" for n in lines])
    if len(np.unique(pairs)) != len(pairs):
        raise WidemlError(f".fam file {str(fam)!r} has individual ids that repeat across families and whose FID_IID names "
                          "collide; give every sample a unique IID.")
    return pairs, "fid_iid"


def _phenotype(pheno: np.ndarray, fam: Path, lines: list[int]):
    """The .fam phenotype as own labels ``(values, missing, where, fix)``, or a quantitative one refused when used."""
    missing = np.isin(pheno, FAM_MISSING)
    where = f"the .fam file {str(fam)!r} (phenotype column)"
    fix = "give labels with --labels FILE (labels=), or --unlabelled (unlabelled=True) for a prediction-only store"
    other = ~missing & ~np.isin(pheno, ("1", "2"))
    if other.any():
        k = int(np.flatnonzero(other)[0])
        return None, (f"the .fam file {str(fam)!r} has a phenotype that is not case/control ({str(pheno[k])!r} on line {lines[k]}; "
                      f"PLINK codes 1 = control, 2 = case, -9/0 = missing), e.g. a quantitative trait; {fix}.")
    values = np.where(missing, 0, np.char.equal(pheno, "2").astype(np.int64) + 1)
    return (values, missing, where, fix), None


class PlinkNamer(Namer):
    """Names variants and samples from the .bim/.fam lines, read only for a message."""

    def __init__(self, bim: str, fam: str, style: str):
        self.bim, self.fam, self.style = bim, fam, style

    @staticmethod
    def _record(path: str, k: int) -> list[str]:
        with open(path, encoding="utf-8") as f:
            seen = -1
            for line in f:
                cells = line.split()
                if cells:
                    seen += 1
                    if seen == k:
                        return cells
        return ["?"] * 6

    def variant(self, j: int) -> str:
        chrom, vid, _, pos, a1, a2 = self._record(self.bim, j)
        return vid if vid != "." else f"{chrom}:{pos}:{a2}:{a1}"

    def sample(self, i: int) -> str:
        fid, iid = self._record(self.fam, i)[:2]
        return iid if self.style == "iid" else f"{fid}_{iid}"


class BedReader:
    """Blocks ``[r0:r1, c0:c1]`` of stored samples × variants of a .bed file, dosages after the missing-call policy.

    Picklable: bed-reader opens the file lazily in the process that reads (one thread per read; the
    copy runs reads in parallel tasks). ``rows`` are the file positions of the stored samples.
    """

    def __init__(self, path: str, n_file: int, n_variants: int, rows: np.ndarray | None, impute: str, namer: PlinkNamer):
        self.path, self.n_file, self.n_variants = path, int(n_file), int(n_variants)
        self.rows, self.impute, self.namer = rows, impute, namer
        self.dtype = value_dtype(impute)
        self.n = self.n_file if rows is None else len(rows)
        self._bed = None

    def __getstate__(self):
        return {**self.__dict__, "_bed": None}

    def _read(self, r0: int, r1: int, c0: int, c1: int, threads: int | None = 1) -> np.ndarray:
        if self._bed is None:
            from bed_reader import open_bed

            self._bed = open_bed(self.path, iid_count=self.n_file, sid_count=self.n_variants, count_A1=True)
        rows = np.s_[r0:r1] if self.rows is None else self.rows[r0:r1]
        try:
            return self._bed.read(index=(rows, np.s_[c0:c1]), dtype="int8", order="C", num_threads=threads)
        except (ValueError, OSError) as exc:
            raise WidemlError(f"cannot read variants {c0}..{c1 - 1} of {self.path!r} ({exc}); the file changed or is damaged "
                              "since it was opened — check it and ingest again.") from None

    def __getitem__(self, key) -> np.ndarray:
        rs, cs = key
        r0, r1, _ = rs.indices(self.n)
        c0, c1, _ = cs.indices(self.n_variants)
        lo, hi = (0, self.n) if self.impute == "mean" else (r0, r1)  # a mean needs every stored sample
        block = self._read(lo, hi, c0, c1)
        rows = None if self.rows is None else self.rows[lo:hi]
        if self.rows is None and lo:
            rows = np.arange(lo, hi)
        out = finish_block(block, block == BED_MISSING, self.impute, c0, rows, self.namer, repr(self.path))
        return out[r0 - lo:r1 - lo]

    def missing_count(self, c0: int, c1: int) -> int:
        """Missing calls of variants ``c0 .. c1`` among the stored samples."""
        return int(np.count_nonzero(self._read(0, self.n, c0, c1, threads=None) == BED_MISSING))


class PlinkSource(GenotypeSource):
    """A PLINK 1 binary fileset (.bed/.bim/.fam)."""

    kind = "plink"
    brings_labels = True

    @classmethod
    def open(cls, location: Location, options: IngestOptions) -> PlinkSource:
        bed = location.path
        impute = check_impute(options.impute)
        try:
            import bed_reader  # noqa: F401 - checked before any work
        except ImportError:
            raise WidemlError("reading PLINK .bed files needs bed-reader; install it with pip install 'wideml[genomics]'.") from None
        bim, fam = bed.with_suffix(".bim"), bed.with_suffix(".fam")
        for path, what in ((bim, ".bim file"), (fam, ".fam file")):
            if not path.is_file():
                raise WidemlError(f"{what} {str(path)!r} is missing; put the .bim and .fam files beside the .bed, with the same name.")
        n_bytes = _check_header(bed)
        fam_rec, fam_lines = _records(fam, ".fam file", 6)
        bim_rec, _ = _records(bim, ".bim file", 6)
        n, m = len(fam_rec), len(bim_rec)
        need = 3 + m * -(-n // 4)
        if n_bytes != need:
            raise WidemlError(f"{str(bed)!r} holds {n_bytes} bytes but its .fam ({n} samples) and .bim ({m} variants) need "
                              f"3 + {m} x ceil({n}/4) = {need}; the .bed is {'truncated' if n_bytes < need else 'longer'} or the "
                              ".fam/.bim belong to other data — export the fileset again.")
        fid, iid, _, _, _, pheno = _columns(fam_rec)
        ids, style = _sample_ids(fid, iid, fam, fam_lines)
        chrom, vid, _, pos_text, a1, a2 = _columns(bim_rec)
        pos = _positions(pos_text, bim)
        what = repr(str(bed))
        vids = fill_variant_ids(vid, chrom, pos, a2, a1, vid == ".", f".bim file {str(bim)!r}")
        own = None
        if options.labels is None and not options.unlabelled:
            own, refusal = _phenotype(pheno, fam, fam_lines)
            if refusal is not None:
                raise WidemlError(refusal)
        selection = select_samples(ids, options, what, own, fids=fid)
        reader = BedReader(str(bed), n, m, selection.rows, impute, PlinkNamer(str(bim), str(fam), style))
        imputed = count_missing(reader, m, scan_block(reader.n, 1)) if impute == "mean" else 0
        src = cls(reader, (reader.n, m), reader.dtype, (reader.n, 1), False, f"plink:{bed}")
        src.set_samples(selection)
        src.feature_ids = vids
        src.stored_dtype = reader.dtype
        src.feature_table = genome_table(chrom, pos, a1, a2, {
            "format": "plink1", "counted_allele": "allele_1", "sample_ids": "IID" if style == "iid" else "FID_IID",
            "missing_calls": "refuse" if impute == "none" else "mean", "n_imputed": imputed})
        src.title = f"ingest {bed.name}"
        return src


def _check_header(bed: Path) -> int:
    """The .bed's size, after checking its magic bytes and variant-major mode."""
    try:
        with bed.open("rb") as f:
            head = f.read(3)
        size = bed.stat().st_size
    except OSError as exc:
        raise WidemlError(f"cannot read {str(bed)!r} ({exc.strerror or exc}); check the file.") from None
    if len(head) < 3 or head[:2] != BED_MAGIC:
        raise WidemlError(f"{str(bed)!r} is not a PLINK 1 .bed file (it does not start with the bytes 6c 1b); give a .bed "
                          "written by PLINK (plink --make-bed).")
    if head[2] == SAMPLE_MAJOR:
        raise WidemlError(f"{str(bed)!r} is a sample-major .bed (mode byte 0), which only very old PLINK versions "
                          "wrote; convert it with plink --bfile NAME --make-bed --out NEW.")
    if head[2] != VARIANT_MAJOR:
        raise WidemlError(f"{str(bed)!r} is not a valid PLINK 1 .bed (mode byte {head[2]}; expected 1); the file is damaged or "
                          "is not a .bed — export the fileset again (plink --make-bed).")
    return size


def fileset_part(source) -> str | None:
    """The refusal for a path that names a PLINK 1 fileset by its ``.bim``/``.fam`` or by its bare prefix, else None.

    ``data.bim`` or ``data.fam`` (a file, or missing) names the fileset whose ``.bed`` is to be given; ``data``
    (missing) when ``data.bed`` exists is the prefix ``plink --bfile`` takes.
    """
    path = Path(os.path.abspath(os.path.expanduser(os.fspath(source))))
    bed = path.with_suffix(".bed")
    if path.suffix.lower() in (".bim", ".fam") and not path.is_dir():
        part = "variant" if path.suffix.lower() == ".bim" else "sample"
        return (f"{str(path)!r} is the {part} file of a PLINK 1 fileset; give the .bed ({str(bed)!r}), with the .bim and .fam "
                "beside it.")
    with_bed = path.with_name(path.name + ".bed")
    if not path.exists() and with_bed.is_file():
        return f"source {str(path)!r} does not exist; for the PLINK 1 fileset of that prefix give the .bed: {str(with_bed)!r}."
    return None


def _positions(text: np.ndarray, bim: Path) -> np.ndarray:
    """Base-pair positions of the .bim (4th column) as int64; a non-integer refused naming its line."""
    try:
        return text.astype(np.int64)
    except ValueError:
        bad = next(i for i, t in enumerate(text) if not t.lstrip("-").isdigit())
        raise WidemlError(f".bim file {str(bim)!r} has the position {str(text[bad])!r} for variant {bad} (0-based); positions "
                          "must be integers — fix the file.") from None
