"""The address scan from source 0x00 against the ECU process on a real (host-local) bus."""

from __future__ import annotations

import time
from collections.abc import Callable

import can

from ecu_sim.j1939.frames import ADDRESS_CLAIMED_PGN, REQUEST_PGN
from ecu_sim.j1939.ids import pgn_of, source_address_of
from tests.conftest import Node, Udp
from tests.helpers.attacker import ENGINE, ask

#: how long the test waits for the four claims before it gives up (a wait, not a measured time)
PATIENCE_S = 20.0


def test_a_scan_from_sa_0_of_every_destination_finds_all_four_nodes_of_the_process(
        start: Callable[..., Node], udp: Udp) -> None:
    ecu = start(*udp.args(), "--profile", "j1939", "--vehicle", "class6", "--network", "powertrain",
                "--grade", "0")
    ecu.wait_for(r"J1939 SA 0x00 claimed")
    found: set[int] = set()

    def hear(msg: can.Message | None) -> bool:
        """Note a claim; True for any frame the process sent (not a request: those are the scan's)."""
        if msg is None or pgn_of(msg.arbitration_id) == REQUEST_PGN:
            return False
        if pgn_of(msg.arbitration_id) == ADDRESS_CLAIMED_PGN:
            found.add(source_address_of(msg.arbitration_id))
        return True

    with udp.bus() as bus:
        for destination in range(256):
            bus.send(ask(ADDRESS_CLAIMED_PGN, source=ENGINE, destination=destination))
            # paced by the process's own frames (a tick's sends), so its socket never holds a
            # flood of requests: this tests the address rule, not a receive buffer
            give_up = time.monotonic() + PATIENCE_S
            while not hear(bus.recv(0.5)) and time.monotonic() < give_up:
                pass
        give_up = time.monotonic() + PATIENCE_S
        while found != {0x00, 0x03, 0x0B, 0x0F} and time.monotonic() < give_up:
            hear(bus.recv(0.5))
    assert found == {0x00, 0x03, 0x0B, 0x0F}
