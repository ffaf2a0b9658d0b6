"""The version of wideml, in a module of its own.

It is the single source of the version: ``pyproject.toml`` reads it (``[tool.setuptools.dynamic]``,
statically, without importing the package) and every module that records the version imports it from
here, so that none of them has to import the package root and, with it, every layer.
"""

__version__ = "0.1.0"
