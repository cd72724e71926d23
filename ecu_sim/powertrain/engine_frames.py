"""The engine and transmission messages an ECU with a driveline sends: EEC1, ETC2, LFE1, LFC1, from the DBC.

Which messages and signals, where their bits lie and how often they go out all come from the DBC:
a message is found by the J1939 SPN of its signals (EEC1: 190 engine speed, 513 actual and 512
driver's demand torque; ETC2: 523 current and 524 selected gear; LFE1: 183 fuel rate, 184 and 185
instantaneous and average fuel economy; LFC1: 182 trip and 250 total fuel used), sent every whole number of
periods in its ``GenMsgCycleTime``. A DBC without them (the ``amp`` profile) sends none.

LFE1's fuel rate (SPN 183) is the mean rate since the message last went: the fuel burned since
then (the driveline's total, SPN 250's field) and not yet reported, over that time, as an engine
ECU filters the rate it sends, so a reader who sums the rates it hears gets the fuel the engine
burned (:class:`MeanRate`).

Each signal is encoded by the project's fast role codec (tested against cantools), which sends
every bit outside its signal as 1 (J1939's "not available"); a message of several signals is the
bitwise AND of their payloads, so each signal keeps its bits and the rest stay 1.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Protocol

from cantools.database.can import Database, Message

from ecu_sim.bus.transmit import Output
from ecu_sim.codec.role import RoleCodec
from ecu_sim.codec.spn import messages_carrying
from ecu_sim.j1939.ids import pgn_of
from ecu_sim.member.part import NetworkPart
from ecu_sim.runtime.schedule import Schedule
from ecu_sim.runtime.ticks import ticks_in
from ecu_sim.vehicle.drive import Driveline

#: the fuel rate sent as the mean since the last send, and the total fuel used it is the slope of
FUEL_RATE_SPN, FUEL_USED_SPN = 183, 250
_SECONDS_PER_HOUR = 3600.0

#: SPN -> the field of the driveline it carries
SPN_FIELDS: dict[int, int] = {
    190: Driveline._fields.index("engine_rpm"),
    513: Driveline._fields.index("engine_pct"),
    512: Driveline._fields.index("demand_pct"),
    523: Driveline._fields.index("gear"),
    524: Driveline._fields.index("selected"),
    183: Driveline._fields.index("fuel_rate_lph"),
    184: Driveline._fields.index("fuel_economy_kml"),
    185: Driveline._fields.index("average_economy_kml"),
    182: Driveline._fields.index("fuel_used_l"),
    250: Driveline._fields.index("fuel_used_l"),
}


class Gate(Protocol):
    """Whether the node that sends a message may send at a tick: its address claim stands."""

    open: bool

    def may_send(self, tick: int) -> bool: ...


class MeanRate:
    """SPN 183 as the engine sends it: the fuel not yet reported, over the time since the last send.

    The fuel not yet reported is the total burned less what the rates sent so far carry, each at
    the wire's step (the signal's scale) over its interval: a rate that stays between two steps
    (an idle of 0.62 L/h on 0.05 L/h steps) would otherwise round the same way at every send, and
    a reader's sum would drift from the engine's total for as long as it lasted. So the rounding of
    one send is made good by the next, and the sum stays within one send of the total.

    Only a send moves the window (:meth:`sent`): a request answered in between gets the rate last
    sent, and a send the claim held back leaves its fuel to the next one that goes.
    """

    __slots__ = ("_from", "_last", "_offset", "_period_s", "_reported", "_step", "slot", "used_field")

    def __init__(self, slot: int, used_field: int, period_s: float, step: float, offset: float) -> None:
        #: the place of the rate among the message's values, the driveline's field of the total
        self.slot = slot
        self.used_field = used_field
        self._period_s = period_s
        self._step, self._offset = step, offset
        self._from: int | None = None
        self._reported = 0.0
        self._last: float | None = None

    def rate(self, tick: int | None, used_l: float, instant_lph: float) -> float:
        """The rate to send at ``tick`` (None: a request, which gets the rate last sent); the
        first send has no interval behind it, so it sends the rate of its tick."""
        start = self._from
        if tick is None or start is None or tick <= start:
            return instant_lph if self._last is None else self._last
        return (used_l - self._reported) * _SECONDS_PER_HOUR / ((tick - start) * self._period_s)

    def sent(self, tick: int, used_l: float, rate_lph: float) -> None:
        """``rate_lph`` went at ``tick``: the fuel it reports, at the wire's step, is counted (the
        reader's count starts at the first send, with the engine's total then)."""
        start = self._from
        if start is None:
            self._reported = used_l
        else:
            wire = round((rate_lph - self._offset) / self._step) * self._step + self._offset
            self._reported += wire * (tick - start) * self._period_s / _SECONDS_PER_HOUR
        self._from, self._last = tick, rate_lph


def mean_rate(codecs: Sequence[tuple[RoleCodec, int]], spn_fields: Mapping[int, int],
              period_s: float | None) -> MeanRate | None:
    """The fuel rate's filter when the message carries SPN 183 and the driveline its total."""
    spns = [spn for _, spn in codecs]
    if period_s is None or FUEL_RATE_SPN not in spns or FUEL_USED_SPN not in spn_fields:
        return None
    slot = spns.index(FUEL_RATE_SPN)
    signal = codecs[slot][0].signal
    return MeanRate(slot, spn_fields[FUEL_USED_SPN], period_s, float(signal.scale), float(signal.offset))


