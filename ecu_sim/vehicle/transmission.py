"""The automatic transmission of the ``class6`` truck: shift schedule, and the torque converter at launch.

The shift schedule is two lines over APP in engine speed, upshift above the upper one and
downshift below the lower one, as an automatic's shift map is drawn over throttle. Three rules
keep it from hunting, each of which a test holds it to:

- a shift is only made when the engine speed it lands on lies inside the other line by a margin
  (an upshift must not land below the downshift line, a downshift not above the upshift line), so
  at a steady pedal the next tick cannot undo it;
- an upshift is only made when the higher gear can deliver the wheel torque asked for now with a
  reserve, so a climb the lower gear holds at full pedal is not left for a gear that cannot hold
  it (which would slow down and shift back); at full pedal this makes the upshifts happen near
  the governed speed, where the full-load torque falls;
- after a shift the schedule waits a dwell time before it shifts again, so a pedal that moves
  because of the shift (the cruise controller reacting to the torque step) does not undo it;
- below a floor just over idle the transmission downshifts whatever the lines say, so the engine
  never lugs below idle in gear; the floor times the largest step between neighbouring ratios lies
  below the upshift line, so that downshift is never undone at once either.

The torque converter is quasi-static: in first gear below the lock-up speed the engine runs at
least at the speed the pedal asks for (idle at 0 %, stall speed at 100 %), and the torque ratio
falls linearly from its stall value at speed ratio 0 to 1 at the coupling point.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from ecu_sim.vehicle.engine import Engine


@dataclass(frozen=True, slots=True)
class ShiftSchedule:
    """Shift lines in engine rpm over APP, and the rules against hunting (see the module)."""

    up_rpm_at_0: float = 1300.0
    up_rpm_at_100: float = 1900.0
    down_rpm_at_0: float = 800.0
    down_rpm_at_100: float = 1400.0
    margin_rpm: float = 100.0
    dwell_s: float = 2.0
    floor_rpm: float = 750.0
    #: the share of the higher gear's full-load torque an upshift may ask of it
    reserve: float = 0.9

    def up_rpm(self, app_pct: float) -> float:
        return self.up_rpm_at_0 + app_pct * 0.01 * (self.up_rpm_at_100 - self.up_rpm_at_0)

    def down_rpm(self, app_pct: float) -> float:
        return self.down_rpm_at_0 + app_pct * 0.01 * (self.down_rpm_at_100 - self.down_rpm_at_0)

    def choose(self, ratios: tuple[float, ...], gear: int, rpm: float, app_pct: float,
               since_shift_s: float, engine: Engine) -> int:
        """The gear (1-based) to be in, from ``gear`` at engine speed ``rpm`` in it."""
        if gear > 1 and rpm < self.floor_rpm:
            return gear - 1
        if since_shift_s < self.dwell_s:
            return gear
        if gear < len(ratios) and rpm > self.up_rpm(app_pct):
            landed = rpm * ratios[gear] / ratios[gear - 1]
            asked = engine.demand_nm(app_pct, rpm) * ratios[gear - 1]
            if (landed > self.down_rpm(app_pct) + self.margin_rpm
                    and asked <= self.reserve * engine.full.at(landed) * ratios[gear]):
                return gear + 1
        if gear > 1 and rpm < self.down_rpm(app_pct):
            landed = rpm * ratios[gear - 2] / ratios[gear - 1]
            if landed < self.up_rpm(app_pct) - self.margin_rpm:
                return gear - 1
        return gear

    def problems(self, ratios: tuple[float, ...], idle_rpm: float) -> list[str]:
        """What would let the schedule hunt or lug the engine, as sentences."""
        found = []
        if not self.down_rpm_at_0 < self.up_rpm_at_0 or not self.down_rpm_at_100 < self.up_rpm_at_100:
            found.append("the downshift line must lie below the upshift line at every APP")
        steps = [a / b for a, b in itertools.pairwise(ratios)]
        if any(step <= 1.0 for step in steps):
            found.append(f"gear ratios must strictly decrease from first to top gear (got {ratios})")
        elif self.floor_rpm * max(steps) >= self.up_rpm_at_0:
            found.append("floor_rpm times the largest ratio step must lie below the upshift line")
        if self.floor_rpm <= idle_rpm:
            found.append(f"floor_rpm must lie above idle ({idle_rpm:g} rpm)")
        return found


@dataclass(frozen=True, slots=True)
class TorqueConverter:
    """A quasi-static converter in first gear: engine speed from the pedal, torque ratio from slip."""

    stall_rpm: float = 1600.0
    stall_torque_ratio: float = 2.0
    coupling_speed_ratio: float = 0.9
    lockup_rpm: float = 1100.0

    def engine_rpm(self, turbine_rpm: float, app_pct: float, idle_rpm: float) -> float:
        """The engine's speed: the pedal's target between idle and stall, or the turbine's if faster."""
        target = idle_rpm + app_pct * 0.01 * (self.stall_rpm - idle_rpm)
        return turbine_rpm if turbine_rpm > target else target

    def torque_ratio(self, turbine_rpm: float, engine_rpm: float) -> float:
        """Output over input torque: the stall ratio at standstill, falling to 1 at the coupling point."""
        speed_ratio = turbine_rpm / engine_rpm
        coupling = self.coupling_speed_ratio
        if speed_ratio >= coupling:
            return 1.0
        return self.stall_torque_ratio - (self.stall_torque_ratio - 1.0) * speed_ratio / coupling
