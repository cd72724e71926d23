"""``--restbus FILE.dbc``: every node of a DBC that ecu-sim does not host is on the bus, as a reader
that is not ecu-sim (python-can and cantools with the same DBC) sees it.

The DBC is examples/restbus/cluster.dbc, an instrument cluster's view of a truck: a tachograph at
0xEE (TCO1, 50 ms), a body controller at 0x21 (AMB, 100 ms; VI on request only) and an engine at
0x00, which the powertrain hosts already and so is left out.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import can
import cantools
import pytest
from cantools.database.can import Database

from tests.conftest import REPO, Cli, Node, Udp

CLUSTER = REPO / "examples" / "restbus" / "cluster.dbc"
TCO1, AMB, VI, ETC1 = 0x0CFE6CEE, 0x18FEF521, 0x18FEEC21, 0x0CF00203
CCVS1_PGN, ADDRESS_CLAIMED_PGN = 0xFEF1, 0xEE00
TACHOGRAPH, BODY = 0xEE, 0x21
RUN = ("--vehicle", "class6", "--profile", "j1939", "--network", "powertrain", "--grade", "0")


def cluster() -> Database:
    database = cantools.database.load_file(str(CLUSTER))
    assert isinstance(database, Database)
    return database


def decode(can_id: int, data: bytearray, scaling: bool = True) -> dict[str, float]:
    """A frame as cantools reads it with the cluster's DBC."""
    decoded = cluster().decode_message(can_id, bytes(data), decode_choices=False, scaling=scaling)
    assert isinstance(decoded, dict)
    return {name: float(value) for name, value in decoded.items()}  # type: ignore[arg-type]


def pgn_source(can_id: int) -> tuple[int, int]:
    pf = (can_id >> 16) & 0xFF
    pgn = (can_id >> 8) & (0x3FF00 if pf < 240 else 0x3FFFF)
    return pgn, can_id & 0xFF


@pytest.fixture
def recording(tmp_path: Path, cli_main: Cli, virtual_time: None, virtual_channel: str) -> list[can.Message]:
    """Ten seconds of the powertrain with the cluster's restbus, recorded in virtual time."""
    log = tmp_path / "restbus.log"
    result = cli_main("-i", "virtual", "-c", virtual_channel, *RUN, "--restbus", str(CLUSTER),
                      "--duration", "10", "--record", str(log))
    assert result.status == 0, result.err
    return list(can.LogReader(str(log)))


def test_each_restbus_node_claims_its_own_address_with_its_dbc_function(recording: list[can.Message]) -> None:
    claims = {pgn_source(m.arbitration_id)[1]: bytes(m.data) for m in recording
              if pgn_source(m.arbitration_id)[0] == ADDRESS_CLAIMED_PGN}
    # the NAME's function is byte 6 (J1939-81); the DBC gives the tachograph 23 and the body 25
    assert claims[TACHOGRAPH][5] == 23 and claims[BODY][5] == 25


def test_a_node_at_an_address_the_powertrain_hosts_is_left_out(recording: list[can.Message]) -> None:
    engine_claims = [m for m in recording if pgn_source(m.arbitration_id) == (ADDRESS_CLAIMED_PGN, 0x00)]
    assert len(engine_claims) == 1  # the hosted engine's claim alone, no second node at 0x00


def test_each_cyclic_message_goes_at_its_dbc_cycle_time(recording: list[can.Message]) -> None:
    # virtual time stamps frames with the host's clock, so the bus's own clock is the transmission's
    # ETC1, sent every 10 ms tick: a message of cycle C has C / 10 ms of them between two of its frames
    database = cluster()
    for can_id in (TCO1, AMB):
        cycle_ms = database.get_message_by_frame_id(can_id).cycle_time
        assert cycle_ms is not None
        gaps, ticks, seen = set(), 0, 0
        for m in recording:
            if m.arbitration_id == ETC1:
                ticks += 1
            elif m.arbitration_id == can_id:
                if seen:
                    gaps.add(ticks)
                ticks, seen = 0, seen + 1
        assert gaps == {cycle_ms // 10}, hex(can_id)
        assert seen >= 9000 // cycle_ms  # from the claim on, to the end of the ten seconds


def test_a_signal_whose_spn_the_truck_has_carries_the_trucks_value(recording: list[can.Message]) -> None:
    last_ccvs1 = None
    compared = 0
    for m in recording:
        pgn, source = pgn_source(m.arbitration_id)
        if pgn == CCVS1_PGN and source == 0x00:
            last_ccvs1 = int.from_bytes(m.data[1:3], "little") / 256.0  # SPN 84, 1/256 km/h
        elif m.arbitration_id == TCO1 and last_ccvs1 is not None:
            speed = decode(TCO1, m.data)["TachographVehicleSpeed"]
            assert speed == pytest.approx(last_ccvs1, abs=0.2)  # the same truck, ticks apart
            compared += 1
    assert compared > 100


def test_a_signal_without_a_truck_spn_carries_its_start_value_else_not_available(
        recording: list[can.Message]) -> None:
    amb = [m for m in recording if m.arbitration_id == AMB][-1]
    decoded = decode(AMB, amb.data, scaling=False)
    assert decoded["CabInteriorTemperature"] == 9376  # GenSigStartValue: 20 degC
    assert decoded["RoadSurfaceTemperature"] == 0xFFFF  # no start value, no truck's value: n/a


def test_an_on_request_message_is_never_sent_unasked(recording: list[can.Message]) -> None:
    assert not [m for m in recording if m.arbitration_id == VI]


def test_a_restbus_node_answers_a_request_for_its_on_request_message(
        start: Callable[..., Node], udp: Udp, udp_bus: can.BusABC) -> None:
    node = start(*udp.args(), *RUN, "--restbus", str(CLUSTER), "--log-level", "debug")
    node.wait_for(r"BODY J1939 SA 0x21 claimed")
    request = can.Message(arbitration_id=0x18EA2180 | 0, data=(0xFEEC).to_bytes(3, "little"),
                          is_extended_id=True)  # Request (PGN 59904) from 0x80 to the body at 0x21
    udp_bus.send(request)
    while (answer := udp_bus.recv(timeout=10.0)) is not None:
        if answer.arbitration_id == VI:
            break
    assert answer is not None and bytes(answer.data) == b"\xff" * 8  # VI with no start value: n/a
    node.stop()