class EngineMessage:
    """One message: its codecs with the driveline field each carries, how many ticks apart, the output.

    The latest values and payload are kept: ETC2's gears change a few times a run, so most
    ticks send the payload already built. ``gate``: the J1939 part of the node that sends it,
    when that is not the ECU's own (``--network powertrain``), whose claim it waits for.
    """

    __slots__ = ("_base", "_encoders", "_fields", "_last_data", "_last_values", "_length", "every_ticks",
                 "gate", "mean", "message", "names", "output", "overrides", "schedule")

    def __init__(self, message: Message, codecs: Sequence[tuple[RoleCodec, int]], every_ticks: int,
                 output: Output, spn_fields: Mapping[int, int] = SPN_FIELDS,
                 gate: Gate | None = None, base: int | None = None, period_s: float | None = None,
                 phase: int = 0) -> None:
        """``base``: the payload the SPN signals are written into (a restbus message's start
        values); all ones ("not available") by default. ``period_s``: the tick's length, which
        the fuel rate's mean since the last send needs (:class:`MeanRate`). ``phase``: the tick
        of its first send within its grid (a multiplexed message's pages in turn)."""
        self.message = message
        self.every_ticks = every_ticks
        self.schedule = Schedule(every_ticks, phase=phase)
        self.output = output
        self.gate = gate
        self._encoders = tuple(codec.encode for codec, _ in codecs)
        #: the signals the codecs fill, by name, and a person's fixed value for each (None: the
        #: truck's), None while nothing is fixed (a control, :mod:`ecu_sim.powertrain.live`)
        self.names = tuple(codec.signal.name for codec, _ in codecs)
        self.overrides: list[float | None] | None = None
        self._fields = tuple(spn_fields[spn] for _, spn in codecs)
        self.mean = mean_rate(codecs, spn_fields, period_s)
        self._length = message.length
        self._base = (1 << (8 * message.length)) - 1 if base is None else base
        self._last_values: list[float] | None = None
        self._last_data = b""

    def payload(self, driveline: Sequence[float], tick: int | None = None) -> bytes:
        """The payload from ``driveline``; ``tick``: the send it goes with (None: a request)."""
        values = [driveline[i] for i in self._fields]
        mean = self.mean
        if mean is not None:
            used = driveline[mean.used_field]
            values[mean.slot] = rate = mean.rate(tick, used, values[mean.slot])
            if tick is not None:
                mean.sent(tick, used, rate)
        overrides = self.overrides
        if overrides is not None:
            values = [v if o is None else o for v, o in zip(values, overrides, strict=True)]
        if values == self._last_values:
            return self._last_data
        frame_bytes = self._base
        for encode, value in zip(self._encoders, values, strict=True):
            frame_bytes &= int.from_bytes(encode(value), "little")
        data = frame_bytes.to_bytes(self._length, "little")
        self._last_values, self._last_data = values, data
        return data

    @property
    def base(self) -> int:
        return self._base

    def rebase(self, base: int) -> None:
        """A new payload under the filled signals (a person fixed a start-value signal): the next
        payload is built afresh."""
        self._base = base
        self._last_values = None

    def latest(self) -> bytes | None:
        """The payload built last (None before the first), which a Request for the PGN gets."""
        return self._last_data or None


