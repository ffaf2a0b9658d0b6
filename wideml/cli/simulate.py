"""``wideml simulate``: write a simulated feature store chunk by chunk (``--list`` shows the settings)."""

from __future__ import annotations

import argparse
import json
import sys

from wideml.exceptions import WidemlError


def register(sub, common) -> None:
    p = sub.add_parser(
        "simulate", parents=[common],
        help="simulate a LOL- or encoder-paper setting into a feature store",
        description="Simulate a setting chunk by chunk into a zarr v3 (or .h5) feature store with memory "
        "independent of p. The values depend only on the seed, never on the chunking. "
        "`wideml simulate --list` shows the settings and their parameters.",
    )
    p.add_argument("name", nargs="?", metavar="NAME", help="setting name (or 'list')")
    p.add_argument("--list", action="store_true", help="list the settings with one-line descriptions and exit")
    p.add_argument("--n-samples", type=int, metavar="N", help="number of samples n (required)")
    p.add_argument("--n-features", type=int, metavar="P", help="number of features p (default: the setting's)")
    p.add_argument("-o", "--output", metavar="OUT", help="output store (zarr directory, or .h5/.hdf5)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--feature-chunk", type=int, metavar="C", help="features per stored chunk (default from config chunk-size)")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32", help="stored dtype (default float32)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output")
    p.add_argument("-P", "--param", action="append", default=[], metavar="KEY=VALUE",
                   help="setting parameter, repeatable (e.g. -P b=4 -P priors=0.3,0.7 -P dense_max=0)")
    p.set_defaults(handler=run_simulate)


def parse_params(items: list[str]) -> dict[str, object]:
    """``["b=4", "priors=0.3,0.7"]`` → ``{"b": 4, "priors": "0.3,0.7"}`` (values coerced by the setting)."""
    params: dict[str, object] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise WidemlError(f"parameter {item!r} is not KEY=VALUE; write e.g. -P b=4.")
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = value
        params[key.strip().replace("-", "_")] = parsed
    return params


def format_listing() -> str:
    """The table printed by ``wideml simulate --list``."""
    from wideml.sims import SETTINGS

    width = max(len(name) for name in SETTINGS)
    return "\n".join(f"{name:<{width}}  {setting.summary()}" for name, setting in SETTINGS.items())


def run_simulate(args: argparse.Namespace) -> int:
    from wideml.sims import simulate_to_store

    if args.list or args.name == "list":
        print(format_listing())
        return 0
    if not args.name:
        raise WidemlError("no setting given; run `wideml simulate NAME --n-samples N -o OUT` (see `wideml simulate --list`).")
    from wideml.sims.registry import get_setting

    get_setting(args.name)  # unknown names fail before anything else is checked
    if args.n_samples is None:
        raise WidemlError("missing --n-samples; say how many samples to simulate, e.g. --n-samples 200.")
    if not args.output:
        raise WidemlError("missing -o OUT; name the store to write, e.g. -o sim.zarr.")
    path = simulate_to_store(
        args.name, args.output, args.n_samples, args.n_features, seed=args.seed,
        feature_chunk=args.feature_chunk, dtype=args.dtype, overwrite=args.overwrite, **parse_params(args.param),
    )
    print(f"wrote {path}", file=sys.stderr)
    return 0
