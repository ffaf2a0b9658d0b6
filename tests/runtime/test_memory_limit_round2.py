"""Issue 22, second round: memory budgets given as a share of RAM, refused when empty, warned about above the RAM;
every refusal of a value read from a config file names the file and the key.

``--memory-limit ""`` was accepted silently (the same empty value in a config file or an environment variable was
refused); ``--memory-limit 60%`` was refused although the help calls the default "60% of RAM"; ``1PB`` on a 24 GiB
machine was accepted without a word; ``chunk-size: 0`` and ``scheduler: thread`` in a config file were refused
without naming the file.
"""

from __future__ import annotations

import warnings

import dask.config
import numpy as np
import psutil
import pytest

import wideml.runtime.config as config
from adversarial.harness import assert_refused, run_cli
from wideml.exceptions import ConfigError, PerformanceWarning
from wideml.runtime.config import check_environment, load_config_file, memory_limit_bytes, parse_bytes

RAM = psutil.virtual_memory().total


@pytest.fixture
def npy(tmp_path):
    np.save(tmp_path / "x.npy", np.random.default_rng(0).normal(size=(20, 50)))
    return tmp_path / "x.npy"


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch):
    """Each test sees the first warning about a budget above the RAM."""
    monkeypatch.setattr(config, "_WARNED_ABOVE_RAM", set(), raising=False)


def test_empty_memory_limit_flag_is_refused(tmp_path, npy):
    proc = run_cli("ingest", npy, "-o", tmp_path / "s.zarr", "--unlabelled", "--memory-limit", "")
    assert_refused(proc, "--memory-limit", "''", "not a size")
    assert not (tmp_path / "s.zarr").exists()


@pytest.mark.parametrize("what", ["--memory-limit", "memory-limit"])
@pytest.mark.parametrize("share", ["60%", "100%", "1%", " 25.5 % "])
def test_a_share_of_ram_is_a_memory_budget(what, share):
    fraction = float(share.strip().rstrip("%").strip()) / 100
    assert parse_bytes(share, what) == int(fraction * RAM)


@pytest.mark.parametrize("share", ["0%", "0.5%", "101%", "%", "-5%", "60 %%"])
def test_shares_outside_1_to_100_percent_are_refused(share):
    with pytest.raises(ConfigError) as excinfo:
        parse_bytes(share, "--memory-limit")
    message = str(excinfo.value)
    assert "--memory-limit" in message and repr(share) in message and "\n" not in message


def test_a_share_is_only_a_memory_budget():
    with pytest.raises(ConfigError, match="chunk-size '60%' is not a size"):
        parse_bytes("60%", "chunk-size")


def test_share_in_config_file_environment_and_dask_config(tmp_path, restore_dask_config):
    path = tmp_path / "c.yaml"
    path.write_text("wideml:\n  memory-limit: 50%\n")
    load_config_file(path)
    assert memory_limit_bytes() == int(0.5 * RAM)
    check_environment({"DASK_WIDEML__MEMORY_LIMIT": "40%"})
    with dask.config.set({"wideml.memory-limit": "40%"}):
        assert memory_limit_bytes() == int(0.4 * RAM)


def test_cli_accepts_a_share_of_ram(tmp_path, npy):
    proc = run_cli("ingest", npy, "-o", tmp_path / "s.zarr", "--unlabelled", "--memory-limit", "60%")
    assert proc.returncode == 0, proc.stderr
    assert "warning" not in proc.stderr, proc.stderr
    assert (tmp_path / "s.zarr").is_dir()


def test_budget_above_ram_warns_once():
    with pytest.warns(PerformanceWarning) as record:
        assert parse_bytes("1PB", "--memory-limit") == 10**15
        assert parse_bytes("1PB", "memory-limit") == 10**15
    assert len(record) == 1, [str(w.message) for w in record]
    message = str(record[0].message)
    assert "'1PB'" in message and "RAM" in message and "\n" not in message
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parse_bytes(f"{RAM // 2}", "--memory-limit")  # within the RAM: no warning


def test_cli_warns_once_about_a_budget_above_ram(tmp_path, npy):
    proc = run_cli("ingest", npy, "-o", tmp_path / "s.zarr", "--unlabelled", "--memory-limit", "1PB")
    assert proc.returncode == 0, proc.stderr
    warned = [line for line in proc.stderr.splitlines() if line.startswith("wideml: warning:") and "RAM" in line]
    assert len(warned) == 1, proc.stderr
    assert "'1PB'" in warned[0]
    assert "Traceback" not in proc.stderr


# Every refusal of a value read from a config file names the file and the key.

BAD_SETTINGS = {
    "chunk-size: 0": "chunk-size",
    "scheduler: thread": "scheduler",
    "scheduler: local:0": "scheduler",
    "scheduler: tcp://somehost": "scheduler",
    "dashboard: nowhere": "dashboard",
    "compressor: gzip": "compressor",
    "progress: sometimes": "progress",
    "tree-width: wide": "tree-width",
    "check-feature-layout: maybe": "check-feature-layout",
    "checkpoint-interval: soon": "checkpoint-interval",
    "resume: perhaps": "resume",
    "memory-limit: ''": "memory-limit",
    "memory-limit: 150%": "memory-limit",
}


@pytest.mark.parametrize("line", BAD_SETTINGS, ids=list(BAD_SETTINGS))
def test_config_file_refusals_name_the_file_and_the_key(tmp_path, line, restore_dask_config):
    path = tmp_path / "settings.yaml"
    path.write_text(f"wideml:\n  {line}\n")
    with pytest.raises(ConfigError) as excinfo:
        load_config_file(path)
    message = str(excinfo.value)
    assert str(path) in message and BAD_SETTINGS[line] in message, message
    assert "\n" not in message


@pytest.mark.parametrize("line", ["chunk-size: 0", "scheduler: thread"])
def test_cli_config_refusals_name_the_file(tmp_path, npy, line):
    path = tmp_path / "settings.yaml"
    path.write_text(f"wideml:\n  {line}\n")
    proc = run_cli("ingest", npy, "-o", tmp_path / "s.zarr", "--unlabelled", "--config", path)
    assert_refused(proc, str(path), line.split(":")[0])
    assert not (tmp_path / "s.zarr").exists()


def test_good_config_files_are_accepted(tmp_path, restore_dask_config):
    path = tmp_path / "settings.yaml"
    path.write_text("wideml:\n  scheduler: local:2\n  chunk-size: 16MiB\n  dashboard: 127.0.0.1:8787\n  compressor: zstd\n"
                    "  progress: auto\n  tree-width: 8\n  checkpoint-interval: 0\n  resume: true\n  memory-limit: 8GiB\n")
    assert load_config_file(path)["scheduler"] == "local:2"
    defaults = tmp_path / "defaults.yaml"
    defaults.write_text(config._DEFAULTS_FILE.read_text())
    load_config_file(defaults)  # the shipped defaults pass every check
