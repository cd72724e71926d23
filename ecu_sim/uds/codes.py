"""The numbers of UDS (ISO 14229-1) the server speaks: services, sessions, negative response codes.

A table of our own rather than udsoncan's: udsoncan is a client library, and importing it costs
a node at start-up what it pulls in (its logging configuration, socket server, ``inspect``) for
the few dozen numbers below; the board installs only what the ECU needs. The tests hold this
table against udsoncan's service identifiers and ``Response.Code``, so the two cannot drift.
"""

from __future__ import annotations

import enum
from typing import Final

#: a positive answer's first byte is the request's plus this; a negative answer starts with 0x7F
POSITIVE: Final = 0x40
NEGATIVE: Final = 0x7F
#: the bit of a sub-function byte that asks the server not to send a positive answer
SUPPRESS: Final = 0x80


class Service(enum.IntEnum):
    DIAGNOSTIC_SESSION_CONTROL = 0x10
    ECU_RESET = 0x11
    CLEAR_DIAGNOSTIC_INFORMATION = 0x14
    READ_DTC_INFORMATION = 0x19
    READ_DATA_BY_IDENTIFIER = 0x22
    SECURITY_ACCESS = 0x27
    COMMUNICATION_CONTROL = 0x28
    WRITE_DATA_BY_IDENTIFIER = 0x2E
    ROUTINE_CONTROL = 0x31
    REQUEST_DOWNLOAD = 0x34
    TRANSFER_DATA = 0x36
    REQUEST_TRANSFER_EXIT = 0x37
    TESTER_PRESENT = 0x3E
    CONTROL_DTC_SETTING = 0x85


class DiagnosticSession(enum.IntEnum):
    DEFAULT = 0x01
    PROGRAMMING = 0x02
    EXTENDED = 0x03


class Nrc(enum.IntEnum):
    """Negative response codes (the names udsoncan's ``Response.Code`` gives them)."""

    GENERAL_REJECT = 0x10
    SERVICE_NOT_SUPPORTED = 0x11
    SUB_FUNCTION_NOT_SUPPORTED = 0x12
    INCORRECT_MESSAGE_LENGTH_OR_INVALID_FORMAT = 0x13
    RESPONSE_TOO_LONG = 0x14
    BUSY_REPEAT_REQUEST = 0x21
    CONDITIONS_NOT_CORRECT = 0x22
    REQUEST_SEQUENCE_ERROR = 0x24
    REQUEST_OUT_OF_RANGE = 0x31
    SECURITY_ACCESS_DENIED = 0x33
    INVALID_KEY = 0x35
    EXCEED_NUMBER_OF_ATTEMPTS = 0x36
    REQUIRED_TIME_DELAY_NOT_EXPIRED = 0x37
    UPLOAD_DOWNLOAD_NOT_ACCEPTED = 0x70
    TRANSFER_DATA_SUSPENDED = 0x71
    GENERAL_PROGRAMMING_FAILURE = 0x72
    WRONG_BLOCK_SEQUENCE_COUNTER = 0x73
    REQUEST_CORRECTLY_RECEIVED_RESPONSE_PENDING = 0x78
    SUB_FUNCTION_NOT_SUPPORTED_IN_ACTIVE_SESSION = 0x7E
    SERVICE_NOT_SUPPORTED_IN_ACTIVE_SESSION = 0x7F
    VEHICLE_SPEED_TOO_HIGH = 0x88


#: codes a server leaves unsaid to a functional request (ISO 14229-1): the tester asked everyone,
#: and only the nodes that have the service, function or identifier answer
FUNCTIONAL_SILENT: Final = frozenset({
    Nrc.SERVICE_NOT_SUPPORTED, Nrc.SUB_FUNCTION_NOT_SUPPORTED, Nrc.REQUEST_OUT_OF_RANGE,
    Nrc.SUB_FUNCTION_NOT_SUPPORTED_IN_ACTIVE_SESSION, Nrc.SERVICE_NOT_SUPPORTED_IN_ACTIVE_SESSION})

#: identification data identifiers (ISO 14229-1 Annex C), and the CVN's, which is ours
DID_ACTIVE_SESSION: Final = 0xF186
DID_SPARE_PART_NUMBER: Final = 0xF187
DID_SERIAL_NUMBER: Final = 0xF18C
DID_VIN: Final = 0xF190
DID_SOFTWARE_VERSION: Final = 0xF195
#: application data identification, which carries the calibration ID (our choice)
DID_CALIBRATION_ID: Final = 0xF182
#: in the manufacturer-specific identification range: the CVN, 4 bytes big-endian (our choice)
DID_CVN: Final = 0xF1A0

#: routines of RoutineControl
ROUTINE_ERASE_MEMORY: Final = 0xFF00
ROUTINE_CHECK_DEPENDENCIES: Final = 0xFF01
#: the DTC format identifier of ReadDTCInformation's answers: SAE J1939-73's SPN/FMI
DTC_FORMAT_J1939: Final = 0x02


def negative(service: int, code: Nrc) -> bytes:
    return bytes((NEGATIVE, service, code))
