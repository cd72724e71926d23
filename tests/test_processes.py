"""Two real processes, ``ecu-sim`` and ``ecu-sim ccm``, closing the loop on the default bus."""

from __future__ import annotations

import signal
import subprocess
import time

import can
import pytest

from ecu_sim.codec.profile import Profile
from tests.conftest import clean_env, ecu_sim_command, udp_args

pytestmark = pytest.mark.slow


def start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(ecu_sim_command(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=clean_env())


def collect(bus: can.BusABC, seconds: float, start_id: int, startup_s: float = 15.0) -> list[can.Message]:
    """Frames of ``seconds`` of bus time, counted from the first frame with ``start_id``."""
    frames: list[can.Message] = []
    end = time.monotonic() + startup_s
    while (remaining := end - time.monotonic()) > 0:
        msg = bus.recv(remaining)
        if msg is None:
            continue
        if not frames and msg.arbitration_id == start_id:
            end = time.monotonic() + seconds
        if frames or msg.arbitration_id == start_id:
            frames.append(msg)
    return frames


def stop(process: subprocess.Popen[str]) -> tuple[int, str]:
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=10)
    return process.returncode, err


def test_ecu_and_ccm_processes_close_the_loop_toward_the_set_speed(
        udp_bus: can.BusABC, udp_port: int) -> None:
    profile = Profile.load("amp")
    ecu = start(*udp_args(udp_port), "--grade", "0")
    ccm = start("ccm", *udp_args(udp_port), "--set-speed", "90")
    try:
        frames = collect(udp_bus, 10.0, start_id=0x18FEF125)
    finally:
        ecu_status, ecu_err = stop(ecu)
        ccm_status, _ = stop(ccm)
    speeds = [float(profile.speed.decode(m.data)) for m in frames  # type: ignore[arg-type]
              if m.arbitration_id == 0x18FEF125]
    apps = [float(profile.app.decode(m.data)) for m in frames  # type: ignore[arg-type]
            if m.arbitration_id == 0x18F00326]
    assert (ecu_status, ccm_status) == (0, 0), ecu_err
    assert 98 <= len(speeds) <= 102, "10 Hz over 10 s"
    assert len(apps) >= 90
    assert speeds[0] == pytest.approx(80.0, abs=0.5)
    # Real runs end at 89.3 .. 89.5 km/h (80 -> 90 km/h settles within 0.5 km/h after about 11 s).
    assert speeds[-1] == pytest.approx(90.0, abs=1.5), f"80 -> 90 km/h nearly done after 10 s: {speeds[-1]}"
    assert max(speeds) < 91.0
    assert max(apps) > 40


def test_sigterm_ends_a_run_with_status_0_and_a_summary(udp_port: int) -> None:
    ecu = start(*udp_args(udp_port))
    time.sleep(2.5)
    status, err = stop(ecu)
    assert status == 0
    assert "speed" in err and "stopped after" in err


def test_duration_ends_a_run_by_itself(udp_port: int) -> None:
    ccm = start("ccm", *udp_args(udp_port), "--duration", "1.5")
    _, err = ccm.communicate(timeout=20)
    assert ccm.returncode == 0, err
    assert "cruise off (no speed)" in err


def status_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if "| APP " in line]


def test_a_running_ecu_honours_app_timeout(udp_bus: can.BusABC, udp_port: int) -> None:
    """Two ECUs hear the same APP frames stop: 0.3 s later one coasts, the one with 5 s does not.

    The status line is logged once a second, so 2 s after the last APP frame the last line of each
    ECU is at least 1 s after it: past a timeout of 0.3 s, well within one of 5 s.
    """
    profile = Profile.load("amp")
    speed_id, app = 0x18FEF125, profile.app
    short = start(*udp_args(udp_port), "--grade", "0", "--initial-speed", "70", "--app-timeout", "0.3")
    long = start(*udp_args(udp_port), "--grade", "0", "--initial-speed", "80", "--app-timeout", "5")
    try:
        heard: set[int] = set()
        end = time.monotonic() + 15.0
        while heard != {70, 80} and time.monotonic() < end:  # both are up and sending
            msg = udp_bus.recv(0.5)
            if msg is not None and msg.arbitration_id == speed_id:
                heard.add(round(float(profile.speed.decode(msg.data))))  # type: ignore[arg-type]
        assert heard == {70, 80}, f"speeds heard at start: {heard}"
        for _ in range(15):  # 1.5 s of APP 40 % at 10 Hz, so each ECU logs it at least once
            udp_bus.send(can.Message(arbitration_id=app.frame_id, data=app.encode(40.0)))
            time.sleep(0.1)
        time.sleep(2.0)
    finally:
        short_status, short_err = stop(short)
        long_status, long_err = stop(long)
    assert (short_status, long_status) == (0, 0), short_err + long_err
    short_lines, long_lines = status_lines(short_err), status_lines(long_err)
    assert any("APP  40.0 %" in line for line in short_lines), short_err
    assert "APP missing (coasting)" in short_lines[-1], short_err
    assert "APP  40.0 %" in long_lines[-1], long_err
