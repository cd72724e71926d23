"""Address claim (J1939-81) and the NAME, in virtual time: claim, delay, contention, requests."""

from __future__ import annotations

import pytest

from ecu_sim.j1939.claim import ClaimState
from ecu_sim.j1939.frames import ADDRESS_CLAIMED_PGN, Pdu
from ecu_sim.j1939.ids import NULL_ADDRESS
from ecu_sim.j1939.name import Name
from ecu_sim.j1939.request import request
from tests.helpers.j1939wire import PERIOD, TOOL, Wire, network


def test_name_fields_sit_where_j1939_81_puts_them() -> None:
    name = Name(identity_number=0x12345, manufacturer_code=0x3AB, ecu_instance=5, function_instance=0x11,
                function=0x22, vehicle_system=0x33, vehicle_system_instance=0xC, industry_group=6,
                arbitrary_address_capable=True)
    expected = (0x12345 | 0x3AB << 21 | 5 << 32 | 0x11 << 35 | 0x22 << 40 | 0x33 << 49 | 0xC << 56
                | 6 << 60 | 1 << 63)
    assert name.value == expected
    assert name.to_bytes() == expected.to_bytes(8, "little")


def test_name_survives_packing_and_unpacking() -> None:
    name = Name(identity_number=7, manufacturer_code=2047, function=129, industry_group=1)
    assert Name.from_bytes(name.to_bytes()) == name


def test_a_field_out_of_its_bits_is_refused() -> None:
    with pytest.raises(ValueError, match="identity_number"):
        Name(identity_number=1 << 21)


def test_the_lower_name_wins() -> None:
    low, high = Name(identity_number=1), Name(identity_number=2)
    assert low.wins_against(high) and not high.wins_against(low)


def test_arbitrary_address_capable_is_the_most_significant_bit() -> None:
    capable = Name(arbitrary_address_capable=True)
    assert not capable.wins_against(Name(identity_number=(1 << 21) - 1, industry_group=7))


def test_a_node_claims_its_address_at_its_first_tick() -> None:
    wire = Wire([network(0x25)])
    wire.run(1)
    claims = wire.from_node(0, ADDRESS_CLAIMED_PGN)
    assert [(c.tick, c.frame.source, c.frame.destination) for c in claims] == [(0, 0x25, 0xFF)]
    assert Name.from_bytes(claims[0].frame.data) == Name(identity_number=1)


def test_other_traffic_waits_at_least_250_ms_after_the_claim() -> None:
    node = network(0x25)
    ready = []
    for tick in range(6):
        node.tick(tick, set())
        ready.append(node.may_send())
    first = ready.index(True)
    assert first * PERIOD >= 0.25 and (first - 1) * PERIOD < 0.25


def test_without_claim_the_node_sends_nothing_of_its_own_and_may_send_at_once() -> None:
    wire = Wire([network(0x25, claim=False)])
    wire.run(30)
    assert wire.sent == [] and wire.nodes[0].may_send()


def test_a_request_for_address_claimed_is_answered_at_the_next_tick() -> None:
    wire = Wire([network(0x25, claim=False)])
    wire.inject(request(ADDRESS_CLAIMED_PGN))
    wire.run(1)
    sent = [(s.tick, s.frame.pgn, s.frame.source) for s in wire.from_node(0)]
    assert sent == [(0, ADDRESS_CLAIMED_PGN, 0x25)]


def test_a_request_for_address_claimed_to_another_node_is_not_answered() -> None:
    wire = Wire([network(0x25, claim=False)])
    wire.inject(request(ADDRESS_CLAIMED_PGN, destination=0x26))
    wire.run(1)
    assert wire.from_node(0) == []


def test_the_lower_name_keeps_the_address_and_claims_it_again() -> None:
    wire = Wire([network(0x25, identity=1), network(0x25, identity=2)])
    wire.run(5)
    winner = wire.nodes[0]
    assert winner.claim.state is ClaimState.CLAIMED and winner.address == 0x25
    assert len(wire.from_node(0, ADDRESS_CLAIMED_PGN)) == 2


def test_a_loser_that_cannot_choose_an_address_sends_cannot_claim_and_falls_silent() -> None:
    wire = Wire([network(0x25, identity=1), network(0x25, identity=2)])
    wire.run(30)
    loser = wire.nodes[1]
    assert loser.claim.state is ClaimState.CANNOT_CLAIM and loser.claim.lost == 1
    last = wire.from_node(1)[-1]
    assert (last.frame.pgn, last.frame.source) == (ADDRESS_CLAIMED_PGN, NULL_ADDRESS)
    assert not loser.may_send() and all(s.tick <= 1 for s in wire.from_node(1))


def test_an_arbitrary_address_capable_loser_claims_the_first_free_self_configurable_address() -> None:
    wire = Wire([network(0x25, identity=1), network(0x25, identity=2, capable=True)])
    wire.run(10)
    loser = wire.nodes[1]
    assert loser.address == 128 and loser.claim.state is ClaimState.CLAIMED
    assert wire.from_node(1, ADDRESS_CLAIMED_PGN)[-1].frame.source == 128


def test_a_node_that_could_not_claim_answers_a_request_with_cannot_claim() -> None:
    wire = Wire([network(0x25, identity=1), network(0x25, identity=2)])
    wire.run(5)
    wire.inject(request(ADDRESS_CLAIMED_PGN), source=TOOL)
    before = len(wire.from_node(1))
    wire.run(1)
    answers = wire.from_node(1)[before:]
    assert [(a.frame.pgn, a.frame.source) for a in answers] == [(ADDRESS_CLAIMED_PGN, NULL_ADDRESS)]


def test_a_claim_from_a_higher_name_later_is_defended() -> None:
    wire = Wire([network(0x25, identity=1)])
    wire.run(5)
    intruder = Name(identity_number=9)
    wire.inject(Pdu(ADDRESS_CLAIMED_PGN, intruder.to_bytes()), source=0x25)
    wire.run(1)
    assert wire.from_node(0, ADDRESS_CLAIMED_PGN)[-1].tick == 5
    assert wire.nodes[0].claim.others == {0x25: intruder}
