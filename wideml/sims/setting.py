"""The simulator interface: a setting draws per-sample labels once and per-feature values tile by tile."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from wideml.exceptions import WidemlError
from wideml.sims import rng


@dataclass(frozen=True)
class Samples:
    """Per-sample draws of one simulated data set (all n-sized, held in memory).

    Attributes
    ----------
    y : ndarray of shape (n_samples,), int64
        Class labels 0..K-1.
    component : ndarray of shape (n_samples,), int64
        Mixture component of each sample (the class, or e.g. (class, outlier)).
    extras : dict of str to ndarray of shape (n_samples,)
        Named per-sample draws shared across features (outlier flags, shared factors, ...).
    """

    y: np.ndarray
    component: np.ndarray
    extras: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass(frozen=True)
class SimContext:
    """Everything a tile needs: the shape, the seed, the resolved parameters and the per-sample draws."""

    n: int
    p: int
    seed: int
    params: Mapping[str, Any]
    samples: Samples


class Setting:
    """A simulation setting.

    Subclasses set the class attributes and implement :meth:`tile`. The values of
    a tile depend only on (seed, setting family, tile index) and the per-sample
    draws, which is what makes every setting chunking-independent.

    Attributes
    ----------
    name : str
        Registry name (``wideml simulate NAME``).
    family : str or None
        Key material for the random streams; settings that share a family (e.g.
        ``enc-uniform`` and ``enc-uniform-noise``) share their labels and base noise.
    title : str
        Name used in the papers.
    description : str
        One line for ``wideml simulate --list``.
    reference : str
        Where the setting is specified.
    defaults : dict
        Parameters and their default values.
    default_n_features : int
        p used when none is given.
    min_features : int
        Smallest p the setting is defined for.
    """

    name: str = ""
    family: str | None = None
    title: str = ""
    description: str = ""
    reference: str = ""
    defaults: Mapping[str, Any] = {}
    default_n_features: int = 1000
    min_features: int = 1

    # ------------------------------------------------------------------ parameters
    @property
    def code(self) -> int:
        """Key material of this setting's random streams."""
        return rng.setting_code(self.family or self.name)

    def n_classes(self, params: Mapping[str, Any]) -> int:
        """Number of classes K."""
        return int(params.get("n_classes", 2))

    def default_priors(self, params: Mapping[str, Any]) -> tuple[float, ...]:
        """Class priors used when ``priors`` is not given (uniform)."""
        k = self.n_classes(params)
        return tuple([1.0 / k] * k)

    def priors(self, params: Mapping[str, Any]) -> np.ndarray:
        """The class priors, shape (K,)."""
        given = params.get("priors")
        return np.asarray(self.default_priors(params) if given is None else given, dtype=np.float64)

    def resolve_params(self, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Merge ``params`` into the defaults, coercing and validating every value.

        Raises
        ------
        WidemlError
            For an unknown parameter name or a value of the wrong type or range.
        """
        params = dict(params or {})
        unknown = sorted(set(params) - set(self.defaults))
        if unknown:
            valid = ", ".join(sorted(self.defaults)) or "none"
            raise WidemlError(
                f"setting {self.name!r} has no parameter {unknown[0]!r}; valid parameters are {valid}."
            )
        out = dict(self.defaults)
        for key, value in params.items():
            out[key] = _coerce(self.name, key, value, self.defaults[key])
        self._check_priors(out)
        self.check_params(out)
        return out

    def check_params(self, params: Mapping[str, Any]) -> None:
        """Setting-specific checks of resolved parameters (raise WidemlError)."""

    def _check_priors(self, params: Mapping[str, Any]) -> None:
        if "n_classes" in params and int(params["n_classes"]) < 2:
            raise WidemlError(f"{self.name}: n_classes={params['n_classes']} is below 2; simulate at least two classes.")
        given = params.get("priors")
        if given is None:
            return
        k = self.n_classes(params)
        pri = np.asarray(given, dtype=np.float64)
        if pri.shape != (k,):
            raise WidemlError(f"{self.name}: priors has {pri.size} entries for {k} classes; give one prior per class.")
        if np.any(pri < 0) or not math.isclose(float(pri.sum()), 1.0, abs_tol=1e-6):
            raise WidemlError(f"{self.name}: priors {_fmt(tuple(float(v) for v in pri))} must be non-negative and sum to 1; fix them.")

    def check_shape(self, n_samples: int, n_features: int, params: Mapping[str, Any]) -> None:
        """Raise WidemlError if the setting is not defined for this shape."""
        if n_samples < 1:
            raise WidemlError(f"n_samples must be at least 1, got {n_samples}.")
        if n_features < self.min_features:
            raise WidemlError(
                f"setting {self.name!r} needs at least {self.min_features} features, got {n_features}; increase --n-features."
            )

    # ------------------------------------------------------------------ draws
    def draw_samples(self, n: int, seed: int, params: Mapping[str, Any]) -> Samples:
        """Labels drawn i.i.d. from the priors (stream LABELS); the component is the label."""
        u = rng.generator(seed, self.code, rng.LABELS).random(n)
        y = rng.labels_from_uniform(u, self.priors(params))
        return Samples(y=y, component=y.copy())

    def tile(self, t: int, ctx: SimContext) -> np.ndarray:
        """Values of generation tile ``t``, float64 of shape (n, tile width)."""
        raise NotImplementedError

    def iter_tiles(self, tiles: Iterable[int], ctx: SimContext) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(t, values)`` for each tile in ``tiles`` (overridden when tiles share work)."""
        for t in tiles:
            yield t, self.tile(t, ctx)

    def fill(self, out: np.ndarray, start: int, ctx: SimContext) -> None:
        """Write features ``[start, start + out.shape[1])`` into ``out`` (any float dtype)."""
        stop = start + out.shape[1]
        for t, values in self.iter_tiles(rng.tiles_overlapping(start, stop), ctx):
            t0, t1 = rng.tile_bounds(t, ctx.p)
            a, b = max(start, t0), min(stop, t1)
            out[:, a - start : b - start] = values[:, a - t0 : b - t0]

    def summary(self) -> str:
        """One line: description, default p and parameters."""
        params = ", ".join(f"{k}={_fmt(v)}" for k, v in self.defaults.items())
        return f"{self.description} [p={self.default_n_features}{'; ' + params if params else ''}]"


class DiagonalMixture(Setting):
    """Independent features: ``x_ij = loc[c_i, j] + scale[c_i, j] * z_ij``.

    ``c_i`` is the sample's mixture component and ``z`` is standard normal
    (``distribution = "normal"``) or uniform on [0, 1) (``"uniform"``), drawn per
    tile from stream NOISE. If the parameter ``noise`` is positive,
    ``noise * Uniform(0, 1)`` from stream EXTRA_NOISE is added to every entry.
    """

    distribution = "normal"

    def loc(self, j: np.ndarray, ctx: SimContext) -> np.ndarray:
        """Per-component location at global 0-based feature indices ``j``, shape (C, len(j))."""
        raise NotImplementedError

    def scale(self, j: np.ndarray, ctx: SimContext) -> np.ndarray:
        """Per-component scale (standard deviation, or width for uniforms), shape (C, len(j))."""
        raise NotImplementedError

    def standard_draws(self, t: int, width: int, ctx: SimContext) -> np.ndarray:
        gen = rng.generator(ctx.seed, self.code, rng.NOISE, t)
        if self.distribution == "uniform":
            return gen.random((ctx.n, width))
        return gen.standard_normal((ctx.n, width))

    def tile(self, t: int, ctx: SimContext) -> np.ndarray:
        t0, t1 = rng.tile_bounds(t, ctx.p)
        j = np.arange(t0, t1, dtype=np.int64)
        comp = ctx.samples.component
        x = self.standard_draws(t, t1 - t0, ctx)
        x *= self.scale(j, ctx)[comp]
        x += self.loc(j, ctx)[comp]
        noise = float(ctx.params.get("noise", 0.0) or 0.0)
        if noise:
            x += noise * rng.generator(ctx.seed, self.code, rng.EXTRA_NOISE, t).random((ctx.n, t1 - t0))
        return x


def _fmt(value: Any) -> str:
    if isinstance(value, tuple):
        return ",".join(_fmt(v) for v in value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _coerce(setting: str, key: str, value: Any, default: Any) -> Any:
    """Convert ``value`` to the type of ``default`` (priors: None or a tuple of floats)."""
    try:
        if key == "priors":
            if value is None or (isinstance(value, str) and value.lower() in ("none", "")):
                return None
            if isinstance(value, str):
                value = [v for v in value.replace(";", ",").split(",") if v.strip()]
            return tuple(float(v) for v in value)
        if isinstance(default, bool):
            if isinstance(value, str):
                return value.lower() in ("1", "true", "yes", "on")
            return bool(value)
        if isinstance(default, int):
            number = float(value)
            if not number.is_integer():
                raise ValueError
            return int(number)
        if isinstance(default, float):
            number = float(value)
            if not math.isfinite(number):
                raise ValueError
            return number
    except (TypeError, ValueError):
        kind = "a comma-separated list of numbers" if key == "priors" else ("an integer" if isinstance(default, int) else "a number")
        raise WidemlError(f"{setting}: parameter {key}={value!r} is not {kind}; pass e.g. {key}={_fmt(default)}.") from None
    return value
