"""The predictive controller's eco-roll and climb rules as pure functions, on roads whose answer is
known, and their settings checked before a run."""

from __future__ import annotations

import dataclasses

from ecu_sim.cruise.predictive import Models, PredictiveParams, PreviewState, climb_lift, decide
from ecu_sim.nodes.preview import class6_coast, neutral_coast
from ecu_sim.settings.model import Settings, VehicleSettings
from ecu_sim.vehicle.class6 import Class6Params
from ecu_sim.vehicle.road import Road

SET_KPH = 80.0
MODELS = Models(class6_coast(Class6Params(), SET_KPH),
                neutral_coast(dataclasses.replace(Settings(), vehicle=VehicleSettings(preset="class6"))))
#: a 2.5 % descent of 2 km after 100 m of flat: in neutral it speeds the truck up from 80 km/h, in
#: gear it does not
GENTLE = Road.from_elevation([(0.0, 0.0), (100.0, 0.0), (2100.0, -50.0), (6000.0, -50.0)], loop=False)
#: flat for 300 m, then a 3 % climb of 1 km
CLIMB = Road.from_elevation([(0.0, 0.0), (300.0, 0.0), (1300.0, 30.0), (3000.0, 30.0)], loop=False)
FLAT = Road.from_elevation([(0.0, 0.0), (6000.0, 0.0)], loop=False)


DEFAULTS = PredictiveParams()


def choose(road: Road, params: PredictiveParams = DEFAULTS, models: Models = MODELS) -> PreviewState:
    """The decision at the road's start, at the set speed, with no coast going on."""
    return decide(params, models, road.elevation_at, PreviewState(), 0.0, SET_KPH, SET_KPH)


def test_a_gentle_descent_the_truck_rolls_down_in_neutral_is_an_eco_roll() -> None:
    chosen = choose(GENTLE)
    assert chosen.coasting and chosen.neutral


def test_without_a_transmission_to_ask_the_same_descent_is_no_coast_at_all() -> None:
    chosen = choose(GENTLE, models=Models(MODELS.in_gear))
    assert not chosen.coasting


def test_no_eco_roll_below_its_minimum_speed() -> None:
    assert not choose(GENTLE, PredictiveParams(eco_roll_min_kph=85.0)).neutral


def test_an_eco_roll_shorter_than_its_minimum_duration_is_not_started() -> None:
    assert not choose(GENTLE, PredictiveParams(eco_roll_min_s=600.0)).neutral


def test_eco_roll_off_leaves_the_coast_in_gear_alone() -> None:
    assert not choose(GENTLE, PredictiveParams(eco_roll=False)).neutral


def test_no_eco_roll_on_a_flat_road() -> None:
    assert not choose(FLAT).coasting


def test_the_speed_is_lifted_ahead_of_a_climb() -> None:
    assert climb_lift(PredictiveParams(), CLIMB.elevation_at, 0.0) == PredictiveParams().anticipate_kph


def test_the_speed_is_not_lifted_on_the_climb_itself() -> None:
    assert climb_lift(PredictiveParams(), CLIMB.elevation_at, 600.0) == 0.0


def test_a_climb_beyond_the_anticipation_distance_lifts_nothing_yet() -> None:
    assert climb_lift(PredictiveParams(anticipate_m=100.0), CLIMB.elevation_at, 0.0) == 0.0


def test_no_lift_on_a_flat_road() -> None:
    assert climb_lift(PredictiveParams(), FLAT.elevation_at, 0.0) == 0.0


def test_a_lift_of_0_turns_the_anticipation_off() -> None:
    assert climb_lift(PredictiveParams(anticipate_kph=0.0), CLIMB.elevation_at, 0.0) == 0.0


def test_the_hold_carries_the_lift_ahead_of_a_climb() -> None:
    chosen = choose(CLIMB)
    assert not chosen.coasting and chosen.lift_kph == PredictiveParams().anticipate_kph
