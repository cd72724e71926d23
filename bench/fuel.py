"""``scripts/validate``'s fuel checks of the class6 truck (docs/vehicle.md, "Fuel").

1. The map: its minimum brake-specific fuel consumption over the engine's envelope, and where.
2. A steady 90 km/h on a level road (the real ECU and CCM, as ``simulate`` runs them) against the
   hand calculation: road-load power at the wheel, through the axle's and the transmission's
   efficiency to the engine, at the engine speed of the gear held, times the map's BSFC there,
   worked out from the published table apart from the simulation's ``FuelMap`` (``published_bsfc``).
3. Fuel over the appendix D route at a set speed: litres, L/100 km, g CO2 per tonne-km and per
   ton-mile of the standard payload (GEM's unit), and how much of the time on the descents the
   fuel was cut.
"""

from __future__ import annotations

import csv
import io
import math
from typing import Any

from ecu_sim.runs import simulation
from ecu_sim.settings.model import ProfileSettings, RunSettings, Settings, VehicleSettings
from ecu_sim.vehicle.class6 import STANDARD_PAYLOAD_KG, Class6Model, Class6Params
from ecu_sim.vehicle.fuel import CO2_G_PER_L, DIESEL_KG_PER_L, minimum_bsfc
from ecu_sim.vehicle.fuel_data import cat3126e

RAD_S_PER_RPM = math.pi / 30.0
#: one ton-mile (2000 lb over a statute mile) in tonne-km
TKM_PER_TON_MILE = 0.90718474 * 1.609344
#: GEM's MY2027 standards for compression-ignition Medium HDV vocational, regional (40 CFR 1037.105):
#: Phase 2's (81 FR 73478) and Phase 3's (89 FR 29440, which replaced it from MY2027)
GEM_REGIONAL_PHASE2_G_PER_TON_MILE = 218.0
GEM_REGIONAL_PHASE3_G_PER_TON_MILE = 190.0


def map_minimum() -> dict[str, float]:
    model = Class6Model(Class6Params())
    p = model.params
    best, rpm, torque = minimum_bsfc(model.fuel, model.engine.full, p.idle_rpm, p.governed_rpm)
    return {"bsfc_g_kwh": best, "rpm": rpm, "torque_nm": torque}


def flat(set_kph: float = 90.0, duration_s: float = 400.0, settle_s: float = 100.0) -> dict[str, float]:
    """The simulated fuel rate of a steady run on a level road against the hand calculation."""
    settings = Settings(profile=ProfileSettings(name="j1939"),
                        vehicle=VehicleSettings(preset="class6"),
                        run=RunSettings(grade_pct=0.0, set_speed_kph=set_kph, initial_speed_kph=set_kph,
                                        duration_s=duration_s, log_level="warning"))
    out = io.StringIO()
    simulation.run(settings, simulation.DriverSetup("ccm"), out=out, link="direct")
    rows = [{k: float(v) for k, v in row.items()} for row in csv.DictReader(io.StringIO(out.getvalue()))]
    settled = [r for r in rows if r["t_s"] >= settle_s]
    p = Class6Params()
    v = sum(r["speed_kph"] for r in settled) / len(settled) / 3.6
    wheel_w = (p.crr * p.mass_kg * p.gravity_mps2 + 0.5 * p.air_density_kg_m3 * p.cda_m2 * v * v) * v
    engine_w = wheel_w / (p.transmission_efficiency * p.axle_efficiency)
    gear = int(settled[-1]["gear"])
    rpm = v / p.tire_radius_m * p.gear_ratios[gear - 1] * p.axle_ratio / RAD_S_PER_RPM
    torque = engine_w / (rpm * RAD_S_PER_RPM)
    bsfc = published_bsfc(rpm, torque)
    hand_lph = bsfc * engine_w / 1e6 / DIESEL_KG_PER_L
    sim_lph = sum(r["fuel_rate_lph"] for r in settled) / len(settled)
    return {"speed_kph": v * 3.6, "gear": gear, "wheel_kw": wheel_w / 1000.0, "engine_kw": engine_w / 1000.0,
            "rpm": rpm, "torque_nm": torque, "bsfc_g_kwh": bsfc, "hand_lph": hand_lph, "sim_lph": sim_lph,
            "difference_pct": (sim_lph - hand_lph) / hand_lph * 100.0,
            "gears_held": len({r["gear"] for r in settled})}


