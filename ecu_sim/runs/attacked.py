"""A run under attack in virtual time: the attacker as the last node of the loop, and its capture.

Last, so it hears every frame the truck's nodes sent in a tick before it sends its own, and the
truck takes the attack at the next tick, as it would a frame that arrived during the period: the
order is fixed, so the same case gives the same frames bit for bit. ``simulate`` and ``cosim``
both build their attacker from here (the plan and the capture), so an attack is the same ticks
and frames in either.
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
    """The attacks of a run as written (``--attack``), their seed and where to capture."""

    attacks: tuple[str, ...]
    seed: int = 0
    capture: str | None = None
    #: what the dataset's manifest calls the case (a campaign's case id)
    scenario: str = ""
    #: the command that staged it, as the capture's header names it
    mode: str = "simulate"


def check(attacks: Sequence[str], where: str) -> None:
    """ConfigError naming ``where`` for an attack that is not one; before anything runs."""
    for text in attacks:
        parse_attack(text, where)


def plan(setup: AttackSetup, settings: Settings, profile: Profile, duration_s: float | None) -> AttackPlan:
    """The attacks on the run's ticks; ConfigError for a bad attack or a window past the run's end
    (``duration_s`` None: a run with no end, cosim's without ``--duration``)."""
    attacks = [parse_attack(text) for text in setup.attacks]
    check_windows(attacks, duration_s)
    return AttackPlan(attacks, profile.database, settings.run.resolved_period_s, setup.seed)


def capture(stack: ExitStack, setup: AttackSetup, settings: Settings, attacks: AttackPlan
            ) -> LabelledCapture | None:
    """``--capture``: the labelled capture (closed with ``stack``), None without one."""
    if setup.capture is None:
        return None
    return stack.enter_context(LabelledCapture(setup.capture, _header(setup, settings, attacks)))


def attacker(stack: ExitStack, open_bus: Callable[[], can.BusABC], setup: AttackSetup, settings: Settings,
             attacks: AttackPlan, labels: bool = False) -> AttackerNode:
    """The attacker node of ``attacks`` (:func:`plan`) on a bus of ``open_bus``, with its capture;
    both closed with ``stack``. ``labels``: it labels the frames the ECU receives (a recording's),
    which ``open_bus`` must make possible by handing every node the sent message itself."""
    port = stack.enter_context(Port(open_bus(), []))
    return AttackerNode(port, attacks, capture(stack, setup, settings, attacks), virtual=True,
                        labels=labels)


def _header(setup: AttackSetup, settings: Settings, attacks: AttackPlan) -> dict[str, object]:
    return {"mode": setup.mode, "scenario": setup.scenario, "seed": setup.seed, "period_s": attacks.period_s,
            "network": settings.j1939.network, "vehicle": dataclasses.asdict(settings.vehicle),
            "attacks": attacks.manifest()}
