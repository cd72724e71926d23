"""The attacker as a node of a tick loop: its own process on a real bus, or the last node of a
simulation's loop, where it sends after the truck's nodes and so repeats bit for bit."""

from __future__ import annotations

import time

from ecu_sim.attack.capture import LabelledCapture
from ecu_sim.attack.plan import AttackPlan
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
                if capture is not None:
                    capture.add(msg, label)
        if capture is not None and self.virtual:
            # what is drained before the next tick arrived during this one's period
            capture.now = (k + 1) * self.plan.period_s
