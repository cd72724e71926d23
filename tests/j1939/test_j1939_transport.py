"""The transport protocol (J1939-21) in virtual time: BAM, RTS/CTS, timeouts, aborts, reassembly."""

from __future__ import annotations

from ecu_sim.j1939 import layouts
from ecu_sim.j1939.frames import REQUEST_PGN, TP_CM_PGN, TP_DT_PGN, Received
from ecu_sim.j1939.ident import COMPONENT_ID_PGN, Identification
from ecu_sim.j1939.request import request
from ecu_sim.j1939.timing import T1_S, T2_S, T3_S, T4_S, bam_gap_in_limits, bam_gap_ticks
from ecu_sim.j1939.transport import ABORT, ABORT_TIMEOUT, BAM, CTS, EOMA, RTS, cm, dt, packets
from tests.helpers.j1939wire import PERIOD, TOOL, Wire, network

COMPONENT_ID = Identification().payloads()[COMPONENT_ID_PGN]
PAYLOAD = bytes(range(20))


def control(sent: Received) -> dict[str, int]:
    return layouts.decode(layouts.TP_CM, sent.data)


def test_payload_is_cut_into_seven_byte_packets_with_the_last_padded() -> None:
    assert packets(PAYLOAD) == [PAYLOAD[:7], PAYLOAD[7:14], PAYLOAD[14:] + b"\xff"]


def test_bam_packets_are_50_to_200_ms_apart_at_10_hz_and_at_100_hz() -> None:
    assert bam_gap_ticks(0.1) == 1 and bam_gap_in_limits(0.1)
    assert bam_gap_ticks(0.01) == 5 and bam_gap_in_limits(0.01)
    assert not bam_gap_in_limits(0.5)


def test_bam_announces_then_sends_numbered_packets_one_gap_apart() -> None:
    node = network(claim=False)
    node.sender.send(0xFECA, PAYLOAD, 0xFF)
    sent = [(tick, frame) for tick in range(5) for frame in node.tick(tick, set())]
    assert [tick for tick, _ in sent] == [0, 1, 2, 3]
    announce = layouts.decode(layouts.TP_CM, sent[0][1][1])
    assert announce == {"ControlByte": BAM, "BAM_TotalSize": 20, "BAM_TotalPackets": 3,
                        "BAM_Reserved": 0xFF, "BAM_PGN": 0xFECA}
    assert [data[0] for _, (_, data) in sent[1:]] == [1, 2, 3]
    assert b"".join(data[1:] for _, (_, data) in sent[1:])[:20] == PAYLOAD


def test_a_broadcast_is_reassembled_by_another_node() -> None:
    got: list[Received] = []
    wire = Wire([network(claim=False), network(0x26, identity=2, claim=False, on_message=got.append)])
    wire.nodes[0].sender.send(0xFECA, PAYLOAD, 0xFF)
    wire.run(5)
    assert [(m.pgn, m.source, m.data) for m in got] == [(0xFECA, 0x25, PAYLOAD)]


def test_a_broadcast_with_a_missing_packet_is_dropped() -> None:
    got: list[Received] = []
    wire = Wire([network(0x26, claim=False, on_message=got.append)])
    wire.inject(cm({"ControlByte": BAM, "BAM_TotalSize": 20, "BAM_TotalPackets": 3, "BAM_PGN": 0xFECA}, 0xFF))
    wire.inject(dt(1, PAYLOAD[:7], 0xFF))
    wire.inject(dt(3, PAYLOAD[14:] + b"\xff", 0xFF))
    wire.run(1)
    assert got == [] and wire.nodes[0].reassembler.dropped == 1


def test_a_broadcast_silent_past_t1_is_dropped() -> None:
    wire = Wire([network(0x26, claim=False)])
    wire.inject(cm({"ControlByte": BAM, "BAM_TotalSize": 20, "BAM_TotalPackets": 3, "BAM_PGN": 0xFECA}, 0xFF))
    wire.run(round(T1_S / PERIOD))
    assert wire.nodes[0].reassembler.dropped == 0
    wire.run(1)
    assert wire.nodes[0].reassembler.dropped == 1


