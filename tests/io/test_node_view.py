"""A node's view of its frames (ecu_sim.io.signals.NodeView): what a take holds, however many
frames piled up since the last one (the page samples the view; the stream takes every tick)."""

from __future__ import annotations

from typing import Any

import can
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ecu_sim.bus.listener import Direction
from ecu_sim.codec.profile import Profile
from ecu_sim.io.signals import FrameDecoder, NodeView, TickView
from ecu_sim.runtime.loop import LoopStats

DECODER = FrameDecoder(Profile.load("j1939").database)
#: identifiers of the j1939 DBC's messages with other priorities and source addresses (one key
#: each, several identifiers to a key), and one the DBC does not describe
IDS = [message.frame_id for message in Profile.load("j1939").database.messages][:6]
IDENTIFIERS = sorted({*IDS, *((i & ~0x1C000000) | 0x0C000000 for i in IDS),
                      *((i & ~0xFF) | 0x80 for i in IDS), 0x18FFAA99})

frames = st.lists(st.tuples(st.sampled_from([Direction.RECEIVED, Direction.SENT]),
                            st.sampled_from(IDENTIFIERS), st.binary(min_size=0, max_size=8),
                            st.booleans()), max_size=60)


def _every_frame_in_order(piled: list[tuple[Direction, can.Message]]) -> dict[str, Any]:
    """The group as decoding every frame in order makes it: the rule the view keeps."""
    group: dict[str, Any] = {"rx": {}, "tx": {}}
    for direction, msg in piled:
        decoded = DECODER.decode(msg)
        if decoded is not None:
            group["rx" if direction is Direction.RECEIVED else "tx"][decoded[0]] = decoded[1]
    return group


def _message(identifier: int, data: bytes, error: bool) -> can.Message:
    return can.Message(arbitration_id=identifier, data=data, is_extended_id=True, is_error_frame=error)


@given(frames)
def test_a_take_holds_what_decoding_every_frame_in_order_gives_in_the_same_order(
        piled: list[tuple[Direction, int, bytes, bool]]) -> None:
    view = NodeView("ecu", DECODER, dict, dict)
    messages = [(way, _message(identifier, data, error)) for way, identifier, data, error in piled]
    for direction, msg in messages:
        view.on_frame(msg, direction)
    taken = view.take()
    expected = _every_frame_in_order(messages)
    for way in ("rx", "tx"):
        assert list(taken[way].items()) == list(expected[way].items())


def test_a_take_forgets_the_frames_it_held() -> None:
    view = NodeView("ecu", DECODER, dict, dict)
    view.on_frame(_message(IDS[0], bytes(8), False), Direction.SENT)
    assert view.take()["tx"]
    assert view.take()["tx"] == {}


def _sampled() -> tuple[TickView, NodeView]:
    view = NodeView("ecu", DECODER, dict, dict)
    return TickView([view], LoopStats(), 0.1, float, sampled=True), view


def test_a_sampled_view_keeps_no_frames_until_its_reader_watches() -> None:
    tick_view, view = _sampled()
    view.on_frame(_message(IDS[0], bytes(8), False), Direction.SENT)
    assert tick_view.take(0, 0.0, True)["ecu"]["tx"] == {}


def test_a_sampled_view_keeps_the_frames_that_come_while_its_reader_watches() -> None:
    tick_view, view = _sampled()
    tick_view.watch(True)
    view.on_frame(_message(IDS[0], bytes(8), False), Direction.SENT)
    assert tick_view.take(0, 0.0, True)["ecu"]["tx"]


def test_a_sampled_view_lets_its_frames_go_when_its_reader_stops_watching() -> None:
    tick_view, view = _sampled()
    tick_view.watch(True)
    view.on_frame(_message(IDS[0], bytes(8), False), Direction.SENT)
    tick_view.watch(False)
    view.on_frame(_message(IDS[1], bytes(8), False), Direction.SENT)
    assert tick_view.take(0, 0.0, True)["ecu"]["tx"] == {}


@pytest.mark.parametrize("watching", [False, True])
def test_a_view_read_every_tick_keeps_its_frames_whatever_a_watcher_says(watching: bool) -> None:
    view = NodeView("ecu", DECODER, dict, dict)
    tick_view = TickView([view], LoopStats(), 0.1, float)
    view.on_frame(_message(IDS[0], bytes(8), False), Direction.SENT)
    tick_view.watch(watching)
    assert tick_view.take(0, 0.0, True)["ecu"]["tx"]
