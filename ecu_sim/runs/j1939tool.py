"""A service tool on the bus: ask J1939 nodes who they are, read their faults, clear them.

The tool is a J1939 network member itself (:class:`ecu_sim.j1939.network.J1939Network`, without
an address claim, at a service-tool address), so it takes part in the transport protocol: it
answers a node's request to send with clear to send and acknowledges the end of the message. It
runs on the wall clock, like any tool a person types, ticking its layer every ``TOOL_PERIOD_S``
while it waits for the answers.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

import can

from ecu_sim.j1939.dm import DM1_PGN, DM2_PGN, DM11_PGN, unpack_dtcs
from ecu_sim.j1939.frames import (
    ACKNOWLEDGEMENT_PGN,
    ADDRESS_CLAIMED_PGN,
    Pdu,
    Received,
    arbitration_id,
    received,
)
from ecu_sim.j1939.ident import COMPONENT_ID_PGN, ECU_ID_PGN, SOFTWARE_ID_PGN, split_fields
from ecu_sim.j1939.ids import GLOBAL_ADDRESS, NULL_ADDRESS
from ecu_sim.j1939.name import Name
from ecu_sim.j1939.network import J1939Network, NetworkConfig
from ecu_sim.j1939.request import parse_acknowledgement, request

#: J1939's first off-board diagnostic service tool address
TOOL_ADDRESS: Final = 0xF9
TOOL_PERIOD_S: Final = 0.05
#: the identification PGNs and their names, in the order they are printed
#: the diagnostic messages the tool reads or sends, by the action's name
DIAGNOSTICS: Final = {"dm1": DM1_PGN, "dm2": DM2_PGN, "clear": DM11_PGN}
IDENTIFICATION: Final = {COMPONENT_ID_PGN: "Component ID", SOFTWARE_ID_PGN: "Software ID",
                         ECU_ID_PGN: "ECU ID"}


@dataclass(frozen=True)
class Answer:
    """What came back for a request: the payload, or the acknowledgement's control byte."""

    pgn: int
    data: bytes | None = None
    acknowledgement: int | None = None


class J1939Tool:
    """Requests on ``bus`` from ``address``; every frame it hears is kept until looked at."""

    def __init__(self, bus: can.BusABC, address: int = TOOL_ADDRESS,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self._bus = bus
        self._monotonic = monotonic
        self._heard: list[Received] = []
        name = Name(identity_number=address, function=129)  # 129: off-board service tool
        self._network = J1939Network(NetworkConfig(name, address, claim=False), TOOL_PERIOD_S,
                                     on_message=self._heard.append)
        self._address = address
        self._tick = 0

    def claims(self, wait_s: float) -> dict[int, Name]:
        """The nodes that answer a global request for Address Claimed within ``wait_s``."""
        self._heard.clear()
        self._send(request(ADDRESS_CLAIMED_PGN))
        self._listen(wait_s, lambda: False)
        return {f.source: Name.from_bytes(f.data) for f in self._heard
                if f.pgn == ADDRESS_CLAIMED_PGN and f.source != NULL_ADDRESS and len(f.data) >= 8}

    def ask(self, pgn: int, node: int, wait_s: float) -> Answer | None:
        """Request ``pgn`` from ``node``: its answer (one frame or transport), an ACK/NACK, or None."""
        self._heard.clear()
        self._send(request(pgn, node))
        found: list[Answer] = []

        def answered() -> bool:
            for frame in self._heard:
                if frame.source != node:
                    continue
                ack = parse_acknowledgement(frame) if frame.pgn == ACKNOWLEDGEMENT_PGN else None
                if ack is not None and ack[1] == pgn and ack[2] in (self._address, GLOBAL_ADDRESS):
                    found.append(Answer(pgn, acknowledgement=ack[0]))
                elif frame.pgn == pgn:
                    found.append(Answer(pgn, data=frame.data))
            return bool(found)

        self._listen(wait_s, answered)
        return found[0] if found else None

    def exchange(self, pdu: Pdu | None, wait_s: float, done: Callable[[list[Received]], bool]) -> bool:
        """Send ``pdu`` through the tool's layer (by the transport protocol when long), then listen
        until ``done`` says so with all that was heard, or ``wait_s`` passed (False); what was heard
        stays until :meth:`forget`."""
        if pdu is not None:
            self._network.send(pdu)
            self._tick_layer()  # out now, however soon ``done`` is satisfied
        self._listen(wait_s, lambda: done(self._heard))
        return done(self._heard)

    def _tick_layer(self) -> None:
        for can_id, data in self._network.tick(self._tick, set()):
            self._bus.send(can.Message(arbitration_id=can_id, data=data, is_extended_id=True))
        self._tick += 1

    def forget(self) -> None:
        self._heard.clear()

    def _send(self, pdu: Pdu) -> None:
        self._bus.send(can.Message(arbitration_id=arbitration_id(pdu, self._address), data=pdu.data,
                                   is_extended_id=True))

    def _listen(self, wait_s: float, done: Callable[[], bool]) -> None:
        end = self._monotonic() + wait_s
        next_tick = self._monotonic()
        while not done():
            now = self._monotonic()
            if now >= end:
                return
            if now >= next_tick:
                self._tick_layer()
                next_tick += TOOL_PERIOD_S
            msg = self._bus.recv(max(0.0, min(next_tick, end) - self._monotonic()))
            if msg is None or not msg.is_extended_id or msg.is_error_frame:
                continue
            frame = received(msg.arbitration_id, bytes(msg.data))
            taken = self._network.receive(msg.arbitration_id, frame.data)
            if not taken or frame.pgn == ADDRESS_CLAIMED_PGN:
                self._heard.append(frame)


def describe_dtcs(data: bytes) -> str:
    """A DM1/DM2 payload as a person reads it: the lamps, then each DTC with its count."""
    lamps = {"MIL": 6, "red stop": 4, "amber warning": 2, "protect": 0}
    lit = [name for name, shift in lamps.items() if (data[0] >> shift) & 0b11 == 0b01]
    dtcs = unpack_dtcs(data)
    text = "lamps: " + (", ".join(lit) if lit else "off")
    if not dtcs:
        return text + "; no DTC"
    return text + "; " + "; ".join(f"{dtc} ({count}x)" for dtc, count in dtcs)


def describe_identification(pgn: int, data: bytes) -> str:
    fields = split_fields(data[1:] if pgn == SOFTWARE_ID_PGN else data)
    return "*".join(fields)

