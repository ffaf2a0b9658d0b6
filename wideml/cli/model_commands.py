"""``wideml fit``, ``wideml transform``, ``wideml predict`` and ``wideml cv``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from wideml.cli.argtypes import positive_int as _positive_int
from wideml.cli.argtypes import repeats as _repeats
from wideml.cli.report_command import add_report_option, check_report_option, cv_facts, fit_provenance, run_record, write_after_run
from wideml.exceptions import WidemlError


_IGNORE_LAYOUT_HELP = ("run even if the store's feature_shape, spatial reference or feature_ids differ from the model's "
                       "(only if you know its features are the training features in the training order)")


def _layout_checks(args: argparse.Namespace):
    """The feature-layout check, or its override with --ignore-feature-layout."""
    import contextlib

    from wideml.storage.layout import ignore_feature_layout

    return ignore_feature_layout() if getattr(args, "ignore_feature_layout", False) else contextlib.nullcontext()


def register(sub, common) -> None:
    from wideml.cli.registry import METHODS

    p = sub.add_parser("fit", parents=[common], help="fit a method on a store and save the model (a zarr group)")
    p.add_argument("method", help=f"one of: {', '.join(METHODS)}, lolreg (LOL regression of a numeric target)")
    p.add_argument("store", help="training feature store (must hold labels y): a path, or a URL such as s3://bucket/s.zarr")
    p.add_argument("-o", "--output", required=True, help="model directory to write")
    p.add_argument("--n-components", type=_positive_int,
                   help="embedding dimension d (default: number of classes; kpca-*: 100 KPCA components, or all non-zero ones up to 200 samples; kernel-lol: 10)")
    p.add_argument("--classifier", choices=("lda", "qda"), help="classifier on the embedding (default: qda for qoq, else lda)")
    from wideml.cli import lolreg

    lolreg.add_options(p, _positive_int)
    p.add_argument("--no-robust", action="store_true", help="class means instead of medians for LOL/QOQ centroid differences")
    p.add_argument("--orthogonalize", action="store_true", help="orthonormalise the LOL/QOQ directions")
    p.add_argument("--precision", choices=("auto", "float64", "float32"), default="auto",
                   help="dtype of each chunk's products (auto: float32 for float32 stores, else float64; sums across chunks are float64)")
    p.add_argument("--solver", choices=("auto", "gram", "randomized"),
                   help="lol/qoq/pca/rrlda: exact Gram (2 passes) or randomized range finder (q + 2 passes, q the power "
                        "iterations it takes to converge); auto (the default) uses a cost model")
    p.add_argument("--n-power-iter", type=int, metavar="N",
                   help="lol/qoq/pca/rrlda: fewest power iterations of the randomized solver (default 1); it iterates until "
                        "its subspace converges to --tol, at most --max-power-iter times")
    p.add_argument("--max-power-iter", type=_positive_int, metavar="N",
                   help="lol/qoq/pca/rrlda: most power iterations of the randomized solver (default 30); if its subspace "
                        "has not converged by then the fit warns and stops there")
    p.add_argument("--tol", type=_positive_float, metavar="RAD",
                   help="lol/qoq/pca/rrlda: convergence tolerance of the randomized solver, the largest principal angle "
                        "in radians between successive subspaces (default 1e-4)")
    p.add_argument("--seed", type=int, default=0, help="seed of random matrices (randomized solver, LFL, encoder, KPCA)")
    p.add_argument("--kernels", help="encoder: comma-separated kernels (default linear,euclidean,spearman)")
    p.add_argument("--selection", choices=("cross_entropy", "loo_cross_entropy", "cv_cross_entropy"),
                   help="encoder: kernel selection score (default cross_entropy, the paper's)")
    p.add_argument("--kernel", choices=("rbf", "poly", "linear"), help="kpca-*/kernel-lol: kernel (default rbf)")
    p.add_argument("--sigma", type=float, help="kpca-*/kernel-lol: RBF width per feature (default 1.0)")
    p.add_argument("--kernel-selection", choices=("fixed", "cv", "alignment", "sum"),
                   help="kpca-*: choose the RBF from the paper's 21 sigmas by cv, alignment, or their sum (default fixed)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing model")
    p.add_argument("--no-resume", action="store_true",
                   help="start over even if <output>.wideml-work holds checkpoints of an interrupted run of the same fit")
    p.add_argument("--workdir", metavar="DIR", help="parent folder of this run's work folders (wideml-fit-*; default from config workdir, else the system temporary directory)")
    add_report_option(p)
    p.set_defaults(handler=run_fit)

    p = sub.add_parser("transform", parents=[common], help="embed a store with a fitted model (one pass)")
    p.add_argument("model")
    p.add_argument("store")
    p.add_argument("-o", "--output", required=True,
                   help="output .npy (n_samples x n_components) or .csv (header sample_id,component_1,...; one row per sample)")
    p.add_argument("--overwrite", action="store_true")
    p.add_argument("--ignore-feature-layout", action="store_true", help=_IGNORE_LAYOUT_HELP)
    p.set_defaults(handler=run_transform)

    p = sub.add_parser("predict", parents=[common], help="predict labels of a store with a fitted model (one pass)")
    p.add_argument("model")
    p.add_argument("store")
    p.add_argument("-o", "--output", help="write predictions (and probabilities) as CSV")
    p.add_argument("--overwrite", action="store_true")
    p.add_argument("--ignore-feature-layout", action="store_true", help=_IGNORE_LAYOUT_HELP)
    p.set_defaults(handler=run_predict)

    p = sub.add_parser("cv", parents=[common], help="cross-validated error against dimension for several methods, from one pass")
    p.add_argument("store")
    p.add_argument("--methods", default="lol,pca,rrlda",
                   help="comma-separated methods (default lol,pca,rrlda); lol, qoq, pca, rrlda, lfl and rp share one pass over X")
    p.add_argument("--max-dim", type=_max_dim, default=None,
                   help=f"largest embedding dimension (default {DEFAULT_MAX_DIM}, or what the training folds allow if fewer), "
                        "or 'rank': up to the smallest numerical rank of the training folds' centred data")
    p.add_argument("--folds", type=_positive_int, default=10, help="number of stratified folds (default 10)")
    p.add_argument("--repeats", type=_repeats, default=1,
                   help="repeat the stratified k-fold CV R times with new shuffles (default 1): 'k-fold CV repeated R times'; "
                        "every method is scored on the same splits (the encoder in its own pass, the others a fit per split)")
    p.add_argument("--classifier", choices=("lda", "qda"), default="lda")
    p.add_argument("--no-robust", action="store_true",
                   help="class means instead of medians for LOL/QOQ centroid differences (e.g. for 0/1/2 genotype dosages, whose medians tie)")
    p.add_argument("--seed", type=int, default=0, help="fold shuffling seed")
    p.add_argument("-o", "--output", help="JSON report path")
    p.add_argument("--plot", help="PNG of error against dimension")
    p.add_argument("--overwrite", action="store_true")
    p.add_argument("--no-resume", action="store_true",
                   help="start over even if the work folder (wideml-cv-*) holds checkpoints of an interrupted run of the same cv")
    p.add_argument("--workdir", metavar="DIR", help="parent folder of this run's work folders (wideml-fit-*; default from config workdir, else the system temporary directory)")
    add_report_option(p)
    p.set_defaults(handler=run_cv)


def _max_dim(text: str):
    """--max-dim: a positive integer or "rank" (argparse type)."""
    if text == "rank":
        return "rank"
    try:
        return _positive_int(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"{text!r} is neither a whole number of at least 1 nor 'rank'; give one of them") from None


def _check_new_output(path: str | None, overwrite: bool) -> None:
    if path:
        from wideml.storage.atomic import check_output

        check_output(path, overwrite)


#: Options of the randomized solver's convergence that ``wideml fit`` passes to the estimators having them.
_SOLVER_LIMITS = (("max_power_iter", "--max-power-iter"), ("tol", "--tol"))

#: Solver options the registry's builders read; refused, when given, for a method whose estimator has no solver.
_SOLVER_OPTIONS = (("solver", "--solver"), ("n_power_iter", "--n-power-iter"))


def _positive_float(text: str) -> float:
    """A number > 0 (argparse type)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive number")
    return value


