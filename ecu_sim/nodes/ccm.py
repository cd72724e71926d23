"""The cruise control module node: latest speed in, one PI step, APP out.

Without a valid speed (never received, stale, or flagged not available) cruise control is off:
the CCM sends APP 0 % and forgets its integral, so it re-engages from a clean state instead of
releasing a wound-up integrator when speed comes back.

With a truck that has a transmission and brakes on the wire (``class6`` on the ``j1939`` profile)
the CCM does two more things, both only when its DBC has the messages:

- during a gear change (ETC2: selected gear differs from current gear) it holds its integral, so
  the speed lost to the torque interruption does not wind it up;
- on a descent where APP 0 % is not enough it asks for service braking (EBC1 brake pedal
  position), as GEM's driver model does: only while its pedal demand is 0 %, only after that has
  lasted ``BRAKE_DELAY_S`` (so it does not dither between pedal and brake), and proportional to
  the speed above the set speed plus ``BRAKE_BAND_KPH`` (the predictive controller: plus the top
  of its band, so a descent's speed is kept for the road after it).

With ``--controller predictive`` it also follows its position on the route it previews, by the
speed it hears, releases the pedal where ecu_sim.cruise.predictive says a coast pays, asks the
transmission for neutral (TC1, requested gear 0) where that coast is an eco-roll, and holds a
little above the set speed ahead of a climb. It sends TC1 every tick it sends APP, "no request"
(not available) outside an eco-roll, so the transmission's own schedule is back at once.

With a driver on the bus, the driver's pedal, brake and cruise commands act as
ecu_sim.nodes.driver_demand says (override, brake, resume).

With ``--command tsc1`` the controller's demand goes to the engine in TSC1 and to the brakes in
XBR (ecu_sim.nodes.commands). The APP it still sends is the driver's pedal alone (0 % with no
driver), as the pedal's own sensor reports it on a truck: the engine's driver's demand stays the
driver's, and its pedal input does not time out while a controller drives.
"""

from __future__ import annotations

import math
from typing import Any

import can

from ecu_sim.bus.port import Port
from ecu_sim.bus.transmit import Output
from ecu_sim.codec.profile import Profile
from ecu_sim.codec.role import Invalid, RoleCodec
from ecu_sim.cruise import pi as controller
from ecu_sim.cruise.pi import PiParams, PiState
from ecu_sim.cruise.predictive import Preview
from ecu_sim.member.part import NetworkPart
from ecu_sim.nodes.commands import Commands, Demand, xbr_demand
from ecu_sim.nodes.driver_demand import NO_DRIVER, DriverDemand, engaged_after
from ecu_sim.nodes.figures import Figure, status_text
from ecu_sim.nodes.input import InputNode

#: speed above the set speed at which braking starts, km/h
BRAKE_BAND_KPH = 2.0
#: brake demand per km/h above the band, %
BRAKE_GAIN_PCT_PER_KPH = 10.0
#: how long the pedal demand must have been 0 % before the brake is used, s
BRAKE_DELAY_S = 1.0


