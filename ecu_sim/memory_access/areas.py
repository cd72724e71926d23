"""Where a DM14 pointer lands in a node's calibration area, and what each user level may do there.

A direct pointer is an address: the 24-bit pointer with the extension byte above it, so the
area lies where a UDS download puts it. A directed-spatial pointer counts from the first
calibration parameter (the header, with the node kind and the calibration ID, lies before it):
ecu-sim has that one space, and the extension byte of a spatial pointer names nothing more (our
choice, as the whole map is: J1939-73 leaves the map to the manufacturer).

The user levels (B7..B8 of a session's first DM14) are ours too, a small table so that a level
can read without writing, and write the parameters without touching the header that names the
calibration; docs/diagnostics.md has the table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from ecu_sim.calibration.layout import HEADER_SIZE
from ecu_sim.memory_access.messages import DATA_MAX, Command, Dm14, Error

#: level -> (the first offset it may write, whether it may erase and boot load); every level of
#: the table reads the whole area
_LEVELS: Final = {1: (None, False), 2: (None, False), 3: (None, False),
                  4: (HEADER_SIZE, False), 5: (HEADER_SIZE, False), 6: (HEADER_SIZE, False),
                  7: (0, True)}
#: commands that change the memory, refused while the engine runs or the truck moves
CHANGES: Final = frozenset({Command.WRITE, Command.ERASE, Command.BOOT_LOAD})
#: commands that open a session with a seed and a key
GUARDED: Final = CHANGES | {Command.READ}


@dataclass(frozen=True, slots=True)
class MemorySpan:
    """A request resolved: ``offset`` bytes into the area, ``length`` bytes long."""

    offset: int
    length: int


def resolve(request: Dm14, start: int, size: int) -> MemorySpan | Error:
    """The part of the area ``[start, start + size)`` a read, write, erase or boot load names."""
    if not 0 < request.length <= DATA_MAX:
        return Error.INVALID_LENGTH  # no DM16 could carry it
    if request.spatial:
        offset, first = HEADER_SIZE + request.pointer, HEADER_SIZE
    else:
        offset, first = (request.extension << 24 | request.pointer) - start, 0
    if request.command in (Command.ERASE, Command.BOOT_LOAD):
        whole = not request.spatial and offset == 0 and request.length == size
        return MemorySpan(0, size) if whole else Error.BOOT_LOAD_OUT_OF_RANGE
    if not first <= offset < size:
        return Error.GENERAL_ADDRESSING
    if offset + request.length > size:
        return Error.MEMORY_OVERFLOW
    return MemorySpan(offset, request.length)


def permitted(level: int, command: int, span: MemorySpan) -> bool:
    """Whether ``level`` may do ``command`` on ``span``."""
    rights = _LEVELS.get(level)
    if rights is None:
        return False
    first_writable, erases = rights
    if command == Command.READ:
        return True
    if command in (Command.ERASE, Command.BOOT_LOAD):
        return erases
    return first_writable is not None and span.offset >= first_writable


def known_level(level: int) -> bool:
    return level in _LEVELS
