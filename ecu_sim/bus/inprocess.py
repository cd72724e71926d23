"""A CAN segment inside one process, for virtual-time runs: frames by reference, no copy, no lock.

python-can's ``virtual`` interface deep-copies every frame and passes it through a locked
``queue.Queue``, which costs more than the nodes' own work in a simulation. Here each frame is
handed to the other members' deques by reference. That is safe because a transmitter builds a
fresh ``can.Message`` for every send and nobody mutates a frame after sending or receiving it,
and because one thread ticks every node, so no lock is needed. Runs on it are bit-identical to
runs on python-can's virtual bus (tests/runs/test_simulation_link.py).
"""

from __future__ import annotations

from collections import deque

import can

from ecu_sim.bus.transmit import FrameFactory, new_message
from ecu_sim.runtime.clock import VirtualClock

#: every attribute of a python-can 4 Message; _Frame below sets or fixes exactly these
_MESSAGE_SLOTS = frozenset({
    "timestamp", "arbitration_id", "is_extended_id", "is_remote_frame", "is_error_frame", "channel",
    "dlc", "data", "is_fd", "is_rx", "bitrate_switch", "error_state_indicator",
})


class _Frame(can.Message):
    """A can.Message built without the general constructor's keyword handling, at a fraction of the cost.

    The fields no frame of the link ever changes (a classic data frame, not remote, not an error)
    are the class's, so building one sets only what differs between frames; a frame is never
    changed after it is sent (see the module), and code that wants a changed frame copies it
    first, as python-can's ``copy`` makes an ordinary Message. Only used when python-can's Message
    has exactly the slots named here (checked at import), so a future python-can with another
    field falls back to the ordinary constructor.
    """

    __slots__ = ()
    is_remote_frame = False
    is_error_frame = False
    channel = None
    is_fd = False
    is_rx = True
    bitrate_switch = False
    error_state_indicator = False

    def __init__(self, arbitration_id: int, data: bytes, is_extended_id: bool) -> None:
        self.timestamp = 0.0
        self.arbitration_id = arbitration_id
        self.is_extended_id = is_extended_id
        self.data = bytearray(data)
        self.dlc = len(data)


#: the cheapest frame this python-can allows: the transmitters of an in-process link build these
new_frame: FrameFactory = (
    _Frame if set(can.Message.__slots__) - {"__weakref__"} == _MESSAGE_SLOTS else new_message)


class InProcessLink:
    """A private CAN segment inside one process: what one member sends, every other one receives.

    Frames carry the virtual time of their sending as timestamp, so a tap that records them
    (a python-can Logger on a port) writes simulated time, not the wall clock.
    """

    def __init__(self, clock: VirtualClock, channel: str) -> None:
        self.clock = clock
        self.channel = channel
        self.members: list[InProcessBus] = []

    def bus(self) -> InProcessBus:
        return InProcessBus(self)

    def _rewire(self) -> None:
        for member in self.members:
            member._peers = [other._queue for other in self.members if other is not member]


class InProcessBus(can.BusABC):
    """One member of an :class:`InProcessLink`: frames by reference, no copy, no lock, no wait.

    Receiving never blocks: in virtual time everything due has been sent before the loop drains,
    so waiting could only ever return nothing. Receive filters are honoured as on any bus.
    """

    def __init__(self, link: InProcessLink) -> None:
        self._link = link
        self._queue: deque[can.Message] = deque()
        self._peers: list[deque[can.Message]] = []
        self._now = link.clock.now
        self.channel_info = f"in-process link {link.channel}"
        super().__init__(channel=link.channel)
        link.members.append(self)
        link._rewire()

    def send(self, msg: can.Message, timeout: float | None = None) -> None:
        msg.timestamp = self._now()
        for queue in self._peers:
            queue.append(msg)

    def recv(self, timeout: float | None = None) -> can.Message | None:
        """The oldest queued frame the receive filters let through; never waits.

        The one bus of ours that overrides ``recv`` rather than only ``_recv_internal``:
        python-can's ``recv`` times every call for its wait, and on this bus, the inner loop of
        every simulation, no call ever waits, so that bookkeeping would be a large share of a
        tick (docs/performance.md). The filters are applied as python-can applies them.
        """
        queue = self._queue
        if self._filters is None:
            return queue.popleft() if queue else None
        while queue:
            msg = queue.popleft()
            if self._matches_filters(msg):
                return msg
        return None

    def _recv_internal(self, timeout: float | None) -> tuple[can.Message | None, bool]:
        return self.recv(), True

    def shutdown(self) -> None:
        link = self._link
        if self in link.members:
            link.members.remove(self)
            link._rewire()
        self._queue.clear()
        super().shutdown()
