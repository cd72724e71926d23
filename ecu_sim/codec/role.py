"""The fast codec of one role signal: encode, decode and frame matching without cantools on the hot path.

cantools' generic per-message codec would dominate the run time of a virtual-time simulation, so the
layout facts of the one signal a role needs are read from cantools once and turned into integer
arithmetic; the tests check the result against cantools on random payloads and layouts.
"""

from __future__ import annotations

import enum
import math
import struct
from collections.abc import Callable
from typing import Final, Literal

from cantools.database.can import Message, Signal

from ecu_sim.codec.spn import SignalLayout
from ecu_sim.j1939.ids import MAX_EXTENDED_ID, format_id, pgn_of, raw_classes, source_address_of

# A J1939 bus carries a few hundred distinct identifiers at most; the bound only protects against a
# flood of random IDs (fuzzing, a babbling node) growing the caches without limit.
_MATCH_CACHE_MAX: Final = 4096

_INF: Final = math.inf
_NEG_INF: Final = -math.inf


class Invalid(enum.Enum):
    """Why a received frame carries no usable number; callers keep their last good value or time out."""

    SHORT_FRAME = "frame too short for the signal"
    NOT_AVAILABLE = "not available"
    ERROR_INDICATOR = "error indicator"
    OUT_OF_RANGE = "outside the DBC range or in a J1939 reserved range"


_STRUCT_CODES: Final = {1: "B", 2: "H", 4: "I", 8: "Q"}


def _window_reader(
    first: int, stop: int, order: Literal["little", "big"]
) -> Callable[[bytes | bytearray, int], tuple[int, ...]]:
    """``read(data, first)[0]`` is the unsigned integer in ``data[first:stop]`` in that byte order."""
    code = _STRUCT_CODES.get(stop - first)
    if code is not None:
        unpack_from: Callable[[bytes | bytearray, int], tuple[int, ...]] = struct.Struct(
            ("<" if order == "little" else ">") + code
        ).unpack_from
        return unpack_from

    def read(data: bytes | bytearray, offset: int) -> tuple[int, ...]:
        return (int.from_bytes(data[offset : offset + stop - first], order),)

    return read


def _frame_packer(length: int, order: Literal["little", "big"]) -> Callable[[int], bytes]:
    """``pack(n)`` is ``n.to_bytes(length, order)`` for 0 <= n < 2 ** (8 * length)."""
    code = _STRUCT_CODES.get(length)
    if code is not None:
        pack: Callable[[int], bytes] = struct.Struct(("<" if order == "little" else ">") + code).pack
        return pack

    def to_bytes(value: int) -> bytes:
        return value.to_bytes(length, order)

    return to_bytes


