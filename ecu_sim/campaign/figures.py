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

import can

from ecu_sim.bus.listener import Direction
from ecu_sim.campaign.row import Figure
from ecu_sim.cosim.stepper import Stepper
from ecu_sim.runs.private import PrivateRun
from ecu_sim.runs.simulation import Simulation
from ecu_sim.runtime.loop import TickObserver
from ecu_sim.vehicle.class6 import STANDARD_PAYLOAD_KG, Class6Params, Class6State
from ecu_sim.vehicle.fuel import CO2_G_PER_L
from ecu_sim.vehicle.params import KPH_PER_MPS

#: engine speed to angular speed: 2 pi / 60
RAD_S_PER_RPM = 0.10471975511965977

#: the runs a probe watches: a simulation, the ECU in real time beside a controller under test, or
#: the ECU stepped by a co-simulation peer
Run = Simulation | PrivateRun | Stepper

#: the figures of a row, in column order, with what is better: "lower", "higher" or "" (no order)
FIGURES: dict[str, str] = {
    "settle_time_s": "lower",
    "overshoot_kph": "lower",
    "error_max_kph": "lower",
    "error_rms_kph": "lower",
    "speed_dev_rms_kph": "lower",
    "app_total_variation_pct": "lower",
    "app_at_0_s": "lower",
    "app_at_100_s": "lower",
    "wheel_energy_kwh": "lower",
    "fuel_l": "lower",
    "fuel_l_per_100km": "lower",
    "co2_g_per_tkm": "lower",
    "neutral_s": "",
    "eco_roll_events": "",
    "faults_injected": "",
    "dtcs_raised": "lower",
    "invalid_frames": "",
    "final_speed_kph": "",
    "distance_m": "",
    "travel_time_s": "lower",
    "ticks": "",
    "frame_hash": "",
}


class Probe:
    """Collects the series of one run; attach it with ``Simulation(..., watch=Probe.watch)``."""

    def __init__(self, simulation: Run) -> None:
        self.simulation = simulation
        self.speed_mps = array("d")
        self.app_pct = array("d")
        #: the engine's output power, W, where the vehicle has an engine (class6); else stays empty
        self.engine_w = array("d")
        #: every frame's identifier and payload, in order; the frames themselves are not kept
        self.frame_ids = array("L")
        self.payloads: list[bytes | bytearray] = []
        #: positions of the frames the bus refused
        self.not_sent = array("L")
        #: ticks the class6 truck spent in neutral (TC1, eco-roll), and how often it went there
        self.neutral_ticks = 0
        self.neutral_entries = 0
        self._in_neutral = False
        self._ecu = simulation.ecu
        self._append_speed = self.speed_mps.append
        self._append_app = self.app_pct.append
        self._append_id = self.frame_ids.append
        self._append_payload = self.payloads.append
        simulation.ecu.port.add_listener(self)

    @classmethod
    def watch(cls, simulation: Simulation) -> Sequence[TickObserver]:
        return [cls(simulation)]

    def on_tick(self, tick: int, now: float, transmitted: bool) -> None:
        ecu = self._ecu
        state = ecu.state
        self._append_speed(state[0])
        self._append_app(ecu.app_pct)
        if isinstance(state, Class6State) and state.shift_left_s <= 0.0:  # no torque in a shift
            self.engine_w.append(max(0.0, state.engine_nm) * state.engine_rpm * RAD_S_PER_RPM)
            if state.neutral:  # in neutral, not synchronising to engage
                self.neutral_ticks += 1
                self.neutral_entries += not self._in_neutral
            self._in_neutral = state.neutral

    def on_frame(self, msg: can.Message, direction: Direction) -> None:
        if direction is Direction.NOT_SENT:
            self.not_sent.append(len(self.payloads))
        self._append_id(msg.arbitration_id)
        self._append_payload(msg.data)

    def frame_hash(self) -> str:
        """A hash of every frame's identifier, length and payload in order, and of which frames
        the bus refused."""
        digest = hashlib.blake2b(self.frame_ids.tobytes(), digest_size=8)
        digest.update(bytes(map(len, self.payloads)))
        digest.update(b"".join(self.payloads))
        digest.update(self.not_sent.tobytes())
        return digest.hexdigest()


class StopAt:
    """Ends a run after the tick at which its truck has driven ``distance_m`` (the campaign's
    ``distance_m``), so every case of a route covers the same road whatever its speed. Only the
    runs with a loop of their own take it: a co-simulation peer decides its own length."""

    def __init__(self, run: Simulation | PrivateRun, distance_m: float) -> None:
        self._run = run
        self._distance_m = distance_m

    def on_tick(self, tick: int, now: float, transmitted: bool) -> None:
        if self._run.ecu.state.distance_m >= self._distance_m:
            self._run.loop.stop()


