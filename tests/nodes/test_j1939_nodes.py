"""The ECU and the CCM as J1939 network members, through the factory on a real python-can bus."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import can
import pytest

from ecu_sim.j1939.dm import DM1_PGN, DM11_PGN, Dtc, unpack_dtcs
from ecu_sim.j1939.frames import ACKNOWLEDGEMENT_PGN, ADDRESS_CLAIMED_PGN, TP_CM_PGN
from ecu_sim.j1939.ident import SOFTWARE_ID_PGN
from ecu_sim.j1939.ids import make_id, pgn_of, source_address_of
from ecu_sim.j1939.name import Name
from ecu_sim.j1939.request import NACK, request
from ecu_sim.member.part import BUS_OFF
from ecu_sim.runs import replay
from ecu_sim.settings.model import Settings, VehicleSettings
from tests.helpers.nodebench import Bench, settings

#: CCVS1, the ECU's wheel-based speed
SPEED_PGN = 65265
#: ETC2, the transmission's gears, one of a class6 ECU's periodic messages
ETC2_PGN = 61445

TOOL = 0xF9


OPEN: list[Bench] = []


@pytest.fixture(autouse=True)
def _close_benches() -> Iterator[None]:
    yield
    while OPEN:
        OPEN.pop().close()


def j1939_bench(kind: str = "ecu", faults: tuple[str, ...] = (), record_to: str | None = None) -> Bench:
    """A node of the j1939 profile with its default J1939 settings (address claim on)."""
    bench = Bench(kind, settings(profile="j1939", address_claim=None), faults=faults, record_to=record_to)
    OPEN.append(bench)
    return bench


def error_frame(can_id: int) -> can.Message:
    return can.Message(arbitration_id=can_id, is_error_frame=True, is_extended_id=False, data=bytes(8))


def ask(bench: Bench, pgn: int, destination: int = 0xFF) -> None:
    pdu = request(pgn, destination)
    bench.send_raw(can.Message(arbitration_id=make_id(pdu.pgn, TOOL, destination), data=pdu.data))


def pgns(frames: list[can.Message]) -> list[int]:
    return [pgn_of(m.arbitration_id) for m in frames]


def dm1s(frames: list[can.Message]) -> list[list[tuple[Dtc, int]]]:
    return [unpack_dtcs(bytes(m.data)) for m in frames if pgn_of(m.arbitration_id) == DM1_PGN]


def test_the_ecu_claims_its_dbc_address_first_and_sends_speed_only_after_the_claim_delay() -> None:
    bench = j1939_bench()
    sent = []
    for _ in range(5):
        bench.tick()
        sent.append([m for m in bench.sent() if m.arbitration_id == bench.out.frame_id])
    assert [len(s) for s in sent] == [0, 0, 0, 1, 1]


def test_the_first_frame_of_a_j1939_node_is_its_address_claim_from_the_dbcs_station_address() -> None:
    bench = j1939_bench("ccm")
    bench.tick()
    (claim,) = bench.sent()
    found = (pgn_of(claim.arbitration_id), source_address_of(claim.arbitration_id))
    assert found == (ADDRESS_CLAIMED_PGN, 0x11)


def test_with_the_amp_profile_the_bus_carries_only_the_testbed_frame_by_default() -> None:
    bench = Bench("ecu", settings(profile="amp", address_claim=None))
    OPEN.append(bench)
    bench.tick(25)
    assert {m.arbitration_id for m in bench.sent()} == {bench.out.frame_id}


def test_the_ecu_sets_spn_91_fmi_9_once_app_is_missing_past_its_timeout_and_broadcasts_it() -> None:
    bench = j1939_bench()
    for _ in range(5):
        bench.send_value(20.0)
        bench.tick()
    bench.sent()
    bench.tick(3)
    assert dm1s(bench.sent()) == [[(Dtc(91, 9), 1)]]
    assert "DTC 1 active" in bench.node.status_line()


def test_app_arriving_as_the_error_indicator_sets_spn_91_fmi_19() -> None:
    bench = j1939_bench()
    bench.tick(4)
    bench.send(b"\xff\xfe" + b"\xff" * 6)  # AccelPedalPos1 = 0xFE, the error indicator
    bench.tick()
    assert bench.node.network is not None
    assert [d for d, _ in bench.node.network.network.dtcs.active()] == [Dtc(91, 19)]


def test_an_injected_dtc_is_active_in_its_window_only() -> None:
    bench = j1939_bench("ccm", faults=("dtc=520:31@0.5-0.8",))
    for _ in range(12):
        bench.send_value(80.0)
        bench.tick()
    broadcast = dm1s(bench.sent())
    assert [(Dtc(520, 31), 1)] in broadcast and broadcast[-1] == []


def test_a_dtc_whose_window_still_holds_is_set_again_at_the_tick_after_a_dm11() -> None:
    bench = j1939_bench("ccm", faults=("dtc=520:31@0.5-5",))
    for tick in range(10):
        bench.send_value(80.0)
        if tick == 8:
            ask(bench, DM11_PGN)
        bench.tick()
        if tick == 8:
            bench.sent()  # what went out up to the clear
    assert [(Dtc(520, 31), 1)] in dm1s(bench.sent())  # the tick after: active again, at once


def test_a_request_for_the_nodes_periodic_pgn_is_answered_with_its_latest_payload() -> None:
    bench = j1939_bench()
    bench.tick(4)
    bench.sent()
    ask(bench, pgn_of(bench.out.frame_id), destination=0x00)
    bench.tick()
    frames = [m for m in bench.sent() if m.arbitration_id == bench.out.frame_id]
    assert len(frames) == 2 and frames[0].data == frames[1].data


def test_an_addressed_request_for_an_unsupported_pgn_is_nacked_by_the_node() -> None:
    bench = j1939_bench()
    bench.tick(4)
    bench.sent()
    ask(bench, 0xFEE5, destination=0x00)
    bench.tick()
    (nack,) = [m for m in bench.sent() if pgn_of(m.arbitration_id) == ACKNOWLEDGEMENT_PGN]
    assert (nack.data[0], nack.data[4]) == (NACK, TOOL)


def test_a_global_request_for_software_id_is_broadcast_through_bam() -> None:
    bench = j1939_bench()
    bench.tick(4)
    bench.sent()
    ask(bench, SOFTWARE_ID_PGN)
    bench.tick()
    assert TP_CM_PGN in pgns(bench.sent())


def test_the_status_line_shows_the_claimed_address_and_the_active_dtc_count() -> None:
    bench = j1939_bench()
    bench.tick(7)  # no APP: missing past the input timeout, counted from the end of the claim wait
    assert "J1939 SA 0x00 claimed | DTC 1 active" in bench.node.status_line()


def test_claims_requests_and_dm1_replay_bit_for_bit_from_a_recording(tmp_path: Path) -> None:
    log = tmp_path / "ecu.log"
    bench = j1939_bench(faults=("dtc=520:31@1-2",), record_to=str(log))
    for tick in range(40):
        if tick < 15:
            bench.send_value(30.0)
        if tick in (5, 25):
            ask(bench, SOFTWARE_ID_PGN, destination=0x00)
        if tick == 30:
            ask(bench, 0xFEE5, destination=0x00)
        bench.tick()
    OPEN.remove(bench)
    bench.close()  # the recording is complete once the bench is closed
    sent = pgns(bench.sent())
    assert {ADDRESS_CLAIMED_PGN, DM1_PGN, TP_CM_PGN, ACKNOWLEDGEMENT_PGN} <= set(sent)
    result = replay.replay(str(log))
    assert result.identical and result.ticks == 40 and result.frames == len(sent)


def test_a_bus_off_episode_is_a_dtc_that_becomes_previously_active_after_the_restart() -> None:
    bench = j1939_bench("ccm")
    bench.tick(4)
    bench.send_raw(error_frame(0x040))  # CAN_ERR_BUSOFF
    bench.tick()
    assert bench.node.network is not None
    dtcs = bench.node.network.network.dtcs
    assert (BUS_OFF, 1) in dtcs.active()
    bench.send_raw(error_frame(0x100))  # CAN_ERR_RESTARTED
    bench.tick()
    assert (BUS_OFF, 1) not in dtcs.active() and (BUS_OFF, 1) in dtcs.previously_active()


def test_a_missing_input_is_no_fault_while_a_peer_that_starts_with_the_node_still_claims() -> None:
    bench = j1939_bench()
    bench.tick(6)  # the claim wait (3 ticks) and the input timeout (3 ticks)
    assert "DTC 0 active" in bench.node.status_line()


def test_a_class6_ecu_answers_a_request_for_its_engine_messages_with_their_latest_payload() -> None:
    s = dataclasses.replace(settings(profile="j1939", address_claim=None, initial_speed_kph=50.0),
                            vehicle=VehicleSettings(preset="class6"))
    bench = Bench("ecu", s)
    OPEN.append(bench)
    bench.tick(10)
    periodic = [m for m in bench.sent() if pgn_of(m.arbitration_id) == ETC2_PGN]
    ask(bench, ETC2_PGN, destination=0x00)
    bench.tick(1)  # answered at the next tick, beside the periodic frame of that tick
    answers = [m for m in bench.sent() if pgn_of(m.arbitration_id) == ETC2_PGN]
    assert len(periodic) == 7, "ETC2 every tick (100 ms) once the claim stands, from tick 3"
    assert len(answers) == 2, "the tick's own ETC2 and the answer"
    assert bytes(answers[0].data) == bytes(periodic[-1].data)


def j1939_settings(**j1939: Any) -> Settings:
    base = settings(profile="j1939", address_claim=None)
    return dataclasses.replace(base, j1939=dataclasses.replace(base.j1939, **j1939))


def test_a_configured_address_is_the_one_the_nodes_frames_carry() -> None:
    bench = Bench("ecu", j1939_settings(address=0x30))
    OPEN.append(bench)
    bench.tick(6)
    sources = {source_address_of(m.arbitration_id) for m in bench.sent()}
    assert sources == {0x30}, "the claim and the speed frames alike"


def test_a_node_that_loses_its_address_and_moves_stops_its_periodic_frames() -> None:
    bench = Bench("ecu", j1939_settings(arbitrary_address_capable=True))
    OPEN.append(bench)
    bench.tick(5)
    assert SPEED_PGN in pgns(bench.sent())
    winner = Name(identity_number=1)  # lower than any NAME ecu-sim gives itself
    bench.send_raw(can.Message(arbitration_id=make_id(ADDRESS_CLAIMED_PGN, 0x00, 0xFF),
                               data=winner.to_bytes()))
    bench.tick(1)  # the contention is handled after this tick's frame
    sent = bench.sent()
    bench.tick(4)
    assert SPEED_PGN not in pgns(bench.sent())
    assert [source_address_of(m.arbitration_id) for m in sent
            if pgn_of(m.arbitration_id) == ADDRESS_CLAIMED_PGN] == [0x80], "moved to the first free one"


def test_another_sender_of_our_identifier_is_an_address_conflict_answered_by_our_claim() -> None:
    bench = j1939_bench()
    bench.tick(5)
    bench.sent()
    speed_id = bench.out.frame_id
    bench.send_raw(can.Message(arbitration_id=speed_id, data=bytes([0x12] * 8)))  # not our payload
    bench.tick(1)
    claims = [m for m in bench.sent() if pgn_of(m.arbitration_id) == ADDRESS_CLAIMED_PGN]
    assert [source_address_of(m.arbitration_id) for m in claims] == [source_address_of(speed_id)]
    assert "address conflicts 1" in bench.node.status_line()
