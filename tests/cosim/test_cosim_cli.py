"""``ecu-sim cosim`` as a user meets it: the contract it prints, its mistakes, the reference peers."""

from __future__ import annotations

import csv
import io
import json
import socket
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ecu_sim.runs.prepare import prepare
from ecu_sim.runs.simulation import DriverSetup, Simulation
from ecu_sim.settings.model import Settings
from tests.conftest import HANG_S, REPO, Cli, Node, clean_env


def test_the_contract_lists_inputs_and_outputs_with_index_unit_and_range(cli_main: Cli) -> None:
    result = cli_main("cosim", "--contract", "csv")
    assert result.status == 0
    rows = list(csv.DictReader(io.StringIO(result.out)))
    inputs = [(r["index"], r["name"], r["unit"]) for r in rows if r["direction"] == "input"]
    assert inputs == [("0", "app_pct", "%"), ("1", "grade_pct", "%")]
    outputs = {r["name"]: r for r in rows if r["direction"] == "output"}
    assert [r["index"] for r in outputs.values()] == [str(i) for i in range(len(outputs))]
    assert outputs["CCVS1.WheelBasedVehicleSpeed"]["unit"] == "km/h"
    assert outputs["CCVS1.WheelBasedVehicleSpeed"]["maximum"] == "250.996"


def test_the_contract_follows_the_dbc_every_signal_the_ecu_sends(cli_main: Cli) -> None:
    result = cli_main("cosim", "--contract", "json", "--profile", "j1939")
    assert result.status == 0
    names = [entry["name"] for entry in json.loads(result.out)["outputs"]]
    assert names[:6] == ["t_s", "speed_kph", "distance_m", "grade_pct", "app_pct", "app_missing"]
    assert "CCVS1.WheelBasedVehicleSpeed" in names and "CCVS1.CruiseCtrlSetSpeed" in names


@pytest.mark.parametrize("listen", ["localhost", "1.2.3.4:x", ":47000", "127.0.0.1:70000"])
def test_a_listen_address_that_is_not_host_colon_port_exits_2(cli_main: Cli, listen: str) -> None:
    result = cli_main("cosim", "--listen", listen)
    assert result.status == 2 and "expected HOST:PORT" in result.err


def test_a_peer_timeout_of_zero_exits_2(cli_main: Cli) -> None:
    result = cli_main("cosim", "--peer-timeout", "0")
    assert result.status == 2 and "--peer-timeout must be > 0" in result.err


@pytest.mark.parametrize("seconds", ["-0.001", "2", "nan"])
def test_a_busy_poll_outside_0_to_1_s_exits_2(cli_main: Cli, seconds: str) -> None:
    result = cli_main("cosim", "--busy-poll", seconds)
    assert result.status == 2 and "--busy-poll must be within 0..1 s" in result.err


def test_the_class6_contract_adds_the_brake_the_driveline_and_the_engine_messages(cli_main: Cli) -> None:
    result = cli_main("cosim", "--vehicle", "class6", "--profile", "j1939", "--contract", "json")
    assert result.status == 0
    spec = json.loads(result.out)
    assert [e["name"] for e in spec["inputs"]] == ["app_pct", "grade_pct", "brake_pct"]
    outputs = [e["name"] for e in spec["outputs"]]
    assert {"gear", "selected_gear", "engine_rpm", "brake_applied_pct", "elevation_m"} <= set(outputs)
    assert "EEC1.EngSpeed" in outputs and "ETC2.TransCurrentGear" in outputs


# -- the reference peers in examples/, as real processes against a real ecu-sim cosim ---------------------


def simulate_ccm_speeds(ticks: int) -> list[float]:
    settings, profile = prepare(Settings())
    with Simulation(settings, DriverSetup("ccm"), profile) as simulation:
        speeds = []
        for _ in range(ticks):
            simulation.loop.run(1)
            speeds.append(simulation.ecu.state.speed_kph)
    return speeds


def run_example(name: str, port: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(REPO / "examples" / name), "--connect", f"127.0.0.1:{port}",
                           *args], capture_output=True, text=True, timeout=HANG_S, env=clean_env(),
                          check=False)


def trace(path: Path, column: str) -> list[float]:
    with open(path, encoding="ascii") as handle:
        return [float(row[column]) for row in csv.DictReader(handle)]


