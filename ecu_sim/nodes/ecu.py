"""The ECU node: latest APP in, one fixed model step, wheel-based speed out.

Tick 0 transmits the initial state (there is no interval to integrate before it); every later
tick integrates the interval that just ended with the newest APP, so an APP frame that arrives
just before a deadline is reflected in the speed sent at that deadline. Missing APP (never
received, stale, or flagged not available) means a coasting truck: APP 0 %.
"""

from __future__ import annotations

from ecu_sim.bus.port import Port
from ecu_sim.bus.transmit import Output
from ecu_sim.codec.profile import Profile
from ecu_sim.nodes.input import InputNode
from ecu_sim.nodes.j1939part import NetworkPart
from ecu_sim.vehicle.model import TruckModel, TruckState
from ecu_sim.vehicle.route import GradeSchedule


class Ecu(InputNode):
    def __init__(
        self,
        port: Port,
        profile: Profile,
        output: Output,
        truck: TruckModel,
        route: GradeSchedule,
        initial_speed_kph: float,
        dt_s: float,
        hold_ticks: int,
        app_source: int | None = None,
        network: NetworkPart | None = None,
    ) -> None:
        super().__init__(port, profile.app, output, hold_ticks, app_source, network)
        self.truck = truck
        self.route = route
        self.dt_s = dt_s
        self.encode_speed = profile.speed.encode
        self.state = TruckState.from_kph(initial_speed_kph)
        self.app_pct = 0.0
        self.app_missing = True
        self.grade_pct = route.grade_at(0.0)

    def tick(self, deadline: float, transmit: bool) -> None:
        app = self.held.get(self.tick_index)
        self.app_missing = app is None
        self.app_pct = 0.0 if app is None else app
        if self.tick_index:
            self.grade_pct = self.route.grade_at(self.state.distance_m)
            self.state = self.truck.step(self.state, self.app_pct, self.grade_pct, self.dt_s)
        if transmit and self.may_send():
            self.send(deadline, self.encode_speed(self.state.speed_kph))
        self.tick_network(self.app_missing, transmit)
        self.end_tick()

    def status_line(self) -> str:
        app = "missing (coasting)" if self.app_missing else f"{self.app_pct:5.1f} %"
        return (f"speed {self.state.speed_kph:6.2f} km/h | APP {app} | grade {self.grade_pct:+.1f} % "
                f"| distance {self.state.distance_m:8.0f} m | {self.counters_text()}")
