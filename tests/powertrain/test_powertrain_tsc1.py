"""TSC1 through the ECU's real interfaces in virtual time: a controller at 0x2A commands the engine of
``--network powertrain`` over the in-process bus, the ECU reports in EEC1 and DM1."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import can
import pytest

from ecu_sim.io.signals import node_state
from ecu_sim.j1939.dm import DM1_PGN, Dtc, unpack_dtcs
from ecu_sim.j1939.ids import pgn_of
from tests.helpers.powertrainrig import CONTROLLER, Rig, command, rig, settings

#: SPNs of TSC1: override mode, priority, torque, rate, purpose
MODE, PRIORITY, TORQUE, RATE, PURPOSE = 695, 897, 518, 3349, 3350
TORQUE_CONTROL, SPEED_TORQUE_LIMIT, DISABLED = 2, 3, 0
#: a TSC1 sender's declared rate codes: 7 is the standard 10 ms, 6 is 20 ms
STANDARD_RATE, RATE_20_MS = 7, 6
#: control purpose P2, cruise control (SPN 3350 code 1), and the torque mode it gives (SPN 899)
P2_CRUISE, CRUISE_MODE = 1, 2
START = 100  # the controller starts once every claim stands and the truck runs on its pedal
TIMEOUT_DTC = Dtc(898, 9)


def tsc1(r: Rig, tick: int, torque: float, mode: int = TORQUE_CONTROL, rate: int = STANDARD_RATE,
         counter: int | None = None) -> can.Message:
    return command(r.database, "TSC1", tick if counter is None else counter,
                   {MODE: mode, PRIORITY: 3, RATE: rate, PURPOSE: P2_CRUISE}, {TORQUE: torque})


def pedal(r: Rig, pct: float) -> can.Message:
    """EEC2 with APP ``pct`` from the cruise control's address (0x11), as the CCM sends it."""
    message = r.database.get_message_by_name("EEC2")
    values = {s.name: (pct if s.spn == 91 else 3) for s in message.signals}
    return can.Message(arbitration_id=message.frame_id, data=message.encode(values, strict=False),
                       is_extended_id=True)


def eec1(r: Rig, after: int) -> list[dict[str, float]]:
    """EEC1 as the controller heard it from tick ``after`` on, decoded, with its ``tick``."""
    message = r.database.get_message_by_name("EEC1")
    found = []
    for h in r.controller.from_address(0x00, pgn_of(message.frame_id)):
        if h.tick >= after:
            decoded = message.decode(bytes(h.msg.data), decode_choices=False)
            assert isinstance(decoded, dict)
            found.append({"tick": float(h.tick), **{k: float(v) for k, v in decoded.items()
                                                    if isinstance(v, int | float)}})
    return found


def engine_dm1(r: Rig) -> list[tuple[int, list[Dtc]]]:
    return [(h.tick, [d for d, _ in unpack_dtcs(bytes(h.msg.data))])
            for h in r.controller.from_address(0x00, DM1_PGN)]


def script(r_ref: list[Rig], commands: Callable[[Rig, int], list[can.Message]],
           app: float = 100.0) -> Callable[[int], list[can.Message]]:
    """The pedal every 5 ticks from the start, and ``commands`` from tick START on."""
    def at(k: int) -> list[can.Message]:
        r = r_ref[0]
        frames = [pedal(r, app)] if k % 5 == 0 else []
        return frames + (commands(r, k) if k >= START else [])
    return at


def run(commands: Callable[[Rig, int], list[can.Message]], ticks: int, **j1939: Any) -> Rig:
    holder: list[Rig] = []
    r = rig(script(holder, commands), settings(**j1939) if j1939 else None)
    holder.append(r)
    r.run(ticks)
    return r


def test_eec1_names_the_controller_and_the_torque_mode_of_its_purpose_while_it_controls() -> None:
    r = run(lambda r, k: [tsc1(r, k, 0.0)], START + 50)
    before = eec1(r, START - 20)[0]
    assert (before["SrcAddrssOfCtrllngDvcForEngCtrl"], before["EngTorqueMode"]) == (0x11, CRUISE_MODE)
    during = eec1(r, START + 10)
    assert {(e["SrcAddrssOfCtrllngDvcForEngCtrl"], e["EngTorqueMode"]) for e in during} == {(CONTROLLER,
                                                                                              CRUISE_MODE)}


def test_a_frame_with_a_wrong_checksum_is_ignored_and_counted() -> None:
    def corrupt(r: Rig, k: int) -> list[can.Message]:
        msg = tsc1(r, k, 0.0)
        msg.data[7] ^= 0x10  # one bit of the checksum
        return [msg]

    # 30 frames from START on, each taken before the tick after it
    r = run(lambda r, k: corrupt(r, k) if k < START + 30 else [], START + 31)
    assert {e["SrcAddrssOfCtrllngDvcForEngCtrl"] for e in eec1(r, START)} == {0x11}
    assert r.ecu.invalid["tsc1_checksum"] == 30


