"""The attacker as its own process on a bus: a tick loop on the wall clock, nothing else.

It never runs inside an ECU's process: the command opens a bus of its own, as a device plugged
into a vehicle's diagnostic port would be a node of its own.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import can

from ecu_sim.attack.capture import LabelledCapture
from ecu_sim.attack.node import AttackerNode
from ecu_sim.attack.plan import AttackPlan
from ecu_sim.attack.spec import Attack
from ecu_sim.bus.port import Port
from ecu_sim.codec.profile import Profile
from ecu_sim.runtime.clock import MonotonicClock
from ecu_sim.runtime.loop import TickLoop


def run(bus: can.BusABC, plan: AttackPlan, ticks: int | None,
        capture: LabelledCapture | None = None) -> AttackerNode:
    """Send ``plan`` on ``bus`` for ``ticks`` ticks (None: until interrupted); the node, for its counts."""
    with Port(bus, []) as port:
        node = AttackerNode(port, plan, capture, virtual=False)
        loop = TickLoop(MonotonicClock(plan.period_s, receive_while_waiting=True), plan.period_s, [node])
        with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C ends the attack, not the process badly
            loop.run(ticks)
        return node


def plan_for(attacks: Sequence[Attack], profile: str, dbc: str | None, period_s: float,
             seed: int) -> AttackPlan:
    """The plan of ``attacks`` with frames laid out by a built-in profile's DBC or ``dbc``."""
    return AttackPlan(attacks, Profile.load(profile, dbc).database, period_s, seed)