class Ccm(InputNode):
    source_option = "--speed-source"
    CONTROLS = frozenset({"set_speed_kph", "cruise", "pedal_override"})

    def __init__(
        self,
        port: Port,
        profile: Profile,
        output: Output,
        params: PiParams,
        set_speed_kph: float,
        dt_s: float,
        hold_ticks: int,
        speed_source: int | None = None,
        gears: tuple[RoleCodec, RoleCodec] | None = None,
        brake: tuple[RoleCodec, Output] | None = None,
        driver: DriverDemand | None = None,
        network: NetworkPart | None = None,
        preview: Preview | None = None,
        commands: Commands | None = None,
        gear_request: tuple[RoleCodec, Output] | None = None,
    ) -> None:
        super().__init__(port, profile.speed, output, hold_ticks, speed_source, network)
        #: ETC2's current and selected gear codecs, and the tick of the latest frame saying a shift is on
        self.gears = gears
        self.shift_tick = -1_000_000
        self._steady_gears = b""
        self.brake = brake
        #: TSC1 and XBR in place of APP and EBC1 (``--command tsc1``), None for APP
        self.commands = commands
        #: the controller's own demand this tick, before the driver's pedal is taken into account
        self.cruise_pct = 0.0
        #: the predictive controller's part (``--controller predictive``), None for the PI controller
        self.preview = preview
        #: the predictive controller has released the pedal: a coast (see ecu_sim.cruise.predictive)
        self.coasting = False
        #: the coast is an eco-roll: the transmission is asked for neutral (TC1)
        self.neutral = False
        #: how far above the set speed the predictive controller holds the speed ahead of a climb
        self.lift_kph = 0.0
        #: TC1's requested gear and its output, with eco-roll; its payloads: neutral, no request
        self.gear_request = gear_request
        self._tc1 = (b"", b"") if gear_request is None else (gear_request[0].encode(0.0),
                                                             gear_request[0].encode(math.nan))
        #: the predictive controller lets a descent take the speed to the top of its band
        self.brake_band_kph = BRAKE_BAND_KPH if preview is None else preview.params.over_kph
        self.brake_pct = 0.0
        self._brake_sent: tuple[float, bytes] = (-1.0, b"")
        self._app_zero_ticks = 0
        self.params = params
        self.set_speed_kph = set_speed_kph
        self.dt_s = dt_s
        self.encode_app = profile.app.encode
        self.pi_state = PiState()
        self.app_pct = 0.0
        self.speed_kph: float | None = None
        #: the driver's frames, when the CCM listens for a driver
        self.driver = driver
        #: cruise is on unless the driver braked or cancelled (and did not resume since)
        self.engaged = True
        #: the driver's pedal is above the controller's demand while cruise is on
        self.override = False
        #: a pedal pressed from the node's page (``--web``), a driver's pedal like the one on the bus
        self.pedal_override_pct: float | None = None

    def restart(self, params: PiParams) -> None:
        """The CCM's application restarted from another calibration: its controller is built
        again from ``params`` and starts afresh (an ECU's restart loses its integrator)."""
        self.params = params
        self.pi_state = PiState()

    def take_control(self, name: str, value: Any) -> None:
        """The page's set speed, cruise switch or pedal (a driver's pedal: the higher demand wins)."""
        if name == "set_speed_kph":
            self.set_speed_kph = value
        elif name == "cruise":
            self.engaged = value
        elif name == "pedal_override":
            self.pedal_override_pct = value
        else:
            super().take_control(name, value)

    @property
    def releases_on_stop(self) -> bool:
        """A CCM that commands by TSC1 and XBR hands the engine and the brakes back."""
        return self.commands is not None

    @property
    def cruise_active(self) -> bool:
        return self.speed_kph is not None and self.engaged

    @property
    def shifting(self) -> bool:
        """A gear change was reported within the hold time."""
        return self.tick_index - self.shift_tick < self.hold_ticks

    def handle_other(self, msg: can.Message) -> None:
        """The driver's frames first, then ETC2, which tells whether a shift is on; everything
        else as for any input node."""
        if self.driver is not None and self.driver.take(msg, self.tick_index):
            self.other += 1
            return
        gears = self.gears
        if gears is not None and gears[0].matches(msg.arbitration_id, msg.is_extended_id):
            if msg.data == self._steady_gears:
                return  # the same frame as the latest one that reported no shift
            current, selected = gears[0].decode(msg.data), gears[1].decode(msg.data)
            if current == selected:
                self._steady_gears = bytes(msg.data)
            if not isinstance(current, Invalid) and not isinstance(selected, Invalid) and current != selected:
                self.shift_tick = self.tick_index
            return
        super().handle_other(msg)

    def tick(self, deadline: float, transmit: bool) -> None:
        self.speed_kph = speed = self.held.get(self.tick_index)
        view = NO_DRIVER if self.driver is None else self.driver.view(self.tick_index)
        if view is not NO_DRIVER:  # without a driver nothing engages or releases cruise
            self.engaged = engaged_after(self.engaged, view, speed is not None)
        pedal = view.pedal_pct
        if self.pedal_override_pct is not None:
            pedal = max(pedal, self.pedal_override_pct)
        if self.preview is not None and speed is not None:
            decision = self.preview.update(speed, self.set_speed_kph, self.dt_s)
            self.coasting, self.lift_kph = decision.coasting, decision.lift_kph
            self.neutral = decision.coasting and decision.neutral and self.gear_request is not None
        cruise_app = 0.0
        if speed is None or not self.engaged or self.coasting:  # a coast: the PI starts afresh after it
            self.pi_state = PiState()
        else:
            cruise_app, state = controller.step(
                self.params, self.pi_state, self.set_speed_kph + self.lift_kph, speed, self.dt_s)
            if not (pedal > cruise_app or (self.gears is not None and self.shifting)):  # else frozen
                self.pi_state = state
        self.override = pedal > cruise_app and speed is not None and self.engaged
        self.app_pct = cruise_app if cruise_app >= pedal else pedal
        self.cruise_pct = cruise_app
        if transmit and self.commands is not None:
            if self.send(deadline, self.encode_app(pedal)):  # the driver's pedal alone, as its sensor's
                self._command(deadline, speed, self.commands)
        elif transmit and self.send(deadline, self.encode_app(self.app_pct)):
            if self.brake is not None:
                self._brake(deadline, speed, *self.brake)
            if self.gear_request is not None:  # neutral only while cruise holds the truck
                neutral = self.neutral and self.cruise_active and not self.override
                self.gear_request[1].send(self.tick_index, deadline, self._tc1[0 if neutral else 1])
        self.finish_tick(speed is None, transmit, math.nan if speed is None else speed)

    def _brake(self, deadline: float, speed: float | None, codec: RoleCodec, output: Output) -> None:
        """The brake demand for this tick (see the module), sent every tick."""
        self._braking_over(speed)
        if self.brake_pct != self._brake_sent[0]:  # mostly 0 %: encode only what changed
            self._brake_sent = (self.brake_pct, codec.encode(self.brake_pct))
        output.send(self.tick_index, deadline, self._brake_sent[1])

    def _braking_over(self, speed: float | None) -> float | None:
        """How far the speed is above the brake band when the CCM brakes this tick (see the
        module), else None; sets ``brake_pct``, the brake pedal position that asks for it."""
        self._app_zero_ticks = self._app_zero_ticks + 1 if self.app_pct <= 0.0 else 0
        over = 0.0 if speed is None else speed - self.set_speed_kph - self.brake_band_kph
        if self.cruise_active and over > 0.0 and self._app_zero_ticks * self.dt_s >= BRAKE_DELAY_S:
            self.brake_pct = min(100.0, BRAKE_GAIN_PCT_PER_KPH * over)
            return over
        self.brake_pct = 0.0
        return None

    def _command(self, deadline: float, speed: float | None, commands: Commands) -> None:
        """The controller's demand in TSC1 and XBR instead of APP and EBC1 (ecu_sim.nodes.commands):
        the engine is released while cruise is off or the driver's pedal overrides it."""
        over = self._braking_over(speed)
        torque = self.cruise_pct if self.cruise_active and not self.override else None
        commands.send(self.tick_index, deadline, Demand(torque, None if over is None else xbr_demand(over)))

    def figures(self) -> tuple[Figure, ...]:
        """The controller's set speed, its demand and whether cruise holds the truck; the speed it
        hears only once heard. The page's cruise word leaves out the coast, which only the status
        line tells apart."""
        speed = self.speed_kph
        cruise = ("off (no speed)" if speed is None else "off" if not self.engaged
                  else "override" if self.override else "on")
        app_shown = "APP {:5.1f} %" if self.commands is None else ""  # else the commands are shown
        figures = [Figure("set_speed_kph", "km/h", self.set_speed_kph, shown="set {:.1f} km/h"),
                   Figure("app_pct", "%", self.app_pct, shown=app_shown),
                   Figure("cruise_active", "", float(self.cruise_active)),
                   Figure("speed_kph", "km/h", speed,
                          shown="speed missing" if speed is None else "speed {:6.2f} km/h"),
                   Figure("brake_pct", "%", None if self.brake is None else self.brake_pct, recorded=False),
                   Figure("cruise", "", cruise, recorded=False,
                          shown=("cruise eco-roll" if self.neutral else "cruise coast")
                          if cruise == "on" and self.coasting else "cruise {}"),
                   Figure("pedal_override_pct", "%", self.pedal_override_pct, recorded=False)]
        if self.commands is not None:
            figures.append(Figure("command", "", self._demand_text(), recorded=False, shown="{}"))
        return tuple(figures)

    def status_line(self) -> str:
        return f"{status_text(self.figures(), _STATUS)} | {self.counters_text()}"

    def _demand_text(self) -> str:
        """With ``--command tsc1``: the latest TSC1 torque and XBR demand."""
        assert self.commands is not None
        sent = self.commands.sent
        torque = "released" if sent.torque_pct is None else f"{sent.torque_pct:5.1f} %"
        xbr = "off" if sent.accel_mps2 is None else f"{sent.accel_mps2:+.2f} m/s2"
        return f"TSC1 {torque} XBR {xbr}"


#: the figures of the status line, in its order (APP, or the TSC1 and XBR commands in its place)
_STATUS = ("speed_kph", "set_speed_kph", "app_pct", "command", "cruise")
