"""The attacker as a node of a tick loop: its own process on a real bus, or the last node of a
simulation's loop, where it sends after the truck's nodes and so repeats bit for bit.

In a simulation it also labels the frames the ECU receives (``simulate --record``): the
in-process link hands every node the sent message itself, not a copy, so a received frame is one
of the attacker's exactly when it is one of the messages the attacker sent. That holds however
many ticks the ECU takes to drain a flood, and a replayed or spoofed frame equal to a genuine
one, byte for byte, is still told apart.
"""
from __future__ import annotations

import time

import can

from ecu_sim.attack.capture import LabelledCapture
from ecu_sim.attack.plan import BENIGN, AttackPlan
from ecu_sim.bus.port import Port


class AttackerNode:
    """Sends each tick's attack frames through ``port``; with a capture, writes them labelled, and
    the port's received frames as benign. ``virtual``: frames take their tick's time."""

    def __init__(self, port: Port, plan: AttackPlan, capture: LabelledCapture | None = None,
                 virtual: bool = True, labels: bool = False) -> None:
        """``labels``: remember the frames sent until the ECU receives them, for :meth:`label_of`."""
        self.port = port
        self.plan = plan
        self.capture = capture
        self.virtual = virtual
        self.labels = labels
        #: the frames sent and not yet received by the ECU, by identity: id -> (frame, label);
        #: the frame is kept so its id is not reused while it waits
        self._unheard: dict[int, tuple[can.Message, int]] = {}
        self.tick_count = 0
        self.sent = 0
        port.add_listener(plan)  # the attacks that answer the bus hear what it carried
        if capture is not None:
            port.add_listener(capture)
            capture.now = 0.0 if virtual else None

    def poll(self, timeout_s: float) -> None:
        self.port.recv(timeout_s)

    def drain(self) -> None:
        recv = self.port.recv
        while recv(0.0) is not None:
            pass

    def prepare(self) -> None:
        """Nothing to do ahead: the frames of a tick are known from the plan alone."""

    def tick(self, deadline: float, transmit: bool) -> None:
        k = self.tick_count
        self.tick_count += 1
        capture, send = self.capture, self.port.send
        if not transmit:
            self.plan.heard.clear()  # a tick that sends nothing answers nothing either
        else:
            for msg, label in self.plan.frames_at(k):
                msg.is_rx = False  # the capture marks the attacker's own frames T, as candump does
                if not self.virtual:
                    msg.timestamp = time.time()
                send(msg)
                self.sent += 1
                if self.labels:
                    self._unheard[id(msg)] = (msg, label)
                if capture is not None:
                    capture.add(msg, label)
        if capture is not None and self.virtual:
            # what is drained before the next tick arrived during this one's period
            capture.now = (k + 1) * self.plan.period_s

        self._forget_unheard()

    def label_of(self, msg: can.Message) -> int:
        """The label of a frame the ECU received (a :data:`ecu_sim.io.journal.Labeller`): the
        attack's number when it is a frame this node sent, else benign."""
        found = self._unheard.pop(id(msg), None)
        return BENIGN if found is None or found[0] is not msg else found[1]

    def _forget_unheard(self) -> None:
        """Frames the ECU never receives (its own identifiers, taken as its echo) are let go of
        once more are waiting than any drain could leave behind."""
        while len(self._unheard) > _UNHEARD_LIMIT:
            del self._unheard[next(iter(self._unheard))]


#: frames sent and not yet received that are remembered: far more than a flood leaves queued
_UNHEARD_LIMIT = 1 << 16
