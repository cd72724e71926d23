"""Where a DBC carries a J1939 parameter, and what a signal's bits are: one lookup, one description.

Every node finds its signals by their J1939 ``SPN`` attribute rather than by name, so a customer's
DBC works unchanged; the finding is done here alone, so every part of the simulator agrees on
which signal a parameter is (the first in the DBC's order where one is taken, never a guess where
one is required). Whatever reads or writes a signal's bits (the fast role codec, the command
codecs, the received commands, the web page's signal list) works from :class:`SignalLayout`, made
once from cantools' signal: one place decides what a layout is, and the tests check it against
cantools on random layouts.
"""

from __future__ import annotations

from collections.abc import Collection, Container, Iterator
from dataclasses import dataclass
from typing import Literal, NamedTuple

from cantools.database.can import Database, Message, Signal
from cantools.database.utils import start_bit

from ecu_sim.errors import ConfigError
from ecu_sim.j1939.checksum import BitField


@dataclass(frozen=True, slots=True)
class SignalLayout:
    """A signal's place in its frame and how its bits become a number, as the DBC gives them.

    ``start`` is the DBC's own start bit. ``first_bit`` is the one cantools' ``start_bit`` gives:
    an Intel signal's least significant bit counted from the first byte's least significant bit,
    a Motorola signal's most significant bit counted in network order; taken from cantools so
    the DBC's sawtooth numbering is not derived twice. The limits are kept as cantools read them,
    so the web page shows the DBC's own numbers.
    """

    name: str
    spn: int | None
    start: int
    first_bit: int
    length: int
    byte_order: Literal["little_endian", "big_endian"]
    is_signed: bool
    is_float: bool
    multiplexed: bool
    scale: float
    offset: float
    minimum: float | None
    maximum: float | None
    unit: str

    @classmethod
    def of(cls, signal: Signal) -> SignalLayout:
        return cls(name=signal.name, spn=signal.spn, start=signal.start, first_bit=start_bit(signal),
                   length=signal.length, byte_order=signal.byte_order, is_signed=signal.is_signed,
                   is_float=signal.is_float,
                   multiplexed=signal.multiplexer_ids is not None or signal.is_multiplexer,
                   scale=float(signal.scale), offset=float(signal.offset), minimum=signal.minimum,
                   maximum=signal.maximum, unit=signal.unit or "")

    @property
    def is_little_endian(self) -> bool:
        return self.byte_order == "little_endian"

    @property
    def bits(self) -> BitField:
        """An Intel signal's field, as J1939-71's counter and checksum rule takes it."""
        return BitField(self.start, self.length)

    def raw(self, payload: bytes) -> int:
        """The signal's bits as an unsigned number; bits beyond a short payload read as 0."""
        mask = (1 << self.length) - 1
        if self.is_little_endian:
            return (int.from_bytes(payload, "little") >> self.start) & mask
        padded = payload.ljust((self.first_bit + self.length + 7) // 8, b"\0")
        return (int.from_bytes(padded, "big") >> (8 * len(padded) - self.first_bit - self.length)) & mask

    def with_raw(self, payload: int, length: int, raw: int) -> int:
        """``payload`` (a frame of ``length`` bytes read little-endian) with the signal's bits set
        to ``raw`` (two's complement when signed), the other bits kept."""
        mask = (1 << self.length) - 1
        raw &= mask
        if self.is_little_endian:
            return (payload & ~(mask << self.start)) | (raw << self.start)
        shift = 8 * length - self.first_bit - self.length
        big = int.from_bytes(payload.to_bytes(length, "little"), "big")
        big = (big & ~(mask << shift)) | (raw << shift)
        return int.from_bytes(big.to_bytes(length, "big"), "little")

    def value(self, raw: int) -> float:
        """The physical value of a raw number (signed or not: the caller has decided)."""
        return raw * self.scale + self.offset


class Carrier(NamedTuple):
    """A DBC message and the signal of it that carries a parameter."""

    message: Message
    signal: Signal


def carriers(database: Database, spn: int) -> list[Carrier]:
    """Every signal with J1939 ``spn``, in the DBC's order."""
    return [Carrier(message, signal) for message in database.messages for signal in message.signals
            if signal.spn == spn]


def first_carrier(database: Database, spn: int) -> Carrier | None:
    """The first signal with ``spn`` in the DBC's order: for the parts that take what the DBC
    offers (a second copy of a parameter elsewhere changes nothing for them)."""
    return next(iter(carriers(database, spn)), None)


def messages_with(database: Database, spn: int) -> list[Message]:
    """Each message with a signal of ``spn``, once, in the DBC's order."""
    return [message for message in database.messages if any(s.spn == spn for s in message.signals)]


def spn_signals(message: Message, spns: Container[int] | None = None) -> list[tuple[int, Signal]]:
    """The message's signals that have an SPN (one of ``spns`` when given) with it, in its order."""
    return [(spn, signal) for signal in message.signals
            if (spn := signal.spn) is not None and (spns is None or spn in spns)]


def messages_carrying(database: Database, spns: Collection[int], senders: Collection[str] | None = None,
                      ) -> Iterator[tuple[Message, list[tuple[int, Signal]]]]:
    """Each message with signals of ``spns``, and those signals; only the messages some node of
    ``senders`` sends, when given."""
    for message in database.messages:
        if senders is not None and not set(message.senders or ()) & set(senders):
            continue
        signals = spn_signals(message, spns)
        if signals:
            yield message, signals


def _several(where: str, spn: int, found: list[Carrier], about: str = "") -> str:
    """The start of the error for a parameter that must be one signal and is several."""
    names = ", ".join(f"{message.name}.{signal.name}" for message, signal in found)
    return f"{where} has {len(found)} signals with J1939 SPN {spn}{about}: {names}"


def optional_carrier(database: Database, spn: int, where: str, needs: str) -> Carrier | None:
    """The one signal with ``spn``, None without one; ``ConfigError`` naming ``where`` (the DBC)
    and the candidates when there are several, ended by what ``needs`` it."""
    found = carriers(database, spn)
    if len(found) > 1:
        raise ConfigError(f"{_several(where, spn, found)}; {needs}")
    return found[0] if found else None


def required_carrier(database: Database, spn: int, where: str, about: str, add: str, choose: str) -> Carrier:
    """The one signal with ``spn``; ``ConfigError`` naming the SPN, ``where`` (the DBC) and
    ``about`` (what the parameter is), followed by ``add`` when there is none and by ``choose``
    when there are several."""
    found = carriers(database, spn)
    if not found:
        raise ConfigError(f"{where} has no signal with J1939 SPN {spn}{about}. {add}")
    if len(found) > 1:
        raise ConfigError(f"{_several(where, spn, found, about)}. {choose}")
    return found[0]
