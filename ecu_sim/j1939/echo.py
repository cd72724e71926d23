"""The layer's own frames heard back, told apart from another sender's frames from its address.

The port drops the echoes of the node's periodic identifiers, but the layer's frames (claims,
acknowledgements, transport) carry identifiers that change with the destination. On a bus that
says it hands the node back what it writes, the port learns those too and keeps their echoes
from the layer (:mod:`ecu_sim.bus.own`); elsewhere (a bus that does not say so, a replay of a
recording that holds them as received) their echoes reach the layer. J1939-81 asks a node that
hears a frame from its own address, not sent by itself, to re-send its claim; the layer
remembers what it sent, and a frame from its address that matches none of its recent sends is
another node's. Echoes come back in the order they were sent, so a match forgets every older
send (their echoes were lost, or the bus gives none).
"""

from __future__ import annotations

from collections import deque
from typing import Final

#: the layer's sends remembered for matching: far more than it sends between a send and its echo
REMEMBERED: Final = 256


class Echoes:
    """The layer's recent frames, as (identifier, data)."""

    def __init__(self) -> None:
        self._sent: deque[tuple[int, bytes]] = deque(maxlen=REMEMBERED)

    def sent(self, frames: list[tuple[int, bytes]]) -> None:
        if frames:
            self._sent.extend(frames)

    def heard(self, can_id: int, data: bytes | bytearray) -> bool:
        """True for the echo of one of our recent frames (forgotten from now on)."""
        sent = self._sent
        if not sent:
            return False
        frame = (can_id, bytes(data))
        for index, ours in enumerate(sent):
            if ours == frame:
                for _ in range(index + 1):
                    sent.popleft()
                return True
        return False
