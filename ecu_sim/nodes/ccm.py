"""The cruise control module node: latest speed in, one PI step, APP out.

Without a valid speed (never received, stale, or flagged not available) cruise control is off:
the CCM sends APP 0 % and forgets its integral, so it re-engages from a clean state instead of
releasing a wound-up integrator when speed comes back. With a driver on the bus, the driver's
pedal, brake and cruise commands act as ecu_sim.nodes.cruise says (override, brake, resume).
"""

from __future__ import annotations

import can

from ecu_sim.bus.port import Port
from ecu_sim.bus.transmit import Output
from ecu_sim.codec.profile import Profile
from ecu_sim.control import pi as controller
from ecu_sim.control.pi import PiParams, PiState
from ecu_sim.nodes.cruise import DriverDemand, DriverView, engaged_after
from ecu_sim.nodes.input import InputNode


class Ccm(InputNode):
    source_option = "--speed-source"

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
        driver: DriverDemand | None = None,
    ) -> None:
        super().__init__(port, profile.speed, output, hold_ticks, speed_source)
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

    @property
    def cruise_active(self) -> bool:
        return self.speed_kph is not None and self.engaged

    def handle(self, msg: can.Message) -> None:
        """The driver's frames first; to the speed input they are frames of other messages."""
        if self.driver is not None and self.driver.take(msg, self.tick_index):
            self.other += 1
            return
        super().handle(msg)

    def tick(self, deadline: float, transmit: bool) -> None:
        self.speed_kph = speed = self.held.get(self.tick_index)
        view = DriverView() if self.driver is None else self.driver.view(self.tick_index)
        self.engaged = engaged_after(self.engaged, view, speed is not None)
        cruise_app = 0.0
        if speed is None or not self.engaged:
            self.pi_state = PiState()
        else:
            cruise_app, state = controller.step(
                self.params, self.pi_state, self.set_speed_kph, speed, self.dt_s)
            if view.pedal_pct <= cruise_app:  # overridden: the integral is frozen
                self.pi_state = state
        self.override = self.cruise_active and view.pedal_pct > cruise_app
        self.app_pct = max(cruise_app, view.pedal_pct)
        if transmit:
            self.send(deadline, self.encode_app(self.app_pct))
        self.end_tick()

    def status_line(self) -> str:
        speed = "missing" if self.speed_kph is None else f"{self.speed_kph:6.2f} km/h"
        cruise = ("off (no speed)" if self.speed_kph is None else "off" if not self.engaged
                  else "override" if self.override else "on")
        return (f"speed {speed} | set {self.set_speed_kph:.1f} km/h | APP {self.app_pct:5.1f} % "
                f"| cruise {cruise} | {self.counters_text()}")