def _set_solver_limits(method_name: str, emb: object, args) -> None:
    """Give ``emb`` the --max-power-iter / --tol that were given; refuse them for a method without a randomized solver."""
    given = {name: (flag, getattr(args, name, None)) for name, flag in _SOLVER_LIMITS if getattr(args, name, None) is not None}
    params = emb.get_params(deep=False) if hasattr(emb, "get_params") else {}
    for name, flag in _SOLVER_OPTIONS:  # e.g. `fit rp --solver randomized`: RP has no solver to choose
        if getattr(args, name, None) is not None and name not in params:
            raise WidemlError(f"{flag} applies only to lol, qoq, pca and rrlda, which have a solver to choose, not to "
                              f"{method_name!r}; leave it out.")
    if not given:
        return
    for name, (flag, _) in given.items():
        if name not in params:
            raise WidemlError(f"{flag} applies only to the randomized solver of lol, qoq, pca and rrlda, not to "
                              f"{method_name!r}; leave it out.")
    emb.set_params(**{name: value for name, (_, value) in given.items()})


def _build(method_name: str, args, n_samples: int | None = None) -> object:
    from wideml.estimators.classifier import EmbeddingClassifier
    from wideml.cli.registry import get_method

    from wideml.cli import lolreg

    if method_name == lolreg.LOLREG:
        emb = lolreg.build(args)
        _set_solver_limits(method_name, emb, args)
        return emb
    method = get_method(method_name)
    kernels = getattr(args, "kernels", None)
    emb = method.build(
        n_components=getattr(args, "n_components", None), robust=not getattr(args, "no_robust", False),
        orthogonalize=getattr(args, "orthogonalize", False), precision=getattr(args, "precision", None),
        solver=getattr(args, "solver", None), n_power_iter=getattr(args, "n_power_iter", None), seed=getattr(args, "seed", None),
        kernels=tuple(k.strip() for k in kernels.split(",")) if kernels else None, selection=getattr(args, "selection", None),
        kernel=getattr(args, "kernel", None), sigma=getattr(args, "sigma", None), kernel_selection=getattr(args, "kernel_selection", None),
        n_samples=n_samples,
    )
    _set_solver_limits(method_name, emb, args)
    if not method.wrap_classifier:
        return emb
    return EmbeddingClassifier(emb, getattr(args, "classifier", None) or method.classifier)


