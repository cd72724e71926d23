"""A python-can program at 0x2A, independent of ecu-sim, asks a real ``ecu-sim --network powertrain``
for neutral with TC1 over a real bus; it judges from the frames it hears, never from how long
anything took (the clock only guards against a hang)."""

from __future__ import annotations

import time
from collections.abc import Callable

import can
import pytest

from ecu_sim.vehicle.class6 import Class6Model, Class6Params
from tests.conftest import HANG_S, Node, Udp

TC1_NEUTRAL = can.Message(arbitration_id=0x0C01032A, data=bytes.fromhex("FFFF7DFFFFFFFFFF"),
                          is_extended_id=True)
ETC2_FROM_TRANSMISSION = 0xF00503  # PGN 61445 from 0x03
LFE1_FROM_ENGINE = 0xFEF200  # PGN 65266 from 0x00
IDLE_FUEL_LPH = Class6Model(Class6Params()).fuel.rate_lph(Class6Params().idle_rpm, 0.0)


def until(bus: can.BusABC, seen: Callable[[can.Message], bool]) -> None:
    """Read the bus until a frame satisfies ``seen``."""
    give_up = time.monotonic() + HANG_S
    while time.monotonic() < give_up:
        msg = bus.recv(1.0)
        if msg is not None and seen(msg):
            return
    raise AssertionError(f"not heard within {HANG_S:g} s (hung?)")


def current_gear(msg: can.Message) -> int | None:
    if msg.arbitration_id & 0xFFFFFF != ETC2_FROM_TRANSMISSION:
        return None
    return int(msg.data[3]) - 125


def fuel_rate(msg: can.Message) -> float | None:
    if msg.arbitration_id & 0xFFFFFF != LFE1_FROM_ENGINE:
        return None
    return int.from_bytes(bytes(msg.data[0:2]), "little") * 0.05


def test_tc1_from_a_python_can_controller_puts_the_truck_in_neutral_and_its_silence_gives_a_gear_back(
        start: Callable[..., Node], udp: Udp, udp_bus: can.BusABC) -> None:
    truck = start(*udp.args(), "--vehicle", "class6", "--profile", "j1939", "--network", "powertrain",
                  "--grade", "0", "--initial-speed", "80")
    truck.wait_for(r"speed +\d")
    task = udp_bus.send_periodic(TC1_NEUTRAL, 0.05)
    until(udp_bus, lambda msg: current_gear(msg) == 0)
    until(udp_bus, lambda msg: (rate := fuel_rate(msg)) is not None and rate == pytest.approx(IDLE_FUEL_LPH,
                                                                                            abs=0.05))
    task.stop()
    until(udp_bus, lambda msg: (gear := current_gear(msg)) is not None and gear > 0)
    assert truck.stop() == 0, truck.log
    assert "TC1 to the transmission" in truck.log  # the timeout's DTC, logged once
