"""The key figures of one run: how well it held the set speed, how hard it worked, what it saw.

During the run a tick observer only appends the ECU's speed and APP to two arrays and a port
listener feeds every frame on the ECU's port (its speed frames and the pedal's APP frames, the
whole two-node bus) to a hash: the simulation's hot loop pays a few list appends per tick, and the
figures are computed once, at the end, from the series.

Settling is a band around the set speed (``settle_band_kph``): the settle time is the first
moment after which the speed never leaves the band again; errors after settling are measured from
then on. A run that never settles has no settle time and no errors after settling (empty cells),
which ``campaign compare`` counts as worse than any number.
"""

from __future__ import annotations

import hashlib
import math
import operator
from array import array
from collections.abc import Sequence
from typing import Any

import can

from ecu_sim.bus.listener import Direction
from ecu_sim.runs.simulation import Simulation
from ecu_sim.runtime.loop import TickObserver
from ecu_sim.vehicle.params import KPH_PER_MPS

#: the figures of a row, in column order, with what is better: "lower", "higher" or "" (no order)
FIGURES: dict[str, str] = {
    "settle_time_s": "lower",
    "overshoot_kph": "lower",
    "error_max_kph": "lower",
    "error_rms_kph": "lower",
    "app_total_variation_pct": "lower",
    "app_at_0_s": "lower",
    "app_at_100_s": "lower",
    "wheel_energy_kwh": "lower",
    "faults_injected": "",
    "invalid_frames": "",
    "final_speed_kph": "",
    "distance_m": "",
    "ticks": "",
    "frame_hash": "",
}


class Probe:
    """Collects the series of one run; attach it with ``Simulation(..., watch=Probe.watch)``."""

    def __init__(self, simulation: Simulation) -> None:
        self.simulation = simulation
        self.speed_mps = array("d")
        self.app_pct = array("d")
        #: identifier and payload of every frame, in order; hashed once the run is over
        self._frames: list[Any] = []
        self._keep = self._frames.extend
        self._ecu = simulation.ecu
        self._append_speed = self.speed_mps.append
        self._append_app = self.app_pct.append
        simulation.ecu.port.add_listener(self)

    @classmethod
    def watch(cls, simulation: Simulation) -> Sequence[TickObserver]:
        return [cls(simulation)]

    def on_tick(self, tick: int, now: float, transmitted: bool) -> None:
        ecu = self._ecu
        self._append_speed(ecu.state[0])
        self._append_app(ecu.app_pct)

    def on_frame(self, msg: can.Message, direction: Direction) -> None:
        self._keep((msg.arbitration_id, direction is Direction.NOT_SENT, bytes(msg.data)))

    def frame_hash(self) -> str:
        """A hash of every frame's identifier and payload in order, a frame that was not sent marked."""
        frames = self._frames
        text = b"".join(b"%x%s%s" % (ident, b"-" if lost else b"#", data)
                        for ident, lost, data in zip(frames[::3], frames[1::3], frames[2::3], strict=True))
        return hashlib.blake2b(text, digest_size=8).hexdigest()


def figures(probe: Probe, set_speed_kph: float | None, band_kph: float) -> dict[str, str]:
    """The row of key figures of a finished run, as text; empty where a figure does not apply."""
    sim = probe.simulation
    period = sim.settings.run.resolved_period_s
    speeds = [v * KPH_PER_MPS for v in probe.speed_mps]
    app = probe.app_pct
    row = dict.fromkeys(FIGURES, "")
    if set_speed_kph is not None and speeds:
        row.update(_tracking(speeds, set_speed_kph, band_kph, period))
    row["app_total_variation_pct"] = _num(sum(map(abs, map(operator.sub, app[1:], app))))
    row["app_at_0_s"] = _num(len([a for a in app if a <= 0.0]) * period)
    row["app_at_100_s"] = _num(len([a for a in app if a >= 100.0]) * period)
    row["wheel_energy_kwh"] = _num(wheel_energy_kwh(probe, period))
    row["faults_injected"] = str(sum(sim.faults.injected.values()) if sim.faults is not None else 0)
    row["invalid_frames"] = str(sim.ecu.invalid_total + (sim.ccm.invalid_total if sim.ccm else 0))
    row["final_speed_kph"] = _num(sim.ecu.state.speed_kph)
    row["distance_m"] = _num(sim.ecu.state.distance_m)
    row["ticks"] = str(len(speeds))
    row["frame_hash"] = probe.frame_hash()
    return row


def _tracking(speeds: list[float], target: float, band: float, period: float) -> dict[str, str]:
    errors = [v - target for v in speeds]
    outside = next((i for i in range(len(errors) - 1, -1, -1) if abs(errors[i]) > band), None)
    start = 0 if outside is None else outside + 1
    if speeds[0] < target:
        overshoot = max(0.0, max(errors))
    elif speeds[0] > target:
        overshoot = max(0.0, -min(errors))
    else:
        overshoot = max(abs(e) for e in errors)
    found = {"overshoot_kph": _num(overshoot)}
    if start < len(errors):
        after = errors[start:]
        found["settle_time_s"] = _num(start * period)
        found["error_max_kph"] = _num(max(abs(e) for e in after))
        found["error_rms_kph"] = _num(math.sqrt(sum(e * e for e in after) / len(after)))
    return found


def wheel_energy_kwh(probe: Probe, period: float) -> float:
    """Energy delivered at the wheels: the truck model's tractive power, APP times rated power
    capped by the traction limit at low speed, summed over the ticks it was applied."""
    truck = probe.simulation.settings.truck
    power_per_pct = truck.rated_power_kw * 10.0  # W per % APP
    traction_n = truck.traction_limit_mu * truck.mass_kg * truck.gravity_mps2
    speeds = probe.speed_mps
    # tick i integrates the interval before it with tick i's APP
    watts = sum(min(a * power_per_pct, traction_n * 0.5 * (v0 + v1))
                for a, v0, v1 in zip(probe.app_pct[1:], speeds, speeds[1:], strict=False))
    return watts * period / 3.6e6


def _num(value: float) -> str:
    """A figure as text: fixed significant digits, so identical runs give identical files."""
    return f"{value:.9g}"
