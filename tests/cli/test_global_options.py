"""The shared options (--config, --scheduler, --memory-limit, --progress/--no-progress) work before the command too (issue 22).

configs/default.yaml shows `wideml --config FILE fit ...`; argparse used to refuse it. Both orders must
mean the same, and given on both sides the later one wins.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from adversarial.harness import assert_refused, run_cli
from oracles import store_and_model

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("global_options")
    store_and_model(folder)
    (folder / "bogus.yaml").write_text("wideml:\n  scheduler: bogus\n")
    (folder / "sync.yaml").write_text("wideml:\n  scheduler: sync\n")
    return folder


def _both_orders(option: list, command: list) -> list[list]:
    return [[*option, *command], [*command, *option]]


def test_the_documented_example_config_is_accepted_before_the_command(files):
    proc = run_cli("--config", REPO / "configs" / "default.yaml", "info", files / "s.zarr")
    assert proc.returncode == 0, proc.stderr
    assert "40 samples x 80 features" in proc.stdout


@pytest.mark.parametrize("before", [True, False], ids=["before", "after"])
def test_config_is_read_in_either_order(files, before):
    """A config naming a bogus scheduler is refused the same way on both sides of the command: it was read."""
    option, command = ["--config", files / "bogus.yaml"], ["predict", files / "m.zarr", files / "s.zarr"]
    args = [*option, *command] if before else [*command, *option]
    assert_refused(run_cli(*args, cwd=files), "unknown scheduler 'bogus'")


@pytest.mark.parametrize("before", [True, False], ids=["before", "after"])
def test_scheduler_in_either_order(files, before):
    option, command = ["--scheduler", "sync"], ["predict", files / "m.zarr", files / "s.zarr"]
    args = [*option, *command] if before else [*command, *option]
    proc = run_cli(*args, cwd=files)
    assert proc.returncode == 0, proc.stderr
    assert "wideml: scheduler sync (1 thread)" in proc.stderr
    assert len(proc.stdout.splitlines()) == 40


def test_relative_config_before_the_command_is_taken_from_the_current_folder(files):
    assert_refused(run_cli("--config", "bogus.yaml", "predict", files / "m.zarr", files / "s.zarr", cwd=files),
                   "unknown scheduler 'bogus'")


def test_no_progress_before_the_command_wins_over_a_config(files):
    proc = run_cli("--no-progress", "--config", "sync.yaml", "predict", files / "m.zarr", files / "s.zarr", cwd=files,
                   env={"DASK_WIDEML__PROGRESS": "true"})
    assert proc.returncode == 0, proc.stderr
    assert "wideml: scheduler" not in proc.stderr  # no bars, no implicit scheduler line (the config's sync was not named)


@pytest.mark.parametrize("option, dest, value", [
    (["--config", "c.yaml"], "config", "c.yaml"),
    (["--scheduler", "local:2"], "scheduler", "local:2"),
    (["--memory-limit", "2GiB"], "memory_limit", "2GiB"),
    (["--progress"], "progress", True),
    (["--no-progress"], "progress", False),
])
def test_parsed_the_same_in_either_order(option, dest, value):
    from wideml.cli.main import build_parser, parse_args

    parser = build_parser()
    for argv in _both_orders(option, ["info", "s.zarr"]):
        assert getattr(parse_args(parser, argv), dest) == value, argv
    assert getattr(parse_args(parser, ["info", "s.zarr"]), dest) is None  # not given: None, as before


def test_given_on_both_sides_the_later_one_wins():
    from wideml.cli.main import build_parser, parse_args

    parser = build_parser()
    args = parse_args(parser, ["--scheduler", "threads", "--progress", "fit", "lol", "s.zarr", "-o", "m.zarr",
                               "--scheduler", "sync", "--no-progress"])
    assert args.scheduler == "sync" and args.progress is False
    args = parse_args(parser, ["--scheduler", "sync", "fit", "lol", "s.zarr", "-o", "m.zarr"])
    assert args.scheduler == "sync"  # not reset by the subcommand's parser


def test_bad_memory_limit_before_the_command_is_one_sentence(files):
    proc = run_cli("--memory-limit", "lots", "predict", files / "m.zarr", files / "s.zarr", cwd=files)
    assert_refused(proc, "--memory-limit")
