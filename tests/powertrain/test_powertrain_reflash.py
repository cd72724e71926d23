"""A reflash of a powertrain node over UDS in virtual time has effect: after the reset the node runs
the new calibration (the engine governs the truck to a lower road speed limit), DM19 and the
software identification report it; a download cut short leaves the node in boot mode on its next
start, and a second download recovers it."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import can
import pytest

from ecu_sim.calibration.image import Image
from ecu_sim.j1939.dm import DM1_PGN, Dtc, unpack_dtcs
from ecu_sim.j1939.dm19 import DM19_PGN, parse_dm19
from ecu_sim.j1939.ident import SOFTWARE_ID_PGN, split_fields
from ecu_sim.j1939.ids import pgn_of
from ecu_sim.member.application import APPLICATION_NOT_VALID
from ecu_sim.nodes.calibrated import builtin_image
from ecu_sim.runs.prepare import prepare
from ecu_sim.settings.diagnostics import DiagnosticsSettings
from ecu_sim.settings.model import Settings
from ecu_sim.vehicle.class6 import Class6State
from tests.helpers.flasher import Flasher, download, reflash, unlock
from tests.helpers.powertrainrig import Rig, global_request, rig, settings
from tests.powertrain.test_fms_vin import BAM, reassembled

ENGINE = 0x00
TRANSMISSION = 0x03
BRAKES = 0x0B
RETARDER = 0x0F
#: SPN 556, the retarder's reference torque (RC)
RETARDER_REFERENCE = 556
#: SPN 2921, the XBR acceleration limit the brakes report (EBC5)
XBR_LIMIT = 2921
LIMIT_KPH = 30.0
EEC1_PGN = 61444
ADDRESS_CLAIMED_PGN = 60928


def standing(state_dir: Path | None = None) -> Settings:
    given = settings(initial_speed=0.0)
    return dataclasses.replace(given, diagnostics=DiagnosticsSettings(
        state_dir=None if state_dir is None else str(state_dir)))


def slow_engine() -> Image:
    return builtin_image("engine", settings()).changed({"road_speed_limit_kph": LIMIT_KPH}, "SLOW-30")


def pedal(r: Rig, pct: float) -> can.Message:
    """EEC2 with APP ``pct`` from the DBC's sender, as a driver's pedal."""
    message = r.database.get_message_by_name("EEC2")
    values = {s.name: (pct if s.spn == 91 else 3) for s in message.signals}
    return can.Message(arbitration_id=message.frame_id, data=message.encode(values, strict=False),
                       is_extended_id=True)


def drive(given: Settings, flasher: Flasher | None, ticks: int,
          extra: Callable[[int], list[can.Message]] | None = None, pct: float = 100.0,
          gears: list[int] | None = None) -> tuple[Rig, list[float]]:
    """The rig with ``flasher`` from its start tick; the pedal at ``pct`` once it is done (or from
    tick 100 without one); the truck's speed at each tick (and its gear, into ``gears``)."""
    speeds: list[float] = []
    holder: list[Rig] = []

    def script(k: int) -> list[can.Message]:
        r = holder[0]
        speeds.append(r.ecu.state.speed_kph)
        if gears is not None:
            state = r.ecu.state
            assert isinstance(state, Class6State)
            gears.append(state.gear)
        frames = [] if flasher is None else flasher(k)
        driving = flasher.done if flasher is not None else k >= 100
        if driving and k % 5 == 0:
            frames.append(pedal(r, pct))
        return frames + ([] if extra is None else extra(k))

    r = rig(script, given)
    holder.append(r)
    if flasher is not None:
        flasher.controller = r.controller
    r.run(ticks)
    return r, speeds


