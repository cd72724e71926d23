"""Message profiles: which DBC describes the bus, and which of its signals carry speed and pedal position.

Everything about the wire (IDs, bit positions, scale, offset, limits) lives in the DBC so that switching
between the AMP testbed layout and the SAE J1939-71 layout, or a customer's own DBC, needs no code change.
This module only decides *which* signal plays which role and turns that signal into a codec fast enough
for virtual-time simulation, where cantools' generic per-message codec would dominate the run time.
"""

from __future__ import annotations

import enum
import importlib.resources
import importlib.resources.abc
import math
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

import cantools
import cantools.database
import cantools.j1939
from cantools.database.can import Database, Message, Signal
from cantools.database.utils import start_bit

from ecu_sim.errors import ConfigError

__all__ = [
    "DEFAULT_PERIOD_S",
    "DEFAULT_PROFILE",
    "SPN_ACCELERATOR_PEDAL_POSITION_1",
    "SPN_WHEEL_BASED_VEHICLE_SPEED",
    "Invalid",
    "Profile",
    "RoleCodec",
    "available_profiles",
]

DEFAULT_PROFILE: Final = "amp"
DEFAULT_PERIOD_S: Final = 0.1
SPN_WHEEL_BASED_VEHICLE_SPEED: Final = 84
SPN_ACCELERATOR_PEDAL_POSITION_1: Final = 91

# J1939-71 marks the top of each parameter's raw range by the value of its most significant byte:
# 0xFB parameter-specific, 0xFC..0xFD reserved, 0xFE error indicator, 0xFF not available.
_J1939_FIRST_NON_VALID_TOP_BYTE: Final = 0xFB
_J1939_ERROR_TOP_BYTE: Final = 0xFE
_J1939_NOT_AVAILABLE_TOP_BYTE: Final = 0xFF

# A J1939 bus carries a few hundred distinct identifiers at most; the bound only protects against a
# flood of random IDs (fuzzing, a babbling node) growing the caches without limit.
_MATCH_CACHE_MAX: Final = 4096

_INF: Final = math.inf
_NEG_INF: Final = -math.inf

_ROLE_OPTIONS: Final = {"speed": "--speed-signal", "app": "--app-signal"}
_ROLE_SPNS: Final = {"speed": SPN_WHEEL_BASED_VEHICLE_SPEED, "app": SPN_ACCELERATOR_PEDAL_POSITION_1}
_ROLE_DESCRIPTIONS: Final = {
    "speed": "wheel-based vehicle speed",
    "app": "accelerator pedal position 1",
}


class Invalid(enum.Enum):
    """Why a received frame carries no usable number; callers keep their last good value or time out."""

    SHORT_FRAME = "frame too short for the signal"
    NOT_AVAILABLE = "not available"
    ERROR_INDICATOR = "error indicator"
    OUT_OF_RANGE = "outside the DBC range or in a J1939 reserved range"


