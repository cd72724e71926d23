"""The attacker as a node of a tick loop: its own process on a real bus, or the last node of a
simulation's loop, where it sends after the truck's nodes and so repeats bit for bit.

Last in the loop, it also tells a recording of the loop's first node (the ECU's, ``simulate
--record``) which of the frames that node received are its own: what the first node drains
before tick k is everything sent since its tick k-1, and the attacker's frames of tick k-1 are
the last of it (nobody sends after the attacker in a tick, nobody before the first node drains);
a run in virtual time sets no receive filter, so every one of them arrives.
"""

from __future__ import annotations

import time

from ecu_sim.attack.capture import LabelledCapture
from ecu_sim.attack.plan import BENIGN, AttackPlan
from ecu_sim.bus.port import Port


class AttackerNode:
    """Sends each tick's attack frames through ``port``; with a capture, writes them labelled, and
    the port's received frames as benign. ``virtual``: frames take their tick's time."""

    def __init__(self, port: Port, plan: AttackPlan, capture: LabelledCapture | None = None,
                 virtual: bool = True) -> None:
        self.port = port
        self.plan = plan
        self.capture = capture
        self.virtual = virtual
        #: the labels of the frames sent in the tick before the latest, and in the latest
        self._before: list[int] = []
        self._latest: list[int] = []
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
        labels: list[int] = []
        self._before, self._latest = self._latest, labels
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
                labels.append(label)
                if capture is not None:
                    capture.add(msg, label)
        if capture is not None and self.virtual:
            # what is drained before the next tick arrived during this one's period
            capture.now = (k + 1) * self.plan.period_s

    def first_node_labels(self, rx: int) -> list[int]:
        """The labels of the ``rx`` frames the loop's first node received before the tick just
        run (a :data:`ecu_sim.io.journal.Labeller`): benign, then the attacker's of the tick before."""
        own = self._before
        return [BENIGN] * (rx - len(own)) + own if rx >= len(own) else own[len(own) - rx:]
