"""One protocol for everything that watches the frames passing a port.

In the manner of python-can's ``Listener``, but each frame comes with what python-can's
``is_rx`` cannot tell: whether the node received it, heard its own frame back, heard another
node use its identifier, sent it, or handed it to a bus that did not take it. SocketCAN marks
every frame made on this host as sent (the broadcast manager's and ``cansend``'s alike), and a
frame handed to a bus that is down never reaches the wire; a recording, a phase lock or a
benchmark needs to know which is which.
"""

from __future__ import annotations

import enum
from typing import Protocol

import can


class Direction(enum.Enum):
    #: a frame of another node, or an error frame
    RECEIVED = "received"
    #: a received frame that is our own, heard back (same identifier and payload as one we sent)
    ECHO = "echo"
    #: a received frame of another node carrying an identifier this node sends (an address conflict)
    FOREIGN = "foreign"
    #: a frame of this node that the bus accepted
    SENT = "sent"
    #: a frame of this node that never reached the bus (bus down, send error)
    NOT_SENT = "not sent"


class PortListener(Protocol):
    def on_frame(self, msg: can.Message, direction: Direction) -> None:
        """A frame passed the port; called on the loop's thread, so it must not block."""
