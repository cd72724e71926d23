"""``ecu-sim diag`` as a person runs it: a process of its own against a node process on a private
udp_multicast bus (each test its own group and port). What it prints and its exit status are
the specification; the node is ecu-sim's own ECU, whose UDS server tests/uds holds to udsoncan.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import HANG_S, Node, Udp, clean_env, ecu_sim_command, private_udp, run_cli

VIN = "1M8GDM9AXKP042788"
#: the fault the ECU starts with, in the SPN/FMI the command prints
FAULT = "SPN 520 FMI 31 (08021F)"


def diag(udp: Udp, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``ecu-sim diag ARGS`` on the test's bus, to its end."""
    if env is None:
        return run_cli("diag", *args, *udp.args())
    return subprocess.run(ecu_sim_command("diag", *args, *udp.args()), capture_output=True, text=True,
                          timeout=HANG_S, env={**clean_env(), **env}, check=False)


def ecu(start: Callable[..., Node], tmp_path: Path, *args: str) -> Udp:
    """The single-node ECU with a VIN on its own bus, once it runs."""
    udp = private_udp()
    config = tmp_path / "ecu.ini"
    config.write_text(f"[fms]\nvin = {VIN}\n", encoding="utf-8")
    start("run", "--profile", "j1939", "--config", str(config), *udp.args(), *args).wait_for("ECU on")
    return udp


@pytest.fixture
def moving(start: Callable[..., Node], tmp_path: Path) -> Udp:
    """The ECU's truck at 80 km/h, a DTC set for its first half second."""
    return ecu(start, tmp_path, "--fault", "dtc=520:31@0+0.5")


@pytest.fixture
def standing(start: Callable[..., Node], tmp_path: Path) -> Udp:
    """The ECU's truck standing, where programming is allowed."""
    return ecu(start, tmp_path, "--initial-speed", "0", "--grade", "0")


@pytest.mark.slow
def test_read_without_items_shows_the_identification(moving: Udp) -> None:
    result = diag(moving, "read")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert f"0x00 VIN (F190): {VIN}" in lines
    assert any(line.startswith("0x00 software version (F195): ecu-sim ") for line in lines)
    assert "0x00 active session (F186): default" in lines


@pytest.mark.slow
def test_read_shows_each_item_asked_for_and_nothing_else(moving: Udp) -> None:
    result = diag(moving, "read", "vin", "0xF186")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"0x00 VIN (F190): {VIN}", "0x00 active session (F186): default"]


@pytest.mark.slow
def test_dtcs_lists_the_node_s_dtcs_and_clear_removes_them(moving: Udp) -> None:
    for _ in range(20):  # each try is a request: until the fault's window has ended
        listed = diag(moving, "dtcs")
        assert listed.returncode == 0, listed.stderr
        if f"0x00 DTC {FAULT}: previously active" in listed.stdout.splitlines():
            break
    else:
        raise AssertionError(f"the fault never showed as previously active:\n{listed.stdout}")
    cleared = diag(moving, "clear")
    assert (cleared.returncode, cleared.stdout) == (0, "0x00: DTCs cleared\n"), cleared.stderr
    after = diag(moving, "dtcs")
    assert after.returncode == 0 and FAULT not in after.stdout, after.stdout


@pytest.mark.slow
def test_a_node_that_does_not_answer_is_exit_69_naming_its_address(moving: Udp) -> None:
    result = diag(moving, "read", "vin", "--target", "0x22", "--timeout", "0.5")
    assert result.returncode == 69
    assert "no answer from node 0x22" in result.stderr and "18DA22F9" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.splitlines()) == 1


@pytest.mark.slow
def test_an_identifier_the_node_lacks_is_refused_with_its_code_and_what_to_do(moving: Udp) -> None:
    result = diag(moving, "read", "0x1234")
    assert result.returncode == 76
    assert "node 0x00 refused the read of DID 1234" in result.stderr
    assert "0x31 request out of range; the node has no such identifier" in result.stderr


@pytest.mark.slow
def test_flashing_a_moving_truck_is_refused_for_now(moving: Udp, tmp_path: Path) -> None:
    image = tmp_path / "slow.s19"
    assert run_cli("calibration", "build", "--node", "ecu", "--id", "SLOW-80", "--set",
                   "road_speed_limit_kph=80", "-o", str(image)).returncode == 0
    result = diag(moving, "flash", str(image))
    assert result.returncode == 75
    assert "refused the programming session: 0x22 conditions not correct" in result.stderr
    assert "stop it and try again" in result.stderr


@pytest.mark.slow
def test_a_key_algorithm_that_is_not_the_node_s_is_refused_as_a_permission(
        standing: Udp, tmp_path: Path) -> None:
    (tmp_path / "otherkeys.py").write_text("def key(seed, level):\n    return bytes(4)\n", encoding="utf-8")
    image = tmp_path / "slow.s19"
    assert run_cli("calibration", "build", "--node", "ecu", "--id", "SLOW-80", "--set",
                   "road_speed_limit_kph=80", "-o", str(image)).returncode == 0
    result = diag(standing, "flash", str(image), "--key-algorithm", "otherkeys:key",
                  env={"PYTHONPATH": str(tmp_path)})
    assert result.returncode == 77
    assert "refused security access: 0x35 invalid key" in result.stderr
    assert "--key-algorithm" in result.stderr


def test_a_malformed_image_file_is_exit_2_before_anything_is_sent(tmp_path: Path) -> None:
    image = tmp_path / "broken.s19"
    image.write_text("S0 not a record\n", encoding="ascii")
    result = diag(private_udp(), "flash", str(image))
    assert result.returncode == 2
    assert f"{image}: not a valid S-record file" in result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_an_unknown_item_is_exit_2_naming_what_can_be_read() -> None:
    result = diag(private_udp(), "read", "fuel")
    assert result.returncode == 2
    assert "'fuel' is none of vin, part, serial, software, calibration-id, cvn, session" in result.stderr


def test_a_parameter_of_another_node_kind_is_exit_2_naming_the_kind() -> None:
    result = diag(private_udp(), "read", "kp", "--node", "engine")
    assert result.returncode == 2 and "kp" in result.stderr and "engine" in result.stderr
