"""DM19 (PGN 54016) on request: each node answers with its active calibration's CVN and ID, and a
node started from a given image names it in its software identification too."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from ecu_sim import __version__
from ecu_sim.calibration.files import write_image
from ecu_sim.j1939.dm19 import DM19_PGN, NodeCalibration, dm19, parse_dm19
from ecu_sim.j1939.ident import SOFTWARE_ID_PGN, split_fields
from ecu_sim.nodes.calibrated import builtin_image, class6_base
from ecu_sim.powertrain.calibrated import builtin_vehicle_image
from ecu_sim.settings.model import CalibrationSettings
from tests.helpers.powertrainrig import global_request, rig, settings
from tests.powertrain.test_fms_vin import BAM, reassembled

NODES = {"engine": 0x00, "transmission": 0x03, "brakes": 0x0B, "retarder": 0x0F}


def answers(given: CalibrationSettings, pgn: int) -> dict[str, bytes]:
    """What each powertrain node sends to a global Request for ``pgn`` (by BAM: longer than 8 bytes)."""
    r = rig(lambda k: [global_request(pgn)] if k == 300 else [],
            dataclasses.replace(settings(), calibration=given))
    r.run(400)
    heard = [h.msg for h in r.controller.heard]
    return {node: payload for node, address in NODES.items()
            for got, payload in reassembled(heard, address, BAM) if got == pgn}


def test_dm19_is_the_cvn_little_endian_then_the_calibration_id_in_16_nul_padded_bytes() -> None:
    assert dm19((NodeCalibration(0x12345678, "ABC"),)) == bytes.fromhex("78563412") + b"ABC" + bytes(13)


def test_every_powertrain_node_answers_dm19_with_its_built_in_calibration() -> None:
    got = answers(CalibrationSettings(), DM19_PGN)
    base = class6_base(settings())
    assert {node: parse_dm19(payload) for node, payload in got.items()} == {
        node: [(builtin_vehicle_image(node, base).cvn, builtin_vehicle_image(node, base).calibration_id)]
        for node in NODES}


def test_an_engine_started_from_an_image_reports_its_cvn_and_id(tmp_path: Path) -> None:
    image = builtin_image("engine", settings()).changed({"road_speed_limit_kph": 80.0}, "SLOW-80")
    write_image(image, tmp_path / "slow.s19")
    got = answers(CalibrationSettings(engine=str(tmp_path / "slow.s19")), DM19_PGN)
    assert parse_dm19(got["engine"]) == [(image.cvn, "SLOW-80")]


def test_the_software_identification_names_a_given_calibration_not_the_built_in_one(tmp_path: Path) -> None:
    image = builtin_image("engine", settings()).changed({}, "GIVEN-1")
    write_image(image, tmp_path / "given.hex")
    given = answers(CalibrationSettings(engine=str(tmp_path / "given.hex")), SOFTWARE_ID_PGN)["engine"]
    assert split_fields(given[1:])[-1] == "calibration GIVEN-1" and given[0] == 2
    built_in = answers(CalibrationSettings(), SOFTWARE_ID_PGN)
    assert split_fields(built_in["engine"][1:]) == [f"ecu-sim {__version__}"]
