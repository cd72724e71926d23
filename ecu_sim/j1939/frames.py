"""What the layer takes in and gives out: parameter groups with addresses, not CAN library frames.

The layer stays free of any CAN library so it runs the same under a simulation, a replay and a
real bus; the node turns a :class:`Pdu` into a frame with :func:`arbitration_id` at its tick.
"""

from __future__ import annotations

from typing import Final, NamedTuple

from ecu_sim.j1939.ids import (
    GLOBAL_ADDRESS,
    destination_of,
    make_id,
    pgn_of,
    priority_of,
    source_address_of,
)

REQUEST_PGN: Final = 59904
ACKNOWLEDGEMENT_PGN: Final = 59392
ADDRESS_CLAIMED_PGN: Final = 60928
TP_CM_PGN: Final = 60416
TP_DT_PGN: Final = 60160
#: the largest payload of one classic CAN frame: anything longer needs the transport protocol
SINGLE_FRAME: Final = 8


class Pdu(NamedTuple):
    """A parameter group to send; ``source`` None means the node's claimed address."""

    pgn: int
    data: bytes
    destination: int = GLOBAL_ADDRESS
    priority: int = 6
    source: int | None = None


class Received(NamedTuple):
    """A parameter group as it arrived: who sent it to whom."""

    pgn: int
    source: int
    destination: int
    priority: int
    data: bytes


def received(arbitration_id: int, data: bytes | bytearray) -> Received:
    """The addresses and PGN of a 29-bit frame."""
    return Received(pgn_of(arbitration_id), source_address_of(arbitration_id),
                    destination_of(arbitration_id), priority_of(arbitration_id), bytes(data))


def arbitration_id(pdu: Pdu, own_address: int) -> int:
    """The identifier ``pdu`` goes out with from a node at ``own_address``."""
    source = own_address if pdu.source is None else pdu.source
    return make_id(pdu.pgn, source, pdu.destination, pdu.priority)
