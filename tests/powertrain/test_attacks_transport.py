"""The powertrain network under the published transport-protocol attacks, in virtual time.

The engine as sender (it answers an addressed request for EC1, 40 bytes in six packets, by RTS
at the tick after): CTS past the end or for too many packets, a CTS of another PGN, end of message
and abort interruptions. The engine as receiver: a second RTS during a session, RTS and BAM of
1785 bytes from many sources, overwritten and spoofed data packets. Where J1939-21 leaves a
choice the node follows the Linux kernel's rules (the abort reasons are the kernel's numbers).
"""

from __future__ import annotations

import can
import pytest

from ecu_sim.j1939 import layouts
from ecu_sim.j1939.frames import TP_CM_PGN, TP_DT_PGN, Pdu
from ecu_sim.j1939.reassembly import SESSIONS_IN
from ecu_sim.j1939.transport import (
    ABORT,
    ABORT_BAD_SEQUENCE,
    ABORT_BUSY,
    ABORT_CTS_PGN,
    ABORT_RETRANSMIT_LIMIT,
    ABORT_TIMEOUT,
    CTS,
    EOMA,
    MAX_SIZE,
    abort,
    cm,
    packets,
)
from tests.helpers.attacker import (
    ATTACKER,
    EC1,
    EEC1,
    EEC1_EVERY,
    ENGINE,
    SECOND,
    AttackRig,
    ask,
    attack_rig,
    bam,
    cadence,
    control,
    cts,
    data,
    frame,
    rts,
)

ASKED = 50
#: the engine's RTS for EC1 goes out at the next tick; the attacker answers at the one after
RTS_AT = ASKED + 1
ANSWER_AT = ASKED + 2
EC1_PACKETS = 6


def engine_to_attacker(attack: AttackRig, pgn: int) -> list[tuple[int, bytes]]:
    return [(h.tick, bytes(h.msg.data)) for h in attack.heard if h.source == ENGINE and h.pgn == pgn
            and (h.msg.arbitration_id >> 8) & 0xFF == ATTACKER]


def aborts(attack: AttackRig) -> list[tuple[int, int]]:
    return [(tick, payload[1]) for tick, payload in engine_to_attacker(attack, TP_CM_PGN)
            if payload[0] == ABORT]


def sequences(attack: AttackRig) -> list[int]:
    return [payload[0] for _, payload in engine_to_attacker(attack, TP_DT_PGN)]


def session(then: dict[int, list[can.Message]], ticks: int = 3 * SECOND) -> AttackRig:
    """An addressed request for EC1 from the attacker, then ``then`` (tick -> frames)."""
    attack = attack_rig(lambda k: [ask(EC1, destination=ENGINE)] if k == ASKED else then.get(k, []))
    attack.run(ticks)
    return attack


@pytest.mark.parametrize(("count", "first"), [(255, 6), (12, 5), (EC1_PACKETS + 1, 1)])
def test_a_cts_for_more_packets_than_the_message_has_is_aborted_with_reason_5(count: int, first: int) -> None:
    attack = session({ANSWER_AT: [cts(EC1, count, first)]})
    assert aborts(attack) == [(ANSWER_AT + 1, ABORT_RETRANSMIT_LIMIT)]
    assert sequences(attack) == []


def test_a_cts_from_packet_0_is_aborted_with_reason_5() -> None:
    attack = session({ANSWER_AT: [cts(EC1, 2, 0)]})
    assert aborts(attack) == [(ANSWER_AT + 1, ABORT_RETRANSMIT_LIMIT)]


def test_a_cts_window_past_the_last_packet_is_clamped_to_the_message() -> None:
    attack = session({ANSWER_AT: [cts(EC1, 4, EC1_PACKETS - 1)]})
    assert sequences(attack) == [EC1_PACKETS - 1, EC1_PACKETS]


def test_a_cts_for_another_pgn_is_refused_with_reason_14_and_the_session_kept() -> None:
    attack = session({ANSWER_AT: [cts(0xFECA, EC1_PACKETS, 1)], ANSWER_AT + 5: [cts(EC1, EC1_PACKETS, 1)]})
    assert aborts(attack)[0] == (ANSWER_AT + 1, ABORT_CTS_PGN)
    assert sequences(attack) == list(range(1, EC1_PACKETS + 1))


def eoma() -> can.Message:
    return frame(cm({"ControlByte": EOMA, "EOMA_TotalSize": 40, "EOMA_TotalPackets": EC1_PACKETS,
                     "EOMA_PGN": EC1}, ENGINE), ATTACKER)


def test_an_end_of_message_acknowledgement_mid_transfer_closes_the_session() -> None:
    attack = session({ANSWER_AT: [cts(EC1, 2, 1)], ANSWER_AT + 3: [eoma()]})
    assert sequences(attack) == [1, 2]
    assert aborts(attack) == []
    assert attack.most(ENGINE, lambda held: held.sessions_out) == 1
    assert attack.held[ENGINE][-1].sessions_out == 0


def test_an_abort_for_another_pgn_leaves_the_session_to_time_out() -> None:
    attack = session({ANSWER_AT: [frame(abort(0xFECA, 1, ENGINE), ATTACKER)]})
    assert aborts(attack) == [(RTS_AT + 126, ABORT_TIMEOUT)]  # T3: 126 ticks


def test_an_abort_for_the_sessions_pgn_closes_it_at_once() -> None:
    attack = session({ANSWER_AT: [frame(abort(EC1, 1, ENGINE), ATTACKER)]})
    assert aborts(attack) == []
    assert attack.held[ENGINE][ANSWER_AT + 2].sessions_out == 0


