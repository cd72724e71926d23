"""What a predictive CCM knows of its truck and its road, put together once when the node is built.

A map-based predictive cruise control is configured with the vehicle it is fitted to: its mass and
road load, and what the engine holds back when the pedal is released. The CCM takes them from the
same vehicle settings the ECU simulates (``[vehicle] preset``, ``payload_kg``; ``[truck]`` for the
testbed), so its prediction of a coast is as good as a well-calibrated system's, not better: it does
not know the gear the transmission will choose, so it assumes the top gear at the set speed.
"""

from __future__ import annotations

import dataclasses

from ecu_sim.cruise.predictive import CoastModel, Models, Preview
from ecu_sim.settings.model import Settings
from ecu_sim.vehicle.class6 import Class6Params
from ecu_sim.vehicle.drive import Terrain
from ecu_sim.vehicle.engine import TorqueCurve
from ecu_sim.vehicle.params import KPH_PER_MPS

_RAD_S_PER_RPM = 0.10471975511965977


def build_preview(settings: Settings, road: object, eco_roll: bool = False) -> Preview | None:
    """The predictive part of a CCM with ``[controller] mode = predictive``; None for the PI one.
    ``eco_roll``: the CCM can ask the transmission for neutral (TC1), so it predicts that coast too."""
    params = settings.controller.predictive_for(neutral=eco_roll)
    if params is None:
        return None
    if not isinstance(road, Terrain):
        raise ValueError("a predictive CCM needs the road it previews: load it with "
                         "ecu_sim.runs.prepare.load_ccm_road")
    neutral = neutral_coast(settings) if eco_roll else None
    return Preview(params, Models(coast_model(settings), neutral), road.elevation_at)


def coast_model(settings: Settings) -> CoastModel:
    """The truck of ``settings`` with the pedal released, as :class:`CoastModel` describes it."""
    if settings.vehicle.preset == "class6":
        return class6_coast(_class6_params(settings), settings.run.set_speed_kph)
    truck = settings.truck
    # the testbed truck: road load in km/h units, no engine drag (APP 0 % is no power at all)
    return CoastModel(mass_kg=truck.mass_kg * truck.inertia_factor,
                      weight_n=truck.mass_kg * truck.gravity_mps2,
                      a_n=truck.road_load_a_n,
                      b_n_per_mps=truck.road_load_b_n_per_kph * KPH_PER_MPS,
                      c_n_per_mps2=truck.road_load_c_n_per_kph2 * KPH_PER_MPS * KPH_PER_MPS)


def class6_coast(p: Class6Params, set_speed_kph: float) -> CoastModel:
    """The class6 truck coasting in its top gear: rolling resistance, air, and the engine's
    motoring torque at the set speed through the driveline (its efficiencies inverted, as the model
    does for a negative torque)."""
    overall = p.gear_ratios[-1] * p.axle_ratio
    wheel_rad_s = max(0.0, set_speed_kph) / KPH_PER_MPS / p.tire_radius_m
    rpm = max(p.idle_rpm, wheel_rad_s * overall / _RAD_S_PER_RPM)
    drag_nm = -TorqueCurve(p.motoring).at(rpm)
    drag_n = max(0.0, drag_nm) * overall / (p.tire_radius_m * p.transmission_efficiency * p.axle_efficiency)
    inertia_kg = p.engine_inertia_kg_m2 * (overall / p.tire_radius_m) ** 2
    return _class6_rolling(p, inertia_kg, drag_n)


def neutral_coast(settings: Settings) -> CoastModel:
    """The class6 truck rolling in neutral: rolling resistance and air alone, the engine neither
    dragging nor carried along."""
    return _class6_rolling(_class6_params(settings), 0.0, 0.0)


def _class6_params(settings: Settings) -> Class6Params:
    """The class6 truck with the payload of ``settings``: the truck the ECU simulates."""
    return dataclasses.replace(Class6Params(), mass_kg=Class6Params().mass_kg + settings.vehicle.payload_kg)


def _class6_rolling(p: Class6Params, engine_mass_kg: float, engine_drag_n: float) -> CoastModel:
    """The road load both coasts share; in gear the engine adds its inertia (as a mass at the
    wheels) and its motoring drag, in neutral neither."""
    weight = p.mass_kg * p.gravity_mps2
    return CoastModel(mass_kg=p.mass_kg + p.rotating_mass_kg + engine_mass_kg, weight_n=weight,
                      a_n=p.crr * weight + engine_drag_n, b_n_per_mps=0.0,
                      c_n_per_mps2=0.5 * p.air_density_kg_m3 * p.cda_m2)
