"""``wideml ingest`` and ``wideml rechunk``."""

from __future__ import annotations

import argparse

from wideml.cli.argtypes import positive_int as _positive_int
from wideml.exceptions import WidemlError


def register(sub, common) -> None:
    p = sub.add_parser(
        "ingest", parents=[common],
        help="write a .npy/.h5/.csv file, a zarr array or a folder of per-sample .npy/.nii files to a feature store",
        description="Write data to a new feature store with full-height feature chunks, in bounded memory.",
    )
    p.add_argument("source", help="a .npy file, file.h5 or file.h5:/dataset, a .csv/.tsv file, a zarr array, "
                                  "a PLINK .bed (its .bim/.fam beside it), a VCF Zarr store, "
                                  "a BIDS dataset folder (see BIDS derivatives below), "
                                  "or a folder of .npy files (one per sample) or of NIfTI .nii/.nii.gz images "
                                  "(3-D volumes, or 4-D series: one sample per volume), or of CIFTI-2 .dscalar.nii/.dtseries.nii files "
                                  "(one sample per map or time point) or GIFTI .func.gii/.shape.gii files (one sample per data "
                                  "array; hemi-L/hemi-R pairs read left then right)")
    p.add_argument("-o", "--output", dest="output", required=True, metavar="OUT", help="new store (.h5/.hdf5 for HDF5, else zarr v3)")
    lab = p.add_mutually_exclusive_group()
    lab.add_argument("--labels", metavar="FILE", help="labels: a CSV/TSV (label, or id/file name and label), .npy, or file.h5:/y; "
                                                      "for a folder also a table such as BIDS participants.tsv (with --label-column)")
    lab.add_argument("--unlabelled", "--unlabeled", action="store_true", help="store no labels (a store for prediction only)")
    p.add_argument("--label-column", metavar="NAME|INDEX",
                   help="CSV source: the column holding the labels; folder: the label column of the --labels table, "
                        "matched to files by subject id (sub-XX in the file name); genotype source: the label column of "
                        "the --labels table (default: the last of IID,label or FID,IID,pheno)")
    p.add_argument("--id-column", metavar="NAME|INDEX",
                   help="CSV source: the column holding sample ids (default: the one column named like "
                        "id/participant_id/subject/sample_id, if its values are unique); folder: the subject id column of the "
                        "--labels table (default: the one column named like participant_id/subject/id, else the one holding "
                        "the files' sub-XX ids); genotype source: the IID column of the --labels table (default: the "
                        "column named IID, else the first of two or the second of three); it must differ from --label-column")
    p.add_argument("--drop-unlabelled", "--drop-unlabeled", action="store_true",
                   help="leave out samples whose label is missing (NA, n/a, #N/A, <NA>, NaN, null, None, empty ...) instead of refusing "
                        "them: CSV rows, files of a folder, and files whose subject has no row in a labels table")
    p.add_argument("--mask", metavar="FILE|auto",
                   help="folder of NIfTI volumes: store only the voxels non-zero in this NIfTI mask (same grid and affine), "
                        "or 'auto': the voxels non-zero in every sample (one extra pass)")
    head = p.add_mutually_exclusive_group()
    head.add_argument("--header", dest="header", action="store_const", const=True, default="auto",
                      help="CSV source: the first line names the columns (default: detected)")
    head.add_argument("--no-header", dest="header", action="store_const", const=False, help="CSV source: there is no header line")
    p.add_argument("--delimiter", metavar="CHAR", help="CSV source and --labels file: field separator, e.g. ';' or '\\t' "
                                                       "(default comma, tab for .tsv; a labels file separated by that "
                                                       "default is read so)")
    p.add_argument("--dataset", metavar="NAME", help="HDF5 source: the dataset holding X")
    geno = p.add_argument_group("genotypes", "PLINK 1 .bed filesets (labels from the .fam phenotype unless --labels or "
                                             "--unlabelled) and VCF Zarr stores, stored as int8 allele dosages")
    geno.add_argument("--impute", choices=("none", "mean"),
                      help="missing genotype calls: 'none' refuses them (default), 'mean' fills each with its variant's mean "
                           "dosage (the store then holds float32)")
    _bids_flags(p)
    p.add_argument("--feature-chunk", type=_positive_int, metavar="N", help="features per stored chunk (default about chunk-size bytes)")
    p.add_argument("--dtype", metavar="DTYPE", help="stored dtype, e.g. float32 (default: floats kept, integers upcast, CSV float64)")
    p.add_argument("--allow-lossy-cast", action="store_true",
                   help="cast to --dtype even when values change (float to int, out-of-range values, float64 to float16); "
                        "by default such a cast is refused naming the first value")
    p.add_argument("--missing-chunks-are-fill", action="store_true",
                   help="missing chunks of a zarr/HDF5 source mean the fill value; the new store records the same "
                        "(by default a missing chunk is an error)")
    p.add_argument("--compressor", choices=("none", "zstd", "lz4"), help="codec of the new store (default from config)")
    _checksum_flags(p)
    p.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    p.set_defaults(handler=run_ingest)

    r = sub.add_parser(
        "rechunk", parents=[common], help="copy a store into full-height feature chunks (bounded memory)",
        description="Copy a feature store (e.g. one chunked along samples) into a new store with full-height feature chunks.",
    )
    r.add_argument("input", metavar="IN", help="existing feature store")
    r.add_argument("out", metavar="OUT", nargs="?", help="new store (or give it with -o)")
    r.add_argument("-o", "--output", dest="output", metavar="OUT", help="new store (.h5/.hdf5 for HDF5, else zarr v3)")
    r.add_argument("--feature-chunk", type=_positive_int, metavar="N", help="features per stored chunk (default about chunk-size bytes)")
    r.add_argument("--sample-chunk", type=_positive_int, metavar="N", help="samples per stored chunk (default all: full height)")
    r.add_argument("--compressor", choices=("none", "zstd", "lz4"), help="codec of the new store (default from config)")
    _checksum_flags(r)
    r.add_argument("--overwrite", action="store_true", help="replace OUT if it exists (OUT must be another store than IN: an output is never its own input)")
    r.set_defaults(handler=run_rechunk)


