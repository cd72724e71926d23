"""ecu-sim stepped by a peer: exactly n ticks a request, the same answers however the run is split."""

from __future__ import annotations

import dataclasses
import math
import struct
import threading
from pathlib import Path

import pytest

from ecu_sim.cosim import protocol
from ecu_sim.cosim.protocol import ErrorCode, Frame
from ecu_sim.cruise import pi
from ecu_sim.runs.prepare import prepare
from ecu_sim.runs.simulation import DriverSetup, Simulation
from ecu_sim.settings.model import ProfileSettings, RunSettings, Settings, VehicleSettings
from tests.helpers.cosim_peer import NAN, served

FLAT = Settings(run=RunSettings(grade_pct=0.0, initial_speed_kph=0.0))
ROUTE = Settings()
SPEED, DISTANCE, GRADE, APP, MISSING, WIRE = 1, 2, 3, 4, 5, 6


def split(total: int, n: int) -> list[int]:
    return [n] * (total // n) + ([total % n] if total % n else [])


@pytest.mark.parametrize("n", [7, 1000])
def test_the_same_requests_give_bit_identical_answers_however_the_run_is_split(n: int) -> None:
    with served(ROUTE) as (peer, _):
        one_by_one = [peer.step(1, app=60.0) for _ in range(1000)]
    with served(ROUTE) as (peer, _):
        answers = [peer.step(k, app=60.0) for k in split(1000, n)]
    assert answers[-1].tick == one_by_one[-1].tick == 999
    assert struct.pack("<7d", *answers[-1].values) == struct.pack("<7d", *one_by_one[-1].values)
    ends = [sum(split(1000, n)[:i + 1]) - 1 for i in range(len(answers))]
    for end, answer in zip(ends, answers, strict=True):
        assert answer.values == one_by_one[end].values


def test_polling_for_requests_without_blocking_changes_no_answer() -> None:
    with served(ROUTE) as (peer, _):
        blocking = [peer.step(1, app=60.0).values for _ in range(200)]
    with served(ROUTE, busy_poll_s=0.05) as (peer, _):
        polled = [peer.step(1, app=60.0).values for _ in range(200)]
    assert struct.pack("<1400d", *sum(polled, ())) == struct.pack("<1400d", *sum(blocking, ()))


def test_the_can_encoding_returns_every_frame_of_the_step_at_its_tick_whatever_the_split() -> None:
    with served(ROUTE) as (peer, _):
        singles = [peer.step(1, app=30.0, frames=()).frames for _ in range(70)]
    with served(ROUTE) as (peer, _):
        sevens = [peer.step(7, app=30.0, frames=()).frames for _ in range(10)]
    flat_singles = [(k, f.data) for k, frames in enumerate(singles) for f in frames or ()]
    flat_sevens = [(7 * i + f.offset, f.data) for i, frames in enumerate(sevens) for f in frames or ()]
    assert flat_singles == flat_sevens
    assert [k for k, _ in flat_singles] == list(range(70))  # one speed frame a tick


def test_a_constant_app_gives_the_speed_trace_of_simulate_with_that_app() -> None:
    settings, profile = prepare(FLAT)
    with Simulation(settings, DriverSetup("pedal", 40.0), profile) as simulation:
        expected = []
        for _ in range(600):
            simulation.loop.run(1)
            expected.append(simulation.ecu.state.speed_kph)
    with served(FLAT) as (peer, _):
        got = [peer.step(1, app=40.0).values[SPEED] for _ in range(600)]
    assert got == expected


def test_a_pi_peer_on_the_bus_speed_gives_the_closed_loop_trace_of_simulate_with_the_ccm() -> None:
    settings, profile = prepare(dataclasses.replace(ROUTE, run=RunSettings(initial_speed_kph=80.0)))
    with Simulation(settings, DriverSetup("ccm"), profile) as simulation:
        expected = []
        for _ in range(900):
            simulation.loop.run(1)
            expected.append(simulation.ecu.state.speed_kph)
    got = []
    state, app = pi.PiState(), NAN
    with served(settings) as (peer, _):
        for _ in range(900):
            answer = peer.step(1, app=app)
            got.append(answer.values[SPEED])
            app, state = pi.step(settings.controller.pi, state, settings.run.set_speed_kph,
                                 answer.values[WIRE], settings.run.resolved_period_s)
    assert got == expected


def test_a_grade_from_the_peer_replaces_the_route() -> None:
    with served(ROUTE) as (peer, _):
        answer = peer.step(20, app=50.0, grade=3.5)
    assert answer.values[GRADE] == 3.5


def test_the_testbed_on_an_elevation_route_answers_as_simulate_and_takes_the_peers_grade_as_given(
        tmp_path: Path) -> None:
    route = tmp_path / "hill.csv"
    route.write_text("distance_m,elevation_m\n0,0\n500,30\n1000,0\n")
    hill = Settings(run=RunSettings(grade_file=str(route)))
    settings, profile = prepare(hill)
    with Simulation(settings, DriverSetup("pedal", 40.0), profile) as simulation:
        expected = []
        for _ in range(300):
            simulation.loop.run(1)
            expected.append((simulation.ecu.state.speed_kph, simulation.ecu.grade_pct))
    with served(hill) as (peer, _):
        got = [(v[SPEED], v[GRADE]) for v in (peer.step(1, app=40.0).values for _ in range(300))]
    assert got == expected and expected[-1][1] > 0.0
    with served(hill) as (peer, _):
        assert peer.step(20, app=50.0, grade=3.5).values[GRADE] == 3.5


def test_no_app_from_the_peer_means_the_truck_coasts() -> None:
    with served(ROUTE) as (peer, _):
        first = peer.step(1)
        later = peer.step(50)
    assert first.values[MISSING] == later.values[MISSING] == 1.0
    assert later.values[SPEED] < first.values[SPEED]


def test_app_frames_of_the_can_encoding_drive_the_ecu_as_a_pedal_on_its_bus() -> None:
    _, profile = prepare(FLAT)
    app_frame = profile.app.encode(40.0)
    frames = tuple(Frame(profile.app.frame_id, app_frame, offset=k) for k in range(10))
    with served(FLAT) as (by_frames, _):
        framed = [by_frames.step(10, frames=frames) for _ in range(30)]
    with served(FLAT) as (by_value, _):
        valued = [by_value.step(10, app=40.0) for _ in range(30)]
    assert [a.values for a in framed] == [a.values for a in valued]
    assert framed[-1].values[MISSING] == 0.0


def test_the_answer_carries_the_ecus_frames_as_they_were_on_the_bus() -> None:
    _, profile = prepare(ROUTE)
    with served(ROUTE) as (peer, _):
        answer = peer.step(3, app=20.0, frames=())
    assert answer.frames is not None
    assert [(f.arbitration_id, f.offset, f.is_extended_id) for f in answer.frames] == [
        (profile.speed.frame_id, k, True) for k in range(3)]
    assert profile.speed.decode(answer.frames[-1].data) == answer.values[WIRE]


def test_a_repeated_sequence_number_gets_the_same_answer_again_without_a_step() -> None:
    with served(ROUTE) as (peer, server):
        request = protocol.encode(protocol.Datagram(1, 5, 0, (50.0, NAN)))
        first, again = peer.raw(request), peer.raw(request)
        peer.seq = 1
        after = peer.step(1, app=50.0)
    assert again == first
    assert after.tick == 5
    assert server.stats.retries == 1 and server.stats.steps == 2


def test_a_sequence_gap_still_steps_and_is_counted() -> None:
    with served(ROUTE) as (peer, server):
        peer.request(1, 1, 10.0)
        answer = peer.request(5, 1, 10.0)
    assert not answer.is_error and answer.tick == 1
    assert server.stats.gaps == 1


def test_an_older_sequence_number_is_refused_as_stale_and_nothing_advances() -> None:
    with served(ROUTE) as (peer, _):
        peer.request(5, 1, 10.0)
        stale = peer.request(4, 1, 10.0)
        after = peer.request(6, 1, 10.0)
    assert stale.n == -ErrorCode.STALE and "older than the last one answered, 5" in stale.message
    assert after.tick == 1


@pytest.mark.parametrize(("data", "code", "words"), [
    (b"hello", ErrorCode.MALFORMED, "shorter than the 32-byte header"),
    (struct.pack("<6d", 3.0, 1.0, 1.0, 0.0, 0.0, 0.0), ErrorCode.VERSION, "version 3"),
    (struct.pack("<5d", 1.0, 1.0, 1.0, 0.0, 0.0), ErrorCode.MALFORMED, "too short"),
    (struct.pack("<6d", 1.0, 1.0, 0.0, 0.0, 0.0, 0.0), ErrorCode.MALFORMED, "at least one tick"),
    (struct.pack("<6d", 1.0, 1.0, 1.0, 0.0, 150.0, 0.0), ErrorCode.MALFORMED, "app_pct = 150.0"),
])
def test_a_broken_request_gets_an_error_answer_and_the_run_goes_on(data: bytes, code: int,
                                                                    words: str) -> None:
    with served(ROUTE) as (peer, server):
        refused = protocol.decode(peer.raw(data), 7)
        answer = peer.step(1, app=10.0)
    assert refused.n == -code and words in refused.message
    assert answer.tick == 0 and server.stats.errors == 1


def test_a_frame_outside_the_step_is_refused() -> None:
    with served(ROUTE) as (peer, _):
        answer = peer.request(1, 2, frames=(Frame(0x100, b"\x01", offset=2),))
    assert answer.n == -ErrorCode.MALFORMED and "outside the step of 2 ticks" in answer.message


@pytest.mark.parametrize("busy_poll_s", [0.0, 0.05])
def test_a_silent_peer_ends_the_run_after_the_peer_timeout(busy_poll_s: float) -> None:
    with served(ROUTE, peer_timeout_s=0.3, busy_poll_s=busy_poll_s) as (peer, server):
        peer.step(1, app=10.0)
        why = server.serve()
    assert "no request from the peer for 0.3 s" in why


def test_a_stop_ends_a_busy_polling_server_that_waits_for_its_peer() -> None:
    with served(ROUTE, peer_timeout_s=60.0, busy_poll_s=0.05) as (peer, server):
        peer.step(1, app=10.0)
        stopper = threading.Timer(0.2, server.stop)
        stopper.start()
        why = server.serve()
    assert why == "stopped"



def test_a_step_past_the_duration_is_refused() -> None:
    with served(ROUTE, max_ticks=10) as (peer, _):
        refused = peer.request(1, 11, 10.0)
    assert refused.n == -ErrorCode.TOO_LONG and "10 ticks are left" in refused.message


def test_with_the_j1939_profile_every_signal_the_ecu_sends_is_an_output_nan_when_not_available() -> None:
    j1939 = Settings(profile=ProfileSettings(name="j1939"))
    _, profile = prepare(j1939)
    with served(j1939) as (peer, _):
        # ten ticks: the j1939 profile's ECU claims its address first and sends speed from tick 3
        data = protocol.encode(protocol.Datagram(1, 10, 0, (20.0, NAN)))
        answer = protocol.decode(peer.raw(data), None)
    names = [s.name for s in profile.speed.message.signals]
    values = dict(zip(names, answer.values[6:], strict=True))
    on_the_wire = profile.speed.decode(profile.speed.encode(answer.values[SPEED]))
    assert values["WheelBasedVehicleSpeed"] == on_the_wire
    assert math.isnan(values["CruiseCtrlActive"])  # sent as all ones: not available


# -- the class6 truck -------------------------------------------------------------------------------------

CLASS6 = Settings(vehicle=VehicleSettings(preset="class6"),
                  run=RunSettings(initial_speed_kph=50.0))
#: class6 on the j1939 profile, whose DBC carries the brake demand the ECU receives (EBC1)
CLASS6_J1939 = dataclasses.replace(CLASS6, profile=ProfileSettings(name="j1939"))
GEAR, ENGINE_RPM, BRAKE_APPLIED, ELEVATION = 6, 8, 9, 10


def test_class6_with_a_constant_app_gives_the_speed_trace_of_simulate_with_that_app() -> None:
    settings, profile = prepare(CLASS6)
    with Simulation(settings, DriverSetup("pedal", 35.0), profile) as simulation:
        expected = []
        for _ in range(400):
            simulation.loop.run(1)
            driveline = simulation.ecu.vehicle.driveline()
            assert driveline is not None
            expected.append((simulation.ecu.state.speed_kph, float(driveline.gear)))
    with served(CLASS6) as (peer, _):
        answers = [peer.step(1, app=35.0).values for _ in range(400)]
    assert [(a[SPEED], a[GEAR]) for a in answers] == expected


def test_class6_answers_are_bit_identical_however_the_run_is_split() -> None:
    with served(CLASS6_J1939) as (peer, _):
        singles = [peer.step(1, app=70.0).values for _ in range(140)]
    with served(CLASS6_J1939) as (peer, _):
        sevens = [peer.step(7, app=70.0).values for _ in range(20)]
    packed = struct.Struct(f"<{len(singles[0])}d")
    assert [packed.pack(*v) for v in sevens] == [packed.pack(*singles[7 * i + 6]) for i in range(20)]


def test_the_peers_brake_demand_stops_the_class6_truck() -> None:
    with served(CLASS6_J1939) as (peer, _):
        answers = [peer.step(10, app=0.0, grade=0.0, brake=60.0) for _ in range(10)]
    assert answers[0].values[BRAKE_APPLIED] == 60.0
    assert answers[-1].values[SPEED] == 0.0


def test_without_a_brake_in_the_dbc_the_class6_truck_takes_two_inputs_and_never_brakes() -> None:
    with served(CLASS6) as (peer, _):
        assert peer.inputs == 2
        answer = peer.step(10, app=20.0)
    assert answer.values[BRAKE_APPLIED] == 0.0


def test_a_grade_from_the_peer_stands_the_class6_truck_on_that_slope() -> None:
    with served(CLASS6) as (peer, _):
        answer = peer.step(5, app=30.0, grade=4.0)
    assert answer.values[GRADE] == pytest.approx(4.0, rel=1e-12)
    assert math.isnan(answer.values[ELEVATION])


def test_the_class6_answer_reports_gear_and_engine_speed_in_their_ranges() -> None:
    with served(CLASS6) as (peer, _):
        answer = peer.step(50, app=40.0)
    assert 1 <= answer.values[GEAR] <= 6
    assert 700.0 <= answer.values[ENGINE_RPM] <= 2600.0
    assert not math.isnan(answer.values[ELEVATION])
