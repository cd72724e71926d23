"""A simulation under attack: the attacker as the last node of the loop, and its labelled capture.

Last, so it hears every frame the truck's nodes sent in a tick before it sends its own, and the
truck takes the attack at the next tick, as it would a frame that arrived during the period: the
order is fixed, so the same case gives the same frames bit for bit.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass

import can

from ecu_sim.attack.capture import LabelledCapture
from ecu_sim.attack.node import AttackerNode
from ecu_sim.attack.plan import AttackPlan
from ecu_sim.attack.spec import check_windows, parse_attack
from ecu_sim.bus.port import Port
from ecu_sim.codec.profile import Profile
from ecu_sim.settings.model import Settings


@dataclass(frozen=True)
class AttackSetup:
    """The attacks of a simulation as written (``--attack``), their seed and where to capture."""

    attacks: tuple[str, ...]
    seed: int = 0
    capture: str | None = None
    #: what the dataset's manifest calls the case (a campaign's case id)
    scenario: str = ""


def check(attacks: Sequence[str], where: str) -> None:
    """ConfigError naming ``where`` for an attack that is not one; before anything runs."""
    for text in attacks:
        parse_attack(text, where)


def attacker(stack: ExitStack, open_bus: Callable[[], can.BusABC], setup: AttackSetup, settings: Settings,
             profile: Profile, duration_s: float) -> AttackerNode:
    """The attacker node on a bus of ``open_bus`` (closed with ``stack``); ConfigError for a bad
    attack, before the bus is opened."""
    attacks = [parse_attack(text) for text in setup.attacks]
    check_windows(attacks, duration_s)
    period = settings.run.resolved_period_s
    plan = AttackPlan(attacks, profile.database, period, setup.seed)
    port = stack.enter_context(Port(open_bus(), []))
    capture = None
    if setup.capture is not None:
        capture = stack.enter_context(LabelledCapture(setup.capture, _header(setup, settings, plan)))
    return AttackerNode(port, plan, capture, virtual=True)


def _header(setup: AttackSetup, settings: Settings, plan: AttackPlan) -> dict[str, object]:
    return {"mode": "simulate", "scenario": setup.scenario, "seed": setup.seed, "period_s": plan.period_s,
            "network": settings.j1939.network, "vehicle": dataclasses.asdict(settings.vehicle),
            "attacks": plan.manifest()}
