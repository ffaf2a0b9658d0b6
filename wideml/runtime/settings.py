"""``wideml.config``: read and change wideml's settings from Python, checked like a config file.

wideml's settings are the ``wideml`` namespace of :mod:`dask.config` (defaults in
``wideml/wideml.yaml``, overridden by ``DASK_WIDEML__*`` environment variables, a
``--config`` file or ``dask.config.set``). :data:`config` is the one handle on them:

>>> import wideml
>>> wideml.config.get("memory_limit")                  # doctest: +SKIP
'auto'
>>> wideml.config.set(memory_limit="8GiB", threads=4)   # from now on              # doctest: +SKIP
>>> with wideml.config.set(scheduler="sync"):           # inside the block only   # doctest: +SKIP
...     LOL(n_components=5).fit(store)

Every value is checked before anything changes (:func:`wideml.runtime.config.check_setting`):
an unknown key or an unusable value is one :class:`~wideml.exceptions.ConfigError` sentence,
where ``dask.config.set`` would accept it silently and fail later. Keys may be written with
``_`` or ``-`` (``memory_limit`` is ``memory-limit``).
"""

from __future__ import annotations

import os
from typing import Any

import dask.config

from wideml.exceptions import ConfigError
from wideml.runtime.cluster_settings import check_key, check_path, flatten
from wideml.runtime.config import DEFAULTS, check_setting, config_value, load_config_file


def _key(name: str) -> str:
    """The config key ``name`` names (``memory_limit`` and ``memory-limit`` are ``memory-limit``)."""
    if not isinstance(name, str):
        raise ConfigError(f"config key {name!r} is not a name; valid keys are {', '.join(sorted(DEFAULTS))}.")
    return name.strip().lower().replace("_", "-")


class Config:
    """Read and change wideml's settings (the ``wideml`` namespace of dask.config), every value checked.

    Use the module-level instance, ``wideml.config``. Keys are those of
    ``wideml/wideml.yaml`` (:attr:`keys`): ``scheduler``, ``dashboard``,
    ``memory-limit``, ``chunk-size``, ``compressor``, ``checksum``,
    ``progress``, ``tree-width``, ``threads``, ``check-feature-layout``,
    ``checkpoint-interval``, ``resume``, ``workdir`` and ``storage-options``
    (fsspec options of stores given as URLs; no credentials); in Python they may be
    written with underscores (``memory_limit``). ``cluster`` holds the
    batch-scheduler settings of ``--scheduler slurm|pbs|sge``; they are read
    and set as a mapping or one at a time (``"cluster.slurm.cores"``), and a
    mapping is merged into the current settings. ``scheduler`` also takes a
    ``distributed.Client`` or a cluster object in Python.

    Attributes
    ----------
    keys : tuple of str
        Every config key, sorted.
    defaults : dict
        The shipped default of every key.

    Examples
    --------
    >>> import wideml
    >>> with wideml.config.set(memory_limit="8GiB"):      # doctest: +SKIP
    ...     wideml.config.get("memory_limit")
    '8GiB'
    """

    @property
    def keys(self) -> tuple[str, ...]:
        """Every config key, sorted (hyphenated, as in config files)."""
        return tuple(sorted(DEFAULTS))

    @property
    def defaults(self) -> dict[str, Any]:
        """The shipped default of every key (a copy of ``wideml/wideml.yaml``'s ``wideml:`` mapping)."""
        return dict(DEFAULTS)

    def get(self, key: str) -> Any:
        """The current value of ``key``, as set (a file, the environment, :meth:`set`, or the default).

        Parameters
        ----------
        key : str
            A config key, e.g. ``"memory_limit"`` or ``"memory-limit"``.

        Returns
        -------
        object
            The value as given (e.g. ``"8GiB"``, ``"auto"``, ``4``), not parsed.

        Raises
        ------
        ConfigError
            If ``key`` is unknown, or a ``DASK_WIDEML__*`` environment variable names no key.
        """
        key = _key(key)
        if key.startswith("cluster."):  # a batch-scheduler setting: "cluster.slurm.cores"
            check_key(key.split(".")[1:])
            return dask.config.get(f"wideml.{key}", None)
        return config_value(key)

    def set(self, settings: dict[str, Any] | None = None, /, **values: Any) -> dask.config.set:
        """Change settings now, or inside a ``with`` block only; every value is checked before any changes.

        Parameters
        ----------
        settings : dict, optional
            ``{key: value}`` (keys with ``-`` or ``_``).
        **values
            The same as keyword arguments: ``memory_limit="8GiB"``, ``threads=4``.

        Returns
        -------
        dask.config.set
            The change, already made. Used as a context manager
            (``with wideml.config.set(...):``) the previous values come back
            when the block ends; otherwise the change stays.

        Raises
        ------
        ConfigError
            Naming the first unknown key or unusable value; then nothing has changed.
        """
        merged = {**(settings or {}), **values}
        checked = {}
        for name, value in merged.items():
            key = _key(name)
            if key == "cluster" or key.startswith("cluster."):  # merged into the defaults, not replacing them
                check_path(key.split(".")[1:], value)
                checked.update(flatten(value, f"wideml.{key}") if key.count(".") < 2 and isinstance(value, dict)
                               else {f"wideml.{key}": value})
                continue
            check_setting(key, value)
            checked[f"wideml.{key}"] = value
        return dask.config.set(checked)

    def load(self, path: str | os.PathLike) -> dict[str, Any]:
        """Apply a YAML config file (a top-level ``wideml:`` mapping, as for ``wideml --config FILE``).

        Parameters
        ----------
        path : path-like
            The file.

        Returns
        -------
        dict
            The settings the file holds (hyphenated keys).

        Raises
        ------
        ConfigError
            If the file cannot be read, is not such a mapping, or names an
            unknown key or an unusable value (naming the file and the key).
        """
        return load_config_file(path)

    def as_dict(self) -> dict[str, Any]:
        """Every key with its current value.

        Returns
        -------
        dict
            ``{key: value}`` (hyphenated keys, sorted).
        """
        return {key: config_value(key) for key in self.keys}

    def __repr__(self) -> str:
        return "wideml.config(" + ", ".join(f"{k}={v!r}" for k, v in self.as_dict().items()) + ")"


#: The handle on wideml's settings, exported as ``wideml.config``.
config = Config()

__all__ = ["Config", "config"]
