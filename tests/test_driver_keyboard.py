"""The keyboard pedal of a real ``ecu-sim driver`` process in a real terminal (a pseudo-terminal).

The test types into the terminal what a keyboard sends (the arrow keys' escape sequences) and
listens on the process's udp_multicast bus: the APP frames follow the keys.
"""

from __future__ import annotations

import os
import pty
import subprocess
import time
from collections.abc import Iterator

import can
import pytest

from tests.conftest import HANG_S, Udp, clean_env, ecu_sim_command

pytestmark = pytest.mark.slow

#: the amp profile's APP frame from the driver's default source address 0x31
DRIVER_APP_ID = 0x18F00331


@pytest.fixture
def terminal() -> Iterator[tuple[int, int]]:
    master, slave = pty.openpty()
    yield master, slave
    for fd in (master, slave):
        os.close(fd)


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
