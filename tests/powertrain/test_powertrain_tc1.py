"""TC1 through the ECU's real interfaces in virtual time: a controller at 0x2A asks the transmission of
``--network powertrain`` (0x03) for neutral; ETC2, ETC1, LFE1 and the transmission's DM1 report it."""

from __future__ import annotations

from collections.abc import Callable

import can
import pytest

from ecu_sim.j1939.dm import DM1_PGN, unpack_dtcs
from ecu_sim.j1939.ids import pgn_of
from ecu_sim.powertrain.engine_control import MISSED_PERIODS
from ecu_sim.powertrain.transmission_control import TC1_PERIOD_S, TIMEOUT_DTC
from ecu_sim.vehicle.class6 import Class6Model, Class6Params
from tests.helpers.powertrainrig import CONTROLLER, Rig, rig
from tests.powertrain.test_powertrain_tsc1 import pedal

START = 100  # every claim stands and the truck runs on its pedal
TICK_S = 0.01
#: TC1 from the controller (0x2A) to the transmission (0x03), priority 3
TC1_ID = 0x0C010300 | CONTROLLER
NEUTRAL = bytes.fromhex("FFFF7DFFFFFFFFFF")
FIFTH_GEAR = bytes.fromhex("FFFF82FFFFFFFFFF")
NO_REQUEST = bytes(8 * [0xFF])
EVERY = round(TC1_PERIOD_S / TICK_S)  # TC1 at its standard rate
TIMEOUT_TICKS = round(MISSED_PERIODS * TC1_PERIOD_S / TICK_S)
IDLE_FUEL_LPH = Class6Model(Class6Params()).fuel.rate_lph(Class6Params().idle_rpm, 0.0)


def tc1(data: bytes) -> can.Message:
    return can.Message(arbitration_id=TC1_ID, data=data, is_extended_id=True)


def run(request: Callable[[int], bytes | None], ticks: int) -> Rig:
    """The cruise control's pedal at 30 % every 5 ticks; from START on, TC1 every 50 ms with what
    ``request`` says for the tick (None: silence)."""
    holder: list[Rig] = []

    def at(k: int) -> list[can.Message]:
        frames = [pedal(holder[0], 30.0)] if k % 5 == 0 else []
        data = request(k) if k >= START and (k - START) % EVERY == 0 else None
        return frames + ([] if data is None else [tc1(data)])

    r = rig(at)
    holder.append(r)
    r.run(ticks)
    return r


def heard(r: Rig, source: int, name: str, signal: str, after: int = 0) -> list[tuple[int, float]]:
    """(tick, value) of ``signal`` in ``name`` from ``source``, as the controller heard it."""
    message = r.database.get_message_by_name(name)
    found = []
    for h in r.controller.from_address(source, pgn_of(message.frame_id)):
        if h.tick >= after:
            decoded = message.decode(bytes(h.msg.data), decode_choices=False)
            assert isinstance(decoded, dict)
            value = decoded[signal]
            assert isinstance(value, int | float)
            found.append((h.tick, float(value)))
    return found


def first_tick(values: list[tuple[int, float]], rule: Callable[[float], bool]) -> int:
    return next(tick for tick, value in values if rule(value))


def test_a_neutral_request_shows_as_gear_0_in_the_transmissions_etc2_within_200_ms() -> None:
    r = run(lambda k: NEUTRAL, START + 40)
    at = first_tick(heard(r, 0x03, "ETC2", "TransCurrentGear", START), lambda gear: gear == 0)
    assert at - START <= round(0.2 / TICK_S)
    assert {gear for _, gear in heard(r, 0x03, "ETC2", "TransSelectedGear", at)} == {0.0}


def test_in_neutral_the_engine_reports_idle_fuel_within_200_ms() -> None:
    r = run(lambda k: NEUTRAL, START + 40)
    rates = heard(r, 0x00, "LFE1", "EngFuelRate", START)
    at = first_tick(rates, lambda rate: rate == pytest.approx(IDLE_FUEL_LPH, abs=0.05))
    assert at - START <= round(0.2 / TICK_S)


def test_in_neutral_etc1_reports_the_driveline_disengaged() -> None:
    r = run(lambda k: NEUTRAL, START + 40)
    assert {v for _, v in heard(r, 0x03, "ETC1", "TransDrivelineEngaged", START + 5)} == {0.0}


def test_a_silent_sender_loses_neutral_after_the_timeout_and_the_transmission_raises_spn_525_fmi_9() -> None:
    stop = START + 50
    r = run(lambda k: NEUTRAL if k < stop else None, stop + 200)
    last_frame = stop - EVERY
    selected = heard(r, 0x03, "ETC2", "TransSelectedGear", stop)
    engaging = first_tick(selected, lambda gear: gear > 0)
    assert engaging - last_frame <= TIMEOUT_TICKS + 1 + round(0.1 / TICK_S)  # ETC2 goes every 100 ms
    dm1 = [(h.tick, [d for d, _ in unpack_dtcs(bytes(h.msg.data))])
           for h in r.controller.from_address(0x03, DM1_PGN)]
    raised = next(tick for tick, dtcs in dm1 if TIMEOUT_DTC in dtcs)
    assert last_frame < raised <= last_frame + TIMEOUT_TICKS + 2


def test_after_neutral_the_clutch_closes_on_a_gear_once_the_engine_is_at_its_speed() -> None:
    stop = START + 50
    r = run(lambda k: NEUTRAL if k < stop else NO_REQUEST, stop + 150)
    current = heard(r, 0x03, "ETC2", "TransCurrentGear", stop)
    engaged = first_tick(current, lambda gear: gear > 0)
    shift_ticks = round(Class6Params().shift_time_s / TICK_S)
    assert engaged - stop >= shift_ticks
    assert not [h for h in r.controller.from_address(0x03, DM1_PGN)
                if TIMEOUT_DTC in [d for d, _ in unpack_dtcs(bytes(h.msg.data))]]


def test_a_request_for_a_driving_gear_is_refused_and_counted() -> None:
    r = run(lambda k: FIFTH_GEAR, START + 40)
    assert 0.0 not in {gear for _, gear in heard(r, 0x03, "ETC2", "TransCurrentGear", START)}
    assert r.ecu.invalid["tc1_refused"] == len(range(START, START + 40, EVERY))
