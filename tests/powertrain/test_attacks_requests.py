"""The powertrain network under the published request and address attacks, in virtual time.

Request overload (global and addressed), connection exhaustion, a session held open with CTS,
the BAM block, a spoofed acknowledgement, and the address attacks of J1939-81. Each test states
what the node does, that its cyclic messages keep their rate, that what it holds stays within
the layer's limits, or how many ticks after the attack it is back to what a quiet bus shows.
"""

from __future__ import annotations

import can
import pytest

from ecu_sim.j1939.frames import ACKNOWLEDGEMENT_PGN, ADDRESS_CLAIMED_PGN, TP_CM_PGN, Pdu
from ecu_sim.j1939.ids import GLOBAL_ADDRESS, NULL_ADDRESS
from ecu_sim.j1939.name import Name
from ecu_sim.j1939.pending import ADDRESSED, PER_REQUESTER, SESSIONS
from ecu_sim.j1939.request import NACK, acknowledgement
from ecu_sim.j1939.transport import ABORT, ABORT_OTHER, ABORT_RETRANSMIT_LIMIT, BAM, MAX_RETRANSMITS, RTS
from tests.helpers.attacker import (
    ATTACKER,
    COMPONENT_ID,
    EC1,
    EEC1,
    EEC1_EVERY,
    ENGINE,
    SECOND,
    AttackRig,
    ask,
    attack_rig,
    cadence,
    control,
    cts,
    frame,
)
from tests.helpers.powertrainrig import quiet

#: the floods of the issue: 3,481 global requests in 5 s, 6,400 addressed ones in 8 s
START = SECOND
GLOBAL_END = START + 5 * SECOND
ADDRESSED_END = START + 8 * SECOND
SOFTWARE_ID = 0xFEDA
ECU_ID = 0xFDC5
#: one EC1 broadcast: its announcement and six packets 50 ms apart
ONE_BAM = 6 * 5 + 1


def frame_claim(name: Name) -> can.Message:
    """An Address Claimed for the engine's address with ``name``."""
    return frame(Pdu(ADDRESS_CLAIMED_PGN, name.to_bytes(), GLOBAL_ADDRESS, 6), ENGINE)


def global_flood(k: int) -> list[can.Message]:
    return [ask(EC1) for _ in range(7)] if START <= k < GLOBAL_END else []


def addressed_flood(k: int) -> list[can.Message]:
    return [ask(EC1, destination=ENGINE) for _ in range(8)] if START <= k < ADDRESSED_END else []


def bams(attack: AttackRig) -> list[int]:
    return attack.ticks(ENGINE, TP_CM_PGN, BAM)


def quiet_bams(ticks: int) -> list[int]:
    baseline = attack_rig(quiet)
    baseline.run(ticks)
    return bams(baseline)


def test_a_global_request_flood_leaves_eec1_on_its_20_ms() -> None:
    attack = attack_rig(global_flood)
    attack.run(GLOBAL_END + SECOND)
    assert cadence(attack.ticks(ENGINE, EEC1), START, GLOBAL_END + SECOND) == {EEC1_EVERY}


def test_repeated_global_requests_for_one_pgn_wait_as_one_answer() -> None:
    attack = attack_rig(global_flood)
    attack.run(GLOBAL_END)
    assert attack.most(ENGINE, lambda held: held.own_and_global) == 1


def test_answers_to_a_global_request_flood_stop_within_one_broadcast_after_it() -> None:
    attack = attack_rig(global_flood)
    ticks = GLOBAL_END + 3 * SECOND
    attack.run(ticks)
    assert [t for t in bams(attack) if t > GLOBAL_END + ONE_BAM] == [
        t for t in quiet_bams(ticks) if t > GLOBAL_END + ONE_BAM]


def test_an_addressed_request_flood_from_one_requester_waits_as_one_answer() -> None:
    attack = attack_rig(addressed_flood)
    attack.run(ADDRESSED_END)
    assert attack.most(ENGINE, lambda held: held.waiting) == 1
    assert attack.most(ENGINE, lambda held: held.sessions_out) == 1