def test_a_reflashed_engine_governs_the_truck_to_its_new_road_speed_limit() -> None:
    flasher = Flasher(ENGINE, reflash(slow_engine()), start=100)
    _, speeds = drive(standing(), flasher, 6000)
    assert flasher.done and flasher.refused is None, flasher.answers
    _, unlimited = drive(standing(), None, 6000)
    assert max(unlimited) > LIMIT_KPH + 10.0  # the same drive without the reflash goes well past it
    assert speeds[-1] > LIMIT_KPH - 3.0 and max(speeds) <= LIMIT_KPH + 0.5


def test_after_the_reset_dm19_and_the_software_identification_report_the_new_calibration() -> None:
    image = slow_engine()
    flasher = Flasher(ENGINE, reflash(image), start=100)
    asked: list[int] = []
    reset_heard: list[int] = []

    def ask(k: int) -> list[can.Message]:
        if flasher.done and not reset_heard:
            reset_heard.append(k)
        if reset_heard and k >= reset_heard[0] + 10 and len(asked) < 2:  # the reset done meanwhile
            asked.append(k)
            return [global_request(DM19_PGN if len(asked) == 1 else SOFTWARE_ID_PGN)]
        return []

    r, _ = drive(standing(), flasher, 1500, ask)
    got = dict(reassembled([h.msg for h in r.controller.heard if h.tick >= asked[0]], ENGINE, BAM))
    assert parse_dm19(got[DM19_PGN]) == [(image.cvn, "SLOW-30")]
    assert split_fields(got[SOFTWARE_ID_PGN][1:])[-1] == "calibration SLOW-30"


def test_a_reflashed_transmission_shifts_up_later() -> None:
    late = builtin_image("transmission", settings()).changed({"up_rpm_at_0": 1800.0, "up_rpm_at_100": 2400.0},
                                                             "LATE-UP")
    flasher = Flasher(TRANSMISSION, reflash(late), start=100)
    flashed: list[int] = []
    _, speeds = drive(standing(), flasher, 4000, pct=30.0, gears=flashed)
    assert flasher.done and flasher.refused is None, flasher.answers
    as_built: list[int] = []
    _, built_in = drive(standing(), None, 4000, pct=30.0, gears=as_built)

    def gear_at(kph: float, drove: list[float], gears: list[int]) -> int:
        return gears[next(i for i, v in enumerate(drove) if v >= kph)]

    assert gear_at(35.0, speeds, flashed) < gear_at(35.0, built_in, as_built)


def sent(r: Rig, source: int, spn: int) -> list[float]:
    """The value of ``spn`` in each message that carries it from ``source``, decoded with the DBC."""
    message = next(m for m in r.database.messages if any(s.spn == spn for s in m.signals))
    name = next(s.name for s in message.signals if s.spn == spn)
    found = []
    for h in r.controller.from_address(source, pgn_of(message.frame_id)):
        decoded = message.decode(bytes(h.msg.data), decode_choices=False)
        assert isinstance(decoded, dict)
        value = decoded[name]
        assert isinstance(value, int | float)
        found.append(float(value))
    return found


def test_reflashed_brakes_report_their_new_deceleration_limit() -> None:
    soft = builtin_image("brakes", settings()).changed({"max_brake_decel_g": 0.3}, "SOFT-BRK")
    flasher = Flasher(BRAKES, reflash(soft), start=100)
    r, _ = drive(standing(), flasher, 1500, pct=0.0)
    assert flasher.done and flasher.refused is None, flasher.answers
    limits = sent(r, BRAKES, XBR_LIMIT)
    assert limits[0] == pytest.approx(-0.6 * 9.80665, abs=0.2)  # the built-in image's 0.6 g
    assert limits[-1] == pytest.approx(-0.3 * 9.80665, abs=0.2)


