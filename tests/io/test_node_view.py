"""A node's view of its frames (ecu_sim.io.signals.NodeView): what a take holds, however many
frames piled up since the last one (the page samples the view; the stream takes every tick)."""

from __future__ import annotations

from typing import Any

import can
from hypothesis import given
from hypothesis import strategies as st

from ecu_sim.bus.listener import Direction
from ecu_sim.codec.profile import Profile
from ecu_sim.io.signals import FrameDecoder, NodeView

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