def test_connection_exhaustion_leaves_eec1_on_its_20_ms() -> None:
    attack = attack_rig(addressed_flood)
    attack.run(ADDRESSED_END + SECOND)
    assert cadence(attack.ticks(ENGINE, EEC1), START, ADDRESSED_END + SECOND) == {EEC1_EVERY}


def test_sessions_opened_by_connection_exhaustion_stop_within_two_t3_after_it() -> None:
    attack = attack_rig(addressed_flood)
    attack.run(ADDRESSED_END + 5 * SECOND)
    to_attacker = [h.tick for h in attack.heard if h.source == ENGINE and h.pgn == TP_CM_PGN
                   and h.msg.arbitration_id & 0xFF00 == ATTACKER << 8 and h.msg.data[0] in (RTS, ABORT)]
    assert to_attacker and max(to_attacker) <= ADDRESSED_END + 2 * 126 + 1  # T3 is 126 ticks


def last_session_frame(attack: AttackRig) -> int:
    """The tick of the engine's last RTS or abort."""
    return max(attack.ticks(ENGINE, TP_CM_PGN, RTS) + attack.ticks(ENGINE, TP_CM_PGN, ABORT))


def spoofed_flood(k: int) -> list[can.Message]:
    """Requests for three long PGNs from 64 spoofed requesters, a round every tick."""
    if not START <= k < START + 3 * SECOND:
        return []
    return [ask(pgn, source=0x80 + (k + i) % 64, destination=ENGINE)
            for i, pgn in enumerate((EC1, COMPONENT_ID, SOFTWARE_ID))]


def test_answers_to_spoofed_requesters_stay_within_the_limits_per_requester_and_in_total() -> None:
    attack = attack_rig(spoofed_flood)
    attack.run(START + 3 * SECOND)
    assert attack.most(ENGINE, lambda held: held.waiting) == ADDRESSED
    assert attack.most(ENGINE, lambda held: held.sessions_out) == SESSIONS
    assert max(len(queue) for queue in attack.networks()[ENGINE].sender.pending.addressed.values()) \
        <= PER_REQUESTER
    assert attack.networks()[ENGINE].sender.pending.dropped > 0


def test_sessions_to_spoofed_requesters_stop_within_5_s_after_the_flood() -> None:
    end = START + 3 * SECOND
    attack = attack_rig(spoofed_flood)
    attack.run(end + 6 * SECOND)
    assert last_session_frame(attack) <= end + 5 * SECOND


def test_sessions_to_one_requester_asking_for_every_long_pgn_stop_within_5_s_after_the_flood() -> None:
    end = START + 3 * SECOND
    long_ones = (EC1, COMPONENT_ID, SOFTWARE_ID, ECU_ID)
    attack = attack_rig(lambda k: [ask(pgn, destination=ENGINE) for pgn in long_ones]
                        if START <= k < end else [])
    attack.run(end + 6 * SECOND)
    assert attack.most(ENGINE, lambda held: held.waiting) == PER_REQUESTER
    assert last_session_frame(attack) <= end + 5 * SECOND


def held_open(every: int, count: int, first: int) -> AttackRig:
    """An addressed request for EC1 at tick 50, then a CTS every ``every`` ticks for ever."""
    def script(k: int) -> list[can.Message]:
        if k == 50:
            return [ask(EC1, destination=ENGINE)]
        return [cts(EC1, count, first)] if k > 51 and (k - 52) % every == 0 else []

    attack = attack_rig(script)
    attack.run(50 + 8 * SECOND)
    return attack


def engine_aborts(attack: AttackRig) -> list[tuple[int, int]]:
    return [(h.tick, control(h)["Abort_Reason"]) for h in attack.heard
            if h.source == ENGINE and h.pgn == TP_CM_PGN and h.msg.data[0] == ABORT]


