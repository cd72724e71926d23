"""What the ECU and the CCM share: turning received frames into one held input, and counting.

A node listens for exactly one role (the ECU for APP, the CCM for speed) and sends the other.
Every received frame lands in exactly one bucket, so nothing on the bus can disturb the loop:

- ``other``: a frame of another message (other nodes' traffic, floods), ignored by the node; its
  J1939 network part (when it has one) takes what is addressed to it (requests, claims, transport);
- ``invalid`` by kind: a frame of the input role that carries no usable value. ``remote_frame``,
  ``fd_frame`` (CAN FD where the DBC defines a classic frame), ``wrong_source`` (filtered out by
  ``--app-source``/``--speed-source``), ``short_frame`` (too short to hold the signal),
  ``wrong_dlc`` (a classic frame long enough for the signal whose length is not the DBC's: it is
  not the message the DBC defines, so its bytes are not trusted), and the codec's
  ``out_of_range``, ``error_indicator`` and ``not_available``. Only the last two change anything:
  the sender says it has no value, so the input is missing at once instead of after the hold;
- accepted: a clean value, which becomes the held input.

Error frames and our own echoes never get here: the port drops and counts them. Two source
addresses sending the input role within one period (a conflict or a spoof) are reported.

Time of the held input is counted in ticks, not seconds: a value handled before tick ``k`` is
used by ticks ``k .. k + n - 1``, where ``n`` is the whole periods in the timeout
(:func:`ecu_sim.runtime.ticks.ticks_in`, at least one), and tick
``k + n`` finds the input missing unless a newer value came. The frame arrived after tick
``k - 1``, so at tick ``k + n - 1`` it is less than ``n`` periods old: a value is never used
when it is older than the timeout. With the default of three periods, the frame handled before
the tick at 1.0 s is used at 1.0, 1.1 and 1.2 s and is missing at 1.3 s. The rule is the same in
real and in virtual time, and it is what makes a recorded run replayable bit for bit: which tick
a frame fell before is all that has to be recorded about its timing.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from typing import Any

import can

from ecu_sim.bus.port import Port
from ecu_sim.bus.transmit import Output
from ecu_sim.codec.role import Invalid, RoleCodec
from ecu_sim.member.part import NetworkPart
from ecu_sim.nodes.figures import Figure
from ecu_sim.runtime.held import HeldInput

log = logging.getLogger(__name__)

#: Most frames one drain handles: a flood faster than the node can decode must not starve the
#: tick. The rest stays queued for the next wait (and the kernel drops what overflows).
DRAIN_LIMIT = 256


class InputNode:
    """Base of the ECU and the CCM: a port, the codec of the input role and its held value."""

    #: the option that restricts the input role to one source address
    source_option = "--app-source"
    #: the person's controls (ecu_sim.controls) this kind of node takes between ticks, by name
    CONTROLS: frozenset[str] = frozenset()

    def __init__(
        self,
        port: Port,
        codec_in: RoleCodec,
        output: Output,
        hold_ticks: int,
        source: int | None = None,
        network: NetworkPart | None = None,
    ) -> None:
        self.port = port
        #: the J1939 network part, which takes the frames of the network layer first
        self.network = network
        #: the input's last frame said "error" (J1939 error indicator), so it is missing in error
        self.input_error = False
        self.codec_in = codec_in
        self.output = output
        self._output_send = output.send
        #: ticks that use a value, counting the first one: never a value older than the timeout
        self.hold_ticks = hold_ticks
        self.held = HeldInput(hold_ticks)
        self.source = source
        #: index of the next tick: a frame handled now is used from this tick on
        self.tick_index = 0
        #: frames of the input role that were not used, by kind (not_available, wrong_dlc, ...)
        self.invalid: Counter[str] = Counter()
        self.accepted = 0
        #: frames of other messages: the rest of the bus, or a flood
        self.other = 0
        #: periods in which two source addresses sent the input role
        self.source_conflicts = 0
        #: drains that stopped at DRAIN_LIMIT with frames still queued (a flood)
        self.overruns = 0
        self._fd_allowed = bool(codec_in.message.is_fd)
        #: the DBC's length of the input message; a classic frame of another length is not it
        self._length: int = codec_in.message.length
        self._last_source: int | None = None
        self._last_source_tick = -1
        self._conflict_tick = -1
        self._reported: set[tuple[int, int]] = set()

    def poll(self, timeout_s: float) -> None:
        msg = self.port.recv(timeout_s)
        if msg is not None:
            self.handle(msg)

    def prepare(self) -> None:
        """Nothing of the coming tick is worth doing ahead here; the ECU steps its truck."""

    def drain(self) -> None:
        """Handle what has arrived, at most DRAIN_LIMIT frames, so a flood cannot hold up a tick."""
        recv, handle = self.port.recv, self.handle
        for _ in range(DRAIN_LIMIT):
            msg = recv(0.0)
            if msg is None:
                return
            handle(msg)
        self.overruns += 1

    def handle(self, msg: can.Message) -> None:
        """Take a frame's value into the held input if, and only if, it is a clean input value;
        a frame of another message goes to :meth:`handle_other`."""
        codec = self.codec_in
        if not codec.matches(msg.arbitration_id, msg.is_extended_id):
            self.handle_other(msg)
            return
        if msg.is_remote_frame:
            self.invalid["remote_frame"] += 1
            return
        if msg.is_fd and not self._fd_allowed:
            self.invalid["fd_frame"] += 1
            return
        source = codec.source_address(msg.arbitration_id)
        if source is not None and source != self._last_source:
            self._source_changed(source)
        self._last_source_tick = self.tick_index
        if self.source is not None and source != self.source:
            self.invalid["wrong_source"] += 1
            return
        data = msg.data
        if len(data) != self._length and not msg.is_fd and len(data) >= codec.min_length:
            self.invalid["wrong_dlc"] += 1
            return
        value = codec.decode(data)
        if isinstance(value, Invalid):
            self.invalid[value.name.lower()] += 1
            if value in (Invalid.NOT_AVAILABLE, Invalid.ERROR_INDICATOR):
                # The sender says it has no value: the input is missing now, not after the hold.
                self.held.clear()
                self.input_error = value is Invalid.ERROR_INDICATOR
            return
        self.input_error = False
        self.accepted += 1
        self.held.update(value, self.tick_index, source)

    def handle_other(self, msg: can.Message) -> None:
        """A frame of another message than the input role's: the J1939 part takes what is its own,
        the rest is counted. A node that listens for more (the ECU's brake demand, the CCM's gears
        and driver) takes its frames first and hands on the rest."""
        if self.network is not None:
            self.network.receive(msg)
        self.other += 1

    def _source_changed(self, source: int) -> None:
        """A frame of the input role from another address than the previous one."""
        previous, tick = self._last_source, self.tick_index
        self._last_source = source
        if previous is None or self._last_source_tick != tick or self._conflict_tick == tick:
            return  # the first sender, a sender that took over, or this period already counted
        self._conflict_tick = tick
        self.source_conflicts += 1
        pair = (min(previous, source), max(previous, source))
        if pair in self._reported:
            return
        self._reported.add(pair)
        codec = self.codec_in
        if self.source is None:
            outcome = f"both are accepted, the newest frame wins; choose one with {self.source_option} SA"
        else:
            outcome = f"only 0x{self.source:02X} is accepted ({self.source_option})"
        log.warning("source address conflict at tick %d: %s.%s comes from 0x%02X and 0x%02X in the "
                    "same period (a second sender or a spoof); %s", tick, codec.message_name,
                    codec.signal_name, previous, source, outcome)

    def send(self, deadline: float, data: bytes) -> bool:
        """Send this tick's payload through the output (a fault injector, or the transmitter) if
        the node may send: always, or once its address claim stands. Whether it went; the node's
        other messages follow it or stay back with it."""
        network = self.network
        if network is None:
            self._output_send(self.tick_index, deadline, data)
            return True
        if not (network.open or network.may_send(self.tick_index)):
            return False
        self._output_send(self.tick_index, deadline, data)
        network.latest = data
        return True

    def finish_tick(self, input_missing: bool, transmit: bool, speed_kph: float = math.nan) -> None:
        """The tick is done: the J1939 part ticks, and a frame handled from now on is used from
        the next tick.

        The part counts an input missing for longer than the hold as a fault. An overdue tick
        (``transmit`` False) skips the part, as it skips the node's frame: a late loop must not
        send the layer's frames as a burst (broadcast packets closer than the standard's minimum
        gap). The layer's timers compare tick numbers, so a skipped tick only delays what was due,
        and frames that arrived meanwhile wait for the next tick. ``speed_kph``: the vehicle's
        speed as the node knows it, which its diagnostics' conditions read (NaN: not known).
        """
        network, tick = self.network, self.tick_index
        if network is not None:
            network.speed_kph = speed_kph
        if network is not None and transmit and (input_missing or tick >= network.due_from
                                                 or self.port.alerts != network.alerts_seen):
            startup = network.startup_ticks  # the peer claims its address too
            past_timeout = input_missing and tick >= self.hold_ticks + startup
            network.tick(tick, past_timeout, input_missing and self.input_error)
        self.tick_index = tick + 1

    def figures(self) -> tuple[Figure, ...]:
        """What the model holds: each node kind says its own; the base has no model of its own."""
        return ()

    def take_control(self, name: str, value: Any) -> None:
        """A checked control of :attr:`CONTROLS`, between two ticks; the base takes none."""
        raise ValueError(f"{type(self).__name__} takes no control {name!r}")

    @property
    def releases_on_stop(self) -> bool:
        """Whether the node commands others and hands them back before it stops; the base does not."""
        return False

    def counter_figures(self) -> tuple[Figure, ...]:
        """The counters the status line shows, by name, for the signals file's counters group."""
        port = self.port.counters
        return (Figure("rx", "frames", port.rx), Figure("tx", "frames", port.tx),
                Figure("echo", "frames", port.echo), Figure("tx_errors", "frames", port.tx_errors),
                Figure("tx_dropped", "frames", port.tx_dropped),
                Figure("invalid", "frames", self.invalid_total), Figure("other", "frames", self.other),
                Figure("conflicts", "periods", self.source_conflicts),
                Figure("overruns", "drains", self.overruns))

    @property
    def invalid_total(self) -> int:
        return sum(self.invalid.values())

    def counters_text(self) -> str:
        c = self.port.counters
        text = f"rx {c.rx} tx {c.tx} invalid {self.invalid_total}"
        if self.invalid:
            text += " (" + ", ".join(f"{kind} {n}" for kind, n in sorted(self.invalid.items())) + ")"
        if self.other:
            text += f" other {self.other}"
        if self.source_conflicts:
            text += f" conflicts {self.source_conflicts}"
        if self.overruns:
            text += f" overruns {self.overruns}"
        if self.network is not None:
            text += " | " + self.network.status_text()
        return text
