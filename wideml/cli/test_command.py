"""``wideml test``: a two-sample test (Hotelling's T² after a projection) on a labelled store.

Prints the statistic and the p-value and exits 0 whatever the p-value (a test
result, not a decision); bad input is one sentence and exit status 2. See
:func:`wideml.estimators.two_sample.two_sample_test` for the methods and
their validity.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from wideml.cli.argtypes import positive_int as _positive_int
from wideml.exceptions import WidemlError


#: ``--projection`` and ``--method`` choices: those of :func:`wideml.two_sample_test` (kept here so that building the
#: parser imports no estimator; tests/cli/test_test_command.py checks they agree).
PROJECTIONS = ("lol", "pca", "rrlda", "lfl", "rp")
METHODS = ("split", "permutation")


def register(sub, common) -> None:
    """Add ``wideml test`` to the subcommands."""
    p = sub.add_parser("test", parents=[common],
                       help="two-sample test: Hotelling's T² after a projection learned without the tested samples")
    p.add_argument("store", help="feature store whose labels y hold exactly two groups")
    p.add_argument("--projection", choices=PROJECTIONS, default="lol",
                   help="projection before Hotelling's test (default lol: LOL with class means)")
    p.add_argument("--n-components", type=_positive_int, help="dimension d of the projection (default 2)")
    p.add_argument("--method", choices=METHODS, default="split",
                   help="split: learn the projection on one stratified half and F-test the other (exact under Gaussian data; "
                        "default); permutation: relearn the projection under every relabelling (distribution-free)")
    p.add_argument("--permutations", type=_positive_int, default=999, metavar="N", help="relabellings for --method permutation (default 999)")
    p.add_argument("--seed", type=int, default=0, help="seed of the half split or of the permutations (default 0)")
    p.add_argument("-o", "--output", help="write the result as JSON")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output")
    p.set_defaults(handler=run_test)


def run_test(args: argparse.Namespace) -> int:
    """Run the test on the store's labels; print T², F and the p-value (and write JSON with -o)."""
    from wideml.estimators.two_sample import two_sample_test
    from wideml.storage import open_store
    from wideml.storage.atomic import atomic_output, check_output

    if args.output:
        check_output(args.output, args.overwrite)
    store = open_store(args.store)
    if store.y is None:
        raise WidemlError(f"store {args.store!r} holds no labels y; the two-sample test needs labels of two groups.")
    result = two_sample_test(store, projection=args.projection, n_components=args.n_components, method=args.method,
                             n_permutations=args.permutations, random_state=args.seed)
    groups = ", ".join(f"{label}: {count}" for label, count in result.n_per_group.items())
    how = (f"learned on {result.n_learn} samples, tested on the other {sum(result.n_per_group.values())}" if result.method == "split"
           else f"{result.n_permutations} permutations")
    print(f"Hotelling T² = {result.statistic:.6g} after {result.projection} (d = {result.n_components}; {how}; tested per group {groups})")
    print(f"F = {result.f_statistic:.6g} (df {result.df[0]}, {result.df[1]})")
    print(f"p-value = {result.p_value:.6g} ({result.method}; {result.n_passes} pass{'' if result.n_passes == 1 else 'es'} over X)")
    if args.output:
        doc = result.to_dict() | {"store": str(Path(args.store).resolve())}
        with atomic_output(args.output, overwrite=True, workers_write=False) as tmp, open(tmp, "wb") as fh:
            fh.write(json.dumps(doc, indent=2).encode())
        print(f"result written to {args.output}")
    return 0