def test_a_requester_that_asks_again_and_again_for_sent_packets_is_aborted_with_reason_5() -> None:
    attack = held_open(SECOND // 2, 2, 1)
    # the first CTS is answered, MAX_RETRANSMITS more too, the next one ends the session
    assert engine_aborts(attack) == [(52 + (MAX_RETRANSMITS + 1) * SECOND // 2 + 1, ABORT_RETRANSMIT_LIMIT)]


def test_a_requester_that_holds_a_session_with_cts_0_is_aborted_at_its_lifetime() -> None:
    attack = held_open(SECOND // 2, 0, 1)
    assert engine_aborts(attack) == [(51 + 5 * SECOND + 1, ABORT_OTHER)]


def test_a_session_held_open_does_not_delay_the_engines_own_broadcasts() -> None:
    attack = held_open(SECOND // 2, 0, 1)
    assert bams(attack) == quiet_bams(50 + 8 * SECOND)


def test_a_spoofed_nack_from_the_engines_address_makes_the_engine_claim_it_again() -> None:
    nack = frame(acknowledgement(NACK, EC1, ATTACKER), ENGINE)
    attack = attack_rig(lambda k: [nack] if k == 60 else [])
    attack.run(63)
    assert attack.ticks(ENGINE, ADDRESS_CLAIMED_PGN)[-1] == 61
    assert ACKNOWLEDGEMENT_PGN not in {h.pgn for h in attack.heard if h.source == ENGINE}


@pytest.mark.parametrize("destination", [GLOBAL_ADDRESS, ENGINE])
def test_a_request_for_address_claimed_from_sa_0_makes_the_engine_claim_again(destination: int) -> None:
    attack = attack_rig(lambda k: [ask(ADDRESS_CLAIMED_PGN, source=ENGINE, destination=destination)]
                        if k == 60 else [])
    attack.run(63)
    assert attack.ticks(ENGINE, ADDRESS_CLAIMED_PGN)[-1] == 61


def test_a_scan_of_every_destination_from_sa_0_finds_all_four_nodes() -> None:
    attack = attack_rig(lambda k: [ask(ADDRESS_CLAIMED_PGN, source=ENGINE, destination=k - 60)]
                        if 60 <= k < 60 + 256 else [])
    attack.run(60 + 256 + 2)
    found = {h.source for h in attack.heard if h.pgn == ADDRESS_CLAIMED_PGN and h.tick > 60}
    assert found == {0x00, 0x03, 0x0B, 0x0F}


def test_a_flood_from_the_engines_address_gets_one_claim_a_second_at_most() -> None:
    attack = attack_rig(lambda k: [ask(EC1, source=ENGINE) for _ in range(4)]
                        if START <= k < START + 10 * SECOND else [])
    attack.run(START + 11 * SECOND)
    claims = [t for t in attack.ticks(ENGINE, ADDRESS_CLAIMED_PGN) if t > START]
    assert claims == list(range(START + 1, START + 10 * SECOND, SECOND))


def test_a_claim_with_a_lower_name_silences_the_engine_after_cannot_claim() -> None:
    attack = attack_rig(lambda k: [frame_claim(Name(identity_number=0))] if k == 60 else [])
    attack.run(2 * SECOND)
    cannot = [h for h in attack.heard if h.source == NULL_ADDRESS and h.pgn == ADDRESS_CLAIMED_PGN]
    assert [h.tick for h in cannot] == [61]
    assert [t for t in attack.ticks(ENGINE, EEC1) if t > 61] == []


def test_a_claim_with_a_higher_name_for_the_engines_address_is_answered_with_its_claim() -> None:
    attack = attack_rig(lambda k: [frame_claim(Name(identity_number=0x1FFFFF, industry_group=7))]
                        if k == 60 else [])
    attack.run(2 * SECOND)
    assert attack.ticks(ENGINE, ADDRESS_CLAIMED_PGN)[-1] == 61
    assert cadence(attack.ticks(ENGINE, EEC1), 60, 2 * SECOND) == {EEC1_EVERY}

