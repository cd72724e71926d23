"""Our own frames heard back, told apart from another node's frames that carry our identifier.

A frame with an identifier this node transmits is either our echo (udp_multicast hands every
frame back to its sender; on SocketCAN the raw socket hears the broadcast manager's sends) or
another node using our address: a copy left running, a real ECU on the bus during HIL. In J1939
the second is an address conflict, and to the kernel transmitter's phase lock it is a false
measurement, so the two must not be confused.

Neither transport marks the frames of this node: python-can's ``is_rx`` on SocketCAN says
"created on this host" (MSG_DONTROUTE), which a frame of the broadcast manager and one written by
``cansend`` on the same host both are, and udp_multicast carries no sender at all. What is known
is what we sent, so an echo is a frame whose identifier and payload are among our recent sends,
not older than the newest echo already heard (both transports keep one sender's order). Anything
else is foreign: counted, shown to listeners as such, and warned about once per episode (a new
episode starts after a quiet spell). Another node that sends exactly our payload cannot be told
from our echo by any receiver; that is the limit of this rule.

The identifiers a node is built with are its periodic ones. Its other frames carry identifiers
of their own: a J1939 layer's claims, answers and transport, whose identifiers change with the
destination, and the frames of the nodes a process hosts beside its own (a restbus DBC's, the
FMS gateway's). On a bus that hands back what the node writes to it (the host-local bus of a
recording run), the port learns each such identifier as it sends it, and a frame with one is our
echo when it matches a recent send (:meth:`OwnFrames.heard_back`). One that matches none is not
counted here: it goes to the node, whose J1939 layer must hear another node's claim to contend,
or its frame from our address as an address violation.
"""

from __future__ import annotations

import logging
import math
import time
from collections import deque
from collections.abc import Callable, Iterable

import can

log = logging.getLogger(__name__)

#: our sends remembered for matching; echoes of older ones were lost (udp may drop) or never come
REMEMBERED = 64
#: a foreign frame after this long without one starts a new episode (and a new warning)
EPISODE_QUIET_S = 10.0


class OwnFrames:
    """What this node sent, and the foreign frames seen with its identifiers.

    ``foreign`` and ``episodes`` are the counts a J1939 layer reads to treat a second sender of
    our address as an address conflict; listeners of the port see each such frame as
    ``Direction.FOREIGN``.
    """

    def __init__(self, own_ids: Iterable[int], monotonic: Callable[[], float] = time.monotonic,
                 echoing: bool = True) -> None:
        """``echoing`` False: the bus never hands this node its own frames back, so every frame
        with one of its identifiers is another node's, whatever its payload."""
        self.ids = frozenset(own_ids)
        self.echoing = echoing
        #: frames of another node that carried one of our identifiers
        self.foreign = 0
        #: spells of such frames, each separated by EPISODE_QUIET_S without one
        self.episodes = 0
        # The frames themselves, not copies of their bytes: no frame is changed after it is sent,
        # and keeping a reference costs the send nothing but an append.
        self._sent: deque[can.Message] = deque(maxlen=REMEMBERED)
        #: ``remember(msg)`` is ``sent(msg)`` without the call, for the port's send of every tick
        self.remember = self._sent.append
        self._monotonic = monotonic
        self._last_foreign = -math.inf

    def sent(self, msg: can.Message) -> None:
        """``msg`` went to the bus: its echo, if the bus gives one, is ours."""
        self.remember(msg)

    def is_echo(self, msg: can.Message) -> bool:
        """True for our own frame heard back; False (and counted) for another sender's."""
        if self.heard_back(msg):
            return True
        self._foreign(msg)
        return False

    def heard_back(self, msg: can.Message) -> bool:
        """True for our own frame heard back; nothing is counted either way.

        Sends older than the matched one are forgotten; the matched one is kept, because the
        kernel's timer repeats its newest payload until the next update and a payload often
        stays the same from tick to tick.
        """
        ident, data, sent = msg.arbitration_id, msg.data, self._sent
        for index, ours in enumerate(sent if self.echoing else ()):
            if ours.arbitration_id == ident and ours.data == data:
                for _ in range(index):
                    sent.popleft()
                return True
        return False

    def _foreign(self, msg: can.Message) -> None:
        self.foreign += 1
        now = self._monotonic()
        quiet = now - self._last_foreign >= EPISODE_QUIET_S
        self._last_foreign = now
        if quiet:
            self.episodes += 1
            log.warning("another node sends our identifier %X (payload %s): a second ECU with this "
                        "address, or a copy of ecu-sim left running? Counted as 'foreign' in the "
                        "status line; warned again only after %g s without one", msg.arbitration_id,
                        bytes(msg.data).hex(" ").upper() or "empty", EPISODE_QUIET_S)
