"""What the ECU and the CCM share: turning received frames into one held input, and counting.

A node listens for exactly one role (the ECU for APP, the CCM for speed) and sends the other.
Every frame that is not a clean value of that role is counted by kind and otherwise ignored, so
nothing on the bus can disturb the loop; only values the codec accepts reach the held input.
"""

from __future__ import annotations

from collections import Counter

import can

from ecu_sim.bus import Port, Transmitter
from ecu_sim.clock import Clock
from ecu_sim.loop import HeldInput
from ecu_sim.profile import Invalid, RoleCodec


class InputNode:
    """Base of the ECU and the CCM: a port, the codec of the input role and its held value."""

    def __init__(
        self,
        clock: Clock,
        port: Port,
        codec_in: RoleCodec,
        transmitter: Transmitter,
        timeout_s: float,
        source: int | None = None,
    ) -> None:
        self.clock = clock
        self.port = port
        self.codec_in = codec_in
        self.transmitter = transmitter
        self.held = HeldInput(timeout_s)
        self.source = source
        #: frames of the input role that were not used, by kind (not_available, short_frame, ...)
        self.invalid: Counter[str] = Counter()
        self.accepted = 0

    def poll(self, timeout_s: float) -> None:
        msg = self.port.recv(timeout_s)
        if msg is not None:
            self.handle(msg)

    def drain(self) -> None:
        recv, handle = self.port.recv, self.handle
        while (msg := recv(0.0)) is not None:
            handle(msg)

    def handle(self, msg: can.Message) -> None:
        """Take a frame's value into the held input if, and only if, it is a clean input value."""
        codec = self.codec_in
        if not codec.matches(msg.arbitration_id, msg.is_extended_id):
            return  # other traffic: counted as received by the port, nothing more
        if msg.is_remote_frame:
            self.invalid["remote_frame"] += 1
            return
        source = codec.source_address(msg.arbitration_id)
        if self.source is not None and source != self.source:
            self.invalid["wrong_source"] += 1
            return
        value = codec.decode(msg.data)
        if isinstance(value, Invalid):
            self.invalid[value.name.lower()] += 1
            if value in (Invalid.NOT_AVAILABLE, Invalid.ERROR_INDICATOR):
                # The sender says it has no value: the input is missing now, not in three periods.
                self.held.value = None
            return
        self.accepted += 1
        self.held.update(value, self.clock.now(), source)

    @property
    def invalid_total(self) -> int:
        return sum(self.invalid.values())

    def counters_text(self) -> str:
        c = self.port.counters
        return f"rx {c.rx} tx {c.tx} invalid {self.invalid_total}"
