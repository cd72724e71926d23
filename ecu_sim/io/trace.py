"""``simulate --out FILE.csv``: the ECU's state after every tick, one CSV row each.

A plain table with fixed decimals, so two runs can be compared with ``diff`` and any plotting
tool reads it; the first row is tick 0 at t = 0. A vehicle with a driveline (``class6``) adds
the columns only it has: elevation, gear, engine speed, brake demand, and the fuel rate (L/h)
and fuel used (L) of its engine map; the testbed's table is unchanged. ``--network powertrain``
adds the engine's torque mode and controlling address, its demand and the acceleration.
``simulate --state-hash FILE`` writes a hash of the same state at full precision instead, every
bit of every float: a difference too small for the table's decimals (a processor or a libm that
rounds one operation differently) shows there first, at the tick where it starts.
"""

from __future__ import annotations

import hashlib
import struct
from typing import IO

from ecu_sim.nodes.ecu import Ecu

HEADER = "t_s,speed_kph,app_pct,grade_pct,distance_m\n"
DRIVELINE_HEADER = HEADER[:-1] + ",elevation_m,gear,engine_rpm,brake_pct,fuel_rate_lph,fuel_used_l\n"
#: ``--network powertrain`` adds who controls the engine (SPN 899, SPN 1483), what it is asked
#: for (SPN 2432) and the acceleration an XBR closes on
POWERTRAIN_HEADER = DRIVELINE_HEADER[:-1] + ",torque_mode,controlling_address,engine_demand_pct,accel_mps2\n"


class CsvTrace:
    """A tick observer that writes the ECU's row after each tick."""

    def __init__(self, out: IO[str], ecu: Ecu) -> None:
        self._write = out.write
        self._ecu = ecu
        self._driveline = ecu.vehicle.driveline() is not None
        self._powertrain = ecu.powertrain
        out.write((DRIVELINE_HEADER if self._driveline else HEADER) if self._powertrain is None
                  else POWERTRAIN_HEADER)

    def on_tick(self, tick: int, now: float, transmitted: bool) -> None:
        ecu = self._ecu
        state = ecu.state
        row = f"{now:.3f},{state.speed_kph:.6f},{ecu.app_pct:.4f},{ecu.grade_pct:.4f},{state.distance_m:.3f}"
        if self._driveline:
            vehicle = ecu.vehicle
            driveline = vehicle.driveline()
            assert driveline is not None
            row += (f",{vehicle.elevation_m or 0.0:.3f},{driveline.gear},{driveline.engine_rpm:.1f},"
                    f"{ecu.brake_demand_pct:.1f},{driveline.fuel_rate_lph:.4f},{driveline.fuel_used_l:.6f}")
        if self._powertrain is not None:
            n = self._powertrain.numbers()
            row += (f",{n['torque_mode']:.0f},{n['controlling_address']:.0f},{n['engine_demand_pct']:.2f},"
                    f"{n['accel_mps2']:.4f}")
        self._write(row + "\n")


class StateHashTrace:
    """A tick observer that writes ``tick hash`` of the ECU's speed, distance, APP and grade bits."""

    def __init__(self, out: IO[str], ecu: Ecu) -> None:
        self._write = out.write
        self._ecu = ecu

    def on_tick(self, tick: int, now: float, transmitted: bool) -> None:
        ecu = self._ecu
        state = struct.pack("<dddd", ecu.state.speed_mps, ecu.state.distance_m, ecu.app_pct, ecu.grade_pct)
        self._write(f"{tick} {hashlib.blake2b(state, digest_size=8).hexdigest()}\n")
