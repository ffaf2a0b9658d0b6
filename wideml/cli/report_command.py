"""``wideml report``: one self-contained HTML file of a store, a cross-validation, a model and maps; and ``--report`` of cv and fit.

``wideml cv ... --report PATH`` and ``wideml fit ... --report PATH`` write the
report after the run through :func:`write_after_run`; :func:`check_report_option`
refuses a bad ``--report`` before the run, under the rules of every other
output (never a user's file; ``--overwrite`` replaces only a report wideml
wrote; never an input or another output of the same command).
"""

from __future__ import annotations

import argparse
import os

#: Help of ``--report`` on cv and fit.
REPORT_HELP = ("also write a self-contained HTML report of the run (store, results, warnings; no network needed to view it) "
               "to PATH; see `wideml report --help`")


def register(sub, common) -> None:
    p = sub.add_parser(
        "report", parents=[common], help="write one self-contained HTML report of a store, a cv run, a model and its maps",
        description="Write one self-contained HTML file (figures embedded, no script, nothing fetched when it is viewed) "
                    "describing any of: a feature store (shape, chunks, size, integrity, classes, mask), a cross-validation "
                    "(the JSON of `wideml cv -o`: curves, table with kappa, confusion matrices, warnings), a model "
                    "(parameters, solver, passes, provenance) and its maps (the folder of `wideml maps`). "
                    "No pass over X.")
    p.add_argument("--store", help="feature store (path or URL)")
    p.add_argument("--cv", metavar="JSON", help="cross-validation report written by `wideml cv -o`")
    p.add_argument("--model", help="model folder written by `wideml fit`")
    p.add_argument("--maps", metavar="DIR", help="maps folder written by `wideml maps`")
    p.add_argument("-o", "--output", default="report.html", metavar="HTML", help="the HTML file to write (default report.html)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing report (only one wideml wrote)")
    p.set_defaults(handler=run_report, needs_scheduler=False, path_args=("cv", "maps"))


def add_report_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--report PATH`` to a command's parser (cv, fit); the path is made absolute with the others."""
    parser.add_argument("--report", metavar="HTML", help=REPORT_HELP)
    defaults = parser.get_default("path_args") or ()
    parser.set_defaults(path_args=(*defaults, "report"))


def run_report(args: argparse.Namespace) -> int:
    """Write the report; print where it is; exit 0."""
    from wideml.report import report

    _refuse_output_on(args.output, [("--cv", args.cv), ("--maps", args.maps)])
    path = report(store=args.store, cv=args.cv, model=args.model, maps=args.maps, out=args.output, overwrite=args.overwrite)
    print(f"report written to {path}")
    return 0


def _refuse_output_on(output: str, inputs: list) -> None:
    """Refuse an output that is, or lies inside, one of ``inputs`` ((flag, path) pairs; the store and model are checked by preflight)."""
    from wideml.exceptions import ConfigError

    target = os.path.realpath(output)
    for flag, value in inputs:
        if isinstance(value, str) and "://" not in value:
            real = os.path.realpath(value)
            if target == real or target.startswith(real.rstrip(os.sep) + os.sep):
                raise ConfigError(f"the output {output} {'is' if target == real else 'lies inside'} the input {value} "
                                  f"({flag}); writing it would change that input: choose an output outside it.")


def check_report_option(args: argparse.Namespace) -> None:
    """Before the run: refuse a ``--report`` that is an input, a URL, not an .html name, a user's file, in an unwritable
    folder, another output of the command, or that needs matplotlib when it is missing."""
    report = getattr(args, "report", None)
    if report is None:
        return
    from wideml.cli.before_run import refuse_outputs_on_inputs
    from wideml.exceptions import ConfigError
    from wideml.report.output import check_report_output, refuse_empty

    refuse_empty(report)
    # the input first: "--report is the input store" is the answer, never "pass --overwrite"
    refuse_outputs_on_inputs(argparse.Namespace(**{**vars(args), "output": report, "plot": None, "out": None, "workdir": None}))
    if getattr(args, "command", None) == "fit" and "://" in str(getattr(args, "output", "")):
        raise ConfigError(f"--report reads the model after the fit, which needs a local model output, not {args.output}; "
                          "write the model locally, or run `wideml report --model` on a local copy.")
    for dest in ("output", "plot"):
        other = getattr(args, dest, None)
        if isinstance(other, str) and os.path.realpath(other) == os.path.realpath(report):
            raise ConfigError(f"--report and the {dest} of this command name the same path {report}; give each its own path.")
    check_report_output(report, args.overwrite, figures=_draws_figures(args))


def _draws_figures(args: argparse.Namespace) -> bool:
    """Whether the run's report draws figures (matplotlib): always for cv; for fit, when the store has a spatial reference."""
    if getattr(args, "command", None) != "fit":
        return True
    from wideml.storage import open_store

    try:
        return open_store(args.store).spatial is not None
    except Exception:  # noqa: BLE001 - the run itself says what is wrong with the store, in its own sentence
        return False


def write_after_run(args: argparse.Namespace, *, cv=None, model=None) -> None:
    """After a cv or fit run: write its report to ``args.report`` (when given) and say where."""
    report_path = getattr(args, "report", None)
    if report_path is None:
        return
    from wideml.report import report

    path = report(store=args.store, cv=cv, model=model, out=report_path, overwrite=args.overwrite)
    print(f"HTML report written to {path}")


def run_record(args: argparse.Namespace):
    """A :class:`wideml.report.run_record.RunRecord` of this command (its warnings, time, memory, versions)."""
    from wideml.report.run_record import RunRecord

    return RunRecord(getattr(args, "argv", None))


def fit_provenance(args: argparse.Namespace, record) -> dict:
    """What ``wideml fit`` adds to the model's provenance: the run (``record``) and the training store's fingerprint."""
    extra = {"run": record.to_dict()}
    if "://" not in args.store:
        from wideml.estimators.kernel.store_identity import store_identity

        extra["store_fingerprint"] = store_identity(os.path.abspath(args.store))
    return extra


def cv_facts(record, report, store) -> dict:
    """What ``wideml cv -o`` adds to its JSON: the run (``record``), the store's fingerprint and the true class codes of the samples.

    ``true_codes`` index the report's ``classes`` like its out-of-fold predictions do, so a
    confusion matrix needs no store; left out when the store's labels do not code to those classes.
    """
    import numpy as np

    extra = {"run": record.to_dict()}
    location = str(getattr(store, "path", "") or "")
    if location and "://" not in location:  # the report compares it with the store it is given
        from wideml.estimators.kernel.store_identity import store_identity

        extra["store_fingerprint"] = store_identity(os.path.abspath(location))
    if report is not None and store.y is not None:
        classes, codes = np.unique(np.asarray(store.y), return_inverse=True)
        if [str(c) for c in classes] == [str(c) for c in report.classes]:
            extra["true_codes"] = codes.astype(np.int64).ravel().tolist()
    return extra
