"""The frames of a recording in the order, and with the times, the bus carried them.

A bus that hands a node its own frames back (udp_multicast, SocketCAN's loop-back of a frame the
kernel's broadcast manager sent) tells when the frame was really on the bus: the echo's
timestamp. Writing the frame as sent when it is handed over and again as received when it comes
back would put it twice into the recording, and a player such as can-utils' ``canplayer`` would
send it twice. So the node's own frame is held from the moment it is handed over until its echo
arrives, then written once, as sent, with the echo's time, behind the frames that arrived
before it. A frame whose echo has not come by the next tick is written with the time it was
handed over, where it was handed over, on a bus that does not echo; on one that does, it never
was on the bus (the kernel's timer sent the next payload instead) and is left out. Received frames keep their
order, which is what the tick journal counts.

Time never runs backwards in a recording, since players and readers take it in order. The kernel
may stamp two frames out of the order it delivers them (two processors, or a broadcast manager's
timer firing while the node hands over the same payload): a frame written after another but
stamped before it takes the other's time, off by no more than that inversion.
"""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import can

#: echoes of frames already written without one, remembered so a late echo is not written again
_LATE_ECHOES = 16


def _key(msg: can.Message) -> tuple[int, bytes]:
    return msg.arbitration_id, bytes(msg.data)


@dataclass
class _Entry:
    msg: can.Message
    #: the tick that sent it; None for a received frame
    tick: int | None = None
    waiting: bool = False


class WireOrder:
    """Writes frames through ``write`` once each, in bus order; sent frames wait for their echo."""

    def __init__(self, write: Callable[[can.Message], None], channel: str | None) -> None:
        self._write = write
        self._channel = channel
        self._queue: deque[_Entry] = deque()
        self._late: deque[tuple[int, bytes]] = deque(maxlen=_LATE_ECHOES)
        #: the bus has handed back one of our frames: it echoes every frame it carries
        self.echoing = False
        #: the time of the frame written last, which no later frame is written before
        self._last_time = float("-inf")

    @property
    def waiting(self) -> bool:
        """Whether a sent frame is still held for its echo."""
        return any(entry.waiting for entry in self._queue)

    def sent(self, msg: can.Message, tick: int, handed_at: float) -> None:
        self._queue.append(_Entry(self._as_sent(msg, handed_at, msg.channel), tick, waiting=True))

    def received(self, msg: can.Message) -> None:
        if self._queue:
            self._queue.append(_Entry(msg))
        else:
            self._emit(msg)

    def echo(self, msg: can.Message) -> bool:
        """Whether ``msg`` is the echo of one of our frames (then it is written as that frame)."""
        key = _key(msg)
        queue = self._queue
        index = next((i for i, entry in enumerate(queue) if entry.waiting and _key(entry.msg) == key),
                     None)
        if index is None:
            if key in self._late:
                self._late.remove(key)
                return True
            return False
        self.echoing = True
        entry = queue[index]
        del queue[index]
        sent = self._as_sent(entry.msg, msg.timestamp, msg.channel)
        # Behind the frames that arrived while it was on its way, up to its echo's time.
        while (index < len(queue) and queue[index].tick is None
               and queue[index].msg.timestamp <= sent.timestamp):
            index += 1
        queue.insert(index, _Entry(sent, entry.tick))
        self._drain()
        return True

    def settle(self, before_tick: int | None = None) -> int:
        """The frames of ticks before ``before_tick`` (all with None) whose echo has not come: on
        a bus that echoes, never on the bus (a kernel timer that sent the next tick's payload
        instead), so left out, and counted in the return value; elsewhere written as handed over."""
        dropped = 0
        for entry in list(self._queue):
            if entry.waiting and (before_tick is None or (entry.tick or 0) < before_tick):
                if self.echoing:
                    self._queue.remove(entry)
                    dropped += 1
                else:
                    entry.waiting = False
                    self._late.append(_key(entry.msg))
        self._drain()
        return dropped

    def _drain(self) -> None:
        queue = self._queue
        while queue and not queue[0].waiting:
            self._emit(queue.popleft().msg)

    def _emit(self, msg: can.Message) -> None:
        """Write ``msg``; a copy at the last frame's time when the kernel stamped it before that one
        (the bus's frames are shared with other listeners, so never changed in place)."""
        if msg.timestamp < self._last_time:
            msg = copy.copy(msg)
            msg.timestamp = self._last_time
        self._last_time = msg.timestamp
        self._write(msg)

    def _as_sent(self, msg: can.Message, timestamp: float, channel: Any) -> can.Message:
        return can.Message(timestamp=timestamp, arbitration_id=msg.arbitration_id,
                           is_extended_id=msg.is_extended_id, is_fd=msg.is_fd,
                           bitrate_switch=msg.bitrate_switch, data=msg.data,
                           channel=channel if channel is not None else self._channel,
                           is_rx=False, check=False)
