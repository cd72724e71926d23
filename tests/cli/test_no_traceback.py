"""Bad invocations, as a table: each ends with one line saying what is wrong, its documented exit
status (2 usage, 69 bus unavailable, 73 output cannot be created, 74 output failed) and never a
traceback. A mistake a person can make must never look like a crash."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import HANG_S, Cli, clean_env, ecu_sim_command


@dataclass(frozen=True)
class Bad:
    args: tuple[str, ...]
    status: int
    says: str
    env: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        env = " ".join(f"{k}={v}" for k, v in self.env.items())
        return f"{env} ecu-sim {' '.join(self.args)}".strip()


TABLE = [
    Bad(("simulat",), 2, "did you mean 'ecu-sim simulate'?"),
    Bad(("replya", "x.log"), 2, "did you mean 'ecu-sim replay'?"),
    Bad(("simulate", "--fault", "drop"), 2,
        "does not take --fault; 'ecu-sim run', 'ecu-sim ccm', 'ecu-sim cosim' and 'ecu-sim driver' do"),
    Bad(("run", "--speed-source", "3"), 2,
        "does not take --speed-source; 'ecu-sim ccm', 'ecu-sim simulate' and 'ecu-sim driver' do"),
    Bad(("ccm", "--grade", "1"), 2,
        "does not take --grade; 'ecu-sim run', 'ecu-sim simulate' and 'ecu-sim cosim' do"),
    Bad(("--no-such-option",), 2, "unknown option --no-such-option"),
    Bad(("--fault", ""), 2, "argument --fault: empty"),
    Bad(("--fault", " , "), 2, "argument --fault: empty"),
    Bad(("--fault", "melt"), 2, "unknown fault 'melt'"),
    Bad(("--record-max-bytes", "1000"), 2, "add --record FILE"),
    Bad(("--record", "run.csv"), 2, "file must end in .log, .asc, .blf or .mcap"),
    Bad(("-c", "vcan0"), 2, "a channel ('vcan0') needs an interface"),
    Bad((), 2, "names a channel ('vcan0', CAN_CHANNEL) but no interface", {"CAN_CHANNEL": "vcan0"}),
    Bad(("-i", "nosuch"), 2, "argument -i/--interface: invalid choice: 'nosuch'"),
    Bad(("-i", "socketcand", "-c", "can0", "--bus-kwargs", "host=127.0.0.1"), 2,
        "cannot be opened with these options"),
    Bad(("--iface", "vcan0", "-c", "vcan1"), 2, "--iface NAME already means"),
    Bad(("simulate", "--grade", "200"), 2, "grade_pct must be within +-100 % (got 200)"),
    Bad(("simulate", "--grade", "1", "--grade-file", "r.csv"), 2, "not allowed with argument"),
    Bad(("--initial-speed", "fast"), 2, "argument --initial-speed: invalid float value"),
    Bad(("simulate", "--initial-speed", "400"), 2, "initial_speed_kph must be within the DBC range"),
    Bad(("simulate", "--app", "150"), 2, "--app must be within 0..100 %"),
    Bad(("simulate", "--period", "0"), 2, "period_s must be > 0"),
    Bad(("simulate", "--profile", "nosuch"), 2, "nosuch"),
    Bad(("simulate", "--dbc", "/nonexistent/truck.dbc"), 2, "/nonexistent/truck.dbc"),
    Bad(("simulate", "--config", "/nonexistent/ecu-sim.ini"), 2, "cannot read the configuration file"),
    Bad(("simulate", "--out", "/nonexistent/run.csv"), 73, "cannot create /nonexistent/run.csv"),
    Bad(("simulate", "--duration", "60", "--out", "/dev/full"), 74, "No space left on device"),
    Bad(("--record", "/nonexistent/ecu.log", "--duration", "1"), 73, "cannot write the recording"),
    Bad(("replay",), 2, "the following arguments are required: FILE"),
    Bad(("replay", "hour.csv"), 2, "hour.csv is not a recording"),
    Bad(("replay", "missing.log"), 2, "cannot read the tick journal missing.log.ticks"),
    Bad(("replay", "a.log", "b.log"), 2, "takes no argument 'b.log'"),
    Bad(("link",), 2, "the following arguments are required: NAME"),
    Bad(("--iface", "vcan7", "--duration", "1"), 69, r"vcan7|no SocketCAN support"),  # by the kernel
]


def error_lines(err: str) -> list[str]:
    """stderr without the log lines a node writes before its bus is opened (they carry a level)."""
    return [line for line in err.splitlines()
            if line.strip() and not any(f" {level} " in line for level in ("INFO", "WARNING"))]


@pytest.mark.parametrize("bad", TABLE, ids=str)
def test_a_bad_invocation_is_one_line_with_its_exit_status_and_no_traceback(
        bad: Bad, cli_main: Cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    for name, value in bad.env.items():
        monkeypatch.setenv(name, value)
    result = cli_main(*bad.args)
    lines = error_lines(result.err)
    assert result.status == bad.status, result.err
    assert "Traceback" not in result.err
    assert len(lines) == 1 and lines[0].startswith("ecu-sim") and "error: " in lines[0], result.err
    assert re.search(bad.says, lines[0]) if bad.says.startswith("vcan7|") else bad.says in lines[0], lines[0]


@pytest.mark.slow
@pytest.mark.parametrize("bad", [TABLE[0], TABLE[2], TABLE[12], TABLE[26]], ids=str)
def test_a_bad_invocation_of_the_real_program_is_one_line_and_no_traceback(bad: Bad) -> None:
    result = subprocess.run(ecu_sim_command(*bad.args), capture_output=True, text=True, timeout=HANG_S,
                            env={**clean_env(), **bad.env}, check=False)
    assert result.returncode == bad.status, result.stderr
    assert "Traceback" not in result.stderr
    assert len(error_lines(result.stderr)) == 1, result.stderr
