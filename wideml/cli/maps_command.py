"""``wideml maps MODEL -o DIR``: write every p-sized map of a saved model (images or arrays, PNGs, top-feature TSVs)."""

from __future__ import annotations

import argparse

from wideml.cli.argtypes import positive_int


def register(sub, common) -> None:
    p = sub.add_parser(
        "maps", parents=[common], help="write a model's maps (directions, class means, mean difference, LDA weights)",
        description="Write every p-sized result of a saved model into a new folder DIR (all or nothing): NIfTI images in "
                    "the training scans' space when the model's store came from images (else .npy), a PNG panel per map, "
                    "a <name>_top.tsv of the top features when the store had feature_ids, and maps.json. Sign convention: "
                    "positive = higher in the second class (in the order of the model's classes).",
    )
    p.add_argument("model", help="model directory written by `wideml fit`")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="folder to create for the maps")
    p.add_argument("--top", type=positive_int, default=50, metavar="N", help="rows of each top-features TSV (default 50)")
    p.add_argument("--png", choices=("auto", "nilearn", "matplotlib", "none"), default="auto",
                   help="how PNG panels are drawn (auto: nilearn when installed, else matplotlib; none: no PNG)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing DIR")
    p.set_defaults(handler=run_maps)


def run_maps(args: argparse.Namespace) -> int:
    """Write the maps; print one line per map and where they are; exit 0."""
    import json

    from wideml.maps import write_maps
    from wideml.maps.files import MANIFEST

    files = write_maps(args.model, args.output, top=args.top, overwrite=args.overwrite,
                       plot=None if args.png == "none" else args.png)
    if isinstance(files[-1], str):  # put in place on an object store: read the manifest back from there
        import fsspec

        from wideml.storage.urls import protocol_of, storage_options

        with fsspec.open(files[-1].rsplit("/", 1)[0] + "/" + MANIFEST, "rb", **storage_options(None, protocol_of(files[-1]))) as fh:
            manifest = json.loads(fh.read())
    else:
        manifest = json.loads((files[-1].parent / MANIFEST).read_text())
    for entry in manifest["maps"]:
        intercept = f" (intercept b = {entry['intercept']!r})" if "intercept" in entry else ""
        print(f"{entry['name']}: {', '.join(entry['files'])}{intercept}")
    for note in manifest["notes"]:
        print(f"note: {note}")
    print(f"wrote {len(manifest['maps'])} maps ({len(files)} files) to {args.output}; sign convention: {manifest['sign_convention']}")
    return 0
