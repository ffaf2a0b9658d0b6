"""Execution runtime: configuration, schedulers, progress bars and the one compute entry point."""

from wideml.runtime.compute import compute
from wideml.runtime.config import config_value, load_config_file, memory_limit_bytes
from wideml.runtime.scheduler import use_scheduler

__all__ = ["compute", "config_value", "load_config_file", "memory_limit_bytes", "use_scheduler"]
