"""CCVS1's cruise and brake fields from what the engine and the brakes obey, through the ECU of
``--network powertrain`` in virtual time.

The cruise control (0x11) either drives with its APP (EEC2) or commands by TSC1 with the cruise
purpose, its EEC2 then carrying the driver's pedal; a driver elsewhere on the bus sends EEC2 from
its own address. The test controller sends these frames under whichever address each needs.
"""

from __future__ import annotations

from collections.abc import Callable

import can

from ecu_sim.codec.command import CommandCodec
from ecu_sim.j1939.ids import pgn_of
from tests.helpers.powertrainrig import Rig, command, rig

CRUISE, DRIVER = 0x11, 0x27
START = 100
#: TSC1 SPNs: override mode, priority, torque, rate, purpose; P2 cruise is code 1
MODE, PRIORITY, TORQUE, RATE, PURPOSE = 695, 897, 518, 3349, 3350
#: XBR SPNs: demand, EBI mode, priority, control mode
DEMAND, EBI, XBR_PRIORITY, XBR_MODE = 2920, 2914, 2915, 2916
HOLD, OFF, OVERRIDE = 1, 0, 6


def eec2(r: Rig, pct: float, source: int) -> can.Message:
    message = r.database.get_message_by_name("EEC2")
    values = {s.name: (pct if s.spn == 91 else 3) for s in message.signals}
    frame_id = (message.frame_id & ~0xFF) | source
    data = message.encode(values, strict=False)
    return can.Message(arbitration_id=frame_id, data=data, is_extended_id=True)


def tsc1(r: Rig, k: int, mode: int, torque: float = 30.0) -> can.Message:
    """TSC1 of the cruise purpose from the cruise control's address, sealed for that address."""
    codec = CommandCodec(r.database.get_message_by_name("TSC1"), CRUISE)
    data = codec.encode({MODE: mode, PRIORITY: 3, RATE: 7, PURPOSE: 1}, {TORQUE: torque}, k % 8)
    return can.Message(arbitration_id=codec.frame_id, data=data, is_extended_id=True)


def run(frames: Callable[[Rig, int], list[can.Message]], ticks: int) -> Rig:
    holder: list[Rig] = []
    r = rig(lambda k: frames(holder[0], k))
    holder.append(r)
    r.run(ticks)
    return r


def ccvs1(r: Rig, after: int, before: int) -> list[dict[str, float]]:
    message = r.database.get_message_by_name("CCVS1")
    found = []
    for h in r.controller.from_address(0x00, pgn_of(message.frame_id)):
        if after <= h.tick < before:
            decoded = message.decode(bytes(h.msg.data), decode_choices=False)
            assert isinstance(decoded, dict)
            found.append({k: float(v) for k, v in decoded.items() if isinstance(v, int | float)})
    return found


def fields(r: Rig, after: int, before: int, *names: str) -> set[tuple[float, ...]]:
    return {tuple(v[n] for n in names) for v in ccvs1(r, after, before)}


def test_cruise_reads_active_enabled_and_hold_while_the_cruise_controls_app_drives() -> None:
    r = run(lambda r, k: [eec2(r, 30.0, CRUISE)], START + 50)
    assert fields(r, START, START + 50, "CruiseCtrlActive", "CruiseCtrlEnableSwitch",
                  "CruiseCtrlStates") == {(1, 1, HOLD)}


def test_cruise_reads_off_but_enabled_once_the_cruise_controls_app_drops_to_zero() -> None:
    r = run(lambda r, k: [eec2(r, 30.0 if k < START else 0.0, CRUISE)], START + 50)
    assert fields(r, START + 10, START + 50, "CruiseCtrlActive", "CruiseCtrlEnableSwitch",
                  "CruiseCtrlStates") == {(0, 1, OFF)}


def test_cruise_reads_hold_while_a_cruise_purpose_tsc1_drives_beside_a_drivers_eec2() -> None:
    r = run(lambda r, k: [tsc1(r, k, mode=2), eec2(r, 0.0, CRUISE), eec2(r, 0.0, DRIVER)], START + 50)
    assert fields(r, START, START + 50, "CruiseCtrlActive", "CruiseCtrlStates") == {(1, HOLD)}


def test_the_drivers_pedal_after_a_released_cruise_tsc1_reads_accelerator_override() -> None:
    def frames(r: Rig, k: int) -> list[can.Message]:
        overriding = k >= START
        return [tsc1(r, k, mode=0 if overriding else 2), eec2(r, 60.0 if overriding else 0.0, CRUISE)]
    r = run(frames, START + 50)
    assert fields(r, START + 10, START + 50, "CruiseCtrlActive", "CruiseCtrlStates") == {(1, OVERRIDE)}


def test_a_cancelled_cruise_with_the_pedal_released_reads_off() -> None:
    def frames(r: Rig, k: int) -> list[can.Message]:
        return [tsc1(r, k, mode=2 if k < START else 0), eec2(r, 0.0, CRUISE)]
    r = run(frames, START + 50)
    assert fields(r, START + 10, START + 50, "CruiseCtrlActive", "CruiseCtrlEnableSwitch",
                  "CruiseCtrlStates") == {(0, 1, OFF)}


def test_without_a_cruise_control_on_the_bus_the_enable_switch_is_off() -> None:
    r = run(lambda r, k: [eec2(r, 30.0, DRIVER)], START + 50)
    assert fields(r, START, START + 50, "CruiseCtrlActive", "CruiseCtrlEnableSwitch",
                  "CruiseCtrlStates") == {(0, 0, OFF)}


def test_the_set_speed_is_not_available_since_the_cruise_control_does_not_send_it() -> None:
    r = run(lambda r, k: [eec2(r, 30.0, CRUISE)], START + 50)
    assert fields(r, START, START + 50, "CruiseCtrlSetSpeed") == {(255,)}


def xbr(r: Rig, k: int) -> can.Message:
    """XBR -2 m/s^2 from the controller, maximum mode, every 20 ms."""
    return command(r.database, "XBR", k // 2 % 16, {EBI: 2, XBR_PRIORITY: 2, XBR_MODE: 2}, {DEMAND: -2.0})


def xbr_run() -> Rig:
    return run(lambda r, k: [xbr(r, k)] if k >= START and k % 2 == 0 else [], START + 50)


def decoded(r: Rig, name: str, source: int, after: int) -> list[dict[str, float]]:
    message = r.database.get_message_by_name(name)
    found = []
    for h in r.controller.from_address(source, pgn_of(message.frame_id)):
        if h.tick >= after:
            values = message.decode(bytes(h.msg.data), decode_choices=False)
            assert isinstance(values, dict)
            found.append({k: float(v) for k, v in values.items() if isinstance(v, int | float)})
    return found


def test_xbr_braking_leaves_the_drivers_brake_switches_off() -> None:
    r = xbr_run()
    assert fields(r, START + 10, START + 50, "BrakeSwitch") == {(0,)}
    assert {(v["EBSBrakeSwitch"], v["BrakePedalPosition"]) for v in decoded(r, "EBC1", 0x0B, START + 10)} == {
        (0, 0.0)}


def test_xbr_braking_reports_the_foundation_brakes_in_use() -> None:
    r = xbr_run()
    assert {v["FoundationBrakeUse"] for v in decoded(r, "EBC5", 0x0B, START + 10)} == {1}
