"""The first commands a new user runs: scripts/demo --help answers in one usage line, and
scripts/setup-dev on a set-up tree says nothing at all (setup speaks only when it works or fails)."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.conftest import REPO


def script(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(REPO / "scripts" / args[0]), *args[1:]], capture_output=True, text=True,
                          timeout=120, check=False)


def test_demo_help_prints_one_usage_and_exits_0() -> None:
    result = script("demo", "--help")
    assert result.returncode == 0
    assert result.stdout.startswith("usage: scripts/demo [") and result.stdout.count("\n") == 1
    assert result.stderr == ""


def test_demo_refuses_a_duration_that_is_not_a_number_with_its_usage() -> None:
    result = script("demo", "soon")
    assert result.returncode == 2
    assert "SECONDS must be a number (got 'soon')" in result.stderr and result.stdout == ""


def test_board_test_refuses_an_unknown_argument_in_one_line_with_exit_2() -> None:
    result = script("board-test", "--arch")
    assert result.returncode == 2
    assert result.stderr == "board-test: unknown argument --arch (see --help)\n" and result.stdout == ""


def test_the_suite_names_its_stage_switches_when_refusing_an_unknown_one() -> None:
    result = script("test", "--no-boards")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "[--no-arm] [--no-board]" in result.stderr


def test_setup_dev_on_a_set_up_tree_prints_nothing() -> None:
    result = script("setup-dev")
    assert result.returncode == 0, result.stderr
    assert (result.stdout, result.stderr) == ("", "")


@pytest.mark.slow
def test_demo_says_what_it_does_in_one_line_then_shows_both_nodes_status() -> None:
    result = script("demo", "2")
    assert result.returncode == 0, result.stderr
    (line,) = result.stderr.splitlines()
    assert re.fullmatch(r"demo: ECU and CCM for 2 s on udp_multicast group \S+ port \d+ "
                        r"\(this host only; Ctrl-C ends it\)", line), line
    lines = result.stdout.splitlines()
    assert not any("warning" in line.lower() and "ecu_sim" not in line for line in lines), lines
    assert any(line.startswith("[ecu] ") and "stopped after" in line for line in lines)
    assert any(line.startswith("[ccm] ") and "stopped after" in line for line in lines)