def figures(probe: Probe, set_speed_kph: float | None, band_kph: float) -> dict[str, Figure]:
    """The key figures of a finished run, by column; None where a figure does not apply."""
    sim = probe.simulation
    period = sim.settings.run.resolved_period_s
    speeds = list(map(KPH_PER_MPS.__mul__, probe.speed_mps))
    app = probe.app_pct
    row: dict[str, Figure] = dict.fromkeys(FIGURES)
    if set_speed_kph is not None and speeds:
        row.update(_tracking(speeds, set_speed_kph, band_kph, period))
        deviations = list(map((-set_speed_kph).__add__, speeds))
        row["speed_dev_rms_kph"] = math.sqrt(sum(map(operator.mul, deviations, deviations)) / len(deviations))
    row["app_total_variation_pct"] = float(sum(map(abs, map(operator.sub, app[1:], app))))
    row["app_at_0_s"] = len([a for a in app if a <= 0.0]) * period
    row["app_at_100_s"] = len([a for a in app if a >= 100.0]) * period
    row["wheel_energy_kwh"] = float(wheel_energy_kwh(probe, period))
    row.update(fuel(sim))
    if isinstance(sim.ecu.state, Class6State):
        row["neutral_s"] = probe.neutral_ticks * period
        row["eco_roll_events"] = probe.neutral_entries
    row["faults_injected"] = sum(sim.faults.injected.values()) if sim.faults is not None else 0
    row["dtcs_raised"] = dtcs_raised(sim)
    row["invalid_frames"] = sim.ecu.invalid_total + (sim.ccm.invalid_total if sim.ccm else 0)
    row["final_speed_kph"] = float(sim.ecu.state.speed_kph)
    row["distance_m"] = float(sim.ecu.state.distance_m)
    row["ticks"] = len(speeds)
    row["travel_time_s"] = len(speeds) * period
    row["frame_hash"] = probe.frame_hash()
    return row


def fuel(sim: Run) -> dict[str, Figure]:
    """Fuel used, per 100 km and as g CO2 per tonne-km of payload, for a truck with an engine map
    (class6; none for the testbed). The payload is the standard one its test mass carries plus the
    run's ``[vehicle] payload_kg``; CO2 is EPA's per litre of diesel (docs/vehicle.md)."""
    state = sim.ecu.state
    if not isinstance(state, Class6State):
        return {}
    used, km = state.fuel_used_l, state.distance_m * 0.001
    found: dict[str, Figure] = {"fuel_l": float(used)}
    if km > 0.0:
        tonnes = (STANDARD_PAYLOAD_KG + sim.settings.vehicle.payload_kg) * 0.001
        found["fuel_l_per_100km"] = used * 100.0 / km
        found["co2_g_per_tkm"] = used * CO2_G_PER_L / (tonnes * km)
    return found


def dtcs_raised(sim: Run) -> int:
    """How often a DTC went active on the ECU and the CCM (each occurrence counts, cleared or not);
    0 where a node has no J1939 part (an 11-bit profile)."""
    total = 0
    for node in (sim.ecu, sim.ccm):
        part = None if node is None else node.network
        if part is not None:
            dtcs = part.network.dtcs
            total += sum(count for _, count in dtcs.active() + dtcs.previously_active())
    return total


def _tracking(speeds: list[float], target: float, band: float, period: float) -> dict[str, Figure]:
    # builtins over whole series (map, max, sum): a Python loop per tick would cost a case more
    # than its figures are worth
    errors = list(map((-target).__add__, speeds))
    outside = [i for i, e in enumerate(errors) if e > band or e < -band]
    start = outside[-1] + 1 if outside else 0
    if speeds[0] < target:
        overshoot = max(0.0, max(errors))
    elif speeds[0] > target:
        overshoot = max(0.0, -min(errors))
    else:
        overshoot = max(map(abs, errors))
    found: dict[str, Figure] = {"overshoot_kph": float(overshoot)}
    if start < len(errors):
        after = errors[start:]
        found["settle_time_s"] = start * period
        found["error_max_kph"] = float(max(map(abs, after)))
        found["error_rms_kph"] = math.sqrt(sum(map(operator.mul, after, after)) / len(after))
    return found


def wheel_energy_kwh(probe: Probe, period: float) -> float:
    """Energy delivered at the wheels. The testbed truck: its tractive power, APP times rated
    power capped by the traction limit at low speed, summed over the ticks it was applied. A truck
    with an engine: the engine's positive output through the transmission's and axle's efficiency."""
    if probe.engine_w:
        p = Class6Params()
        return sum(probe.engine_w) * p.transmission_efficiency * p.axle_efficiency * period / 3.6e6
    truck = probe.simulation.settings.truck
    power_per_pct = truck.rated_power_kw * 10.0  # W per % APP
    traction_n = truck.traction_limit_mu * truck.mass_kg * truck.gravity_mps2
    speeds = probe.speed_mps
    # tick i integrates the interval before it with tick i's APP, at the interval's mean speed
    demanded = map((power_per_pct).__mul__, probe.app_pct[1:])
    limit = map((0.5 * traction_n).__mul__, map(operator.add, speeds, speeds[1:]))
    return sum(map(min, demanded, limit)) * period / 3.6e6

