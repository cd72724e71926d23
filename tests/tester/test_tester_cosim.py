"""A scripted diagnostic session in ``ecu-sim cosim``: the tester ``simulate`` has, on the bus of the
truck the peer steps, answered alike on two runs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.conftest import Cli, Node
from tests.cosim.test_cosim_attacks import POWERTRAIN, TICKS, step


def cosim(start: Callable[..., Node], folder: Path) -> str:
    """A cosim process with a script, stepped by one request to its end; its answers' file."""
    folder.mkdir()
    script = folder / "session.txt"
    script.write_text("0.5 0x00 session extended\n1.0 0x03 read F186\n1.5 0x00 unlock\n", encoding="utf-8")
    node = start("cosim", *POWERTRAIN, "--listen", "127.0.0.1:0", "--duration", str(TICKS / 100),
                 "--diag-script", str(script), "--diag-answers", str(folder / "answers.csv"))
    step(int(node.wait_for(r"listening on udp 127\.0\.0\.1:(\d+)")[1]))
    assert node.wait() == 0, node.log
    return (folder / "answers.csv").read_text(encoding="utf-8")


def test_a_script_in_cosim_is_answered_by_the_stepped_truck_and_alike_twice(start: Callable[..., Node],
                                                                             tmp_path: Path) -> None:
    first, second = cosim(start, tmp_path / "one"), cosim(start, tmp_path / "two")
    rows = [line.split(",") for line in first.splitlines()[1:]]
    assert [(row[3][:4], row[5][:4]) for row in rows] == [
        ("1003", "5003"), ("22F1", "62F1"), ("2701", "6701"), ("2702", "6702")]
    assert first == second


def test_cosim_refuses_a_bad_script_with_exit_2_before_it_listens(cli_main: Cli, tmp_path: Path) -> None:
    script = tmp_path / "session.txt"
    script.write_text("1.0 0x00 read F190\n9 0x00 unlock\n", encoding="utf-8")
    result = cli_main("cosim", *POWERTRAIN, "--listen", "127.0.0.1:0", "--duration", "3",
                      "--diag-script", str(script))
    assert result.status == 2 and f"{script}:2: the step at 9 s is at or after the run's end" in result.err
    assert "listening" not in result.err