def run_fit(args: argparse.Namespace) -> int:
    from wideml.storage import open_store
    from wideml.models.persistence import save_model

    _check_new_output(args.output, args.overwrite)
    check_report_option(args)
    store = open_store(args.store)
    est = _build(args.method, args, store.n_samples)
    from wideml.cli.lolreg import fit_target

    target = fit_target(args, store)  # the store's labels; for lolreg, its numeric target (or --target FILE)
    from wideml.runtime.checkpoint import resumable

    from wideml.runner.remote_workdir import remote_checkpoints

    work = _fit_work_folder(args.output)
    resume = not getattr(args, "no_resume", False)
    with resumable(work, resume=resume) as session, remote_checkpoints(session, _remote_work_prefix(args.output), resume):
        with run_record(args) as record:
            est.fit(store, target)
        save_model(est, args.output, overwrite=args.overwrite,
                   provenance={"store": _store_name(args.store), "n_samples": store.n_samples, "n_features": store.n_features}
                   | fit_provenance(args, record))
    _report_reads()
    from wideml.estimators.classifier import EmbeddingClassifier

    emb = est.embedding_ if isinstance(est, EmbeddingClassifier) else est
    passes = getattr(emb, "n_fit_passes_", 1)
    reason = getattr(emb, "solver_reason_", "")
    detail = [f"d = {emb.n_components_}"] if hasattr(emb, "n_components_") else []
    if hasattr(emb, "solver_"):
        detail.append(f"solver = {emb.solver_}" + (f": {reason}" if reason else ""))
    if hasattr(emb, "kernel_"):
        detail.append(f"kernel = {emb.kernel_}")
    detail.append(f"{passes} pass{'' if passes == 1 else 'es'} over X")
    print(f"fitted {args.method} on {store.n_samples} samples x {store.n_features} features ({'; '.join(detail)}); "
          f"model written to {args.output}")
    write_after_run(args, model=args.output)
    return 0


def _fit_work_folder(output: str) -> str:
    """Where ``wideml fit`` keeps its checkpoints: beside a local output (``<output>.wideml-work``); for an output on an
    object store, ``wideml-resume-<key>`` in the work folder, the key naming the output's URL (a rerun finds it)."""
    import hashlib
    import os

    from wideml.runner.workdir import resolve_workdir
    from wideml.runtime.owned_names import checkpoint_folder
    from wideml.storage.remote_write import is_remote

    if is_remote(output):
        key = hashlib.sha256(output.strip().rstrip("/").encode()).hexdigest()[:16]
        return os.path.join(resolve_workdir(None), f"wideml-resume-{key}")
    return checkpoint_folder(Path(output).resolve())  # beside the output: a rerun of the same command finds it


