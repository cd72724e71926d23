"""What an attack did to the truck: figures of an attacked run beside its attack-free twin.

The twin is the same case without the attacker: every difference between the two runs is the
attack's, since a simulation repeats bit for bit. Per run: the largest speed deviation from the
twin, when it first exceeded EFFECT_KPH after the first attack began, the DTCs the truck's nodes
raised in their DM1 that the twin did not, and whether the cruise control was off at some tick
of the attacked run while it was on at the same tick of the twin.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence

import can

from ecu_sim.bus.listener import Direction
from ecu_sim.j1939 import dm
from ecu_sim.j1939.dm import DM1_PGN
from ecu_sim.j1939.ids import pgn_of
from ecu_sim.runs.simulation import Simulation
from ecu_sim.vehicle.params import KPH_PER_MPS

#: a deviation this large, in km/h, is the attack's effect: above any rounding in the trace
EFFECT_KPH = 1.0
#: the row's effect columns, with what is better (for a defence: a smaller effect)
EFFECT_FIGURES: dict[str, str] = {
    "attack_speed_dev_max_kph": "lower",
    "attack_time_to_effect_s": "higher",
    "attack_dtcs": "lower",
    "attack_dtc_list": "",
    "attack_cruise_disengaged": "lower",
}


class EffectProbe:
    """The series of one run an effect is computed from beside its speed (the run's Probe records
    that already): cruise on or off, DTCs raised."""

    def __init__(self, simulation: Simulation) -> None:
        self.cruise_on = array("b")
        self.dtcs: set[tuple[int, int]] = set()
        self._sim = simulation
        self.period_s = simulation.period_s
        simulation.ecu.port.add_listener(self)

    def on_tick(self, tick: int, now: float, transmitted: bool) -> None:
        ccm = self._sim.ccm
        self.cruise_on.append(1 if ccm is not None and ccm.cruise_active else 0)

    def on_frame(self, msg: can.Message, direction: Direction) -> None:
        if direction is Direction.SENT and pgn_of(msg.arbitration_id) == DM1_PGN:
            self.dtcs.update((d.spn, d.fmi) for d, _ in dm.unpack_dtcs(bytes(msg.data)))


def effect(attacked: EffectProbe, twin: EffectProbe, speeds_mps: tuple[Sequence[float], Sequence[float]],
           start: int) -> dict[str, str]:
    """The effect figures of ``attacked`` beside ``twin``, as the row's text. ``speeds_mps``: the
    two runs' speeds (their Probes', attacked first); ``start``: the tick the first attack began
    (the attacker's plan's, so the effect is timed on the ticks the attack was sent on)."""
    period_s = attacked.period_s
    deviations = [abs(a * KPH_PER_MPS - b * KPH_PER_MPS) for a, b in zip(*speeds_mps, strict=False)]
    hit = next((k for k in range(start, len(deviations)) if deviations[k] > EFFECT_KPH), None)
    disengaged = any(t and not a for a, t in zip(attacked.cruise_on, twin.cruise_on, strict=False))
    return {
        "attack_speed_dev_max_kph": f"{max(deviations, default=0.0):.3f}",
        "attack_time_to_effect_s": "" if hit is None else f"{(hit - start) * period_s:.2f}",
        "attack_dtcs": str(len(attacked.dtcs - twin.dtcs)),
        "attack_dtc_list": " ".join(f"{spn}:{fmi}" for spn, fmi in sorted(attacked.dtcs - twin.dtcs)),
        "attack_cruise_disengaged": "1" if disengaged else "0",
    }
