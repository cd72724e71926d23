"""J1939-21 identifier fields and J1939-71 raw-value ranges in plain integer arithmetic.

A receiver works these out for every identifier it has not seen before, and a flood of random
identifiers (fuzzing, a babbling node) means that can be every frame, so they avoid cantools.j1939's
generic bit packing, which is much slower and raises its own error type; the tests check both
agree on every 29-bit identifier they draw.
"""

from __future__ import annotations

from typing import Final, NamedTuple

#: The largest 29-bit identifier; J1939 runs on extended frames only.
MAX_EXTENDED_ID: Final = 0x1FFFFFFF
#: PDU format values below this are PDU1: the PDU specific byte is a destination address, not part of
#: the PGN.
FIRST_PDU2_FORMAT: Final = 240
#: J1939-81's null address: the source of a Cannot Claim, never of normal traffic.
NULL_ADDRESS: Final = 254
#: The destination that addresses every node.
GLOBAL_ADDRESS: Final = 255

# J1939-71 marks the top of each parameter's raw range by the value of its most significant byte:
# 0xFB parameter-specific, 0xFC..0xFD reserved, 0xFE error indicator, 0xFF not available.
_FIRST_NON_VALID_TOP_BYTE: Final = 0xFB
_ERROR_TOP_BYTE: Final = 0xFE
_NOT_AVAILABLE_TOP_BYTE: Final = 0xFF


class RawClasses(NamedTuple):
    """Where a parameter field's raw values stop being data: each bound starts the next class.

    ``0..valid_max`` are values, ``first_error..first_not_available - 1`` say "error indicator",
    ``first_not_available`` up to all ones say "not available"; anything between ``valid_max`` and
    ``first_error`` is parameter-specific or reserved and carries no value either.
    """

    valid_max: int
    first_error: int
    first_not_available: int


def _checked(arbitration_id: int) -> int:
    if not 0 <= arbitration_id <= MAX_EXTENDED_ID:
        raise ValueError(f"expected a 29-bit identifier 0..0x1FFFFFFF, got {arbitration_id:#x}")
    return arbitration_id


def is_pdu1(pgn: int) -> bool:
    """Whether a PGN is addressed to one node (PDU1) rather than broadcast (PDU2).

    A PDU1 identifier carries a destination address where a PDU2 identifier carries the group
    extension, so the two are matched differently.
    """
    return (pgn >> 8) & 0xFF < FIRST_PDU2_FORMAT


def pgn_of(arbitration_id: int) -> int:
    """Parameter group number of a 29-bit identifier; ``ValueError`` beyond 29 bits.

    Receivers must accept a parameter group whatever its priority, sender and (for PDU1) destination,
    so those fields are dropped: the PGN is what identifies the content.
    """
    pgn = (_checked(arbitration_id) >> 8) & 0x3FFFF
    return pgn & 0x3FF00 if is_pdu1(pgn) else pgn


def source_address_of(arbitration_id: int) -> int:
    """Address of the node that sent a 29-bit identifier; ``ValueError`` beyond 29 bits."""
    return _checked(arbitration_id) & 0xFF


def priority_of(arbitration_id: int) -> int:
    """Arbitration priority (0 highest, 7 lowest) of a 29-bit identifier; ``ValueError`` beyond 29 bits."""
    return _checked(arbitration_id) >> 26


def destination_of(arbitration_id: int) -> int:
    """Destination address of a 29-bit identifier: the PDU specific byte of PDU1, global for PDU2."""
    pdu_format = (_checked(arbitration_id) >> 16) & 0xFF
    return (arbitration_id >> 8) & 0xFF if pdu_format < FIRST_PDU2_FORMAT else GLOBAL_ADDRESS


def make_id(pgn: int, source: int, destination: int = GLOBAL_ADDRESS, priority: int = 6) -> int:
    """The 29-bit identifier of ``pgn`` from ``source``; a PDU1 PGN carries ``destination``.

    A PDU2 PGN is broadcast by definition, so ``destination`` is ignored for it.
    """
    if not 0 <= priority <= 7 or not 0 <= source <= 0xFF or not 0 <= destination <= 0xFF:
        raise ValueError(f"priority 0..7 and addresses 0..255, got {priority}, {source}, {destination}")
    if is_pdu1(pgn):
        pgn = (pgn & 0x3FF00) | destination
    return (priority << 26) | ((pgn & 0x3FFFF) << 8) | source


def from_source(arbitration_id: int, source: int) -> int:
    """The same parameter group and priority sent from ``source``: a node's frame under its own address."""
    return (arbitration_id & ~0xFF) | source


def raw_classes(length: int) -> RawClasses:
    """J1939-71 value, error and not-available ranges of an unsigned field of ``length`` bits.

    J1939-71 defines the ranges for 1-, 2- and 4-byte parameters by the top byte and for 2- and 4-bit
    discrete fields as "all ones = not available, all ones minus one = error". Fields of 8 bits or more
    use the top-byte rule (exact for whole bytes), shorter ones the discrete rule. A single bit has no
    room for either and is all valid.
    """
    if length < 1:
        raise ValueError(f"a parameter field has at least 1 bit, got {length}")
    all_ones = (1 << length) - 1
    if length >= 8:
        shift = length - 8
        return RawClasses(
            (_FIRST_NON_VALID_TOP_BYTE << shift) - 1,
            _ERROR_TOP_BYTE << shift,
            _NOT_AVAILABLE_TOP_BYTE << shift,
        )
    if length >= 2:
        return RawClasses(all_ones - 2, all_ones - 1, all_ones)
    return RawClasses(all_ones, all_ones + 1, all_ones + 1)


def format_id(arbitration_id: int, is_extended_id: bool) -> str:
    """``0x18FEF125`` for a 29-bit identifier, ``0x123`` for an 11-bit one.

    One spelling everywhere (logs, errors, reprs) so an identifier can be searched for in all of them
    and compared with a DBC or a candump at a glance.
    """
    return f"0x{arbitration_id:08X}" if is_extended_id else f"0x{arbitration_id:03X}"