def test_a_sender_that_falls_silent_loses_control_and_the_engine_raises_spn_898_fmi_9() -> None:
    stop = START + 40
    r = run(lambda r, k: [tsc1(r, k, 0.0)] if k < stop else [], stop + 100)
    controller = [(e["tick"], e["SrcAddrssOfCtrllngDvcForEngCtrl"]) for e in eec1(r, stop)]
    lost_at = next(k for k, address in controller if address != CONTROLLER)
    assert lost_at - stop <= 10  # five periods of 10 ms: it lost control within 100 ms
    raised = next(tick for tick, dtcs in engine_dm1(r) if TIMEOUT_DTC in dtcs)
    assert stop < raised <= stop + 10


def test_a_release_in_mode_00_returns_control_without_a_dtc() -> None:
    stop = START + 40
    r = run(lambda r, k: [tsc1(r, k, 0.0, mode=TORQUE_CONTROL if k < stop else DISABLED)], stop + 100)
    assert {e["SrcAddrssOfCtrllngDvcForEngCtrl"] for e in eec1(r, stop + 5)} == {0x11}
    assert all(TIMEOUT_DTC not in dtcs for _, dtcs in engine_dm1(r))


def test_tsc1_from_a_source_not_in_tsc1_sources_is_refused() -> None:
    r = run(lambda r, k: [tsc1(r, k, 0.0)] if k < START + 30 else [], START + 31, tsc1_sources=("0x03",))
    assert {e["SrcAddrssOfCtrllngDvcForEngCtrl"] for e in eec1(r, START)} == {0x11}
    assert r.ecu.invalid["tsc1_refused"] == 30


def speeds(r: Rig, after: int) -> list[float]:
    """The wheel-based speed of CCVS1 from tick ``after`` on, as the controller heard it."""
    message = r.database.get_message_by_name("CCVS1")
    found = []
    for h in r.controller.from_address(0x00, pgn_of(message.frame_id)):
        if h.tick >= after:
            decoded = message.decode(bytes(h.msg.data), decode_choices=False)
            assert isinstance(decoded, dict)
            value = decoded["WheelBasedVehicleSpeed"]
            assert isinstance(value, float)
            found.append(value)
    return found


def test_torque_0_pct_against_a_full_pedal_slows_the_truck() -> None:
    seconds = 300  # ticks: three seconds
    pedal_only = run(lambda r, k: [], START + seconds)
    commanded = run(lambda r, k: [tsc1(r, k, 0.0)], START + seconds)
    at_start = speeds(commanded, START)[0]
    assert speeds(pedal_only, START)[-1] > at_start > speeds(commanded, START)[-1] + 1.0


def test_a_torque_limit_caps_the_torque_the_pedal_asks() -> None:
    r = run(lambda r, k: [tsc1(r, k, 30.0, mode=SPEED_TORQUE_LIMIT)], START + 100)
    during = eec1(r, START + 10)
    assert max(e["EngDemandPercentTorque"] for e in during) <= 30.0 + 1.0
    assert min(e["DriversDemandEngPercentTorque"] for e in during) > 90.0
    assert {e["EngTorqueMode"] for e in during} == {8}  # torque limiting


def test_the_stream_and_mcap_state_of_the_ecu_names_the_controller_and_its_torque_mode() -> None:
    r = run(lambda r, k: [tsc1(r, k, 0.0)], START + 20)
    state = node_state(r.ecu)  # what --stream and an MCAP recording show of the ECU each tick
    assert (state["controlling_address"], state["torque_mode"]) == (CONTROLLER, CRUISE_MODE)


def tsc1_retarder(r: Rig, counter: int, torque: float) -> can.Message:
    return command(r.database, "TSC1_RET", counter, {MODE: TORQUE_CONTROL, PRIORITY: 3, RATE: STANDARD_RATE,
                                                     PURPOSE: P2_CRUISE}, {TORQUE: torque})


def test_tsc1_to_the_retarder_from_a_source_not_in_tsc1_sources_is_refused_and_counted() -> None:
    r = run(lambda r, k: [tsc1_retarder(r, k % 8, -50.0)] if k < START + 30 else [], START + 31,
            tsc1_sources=("0x03",))
    assert r.ecu.invalid["tsc1_retarder_refused"] == 30


def test_tsc1_to_the_retarder_brakes_the_engine_through_the_node() -> None:
    r = run(lambda r, k: [tsc1_retarder(r, k % 8, -50.0)], START + 50)
    message = r.database.get_message_by_name("ERC1")
    heard = [h for h in r.controller.from_address(0x0F, pgn_of(message.frame_id)) if h.tick >= START + 20]
    assert heard
    for h in heard:
        decoded = message.decode(bytes(h.msg.data), decode_choices=False)
        assert isinstance(decoded, dict)
        assert decoded["SrcAddrssOfCtrllngDvcForRetarder"] == CONTROLLER
        torque = decoded["ActualRetarderPercentTorque"]
        assert isinstance(torque, int | float) and torque < 0.0


def test_a_lost_tsc1_sender_is_logged_once_however_often_it_falls_silent(
        caplog: pytest.LogCaptureFixture) -> None:
    def bursts(r: Rig, k: int) -> list[can.Message]:  # 20 frames, 30 ticks of silence, again and again
        return [tsc1(r, k, 0.0, counter=k % 8)] if (k - START) % 50 < 20 else []

    with caplog.at_level(logging.WARNING):
        r = run(bursts, START + 200)
    lost = [rec for rec in caplog.records if "TSC1 to the engine" in rec.getMessage()]
    assert len(lost) == 1
    assert r.ecu.invalid["tsc1_refused"] == 0