def _j1939_raw_classes(length: int) -> tuple[int, int, int]:
    """Return (largest valid raw, first error raw, first not-available raw) for a field of ``length`` bits.

    J1939-71 defines the ranges for 1-, 2- and 4-byte parameters by the top byte and for 2- and 4-bit
    discrete fields as "all ones = not available, all ones minus one = error". Fields of 8 bits or more
    use the top-byte rule (exact for whole bytes), shorter ones the discrete rule. A single bit has no
    room for either and is all valid.
    """
    all_ones = (1 << length) - 1
    if length >= 8:
        shift = length - 8
        return (
            (_J1939_FIRST_NON_VALID_TOP_BYTE << shift) - 1,
            _J1939_ERROR_TOP_BYTE << shift,
            _J1939_NOT_AVAILABLE_TOP_BYTE << shift,
        )
    if length >= 2:
        return all_ones - 2, all_ones - 1, all_ones
    return all_ones, all_ones + 1, all_ones + 1


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
    dictionaries: 2..10 microseconds per call on a desktop CPU (more for messages with many signals),
    several times that on the single-board computers this targets, and tens of thousands of calls per
    second in virtual-time runs. The role path only ever needs one signal, so the layout facts
    (start bit, length, byte order, signedness, scale, offset, limits, message length) are read from the
    cantools objects once and turned into a shift, a mask and an all-ones template. The tests check this
    path against cantools on random payloads.

    J1939 semantics (match by PGN, not-available/error/reserved raw ranges) apply when the message is a
    J1939 parameter group; other messages are matched by exact identifier and only checked against
    their DBC limits.
    """

    __slots__ = (
        "_dec_first",
        "_dec_last",
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

    def __init__(self, message: Message, signal: Signal, is_j1939: bool | None = None) -> None:
        """Precompute the codec; ``ValueError`` says why a signal cannot serve as a role.

        ``is_j1939`` defaults to what the DBC says about the message (``VFrameFormat`` J1939PG); pass it
        explicitly when the database declares J1939 another way (``ProtocolType``).
        """
        if signal.is_float:
            raise ValueError("it is an IEEE float signal; J1939 parameters are scaled integers")
        if signal.multiplexer_ids is not None or signal.is_multiplexer:
            raise ValueError("it is part of a multiplexed layout; choose a plain signal")
        if float(signal.scale) == 0.0:
            raise ValueError("its scale is 0, so no value can be encoded")
        if message.is_container:
            raise ValueError("its message is an AUTOSAR container")

        self.message: Message = message
        self.signal: Signal = signal
        self.message_name: str = message.name
        self.signal_name: str = signal.name
        self.frame_id: int = message.frame_id
        self.is_extended_id: bool = message.is_extended_frame
        if is_j1939 is None:
            is_j1939 = message.protocol == "j1939"
        # A J1939 parameter group needs a 29-bit identifier to carry priority, PGN and source address.
        self.is_j1939: bool = is_j1939 and message.is_extended_frame
        self.pgn: int | None = (
            int(cantools.j1939.pgn_from_frame_id(self.frame_id))  # type: ignore[no-untyped-call]
            if self.is_j1939
            else None
        )
        self.length: int = message.length

        nbits = signal.length
        mask = (1 << nbits) - 1
        self._mask = mask
        # Decode reads only the bytes the signal touches (so short frames that still hold it work);
        # encode works on the whole frame so one OR with the template fills every other bit. Motorola
        # positions go through cantools' own start_bit() so its sawtooth numbering is not re-derived.
        if signal.byte_order == "little_endian":
            lsb = signal.start
            first, last = lsb // 8, (lsb + nbits - 1) // 8
            self._dec_order: Literal["little", "big"] = "little"
            self._dec_shift = lsb - 8 * first
            self._enc_order: Literal["little", "big"] = "little"
            self._enc_shift = lsb
        else:
            msb = start_bit(signal)
            first, last = msb // 8, (msb + nbits - 1) // 8
            self._dec_order = "big"
            self._dec_shift = 8 * (last - first + 1) - (msb - 8 * first) - nbits
            self._enc_order = "big"
            self._enc_shift = 8 * message.length - msb - nbits
        self._dec_first = first
        self._dec_last = last + 1
        # A field window of 1, 2, 4 or 8 bytes (every byte-aligned J1939 parameter, and most others)
        # is read with a precompiled struct, a whole frame of such a length is written with one:
        # several times cheaper than slicing plus int.from_bytes/to_bytes, with the same bits.
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

        if signal.is_signed:
            self._sign_bit = 1 << (nbits - 1)
            bit_lo, bit_hi = -self._sign_bit, self._sign_bit - 1
        else:
            self._sign_bit = 0
            bit_lo, bit_hi = 0, mask
        if self.is_j1939 and not signal.is_signed:
            valid_max, self._error_lo, self._na_lo = _j1939_raw_classes(nbits)
            bit_hi = valid_max
        else:
            # Unreachable thresholds: only the DBC limits decide.
            self._error_lo = self._na_lo = mask + 1
        self._na_bits = mask

        self._scale = float(signal.scale)
        self._offset = float(signal.offset)
        # DBC limits are usually rounded for display (250.996 km/h for raw 0xFAFF = 250.99609375), so a
        # limit admits the raw value it rounds to rather than cutting off the last step.
        raw_lo, raw_hi = bit_lo, bit_hi
        for limit, is_minimum in ((signal.minimum, True), (signal.maximum, False)):
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
                f"its DBC range [{signal.minimum}, {signal.maximum}] leaves no valid raw value in "
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
        ident = f"0x{self.frame_id:08X}" if self.is_extended_id else f"0x{self.frame_id:03X}"
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
            # J1939-21 in integer arithmetic, as cantools.j1939.pgn_from_frame_id computes it but
            # ~100 times faster: a flood of random identifiers misses the cache on every frame.
            if not 0 <= arbitration_id <= 0x1FFFFFFF:
                return False
            pdu1 = (arbitration_id >> 16) & 0xFF < 240  # PDU1: the PS byte is a destination address
            return (arbitration_id >> 8) & (0x3FF00 if pdu1 else 0x3FFFF) == self.pgn
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
        try:
            sa: int | None = int(
                cantools.j1939.frame_id_unpack(arbitration_id).source_address  # type: ignore[no-untyped-call]
            )
        except cantools.Error:
            sa = None
        if len(cache) >= _MATCH_CACHE_MAX:
            cache.clear()
        cache[arbitration_id] = sa
        return sa


def _builtin_dir() -> importlib.resources.abc.Traversable:
    return importlib.resources.files("ecu_sim.codec") / "dbc"


def available_profiles() -> list[str]:
    """Names of the DBC files shipped with the package, for help texts and error messages."""
    try:
        entries = list(_builtin_dir().iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(e.name.removesuffix(".dbc") for e in entries if e.name.endswith(".dbc") and e.is_file())


def _is_j1939_database(database: Database) -> bool:
    """Vector-style J1939 databases may declare the protocol only at database level."""
    if database.dbc is None:
        return False
    attribute = database.dbc.attributes.get("ProtocolType")
    return attribute is not None and str(attribute.value).upper() == "J1939"


def _parse_failure(where: str, exc: Exception) -> ConfigError:
    return ConfigError(
        f"{where} is not a valid DBC file: {exc}. Fix the file (cantools dump shows where parsing stops) "
        f"or choose a built-in profile with --profile {'/'.join(available_profiles()) or 'NAME'}."
    )


def _load_builtin(name: str) -> tuple[str, Database]:
    known = available_profiles()
    if name not in known:
        listing = ", ".join(known) if known else "none (the package's dbc/ folder is missing: reinstall)"
        raise ConfigError(
            f"unknown profile {name!r}; known profiles: {listing}. "
            "To use your own DBC file, pass --dbc PATH instead."
        )
    resource = _builtin_dir() / f"{name}.dbc"
    where = str(resource)
    try:
        text = resource.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"cannot read built-in profile {name!r} at {where}: {exc}; reinstall ecu-sim"
        ) from exc
    try:
        database = cantools.database.load_string(text, database_format="dbc", strict=False)
    except Exception as exc:  # the DBC parser raises many unrelated types for malformed input
        raise _parse_failure(where, exc) from exc
    assert isinstance(database, Database)
    return where, database


def _load_user(dbc_path: str) -> tuple[str, Database]:
    path = Path(dbc_path)
    if not path.is_file():
        what = "is a directory, not a DBC file" if path.is_dir() else "does not exist"
        raise ConfigError(f"DBC file {dbc_path} {what}; check the --dbc PATH.")
    try:
        # strict=False: real-world J1939 DBCs often have overlapping or oversized signals elsewhere in
        # the file; only the two role signals need to be sound, and RoleCodec checks those.
        database = cantools.database.load_file(path, database_format="dbc", strict=False)
    except OSError as exc:
        raise ConfigError(
            f"cannot read DBC file {dbc_path}: {exc.strerror or exc}; check the --dbc PATH."
        ) from exc
    except Exception as exc:  # the DBC parser raises many unrelated types for malformed input
        raise _parse_failure(dbc_path, exc) from exc
    assert isinstance(database, Database)
    return dbc_path, database


def _resolve_role(where: str, database: Database, role: str, override: str | None) -> tuple[Message, Signal]:
    option = _ROLE_OPTIONS[role]
    if override is not None:
        message_name, dot, signal_name = override.partition(".")
        if not dot or not message_name or not signal_name:
            raise ConfigError(
                f"{option} {override!r}: expected MESSAGE.SIGNAL, e.g. CCVS1.WheelBasedVehicleSpeed."
            )
        try:
            message = database.get_message_by_name(message_name)
        except KeyError:
            names = ", ".join(sorted(m.name for m in database.messages)) or "none"
            raise ConfigError(
                f"{option} {override!r}: {where} has no message {message_name!r}; its messages are: {names}."
            ) from None
        try:
            signal = message.get_signal_by_name(signal_name)
        except KeyError:
            names = ", ".join(s.name for s in message.signals) or "none"
            raise ConfigError(
                f"{option} {override!r}: message {message_name} in {where} has no signal {signal_name!r}; "
                f"its signals are: {names}."
            ) from None
        return message, signal

    spn = _ROLE_SPNS[role]
    found = [(m, s) for m in database.messages for s in m.signals if s.spn == spn]
    description = _ROLE_DESCRIPTIONS[role]
    if not found:
        raise ConfigError(
            f"{where} has no signal with J1939 SPN {spn} ({description}). Add the SPN signal attribute "
            f'(BA_ "SPN" SG_ <id> <signal> {spn};) or name the signal with {option} MESSAGE.SIGNAL.'
        )
    if len(found) > 1:
        names = ", ".join(f"{m.name}.{s.name}" for m, s in found)
        raise ConfigError(
            f"{where} has {len(found)} signals with J1939 SPN {spn} ({description}): {names}. "
            f"Choose one with {option} MESSAGE.SIGNAL."
        )
    return found[0]


@dataclass(frozen=True, slots=True, eq=False)
class Profile:
    """A loaded DBC with its two role codecs and the transmit period, ready for the ECU and the CCM.

    ``period_s`` is the speed message's ``GenMsgCycleTime`` (100 ms without one): the default loop
    period of every node, which ``--period`` or ``[run] period_s`` overrides.
    """

    name: str
    dbc_path: str
    database: Database
    speed: RoleCodec
    app: RoleCodec
    period_s: float

    @classmethod
    def load(
        cls,
        name: str = DEFAULT_PROFILE,
        dbc_path: str | None = None,
        speed_signal: str | None = None,
        app_signal: str | None = None,
    ) -> Profile:
        """Load a built-in profile by ``name``, or any DBC file by ``dbc_path`` (then ``name`` is unused).

        Roles are found by SPN so any J1939 DBC works unchanged; the ``*_signal`` overrides
        (``MESSAGE.SIGNAL``) cover DBCs without SPN attributes or with several candidates.
        """
        if dbc_path is not None:
            where, database = _load_user(dbc_path)
            profile_name = Path(dbc_path).stem
        else:
            where, database = _load_builtin(name)
            profile_name = name
        j1939_db = _is_j1939_database(database)

        codecs: dict[str, RoleCodec] = {}
        for role, override in (("speed", speed_signal), ("app", app_signal)):
            message, signal = _resolve_role(where, database, role, override)
            is_j1939 = message.protocol == "j1939" or j1939_db
            try:
                codecs[role] = RoleCodec(message, signal, is_j1939=is_j1939)
            except ValueError as exc:
                raise ConfigError(
                    f"{where}: signal {message.name}.{signal.name} cannot carry the "
                    f"{_ROLE_DESCRIPTIONS[role]}: {exc}. Choose another with {_ROLE_OPTIONS[role]} "
                    "MESSAGE.SIGNAL."
                ) from exc

        speed, app = codecs["speed"], codecs["app"]
        if (speed.frame_id, speed.is_extended_id) == (app.frame_id, app.is_extended_id):
            ident = f"0x{speed.frame_id:08X}" if speed.is_extended_id else f"0x{speed.frame_id:03X}"
            raise ConfigError(
                f"{where}: the speed signal {speed.message_name}.{speed.signal_name} and the APP signal "
                f"{app.message_name}.{app.signal_name} are both in frame {ident}. The ECU sends speed and "
                "the CCM sends APP, and each node ignores the frame it sends itself, so they need two "
                "different messages: choose them with --speed-signal and --app-signal MESSAGE.SIGNAL."
            )
        # The DBC's cycle time of the speed message is the loop period unless --period or
        # [run] period_s says otherwise (ecu_sim.settings.load.load).
        cycle_ms = speed.message.cycle_time
        period_s = cycle_ms / 1000.0 if cycle_ms is not None and cycle_ms > 0 else DEFAULT_PERIOD_S
        return cls(
            name=profile_name,
            dbc_path=where,
            database=database,
            speed=speed,
            app=app,
            period_s=period_s,
        )