@pytest.mark.slow
def test_the_pi_peer_drives_ecu_sim_cosim_to_the_trace_of_simulate_with_the_ccm(
        start: Callable[..., Node], tmp_path: Path) -> None:
    cosim = start("cosim", "--listen", "127.0.0.1:0", "--peer-timeout", "1")
    port = cosim.wait_for(r"listening on udp 127\.0\.0\.1:(\d+)")[1]
    done = run_example("cosim_pi_peer.py", port, "--duration", "30", "--out", str(tmp_path / "pi.csv"))
    assert done.returncode == 0, done.stderr
    assert trace(tmp_path / "pi.csv", "speed_kph") == simulate_ccm_speeds(300)
    assert cosim.wait() == 0
    assert "cosim ended: no request from the peer for 1 s" in cosim.log
    assert "300 ticks, 300 steps" in cosim.log


@pytest.mark.slow
def test_the_can_peer_closes_the_loop_with_frames_alone(start: Callable[..., Node], tmp_path: Path) -> None:
    cosim = start("cosim", "--listen", "127.0.0.1:0", "--peer-timeout", "1")
    port = cosim.wait_for(r"listening on udp 127\.0\.0\.1:(\d+)")[1]
    done = run_example("cosim_can_peer.py", port, "--duration", "30", "--out", str(tmp_path / "can.csv"))
    assert done.returncode == 0, done.stderr
    _, profile = prepare(Settings())
    on_the_wire = [profile.speed.decode(profile.speed.encode(s)) for s in simulate_ccm_speeds(300)]
    assert trace(tmp_path / "can.csv", "speed_kph") == on_the_wire
    assert cosim.wait() == 0


@pytest.mark.slow
def test_a_run_with_a_duration_ends_with_the_answer_that_reaches_it(start: Callable[..., Node],
                                                                    tmp_path: Path) -> None:
    cosim = start("cosim", "--listen", "127.0.0.1:0", "--duration", "10")
    port = cosim.wait_for(r"listening on udp 127\.0\.0\.1:(\d+)")[1]
    done = run_example("cosim_pi_peer.py", port, "--duration", "10", "--ticks-per-step", "7")
    assert done.returncode == 0, done.stderr
    assert cosim.wait() == 0
    assert "cosim ended: the run reached its --duration, 100 ticks" in cosim.log


@pytest.mark.slow
def test_a_broken_datagram_to_the_process_is_answered_and_logged_without_a_traceback(
        start: Callable[..., Node]) -> None:
    cosim = start("cosim", "--listen", "127.0.0.1:0", "--peer-timeout", "1")
    port = int(cosim.wait_for(r"listening on udp 127\.0\.0\.1:(\d+)")[1])
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(HANG_S)
        sock.sendto(b"\x00" * 7, ("127.0.0.1", port))
        refused = sock.recv(65535)
        sock.sendto(struct.pack("<6d", 1.0, 1.0, 5.0, 0.0, 10.0, float("nan")), ("127.0.0.1", port))
        answer = sock.recv(65535)
    assert struct.unpack_from("<4d", refused)[2] == -1.0 and b"shorter than the 32-byte header" in refused
    assert struct.unpack_from("<4d", answer)[2:] == (5.0, 4.0)
    assert cosim.wait() == 0
    assert "refused: datagram of 7 bytes is shorter" in cosim.log and "Traceback" not in cosim.log


@pytest.mark.slow
def test_a_peer_brakes_the_class6_truck_of_an_ecu_sim_cosim_process(start: Callable[..., Node]) -> None:
    cosim = start("cosim", "--vehicle", "class6", "--profile", "j1939", "--initial-speed", "40",
                  "--listen", "127.0.0.1:0", "--peer-timeout", "1")
    port = int(cosim.wait_for(r"listening on udp 127\.0\.0\.1:(\d+)")[1])
    assert "3 inputs" in cosim.log
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(HANG_S)
        # version, seq, n, tick | APP 0 %, grade 0 %, brake 80 %: a hundred ticks
        sock.sendto(struct.pack("<7d", 1.0, 1.0, 100.0, 0.0, 0.0, 0.0, 80.0), ("127.0.0.1", port))
        answer = sock.recv(65535)
    header, values = struct.unpack_from("<4d", answer), struct.unpack_from("<6d", answer, 32)
    assert header[2:] == (100.0, 99.0)
    assert values[1] == 0.0  # speed: stopped within ten seconds
    assert cosim.wait() == 0
