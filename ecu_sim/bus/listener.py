"""One protocol for everything that watches the frames passing a port.

In the manner of python-can's ``Listener``, but each frame comes with what python-can's
``is_rx`` cannot tell: whether the node received it, heard its own identifier back, sent it, or
handed it to a bus that did not take it. SocketCAN marks the looped-back echo of our own frames
as sent, and a frame handed to a bus that is down never reaches the wire; a recording, a phase
lock or a benchmark needs to know which is which.
"""

from __future__ import annotations

import enum
from typing import Protocol

import can


class Direction(enum.Enum):
    #: a frame of another node, or an error frame
    RECEIVED = "received"
    #: a received frame carrying an identifier this node sends: our echo (or a node using our address)
    ECHO = "echo"
    #: a frame of this node that the bus accepted
    SENT = "sent"
    #: a frame of this node that never reached the bus (bus down, send error)
    NOT_SENT = "not sent"


class PortListener(Protocol):
    def on_frame(self, msg: can.Message, direction: Direction) -> None:
        """A frame passed the port; called on the loop's thread, so it must not block."""
