"""Requests, acknowledgements and diagnostics (J1939-21, -73) in virtual time."""

from __future__ import annotations

from ecu_sim.j1939.dm import DM1_PGN, DM2_PGN, DM11_PGN, Dtc, pack_dtc, unpack_dtcs
from ecu_sim.j1939.frames import ACKNOWLEDGEMENT_PGN, TP_CM_PGN, TP_DT_PGN
from ecu_sim.j1939.ident import COMPONENT_ID_PGN, ECU_ID_PGN, SOFTWARE_ID_PGN, Identification, split_fields
from ecu_sim.j1939.request import ACK, NACK, parse_acknowledgement, request
from tests.helpers.j1939wire import TOOL, Wire, network

APP_MISSING = Dtc(91, 9)
SPEED_MISSING = Dtc(84, 9)


def answers(wire: Wire, after: int) -> list[tuple[int, int, int]]:
    """(tick, PGN, destination) of what node 0 sent from tick ``after`` on."""
    return [(s.tick, s.frame.pgn, s.frame.destination) for s in wire.from_node(0) if s.tick >= after]


def test_an_addressed_request_for_an_unsupported_pgn_gets_a_nack_naming_the_requester() -> None:
    wire = Wire([network(claim=False)])
    wire.inject(request(0xFEE5, destination=0x25))
    wire.run(1)
    (nack,) = wire.from_node(0)
    assert (nack.frame.pgn, nack.frame.destination) == (ACKNOWLEDGEMENT_PGN, 0xFF)
    assert parse_acknowledgement(nack.frame) == (NACK, 0xFEE5, TOOL)


def test_a_global_request_for_an_unsupported_pgn_gets_no_answer() -> None:
    wire = Wire([network(claim=False)])
    wire.inject(request(0xFEE5))
    wire.run(3)
    assert wire.from_node(0) == []


def test_a_periodic_pgn_is_sent_once_on_request() -> None:
    wire = Wire([network(claim=False, periodic={0xFEF1: b"\x01" * 8})])
    wire.inject(request(0xFEF1))
    wire.run(3)
    assert [(s.tick, s.frame.pgn, s.frame.data) for s in wire.from_node(0)] == [(0, 0xFEF1, b"\x01" * 8)]


def test_requests_are_held_until_the_claim_delay_has_passed() -> None:
    wire = Wire([network()])
    wire.inject(request(DM2_PGN, destination=0x25))
    wire.run(4)
    assert [s.tick for s in wire.from_node(0, DM2_PGN)] == [3]


def test_a_dtc_packs_spn_and_fmi_in_conversion_method_0() -> None:
    assert pack_dtc(Dtc(0x7FFFF, 31), 3) == bytes((0xFF, 0xFF, 0xFF, 3))
    assert pack_dtc(Dtc(91, 9), 1) == bytes((91, 0, 9, 1))


def test_dm1_without_a_fault_lights_no_lamp_and_carries_the_empty_dtc() -> None:
    wire = Wire([network(claim=False)])
    wire.inject(request(DM1_PGN, destination=0x25))
    wire.run(1)
    assert wire.from_node(0)[0].frame.data == bytes((0x00, 0xFF, 0, 0, 0, 0, 0xFF, 0xFF))


def test_an_active_dtc_lights_the_amber_warning_lamp_in_dm1() -> None:
    wire = Wire([network(claim=False)], conditions={0: {APP_MISSING}})
    wire.inject(request(DM1_PGN, destination=0x25))
    wire.run(1)
    assert wire.from_node(0)[0].frame.data == bytes((0x04, 0xFF, 91, 0, 9, 1, 0xFF, 0xFF))


def test_dm1_goes_out_once_a_second_after_the_claim() -> None:
    wire = Wire([network()])
    wire.run(30)
    assert [s.tick for s in wire.from_node(0, DM1_PGN)] == [3, 13, 23]


def test_a_dtc_that_goes_active_is_broadcast_at_once_and_then_once_a_second() -> None:
    wire = Wire([network()])
    wire.run(15)
    wire.conditions[0] = {APP_MISSING}
    wire.run(20)
    dm1 = [(s.tick, unpack_dtcs(s.frame.data)) for s in wire.from_node(0, DM1_PGN)]
    assert dm1 == [(3, []), (13, []), (15, [(APP_MISSING, 1)]), (25, [(APP_MISSING, 1)])]


def test_a_dtc_whose_condition_ended_is_previously_active_with_its_count() -> None:
    wire = Wire([network(claim=False)], conditions={0: {APP_MISSING}})
    wire.run(1)
    wire.conditions[0] = set()
    wire.run(1)
    wire.conditions[0] = {APP_MISSING}
    wire.run(1)
    wire.conditions[0] = set()
    wire.run(1)
    wire.inject(request(DM2_PGN, destination=0x25))
    wire.run(1)
    assert unpack_dtcs(wire.from_node(0, DM2_PGN)[0].frame.data) == [(APP_MISSING, 2)]
    assert wire.nodes[0].dtcs.active() == []


def test_dm11_clears_the_active_dtcs_and_is_acknowledged() -> None:
    wire = Wire([network(claim=False)], conditions={0: {APP_MISSING}})
    wire.run(1)
    wire.conditions[0] = set()
    wire.inject(request(DM11_PGN, destination=0x25))
    wire.run(1)
    (ack,) = wire.from_node(0, ACKNOWLEDGEMENT_PGN)
    assert parse_acknowledgement(ack.frame) == (ACK, DM11_PGN, TOOL)
    assert wire.nodes[0].dtcs.active() == []


def test_a_condition_that_still_holds_after_dm11_sets_its_dtc_again_from_one() -> None:
    wire = Wire([network(claim=False)], conditions={0: {APP_MISSING}})
    wire.run(2)
    wire.inject(request(DM11_PGN))
    wire.run(2)
    assert wire.nodes[0].dtcs.active() == [(APP_MISSING, 1)]
    assert wire.from_node(0, ACKNOWLEDGEMENT_PGN) == []


def test_dm1_with_two_dtcs_is_broadcast_through_bam() -> None:
    wire = Wire([network(claim=False), network(0x26, identity=2, claim=False)],
                conditions={0: {APP_MISSING, SPEED_MISSING}})
    wire.inject(request(DM1_PGN))
    wire.run(4)
    assert [pgn for _, pgn, _ in answers(wire, 0)] == [TP_CM_PGN, TP_DT_PGN, TP_DT_PGN]


def test_identification_answers_carry_the_configured_fields() -> None:
    payloads = Identification(model="m", serial="s", unit="u", software=("1.0",)).payloads()
    assert split_fields(payloads[COMPONENT_ID_PGN]) == ["ecu-sim", "m", "s", "u"]
    assert payloads[SOFTWARE_ID_PGN] == b"\x011.0*"
    assert split_fields(payloads[ECU_ID_PGN])[-1] == "ecu-sim"
