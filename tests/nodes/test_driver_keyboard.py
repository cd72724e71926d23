"""The keyboard pedal of a real ``ecu-sim driver`` process in a real terminal (a pseudo-terminal).

The test types into the terminal what a keyboard sends (the arrow keys' escape sequences) and
listens on the process's udp_multicast bus: the APP frames follow the keys.
"""

from __future__ import annotations

import os
import pty
import re
import subprocess
import time
from collections.abc import Callable, Iterator

import can
import pytest

from tests.conftest import HANG_S, Node, Udp, clean_env, ecu_sim_command

pytestmark = pytest.mark.slow

#: the amp profile's APP frame from the driver's default source address 0x31
DRIVER_APP_ID = 0x18F00331


@pytest.fixture
def terminal() -> Iterator[tuple[int, int]]:
    master, slave = pty.openpty()
    yield master, slave
    for fd in (master, slave):
        os.close(fd)


def status_after(node: Node, pattern: str) -> None:
    """Wait for a status line matching ``pattern`` among those the process logs from now on."""
    seen = len(node.log.splitlines())
    give_up = time.monotonic() + HANG_S
    while time.monotonic() < give_up:
        if any(re.search(pattern, line) for line in node.log.splitlines()[seen:]):
            return
        time.sleep(0.1)
    raise AssertionError(f"no status line /{pattern}/ after the key:\n{node.log}")


def next_app(bus: can.BusABC, pct: int) -> None:
    """Wait for an APP frame of the driver showing ``pct`` (byte 6, offset -125 %, decoded by hand)."""
    give_up = time.monotonic() + HANG_S
    while time.monotonic() < give_up:
        msg = bus.recv(1.0)
        if msg is not None and msg.arbitration_id == DRIVER_APP_ID and msg.data[6] - 125 == pct:
            return
    raise AssertionError(f"no APP frame of {pct} % from the driver")


def test_arrow_keys_in_the_terminal_step_the_pedal_on_the_bus(
        udp: Udp, udp_bus: can.BusABC, terminal: tuple[int, int]) -> None:
    master, slave = terminal
    process = subprocess.Popen(ecu_sim_command("driver", *udp.args(), "--step", "10"), stdin=slave,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=clean_env())
    try:
        next_app(udp_bus, 0)
        os.write(master, b"\x1b[A\x1b[A\x1b[A")
        next_app(udp_bus, 30)
        os.write(master, b"\x1b[B")
        next_app(udp_bus, 20)
        os.write(master, b"m")
        next_app(udp_bus, 100)
    finally:
        process.terminate()
        _, err = process.communicate(timeout=HANG_S)
    assert process.returncode == 0, err.decode()
    assert "keyboard pedal: up/down" in err.decode()
    assert re.search(r"stopped after \d+ ticks: .* rx \d+ tx \d+ invalid 0", err.decode())


def test_three_processes_cancel_resume_and_override_from_the_keyboard(
        udp: Udp, start: Callable[..., Node], terminal: tuple[int, int]) -> None:
    """ECU, CCM and a keyboard driver as separate processes (j1939: the cruise commands in CCVS2)."""
    master, slave = terminal
    start("--profile", "j1939", "--app-source", "0x11", "--grade", "0", "--initial-speed", "90",
          *udp.args())
    ccm = start("ccm", "--profile", "j1939", "--set-speed", "90", *udp.args())
    driver = subprocess.Popen(ecu_sim_command("driver", "--profile", "j1939", *udp.args()), stdin=slave,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=clean_env())
    try:
        ccm.wait_for(r"\| cruise on \|")
        for key, status in ((b"c", r"\| cruise off \|"), (b"r", r"\| cruise on \|"),
                            (b"m", r"APP 100\.0 % \| cruise override \|")):
            os.write(master, key)
            status_after(ccm, status)
    finally:
        driver.terminate()
        driver.wait(HANG_S)
