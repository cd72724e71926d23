"""``scripts/validate``: the class6 truck checked the way GEM checks a driver model, and its coastdown.

1. Speed tracking: the real ECU and CCM (``ecu-sim simulate``'s nodes on the in-process bus, the
   ``j1939`` profile, so the CCM sees the gear changes and can brake) drive class6 over the
   40 CFR 1037 appendix D grade route at constant set speeds: GEM's two highway cruise speeds,
   55 mi/h and 65 mi/h, and 90 km/h. Measured speed is regressed on the reference
   (set) speed as 40 CFR 1065.514(e) describes, giving slope, intercept, standard error of the
   estimate and r^2, with the limits of 40 CFR 1036.545(m). A single constant set speed has no
   range, so the regression of one run alone is undefined and only its SEE applies (as 1036.545(m)
   says for a reference range under 10 % of its mean); the regression is over both GEM cruise runs.
2. Coastdown: APP 0 on a level road with the driveline open, against the closed form of the
   road-load equation its parameters imply, A = Crr M g and C = rho CdA / 2 with the effective mass
   M + M_rotating; and the same coastdown in gear, which engine braking shortens.
3. Fuel (:mod:`bench.fuel`): the map's minimum BSFC, a steady 90 km/h on the level against the hand
   calculation, and the fuel of the appendix D runs above with the fuel cut on their descents.

Writes the figures as JSON and Markdown to ``--out`` (default out/validate) and a PNG when
matplotlib is installed (the ``bench`` extra).
"""

from __future__ import annotations

import argparse
import csv
import io
import itertools
import json
import math
import sys
from pathlib import Path
from typing import Any

from bench import fuel
from ecu_sim.runs import simulation
from ecu_sim.settings.model import ProfileSettings, RunSettings, Settings, VehicleSettings
from ecu_sim.vehicle import appendix_d
from ecu_sim.vehicle.class6 import Class6Model, Class6Params

MPH = 1.609344
ROUTE_M = appendix_d.POINTS[-1][0]
SET_SPEEDS_KPH = {"55 mi/h": 55 * MPH, "65 mi/h": 65 * MPH, "90 km/h": 90.0}
GEM_RUNS = ("55 mi/h", "65 mi/h")


def run_route(set_kph: float) -> list[dict[str, float]]:
    """One pass of appendix D at ``set_kph`` from ``set_kph``, one row per 100 ms tick."""
    duration = math.ceil(ROUTE_M / (set_kph / 3.6) + 20.0)
    settings = Settings(profile=ProfileSettings(name="j1939"),
                        vehicle=VehicleSettings(preset="class6", route_end="extend"),
                        run=RunSettings(grade_file="appendix-d", set_speed_kph=set_kph,
                                        initial_speed_kph=set_kph, duration_s=duration, log_level="warning"))
    out = io.StringIO()
    simulation.run(settings, simulation.DriverSetup("ccm"), out=out, link="direct")
    rows = [{k: float(v) for k, v in row.items()} for row in csv.DictReader(io.StringIO(out.getvalue()))]
    return [r for r in rows if r["distance_m"] <= ROUTE_M]


def regression(x: list[float], y: list[float]) -> dict[str, float]:
    """Least squares y = a1 x + a0 with SEE and r^2, as 40 CFR 1065.514(e) and 1065.602 define them."""
    n = len(x)
    mx, my = sum(x) / n, sum(y) / n
    sxx = sum((a - mx) ** 2 for a in x)
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
    syy = sum((b - my) ** 2 for b in y)
    if sxx == 0.0:
        see = math.sqrt(sum((b - a) ** 2 for a, b in zip(x, y, strict=True)) / (n - 2))
        return {"n": n, "slope": math.nan, "intercept": math.nan, "see": see, "r2": math.nan}
    a1 = sxy / sxx
    a0 = my - a1 * mx
    residual = sum((b - (a1 * a + a0)) ** 2 for a, b in zip(x, y, strict=True))
    return {"n": n, "slope": a1, "intercept": a0, "see": math.sqrt(residual / (n - 2)),
            "r2": 1.0 - residual / syy}


def limits(stats: dict[str, float], max_ref: float) -> dict[str, bool]:
    """The speed-validation limits of 40 CFR 1036.545(m)."""
    return {"slope 0.990..1.010": 0.990 <= stats["slope"] <= 1.010,
            "|intercept| <= 2 % of max": abs(stats["intercept"]) <= 0.02 * max_ref,
            "SEE <= 2 % of max": stats["see"] <= 0.02 * max_ref,
            "r2 >= 0.990": stats["r2"] >= 0.990}


def coastdown(open_driveline: bool) -> list[tuple[float, float]]:
    """(t s, km/h) of class6 at APP 0 on a level road from 90 km/h down to 20 km/h."""
    model = Class6Model(Class6Params())
    state = model.initial(90.0)
    if open_driveline:
        state = state._replace(selected=state.gear, shift_left_s=1e9)  # a shift that never ends
    out = [(0.0, state.speed_kph)]
    tick = 0
    while state.speed_kph > 20.0 and tick < 100_000:
        tick += 1
        state = model.step(state, 0.0, 0.0, 0.0, 0.1)
        out.append((tick * 0.1, state.speed_kph))
    return out


