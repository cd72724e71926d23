"""The tester's UDS client on ticks against a node's real ISO-TP layer and UDS server."""

from __future__ import annotations

from ecu_sim.isotp.transport import IsoTpServer, Limits
from ecu_sim.tester.client import Exchange, UdsClient
from ecu_sim.uds.endpoint import DiagnosticEndpoint
from tests.helpers.udsbench import PERIOD, VIN, BenchNode, endpoint


def exchange(node: DiagnosticEndpoint | None, *requests: bytes, ticks: int = 400) -> list[Exchange]:
    """Each request after the previous one ended, the node ticked before the tester as in a loop."""
    client = UdsClient(0xF9, PERIOD)
    left, done = list(requests), []
    for tick in range(ticks):
        for can_id, data in ([] if node is None else node.tick(tick)):
            client.receive(can_id, data)
        ended = client.finished(tick)
        if ended is not None:
            done.append(ended)
        if not client.waiting and left:
            client.request(0x00, left.pop(0))
        for can_id, data in client.tick(tick):
            if node is not None:
                node.receive(can_id, data)
    return done


def test_a_multi_frame_answer_comes_whole_after_the_tester_grants_flow_control() -> None:
    done = exchange(endpoint(BenchNode()), bytes.fromhex("22F190"))
    assert [e.answer for e in done] == [bytes.fromhex("62F190") + VIN]


def multi_frame_request(limits: Limits, payload: bytes) -> tuple[list[bytes], list[int]]:
    """``payload`` from the tester to a node's ISO-TP layer granting ``limits``: what the node took,
    and the ticks the tester's consecutive frames went at."""
    client, node = UdsClient(0xF9, PERIOD), IsoTpServer(0x00, PERIOD, limits)
    client.request(0x00, payload)
    taken, consecutive = [], []
    for tick in range(100):
        for can_id, data in node.tick(tick):
            client.receive(can_id, data)
        client.finished(tick)
        for can_id, data in client.tick(tick):
            consecutive += [tick] if data[0] >> 4 == 2 else []
            node.receive(can_id, data)
        taken += [message.payload for message in node.take()]
    return taken, consecutive


def test_a_multi_frame_request_reaches_the_node_whole() -> None:
    payload = bytes(range(100))
    assert multi_frame_request(Limits(), payload)[0] == [payload]


def test_the_tester_keeps_to_the_block_size_and_stmin_the_node_grants() -> None:
    taken, ticks = multi_frame_request(Limits(block_size=2, st_min=30), bytes(range(40)))
    # 34 bytes after the first frame: five consecutive frames, in blocks of two, 30 ms apart in a block
    assert taken == [bytes(range(40))] and len(ticks) == 5
    assert ticks[1] - ticks[0] >= 3 and ticks[3] - ticks[2] >= 3 and ticks[2] > ticks[1]


def test_response_pending_makes_the_tester_wait_for_the_answer_that_follows() -> None:
    client = UdsClient(0xF9, PERIOD)
    client.request(0x00, bytes.fromhex("3101FF00"))
    pending = b"\x03\x7f\x31\x78".ljust(8, b"\xcc")
    final = b"\x04\x71\x01\xff\x00".ljust(8, b"\xcc")
    assert client.finished(1) is None
    client.receive(0x18DAF900, pending)
    assert client.finished(2) is None
    assert client.finished(2 + round(1.0 / PERIOD) + 5) is None  # past P2: 0x78 gave it P2*
    client.receive(0x18DAF900, final)
    ended = client.finished(200)
    assert ended is not None and ended.answer == bytes.fromhex("7101FF00")


def test_a_request_nobody_answers_ends_without_an_answer_after_p2() -> None:
    done = exchange(None, bytes.fromhex("3E00"), ticks=200)
    assert [(e.answer, e.ended_tick - e.sent_tick) for e in done] == [(None, round(1.0 / PERIOD) + 1)]


def test_an_answer_to_another_service_is_not_taken_for_the_answer() -> None:
    client = UdsClient(0xF9, PERIOD)
    client.request(0x00, bytes.fromhex("22F190"))
    client.receive(0x18DAF900, b"\x02\x7e\x00".ljust(8, b"\xcc"))
    assert client.finished(1) is None and client.waiting
