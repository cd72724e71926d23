"""The ECU node: latest APP (and brake demand) in, one fixed vehicle step, wheel-based speed out.

Tick 0 transmits the initial state (there is no interval to integrate before it); every later
tick integrates the interval that just ended with the newest APP, so an APP frame that arrives
just before a deadline is reflected in the speed sent at that deadline. Missing APP (never
received, stale, or flagged not available) means a coasting truck: APP 0 %.

Which truck is driven is the vehicle's business (ecu_sim.vehicle.drive). A vehicle with a brake
also takes the brake demand (EBC1 brake pedal position, when the DBC has it), held like APP and
0 % when missing, and a request for neutral (TC1 requested gear 0, when the DBC has it), held
like APP and dropped when missing; a vehicle with a driveline also sends the engine messages
(EEC1, ETC2).
"""

from __future__ import annotations

import math
from typing import Any

import can

from ecu_sim.bus.port import Port
from ecu_sim.bus.transmit import Output
from ecu_sim.codec.profile import Profile
from ecu_sim.codec.role import Invalid, RoleCodec
from ecu_sim.member.part import NetworkPart
from ecu_sim.nodes.figures import Figure, status_text
from ecu_sim.nodes.input import InputNode
from ecu_sim.powertrain.engine_frames import EngineFrames
from ecu_sim.powertrain.network import NUMBER_UNITS, Powertrain
from ecu_sim.runtime.held import HeldInput
from ecu_sim.vehicle.class6 import Class6Model, Class6State
from ecu_sim.vehicle.drive import Class6Vehicle, Vehicle
from ecu_sim.vehicle.model import TruckState