def test_a_reflashed_retarder_reports_its_new_reference_torque() -> None:
    half = builtin_image("retarder", settings()).changed({"retarder_max_nm": 400.0}, "HALF-RET")
    flasher = Flasher(RETARDER, reflash(half), start=100)
    rc = next(m for m in prepare(settings())[1].database.messages
              if any(s.spn == RETARDER_REFERENCE for s in m.signals))
    asked: list[int] = []
    done: list[int] = []

    def ask(k: int) -> list[can.Message]:  # RC on request (by BAM), before the reflash and after it
        if flasher.done and not done:
            done.append(k)
        if k == 50 or (done and k == done[0] + 10):
            asked.append(k)
            return [global_request(pgn_of(rc.frame_id))]
        return []

    r, _ = drive(standing(), flasher, 1500, ask, pct=0.0)
    name = next(s.name for s in rc.signals if s.spn == RETARDER_REFERENCE)
    references = []
    for pgn, data in reassembled([h.msg for h in r.controller.heard], RETARDER, BAM):
        decoded = rc.decode(data, decode_choices=False)
        if pgn == pgn_of(rc.frame_id) and isinstance(decoded, dict):
            references.append(decoded[name])
    assert len(asked) == 2 and (references[0], references[-1]) == (800.0, 400.0)


def test_a_transmission_image_the_truck_cannot_drive_is_refused_by_the_dependency_check() -> None:
    hunting = builtin_image("transmission", settings()).changed({"down_rpm_at_100": 2000.0}, "HUNTS")
    flasher = Flasher(TRANSMISSION, [*unlock(0x03), *unlock(0x02), *download(hunting)], start=100)
    drive(standing(), flasher, 1500)
    assert flasher.answers[-1] == b"\x7f\x31\x72"  # general programming failure: nothing committed


def engine_dtcs(r: Rig) -> set[Dtc]:
    return {d for h in r.controller.from_address(ENGINE, DM1_PGN) for d, _ in unpack_dtcs(bytes(h.msg.data))}


def cut_short(state_dir: Path) -> None:
    """A download that stops half-way through its blocks: the process ends there."""
    steps = [*unlock(0x03), *unlock(0x02), *download(slow_engine())]
    flasher = Flasher(ENGINE, steps[:steps.index(b"\x37") - 30], start=100)
    drive(standing(state_dir), flasher, 900)
    assert flasher.done and flasher.refused is None, flasher.answers


def test_a_download_cut_short_leaves_the_engine_in_boot_mode_on_its_next_start(tmp_path: Path) -> None:
    cut_short(tmp_path)
    flasher = Flasher(ENGINE, [b"\x10\x02", b"\x22\xf1\xa0", b"\x19\x02\xff"], start=200)
    r, _ = drive(standing(tmp_path), flasher, 600)
    assert r.controller.from_address(ENGINE, ADDRESS_CLAIMED_PGN)  # it claims its address
    assert not r.controller.from_address(ENGINE, EEC1_PGN)  # and sends no application message
    assert APPLICATION_NOT_VALID in engine_dtcs(r)
    assert flasher.answers[0][:2] == b"\x50\x02" and flasher.answers[1][:3] == b"\x62\xf1\xa0"
    assert flasher.answers[2][3:6] == bytes((630 & 0xFF, 630 >> 8, 13))  # ReadDTC: SPN 630 FMI 13


def test_an_engine_in_boot_mode_obeys_no_pedal(tmp_path: Path) -> None:
    cut_short(tmp_path)
    _, full = drive(standing(tmp_path), None, 3000)
    _, none = drive(standing(tmp_path), None, 3000, pct=0.0)
    _, running = drive(standing(), None, 3000)
    assert full == none and max(full) < max(running) - 10.0


def test_a_second_complete_download_and_a_reset_recover_the_engine(tmp_path: Path) -> None:
    cut_short(tmp_path)
    flasher = Flasher(ENGINE, [*unlock(0x02), *download(slow_engine(), erase=False), b"\x11\x01"], start=100)
    r, speeds = drive(standing(tmp_path), flasher, 4000)
    assert flasher.done and flasher.refused is None, flasher.answers
    eec1 = [h.tick for h in r.controller.from_address(ENGINE, EEC1_PGN)]
    assert eec1 and LIMIT_KPH - 5.0 < speeds[-1] <= LIMIT_KPH + 0.5
