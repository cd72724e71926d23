"""What an attack did to the truck: figures of an attacked run beside its attack-free twin.

The twin is the same case without the attacker: every difference between the two runs is the
attack's, since a simulation repeats bit for bit. Per run: the largest speed deviation from the
twin, when it first exceeded EFFECT_KPH after the first attack began, the DTCs the truck's nodes
raised in their DM1 that the twin did not, and whether the cruise control was off at some tick
of the attacked run while it was on at the same tick of the twin.

An attack on SecurityAccess is judged on the bus, by what the attack's testers (each attack's
``source``) sent and were answered: the keys they sent until the first unlock (all of them when
none came), when it came, the lockouts (0x36) that stopped them; and CommunicationControl by the
longest the engine's EEC1 went unsent, beyond the twin's longest gap. A reflash is judged by the
engine's calibration verification number (CVN) at the start and at the end of the run.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence

import can

from ecu_sim.bus.listener import Direction
from ecu_sim.isotp.frames import FrameKind, addressed
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
    "attack_key_tries": "",
    "attack_time_to_unlock_s": "higher",
    "attack_lockouts": "",
    "attack_engine_silent_s": "lower",
    "attack_cvn_before": "",
    "attack_cvn_after": "",
}
#: the engine's EEC1 (PGN 0xF004 from address 0x00), whose silence CommunicationControl causes
_EEC1_ID = 0x0CF00400
_SEND_KEY = b"\x27\x02"
_UNLOCKED = b"\x67\x02"
_LOCKOUT = b"\x7f\x27\x36"


class Keys:
    """One tester's SecurityAccess as the bus showed it."""

    def __init__(self) -> None:
        self.tries = 0
        self.unlocked_at: int | None = None
        self.lockouts = 0


class EffectProbe:
    """The series of one run an effect is computed from beside its speed (the run's Probe records
    that already): cruise on or off, DTCs raised."""

    def __init__(self, simulation: Simulation) -> None:
        self.cruise_on = array("b")
        self.dtcs: set[tuple[int, int]] = set()
        #: by tester address: the keys it sent and what came of them
        self.keys: dict[int, Keys] = {}
        self.eec1_gap = 0
        self._sim = simulation
        self._tick = 0
        self._eec1_at = 0
        self.period_s = simulation.period_s
        self.cvn_before = self.cvn()
        simulation.ecu.port.add_listener(self)

    def cvn(self) -> int | None:
        """The CVN of the image the engine (the ECU's own node) has active now; None without one."""
        network = self._sim.ecu.network
        application = None if network is None else network.application
        return None if application is None else application.memory.cvn

    def on_tick(self, tick: int, now: float, transmitted: bool) -> None:
        ccm = self._sim.ccm
        self.cruise_on.append(1 if ccm is not None and ccm.cruise_active else 0)
        self._tick = tick + 1
        self.eec1_gap = max(self.eec1_gap, self._tick - self._eec1_at)

    def on_frame(self, msg: can.Message, direction: Direction) -> None:
        if direction is Direction.SENT and pgn_of(msg.arbitration_id) == DM1_PGN:
            self.dtcs.update((d.spn, d.fmi) for d, _ in dm.unpack_dtcs(bytes(msg.data)))
        elif direction is Direction.SENT and msg.arbitration_id == _EEC1_ID:
            self._eec1_at = self._tick
        elif (found := addressed(msg.arbitration_id)) is not None and msg.data:
            self._security(msg, direction, found.tester if direction is Direction.RECEIVED else found.target)

    def _security(self, msg: can.Message, direction: Direction, tester: int) -> None:
        data = bytes(msg.data)
        if data[0] >> 4 != FrameKind.SINGLE:
            return
        payload = data[1:1 + (data[0] & 0x0F)]
        keys = self.keys.setdefault(tester, Keys())
        if direction is Direction.RECEIVED:
            keys.tries += payload.startswith(_SEND_KEY) and keys.unlocked_at is None
        elif payload.startswith(_UNLOCKED) and keys.unlocked_at is None:
            keys.unlocked_at = self._tick
        elif payload.startswith(_LOCKOUT):
            keys.lockouts += 1


def effect(attacked: EffectProbe, twin: EffectProbe, speeds_mps: tuple[Sequence[float], Sequence[float]],
           start: int, testers: frozenset[int] = frozenset()) -> dict[str, str]:
    """The effect figures of ``attacked`` beside ``twin``, as the row's text. ``speeds_mps``: the
    two runs' speeds (their Probes', attacked first); ``start``: the tick the first attack began
    (the attacker's plan's, so the effect is timed on the ticks the attack was sent on);
    ``testers``: the addresses the attacks sent from."""
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
        **_unlock(attacked, testers, start),
        "attack_engine_silent_s": f"{max(0, attacked.eec1_gap - twin.eec1_gap) * period_s:.2f}",
        "attack_cvn_before": _hex(attacked.cvn_before),
        "attack_cvn_after": _hex(attacked.cvn()),
    }


def _hex(cvn: int | None) -> str:
    return "" if cvn is None else f"{cvn:08X}"


def _unlock(attacked: EffectProbe, testers: frozenset[int], start: int) -> dict[str, str]:
    """The attack's keys: tries until the first unlock of one of its testers, its time, lockouts."""
    ours = [keys for tester, keys in attacked.keys.items() if tester in testers]
    unlocks = [keys.unlocked_at for keys in ours if keys.unlocked_at is not None]
    return {"attack_key_tries": str(sum(keys.tries for keys in ours)),
            "attack_time_to_unlock_s": f"{(min(unlocks) - start) * attacked.period_s:.2f}" if unlocks else "",
            "attack_lockouts": str(sum(keys.lockouts for keys in ours))}