class Ecu(InputNode):
    CONTROLS = frozenset({"pedal_override", "message", "signal"})

    def __init__(
        self,
        port: Port,
        profile: Profile,
        output: Output,
        vehicle: Vehicle,
        hold_ticks: int,
        app_source: int | None = None,
        brake: RoleCodec | None = None,
        engine_frames: EngineFrames | None = None,
        network: NetworkPart | None = None,
        powertrain: Powertrain | None = None,
        gear_request: RoleCodec | None = None,
    ) -> None:
        super().__init__(port, profile.app, output, hold_ticks, app_source, network)
        self.vehicle = vehicle
        self.encode_speed = profile.speed.encode
        self.app_pct = 0.0
        self.app_missing = True
        self.brake = brake
        self.brake_held = HeldInput(hold_ticks)
        self.brake_demand_pct = 0.0
        #: TC1's requested gear (the transmission is the ECU's in the single-node run), held like
        #: APP: a sender gone silent gives the transmission its own schedule back
        self.gear_request = gear_request
        self.gear_held = HeldInput(hold_ticks)
        self.engine_frames = engine_frames
        #: ``--network powertrain``: the other hosted nodes and every powertrain message
        self.powertrain = powertrain
        #: APP set from the node's page (``--web``) in place of the bus's, until released (None)
        self.pedal_override_pct: float | None = None
        #: the engine's application runs (False: boot mode, and nothing it would obey moves the truck)
        application = None if network is None else network.application
        self.application_running = application is None or not application.boot

    def take_control(self, name: str, value: Any) -> None:
        """The page's pedal: the truck drives on it instead of the bus's APP until released (None)."""
        if name == "pedal_override":
            self.pedal_override_pct = value
        else:
            super().take_control(name, value)

    @property
    def state(self) -> TruckState | Class6State:
        return self.vehicle.state

    @property
    def grade_pct(self) -> float:
        return self.vehicle.grade_pct

    def handle(self, msg: can.Message) -> None:
        """As any input node; with the powertrain, whether the cruise control's APP is heard."""
        powertrain = self.powertrain
        if powertrain is not None and self.codec_in.matches(msg.arbitration_id, msg.is_extended_id):
            powertrain.commanded.heard_app(self.codec_in.source_address(msg.arbitration_id),
                                 self.tick_index + self.held.hold_ticks)
        super().handle(msg)

    def handle_other(self, msg: can.Message) -> None:
        """A brake demand frame goes to the brake input; everything else as for any input node."""
        brake = self.brake
        if (brake is not None and brake.matches(msg.arbitration_id, msg.is_extended_id)
                and not msg.is_remote_frame):
            value = brake.decode(msg.data)
            if isinstance(value, Invalid):
                self.invalid["brake_" + value.name.lower()] += 1
            else:
                self.brake_held.update(value, self.tick_index, brake.source_address(msg.arbitration_id))
            return
        gear = self.gear_request
        if (gear is not None and gear.matches(msg.arbitration_id, msg.is_extended_id)
                and not msg.is_remote_frame):
            value = gear.decode(msg.data)
            if isinstance(value, Invalid) and value is not Invalid.NOT_AVAILABLE:
                self.invalid["gear_" + value.name.lower()] += 1
            else:  # not available: no request
                self.gear_held.update(math.nan if isinstance(value, Invalid) else value, self.tick_index,
                                      gear.source_address(msg.arbitration_id))
            return
        powertrain = self.powertrain
        if powertrain is not None:
            kind = powertrain.commanded.receive(msg)
            if kind is not None:  # a command: taken, or counted as invalid
                if kind:
                    self.invalid[kind] += 1
                return
            powertrain.hear(msg)
        super().handle_other(msg)

    def prepare(self) -> None:
        """The step for the demands held now, ahead of the deadline (see ``Vehicle.prepare``)."""
        if self.tick_index:
            held = self._app()
            app = 0.0 if held is None else held
            if self.powertrain is not None and isinstance(self.vehicle, Class6Vehicle):
                # the commands of the tick before: steady ones are taken as prepared
                commanded = self.powertrain.commanded
                self.vehicle.prepare(app, self.brake_demand_pct, commanded.command, commanded.neutral)
            elif self.gear_request is not None and isinstance(self.vehicle, Class6Vehicle):
                self.vehicle.prepare(app, self._brake_demand(), neutral=self.neutral_requested())
            else:
                self.vehicle.prepare(app, self._brake_demand())

    def neutral_requested(self) -> bool:
        """Whether a TC1 heard within the hold time asks for neutral (requested gear 0)."""
        return self.gear_held.get(self.tick_index) == 0.0

    def _brake_demand(self) -> float:
        """The brake demand this tick uses: the held one, 0 % when missing or without a brake."""
        if self.brake is None:
            return self.brake_demand_pct
        brake = self.brake_held.get(self.tick_index)
        return 0.0 if brake is None else brake

    def restart(self, model: Class6Model, running: bool) -> None:
        """The engine's application restarted (``running`` False: into its boot mode): the truck
        goes on as it is, stepped by ``model``, built whole from the images its nodes run."""
        self.application_running = running
        if isinstance(self.vehicle, Class6Vehicle):
            self.vehicle.restart(model)

    def _app(self) -> float | None:
        """The APP this tick uses: the page's override, else the bus's held value (None: missing);
        none in boot mode, where no application reads the pedal."""
        if not self.application_running:
            return 0.0
        held = self.held.get(self.tick_index)
        return held if self.pedal_override_pct is None else self.pedal_override_pct

    def tick(self, deadline: float, transmit: bool) -> None:
        app = self._app()
        self.app_missing = app is None
        self.app_pct = 0.0 if app is None else app
        if self.powertrain is not None and isinstance(self.vehicle, Class6Vehicle):
            self._step_powertrain(self.powertrain, self.vehicle, transmit)
        elif self.tick_index:
            self.brake_demand_pct = self._brake_demand()
            if self.gear_request is not None and isinstance(self.vehicle, Class6Vehicle):
                self.vehicle.step(self.app_pct, self.brake_demand_pct, neutral=self.neutral_requested())
            else:
                self.vehicle.step(self.app_pct, self.brake_demand_pct)
        if self.powertrain is not None:
            self._tick_powertrain(self.powertrain, deadline, transmit)
            return
        sent = transmit and self.send(deadline, self.encode_speed(self.vehicle.state.speed_kph))
        if transmit and self.engine_frames is not None:  # the engine messages wait for the claim too
            driveline = self.vehicle.driveline()
            if driveline is not None:
                self.engine_frames.send(self.tick_index, deadline, driveline, sent)
        self.finish_tick(self.app_missing, transmit, self.vehicle.state.speed_kph)

    def _step_powertrain(self, powertrain: Powertrain, vehicle: Class6Vehicle, transmit: bool) -> None:
        """The commands decide before the truck steps (tick 0 too, which has no interval to step):
        the driver's brake demand goes to the brakes, which apply it or an XBR's."""
        driver_brake = self._brake_demand()
        commanded = powertrain.commanded
        command = commanded.decide(vehicle.state, self.app_pct, self._app_source(), driver_brake, transmit)
        self.brake_demand_pct = commanded.brake_pct(driver_brake)
        if self.tick_index:
            vehicle.step(self.app_pct, self.brake_demand_pct, command, commanded.neutral)

    def _app_source(self) -> int | None:
        """Where the APP in use comes from (None: missing, or set on the node's page)."""
        return None if self.app_missing or self.pedal_override_pct is not None else self.held.source

    def _tick_powertrain(self, powertrain: Powertrain, deadline: float, transmit: bool) -> None:
        """Every hosted node's messages that are due, the speed message on its own cycle."""
        tick = self.tick_index
        state = self.vehicle.state
        assert isinstance(state, Class6State)  # the powertrain is the class6 truck's
        driveline = self.vehicle.driveline()
        assert driveline is not None
        readings = powertrain.measure(tick, driveline, state, self.app_pct, self._app_source())
        if transmit:
            if powertrain.role_due(tick):
                self.send(deadline, powertrain.role_payload(self.encode_speed(state.speed_kph), readings))
            powertrain.send(tick, deadline, readings)
        self.finish_tick(self.app_missing, transmit, state.speed_kph)
        powertrain.finish(tick, transmit, state.speed_kph)

    def figures(self) -> tuple[Figure, ...]:
        """The truck as the ECU drives it; the driveline's and the powertrain's figures only where
        the truck has them, so a reader's columns follow what the truck is. Built positionally:
        a trace asks at every tick."""
        vehicle = self.vehicle
        state, driveline = vehicle.state, vehicle.driveline()
        figures: tuple[Figure, ...] = (
            Figure("speed_kph", "km/h", state.speed_kph, True, "speed {:6.2f} km/h"),
            Figure("app_pct", "%", self.app_pct, True,
                   "APP missing (coasting)" if self.app_missing else "APP {:5.1f} %"),
            Figure("app_missing", "", float(self.app_missing)),
            Figure("grade_pct", "%", vehicle.grade_pct, True, "grade {:+.1f} %"),
            Figure("distance_m", "m", state.distance_m, True, "distance {:8.0f} m"),
            Figure("brake_pct", "%", self.brake_demand_pct, False,
                   "" if driveline is None else "brake {:3.0f} %"),
            Figure("pedal_override_pct", "%", self.pedal_override_pct, False))
        if driveline is not None:
            figures += (Figure("elevation_m", "m", vehicle.elevation_m or 0.0, False),
                        Figure("gear", "", driveline.gear, False, "gear {}"),
                        Figure("engine_rpm", "rpm", driveline.engine_rpm, False, "{:4.0f} rpm"),
                        Figure("fuel_rate_lph", "L/h", driveline.fuel_rate_lph, False),
                        Figure("fuel_used_l", "L", driveline.fuel_used_l, False))
        if self.powertrain is not None:  # --network powertrain: who controls the engine, and how
            figures += tuple([Figure(name, NUMBER_UNITS[name], value)
                              for name, value in self.powertrain.numbers().items()])
        return figures

    def state_bits(self) -> tuple[float, float, float, float]:
        """Speed (m/s), distance, APP and grade unrounded, for the state hash: every bit of the
        floats the truck steps with, which a figure in a reader's unit could round away."""
        state = self.vehicle.state
        return state.speed_mps, state.distance_m, self.app_pct, self.grade_pct

    def status_line(self) -> str:
        hosted = "" if self.powertrain is None else " | " + self.powertrain.status_text()
        return f"{status_text(self.figures(), _STATUS)} | {self.counters_text()}{hosted}"


#: the figures of the status line, in its order
_STATUS = ("speed_kph", "app_pct", "grade_pct", "gear", "engine_rpm", "brake_pct", "distance_m")