REQUEST_PGN = 59904
#: a request carried by the transport protocol: nine bytes, two packets
TWO = packets(bytes(ask(EEC1, destination=ENGINE).data[:3]) + b"\xff" * 6)


def control_values(payload: bytes) -> dict[str, int]:
    return layouts.decode(layouts.TP_CM, payload)


NAMES = {CTS: "CTS", EOMA: "EoMA"}


def after_60(attack: AttackRig) -> list[tuple[int, str]]:
    return [c for c in engine_controls(attack) if c[0] > 60]


def engine_controls(attack: AttackRig) -> list[tuple[int, str]]:
    """(tick, "CTS" / "EoMA" / "abort <reason>") of what the engine sent the attacker."""
    return [(tick, NAMES.get(payload[0], f"abort {payload[1]}"))
            for tick, payload in engine_to_attacker(attack, TP_CM_PGN)]


def test_a_second_rts_from_a_sender_mid_session_is_refused_busy_and_the_first_completes() -> None:
    payload = packets(bytes(ask(EEC1, destination=ENGINE).data[:3]) + bytes(17))
    attack = session({60: [rts(REQUEST_PGN, 20, ATTACKER)], 62: [rts(REQUEST_PGN, 9, ATTACKER, packets=3)],
                      64: [data(n, chunk, ATTACKER) for n, chunk in enumerate(payload, start=1)]}, ticks=70)
    assert after_60(attack) == [(61, "CTS"), (63, f"abort {ABORT_BUSY}"), (65, "EoMA")]
    end = [payload for tick, payload in engine_to_attacker(attack, TP_CM_PGN) if tick == 65]
    assert control_values(end[0])["EOMA_TotalSize"] == 20


def test_an_rts_over_1785_bytes_is_aborted_with_reason_5() -> None:
    attack = session({60: [rts(EC1, MAX_SIZE + 1, ATTACKER, packets=255)]}, ticks=63)
    assert after_60(attack) == [(61, f"abort {ABORT_RETRANSMIT_LIMIT}")]


SOURCES = range(0x80, 0x80 + 40)


def test_bams_of_1785_bytes_from_40_sources_hold_at_most_the_pool_in_every_node() -> None:
    attack = attack_rig(lambda k: [bam(0xFECA, MAX_SIZE, s) for s in SOURCES] if k == 60 else [])
    attack.run(2 * SECOND)
    assert all(attack.most(address, lambda held: held.sessions_in) == SESSIONS_IN for address in attack.held)


def test_bams_that_never_send_their_packets_are_forgotten_after_t1() -> None:
    attack = attack_rig(lambda k: [bam(0xFECA, MAX_SIZE, s) for s in SOURCES] if k == 60 else [])
    attack.run(2 * SECOND)
    assert attack.held[ENGINE][60 + 1 + 76].sessions_in == 0  # T1: 76 ticks


def test_an_rts_flood_of_1785_bytes_from_40_sources_is_refused_busy_beyond_the_pool() -> None:
    attack = attack_rig(lambda k: [rts(0xFECA, MAX_SIZE, s) for s in SOURCES] if k == 60 else [])
    attack.run(2 * SECOND)
    refused = [h for h in attack.heard if h.source == ENGINE and h.pgn == TP_CM_PGN
               and h.msg.data[0] == ABORT and control(h)["Abort_Reason"] == ABORT_BUSY]
    assert len(refused) == len(SOURCES) - SESSIONS_IN
    assert attack.most(ENGINE, lambda held: held.sessions_in) == SESSIONS_IN


def test_eec1_keeps_its_20_ms_through_a_bam_and_rts_flood() -> None:
    def script(k: int) -> list[can.Message]:
        if not 60 <= k < 60 + 3 * SECOND:
            return []
        source = 0x80 + k % 100
        return [bam(0xFECA, MAX_SIZE, source), rts(0xFECA, MAX_SIZE, source)]

    attack = attack_rig(script)
    attack.run(4 * SECOND)
    assert cadence(attack.ticks(ENGINE, EEC1), 60, 4 * SECOND) == {EEC1_EVERY}


def test_a_data_packet_sent_twice_aborts_the_session_with_reason_7() -> None:
    attack = session({60: [rts(REQUEST_PGN, 9, ATTACKER)], 62: [data(1, TWO[0], ATTACKER)],
                      63: [data(1, TWO[0], ATTACKER)]}, ticks=66)
    assert after_60(attack) == [(61, "CTS"), (64, f"abort {ABORT_BAD_SEQUENCE}")]


def test_a_spoofed_data_packet_ahead_of_the_genuine_one_ends_the_session_unfinished() -> None:
    spoof = data(1, b"\x00" * 7, ATTACKER)
    attack = session({60: [rts(REQUEST_PGN, 9, ATTACKER)], 62: [spoof, data(1, TWO[0], ATTACKER)],
                      63: [data(2, TWO[1], ATTACKER)]}, ticks=66)
    assert after_60(attack) == [(61, "CTS"), (63, f"abort {ABORT_BAD_SEQUENCE}")]


def test_a_spoofed_packet_in_a_broadcast_drops_the_broadcast_without_an_abort() -> None:
    pdu = Pdu(TP_DT_PGN, b"\x01" + b"\x00" * 7, 0xFF, 7)
    attack = attack_rig(lambda k: [bam(0xFECA, 9, ATTACKER)] if k == 60 else
                        [frame(pdu, ATTACKER), frame(pdu, ATTACKER)] if k == 62 else [])
    attack.run(66)
    assert attack.held[ENGINE][63].sessions_in == 0
    assert aborts(attack) == []
