"""The powertrain network on the ECU's port: the nodes beside the engine, their messages, their ticks.

With ``--network powertrain`` the ECU hosts four J1939 nodes (:mod:`ecu_sim.powertrain.members`).
The engine's network part is the ECU's own; the transmission's, the brakes' and the retarder's
are kept here. Each sees every frame the port receives (a part keeps what is addressed to it or
to everyone), answers requests for its own PGNs, claims its address and sends its DM1. Each
message goes out from its sender's address, on the ticks of its ``GenMsgCycleTime``, and only
while that node's claim stands.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import can

from ecu_sim.bus.port import Port
from ecu_sim.member.part import NetworkPart
from ecu_sim.powertrain.commanded import Commanded, CruiseState
from ecu_sim.powertrain.engine_frames import EngineFrames, EngineMessage
from ecu_sim.powertrain.fms import FmsState, Lamps
from ecu_sim.powertrain.live import LiveMessages
from ecu_sim.powertrain.members import FIRST_CONSTANT, Readings
from ecu_sim.runtime.schedule import Schedule
from ecu_sim.vehicle.class6 import Class6Model, Class6State
from ecu_sim.vehicle.drive import Driveline

_RPM_PER_RAD_S = 60.0 / (2.0 * math.pi)
_NA = math.nan


#: the powertrain's numbers for the ECU's figures (fields of :class:`Readings`), with their units
NUMBER_UNITS = {"torque_mode": "", "controlling_address": "", "engine_demand_pct": "%",
                "retarder_pct": "%", "xbr_state": "", "accel_mps2": "m/s2"}


class Powertrain:
    """The transmission's, brakes' and retarder's parts, and every powertrain message."""

    def __init__(self, port: Port, engine: NetworkPart, others: Mapping[str, NetworkPart],
                 frames: EngineFrames, ccvs: EngineMessage | None, role_every: int,
                 model: Class6Model, latest: Latest, commanded: Commanded, fms: FmsState | None = None,
                 fms_fuel: bool = False) -> None:
        """``ccvs``: the rest of the speed message (its fields but the speed), which the ECU's
        own frame carries every ``role_every`` ticks. ``fms``: the totals a restbus's messages
        read after the readings; ``fms_fuel``: LFC1's fuel used is their persisted total too
        (``--fms``), so every message of the FMS set agrees."""
        self.port = port
        self.engine = engine
        self.others = dict(others)
        self.parts = {"engine": engine, **self.others}
        self.frames = frames
        self.ccvs = ccvs
        self.role_every = role_every
        self._role_schedule = Schedule(role_every)
        self._receivers = tuple(part.receive for part in self.others.values())
        self._no_retarder = (_NA,) * 5
        #: the newest readings, which a request for a message not sent yet is answered from
        self.latest = latest
        self.restart(model, commanded)
        self.fms = fms
        self._fms_fuel = fms_fuel
        #: every message by name, for a person's controls (stop, cycle, a fixed signal)
        self.live = LiveMessages(frames.messages, commanded.period_s)

    def restart(self, model: Class6Model, commanded: Commanded) -> None:
        """The truck's model and the control functions, built whole from the calibrations the
        nodes run (at the start, and when a node's application restarts from another image);
        the constants the messages carry follow them."""
        self.model = model
        #: the received commands and what they ask of the engine, retarder and brakes
        self.commanded = commanded
        p = model.params
        engine_model = model.engine
        self._reference = engine_model.reference_nm
        self._idle_torque_pct = engine_model.full.at(p.idle_rpm) * 100.0 / self._reference
        self._output_rpm_per_mps = p.axle_ratio / p.tire_radius_m * _RPM_PER_RAD_S
        self._brake_limit = -p.max_brake_decel_g * p.gravity_mps2
        self._scale = 100.0 / self._reference
        constants = {**_map_points(model), "reference_nm": self._reference, "idle_rpm": p.idle_rpm,
                     "idle_torque_pct": self._idle_torque_pct, "high_idle_rpm": p.governed_rpm,
                     "clutch_switch": 0.0, "set_speed_kph": _NA, "parking_brake": 0.0,
                     "relative_speed_kph": 0.0, **_retarder_map(commanded)}
        self._constants = tuple(constants[name] for name in Readings._fields[FIRST_CONSTANT:])
        #: the brakes' fields without such a node: not available
        self._no_brakes = (_NA, _NA, self._brake_limit, _NA, 0.0, 0.0)

    def hear(self, msg: can.Message) -> None:
        """A frame that is not a command: the other nodes' network layers keep what is theirs (the
        engine's is the ECU's own)."""
        if msg.is_extended_id:
            for receive in self._receivers:
                receive(msg)

    def measure(self, tick: int, driveline: Driveline, state: Class6State, app_pct: float,
                app_source: int | None) -> Readings:
        """The tick's readings from the truck's state and the demands it drove with.

        Built in :class:`Readings`' order at every tick (ETC1 goes every 10 ms), so positionally:
        the constant tail is made once."""
        p = self.model.params
        scale = self._scale
        rpm = state.engine_rpm
        drag = self.model.engine.motoring.at(rpm)  # indicated torque: the motoring drag added back
        gear, out_of_gear = driveline.gear, state.neutral  # neutral is gear 0
        shifting = gear != driveline.selected
        commanded = self.commanded
        cruise = commanded.cruise
        active = 0.0 if cruise is CruiseState.OFF else 1.0
        enable = 1.0 if active or tick < commanded.cruise_heard_until else 0.0
        request = commanded.engine_request
        driven = request.controller == self.engine.network.address and app_pct > 0.0
        controller = float(app_source if driven and app_source is not None else request.controller)
        retarder = commanded.retarder_output
        brakes = commanded.brake_output
        full = self.model.engine.full.at(rpm)
        output_rpm = state.speed_mps * self._output_rpm_per_mps
        ratio = p.gear_ratios[state.gear - 1] if gear else 0.0
        lockup = 1.0 if gear > 1 or output_rpm * ratio >= p.converter.lockup_rpm else 0.0
        driver_brake = commanded.driver_brake_pct
        # the brake switches are the driver's pedal's (an ACC watching them cancels on them); the
        # foundation brakes' use is whatever applies them, an XBR too
        switch = 1.0 if driver_brake > 0.0 else 0.0
        braking = 1.0 if commanded.brake_pct(driver_brake) > 0.0 else 0.0
        variable = (
            gear, driveline.selected, rpm, (state.engine_nm - drag) * scale, (state.demand_nm - drag) * scale,
            *driveline[5:],
            float(request.mode), controller, (state.engine_demand_nm - drag) * scale, app_pct,
            max(state.engine_nm, 0.0) * 100.0 / full if full > 0.0 else 0.0, -drag * scale,
            active, enable, switch, float(cruise),
            output_rpm, output_rpm * ratio, 1.0 if shifting else 0.0, lockup,
            0.0 if shifting or out_of_gear else 1.0, ratio,
            driver_brake, switch, state.speed_kph,
            *(self._no_brakes if brakes is None else (
                float(brakes.state), float(brakes.active), brakes.accel_limit_mps2, float(brakes.controller),
                braking, brakes.retarder_selection_pct)),
            *(self._no_retarder if retarder is None else (
                retarder.actual_pct, float(retarder.mode), retarder.intended_pct, float(retarder.controller),
                retarder.max_available_pct)),
            state.accel_mps2)
        readings = Readings._make(variable + self._constants)
        fms = self.fms
        if fms is not None:
            lamps = Lamps(readings.parking_brake, readings.retarder_pct, bool(self.engine.active_dtcs()))
            fms.step(tick, state.speed_kph, readings.fuel_used_l, rpm, readings.load_pct, lamps)
            if self._fms_fuel:
                readings = readings._replace(fuel_used_l=fms.values.total_fuel_l)
        self.latest.readings = readings
        return readings

    def numbers(self) -> dict[str, float]:
        """The tick's powertrain figures by name (see :data:`NUMBER_UNITS`), for the ECU's figures:
        not available before the first tick, so a reader that lays out its columns before the
        run still finds every name."""
        r = self.latest.readings
        if r is None:
            return dict.fromkeys(NUMBER_UNITS, _NA)
        return {name: getattr(r, name) for name in NUMBER_UNITS}

    def role_due(self, tick: int) -> bool:
        """Whether the ECU's own frame goes at ``tick`` (a transmitted tick), by the messages' one
        schedule (:class:`~ecu_sim.runtime.schedule.Schedule`)."""
        return self._role_schedule.due(tick)

    def role_payload(self, data: bytes, readings: Readings) -> bytes:
        """The ECU's own frame (the speed) with the rest of its message's fields filled in."""
        ccvs = self.ccvs
        if ccvs is None:
            return data
        rest = ccvs.payload(readings)
        return (int.from_bytes(data, "little") & int.from_bytes(rest, "little")).to_bytes(len(data), "little")

    def send(self, tick: int, deadline: float, readings: Readings) -> None:
        """Every message due at ``tick``, each from its node while that node's claim stands."""
        fms = self.fms
        self.frames.send(tick, deadline, readings if fms is None else readings + fms.carried)

    def finish(self, tick: int, transmit: bool, speed_kph: float = _NA) -> None:
        """The other nodes' network layers tick (the engine's ticks with the ECU): skipped as the
        ECU skips its own, while nothing is due and the port has no new alert. Then the FMS
        totals that fell due are written, every frame of the tick being out by now.
        ``speed_kph``: the truck's, which each node's diagnostics' conditions read."""
        if transmit:
            alerts = self.port.alerts
            for part in self.others.values():
                part.speed_kph = speed_kph
                if tick >= part.due_from or alerts != part.alerts_seen:
                    part.tick(tick, False, False)
        if self.fms is not None:
            self.fms.save_due()

    def status_text(self) -> str:
        return " | ".join(f"{role} {part.status_text()}" for role, part in self.others.items())