class RoleCodec:
    """Encoder/decoder for the one signal that plays a role (speed or APP) in its message.

    cantools' ``Message.encode``/``decode`` handle every signal of the message through generic
    dictionaries, which is costly at the call rates of virtual-time runs and on the single-board
    computers this targets. The role path only ever needs one signal, so the layout facts
    (start bit, length, byte order, signedness, scale, offset, limits: the signal's
    :class:`~ecu_sim.codec.spn.SignalLayout`, and the message length) are read from the cantools
    objects once and turned into a shift, a mask and an all-ones template. The tests check this
    path against cantools on random payloads.

    J1939 semantics (match by PGN, not-available/error/reserved raw ranges) apply when the message is a
    J1939 parameter group; other messages are matched by exact identifier and only checked against
    their DBC limits.
    """

    __slots__ = (
        "_dec_first",
        "_dec_order",
        "_dec_shift",
        "_enc_order",
        "_enc_shift",
        "_error_lo",
        "_ext_cache",
        "_mask",
        "_na_bits",
        "_na_lo",
        "_offset",
        "_pack",
        "_phys_hi",
        "_phys_lo",
        "_raw_hi",
        "_raw_lo",
        "_read",
        "_sa_cache",
        "_scale",
        "_sign_bit",
        "_std_cache",
        "_template",
        "frame_id",
        "is_extended_id",
        "is_j1939",
        "layout",
        "length",
        "maximum",
        "message",
        "message_name",
        "min_length",
        "minimum",
        "pgn",
        "signal",
        "signal_name",
    )

    def __init__(self, message: Message, signal: Signal, is_j1939: bool | None = None,
                 paged: bool = False) -> None:
        """Precompute the codec; ``ValueError`` says why a signal cannot serve as a role.

        ``is_j1939`` defaults to what the DBC says about the message (``VFrameFormat`` J1939PG); pass it
        explicitly when the database declares J1939 another way (``ProtocolType``). ``paged``: the
        signal is a multiplexed one, encoded on a page whose multiplexer value the caller's base
        payload already holds (a restbus message's page), so its bits are as plain as any.
        """
        layout = SignalLayout.of(signal)
        if layout.is_float:
            raise ValueError("it is an IEEE float signal; J1939 parameters are scaled integers")
        if layout.multiplexed and not paged:
            raise ValueError("it is part of a multiplexed layout; choose a plain signal")
        if layout.scale == 0.0:
            raise ValueError("its scale is 0, so no value can be encoded")
        if message.is_container:
            raise ValueError("its message is an AUTOSAR container")

        self.message: Message = message
        self.signal: Signal = signal
        self.layout: SignalLayout = layout
        self.message_name: str = message.name
        self.signal_name: str = layout.name
        self.frame_id: int = message.frame_id
        self.is_extended_id: bool = message.is_extended_frame
        if is_j1939 is None:
            is_j1939 = message.protocol == "j1939"
        # A J1939 parameter group needs a 29-bit identifier to carry priority, PGN and source address.
        self.is_j1939: bool = is_j1939 and message.is_extended_frame
        self.pgn: int | None = pgn_of(self.frame_id) if self.is_j1939 else None
        self.length: int = message.length

        nbits = layout.length
        mask = (1 << nbits) - 1
        self._mask = mask
        # Decode reads only the bytes the signal touches (so short frames that still hold it work);
        # encode works on the whole frame so one OR with the template fills every other bit. Motorola
        # positions are the layout's first bit, taken from cantools so its sawtooth numbering is not
        # re-derived.
        if layout.is_little_endian:
            lsb = layout.start
            first, last = lsb // 8, (lsb + nbits - 1) // 8
            self._dec_order: Literal["little", "big"] = "little"
            self._dec_shift = lsb - 8 * first
            self._enc_order: Literal["little", "big"] = "little"
            self._enc_shift = lsb
        else:
            msb = layout.first_bit
            first, last = msb // 8, (msb + nbits - 1) // 8
            self._dec_order = "big"
            self._dec_shift = 8 * (last - first + 1) - (msb - 8 * first) - nbits
            self._enc_order = "big"
            self._enc_shift = 8 * message.length - msb - nbits
        self._dec_first = first
        # A field window of 1, 2, 4 or 8 bytes (every byte-aligned J1939 parameter, and most others)
        # is read with a precompiled struct, a whole frame of such a length is written with one:
        # cheaper than slicing plus int.from_bytes/to_bytes (docs/performance.md), with the same bits.
        self._read = _window_reader(first, last + 1, self._dec_order)
        self._pack = _frame_packer(message.length, self._enc_order)
        self.min_length: int = last + 1
        if self.min_length > message.length:
            raise ValueError(
                f"it needs {self.min_length} bytes but its message is only {message.length} bytes long"
            )
        # Everything but the role signal is sent as all ones: "not available" for every J1939
        # parameter and the DBC padding convention for unused bits.
        self._template = ((1 << (8 * message.length)) - 1) & ~(mask << self._enc_shift)

        if layout.is_signed:
            self._sign_bit = 1 << (nbits - 1)
            bit_lo, bit_hi = -self._sign_bit, self._sign_bit - 1
        else:
            self._sign_bit = 0
            bit_lo, bit_hi = 0, mask
        if self.is_j1939 and not layout.is_signed:
            valid_max, self._error_lo, self._na_lo = raw_classes(nbits)
            bit_hi = valid_max
        else:
            # Unreachable thresholds: only the DBC limits decide.
            self._error_lo = self._na_lo = mask + 1
        self._na_bits = mask

        self._scale = layout.scale
        self._offset = layout.offset
        # DBC limits are usually rounded for display (250.996 km/h for raw 0xFAFF = 250.99609375), so a
        # limit admits the raw value it rounds to rather than cutting off the last step.
        raw_lo, raw_hi = bit_lo, bit_hi
        for limit, is_minimum in ((layout.minimum, True), (layout.maximum, False)):
            if limit is None:
                continue
            # Pinned just outside the field first, so an absurd DBC limit cannot overflow round().
            unrounded = min(max((float(limit) - self._offset) / self._scale, bit_lo - 1.0), bit_hi + 1.0)
            bound = round(unrounded)
            # A negative scale turns the physical minimum into the raw maximum.
            if is_minimum == (self._scale > 0):
                raw_lo = max(raw_lo, bound)
            else:
                raw_hi = min(raw_hi, bound)
        if raw_lo > raw_hi:
            raise ValueError(
                f"its DBC range [{layout.minimum}, {layout.maximum}] leaves no valid raw value in "
                f"{nbits} bits"
            )
        self._raw_lo = raw_lo
        self._raw_hi = raw_hi
        ends = (raw_lo * self._scale + self._offset, raw_hi * self._scale + self._offset)
        self._phys_lo = min(ends)
        self._phys_hi = max(ends)
        self.minimum: float = self._phys_lo
        self.maximum: float = self._phys_hi

        self._std_cache: dict[int, bool] = {}
        self._ext_cache: dict[int, bool] = {}
        self._sa_cache: dict[int, int | None] = {}

    def __repr__(self) -> str:
        ident = format_id(self.frame_id, self.is_extended_id)
        pgn = f" PGN {self.pgn}" if self.pgn is not None else ""
        return f"RoleCodec({self.message_name}.{self.signal_name} {ident}{pgn})"

    def encode(self, value: float) -> bytes:
        """Whole payload with this signal set and every other bit 1; never raises for a float.

        A controller that produces NaN or infinity must not take the process down or put a wrong speed
        on the bus, so those become "not available"; finite values outside the DBC limits are clamped.
        """
        if not self._phys_lo <= value <= self._phys_hi:  # rare: out of range, infinite or NaN
            if not _NEG_INF < value < _INF:
                return self._pack(self._template | (self._na_bits << self._enc_shift))
            value = self._phys_lo if value < self._phys_lo else self._phys_hi
        raw = round((value - self._offset) / self._scale)
        # Float rounding at the very edge must not step outside the raw limits.
        if raw < self._raw_lo:
            raw = self._raw_lo
        elif raw > self._raw_hi:
            raw = self._raw_hi
        return self._pack(self._template | ((raw & self._mask) << self._enc_shift))

    def decode(self, data: bytes | bytearray) -> float | Invalid:
        """Physical value, or the reason there is none (never a sentinel number like 255.99 km/h)."""
        if len(data) < self.min_length:
            return Invalid.SHORT_FRAME
        bits = (self._read(data, self._dec_first)[0] >> self._dec_shift) & self._mask
        if bits >= self._error_lo:
            return Invalid.NOT_AVAILABLE if bits >= self._na_lo else Invalid.ERROR_INDICATOR
        raw = bits - (self._sign_bit << 1) if bits & self._sign_bit else bits
        if raw < self._raw_lo or raw > self._raw_hi:
            return Invalid.OUT_OF_RANGE
        return raw * self._scale + self._offset

    def matches(self, arbitration_id: int, is_extended_id: bool) -> bool:
        """Whether a received frame is this role's message: a dict lookup after the first sighting.

        J1939 receivers must accept a parameter group whatever its priority and sender, so J1939
        messages match by PGN; anything else must match the DBC identifier exactly.
        """
        cache = self._ext_cache if is_extended_id else self._std_cache
        hit = cache.get(arbitration_id)
        if hit is None:
            hit = self._match_uncached(arbitration_id, is_extended_id)
            if len(cache) >= _MATCH_CACHE_MAX:
                cache.clear()
            cache[arbitration_id] = hit
        return hit

    def _match_uncached(self, arbitration_id: int, is_extended_id: bool) -> bool:
        if self.is_j1939:
            if not is_extended_id:
                return False
            # Checked here rather than by catching pgn_of's ValueError: a flood of out-of-range
            # identifiers misses the cache on every frame, and a comparison is cheaper than an exception.
            return 0 <= arbitration_id <= MAX_EXTENDED_ID and pgn_of(arbitration_id) == self.pgn
        return is_extended_id == self.is_extended_id and arbitration_id == self.frame_id

    def source_address(self, arbitration_id: int) -> int | None:
        """J1939 source address of a received identifier (None when the role is not J1939).

        Logged and shown to the user so a second sender of the same PGN on the bus can be spotted.
        """
        if not self.is_j1939:
            return None
        cache = self._sa_cache
        if arbitration_id in cache:
            return cache[arbitration_id]
        sa = source_address_of(arbitration_id) if 0 <= arbitration_id <= MAX_EXTENDED_ID else None
        if len(cache) >= _MATCH_CACHE_MAX:
            cache.clear()
        cache[arbitration_id] = sa
        return sa