def _remote_work_prefix(output: str) -> str | None:
    """With a work folder on an object store (``--workdir s3://...``, config ``workdir``): the fit's work prefix there,
    ``<workdir>/wideml-resume-<key>``, the key naming the output (a rerun on any machine finds it); else None."""
    from wideml.runner.remote_workdir import work_prefix_url
    from wideml.runtime.config import config_value
    from wideml.storage.remote_write import is_remote

    workdir = config_value("workdir")
    if not (isinstance(workdir, str) and is_remote(workdir)):
        return None
    return work_prefix_url(workdir, output if is_remote(output) else str(Path(output).resolve()))


def _store_name(store: str) -> str:
    """How outputs record the store: its absolute path, or its URL as given (never joined to the working folder)."""
    return store if "://" in store else str(Path(store).resolve())


def _report_reads() -> None:
    """Test hook: with WIDEML_TEST_REPORT_READS set, print this process's chunk reads of X on stderr."""
    import os

    if os.environ.get("WIDEML_TEST_REPORT_READS"):
        from wideml.storage.reader import READ_COUNTER

        print(f"wideml-test: chunk reads {sum(READ_COUNTER.values())}", file=sys.stderr)
        for path, count in READ_COUNTER.items():  # per array: reads of X apart from those of a model's own arrays
            print(f"wideml-test: reads of {path}: {count}", file=sys.stderr)


def run_transform(args: argparse.Namespace) -> int:
    from wideml.storage import open_store
    from wideml.models.persistence import load_model

    _check_new_output(args.output, args.overwrite)
    if not args.output.endswith((".npy", ".csv")):
        raise WidemlError(f"output {args.output!r} must end in .npy or .csv.")
    model = load_model(args.model)
    store = open_store(args.store)
    with _layout_checks(args):
        Z = model.transform(store)
    if args.output.endswith(".npy"):
        _write_atomic(args.output, lambda fh: np.save(fh, Z, allow_pickle=False))
    else:
        header = ["sample_id"] + [f"component_{j + 1}" for j in range(Z.shape[1])]
        rows = ([i] + [repr(float(v)) for v in z] for i, z in zip(_sample_ids(store), Z))
        _write_atomic(args.output, lambda fh: _write_csv(fh, header, rows))
    print(f"wrote {Z.shape[0]} x {Z.shape[1]} embedding to {args.output}")
    return 0


def _sample_ids(store) -> np.ndarray:
    """The store's sample ids, or 0..n-1 when it has none (the first column of predict's and transform's CSVs)."""
    return store.sample_ids if store.sample_ids is not None else np.arange(store.n_samples)


def _write_csv(fh, header: list[str], rows) -> None:
    """Write a header and rows (sample id first) as UTF-8 CSV into the binary file ``fh``.

    Numbers (int and float objects, and in the value columns text that is a
    finite number exactly as Python formats one, such as ``0.25`` or
    ``2.5e-06``) are written bare; every other field, every text sample id
    and every bool included, is quoted (``csv.QUOTE_NONNUMERIC``-style). So a
    sample id or label ``NA``, ``007`` or `` lead`` reads back as given with
    ``csv.reader`` or ``pandas.read_csv(path, quoting=csv.QUOTE_NONNUMERIC,
    keep_default_na=False)``, spaces kept, and ids holding ``,`` or ``"`` stay
    one field. (pandas' reader without those options reads ``NA`` as NaN and
    all-digit ids as numbers however they are quoted.)
    """
    import io
    import numbers

    def bare(value, first: bool) -> bool:
        if isinstance(value, (bool, np.bool_)):
            return False
        if isinstance(value, (numbers.Number, np.number)):
            return True
        if first:
            return False
        text = str(value)
        try:
            number = float(text)
        except ValueError:
            return False
        return bool(np.isfinite(number)) and text in (repr(number), f"{number:.6g}")

    def field(value, first: bool) -> str:
        text = str(value)
        return text if bare(value, first) else '"' + text.replace('"', '""') + '"'

    text = io.TextIOWrapper(fh, encoding="utf-8", newline="")
    for row in [header, *rows]:
        text.write(",".join(field(v, j == 0) for j, v in enumerate(row)) + "\n")
    text.flush()
    text.detach()


def _write_atomic(path: str, write) -> None:
    """Write a small file aside (an owned hidden ``.NAME.partial-*`` folder) and rename it into place."""
    from wideml.storage.atomic import atomic_output

    with atomic_output(path, overwrite=True, workers_write=False) as tmp, open(tmp, "wb") as fh:
        write(fh)