#: RC's retarder map (rpm field, percent field): idle, the highest speed, two points, the peak
_RETARDER_POINTS = (("retarder_idle_rpm", "retarder_idle_pct"),
                    ("retarder_max_rpm", "retarder_max_rpm_pct"),
                    ("retarder_point3_rpm", "retarder_point3_pct"),
                    ("retarder_point4_rpm", "retarder_point4_pct"),
                    ("retarder_peak_rpm", "retarder_peak_pct"))


def _retarder_map(commanded: Commanded) -> dict[str, float]:
    """RC's retarder map, each point's braking torque in percent of the reference torque
    (negative), and the reference itself; not available without a retarder."""
    if commanded.retarder is None:
        return {name: _NA for pair in _RETARDER_POINTS for name in pair} | {"retarder_reference_nm": _NA}
    retarder = commanded.retarder[1]
    reference, points = retarder.reference_nm, retarder.points
    peak = max(points, key=lambda point: point[1])
    between = [point for point in points[1:-1] if point != peak][:2]
    between += [(_NA, 0.0)] * (2 - len(between))
    found: dict[str, float] = {"retarder_reference_nm": reference}
    for (rpm_name, pct_name), (rpm, torque) in zip(_RETARDER_POINTS, [points[0], points[-1], *between, peak],
                                                   strict=True):
        found[rpm_name], found[pct_name] = rpm, -torque * 100.0 / reference
    return found


class Latest:
    """The newest readings, which a Request for a message is answered from."""

    def __init__(self) -> None:
        self.readings: Readings | None = None


def _map_points(model: Class6Model) -> dict[str, float]:
    """EC1's engine map: points 2 to 5 are the full-load curve's corners between idle and the
    governor (speed, torque in percent of the reference), with the inertia and torque limit."""
    p = model.params
    reference = model.engine.reference_nm
    corners = [point for point in p.full_load if p.idle_rpm < point[0] < p.governed_rpm][:4]
    corners += [(_NA, _NA)] * (4 - len(corners))
    points = {}
    for number, (rpm, torque) in enumerate(corners, start=2):
        points[f"point{number}_rpm"] = rpm
        points[f"point{number}_pct"] = torque * 100.0 / reference
    return {**points, "inertia_kg_m2": p.engine_inertia_kg_m2, "default_limit_nm": reference}
