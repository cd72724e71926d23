"""Shared fixtures: starting the real command line as processes, and listening on their bus."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import can
import pytest

REPO = Path(__file__).resolve().parent.parent
GROUP = "239.74.163.2"


def ecu_sim_command(*args: str) -> list[str]:
    """The real ``ecu-sim`` command line, run by this interpreter so it finds the package."""
    return [sys.executable, "-m", "ecu_sim", *args]


def run_cli(*args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(ecu_sim_command(*args), capture_output=True, text=True, timeout=timeout,
                          env=clean_env(), check=False)


def clean_env() -> dict[str, str]:
    """The environment without python-can or ecu-sim configuration leaking in from the caller."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("CAN_", "ECU_SIM_"))}


@pytest.fixture
def udp_port() -> int:
    """A udp_multicast port private to one test, so concurrent runs never hear each other."""
    return random.randint(20000, 60000)


@pytest.fixture
def udp_bus(udp_port: int) -> Iterator[can.BusABC]:
    """The test's own ear on the processes' default bus (udp_multicast, IPv4 group)."""
    bus = can.Bus(interface="udp_multicast", channel=GROUP, port=udp_port)
    try:
        yield bus
    finally:
        bus.shutdown()


def udp_args(port: int) -> list[str]:
    """Bus options for a process under test: the default bus, moved to the test's private port."""
    return ["--bus-kwargs", f"port={port}"]


#: a plain (non-J1939) DBC: 11-bit identifiers carry no source address; speed 0..120 km/h, 20 ms
PLAIN_DBC = """VERSION ""
NS_ :
BS_:
BU_: A B
BO_ 291 VEH: 8 A
 SG_ Speed : 0|16@1+ (0.01,0) [0|120] "km/h" B
BO_ 292 PEDAL: 8 B
 SG_ Pedal : 0|8@1+ (0.5,0) [0|100] "%" A
BA_DEF_ BO_ "GenMsgCycleTime" INT 0 65535;
BA_DEF_DEF_ "GenMsgCycleTime" 0;
BA_ "GenMsgCycleTime" BO_ 291 20;
"""