def find_messages(database: Database, is_j1939: bool, spn_fields: Mapping[int, int] = SPN_FIELDS,
                  senders: Collection[str] | None = None,
                  ) -> list[tuple[Message, list[tuple[RoleCodec, int]]]]:
    """The DBC's messages that carry the driveline SPNs (``spn_fields``), with a codec for each
    such signal; only those some node of ``senders`` sends, when given."""
    return [(message, [(RoleCodec(message, signal, is_j1939=is_j1939), spn) for spn, signal in signals])
            for message, signals in messages_carrying(database, spn_fields, senders)]


def cycle_ticks(cycle_ms: float | None, period_s: float) -> int:
    """Ticks between two sends of a message of cycle ``cycle_ms``: the whole periods in it, at
    least one (every tick without a cycle time)."""
    return max(1, ticks_in(cycle_ms / 1000.0, period_s)) if cycle_ms else 1


def every_ticks(message: Message, period_s: float) -> int:
    """Ticks between two sends of ``message``, from its ``GenMsgCycleTime``."""
    return cycle_ticks(message.cycle_time, period_s)


class TransportOutput:
    """A message over eight bytes (EC1) goes by BAM through its node's network layer."""

    def __init__(self, part: NetworkPart, pgn: int) -> None:
        self._part = part
        self._pgn = pgn

    def send(self, tick: int, deadline: float, data: bytes) -> None:
        self._part.broadcast(self._pgn, data)


class EngineFrames:
    """Sends each engine message on its ticks; the ECU calls :meth:`send` once per tick."""

    def __init__(self, messages: Sequence[EngineMessage]) -> None:
        self.messages = tuple(messages)

    @classmethod
    def build(cls, database: Database, is_j1939: bool, period_s: float,
              output_for: Callable[[Message], Output]) -> EngineFrames | None:
        """The messages of ``database`` that carry driveline SPNs, or None when it has none."""
        built = [EngineMessage(message, codecs, every_ticks(message, period_s), output_for(message),
                               period_s=period_s)
                 for message, codecs in find_messages(database, is_j1939)]
        return cls(built) if built else None

    def latest(self) -> dict[int, Callable[[], bytes | None]]:
        """Each message's latest payload by its PGN (None before the first), for a Request."""
        return {pgn_of(m.message.frame_id): m.latest for m in self.messages}

    def send(self, tick: int, deadline: float, driveline: Sequence[float], may_send: bool = True) -> None:
        """Each message due at ``tick`` or since the last transmitted tick (its :class:`Schedule`);
        none while the sender may not send (its claim does not stand), which still counts as their
        turn: a message waiting for the claim does not go out off its grid once it stands."""
        for m in self.messages:
            if m.schedule.due(tick) and may_send:
                gate = m.gate
                if gate is None or gate.open or gate.may_send(tick):
                    m.output.send(tick, deadline, m.payload(driveline, tick))