def published_bsfc(rpm: float, torque_nm: float) -> float:
    """BSFC, g/kWh, of the class6 engine at a point, from the published 3126E table without
    ``FuelMap``: the point taken back to the 3126E at the same normalised speed and fraction of peak
    torque, the rate there bilinear between the four table points around it (scaling keeps BSFC)."""
    table, p = cat3126e(), Class6Params()
    speeds = [table.first_rpm + i * table.step_rpm for i in range(len(table.rates_gps))]
    torques = [table.first_nm + j * table.step_nm for j in range(len(table.rates_gps[0]))]
    cat_rated = max(zip(speeds, table.full_load_nm, strict=True), key=lambda point: point[0] * point[1])[0]
    own_rated = max(p.full_load, key=lambda point: point[0] * point[1])[0]
    n = speeds[0] + (rpm - p.idle_rpm) * (cat_rated - speeds[0]) / (own_rated - p.idle_rpm)
    t = torque_nm * max(table.full_load_nm) / max(torque for _, torque in p.full_load)
    i = max(k for k in range(len(speeds) - 1) if speeds[k] <= n)
    j = max(k for k in range(len(torques) - 1) if torques[k] <= t)
    u, w = (n - speeds[i]) / table.step_rpm, (t - torques[j]) / table.step_nm
    rows = table.rates_gps
    gps = ((1 - u) * ((1 - w) * rows[i][j] + w * rows[i][j + 1])
           + u * ((1 - w) * rows[i + 1][j] + w * rows[i + 1][j + 1]))
    return gps * 3.6e6 / (t * n * RAD_S_PER_RPM)


def route(rows: list[dict[str, float]]) -> dict[str, Any]:
    """Fuel figures of one pass of a route from its trace rows (``simulate --out`` columns)."""
    litres = rows[-1]["fuel_used_l"] - rows[0]["fuel_used_l"]
    km = (rows[-1]["distance_m"] - rows[0]["distance_m"]) / 1000.0
    tonnes = STANDARD_PAYLOAD_KG / 1000.0
    g_per_tkm = litres * CO2_G_PER_L / (tonnes * km)
    down = [r for r in rows if r["grade_pct"] < 0.0]
    steep = [r for r in rows if r["grade_pct"] <= -1.0]
    return {"fuel_l": litres, "km": km, "l_per_100km": litres * 100.0 / km, "co2_g_per_tkm": g_per_tkm,
            "co2_g_per_ton_mile": g_per_tkm * TKM_PER_TON_MILE,
            "cut_on_descents": _cut(down), "cut_on_descents_1pct": _cut(steep)}


def _cut(rows: list[dict[str, float]]) -> float:
    return sum(1 for r in rows if r["fuel_rate_lph"] == 0.0) / len(rows) if rows else math.nan


def report(result: dict[str, Any]) -> list[str]:
    m, f = result["map"], result["flat"]
    lines = ["", f"Fuel map (Caterpillar 3126E, ADVISOR, scaled to class6): minimum BSFC "
             f"{m['bsfc_g_kwh']:.1f} g/kWh at {m['rpm']:.0f} rpm, {m['torque_nm']:.0f} N m.", "",
             f"Steady {f['speed_kph']:.2f} km/h on the level, gear {f['gear']}: "
             f"wheel {f['wheel_kw']:.2f} kW, engine {f['engine_kw']:.2f} kW at {f['rpm']:.0f} rpm, "
             f"{f['torque_nm']:.1f} N m, BSFC from the published table "
             f"{f['bsfc_g_kwh']:.1f} g/kWh: hand calculation {f['hand_lph']:.3f} L/h, simulation "
             f"{f['sim_lph']:.3f} L/h ({f['difference_pct']:+.2f} %).", "",
             "| appendix D run | fuel L | L/100 km | g CO2/tonne-km | g CO2/ton-mile | fuel cut on descents "
             "(grade < 0 / <= -1 %) |", "|---|---|---|---|---|---|"]
    for name, r in result["routes"].items():
        lines.append(f"| {name} | {r['fuel_l']:.3f} | {r['l_per_100km']:.2f} | {r['co2_g_per_tkm']:.1f} | "
                     f"{r['co2_g_per_ton_mile']:.1f} | {r['cut_on_descents'] * 100:.0f} % / "
                     f"{r['cut_on_descents_1pct'] * 100:.0f} % |")
    lines += ["", "GEM's MY2027 standards, CI Medium HDV vocational regional (40 CFR 1037.105): "
              f"Phase 2 {GEM_REGIONAL_PHASE2_G_PER_TON_MILE:.0f}, Phase 3 "
              f"{GEM_REGIONAL_PHASE3_G_PER_TON_MILE:.0f} g CO2/ton-mile (composites with the transient "
              "cycle, for today's engines: docs/vehicle.md)."]
    return lines
