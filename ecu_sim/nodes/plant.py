"""What the ECU integrates and drives on: the built-in truck and route, or an external simulator.

The ECU owns neither the physics nor the road; it is given both at construction. By default they
are :class:`ecu_sim.vehicle.model.TruckModel` and :class:`ecu_sim.vehicle.route.GradeSchedule`;
a co-simulation gives a road whose grade a peer may set, and ``--plant udp:HOST:PORT`` a truck
that lives in another program (:mod:`ecu_sim.cosim.plant`).
"""

from __future__ import annotations

from typing import Protocol

from ecu_sim.vehicle.model import TruckState


class Plant(Protocol):
    def step(self, state: TruckState, app_pct: float, grade_pct: float, dt_s: float) -> TruckState:
        """The truck one tick of ``dt_s`` later; a speed of NaN means it is not known (sent as such)."""


class Road(Protocol):
    def grade_at(self, distance_m: float) -> float:
        """Grade in percent, positive uphill, at ``distance_m`` along the route."""