def road_load_closed_form(t_s: float, params: Class6Params) -> float:
    """km/h at ``t_s`` of a coastdown from 90 km/h under A + C v^2 alone (no engine, no brake)."""
    a = params.crr * params.mass_kg * params.gravity_mps2
    c = 0.5 * params.air_density_kg_m3 * params.cda_m2
    j = params.mass_kg + params.rotating_mass_kg
    v0 = 90.0 / 3.6
    return 3.6 * math.sqrt(a / c) * math.tan(math.atan(v0 * math.sqrt(c / a)) - math.sqrt(a * c) * t_s / j)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="out/validate", help="results folder (default out/validate)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    runs = {name: run_route(kph) for name, kph in SET_SPEEDS_KPH.items()}
    result: dict[str, Any] = {"per_run": {}}
    for name, rows in runs.items():
        ref = [SET_SPEEDS_KPH[name]] * len(rows)
        stats = regression(ref, [r["speed_kph"] for r in rows])
        gears = [r["gear"] for r in rows]
        stats["gear_changes"] = sum(1 for a, b in itertools.pairwise(gears) if a != b)
        stats["min_kph"] = min(r["speed_kph"] for r in rows)
        stats["max_kph"] = max(r["speed_kph"] for r in rows)
        result["per_run"][name] = stats
    x = [SET_SPEEDS_KPH[n] for n in GEM_RUNS for _ in runs[n]]
    y = [r["speed_kph"] for n in GEM_RUNS for r in runs[n]]
    gem = regression(x, y)
    result["gem"] = {**gem, "limits": limits(gem, max(x))}
    params = Class6Params()
    coast_open, coast_gear = coastdown(True), coastdown(False)
    errors = [abs(v - road_load_closed_form(t, params)) for t, v in coast_open]
    result["coastdown"] = {"open_driveline_max_error_kph": max(errors),
                           "open_driveline_90_to_20_s": coast_open[-1][0],
                           "in_gear_90_to_20_s": coast_gear[-1][0]}
    result["fuel"] = {"map": fuel.map_minimum(), "flat": fuel.flat(),
                      "routes": {name: fuel.route(rows) for name, rows in runs.items()}}
    (out / "validate.json").write_text(json.dumps(result, indent=2))
    text = report(result)
    (out / "validate.md").write_text(text)
    print(text)
    figure(runs["90 km/h"], coast_open, coast_gear, params, out / "vehicle.png")
    return 0


def report(result: dict[str, Any]) -> str:
    lines = ["| run | n | SEE km/h | min km/h | max km/h | gear changes |", "|---|---|---|---|---|---|"]
    for name, s in result["per_run"].items():
        lines.append(f"| {name} | {s['n']} | {s['see']:.3f} | {s['min_kph']:.2f} | {s['max_kph']:.2f} | "
                     f"{s['gear_changes']} |")
    g = result["gem"]
    lines += ["", "GEM regression of measured on reference speed over the 55 and 65 mi/h runs:", "",
              "| slope | intercept km/h | SEE km/h | r^2 |", "|---|---|---|---|",
              f"| {g['slope']:.4f} | {g['intercept']:.3f} | {g['see']:.3f} | {g['r2']:.4f} |", "",
              "Limits of 40 CFR 1036.545(m): " + ", ".join(f"{k}: {'met' if ok else 'NOT met'}"
                                                          for k, ok in g["limits"].items())]
    c = result["coastdown"]
    lines += ["", f"Coastdown 90 -> 20 km/h, level, APP 0: driveline open "
              f"{c['open_driveline_90_to_20_s']:.1f} s, largest difference to the road-load closed form "
              f"{c['open_driveline_max_error_kph']:.4f} km/h; in gear (engine braking) "
              f"{c['in_gear_90_to_20_s']:.1f} s."]
    lines += fuel.report(result["fuel"])
    return "\n".join(lines) + "\n"


def figure(rows: list[dict[str, float]], coast_open: list[tuple[float, float]],
           coast_gear: list[tuple[float, float]], params: Class6Params, path: Path) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no figure (pip install -e '.[bench]')", file=sys.stderr)
        return
    fig, (ax1, ax2, ax3) = plt.subplots(3, 1, figsize=(10, 9))
    d = [r["distance_m"] / 1000 for r in rows]
    ax1.plot(d, [r["speed_kph"] for r in rows], label="speed km/h")
    ax1.axhline(90.0, color="grey", lw=0.8, ls="--", label="set speed")
    ax1.set_ylabel("km/h")
    ax1b = ax1.twinx()
    ax1b.plot(d, [r["elevation_m"] for r in rows], color="tab:brown", lw=0.8, label="elevation m")
    ax1b.set_ylabel("elevation m")
    ax1.set_title("class6 over 40 CFR 1037 appendix D at 90 km/h (ECU + CCM, j1939 profile)")
    ax1.legend(loc="lower left")
    ax2.plot(d, [r["gear"] for r in rows], label="gear")
    ax2.plot(d, [r["app_pct"] / 20 for r in rows], lw=0.6, label="APP / 20 %")
    ax2.plot(d, [r["brake_pct"] / 20 for r in rows], lw=0.6, label="brake / 20 %")
    ax2.plot(d, [r["fuel_rate_lph"] / 10 for r in rows], lw=0.6, label="fuel / 10 L/h")
    ax2.set_xlabel("distance km")
    ax2.legend(loc="lower left")
    ax3.plot(*zip(*coast_open, strict=True), label="driveline open (model)")
    ax3.plot([t for t, _ in coast_open], [road_load_closed_form(t, params) for t, _ in coast_open], ls="--",
             label="road-load closed form")
    ax3.plot(*zip(*coast_gear, strict=True), label="in gear, engine braking (model)")
    ax3.set_xlabel("s")
    ax3.set_ylabel("km/h")
    ax3.set_title("coastdown on a level road, APP 0")
    ax3.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    print(f"figure: {path}")


if __name__ == "__main__":
    sys.exit(main())

