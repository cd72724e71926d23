"""The driver node: a person's pedal, brake and cruise buttons put on the bus, once a tick.

It reads its pedals and buttons (an input device, the keyboard, a test's script) at each tick without
waiting and sends the accelerator pedal in the APP message under its own J1939 source address,
so a receiver tells it from the cruise control module's APP. Where the DBC has them it also sends
the brake pedal position and the cruise commands, each message at its own cycle time (a whole
number of ticks). It listens for the speed, as a driver reads the speedometer: the status line
shows it, and the frames of the bus are taken (and recorded) like any node's.

Several signals of one message (the cruise commands) are sent in one frame: each codec sends every
bit but its own as ones, so the frame is the bitwise AND of the codecs' payloads. A button press,
even a tap between two frames of its message, is sent in the next few frames of that message: a
receiver acts on the change, so repeats cost nothing, while a single frame may be lost, or, when
the kernel times the frames, replaced by the next payload before its timer fires.
"""

from __future__ import annotations

from dataclasses import dataclass

from ecu_sim.bus.port import Port
from ecu_sim.bus.transmit import Output
from ecu_sim.codec.role import RoleCodec
from ecu_sim.nodes.figures import Figure, status_text
from ecu_sim.nodes.input import InputNode
from ecu_sim.pedals.reading import PedalReading, PedalSource
from ecu_sim.runtime.schedule import Schedule

#: frames of its message that carry a button press, counting the first
PRESS_FRAMES = 3


@dataclass(frozen=True)
class Message:
    """A message of the driver's besides APP: its signals by role, its output, sent every N ticks."""

    signals: tuple[tuple[str, RoleCodec], ...]
    output: Output
    every_ticks: int


def combined(payloads: list[bytes]) -> bytes:
    """One frame carrying every payload's own signal: the bitwise AND of all-ones-elsewhere payloads."""
    value = int.from_bytes(payloads[0], "big")
    for payload in payloads[1:]:
        value &= int.from_bytes(payload, "big")
    return value.to_bytes(len(payloads[0]), "big")


class Driver(InputNode):
    source_option = "--speed-source"

    def __init__(self, port: Port, speed: RoleCodec, app: RoleCodec, output: Output,
                 messages: tuple[Message, ...], pedals: PedalSource, hold_ticks: int,
                 speed_source: int | None = None) -> None:
        super().__init__(port, speed, output, hold_ticks, speed_source)
        self.encode_app = app.encode
        self.messages = messages
        #: each message's turns: one that fell due on an overdue tick goes at the next sent tick
        self._schedules = tuple(Schedule(message.every_ticks) for message in messages)
        self.pedals = pedals
        self.reading = PedalReading()
        self.speed_kph: float | None = None
        #: buttons pressed -> frames of their message still to carry the press
        self._pressed: dict[str, int] = {}

    def tick(self, deadline: float, transmit: bool) -> None:
        self.reading = reading = self.pedals.read()
        self.speed_kph = self.held.get(self.tick_index)
        for name, on in (("resume", reading.resume), ("cancel", reading.cancel)):
            if on:
                self._pressed[name] = PRESS_FRAMES
        if transmit:
            self.send(deadline, self.encode_app(reading.app_pct))
            for message, schedule in zip(self.messages, self._schedules, strict=True):
                if schedule.due(self.tick_index):
                    message.output.send(self.tick_index, deadline, self._payload(message))
        self.finish_tick(self.speed_kph is None, transmit)

    def _payload(self, message: Message) -> bytes:
        values = {"brake": self.reading.brake_pct}
        for name, _ in message.signals:
            if name in ("resume", "cancel"):
                left = self._pressed.get(name, 0)
                values[name] = 1.0 if left else 0.0
                self._pressed[name] = max(0, left - 1)
        return combined([codec.encode(values[name]) for name, codec in message.signals])

    def figures(self) -> tuple[Figure, ...]:
        """The driver's pedals and buttons, and the speed it hears once heard; a button only while pressed."""
        c = self.reading
        speed = self.speed_kph
        return (Figure("app_pct", "%", c.app_pct, shown="APP {:5.1f} %"),
                Figure("brake_pct", "%", c.brake_pct, shown="brake {:5.1f} %"),
                Figure("resume", "", float(c.resume), recorded=False, shown="resume" if c.resume else ""),
                Figure("cancel", "", float(c.cancel), recorded=False, shown="cancel" if c.cancel else ""),
                Figure("speed_kph", "km/h", speed,
                       shown="speed missing" if speed is None else "speed {:6.2f} km/h"))

    def status_line(self) -> str:
        return f"{status_text(self.figures(), _STATUS)} | {self.counters_text()}"


#: the figures of the status line, in its order
_STATUS = ("app_pct", "brake_pct", "resume", "cancel", "speed_kph")
