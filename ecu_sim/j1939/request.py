"""Requests (PGN 59904) and their acknowledgements (PGN 59392), J1939-21.

Who answers what: a request addressed to this node is answered to the requester, and one for a
PGN the node does not have gets a NACK so the requester need not wait out its timeout; a global
request is answered for everyone, and one for an unknown PGN gets no answer at all (a NACK from
every node would flood the bus). The acknowledgement goes to the global address and names the
requester in its address field, as J1939-21 asks.
"""

from __future__ import annotations

from typing import Final

from ecu_sim.j1939 import layouts
from ecu_sim.j1939.frames import ACKNOWLEDGEMENT_PGN, REQUEST_PGN, SINGLE_FRAME, Pdu, Received
from ecu_sim.j1939.ids import GLOBAL_ADDRESS

ACK: Final = 0
NACK: Final = 1
#: the acknowledgement's group function when it answers no group function
_NO_GROUP_FUNCTION: Final = 0xFF


def request(pgn: int, destination: int = GLOBAL_ADDRESS) -> Pdu:
    """A request for ``pgn`` to ``destination`` (global by default)."""
    return Pdu(REQUEST_PGN, layouts.encode(layouts.REQUEST, {"RequestedPGN": pgn}), destination, 6)


def requested_pgn(frame: Received) -> int | None:
    """The PGN a request asks for; None for a request too short to name one."""
    if len(frame.data) < layouts.length(layouts.REQUEST):
        return None
    return layouts.decode(layouts.REQUEST, frame.data)["RequestedPGN"]


def acknowledgement(control: int, pgn: int, requester: int) -> Pdu:
    """ACK or NACK (``control``) of ``pgn`` for ``requester``."""
    data = layouts.encode(layouts.ACKNOWLEDGEMENT, {
        "ControlByte": control, "GroupFunction": _NO_GROUP_FUNCTION,
        "AddressAcknowledged": requester, "AcknowledgedPGN": pgn})
    return Pdu(ACKNOWLEDGEMENT_PGN, data, GLOBAL_ADDRESS, 6)


def parse_acknowledgement(frame: Received) -> tuple[int, int, int] | None:
    """(control, PGN, address acknowledged) of an acknowledgement; None when too short."""
    if len(frame.data) < layouts.length(layouts.ACKNOWLEDGEMENT):
        return None
    values = layouts.decode(layouts.ACKNOWLEDGEMENT, frame.data)
    return values["ControlByte"], values["AcknowledgedPGN"], values["AddressAcknowledged"]


def single_frame(pgn: int, data: bytes, destination: int) -> Pdu:
    """A payload of at most eight bytes in one frame, padded with 0xFF to a full frame."""
    if len(data) > SINGLE_FRAME:
        raise ValueError(f"one frame holds {SINGLE_FRAME} bytes, got {len(data)}")
    return Pdu(pgn, data.ljust(SINGLE_FRAME, b"\xff"), destination, 6)
