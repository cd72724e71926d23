"""Where a node's J1939 identity comes from: the DBC, the [j1939] section, the command line."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import can
import pytest

from ecu_sim.errors import ConfigError
from ecu_sim.faults.spec import parse_fault
from ecu_sim.j1939.frames import ADDRESS_CLAIMED_PGN, TP_DT_PGN
from ecu_sim.j1939.ident import COMPONENT_ID_PGN
from ecu_sim.j1939.ids import make_id, pgn_of, source_address_of
from ecu_sim.j1939.name import Name
from ecu_sim.j1939.request import request
from ecu_sim.settings import load as config
from ecu_sim.settings.model import J1939Settings
from tests.helpers.nodebench import Bench, settings
from tests.settings.test_config import cli, write_ini


def test_the_j1939_section_and_hex_addresses_are_read_from_the_ini_file(tmp_path: Path) -> None:
    path = write_ini(tmp_path, "[j1939]\naddress = 0x30\naddress_claim = no\ncomponent_id = acme*x1*7*\n")
    loaded = config.load(cli(config=path), environ={})
    assert loaded.j1939 == J1939Settings(address_claim=False, address=0x30, component_id="acme*x1*7*")


def test_the_command_line_address_wins_over_the_file(tmp_path: Path) -> None:
    path = write_ini(tmp_path, "[j1939]\naddress = 0x30\n")
    assert config.load(cli(config=path, j1939__address=0x31), environ={}).j1939.address == 0x31


def test_an_address_outside_0_to_253_names_the_key_and_the_file(tmp_path: Path) -> None:
    path = write_ini(tmp_path, "[j1939]\naddress = 254\n")
    with pytest.raises(ConfigError, match=r"address.*ecu-sim.ini"):
        config.load(cli(config=path), environ={})


def test_a_dtc_fault_needs_spn_and_fmi() -> None:
    assert parse_fault("dtc=91:9@1-2").dtc == (91, 9)
    with pytest.raises(ConfigError, match="SPN:FMI"):
        parse_fault("dtc=91")


def test_the_settings_address_and_name_fields_override_the_dbc() -> None:
    j1939 = J1939Settings(address=0x30, identity_number=77, arbitrary_address_capable=True)
    bench = Bench("ecu", dataclasses.replace(settings(profile="j1939", address_claim=True), j1939=j1939))
    bench.tick()
    (claim,) = bench.sent()
    found = (pgn_of(claim.arbitration_id), source_address_of(claim.arbitration_id))
    assert found == (ADDRESS_CLAIMED_PGN, 0x30)
    name = Name.from_bytes(bytes(claim.data))
    assert (name.identity_number, name.arbitrary_address_capable) == (77, True)


def test_the_configured_component_id_is_what_the_node_broadcasts_on_a_global_request() -> None:
    j1939 = J1939Settings(address_claim=False, component_id="acme*x1*7*u")
    bench = Bench("ccm", dataclasses.replace(settings(profile="j1939"), j1939=j1939))
    pdu = request(COMPONENT_ID_PGN)
    bench.send_raw(can.Message(arbitration_id=make_id(pdu.pgn, 0xF9), data=pdu.data))
    bench.tick(4)
    packets = [bytes(m.data) for m in bench.sent() if pgn_of(m.arbitration_id) == TP_DT_PGN]
    assert b"".join(p[1:] for p in packets).rstrip(b"\xff") == b"acme*x1*7*u*"