def run_predict(args: argparse.Namespace) -> int:
    from wideml.storage import open_store
    from wideml.models.persistence import load_model

    _check_new_output(args.output, args.overwrite)
    model = load_model(args.model)
    if not hasattr(model, "predict"):
        raise WidemlError(f"model {args.model!r} is an embedding without a classifier; use `wideml transform`.")
    store = open_store(args.store)
    with _layout_checks(args):
        proba = model.predict_proba(store) if hasattr(model, "predict_proba") else None
        pred = model.classes_[np.argmax(proba, axis=1)] if proba is not None else model.predict(store)
    ids = _sample_ids(store)
    if args.output:
        header = ["sample_id", "prediction"] + ([f"p_{c}" for c in model.classes_] if proba is not None else [])
        rows = ([ids[i], pred[i]] + ([f"{v:.6g}" for v in proba[i]] if proba is not None else []) for i in range(len(pred)))
        _write_atomic(args.output, lambda fh: _write_csv(fh, header, rows))
        print(f"wrote {len(pred)} predictions to {args.output}")
    else:
        for i in range(len(pred)):
            print(f"{ids[i]}\t{pred[i]}")
    from wideml.cli.lolreg import is_regression_model, report_predictions

    if is_regression_model(model):  # a LOLRegressor predicts numbers: its error, not an accuracy
        line = report_predictions(model, store, pred)
        if line:
            print(line, file=sys.stderr)
    elif store.y is not None:
        unseen = sorted(set(np.unique(store.y).tolist()) - set(model.classes_.tolist()))
        acc = float(np.mean(pred.astype(str) == store.y.astype(str)))
        note = f" (labels {unseen} were not seen in training)" if unseen else ""
        print(f"accuracy against the store's labels: {acc:.4f} (error {1 - acc:.4f}){note}", file=sys.stderr)
    return 0


#: ``wideml cv``'s largest embedding dimension when --max-dim is not given.
DEFAULT_MAX_DIM = 20


def run_cv(args: argparse.Namespace) -> int:
    """``wideml cv``: every method, option and the fold count are checked before the first pass over X."""
    from wideml.estimators.gram.cv import cross_validate_dims
    from wideml.cli.registry import get_method
    from wideml.storage import open_store

    _check_new_output(args.output, args.overwrite)
    _check_new_output(args.plot, args.overwrite)
    check_report_option(args)
    names = list(dict.fromkeys(m.strip() for m in args.methods.split(",") if m.strip()))
    if not names:
        raise WidemlError(f"--methods {args.methods!r} names no method; give a comma-separated list such as lol,pca,rrlda.")
    methods = {name: get_method(name) for name in names}
    other = [name for name, m in methods.items() if not m.gram_based]
    if args.plot and len(other) == len(names):
        raise WidemlError("--plot draws error against dimension, which only lol, qoq, pca, rrlda, lfl and rp have; drop --plot or add one of them.")
    store = open_store(args.store)
    if store.y is None:
        raise WidemlError(f"store {args.store!r} holds no labels y; cross-validation needs labels.")
    _check_folds(args.folds, store.y)
    estimators = {name: _cv_projector(m, args, store) for name, m in methods.items() if m.gram_based}
    for name in other:  # parameters of every method checked before any pass
        _build(name, args, store.n_samples).validate_parameters()
    from wideml.runtime.checkpoint import resumable

    with resumable(_cv_work_folder(args), resume=not args.no_resume), run_record(args) as record:
        if estimators:
            cv = _cv_splitter(args)
            report = cross_validate_dims(estimators, store, cv=cv, classifier=args.classifier, random_state=args.seed,
                                         max_dim="rank" if args.max_dim == "rank" else None)
            print(report.table())
            errors = [r.error for r in report.results.values() if r.error is not None]
            if len(errors) == len(report.results) and not other:
                raise WidemlError(errors[0])  # nothing was scored: no report, exit status 2
            out = report.to_dict()
        else:
            report, out = None, {"results": {}}
        if other:
            out["fixed_dimension_methods"] = _cv_other(other, store, args)
    _report_reads()
    out = out | {"store": _store_name(args.store)} | cv_facts(record, report, store)
    if args.output:
        _write_atomic(args.output, lambda fh: fh.write(json.dumps(out, indent=2).encode()))
        print(f"report written to {args.output}")
    if args.plot:
        from wideml.cli.plots import plot_cv

        passes = f"{report.n_passes} pass{'es' if report.n_passes != 1 else ''} over X"
        title = (f"{Path(args.store).name}: n = {store.n_samples}, p = {store.n_features:,}\n"
                 f"{report.cv_name}, {report.classifier.upper()} on the embedding, {passes}")
        _write_atomic(args.plot, lambda fh: plot_cv(report, fh, title=title))
        print(f"plot written to {args.plot}")
    write_after_run(args, cv=out)
    return 0


