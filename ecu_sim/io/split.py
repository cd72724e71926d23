"""A recording's log split into ticks by its journal, checked as it is read.

The journal counts, per tick, the frames received before it and the frames it sent. Received
frames are in the log in the order the node received them. A sent frame is written when the
bus carried it (:mod:`ecu_sim.io.wire_order`): after the frames its tick received, and before
any frame the tick after next received, so it may follow frames the next tick received. The
split takes the received frames of each tick in order and gives each sent frame to the oldest
tick that still owes one; where the log cannot be this journal's (a sent frame missing or
remarked, a received one remarked, the log cut short or run on) it reports a Mismatch at the
first tick concerned. A journal of version 1 kept each tick's frames together, echoes possibly
marked sent: it is split by position, with the checks that allows.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

import can

from ecu_sim.io.journal import TickRecord
from ecu_sim.io.recording import Recording


@dataclass(frozen=True)
class Mismatch:
    """Where the log parts from its tick journal: it is not the log the journal was written with."""

    #: the tick (the number of ticks, for frames after the last one)
    tick: int
    what: str


def text(frames: list[can.Message] | tuple[can.Message, ...]) -> str:
    if not frames:
        return "no frame"
    return ", ".join(f"{m.arbitration_id:08X}#{bytes(m.data).hex().upper()}" if m.is_extended_id
                     else f"{m.arbitration_id:03X}#{bytes(m.data).hex().upper()}" for m in frames)


class TickSplit:
    """Reads the log lazily: :meth:`received` before each tick, :meth:`finish` after the last."""

    def __init__(self, recording: Recording) -> None:
        self._recording = recording
        self._frames: Iterator[can.Message] = recording.frames()
        self._positional = not recording.directions_kept
        #: per tick: the frames the recording says the node sent
        self.recorded: list[list[can.Message]] = []
        #: ticks that still owe sent frames: [tick, how many]
        self._owed: deque[list[int]] = deque()
        self.mismatch: Mismatch | None = None

    def _next(self) -> tuple[can.Message, str] | None:
        for msg in self._frames:
            name, number = self._recording.at
            return msg, f"frame {number} of {name.rsplit('/', 1)[-1]}"
        return None

    def received(self, index: int, record: TickRecord) -> list[can.Message] | None:
        """The frames tick ``index`` received, or None (and ``mismatch``) where the log parts."""
        counted = f"the journal counts {record.rx} received and {record.tx} sent frames"
        frames: list[can.Message] = []
        if self._positional:
            return self._by_position(index, record, counted)
        while len(frames) < record.rx:
            taken = self._next()
            if taken is None:
                if self._owed:
                    return self._part(self._owed[0][0], self._cut_short())
                return self._part(index, f"the log ends before the tick's frames: {counted}, the "
                                         f"log holds {len(frames)} more (it was cut short, or is "
                                         f"not this journal's log)")
            msg, where = taken
            if not msg.is_rx:
                if not self._pay(msg):
                    return self._part(index, f"{counted}, but its frame {len(frames) + 1}, "
                                             f"{text([msg])} ({where}), is marked sent where a "
                                             f"received one belongs: a received frame is missing "
                                             f"from the log or marked sent")
                continue
            if self._owed and self._owed[0][0] < index - 1:
                return self._part(self._owed[0][0], self._unpaid(where))
            frames.append(msg)
        self.recorded.append([])
        if record.tx:
            self._owed.append([index, record.tx])
        return frames

    def _by_position(self, index: int, record: TickRecord, counted: str) -> list[can.Message] | None:
        frames = []
        for _ in range(record.rx + record.tx):
            taken = self._next()
            if taken is None:
                return self._part(index, f"the log ends before the tick's frames: {counted}")
            frames.append(taken)
        for msg, where in frames[record.rx:]:
            if msg.is_rx:
                return self._part(index, f"{counted}, but {text([msg])} ({where}) is marked "
                                         f"received where a sent one belongs")
        self.recorded.append([msg for msg, _ in frames[record.rx:]])
        return [msg for msg, _ in frames[:record.rx]]

    def _pay(self, msg: can.Message) -> bool:
        """Give a sent frame to the oldest tick owing one; False when none does."""
        if not self._owed:
            return False
        owed = self._owed[0]
        self.recorded[owed[0]].append(msg)
        owed[1] -= 1
        if not owed[1]:
            self._owed.popleft()
        return True

    def _unpaid(self, where: str) -> str:
        count = self._owed[0][1]
        return (f"the journal counts {count} more sent frame(s) of this tick, but the log goes on "
                f"with frames received two ticks later ({where}): a sent frame is missing from "
                f"the log or marked received")

    def _cut_short(self) -> str:
        return (f"the log ends before the tick's frames: the journal counts {self._owed[0][1]} more "
                f"sent frame(s) (the log was cut short, or is not this journal's log)")

    def _part(self, tick: int, what: str) -> list[can.Message] | None:
        """Report where the log parts from the journal; None, for the caller to return."""
        self.mismatch = Mismatch(tick, what)
        return None

    def finish(self, ticks: int, trailing: int | None) -> None:
        """After the last of ``ticks`` ticks: its sent frames, then ``trailing`` received ones.

        ``trailing`` None is a run that did not stop in order: its recording ends with the last
        tick's sent frames, and what the log holds after them is not read (it may end in half a
        line).
        """
        after = f"after the journal's last tick (tick {ticks - 1})"
        count = 0
        while trailing is not None or self._owed:
            taken = self._next()
            if taken is None:
                break
            msg, where = taken
            if not msg.is_rx and not self._positional:
                if not self._pay(msg):
                    self.mismatch = Mismatch(ticks, f"the log goes on {after} with a sent frame, "
                                                    f"{text([msg])} ({where}): nothing is sent after "
                                                    f"the last tick, so the log is not this journal's")
                    return
                continue
            if self._owed and self._owed[0][0] < ticks - 1:
                self.mismatch = Mismatch(self._owed[0][0], self._unpaid(where))
                return
            if trailing is None:
                continue
            count += 1
            if count > trailing:
                self.mismatch = Mismatch(ticks, f"the log has frames left {after}: the journal counts "
                                                f"{trailing} received ones there, but the log has "
                                                f"{text([msg])} ({where}) beyond them")
                return
        if self._owed:
            self.mismatch = Mismatch(self._owed[0][0], self._cut_short())
        elif trailing is not None and count < trailing:
            self.mismatch = Mismatch(ticks, f"the log ends early: the journal counts {trailing} frames "
                                            f"received {after}, the log holds {count}")
