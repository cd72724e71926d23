"""``--record FILE``: every frame a node receives and sends, plus what a replay needs to repeat it.

The frames go to ``FILE`` through python-can's ``Logger``, so the format follows the suffix
(``.log`` candump, ``.asc``, ``.blf``) and any CAN tool can read it; with ``max_bytes`` python-can's
``SizedRotatingLogger`` starts a new file at that size, renaming the full one
(``run_<date>_#000.log``, ...), so ``FILE`` always holds the newest frames. The log is the bus as
it was, for any player: received frames keep the bus's timestamp, and each frame the node sent is
in it once, with the time the bus carried it where the bus hands it back
(:mod:`ecu_sim.io.wire_order`), labelled with the run's channel. Next to it the tick journal
(:mod:`ecu_sim.io.journal`) splits the frames into ticks.

The recorder is a listener of the node's port, which tells it each frame's direction: the log's
direction is the node's. Its own frames are marked sent (``T`` in a candump .log); everything else
it received is marked received, also a frame the bus marks as sent that is not ours. A replay
checks each frame's direction against the journal's split, so a frame missing from the log, or
one moved or remarked, is found at its tick. Both files are flushed once a second and when the
run ends, so a killed run keeps all but its last second; a write that fails (a full disk) ends
the run with an OutputError and leaves what was written.

A frame or a tick is only noted as it passes (with the time a sent frame was handed over and an
attacked run's label, which cannot wait); the notes are worked through in their order at the
flush, or when :data:`HELD_EVENTS` pile up. A tick then runs none of the recording's code but an
append, which matters on a slow node: between its ticks everything it ran is out of the
processor's caches, and the recording's code run cold each tick cost more than the same code run
for a second's frames at once. The files get the same bytes at the same flushes.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import os
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

import can

from ecu_sim.bus.listener import Direction
from ecu_sim.errors import CannotCreateError, OutputError
from ecu_sim.io.journal import JournalWriter, Labeller, journal_path
from ecu_sim.io.sync import Syncer
from ecu_sim.io.wire_order import WireOrder
from ecu_sim.runtime.ticks import ticks_in

log = logging.getLogger(__name__)

#: how often the log and journal are handed to the operating system: what a killed run loses at most
FLUSH_INTERVAL_S = 1.0
#: how often a temporary recording (the page's spool made a recording for a download) is handed
#: over: nothing reads it before the download's own flush
TEMPORARY_FLUSH_INTERVAL_S = 10.0
#: frames and ticks noted before they are worked through and the frames handed to the log's
#: writer together, at most; all of them at each flush
HELD_EVENTS = 64

class Recorder:
    """A listener on the node's port and an observer of its loop; a context manager.

    ``channel`` labels the frames the node sends (python-can's writers would write their own
    default for a frame without one). Every ``period_s`` worth of :data:`FLUSH_INTERVAL_S` the
    log and then the journal are handed to the operating system, after the tick's frame is out;
    a background thread asks the disk to keep them (:class:`~ecu_sim.io.sync.Syncer`), so a slow card
    never holds up a tick. A ``temporary`` recording has no such thread and is handed over every
    :data:`TEMPORARY_FLUSH_INTERVAL_S`.
    """

    def __init__(self, path: str, max_bytes: int, head: dict[str, Any], *, period_s: float = 0.1,
                 channel: str | None = None, now: Callable[[], float] = time.time,
                 labels: Labeller | None = None, temporary: bool = False) -> None:
        """``now``: the time a sent frame is handed over (a simulation's virtual clock, so its
        recording holds simulated time); ``labels``: an attacked run's labels of received frames;
        ``temporary``: removed when the run ends, so not worth keeping through a kill or a power cut."""
        self.path = path
        self._now = now
        self._labels = labels
        self._channel = channel
        flush_s = TEMPORARY_FLUSH_INTERVAL_S if temporary else FLUSH_INTERVAL_S
        self._flush_every = max(1, ticks_in(flush_s, period_s))
        try:
            self._journal = JournalWriter(journal_path(path), head)
        except OSError as exc:
            raise CannotCreateError(f"cannot write the recording {journal_path(path)}: "
                                    f"{exc.strerror or exc}") from None
        try:
            if max_bytes > 0:
                rotating = can.SizedRotatingLogger(path, max_bytes=max_bytes)
                rotating.namer = self._rotated
                rotating.rotator = _rotate_keeping_base
                self._logger: can.Listener = rotating
            else:
                self._logger = can.Logger(path)
        except (OSError, ValueError) as exc:
            self._journal.discard()
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise CannotCreateError(f"cannot write the recording {path}: {reason}") from None
        self._rx = 0
        self._tx = 0
        #: the labels of the frames received since the latest tick line, under attack
        self._tick_labels: list[int] = []
        self._ticks = 0
        self._failed = False
        self._stopped = False
        self._broken = False
        self._syncer = Syncer(None if temporary else self._files)
        # The frames in order, handed to the log's writer together when the notes are worked
        # through: its code then runs warm for many frames, not cold for the few of each tick, and
        # the files get the same bytes at the same flushes.
        self._held: list[can.Message] = []
        # It writes into memory, so its steps need no guard; only handing over and flushing can
        # fail (_write).
        self._order = WireOrder(self._held.append, channel)
        #: the frames and ticks noted since they were last worked through, in their order
        self._events: list[_Event] = []
        #: ticks noted, worked through or not
        self._noted_ticks = 0
        #: frames written so far, received and sent
        self.frames = 0

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if kind is not None and self._noted_ticks == 0 and not self._stopped:
            self._discard()  # the run failed before its first tick: nothing worth keeping
            return
        self.stop()

    def _discard(self) -> None:
        self._stopped = True
        self._syncer.stop()
        with contextlib.suppress(OSError, ValueError):
            self._logger.stop()
        self._journal.discard()
        with contextlib.suppress(OSError):
            os.remove(self.path)

    def on_frame(self, msg: can.Message, direction: Direction) -> None:
        if direction is Direction.SENT:
            self._events.append((direction, msg, self._now()))
        elif self._labels is not None and direction is not Direction.NOT_SENT:
            self._events.append((direction, msg, self._labels(msg)))  # the labeller forgets it
        else:
            self._events.append((direction, msg, None))

    def noted(self, direction: Direction, msg: can.Message, value: float | int | None) -> None:
        """A frame noted elsewhere as :meth:`on_frame` notes it (a sent frame's time, a received
        one's label): the page's spool (:mod:`ecu_sim.io.spool`) made a recording."""
        self._events.append((direction, msg, value))

    def on_tick(self, tick: int, now: float, transmitted: bool) -> None:
        self._events.append((None, None, transmitted))
        self._noted_ticks += 1
        if self._noted_ticks % self._flush_every == 0 or len(self._events) >= HELD_EVENTS:
            self._catch_up()

    def _catch_up(self) -> None:
        """Work through the frames and ticks noted so far, in their order."""
        events, self._events = self._events, []
        for direction, msg, value in events:
            if direction is None:
                self._tick(bool(value))
            else:
                assert msg is not None
                self._frame(msg, direction, value)
        self._write(self._hand_over)  # the batch's frames to the log's writer at once

    def _frame(self, msg: can.Message, direction: Direction, value: float | int | None) -> None:
        """A frame noted by on_frame; ``value``: a sent frame's time, a received one's label."""
        if direction is Direction.NOT_SENT:
            self._failed = True
            return
        if direction is Direction.SENT:
            assert value is not None
            self._tx += 1
            self.frames += 1
            self._order.sent(msg, self._ticks, value)
            return
        if direction is Direction.ECHO and self._order.echo(msg):
            return  # our own frame heard back: written once, as sent, with the echo's time
        self._rx += 1
        self.frames += 1
        if value is not None:
            self._tick_labels.append(int(value))
        if not msg.is_rx:  # an echo the bus marks as sent that is not ours: the node received it
            msg = copy.copy(msg)
            msg.is_rx = True
        self._order.received(msg)

    def _tick(self, transmitted: bool) -> None:
        # The previous ticks' frames whose echo did not come are written now, before this tick's
        # line, so the journal on disk never counts a frame still held.
        self._settle(self._ticks)
        self._journal.tick(self._rx, self._tx, not transmitted, self._failed)
        if self._tick_labels:
            if any(self._tick_labels):
                self._journal.labels(self._tick_labels)
            self._tick_labels = []
        self._rx = self._tx = 0
        self._failed = False
        self._ticks += 1
        if self._ticks % self._flush_every == 0:
            self._write(self._flush)

    def control(self, record: dict[str, Any]) -> None:
        """A control applied after the latest tick (ecu_sim.controls), into the journal."""
        self._catch_up()
        self._journal.control(record)

    def flush_now(self) -> tuple[int, int]:
        """Flush the log and the journal now; their sizes then, a prefix that replays as a
        recording cut at its last flushed tick (the files only grow: no rotation, not BLF)."""
        self._catch_up()
        self._write(self._flush)
        return os.path.getsize(self.path), os.path.getsize(self._journal.path)

    def _settle(self, before_tick: int | None) -> None:
        """Frames of earlier ticks (all with None) whose echo did not come; the journal's newest
        line, still held, stops counting those that never were on the bus."""
        dropped = self._order.settle(before_tick)
        if dropped:
            self._journal.unsent(dropped)
            self.frames -= dropped

    def awaits_echo(self) -> bool:
        """Whether a frame the node sent is still held for its echo (the frames noted so far
        worked through first)."""
        self._catch_up()
        return self._order.waiting

    def _hand_over(self) -> None:
        """The frames held so far to the log's writer, in their order."""
        held, self._held[:] = list(self._held), []
        write = self._logger.on_message_received
        for msg in held:
            write(msg)

    def _flush(self) -> bool:
        """The log first, then the journal, so the journal never counts frames the log lacks."""
        self._hand_over()
        handle = getattr(_writer(self._logger), "file", None)
        if handle is not None and not isinstance(_writer(self._logger), can.BLFWriter):
            handle.flush()
        self._journal.flush(keep=1 if self._order.waiting else 0)
        return True

    def _files(self) -> list[int]:
        """The file descriptors to sync: the log's current file and the journal."""
        handle: Any = getattr(_writer(self._logger), "file", None)
        numbers = [self._journal.fileno()]
        with contextlib.suppress(AttributeError, OSError, ValueError):
            numbers.append(handle.fileno())
        return numbers

    def _write(self, action: Callable[[], bool | None]) -> bool:
        """Run a write; a failing one ends the recording with what was written (OutputError)."""
        if self._broken:
            return False
        try:
            return bool(action())
        except OSError as exc:
            self._broken = True
            self._abandon()
            raise OutputError(
                f"writing the recording {self.path} failed: {exc.strerror or exc}; it holds the "
                f"frames up to its last flush and replays to there (ecu-sim replay {self.path})"
            ) from None

    def _rotated(self, default_name: str | os.PathLike[str]) -> str:
        name = os.fspath(default_name)
        self._journal.part(name)
        return name

    def _abandon(self) -> None:
        """Close both files after a failed write, without the end line and the lines not flushed."""
        self._stopped = True
        self._syncer.stop()
        with contextlib.suppress(OSError, ValueError):
            self._logger.stop()
        self._journal.close(None)

    def stop(self) -> None:
        """Flush and close both files; safe to call twice."""
        if self._stopped:
            return
        self._catch_up()  # a write that fails here has closed both files (_abandon)
        self._stopped = True
        self._syncer.stop()
        try:
            self._settle(None)
            self._hand_over()
            self._logger.stop()
        except (OSError, ValueError) as exc:
            self._journal.close(None)
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise OutputError(f"closing the recording {self.path} failed: {reason}; it holds the "
                              f"frames up to its last flush and replays to there") from None
        except BaseException:
            self._journal.close(None)
            raise
        try:
            self._journal.close(self._rx)  # the end line only for a log closed complete
        except OSError as exc:
            raise OutputError(f"closing the tick journal {journal_path(self.path)} failed: "
                              f"{exc.strerror or exc}; the recording replays to its last "
                              f"flush") from None
        log.info("recorded %d frames to %s (tick journal %s)", self.frames, self.path,
                 journal_path(self.path))


#: a noted frame (its direction, the frame, a sent frame's time or a received one's label) or a
#: tick (None, None, whether it transmitted)
_Event = tuple[Direction | None, can.Message | None, float | int | None]


def _writer(logger: can.Listener) -> object:
    """The writer that holds the current file: a rotating logger's, or the logger itself."""
    return getattr(logger, "writer", logger)


def _rotate_keeping_base(source: str | os.PathLike[str], dest: str | os.PathLike[str]) -> None:
    """The full part moved aside and the base file there again at once: python-can makes the next
    writer only after looking its format up, and a process killed in between would leave a
    recording without the file its journal names last."""
    os.rename(source, dest)
    with open(source, "ab"):
        pass
