"""``wideml compare``: several methods cross-validated on several stores, ranks and exact Wilcoxon tests.

A thin layer over :func:`wideml.estimators.compare.compare`. Before any pass:
the outputs (``-o`` JSON, ``--plot`` PNG) are checked like ``wideml cv``'s (a
file wideml cannot prove it wrote is never replaced; an existing one only with
``--overwrite``), no output may be or lie inside a store, every store must
open and hold labels, the methods must be known, and ``--plot`` needs
matplotlib; each failure is one sentence and exit status 2. A store that opens
but cannot be scored (e.g. a class smaller than the folds) is reported in the
table and the JSON and the others go on; if no store can be scored the command
exits 2 and writes nothing. Outputs are written aside and renamed into place.
"""

from __future__ import annotations

import argparse
import os

from wideml.cli.argtypes import positive_int as _positive_int
from wideml.cli.argtypes import repeats as _repeats
from wideml.cli.argtypes import seed as _seed
from wideml.exceptions import WidemlError

#: Method names ``--methods`` accepts (those of :data:`wideml.estimators.compare.METHOD_NAMES`; kept here so that
#: building the parser imports no estimator; tests/compare/test_compare_cli.py checks they agree).
METHOD_NAMES = ("lol", "qoq", "pca", "rrlda", "lfl", "rp")


def register(sub, common) -> None:
    """Add ``wideml compare`` to the subcommands."""
    p = sub.add_parser("compare", parents=[common],
                       help="compare methods across stores: CV-chosen d, error and kappa per store, ranks, exact Wilcoxon tests")
    p.add_argument("stores", nargs="+", metavar="STORE", help="labelled feature stores (paths or URLs), one per data set")
    p.add_argument("--methods", default="lol,pca,rrlda,lfl,rp",
                   help=f"comma-separated methods among {', '.join(METHOD_NAMES)} (default lol,pca,rrlda,lfl,rp)")
    p.add_argument("--reference", default="lol", help="the method tested against each other one (default lol)")
    p.add_argument("--folds", type=_positive_int, default=10, help="stratified folds per round (default 10)")
    p.add_argument("--repeats", type=_repeats, default=3,
                   help="rounds of folds with new shuffles (default 3; at most 1000, and folds x repeats at most 10000)")
    p.add_argument("--adapt-folds", action="store_true",
                   help="on a store whose smallest class has fewer samples than --folds, use that many folds instead of "
                        "refusing the store (said in the table)")
    p.add_argument("--max-dim", type=_max_dim, default=None,
                   help="largest embedding dimension (default 20), capped per store at what a training fold allows; or "
                        "'rank': up to the smallest numerical rank of the training folds")
    p.add_argument("--classifier", choices=("lda", "qda"), default="lda", help="classifier on each embedding (default lda)")
    p.add_argument("--no-robust", action="store_true", help="LOL/QOQ: class means instead of medians (the paper's LOL)")
    p.add_argument("--zero-method", choices=("wilcox", "pratt"), default="wilcox",
                   help="Wilcoxon zero differences: dropped before ranking (wilcox, default) or ranked then dropped (pratt)")
    p.add_argument("--seed", type=_seed, default=0, help="seed of the folds and of LFL's and RP's random columns (default 0)")
    p.add_argument("-o", "--output", help="JSON report path")
    p.add_argument("--plot", help="PNG: each method's error and kappa relative to the reference per store (the LOL paper's Fig. 5)")
    p.add_argument("--overwrite", action="store_true", help="replace outputs wideml wrote before")
    p.set_defaults(handler=run_compare)


def _max_dim(text: str):
    """--max-dim: a positive integer or "rank" (argparse type)."""
    if text == "rank":
        return "rank"
    try:
        return _positive_int(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"{text!r} is neither a whole number of at least 1 nor 'rank'; give one of them") from None


def _method_names(text: str) -> list[str]:
    names = list(dict.fromkeys(m.strip() for m in text.split(",") if m.strip()))
    if not names:
        raise WidemlError(f"--methods {text!r} names no method; give a comma-separated list such as lol,pca,rrlda,lfl,rp.")
    for name in names:
        if name not in METHOD_NAMES:
            raise WidemlError(f"--methods: {name!r} is not a method compare can score; use {', '.join(METHOD_NAMES)}.")
    if len(names) < 2:
        raise WidemlError(f"--methods {text!r} names one method; compare needs at least two (e.g. lol,pca).")
    return names


def _stores(args: argparse.Namespace) -> list[str]:
    """The stores as absolute paths (URLs as given), each once; no output may be, hold or lie inside one of them."""
    from wideml.cli.before_run import refuse_outputs_on_inputs
    from wideml.estimators.compare import refuse_repeated_stores
    from wideml.storage.urls import is_url, local_path_of

    stores = []
    for value in args.stores:
        if not value.strip():
            raise WidemlError("an empty store path was given; name each store.")
        if is_url(value) and local_path_of(value) is not None:
            value = local_path_of(value)
        stores.append(value if "://" in value else os.path.abspath(os.path.expanduser(value)))
    refuse_repeated_stores(stores)
    for store in stores:
        refuse_outputs_on_inputs(argparse.Namespace(store=store, output=args.output, plot=args.plot))
    return stores


def run_compare(args: argparse.Namespace) -> int:
    """Check everything, compare, print the table, then write the JSON and the plot."""
    from wideml.estimators.compare import MAX_SPLITS, compare
    from wideml.storage import open_store
    from wideml.storage.atomic import check_output

    for path in (args.output, args.plot):
        if path:
            check_output(path, args.overwrite)
    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise WidemlError("--plot needs matplotlib; install it with `pip install wideml[plot]` or leave --plot out.") from None
    names = _method_names(args.methods)
    if args.reference not in names:
        raise WidemlError(f"--reference {args.reference!r} is not among --methods ({', '.join(names)}); add it there.")
    if args.folds < 2:
        raise WidemlError(f"--folds {args.folds} is too few for cross-validation; use at least 2.")
    if args.folds * args.repeats > MAX_SPLITS:
        raise WidemlError(f"--folds {args.folds} with --repeats {args.repeats} make {args.folds * args.repeats} splits per store, "
                          f"more than {MAX_SPLITS}; lower --repeats (or --folds).")
    stores = []
    for path in _stores(args):
        store = open_store(path)
        if store.y is None:
            raise WidemlError(f"store {path!r} holds no labels y; comparing methods needs labelled stores.")
        stores.append(store)
    result = compare(stores, names, cv=args.folds, repeats=args.repeats, reference=args.reference,
                     classifier=args.classifier, max_dim=args.max_dim, random_state=args.seed, adapt_folds=args.adapt_folds,
                     robust=not args.no_robust, zero_method=args.zero_method)
    scored = [s for s in result.stores.values() if s.failure is None]
    if not scored:
        first = next(iter(result.stores.values()))
        raise WidemlError(f"no store could be scored, so there is nothing to compare; store {first.name!r}: {first.failure}")
    print(result.table())
    if args.output:
        result.to_json(args.output, overwrite=args.overwrite)
        print(f"report written to {args.output}")
    if args.plot:
        result.plot(args.plot, overwrite=args.overwrite)
        print(f"plot written to {args.plot}")
    return 0
