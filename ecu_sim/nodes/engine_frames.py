"""The engine and transmission messages an ECU with a driveline sends: EEC1 and ETC2, from the DBC.

Which messages and signals, where their bits lie and how often they go out all come from the DBC:
a message is found by the J1939 SPN of its signals (EEC1: 190 engine speed, 513 actual and 512
driver's demand torque; ETC2: 523 current and 524 selected gear), sent every whole number of
periods in its ``GenMsgCycleTime``. A DBC without them (the ``amp`` profile) sends none.

Each signal is encoded by the project's fast role codec (tested against cantools), which sends
every bit outside its signal as 1 (J1939's "not available"); a message of several signals is the
bitwise AND of their payloads, so each signal keeps its bits and the rest stay 1.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cantools.database.can import Database, Message

from ecu_sim.bus.transmit import Output
from ecu_sim.codec.role import RoleCodec
from ecu_sim.j1939.ids import pgn_of
from ecu_sim.runtime.ticks import ticks_in
from ecu_sim.vehicle.drive import Driveline

#: SPN -> the field of the driveline it carries
SPN_FIELDS: dict[int, int] = {
    190: Driveline._fields.index("engine_rpm"),
    513: Driveline._fields.index("engine_pct"),
    512: Driveline._fields.index("demand_pct"),
    523: Driveline._fields.index("gear"),
    524: Driveline._fields.index("selected"),
}


class EngineMessage:
    """One message: its codecs with the driveline field each carries, how many ticks apart, the output.

    The latest values and payload are kept: ETC2's gears change a few times a run, so most
    ticks send the payload already built.
    """

    __slots__ = ("_encoders", "_fields", "_last_data", "_last_values", "_length", "every_ticks",
                 "message", "output")

    def __init__(self, message: Message, codecs: Sequence[tuple[RoleCodec, int]], every_ticks: int,
                 output: Output) -> None:
        self.message = message
        self.every_ticks = every_ticks
        self.output = output
        self._encoders = tuple(codec.encode for codec, _ in codecs)
        self._fields = tuple(SPN_FIELDS[spn] for _, spn in codecs)
        self._length = message.length
        self._last_values: list[float] = []
        self._last_data = b""

    def payload(self, driveline: Driveline) -> bytes:
        values = [driveline[i] for i in self._fields]
        if values == self._last_values:
            return self._last_data
        frame_bytes = (1 << (8 * self._length)) - 1
        for encode, value in zip(self._encoders, values, strict=True):
            frame_bytes &= int.from_bytes(encode(value), "little")
        data = frame_bytes.to_bytes(self._length, "little")
        self._last_values, self._last_data = values, data
        return data

    def latest(self) -> bytes | None:
        """The payload built last (None before the first), which a Request for the PGN gets."""
        return self._last_data or None


def find_messages(database: Database, is_j1939: bool) -> list[tuple[Message, list[tuple[RoleCodec, int]]]]:
    """The DBC's messages that carry the driveline SPNs, with a codec for each such signal."""
    found = []
    for message in database.messages:
        codecs = [(RoleCodec(message, signal, is_j1939=is_j1939), signal.spn) for signal in message.signals
                  if signal.spn in SPN_FIELDS]
        if codecs:
            found.append((message, codecs))
    return found


class EngineFrames:
    """Sends each engine message on its ticks; the ECU calls :meth:`send` once per tick."""

    def __init__(self, messages: Sequence[EngineMessage]) -> None:
        self.messages = tuple(messages)

    @classmethod
    def build(cls, database: Database, is_j1939: bool, period_s: float,
              output_for: Callable[[Message], Output]) -> EngineFrames | None:
        """The messages of ``database`` that carry driveline SPNs, or None when it has none."""
        built = []
        for message, codecs in find_messages(database, is_j1939):
            cycle = message.cycle_time
            every = max(1, ticks_in(cycle / 1000.0, period_s)) if cycle else 1
            built.append(EngineMessage(message, codecs, every, output_for(message)))
        return cls(built) if built else None

    def latest(self) -> dict[int, Callable[[], bytes | None]]:
        """Each message's latest payload by its PGN (None before the first), for a Request."""
        return {pgn_of(m.message.frame_id): m.latest for m in self.messages}

    def send(self, tick: int, deadline: float, driveline: Driveline) -> None:
        for m in self.messages:
            if tick % m.every_ticks == 0:
                m.output.send(tick, deadline, m.payload(driveline))