def _cv_work_folder(args: argparse.Namespace) -> str:
    """Where ``wideml cv`` keeps its checkpoints: ``wideml-cv-<key>`` in the work folder, the key naming the store and outputs."""
    import hashlib
    import os

    from wideml.runner.workdir import resolve_workdir

    named = [os.path.realpath(p) if p else "" for p in (args.store, args.output, args.plot)]
    key = hashlib.sha256("\0".join(named).encode()).hexdigest()[:16]
    return os.path.join(resolve_workdir(None), f"wideml-cv-{key}")


def _check_folds(folds: int, y) -> None:
    """At least 2 folds, and no more than the smallest class has samples (stratified folds)."""
    if folds < 2:
        raise WidemlError(f"--folds {folds} is too few for cross-validation; use at least 2.")
    smallest = int(np.unique(y, return_counts=True)[1].min())
    if folds > smallest:
        raise WidemlError(f"--folds {folds} needs at least {folds} samples in every class, but the smallest class has {smallest}; lower --folds.")


def _cv_splitter(args: argparse.Namespace):
    """The folds every method of ``wideml cv`` is scored on: stratified shuffled k-fold, repeated with --repeats."""
    from wideml.estimators.gram.cv import repeated_folds

    return args.folds if args.repeats == 1 else repeated_folds(args.folds, args.repeats, args.seed)


def _cv_name(args: argparse.Namespace) -> str:
    return f"{args.folds}-fold CV" + (f" repeated {args.repeats} times" if args.repeats > 1 else "")


def _cv_projector(method, args, store):
    """A one-pass method's estimator with d_max = --max-dim, or by default the smaller of 20 and what a training fold allows
    (with --max-dim rank: min(n, p), which cross_validate_dims caps at each training fold's bound and rank)."""
    est = method.build(n_components=args.max_dim if isinstance(args.max_dim, int) else DEFAULT_MAX_DIM, seed=args.seed,
                       robust=not args.no_robust)
    if args.max_dim == "rank":
        est.set_params(n_components=max(1, min(store.n_samples, store.n_features)))
    elif args.max_dim is None:
        n, K = store.n_samples, len(np.unique(store.y))
        n_train = n - -(-n // args.folds) - K  # smallest stratified training fold, with a margin for rounding per class
        bound = est.component_bound(n_train, K, store.n_features) if hasattr(est, "component_bound") else min(n_train, store.n_features)
        est.set_params(n_components=max(1, min(DEFAULT_MAX_DIM, bound)))
    return est


def _cv_other(names: list[str], store, args) -> dict:
    """Cross-validated error of methods without a dimension to choose, on the splits the one-pass methods use (--folds,
    --repeats, --seed): the encoder in its own pass (two with spearman) for all splits; the others a fit per split."""
    results = {}
    for name in names:
        if name == "encoder":
            from wideml.estimators.encoder.cv import cross_validate_encoder

            res = cross_validate_encoder(store, cv=_cv_splitter(args), random_state=args.seed)
            errors = np.asarray(res.get("fold_errors", res.get("errors", [])), dtype=float)
            n_passes = int(res.get("n_passes", 1))
            extra = {"n_passes": n_passes}
            cost = f"{n_passes} pass{'' if n_passes == 1 else 'es'} over X of its own"
        else:
            from wideml.estimators.gram.cv import cross_validate_refit

            # each finished split is checkpointed
            errors = cross_validate_refit(name, lambda n_train, name=name: _build(name, args, n_train), store, args.folds, args.seed,
                                          index=names.index(name), n_repeats=args.repeats)
            extra, cost = {}, "a fit per split"
        results[name] = {"fold_errors": errors.tolist(), "error": float(errors.mean()), "std": float(errors.std()),
                         "cv": _cv_name(args), "n_splits": len(errors)} | extra
        print(f"{name:<10} {'-':>7} {results[name]['error']:>8.4f}   (fixed dimension, {_cv_name(args)}: sd over the "
              f"{len(errors)} splits {results[name]['std']:.4f}; {cost})")
    return results
