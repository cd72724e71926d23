"""The services that read and steer a running node: DTCs, data identifiers, communication, tester present.

DTCs are the node's J1939 DTCs (one store with DM1 and DM2) in SAE J1939-73's format, which
ISO 14229-1 names by its DTC format identifier 0x02: three bytes, the SPN's low sixteen bits
little-endian and then its three high bits above the FMI (the first three bytes of DM1's DTC).
An active DTC's status is test failed, failed this operation cycle and confirmed; a previously
active one's is confirmed.

Identification DIDs are read-only here: the node lends their values. Calibration parameters are
read and written through the node's parameter lookup, in extended or programming session after
security access; a value of the wrong length is refused with 0x13, one out of range with 0x31.
CommunicationControl holds back (or lets go) the node's application messages when it names the
normal communication; the node keeps reading what it receives whatever the request says.
"""

from __future__ import annotations

from typing import Final, Protocol

from ecu_sim.uds.codes import DID_ACTIVE_SESSION, DTC_FORMAT_J1939, POSITIVE, DiagnosticSession, Nrc, Service
from ecu_sim.uds.node import ServedNode

#: DTC status bits: test failed, test failed this operation cycle, confirmed
_ACTIVE: Final = 0x01 | 0x02 | 0x08
_PREVIOUSLY_ACTIVE: Final = 0x08
AVAILABILITY: Final = _ACTIVE
#: ClearDiagnosticInformation's group of all DTCs
_ALL_GROUPS: Final = b"\xff\xff\xff"
#: CommunicationControl's communication type bit of the normal (application) messages
_NORMAL: Final = 0x01


class Served(Protocol):
    """What these services read and change of the server (its node, session and switches)."""

    node: ServedNode
    session: DiagnosticSession
    communication_off: bool
    dtc_recording_off: bool


def dtc_bytes(spn: int, fmi: int) -> bytes:
    return bytes((spn & 0xFF, (spn >> 8) & 0xFF, ((spn >> 16) << 5) | fmi))


def clear(server: Served, request: bytes, tester: int, tick: int) -> bytes | Nrc:
    if len(request) != 4:
        return Nrc.INCORRECT_MESSAGE_LENGTH_OR_INVALID_FORMAT
    if request[1:4] != _ALL_GROUPS:
        return Nrc.REQUEST_OUT_OF_RANGE
    server.node.dtcs.clear_all()
    return bytes((Service.CLEAR_DIAGNOSTIC_INFORMATION + POSITIVE,))


def read_dtcs(server: Served, request: bytes, tester: int, tick: int) -> bytes | Nrc:
    if len(request) != 3:
        return Nrc.INCORRECT_MESSAGE_LENGTH_OR_INVALID_FORMAT
    sub, mask = request[1] & 0x7F, request[2]
    store = server.node.dtcs
    records = [(dtc, status) for dtcs, status in ((store.active(), _ACTIVE),
                                                   (store.previously_active(), _PREVIOUSLY_ACTIVE))
               for dtc, _ in dtcs if status & mask]
    head = bytes((Service.READ_DTC_INFORMATION + POSITIVE, sub, AVAILABILITY))
    if sub == 0x01:
        return head + bytes((DTC_FORMAT_J1939,)) + len(records).to_bytes(2, "big")
    return head + b"".join(dtc_bytes(spn, fmi) + bytes((status,)) for (spn, fmi), status in records)


def read_data(server: Served, request: bytes, tester: int, tick: int) -> bytes | Nrc:
    if len(request) % 2 != 1:
        return Nrc.INCORRECT_MESSAGE_LENGTH_OR_INVALID_FORMAT
    parts = [bytes((Service.READ_DATA_BY_IDENTIFIER + POSITIVE,))]
    for at in range(1, len(request), 2):
        did = int.from_bytes(request[at:at + 2], "big")
        value = _value(server, did)
        if value is not None:  # ISO 14229-1: the unknown ones are left out while one is known
            parts.append(request[at:at + 2] + value)
    if len(parts) == 1:
        return Nrc.REQUEST_OUT_OF_RANGE
    return b"".join(parts)


def _value(server: Served, did: int) -> bytes | None:
    if did == DID_ACTIVE_SESSION:
        return bytes((server.session,))
    known = server.node.identification.get(did)
    if known is not None:
        return known
    parameters = server.node.parameters
    return None if parameters is None else parameters.read(did)


def write_data(server: Served, request: bytes, tester: int, tick: int) -> bytes | Nrc:
    did = int.from_bytes(request[1:3], "big")
    parameters = server.node.parameters
    current = None if parameters is None else parameters.read(did)
    if parameters is None or current is None:
        return Nrc.REQUEST_OUT_OF_RANGE  # no such parameter; identification is read-only
    data = request[3:]
    if len(data) != len(current):
        return Nrc.INCORRECT_MESSAGE_LENGTH_OR_INVALID_FORMAT
    if parameters.write(did, bytes(data)) is not None:
        return Nrc.REQUEST_OUT_OF_RANGE
    return bytes((Service.WRITE_DATA_BY_IDENTIFIER + POSITIVE,)) + request[1:3]


def communication(server: Served, request: bytes, tester: int, tick: int) -> bytes | Nrc:
    if len(request) != 3:
        return Nrc.INCORRECT_MESSAGE_LENGTH_OR_INVALID_FORMAT
    sub, kind = request[1] & 0x7F, request[2] & 0x03
    if kind == 0:
        return Nrc.REQUEST_OUT_OF_RANGE
    if kind & _NORMAL:
        off = sub in (0x01, 0x03)  # enable reception, disable transmission; disable both
        if off != server.communication_off:
            server.communication_off = off
            server.node.communicate(not off)
    return bytes((Service.COMMUNICATION_CONTROL + POSITIVE, sub))


def tester_present(server: Served, request: bytes, tester: int, tick: int) -> bytes | Nrc:
    if len(request) != 2:
        return Nrc.INCORRECT_MESSAGE_LENGTH_OR_INVALID_FORMAT
    return bytes((Service.TESTER_PRESENT + POSITIVE, request[1] & 0x7F))


def dtc_setting(server: Served, request: bytes, tester: int, tick: int) -> bytes | Nrc:
    off = request[1] & 0x7F == 0x02
    if off != server.dtc_recording_off:
        server.dtc_recording_off = off
        server.node.set_dtc_recording(not off)
    return bytes((Service.CONTROL_DTC_SETTING + POSITIVE, request[1] & 0x7F))
