"""The node's ISO-TP layer in virtual time: frames, flow control, timeouts and bounds."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ecu_sim.isotp.frames import FlowStatus, addressed, answer_id, st_min_s
from ecu_sim.isotp.transport import IsoTpServer, Limits, RequestFromTester

NODE = 0x00
TESTER = 0xF9
PERIOD = 0.01
PHYSICAL = 0x18DA0000 | (NODE << 8) | TESTER
FUNCTIONAL = 0x18DBFF00 | TESTER
ANSWER = answer_id(NODE, TESTER)
LONG = bytes(range(40))


def server(**limits: int | float) -> IsoTpServer:
    return IsoTpServer(NODE, PERIOD, Limits(**limits))  # type: ignore[arg-type]


def first_frame(payload: bytes) -> bytes:
    return bytes((0x10 | (len(payload) >> 8), len(payload) & 0xFF)) + payload[:6]


def consecutive_frames(payload: bytes) -> list[bytes]:
    rest = payload[6:]
    starts = range(0, len(rest), 7)
    return [bytes((0x20 | ((i + 1) & 0x0F),)) + rest[at:at + 7] for i, at in enumerate(starts)]


def flow(status: int, block_size: int = 0, st_min: int = 0) -> bytes:
    return bytes((0x30 | status, block_size, st_min)) + b"\xcc" * 5


def answer_frames(layer: IsoTpServer, first_tick: int, ticks: int) -> list[bytes]:
    return [data for tick in range(first_tick, first_tick + ticks) for _, data in layer.tick(tick)]


def test_a_single_frame_request_is_handed_over_whole() -> None:
    layer = server()
    assert layer.receive(PHYSICAL, b"\x02\x10\x03\xcc\xcc\xcc\xcc\xcc")
    assert layer.take() == [RequestFromTester(TESTER, False, b"\x10\x03")]


def test_identifiers_of_normal_fixed_addressing_are_read_and_swapped_for_the_answer() -> None:
    assert addressed(PHYSICAL) == (TESTER, NODE, False)
    assert addressed(FUNCTIONAL) == (TESTER, 0xFF, True)
    assert addressed(0x18FEF100) is None
    assert ANSWER == 0x18DAF900


def test_a_frame_for_another_node_or_another_pgn_is_not_taken() -> None:
    layer = server()
    assert not layer.receive(0x18DA05F9, b"\x02\x10\x03")
    assert not layer.receive(0x18FEF1F9, b"\x02\x10\x03")
    assert layer.take() == []


def test_any_tester_address_is_answered_on_its_own_identifier() -> None:
    layer = server()
    layer.send(0x3A, b"\x50\x03")
    assert layer.tick(0) == [(0x18DA3A00, b"\x02\x50\x03\xcc\xcc\xcc\xcc\xcc")]


def test_a_functional_request_takes_single_frames_only() -> None:
    layer = server()
    assert layer.receive(FUNCTIONAL, b"\x02\x3e\x80")
    assert layer.receive(FUNCTIONAL, first_frame(LONG))
    assert layer.take() == [RequestFromTester(TESTER, True, b"\x3e\x80")]
    assert layer.tick(0) == []


def test_a_first_frame_is_answered_with_flow_control_at_the_tick_and_the_message_assembled() -> None:
    layer = server()
    layer.receive(PHYSICAL, first_frame(LONG))
    assert layer.tick(0) == [(ANSWER, flow(FlowStatus.CONTINUE))]
    for frame in consecutive_frames(LONG):
        layer.receive(PHYSICAL, frame)
    assert layer.take() == [RequestFromTester(TESTER, False, LONG)]


def test_the_servers_block_size_asks_for_a_flow_control_after_each_block() -> None:
    layer = server(block_size=2)
    layer.receive(PHYSICAL, first_frame(LONG))
    assert layer.tick(0) == [(ANSWER, flow(FlowStatus.CONTINUE, 2))]
    frames = consecutive_frames(LONG)
    layer.receive(PHYSICAL, frames[0])
    assert layer.tick(1) == []
    layer.receive(PHYSICAL, frames[1])
    assert layer.tick(2) == [(ANSWER, flow(FlowStatus.CONTINUE, 2))]


def test_a_wrong_sequence_number_loses_the_message() -> None:
    layer = server()
    layer.receive(PHYSICAL, first_frame(LONG))
    layer.tick(0)
    frames = consecutive_frames(LONG)
    layer.receive(PHYSICAL, frames[1])
    layer.receive(PHYSICAL, frames[0])
    assert layer.take() == [] and layer.counters.wrong_sequence == 1


def test_a_reception_without_its_next_consecutive_frame_is_dropped_after_n_cr() -> None:
    layer = server(timeout_s=0.1)
    layer.receive(PHYSICAL, first_frame(LONG))
    answer_frames(layer, 0, 15)
    assert not layer.busy and layer.counters.timeouts == 1
    layer.receive(PHYSICAL, consecutive_frames(LONG)[0])
    assert layer.take() == []


def test_a_flood_of_first_frames_never_followed_holds_one_reception_per_tester() -> None:
    layer = server(testers=2)
    for tester in (0xF1, 0xF2, 0xF3):
        for _ in range(100):
            layer.receive(0x18DA0000 | tester, first_frame(LONG))
    sent = layer.tick(0)
    overflow = [data for can_id, data in sent if data[0] == 0x30 | FlowStatus.OVERFLOW]
    assert len(overflow) == 100 and {can_id & 0xFFFF for can_id, data in sent if data in overflow} == {0xF300}


def test_a_first_frame_announcing_more_than_4095_bytes_is_refused_with_overflow() -> None:
    layer = server()
    layer.receive(PHYSICAL, b"\x10\x00\x00\x00\x10\x00\x01\x02")
    assert layer.tick(0) == [(ANSWER, flow(FlowStatus.OVERFLOW))]


def test_a_short_answer_goes_as_one_padded_single_frame() -> None:
    layer = server()
    layer.send(TESTER, b"\x62\xf1\x95\x41")
    assert layer.tick(0) == [(ANSWER, b"\x04\x62\xf1\x95\x41\xcc\xcc\xcc")]
    assert not layer.busy


def test_a_long_answer_waits_for_the_testers_flow_control_then_goes_whole() -> None:
    layer = server()
    layer.send(TESTER, LONG)
    assert layer.tick(0) == [(ANSWER, first_frame(LONG))]
    assert layer.tick(1) == []
    layer.receive(PHYSICAL, flow(FlowStatus.CONTINUE))
    sent = [data for _, data in layer.tick(2)]
    assert sent == [frame + b"\xcc" * (8 - len(frame)) for frame in consecutive_frames(LONG)]


def test_the_testers_block_size_stops_the_answer_for_its_next_flow_control() -> None:
    layer = server()
    layer.send(TESTER, LONG)
    layer.tick(0)
    layer.receive(PHYSICAL, flow(FlowStatus.CONTINUE, block_size=2))
    assert len(layer.tick(1)) == 2
    assert layer.tick(2) == []
    layer.receive(PHYSICAL, flow(FlowStatus.CONTINUE, block_size=2))
    assert len(layer.tick(3)) == 2


def test_the_testers_st_min_sends_one_frame_per_tick_at_least_st_min_apart() -> None:
    layer = server()
    layer.send(TESTER, LONG)
    layer.tick(0)
    layer.receive(PHYSICAL, flow(FlowStatus.CONTINUE, st_min=20))  # 20 ms: every second 10 ms tick
    counts = [len(layer.tick(tick)) for tick in range(1, 9)]
    assert counts == [1, 0, 1, 0, 1, 0, 1, 0]


def test_st_min_bytes_are_milliseconds_or_hundreds_of_microseconds() -> None:
    assert (st_min_s(0x7F), st_min_s(0xF1), st_min_s(0xF9), st_min_s(0x80)) == (0.127, 0.0001, 0.0009, 0.127)


def test_with_st_min_zero_a_tick_sends_at_most_a_burst() -> None:
    layer = server(burst=4)
    layer.send(TESTER, bytes(200))
    layer.tick(0)
    layer.receive(PHYSICAL, flow(FlowStatus.CONTINUE))
    assert [len(layer.tick(tick)) for tick in (1, 2)] == [4, 4]


def test_wait_frames_hold_the_answer_and_too_many_give_it_up() -> None:
    layer = server(max_waits=2)
    layer.send(TESTER, LONG)
    layer.tick(0)
    for tick in (1, 2):
        layer.receive(PHYSICAL, flow(FlowStatus.WAIT))
        assert layer.tick(tick) == [] and layer.busy
    layer.receive(PHYSICAL, flow(FlowStatus.WAIT))
    assert not layer.busy and layer.counters.aborted == 1


def test_an_overflow_from_the_tester_gives_the_answer_up() -> None:
    layer = server()
    layer.send(TESTER, LONG)
    layer.tick(0)
    layer.receive(PHYSICAL, flow(FlowStatus.OVERFLOW))
    assert layer.tick(1) == [] and not layer.busy


def test_an_answer_without_flow_control_is_dropped_after_n_bs() -> None:
    layer = server(timeout_s=0.1)
    layer.send(TESTER, LONG)
    answer_frames(layer, 0, 15)
    assert not layer.busy and layer.counters.timeouts == 1


@given(st.lists(st.tuples(st.sampled_from([PHYSICAL, FUNCTIONAL, 0x18DA00F1, 0x18DA00F2]),
                          st.binary(max_size=8)), max_size=200))
def test_any_frames_leave_the_layer_bounded_and_never_raise(received: list[tuple[int, bytes]]) -> None:
    layer = server(testers=2)
    for tick, (can_id, data) in enumerate(received):
        layer.receive(can_id, data)
        if tick % 7 == 0:
            layer.tick(tick)
            for message in layer.take():
                assert len(message.payload) <= 4095
    assert layer.tracked <= 2