def test_an_addressed_long_answer_goes_by_rts_cts_to_the_requester() -> None:
    got: list[Received] = []
    wire = Wire([network(claim=False), network(TOOL, identity=2, claim=False, on_message=got.append)])
    wire.inject(request(COMPONENT_ID_PGN, destination=0x25), source=TOOL)
    wire.run(4)
    controls = [control(s.frame)["ControlByte"] for s in wire.sent if s.frame.pgn == TP_CM_PGN]
    assert controls == [RTS, CTS, EOMA]
    assert [(m.pgn, m.data) for m in got] == [(COMPONENT_ID_PGN, COMPONENT_ID)]
    assert not wire.nodes[0].sender.busy


def test_rts_without_cts_is_aborted_for_timeout_after_t3() -> None:
    wire = Wire([network(claim=False)])
    wire.inject(request(COMPONENT_ID_PGN, destination=0x25))
    wire.run(30)
    cms = [(s.tick, control(s.frame)) for s in wire.from_node(0, TP_CM_PGN)]
    assert [c["ControlByte"] for _, c in cms] == [RTS, ABORT]
    assert cms[1][1]["Abort_Reason"] == ABORT_TIMEOUT
    assert (cms[1][0] - cms[0][0]) * PERIOD > T3_S


def test_a_cts_for_no_packets_holds_the_session_until_t4() -> None:
    wire = Wire([network(claim=False)])
    wire.inject(request(COMPONENT_ID_PGN, destination=0x25))
    wire.run(1)
    wire.inject(cm({"ControlByte": CTS, "CTS_Packets": 0, "CTS_NextSequence": 1, "CTS_PGN": COMPONENT_ID_PGN},
                   0x25))
    wire.run(30)
    cms = [(s.tick, control(s.frame)["ControlByte"]) for s in wire.from_node(0, TP_CM_PGN)]
    assert [c for _, c in cms] == [RTS, ABORT]
    assert T4_S < (cms[1][0] - 1) * PERIOD < T3_S


def test_an_abort_from_the_partner_ends_the_session_without_an_answer() -> None:
    wire = Wire([network(claim=False)])
    wire.inject(request(COMPONENT_ID_PGN, destination=0x25))
    wire.run(1)
    wire.inject(cm({"ControlByte": ABORT, "Abort_Reason": 1, "Abort_PGN": COMPONENT_ID_PGN}, 0x25))
    wire.run(30)
    assert [control(s.frame)["ControlByte"] for s in wire.from_node(0, TP_CM_PGN)] == [RTS]
    assert not wire.nodes[0].sender.busy and wire.nodes[0].sender.aborted == 1


def test_a_receive_session_silent_past_t2_is_aborted() -> None:
    wire = Wire([network(claim=False)])
    wire.inject(cm({"ControlByte": RTS, "RTS_TotalSize": 9, "RTS_TotalPackets": 2, "RTS_PGN": REQUEST_PGN},
                   0x25))
    wire.run(30)
    cms = [(s.tick, control(s.frame)) for s in wire.from_node(0, TP_CM_PGN)]
    assert [c["ControlByte"] for _, c in cms] == [CTS, ABORT]
    assert (cms[1][0] - cms[0][0]) * PERIOD > T2_S


def test_a_request_arriving_through_rts_cts_is_answered() -> None:
    data = request(0xFEE5).data + b"\xff" * 6
    wire = Wire([network(claim=False)])
    wire.inject(cm({"ControlByte": RTS, "RTS_TotalSize": 9, "RTS_TotalPackets": 2, "RTS_PGN": REQUEST_PGN},
                   0x25))
    wire.run(1)
    for sequence, chunk in enumerate(packets(data), start=1):
        wire.inject(dt(sequence, chunk, 0x25))
    wire.run(1)
    pgns = [s.frame.pgn for s in wire.from_node(0)]
    assert pgns[-2:] == [TP_CM_PGN, 59392]  # the end of message acknowledgement, then the NACK


def test_the_same_exchange_gives_the_same_frames_at_the_same_ticks_every_run() -> None:
    def run() -> list[tuple[int, int, int, bytes]]:
        wire = Wire([network(), network(0x25, identity=2, capable=True), network(TOOL, identity=3)])
        wire.run(5)
        wire.inject(request(COMPONENT_ID_PGN, destination=0x25), source=TOOL)
        wire.run(20)
        return [(s.tick, s.sender, s.frame.pgn, s.frame.data) for s in wire.sent]

    assert run() == run()
    assert TP_DT_PGN in {pgn for _, _, pgn, _ in run()}
