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
from dataclasses import dataclass

from cantools.database.can import Database, Message

from ecu_sim.bus.transmit import Output
from ecu_sim.codec.role import RoleCodec
from ecu_sim.runtime.ticks import ticks_in
from ecu_sim.vehicle.drive import Driveline

#: SPN -> what of the driveline it carries
SPN_VALUES: dict[int, Callable[[Driveline], float]] = {
    190: lambda d: d.engine_rpm,
    513: lambda d: d.engine_pct,
    512: lambda d: d.demand_pct,
    523: lambda d: float(d.gear),
    524: lambda d: float(d.selected),
}
#: the messages, each named by the SPNs that identify it
MESSAGES: dict[str, tuple[int, ...]] = {"EEC1": (190, 513, 512), "ETC2": (523, 524)}


@dataclass
class EngineMessage:
    """One message: its codecs with what each carries, how many ticks apart, and the output.

    The latest values and payload are kept: ETC2's gears change a few times a run, so most
    ticks send the payload already built.
    """

    message: Message
    signals: tuple[tuple[RoleCodec, Callable[[Driveline], float]], ...]
    every_ticks: int
    output: Output
    _last: tuple[tuple[float, ...], bytes] | None = None

    def payload(self, driveline: Driveline) -> bytes:
        values = tuple(value(driveline) for _, value in self.signals)
        last = self._last
        if last is not None and last[0] == values:
            return last[1]
        frame_bytes = (1 << (8 * self.message.length)) - 1
        for (codec, _), value in zip(self.signals, values, strict=True):
            frame_bytes &= int.from_bytes(codec.encode(value), "little")
        data = frame_bytes.to_bytes(self.message.length, "little")
        self._last = (values, data)
        return data


def find_messages(database: Database, is_j1939: bool) -> list[tuple[Message, list[tuple[RoleCodec, int]]]]:
    """The DBC's messages that carry the driveline SPNs, with a codec for each such signal."""
    found = []
    for message in database.messages:
        codecs = [(RoleCodec(message, signal, is_j1939=is_j1939), signal.spn) for signal in message.signals
                  if signal.spn in SPN_VALUES]
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
            signals = tuple((codec, SPN_VALUES[spn]) for codec, spn in codecs)
            built.append(EngineMessage(message, signals, every, output_for(message)))
        return cls(built) if built else None

    def send(self, tick: int, deadline: float, driveline: Driveline) -> None:
        for m in self.messages:
            if tick % m.every_ticks == 0:
                m.output.send(tick, deadline, m.payload(driveline))
