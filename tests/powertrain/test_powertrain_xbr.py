"""XBR through the ECU's real interfaces in virtual time: a controller at 0x2A asks the brakes of
``--network powertrain`` for an acceleration; the truck's speed in CCVS1, EBC5 and DM1 report."""

from __future__ import annotations

import itertools

import can

from ecu_sim.j1939.dm import DM1_PGN, Dtc, unpack_dtcs
from ecu_sim.j1939.ids import pgn_of
from tests.helpers.powertrainrig import CONTROLLER, Rig, command, rig, settings

#: SPNs of XBR: demand, EBI mode, priority, control mode
DEMAND, EBI, PRIORITY, MODE = 2920, 2914, 2915, 2916
INTEGRATED, FOUNDATION_ONLY = 2, 0
ACC_PRIORITY, MAXIMUM = 2, 2
START = 100
XBR_LOST = Dtc(2920, 9)


def xbr(r: Rig, counter: int, demand: float, ebi: int = INTEGRATED) -> can.Message:
    return command(r.database, "XBR", counter, {EBI: ebi, PRIORITY: ACC_PRIORITY, MODE: MAXIMUM},
                   {DEMAND: demand})


def run(demand: float, ticks: int, ebi: int = INTEGRATED, stop: int | None = None, corrupt: bool = False,
        grade: float = 0.0) -> Rig:
    """The truck coasting at 80 km/h (no pedal), XBR every 20 ms from START until ``stop``."""
    holder: list[Rig] = []

    def at(k: int) -> list[can.Message]:
        if k < START or (stop is not None and k >= stop) or (k - START) % 2:
            return []
        msg = xbr(holder[0], (k - START) // 2, demand, ebi)
        if corrupt:
            msg.data[7] ^= 0x10
        return [msg]

    r = rig(at, settings(grade=grade))
    holder.append(r)
    r.run(ticks)
    return r


def decoded(r: Rig, name: str, source: int) -> list[tuple[int, dict[str, float]]]:
    message = r.database.get_message_by_name(name)
    found = []
    for h in r.controller.from_address(source, pgn_of(message.frame_id)):
        values = message.decode(bytes(h.msg.data), decode_choices=False)
        assert isinstance(values, dict)
        found.append((h.tick, {k: float(v) for k, v in values.items() if isinstance(v, int | float)}))
    return found


def decelerations(r: Rig, after: int) -> list[float]:
    """m/s^2 between successive CCVS1 speeds (100 ms apart) from tick ``after`` on."""
    speeds = [(tick, v["WheelBasedVehicleSpeed"] / 3.6) for tick, v in decoded(r, "CCVS1", 0x00)
              if tick >= after]
    return [(b - a) / ((tb - ta) * 0.01) for (ta, a), (tb, b) in itertools.pairwise(speeds)]


def test_xbr_minus_2_on_the_flat_decelerates_the_truck_at_2_within_a_second() -> None:
    r = run(-2.0, START + 400)
    settled = decelerations(r, START + 100)  # from one second after the first XBR on
    assert settled and all(abs(a + 2.0) <= 0.2 for a in settled), settled


def test_xbr_with_the_foundation_brakes_only_reaches_the_same_deceleration() -> None:
    r = run(-2.0, START + 400, ebi=FOUNDATION_ONLY)
    assert all(abs(a + 2.0) <= 0.2 for a in decelerations(r, START + 100))


def test_ebc5_reports_the_xbr_in_maximum_mode_and_ebc1_the_controller() -> None:
    r = run(-2.0, START + 100)
    ebc5 = [v for tick, v in decoded(r, "EBC5", 0x0B) if tick > START + 10]
    assert {(v["XBRSystemState"], v["XBRActiveControlMode"]) for v in ebc5} == {(0, 3)}  # any accepted; max
    ebc1 = [v for tick, v in decoded(r, "EBC1", 0x0B) if tick > START + 10]
    assert {v["SrcAddrssOfCtrllngDvcForBrakeCtrl"] for v in ebc1} == {CONTROLLER}


def test_an_xbr_with_a_wrong_checksum_brakes_nothing_and_is_counted() -> None:
    r = run(-2.0, START + 101, corrupt=True)
    assert all(a > -0.5 for a in decelerations(r, START))  # coasting, not braking at 2 m/s^2
    assert r.ecu.invalid["xbr_checksum"] == 50


def test_a_lost_xbr_stream_releases_the_brakes_raises_a_dtc_and_refuses_for_a_while() -> None:
    stop = START + 100
    r = run(-2.0, stop + 100, stop=stop)
    dm1 = [(tick, [d for d, _ in unpack_dtcs(bytes(h.msg.data))]) for h in
           r.controller.from_address(0x0B, DM1_PGN) for tick in (h.tick,)]
    raised = next(tick for tick, dtcs in dm1 if XBR_LOST in dtcs)
    assert stop < raised <= stop + 12  # five periods of 20 ms, and the tick after
    states = [v["XBRSystemState"] for tick, v in decoded(r, "EBC5", 0x0B) if tick > stop + 12]
    assert states and set(states) == {2}  # no external brake demand accepted
    assert all(a > -0.5 for a in decelerations(r, stop + 20))


def test_an_xbr_release_whose_demand_is_not_available_still_releases_the_brakes() -> None:
    stop = START + 100
    holder: list[Rig] = []

    def at(k: int) -> list[can.Message]:
        r = holder[0]
        if START <= k < stop and (k - START) % 2 == 0:
            return [xbr(r, (k - START) // 2, -2.0)]
        if k == stop:  # override disabled, the demand left "not available"
            return [command(r.database, "XBR", (k - START) // 2, {EBI: INTEGRATED, PRIORITY: ACC_PRIORITY,
                                                                   MODE: 0})]
        return []

    r = rig(at, settings())
    holder.append(r)
    r.run(stop + 150)
    assert r.ecu.invalid["xbr_not_available"] == 0
    dm1 = {d for h in r.controller.from_address(0x0B, DM1_PGN) for d, _ in unpack_dtcs(bytes(h.msg.data))}
    assert XBR_LOST not in dm1


def driver_brake(r: Rig, pct: float) -> can.Message:
    """EBC1 with the driver's brake pedal at ``pct`` from the cruise control's address (0x11)."""
    message = r.database.get_message_by_name("EBC1")
    values = {s.name: (pct if s.spn == 521 else 3) for s in message.signals}
    return can.Message(arbitration_id=message.frame_id, data=message.encode(values, strict=False),
                       is_extended_id=True)


def test_in_maximum_mode_a_driver_braking_harder_than_the_xbr_brakes_as_the_pedal_asks() -> None:
    holder: list[Rig] = []

    def at(k: int) -> list[can.Message]:
        r = holder[0]
        frames = [driver_brake(r, 60.0)] if k >= START and k % 10 == 0 else []
        if k >= START and (k - START) % 2 == 0:
            frames.append(xbr(r, (k - START) // 2, -0.5))
        return frames

    r = rig(at, settings())
    holder.append(r)
    r.run(START + 100)
    assert r.ecu.brake_demand_pct == 60.0  # the larger: the pedal's, not the XBR's mild demand
    modes = {v["XBRActiveControlMode"] for tick, v in decoded(r, "EBC5", 0x0B) if tick > START + 20}
    assert modes == {3}  # maximum mode, the XBR still in control of the brakes
