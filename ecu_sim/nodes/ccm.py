"""The cruise control module node: latest speed in, one PI step, APP out.

Without a valid speed (never received, stale, or flagged not available) cruise control is off:
the CCM sends APP 0 % and forgets its integral, so it re-engages from a clean state instead of
releasing a wound-up integrator when speed comes back.
"""

from __future__ import annotations

from ecu_sim.bus.port import Port
from ecu_sim.bus.transmit import Output
from ecu_sim.codec.profile import Profile
from ecu_sim.control import pi as controller
from ecu_sim.control.pi import PiParams, PiState
from ecu_sim.nodes.input import InputNode
from ecu_sim.nodes.j1939part import NetworkPart


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
        network: NetworkPart | None = None,
    ) -> None:
        super().__init__(port, profile.speed, output, hold_ticks, speed_source, network)
        self.params = params
        self.set_speed_kph = set_speed_kph
        self.dt_s = dt_s
        self.encode_app = profile.app.encode
        self.pi_state = PiState()
        self.app_pct = 0.0
        self.speed_kph: float | None = None

    @property
    def cruise_active(self) -> bool:
        return self.speed_kph is not None

    def tick(self, deadline: float, transmit: bool) -> None:
        self.speed_kph = speed = self.held.get(self.tick_index)
        if speed is None:
            self.app_pct = 0.0
            self.pi_state = PiState()
        else:
            self.app_pct, self.pi_state = controller.step(
                self.params, self.pi_state, self.set_speed_kph, speed, self.dt_s)
        if transmit and self.may_send():
            self.send(deadline, self.encode_app(self.app_pct))
        self.tick_network(speed is None, transmit)
        self.end_tick()

    def status_line(self) -> str:
        speed = "missing" if self.speed_kph is None else f"{self.speed_kph:6.2f} km/h"
        cruise = "on" if self.cruise_active else "off (no speed)"
        return (f"speed {speed} | set {self.set_speed_kph:.1f} km/h | APP {self.app_pct:5.1f} % "
                f"| cruise {cruise} | {self.counters_text()}")
