"""What ``simulate`` says while and after it runs: a progress bar only where someone watches, the
real-time factor in the summary, its one-hour default stated in --help, and output failures as
sysexits (73: cannot create, 74: writing failed)."""

from __future__ import annotations

import re

import pytest

from tests.conftest import Cli, run_cli

SUMMARY = re.compile(r"simulated ([\d.]+) s in ([\d.]+) s \(\d+ ticks, \d+ ticks/s, ([\d,]+)x real time\)")


@pytest.mark.slow
def test_on_a_pipe_simulate_prints_only_its_summary_with_the_real_time_factor() -> None:
    result = run_cli("simulate", "--duration", "600")
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and SUMMARY.search(lines[0]), result.stderr


@pytest.mark.slow
def test_a_progress_bar_asked_for_on_a_pipe_is_drawn_for_a_run_over_a_second() -> None:
    result = run_cli("simulate", "--duration", "36000", "--progress")
    assert result.returncode == 0, result.stderr
    summary = SUMMARY.search(result.stderr)
    assert summary is not None, result.stderr
    if float(summary[2]) >= 1.5:  # a machine fast enough to finish within a second shows none
        assert re.search(r"simulated \d+/36000 s .*%", result.stderr), result.stderr[:500]


def test_simulate_without_a_duration_runs_the_hour_its_help_states(cli_main: Cli) -> None:
    helped = cli_main("simulate", "--help")
    assert "default: 3600 s" in re.sub(r"\s+", " ", helped.out)
    result = cli_main("simulate")
    assert result.status == 0
    assert "simulated 3600.0 s" in result.err


def test_a_trace_that_cannot_be_written_exits_74(cli_main: Cli) -> None:
    result = cli_main("simulate", "--duration", "60", "--out", "/dev/full")
    assert result.status == 74
    assert "writing /dev/full failed: No space left on device" in result.err


def test_a_trace_that_cannot_be_created_exits_73(cli_main: Cli) -> None:
    result = cli_main("simulate", "--duration", "60", "--out", "/nonexistent/run.csv")
    assert result.status == 73
    assert "cannot create /nonexistent/run.csv" in result.err
