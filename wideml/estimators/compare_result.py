"""What :func:`wideml.compare` returns: per store and method the chosen d, error and kappa; ranks; Wilcoxon tests.

Plain dataclasses, a text table (:meth:`CompareResult.table`), a JSON form
(:meth:`CompareResult.to_dict`, :meth:`CompareResult.to_json`, written
atomically) and the Fig. 5-style plot (:meth:`CompareResult.plot`, in
:mod:`wideml.estimators.compare_plot`). Nothing here reads data.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field

import numpy as np

from wideml.estimators.compare_plot import write_png
from wideml.exceptions import WidemlError
from wideml.storage.atomic import atomic_output


@dataclass
class MethodScore:
    """One method cross-validated on one store, at the dimension with the lowest mean CV error.

    Attributes
    ----------
    method : str
    dim : int
        Chosen d: the smallest d reaching the lowest mean error over all splits (0 if the method failed).
    error : float
        Mean misclassification rate over all splits at ``dim``.
    error_sd : float
        Its standard deviation over the splits.
    kappa : float
        Cohen's kappa of the out-of-fold predictions at ``dim`` (mean over rounds).
    d_max : int
        The largest d scored.
    dims, errors, stds, kappas : list
        The whole curve (every d scored): mean error, sd over splits, kappa.
    failure : str or None
        Why the method could not be scored on this store (its numbers are then NaN).
    """

    method: str
    dim: int
    error: float
    error_sd: float
    kappa: float
    d_max: int
    dims: list[int] = field(default_factory=list)
    errors: list[float] = field(default_factory=list)
    stds: list[float] = field(default_factory=list)
    kappas: list[float] = field(default_factory=list)
    failure: str | None = None


@dataclass
class StoreComparison:
    """Every method on one store (or why the store was refused).

    Attributes
    ----------
    name : str
    source : str
        The store's path or URL as given (or a description of in-memory data).
    n_samples, n_features, n_classes : int
    n_folds, n_repeats : int
        The folds used on this store (fewer than asked when ``adapt_folds`` lowered them).
    cv_name : str
        E.g. "10-fold CV repeated 3 times".
    chance_error : float
        1 - (largest class share).
    n_passes : int
        Passes over X (1 for every method together).
    scores : dict of str -> MethodScore
    ranks : dict of str -> float
        Rank of each method's error on this store (1 = lowest, average ranks for ties); empty unless every method was scored.
    failure : str or None
        Why the store was refused (then nothing else is filled in).
    note : str or None
        E.g. that the folds were lowered.
    """

    name: str
    source: str
    n_samples: int = 0
    n_features: int = 0
    n_classes: int = 0
    n_folds: int = 0
    n_repeats: int = 0
    cv_name: str = ""
    chance_error: float = float("nan")
    n_passes: int = 0
    scores: dict[str, MethodScore] = field(default_factory=dict)
    ranks: dict[str, float] = field(default_factory=dict)
    failure: str | None = None
    note: str | None = None


@dataclass
class PairedComparison:
    """The reference method (LOL) against one other method on one measure, over the stores where both were scored.

    Attributes
    ----------
    reference, method : str
    measure : {"error", "kappa"}
    stores : list of str
        The stores paired.
    wins, ties, losses : int
        Stores where the reference is better, equal (|difference| <= tol), worse.
    mean_difference, median_difference : float
        Of (method's error - reference's error), or (reference's kappa - method's kappa): positive = reference better.
    rank_biserial : float
        Matched-pairs rank-biserial correlation of those differences, in [-1, 1]: positive = reference better.
    w_plus, w_minus : float
        Wilcoxon rank sums of the positive and negative differences (reference better / worse).
    p_one_sided : float
        Exact one-sided Wilcoxon signed-rank p-value, alternative: the reference is better (lower error, higher kappa).
    p_two_sided : float
        Exact two-sided p-value (min(1, 2 x the smaller one-sided)).
    n_zero, n_ties : int
        Zero differences (dropped, or ranked then dropped, by ``zero_method``) and tied non-zero ones.
    test : str
        How the p-values were computed.
    """

    reference: str
    method: str
    measure: str
    stores: list[str]
    wins: int
    ties: int
    losses: int
    mean_difference: float
    median_difference: float
    rank_biserial: float
    w_plus: float
    w_minus: float
    p_one_sided: float
    p_two_sided: float
    n_zero: int
    n_ties: int
    test: str


def _num(value: float, spec: str) -> str:
    """``value`` formatted by ``spec``, or "-" right-aligned to its width when it is NaN."""
    width = int("".join(ch for ch in spec.split(".")[0] if ch.isdigit()) or 0)
    return format(value, spec) if math.isfinite(value) else "-".rjust(width)


def _clean(value):
    """JSON-ready: NaN/inf as null, numpy scalars and arrays as Python values."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, np.ndarray):
        return _clean(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


@dataclass
class CompareResult:
    """Result of :func:`wideml.compare`.

    Attributes
    ----------
    stores : dict of str -> StoreComparison
    methods : list of str
    reference : str
        The method every Wilcoxon test compares the others with ("lol").
    cv_name : str
        The cross-validation asked for, e.g. "10-fold CV repeated 3 times".
    classifier : str
    ranked_stores : list of str
        Stores where every method was scored: ranks and mean ranks are over these.
    mean_ranks : dict of str -> float
    mean_errors : dict of str -> float
        Mean of the chosen-d errors over ``ranked_stores``.
    tests : list of PairedComparison
        Reference against each other method, on error and on kappa.
    zero_method : str
        Zero differences: "wilcox" (dropped before ranking) or "pratt" (ranked, then dropped).
    tol : float
        Differences within ``tol`` count as zero, and as ties.
    """

    stores: dict[str, StoreComparison]
    methods: list[str]
    reference: str
    cv_name: str
    classifier: str
    ranked_stores: list[str]
    mean_ranks: dict[str, float]
    mean_errors: dict[str, float]
    tests: list[PairedComparison]
    zero_method: str
    tol: float

    def test(self, method: str, measure: str = "error") -> PairedComparison:
        """The Wilcoxon comparison of the reference with ``method`` on ``measure`` ("error" or "kappa").

        Returns
        -------
        PairedComparison
        """
        for t in self.tests:
            if t.method == method and t.measure == measure:
                return t
        raise KeyError(f"no comparison of {self.reference!r} with {method!r} on {measure!r}")

    def to_dict(self) -> dict:
        """JSON-ready dict (NaN as null); the Wilcoxon conventions are spelled out under "wilcoxon".

        Returns
        -------
        dict
        """
        return _clean({
            "cv": self.cv_name,
            "classifier": self.classifier,
            "methods": self.methods,
            "reference": self.reference,
            "chosen_d": "the smallest d with the lowest mean CV error over all splits; error and kappa are reported at it",
            "stores": {k: asdict(v) for k, v in self.stores.items()},
            "ranked_stores": self.ranked_stores,
            "mean_ranks": self.mean_ranks,
            "mean_errors": self.mean_errors,
            "wilcoxon": {
                "test": f"exact Wilcoxon signed-rank test of {self.reference} against each method, paired over stores",
                "one_sided_alternative": f"{self.reference} better: lower error, higher kappa",
                "two_sided": "min(1, 2 x the smaller one-sided p-value)",
                "zero_method": self.zero_method,
                "zeros": ("dropped before ranking" if self.zero_method == "wilcox" else "ranked with the others, then their ranks dropped"),
                "ties": "average ranks; the exact distribution of W+ given those ranks (all 2^m sign patterns of the m non-zero differences)",
                "tolerance": self.tol,
                "differences": f"positive = {self.reference} better (error: method - {self.reference}; kappa: {self.reference} - method)",
                "comparisons": [asdict(t) for t in self.tests],
            },
        })

    def to_json(self, path: str | os.PathLike, overwrite: bool = False) -> None:
        """Write :meth:`to_dict` as JSON, atomically; an existing file is replaced only with ``overwrite`` and only if wideml wrote it.

        Parameters
        ----------
        path : path-like
        overwrite : bool, default False
        """
        self.refuse_output_on_stores(path)
        text = json.dumps(self.to_dict(), indent=2).encode()
        with atomic_output(path, overwrite=overwrite, workers_write=False) as tmp, open(tmp, "wb") as fh:
            fh.write(text)

    def plot(self, path: str | os.PathLike, overwrite: bool = False, title: str = "") -> None:
        """Write the Fig. 5-style PNG (:func:`wideml.estimators.compare_plot.compare_figure`), atomically.

        Parameters
        ----------
        path : path-like
        overwrite : bool, default False
            Replace an existing file wideml wrote (never a user's file).
        title : str
        """
        self.refuse_output_on_stores(path)
        write_png(self, path, overwrite=overwrite, title=title)

    def refuse_output_on_stores(self, path: str | os.PathLike) -> None:
        """Refuse (one sentence) an output that is, holds or lies inside one of the compared stores (as the CLI does).

        Parameters
        ----------
        path : path-like
            The output to be written; compared with each store's local path after resolving symlinks.
        """
        text = os.fspath(path)
        if "://" in text:
            return
        target = os.path.realpath(os.path.expanduser(text))
        for name, s in self.stores.items():
            if "://" in s.source or not os.path.exists(s.source):
                continue  # an object store, or an in-memory (X, y) pair
            store = os.path.realpath(s.source)
            if target == store:
                problem = "is"
            elif target.startswith(store.rstrip(os.sep) + os.sep):
                problem = "lies inside"
            elif store.startswith(target.rstrip(os.sep) + os.sep):
                problem = "holds"
            else:
                continue
            raise WidemlError(f"the output {text} {problem} the input {s.source} (the store {name!r}); writing it would "
                              "change or destroy that input: choose an output outside it.")

    def table(self) -> str:
        """Plain text: per store and method d, error, sd, kappa and rank; mean ranks; the Wilcoxon tests with effect sizes.

        Returns
        -------
        str
        """
        ref = self.reference
        lines = [f"{'store':<22} {'method':<7} {'d':>4} {'error':>7} {'sd':>7} {'kappa':>7} {'rank':>5}   "
                 f"({self.cv_name}, {self.classifier.upper()} on the embedding; d = lowest mean CV error)"]
        for name, s in self.stores.items():
            shown = name if len(name) <= 22 else "\u2026" + name[-21:]  # cut on the left: the file's name stays
            if s.failure is not None:
                lines.append(f"{shown:<22} refused: {s.failure}")
                continue
            head = f"{shown:<22}"
            for i, (m, sc) in enumerate(s.scores.items()):
                lead = head if i == 0 else " " * 22
                if sc.failure is not None:
                    lines.append(f"{lead} {m:<7} failed: {sc.failure}")
                    continue
                rank = f"{s.ranks[m]:>5.1f}" if m in s.ranks else f"{'-':>5}"
                lines.append(f"{lead} {m:<7} {sc.dim:>4d} {sc.error:>7.4f} {sc.error_sd:>7.4f} {sc.kappa:>7.4f} {rank}")
            extra = f"; {s.note}" if s.note else ""
            lines.append(f"{'':<22} n = {s.n_samples}, p = {s.n_features}, K = {s.n_classes}, {s.cv_name}, chance error "
                         f"{s.chance_error:.4f}, {s.n_passes} pass{'' if s.n_passes == 1 else 'es'} over X{extra}")
        n_ranked = len(self.ranked_stores)
        if n_ranked:
            order = sorted(self.mean_ranks, key=lambda m: self.mean_ranks[m])
            lines.append(f"mean rank over the {n_ranked} store{'' if n_ranked == 1 else 's'} where every method was scored: "
                         + ", ".join(f"{m} {self.mean_ranks[m]:.2f}" for m in order))
            lines.append("mean error over them: " + ", ".join(f"{m} {self.mean_errors[m]:.4f}" for m in order))
        else:
            lines.append("no store where every method was scored: no ranks.")
        zeros = "zeros dropped" if self.zero_method == "wilcox" else "zeros ranked then dropped (Pratt)"
        lines.append(f"Wilcoxon signed-rank test of {ref} against each method over the stores (exact: every sign pattern; "
                     f"{zeros}; tied |differences| get average ranks; |difference| <= {self.tol:g} is zero).")
        lines.append(f"{'method':<7} {'on':<6} {'stores':>6} {ref + ' better/tie/worse':>20} {'mean diff':>10} {'rank-biserial':>13} "
                     f"{'p one-sided (' + ref + ' better)':>26} {'p two-sided':>11}")
        for t in self.tests:
            lines.append(f"{t.method:<7} {t.measure:<6} {len(t.stores):>6} {f'{t.wins}/{t.ties}/{t.losses}':>20} "
                         f"{_num(t.mean_difference, '+10.4f')} {_num(t.rank_biserial, '13.3f')} {_num(t.p_one_sided, '26.4g')} "
                         f"{_num(t.p_two_sided, '11.4g')}")
        lines.append(f"(differences: positive = {ref} better; error: method - {ref}, kappa: {ref} - method)")
        return "\n".join(lines)