def _checksum_flags(p) -> None:
    group = p.add_mutually_exclusive_group()
    group.add_argument("--checksum", dest="checksum", action="store_const", const=True, default=None,
                       help="store a crc32c checksum with every chunk of X, verified on every read (default from config checksum)")
    group.add_argument("--no-checksum", dest="checksum", action="store_const", const=False, help="store no checksums")


def _report(path) -> None:
    import warnings

    from wideml.exceptions import PerformanceWarning
    from wideml.storage import format_summary, open_store

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PerformanceWarning)
        print(format_summary(open_store(path).summary()))


def run_ingest(args: argparse.Namespace) -> int:
    from wideml.sources.ingest import ingest

    if args.labels is None and args.label_column is None and not args.unlabelled and not _brings_labels(args.source):
        raise WidemlError(
            "no labels given; pass --labels FILE (or --label-column for a CSV source), or --unlabelled for a prediction-only store."
        )
    if args.unlabelled and args.label_column is not None:
        raise WidemlError("--unlabelled and --label-column contradict each other; give one of them.")
    out = ingest(
        args.source, args.output, labels=args.labels, label_column=args.label_column, id_column=args.id_column,
        dataset=args.dataset, header=args.header, delimiter=args.delimiter, feature_chunk=args.feature_chunk,
        dtype=args.dtype, compressor=args.compressor, checksum=args.checksum, allow_lossy_cast=args.allow_lossy_cast,
        missing_chunks_are_fill=args.missing_chunks_are_fill, mask=args.mask, drop_unlabelled=args.drop_unlabelled,
        overwrite=args.overwrite, unlabelled=args.unlabelled, impute=args.impute, bids=_bids_query(args),
    )
    _report(out)
    return 0


def _bids_flags(p) -> None:
    bids = p.add_argument_group(
        "BIDS derivatives", "a BIDS dataset folder (recognised by its dataset_description.json): one sample per selected scan, "
                            "id sub-XX[_ses-YY][_run-N]; labels from its participants.tsv with --label-column; the mask is the "
                            "intersection of the scans' desc-brain_mask files unless --mask is given")
    bids.add_argument("--bids", action="store_true", help="read SOURCE as a BIDS dataset (implied by any flag of this group)")
    bids.add_argument("--derivatives", metavar="NAME", help="read the derivatives dataset derivatives/NAME (e.g. fmriprep)")
    bids.add_argument("--space", metavar="LABEL", help="the space- entity, e.g. MNI152NLin2009cAsym ('' selects files without one)")
    bids.add_argument("--desc", metavar="LABEL", help="the desc- entity, e.g. preproc")
    bids.add_argument("--suffix", metavar="SUFFIX", help="the suffix, e.g. T1w or bold")
    bids.add_argument("--datatype", metavar="FOLDER", help="the datatype folder: anat, func, dwi ...")
    bids.add_argument("--session", metavar="LABELS", help="sessions to take, e.g. 1,2 (default all)")
    bids.add_argument("--subjects", metavar="LABELS", help="subjects to take, e.g. 01,02 or sub-01,sub-02 (default all)")
    bids.add_argument("--filter", dest="bids_filters", metavar="ENTITY=VALUE", action="append",
                      help="another entity to match, e.g. task=rest or res=2 (repeatable)")
    bids.add_argument("--average", choices=("runs", "sessions"),
                      help="average the runs of each session (or every scan of a subject) into one sample; 3-D scans only")


#: The flags of the "BIDS derivatives" group that select scans, and their fields of wideml.sources.bids_query.BidsQuery.
_BIDS_FIELDS = {"derivatives": "derivatives", "space": "space", "desc": "desc", "suffix": "suffix", "datatype": "datatype",
                "session": "sessions", "subjects": "subjects", "bids_filters": "filters", "average": "average"}


def _bids_query(args: argparse.Namespace) -> dict | None:
    """The BIDS selection of the flags (None when no BIDS flag is given: the registry decides)."""
    given = {field: getattr(args, flag) for flag, field in _BIDS_FIELDS.items() if getattr(args, flag, None) is not None}
    if not given and not getattr(args, "bids", False):
        return None
    return given


def _brings_labels(source: str) -> bool:
    """Whether the source holds its own labels (a PLINK .bed's .fam phenotype).

    A source that does not exist or is not recognised is named here, before any advice about labels.
    """
    from wideml.sources.ingest import pick_source

    reader, _ = pick_source(source)
    return bool(reader.brings_labels)


def run_rechunk(args: argparse.Namespace) -> int:
    from wideml.storage.rechunk import rechunk

    if args.out and args.output and args.out != args.output:
        raise WidemlError(f"two outputs given ({args.out!r} and -o {args.output!r}); give OUT once.")
    output = args.output or args.out
    if not output:
        raise WidemlError("no output given; run `wideml rechunk IN OUT` (or -o OUT).")
    out = rechunk(args.input, output, feature_chunk=args.feature_chunk, sample_chunk=args.sample_chunk,
                  compressor=args.compressor, checksum=args.checksum, overwrite=args.overwrite)
    _report(out)
    return 0

