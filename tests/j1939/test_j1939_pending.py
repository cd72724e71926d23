"""What the transport sender holds: own broadcasts first, repeats coalesced, limits counted and
logged once per episode; and the echoes the layer tells from another sender's frames."""

from __future__ import annotations

import logging

import pytest

from ecu_sim.j1939.frames import ADDRESS_CLAIMED_PGN, TP_CM_PGN
from ecu_sim.j1939.ids import make_id
from ecu_sim.j1939.pending import ADDRESSED, EPISODE_QUIET_S, PER_REQUESTER, Pending
from ecu_sim.j1939.transport import BAM
from tests.helpers.j1939wire import PERIOD, network

LONG = bytes(range(20))
A, B, C = 0xFEE3, 0xFEEB, 0xFEDA


def announced(node_frames: list[tuple[int, bytes]]) -> list[int]:
    return [int.from_bytes(data[5:8], "little") for can_id, data in node_frames
            if (can_id >> 8) & 0xFFFF == 0xECFF and data[0] == BAM]


def run(ticks: range, send: dict[int, tuple[int, bool]]) -> list[int]:
    """A node's BAM announcements over ``ticks``; ``send``: tick -> (PGN, own) queued before it."""
    node = network(claim=False)
    pgns: list[int] = []
    for tick in ticks:
        if tick in send:
            pgn, own = send[tick]
            node.sender.send(pgn, LONG, 0xFF, own)
        pgns += announced(node.tick(tick, set()))
    return pgns


def test_an_own_broadcast_goes_before_answers_that_waited_longer() -> None:
    assert run(range(12), {0: (A, False), 1: (B, False), 2: (C, True)}) == [A, C, B]


def test_an_own_broadcast_stands_for_a_waiting_answer_of_its_pgn() -> None:
    assert run(range(12), {0: (A, False), 1: (B, False), 2: (B, True)}) == [A, B]


def test_an_answer_of_a_pgn_whose_own_broadcast_waits_is_not_queued_again() -> None:
    assert run(range(12), {0: (A, False), 1: (B, True), 2: (B, False)}) == [A, B]


def test_a_repeated_answer_for_one_requester_waits_once_with_the_newest_payload() -> None:
    pending = Pending(PERIOD)
    pending.answer(A, LONG, 0x80)
    pending.answer(A, LONG[::-1], 0x80)
    assert pending.next_answer(set()) == (0x80, A, LONG[::-1]) and not pending


def test_answers_beyond_a_requesters_share_are_dropped() -> None:
    pending = Pending(PERIOD)
    for pgn in range(0xFE00, 0xFE00 + PER_REQUESTER + 3):
        pending.answer(pgn, LONG, 0x80)
    assert len(pending.addressed[0x80]) == PER_REQUESTER and pending.dropped == 3


def test_answers_beyond_the_total_are_dropped_whoever_asks() -> None:
    pending = Pending(PERIOD)
    for requester in range(0x80, 0x80 + ADDRESSED + 5):
        pending.answer(A, LONG, requester)
    assert sum(map(len, pending.addressed.values())) == ADDRESSED and pending.dropped == 5


def test_the_requester_served_goes_to_the_back_of_the_line() -> None:
    pending = Pending(PERIOD)
    for pgn, requester in ((A, 0x80), (B, 0x80), (A, 0x81)):
        pending.answer(pgn, LONG, requester)
    served = [pending.next_answer(set()) for _ in range(3)]
    assert [(s[0], s[1]) for s in served if s is not None] == [(0x80, A), (0x81, A), (0x80, B)]


def test_a_flood_of_drops_is_logged_once_and_again_after_a_quiet_spell(
        caplog: pytest.LogCaptureFixture) -> None:
    pending = Pending(PERIOD)
    quiet = round(EPISODE_QUIET_S / PERIOD)
    with caplog.at_level(logging.WARNING, "ecu_sim.j1939.pending"):
        for tick in range(50):
            for pgn in range(0xFE00, 0xFE08):
                pending.answer(pgn, LONG, 0x80 + tick % 3)
            pending.log_drops(tick)
        pending.log_drops(50 + quiet)
        pending.answer(0xFE20, LONG, 0x90)
        pending.log_drops(50 + quiet + 2)
    assert len(caplog.records) == 2


OWN = 0x25


def test_the_echo_of_a_frame_the_layer_sent_is_no_address_violation() -> None:
    node = network(OWN)
    for can_id, data in node.tick(0, set()) + node.tick(5, set()):
        node.receive(can_id, data)
    assert node.violations == 0


def test_a_frame_from_the_nodes_address_it_did_not_send_is_an_address_violation() -> None:
    node = network(OWN)
    node.tick(0, set())
    node.receive(make_id(TP_CM_PGN, OWN, 0x80, 7), bytes(8))
    assert node.violations == 1


def test_an_address_violation_is_answered_with_the_claim_at_the_next_tick() -> None:
    node = network(OWN)
    for tick in range(5):
        node.tick(tick, set())
    node.receive(make_id(0xF004, OWN, 0xFF, 3), bytes(8))
    assert [can_id for can_id, _ in node.tick(5, set())] == [make_id(ADDRESS_CLAIMED_PGN, OWN, 0xFF, 6)]


def test_a_lost_echo_does_not_make_the_later_ones_violations() -> None:
    node = network(OWN)
    sent = node.tick(0, set())
    for tick in range(1, 40):
        sent += node.tick(tick, set())
    for can_id, data in sent[1:]:
        node.receive(can_id, data)
    assert len(sent) > 1 and node.violations == 0


def test_the_echo_of_a_frame_the_node_sent_beside_the_layer_is_no_address_violation() -> None:
    node = network(OWN)
    node.tick(0, set())
    answer = (0x18DAF900 | OWN, b"\x02\x7e\x00\xcc\xcc\xcc\xcc\xcc")  # a UDS answer of the node's
    node.sent_beside([answer])
    node.receive(*answer)
    assert node.violations == 0
