"""``wideml fit lolreg``: LOLRegressor on a store, its numeric target (the store's labels or ``--target FILE``), and
``wideml predict``'s report on a regression model."""

from __future__ import annotations

import argparse

import numpy as np

from wideml.exceptions import WidemlError

#: The method name of ``wideml fit`` that fits a LOLRegressor.
LOLREG = "lolreg"

#: Default number of percentile bins (the paper's K = 10).
DEFAULT_BINS = 10


def add_options(p: argparse.ArgumentParser, positive_int) -> None:
    """``--n-bins`` and ``--target`` of ``wideml fit`` (lolreg only)."""
    p.add_argument("--n-bins", type=positive_int, metavar="K",
                   help=f"lolreg: percentile classes of the target LOL is learned on (default {DEFAULT_BINS}, at least 2)")
    p.add_argument("--target", metavar="FILE",
                   help="lolreg: numeric target per sample, a CSV/TSV (id,target or one column in the store's sample order), "
                        ".npy, file.h5:/dataset or zarr array (default: the store's labels y)")


def build(args: argparse.Namespace):
    """The LOLRegressor that ``wideml fit lolreg`` options describe."""
    from wideml.estimators.regression import LOLRegressor

    n_bins = DEFAULT_BINS if getattr(args, "n_bins", None) is None else args.n_bins
    if n_bins < 2:
        raise WidemlError(f"--n-bins {n_bins} makes fewer than two percentile classes; give at least 2.")
    return LOLRegressor(getattr(args, "n_components", None), n_bins=n_bins, robust_first=not getattr(args, "no_robust", False),
                        orthogonalize=getattr(args, "orthogonalize", False), precision=getattr(args, "precision", None) or "auto",
                        solver=getattr(args, "solver", None) or "auto",
                        n_power_iter=1 if getattr(args, "n_power_iter", None) is None else args.n_power_iter,
                        random_state=getattr(args, "seed", None) or 0)


def fit_target(args: argparse.Namespace, store):
    """y for ``wideml fit``: the store's labels, or for lolreg its numeric target; options of the wrong method refused."""
    if args.method != LOLREG:
        for name, flag in (("n_bins", "--n-bins"), ("target", "--target")):
            if getattr(args, name, None) is not None:
                raise WidemlError(f"{flag} applies only to lolreg (LOL regression), not to {args.method!r}; leave it out.")
        if store.y is None:
            raise WidemlError(f"store {args.store!r} holds no labels y; fitting needs a labelled store.")
        return store.y
    if getattr(args, "classifier", None) is not None:
        raise WidemlError("--classifier applies to classification methods, not to lolreg, which regresses the target "
                          "on its embedding by least squares; leave it out.")
    if args.target is not None:
        values, ids = _target_file(args.target, store)
        where = f"--target {args.target!r}"
    else:
        if store.y is None:
            raise WidemlError(f"store {args.store!r} holds no labels y for lolreg to regress; ingest it with a numeric target "
                              "as labels, or give the target with --target FILE.")
        values, ids, where = store.y, store.sample_ids, f"the labels of store {args.store!r}"
    return numeric_target(values, ids, where)


def _target_file(path: str, store) -> tuple[np.ndarray, np.ndarray | None]:
    """The target read from a file: matched to the store's samples by id (two columns), else taken in the store's order."""
    from wideml.sources.labels import load_labels

    ids, values, keep = load_labels(path, drop_unlabelled=True)
    if keep is not None:
        rows = np.flatnonzero(~keep)
        more = f" and {rows.size - 1} more" if rows.size > 1 else ""
        raise WidemlError(f"--target {path!r} has a missing value (NA, n/a, empty ...) in data row {int(rows[0]) + 1}{more}; give every "
                          f"sample a target, or leave those samples out by ingesting the store again with --labels {path} "
                          "--drop-unlabelled and fitting on its labels.")
    n = store.n_samples
    if ids is not None and store.sample_ids is None:
        raise WidemlError(f"--target {path!r} has an id column but the store has no sample ids to match it to; give a file "
                          "with one target column in the store's sample order, or ingest the store with sample ids.")
    if ids is None or store.sample_ids is None:
        if len(values) != n:
            raise WidemlError(f"--target {path!r} has {len(values)} values but the store has {n} samples; give one target per sample.")
        return np.asarray(values), store.sample_ids
    position = {str(s): i for i, s in enumerate(ids)}
    missing = [str(s) for s in store.sample_ids if str(s) not in position]
    if missing:
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        raise WidemlError(f"--target {path!r} has no value for sample {missing[0]!r}{more} of the store; give every sample a target.")
    rows = np.array([position[str(s)] for s in store.sample_ids], dtype=np.int64)
    return np.asarray(values)[rows], store.sample_ids


def numeric_target(values, ids, where: str) -> np.ndarray:
    """``values`` as finite float64, or one sentence naming the first sample that is not a finite number.

    Parameters
    ----------
    values : array-like of shape (n_samples,)
        Numbers, or texts of numbers (a store ingested from a CSV keeps ``1.50`` as text).
    ids : array-like of shape (n_samples,) or None
        Sample ids, to name the offending sample.
    where : str
        Where the target came from, for the message.

    Returns
    -------
    ndarray of shape (n_samples,), float64
    """
    arr = np.asarray(values)

    def name(i: int) -> str:
        return f"sample {ids[i].item() if hasattr(ids[i], 'item') else ids[i]!r}" if ids is not None else f"sample {i}"

    if arr.dtype.kind == "b":
        raise WidemlError(f"{where} are true/false values, not a numeric target; lolreg regresses numbers (use a classification "
                          "method such as lol for two classes).")
    if arr.dtype.kind in "iuf":
        out = arr.astype(np.float64)
    else:
        out = np.empty(arr.shape, dtype=np.float64)
        for i, v in enumerate(arr.ravel()):
            try:
                out[i] = float(v)
            except (TypeError, ValueError):
                raise WidemlError(f"{where} hold {str(v)!r} at {name(i)}, which is not a number; lolreg regresses a numeric "
                                  "target, so give numbers (or --target FILE with one number per sample).") from None
    bad = np.flatnonzero(~np.isfinite(out))
    if bad.size:
        raise WidemlError(f"{where} hold {float(out[bad[0]])!r} at {name(int(bad[0]))}"
                          f"{f' and {bad.size - 1} more non-finite values' if bad.size > 1 else ''}; "
                          "drop those samples or give them a finite target.")
    return out


def report_predictions(model, store, pred: np.ndarray) -> str | None:
    """For a regression model: its error against the store's labels when they are numbers (one line), else None."""
    if store.y is None:
        return None
    try:
        y = numeric_target(store.y, None, "the store's labels")
    except WidemlError:
        return "the store's labels are not all numbers, so no error is reported"
    resid = y - np.asarray(pred, dtype=np.float64)
    mse = float(np.mean(resid**2))
    total = float(np.sum((y - y.mean()) ** 2))
    r2 = 1 - float(np.sum(resid**2)) / total if total > 0 else float("nan")
    return f"against the store's labels: mean squared error {mse:.6g} (RMSE {np.sqrt(mse):.6g}), R² {r2:.4f}"


def is_regression_model(model) -> bool:
    """Whether a loaded model predicts numbers (a LOLRegressor), not classes."""
    from sklearn.base import is_regressor

    return bool(is_regressor(model))


__all__ = ["DEFAULT_BINS", "LOLREG", "add_options", "build", "fit_target", "is_regression_model", "numeric_target",
           "report_predictions"]
