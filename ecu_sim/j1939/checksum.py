"""J1939-71's message counter and checksum of the command messages TSC1 and XBR.

A command that moves the truck must not be acted on when it was corrupted or is a frozen copy of
an old one, so J1939-71 gives TSC1 and XBR a 4-bit counter, +1 per message, and a 4-bit checksum
over the payload, the counter and the identifier. Both messages sum the same things:

    S = bytes 1..7 + (counter & 0x0F) + the four bytes of the 29-bit identifier

and differ in how S folds into the checksum (TSC1: ``(((S >> 6) & 3) + (S >> 3) + S) & 7``;
XBR: ``((S >> 4) + S) & 0x0F``). Where the counter and checksum lie is the DBC's business, so the
fields are passed in as :class:`BitField` (a DBC signal's little-endian start bit and length). The
counter and checksum share the last byte with nothing else, so "bytes 1..7 plus the counter" is the
sum of every payload byte with the checksum field cleared: one rule that needs no byte index.

TSC1 allows "not available" (0xF) in either field and a receiver accepts such a frame unchecked,
as the standard asks; XBR's counter and checksum are mandatory and use all sixteen values.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, NamedTuple

#: the raw value of a 4-bit field that says "not available"
NOT_AVAILABLE_4BIT: Final = 0xF
#: how many values the message counters run through: TSC1 0..7, XBR 0..15 (J1939-71)
TSC1_COUNTER_MODULUS: Final = 8
XBR_COUNTER_MODULUS: Final = 16


class BitField(NamedTuple):
    """A little-endian (Intel) field of a payload: the DBC signal's start bit and length."""

    start: int
    length: int

    @property
    def mask(self) -> int:
        return ((1 << self.length) - 1) << self.start

    def read(self, payload: bytes) -> int:
        return (int.from_bytes(payload, "little") >> self.start) & ((1 << self.length) - 1)

    def write(self, payload: bytes, value: int) -> bytes:
        """``payload`` with this field set to ``value`` (masked to its length)."""
        bits = int.from_bytes(payload, "little") & ~self.mask
        bits |= (value & ((1 << self.length) - 1)) << self.start
        return bits.to_bytes(len(payload), "little")


def checksum_sum(arbitration_id: int, payload: bytes, checksum: BitField) -> int:
    """J1939-71's S: every payload byte with the checksum field cleared, plus the identifier's bytes."""
    cleared = checksum.write(payload, 0)
    return sum(cleared) + sum((arbitration_id & 0x1FFFFFFF).to_bytes(4, "little"))


def tsc1_fold(s: int) -> int:
    """TSC1's checksum of the sum S (0..7)."""
    return (((s >> 6) & 3) + (s >> 3) + s) & 7


def xbr_fold(s: int) -> int:
    """XBR's checksum of the sum S (0..15)."""
    return ((s >> 4) + s) & 0xF


class IntegrityVerdict(enum.Enum):
    """What the integrity fields of a received frame say."""

    OK = "counter and checksum right"
    UNCHECKED = "counter or checksum not available: accepted unchecked"
    BAD_CHECKSUM = "checksum wrong"
    BAD_COUNTER = "counter outside its range"


@dataclass(frozen=True, slots=True)
class Integrity:
    """The counter and checksum rule of one message, with its fields' positions from the DBC.

    ``modulus`` is how many counter values the sequence runs through (TSC1 0..7, XBR 0..15);
    ``not_available`` is the raw value that means "not available" in both fields when the message
    allows it (TSC1), None when the fields are mandatory (XBR).
    """

    counter: BitField
    checksum: BitField
    fold: Callable[[int], int]
    modulus: int
    not_available: int | None

    @classmethod
    def tsc1(cls, counter: BitField, checksum: BitField) -> Integrity:
        return cls(counter, checksum, tsc1_fold, TSC1_COUNTER_MODULUS, NOT_AVAILABLE_4BIT)

    @classmethod
    def xbr(cls, counter: BitField, checksum: BitField) -> Integrity:
        return cls(counter, checksum, xbr_fold, XBR_COUNTER_MODULUS, None)

    def seal(self, arbitration_id: int, payload: bytes, counter: int) -> bytes:
        """``payload`` with ``counter`` (taken modulo the sequence) and the matching checksum set."""
        data = self.counter.write(payload, counter % self.modulus)
        return self.checksum.write(data, self.fold(checksum_sum(arbitration_id, data, self.checksum)))

    def verify(self, arbitration_id: int, payload: bytes) -> IntegrityVerdict:
        counter, checksum = self.counter.read(payload), self.checksum.read(payload)
        na = self.not_available
        if na is not None and (counter == na or checksum == na):
            return IntegrityVerdict.UNCHECKED
        if counter >= self.modulus:
            return IntegrityVerdict.BAD_COUNTER
        if checksum != self.fold(checksum_sum(arbitration_id, payload, self.checksum)):
            return IntegrityVerdict.BAD_CHECKSUM
        return IntegrityVerdict.OK


class Step(enum.Enum):
    """How a received counter follows the one before it from the same sender."""

    FIRST = "first counter heard"
    NEXT = "the next counter"
    SKIPPED = "counters skipped: messages were lost"
    REPEATED = "the same counter again: a repeated or frozen message"
    NOT_AVAILABLE = "counter not available"


class CounterWatch:
    """The sequence of one sender's counters.

    A repeat means the sender (or a gateway) sent the same message twice, or froze: the receiver
    should not act on it again. A skip means messages were lost on the way, and the newest one is
    still good. Who does what with each is the receiver's rule; this only tells them apart.
    """

    __slots__ = ("_last", "modulus", "not_available")

    def __init__(self, modulus: int, not_available: int | None = None) -> None:
        self.modulus = modulus
        self.not_available = not_available
        self._last: int | None = None

    def observe(self, counter: int) -> Step:
        if self.not_available is not None and counter == self.not_available:
            self._last = None
            return Step.NOT_AVAILABLE
        last, self._last = self._last, counter
        if last is None:
            return Step.FIRST
        if counter == last:
            return Step.REPEATED
        return Step.NEXT if counter == (last + 1) % self.modulus else Step.SKIPPED

    def reset(self) -> None:
        """Forget the sequence (the sender went silent or released): its next counter is a first."""
        self._last = None
