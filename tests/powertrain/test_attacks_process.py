"""The address scan from source 0x00 against the ECU process on a real (host-local) bus."""

from __future__ import annotations

import time
from collections.abc import Callable

from ecu_sim.j1939.frames import ADDRESS_CLAIMED_PGN
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
    with udp.bus() as bus:
        for destination in range(256):
            bus.send(ask(ADDRESS_CLAIMED_PGN, source=ENGINE, destination=destination))
        give_up = time.monotonic() + PATIENCE_S
        while found != {0x00, 0x03, 0x0B, 0x0F} and time.monotonic() < give_up:
            msg = bus.recv(0.5)
            if msg is not None and pgn_of(msg.arbitration_id) == ADDRESS_CLAIMED_PGN:
                found.add(source_address_of(msg.arbitration_id))
    assert found == {0x00, 0x03, 0x0B, 0x0F}
