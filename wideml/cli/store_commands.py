"""``wideml info``."""

from __future__ import annotations

import argparse
import json


def register(sub, common) -> None:
    p = sub.add_parser("info", parents=[common], help="describe a feature store (shape, chunks, classes, dtype)")
    p.add_argument("store", help="zarr v3 directory or HDF5 file, or a zarr v3 store's URL (s3://bucket/s.zarr, gs://..., file://...)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(handler=run_info, needs_scheduler=False)


def run_info(args: argparse.Namespace) -> int:
    from wideml.storage import format_summary, open_store

    info = open_store(args.store).summary()
    print(json.dumps(info, indent=2) if args.json else format_summary(info))
    return 0
