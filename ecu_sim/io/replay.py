"""Replaying a recording: the recorded input through the same node, in virtual time, bit for bit.

A run made with ``--record FILE`` left the frames in ``FILE`` (and the files its rotation closed)
and the tick journal in ``FILE.ticks`` (see :mod:`ecu_sim.io.recorder`). A replay builds the node
the way a real run does (:mod:`ecu_sim.runs.realtime`: same settings, codec, node, fault injector and
:class:`~ecu_sim.runtime.loop.TickLoop`) and changes only two things:

- the bus is a :class:`ReplayBus`, which hands the node the recorded received frames, each one
  before the tick it fell before in the recording, and keeps what the node sends;
- the clock is a :class:`ReplayClock`: virtual time that, where the journal says the real loop
  ran overdue ticks without sending, jumps just as far, so the same loop skips the same ticks.

Then every frame the node sends is compared with the recorded one of the same tick. Ticks whose
frame never reached the bus in the recording (bus down, send error) cannot be compared and are
counted. The first tick that differs is reported.

The log must be the one its journal was written with: each frame's direction (received or sent,
which .log, .asc and .blf all keep) must fit the journal's split of every tick, the log must not
end before the journal's last tick, and after it it must hold exactly the frames the journal's
``end`` line counts. Where they part, the replay reports a :class:`Mismatch` at that tick: a sent
frame deleted from the log, a received one marked sent, a log cut short or run on. A log that
cannot be read at all (a damaged file) is a ConfigError naming the file and the frame.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import logging
import os
import struct
import zlib
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import can
from can.io.blf import BLFParseError

from ecu_sim.bus.port import Port
from ecu_sim.control.pi import PiParams
from ecu_sim.errors import ConfigError
from ecu_sim.faults.injector import Fault, FaultSchedule
from ecu_sim.io.recorder import JOURNAL_FORMAT, JOURNAL_VERSION, dbc_checksum, journal_path
from ecu_sim.runs.realtime import NodeKind, attach_faults, load_profile, make_ccm, make_ecu, output_codec
from ecu_sim.runtime.clock import Poll, VirtualClock
from ecu_sim.runtime.loop import TickLoop
from ecu_sim.settings.load import ProfileSettings, RunSettings, Settings
from ecu_sim.vehicle.model import TruckParams
from ecu_sim.vehicle.route import GradeSchedule

log = logging.getLogger(__name__)

#: what python-can's readers raise on a damaged file: bad hex, a bad checksum or zlib stream, ...
READ_ERRORS = (ValueError, EOFError, IndexError, KeyError, OSError, struct.error, zlib.error,
               BLFParseError)


@dataclass(frozen=True)
class TickRecord:
    rx: int
    tx: int
    skipped: bool = False
    failed: bool = False


@dataclass
class Recording:
    path: str
    head: dict[str, Any]
    ticks: list[TickRecord]
    #: the log files in the order they were written: rotated parts, then FILE itself
    files: list[str]
    #: frames received after the last tick (the journal's ``end`` line); None: a run that was
    #: killed before it could stop, or a journal of version 1, which has no such line
    trailing: int | None = None
    #: where :meth:`frames` is: the file and the number of the frame it yielded last
    at: tuple[str, int] = ("", 0)

    @property
    def kind(self) -> NodeKind:
        return "ecu" if self.head["node"] == "ecu" else "ccm"

    @property
    def directions_kept(self) -> bool:
        """Whether every received frame is marked received (version 1 kept echoes marked sent)."""
        return bool(self.head["version"] >= 2)

    def frames(self) -> Iterator[can.Message]:
        """The logged frames of all files in order; ConfigError names a file that cannot be read."""
        for name in self.files:
            number = 0
            try:
                with can.LogReader(name) as reader:
                    for msg in reader:
                        number += 1
                        self.at = (name, number)
                        yield msg
            except READ_ERRORS as exc:
                kind = type(exc)
                reason = (kind.__name__ if kind.__module__ == "builtins"
                          else f"{kind.__module__}.{kind.__name__}")
                part = "" if name == self.path else f" (part of the recording {self.path})"
                raise ConfigError(
                    f"{name}{part}: frame {number + 1} cannot be read ({reason}: {exc}); the file "
                    f"is damaged or not in the format its suffix says, so there is nothing to "
                    f"replay: record the run again") from None


def load(path: str) -> Recording:
    """Read the tick journal of the recording ``path``; ConfigError says what is wrong."""
    journal = journal_path(path)
    try:
        with open(journal, encoding="ascii") as handle:
            lines = handle.read().split("\n")
    except OSError as exc:
        raise ConfigError(f"cannot read the tick journal {journal} of the recording {path}: "
                          f"{exc.strerror or exc}; record with `ecu-sim --record {path}`") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{journal} is not a tick journal written by ecu-sim --record") from None
    try:
        head = json.loads(lines[0])
    except json.JSONDecodeError:
        head = None
    if not isinstance(head, dict) or head.get("format") != JOURNAL_FORMAT:
        raise ConfigError(f"{journal}, line 1: not a tick journal written by ecu-sim --record")
    if head.get("version") not in (1, JOURNAL_VERSION) or head.get("node") not in ("ecu", "ccm"):
        raise ConfigError(f"{journal}, line 1: journal version {head.get('version')} of node "
                          f"{head.get('node')!r} is not one this ecu-sim replays (version {JOURNAL_VERSION})")
    folder = os.path.dirname(path)
    files: list[str] = []
    ticks: list[TickRecord] = []
    trailing: int | None = None
    # A run that was killed may end in half a line: the last line counts only when complete.
    for number, line in enumerate(lines[1:-1], start=2):
        if trailing is not None:
            raise ConfigError(f"{journal}, line {number}: {line!r} after the end line "
                              f"'end {trailing}', which is the last line of a tick journal")
        if line.startswith("end "):
            try:
                trailing = int(line[4:])
            except ValueError:
                trailing = -1
            if trailing < 0:
                raise ConfigError(f"{journal}, line {number}: expected 'end RX', got {line!r}")
            continue
        if line.startswith("part "):
            files.append(os.path.join(folder, line[5:]))
            continue
        fields = line.split()
        try:
            rx, tx = int(fields[0]), int(fields[1])
            flags = fields[2] if len(fields) > 2 else ""
        except (IndexError, ValueError):
            raise ConfigError(f"{journal}, line {number}: expected 'RX TX [FLAGS]', got {line!r}") from None
        if len(fields) > 3 or rx < 0 or tx < 0 or set(flags) - {"s", "f"}:
            raise ConfigError(f"{journal}, line {number}: expected 'RX TX [FLAGS]', got {line!r}")
        ticks.append(TickRecord(rx, tx, "s" in flags, "f" in flags))
    files.append(path)
    for name in files:
        if not os.path.isfile(name):
            raise ConfigError(f"the recording {path} lacks its log file {name}")
    return Recording(path, head, ticks, files, trailing)


def settings_of(recording: Recording, dbc: str | None = None) -> Settings:
    """The recorded settings; ``dbc`` replaces the DBC path (a recording moved elsewhere)."""
    recorded = recording.head["settings"]
    try:
        profile = ProfileSettings(**recorded["profile"])
        settings = Settings(profile=profile if dbc is None else dataclasses.replace(profile, dbc=dbc),
                            truck=TruckParams(**recorded["truck"]),
                            controller=PiParams(**recorded["controller"]),
                            # the kernel's broadcast manager has no virtual time
                            run=dataclasses.replace(RunSettings(**recorded["run"]), tx_mode="user"))
    except (KeyError, TypeError) as exc:
        raise ConfigError(f"{journal_path(recording.path)}, line 1: settings this ecu-sim does not "
                          f"know ({exc}); replay with the version that recorded it") from None
    checksum = recording.head.get("dbc", {}).get("sha256")
    if settings.profile.dbc is not None and checksum != dbc_checksum(settings.profile.dbc):
        log.warning("%s is not the DBC file the recording was made with (its checksum differs)",
                    settings.profile.dbc)
    return settings


@dataclass(frozen=True)
class Mismatch:
    """Where the log parts from its tick journal: it is not the log the journal was written with."""

    #: the tick (the number of ticks, for frames after the last one)
    tick: int
    what: str


class ReplayBus(can.BusABC):
    """The recorded frames, in order: received ones before their tick, sent ones kept to compare.

    ``tick`` tells the index of the node's next tick; frames of a later tick are held back. Each
    tick's frames are checked against the journal: how many there are and their direction. The
    first that does not fit is kept as ``mismatch``, and no frames are handed over after it.
    """

    def __init__(self, recording: Recording) -> None:
        self.channel_info = f"replay of {recording.path}"
        super().__init__(channel="replay")
        self._recording = recording
        self._ticks = recording.ticks
        self._frames = recording.frames()
        self._queue: deque[can.Message] = deque()
        self._loaded = -1
        self.tick: Callable[[], int] = lambda: 0
        #: per tick: the frames the recording says the node sent
        self.recorded: list[list[can.Message]] = []
        #: (tick, frame) for every frame the replayed node sent
        self.sent: list[tuple[int, can.Message]] = []
        #: the first place where the log does not fit its journal
        self.mismatch: Mismatch | None = None

    def _load(self, tick: int) -> None:
        ticks = self._ticks
        while self._loaded < tick and self._loaded + 1 < len(ticks) and self.mismatch is None:
            index = self._loaded + 1
            record = ticks[index]
            frames = self._take(record.rx + record.tx)
            self.mismatch = self._check(index, record, frames)
            if self.mismatch is not None:
                return
            self._loaded = index
            self._queue.extend(msg for msg, _ in frames[:record.rx])
            self.recorded.append([msg for msg, _ in frames[record.rx:]])

    def _take(self, count: int) -> list[tuple[can.Message, str]]:
        """The next ``count`` frames or fewer, each with where it is in the log."""
        frames = []
        for msg in itertools.islice(self._frames, count):
            name, number = self._recording.at
            frames.append((msg, f"frame {number} of {os.path.basename(name)}"))
        return frames

    def _check(self, index: int, record: TickRecord,
               frames: list[tuple[can.Message, str]]) -> Mismatch | None:
        counted = f"the journal counts {record.rx} received and {record.tx} sent frames"
        if len(frames) < record.rx + record.tx:
            return Mismatch(index, f"the log ends before the tick's frames: {counted}, the log holds "
                                   f"{len(frames)} more (it was cut short, or is not this journal's log)")
        check_received = self._recording.directions_kept
        for position, (msg, where) in enumerate(frames):
            if position >= record.rx and msg.is_rx:
                return Mismatch(index, f"{counted}, but its frame {position + 1}, {_text([msg])} "
                                       f"({where}), is marked received where a sent one belongs: a "
                                       f"sent frame is missing from the log or marked received")
            if position < record.rx and not msg.is_rx and check_received:
                return Mismatch(index, f"{counted}, but its frame {position + 1}, {_text([msg])} "
                                       f"({where}), is marked sent where a received one belongs: a "
                                       f"received frame is missing from the log or marked sent")
        return None

    def finish(self) -> None:
        """After the run: the ticks the loop did not get to, and the frames after the last tick."""
        last = len(self._ticks)
        self._load(last - 1)
        if self.mismatch is not None:
            return
        expected = self._recording.trailing
        check_received = self._recording.directions_kept
        after = f"after the journal's last tick (tick {last - 1})"
        count = 0
        while taken := self._take(1):
            msg, where = taken[0]
            count += 1
            if not msg.is_rx and check_received:
                self.mismatch = Mismatch(last, f"the log goes on {after} with a sent frame, "
                                               f"{_text([msg])} ({where}): {self._end_text()}")
                return
            if expected is not None and count > expected:
                self.mismatch = Mismatch(last, f"the log has frames left {after}: the journal counts "
                                               f"{expected} received ones there, but the log has "
                                               f"{_text([msg])} ({where}) beyond them")
                return
        if expected is not None and count < expected:
            self.mismatch = Mismatch(last, f"the log ends early: the journal counts {expected} frames "
                                           f"received {after}, the log holds {count}")

    def _end_text(self) -> str:
        if self._recording.trailing is None:
            return ("the journal has no end line, so the run was killed before it finished its "
                    "journal: only a complete recording replays")
        return "nothing is sent after the last tick, so the log is not this journal's"

    def pending(self) -> bool:
        self._load(self.tick())
        return bool(self._queue)

    def recv(self, timeout: float | None = None) -> can.Message | None:
        self._load(self.tick())
        return self._queue.popleft() if self._queue else None

    def _recv_internal(self, timeout: float | None) -> tuple[can.Message | None, bool]:
        return self.recv(timeout), True

    def send(self, msg: can.Message, timeout: float | None = None) -> None:
        self.sent.append((self.tick(), msg))


class ReplayClock(VirtualClock):
    """Virtual time that hands over each tick's recorded frames and repeats the recorded stalls."""

    def __init__(self, period_s: float, ticks: Sequence[TickRecord], bus: ReplayBus) -> None:
        super().__init__()
        self._period_s = period_s
        self._bus = bus
        #: first skipped tick of each stall -> how many ticks in a row the real loop skipped
        self._stalls: dict[int, int] = {}
        run_start = None
        for index, record in enumerate(ticks):
            if record.skipped:
                run_start = index if run_start is None else run_start
                self._stalls[run_start] = index - run_start + 1
            else:
                run_start = None

    def wait_until(self, deadline: float, poll: Poll) -> None:
        super().wait_until(deadline, poll)
        while self._bus.pending():
            poll(0.0)
        stall = self._stalls.get(self._bus.tick())
        if stall:
            # Half a period past the last overdue slot: the loop skips exactly ``stall`` ticks.
            self._now = deadline + (stall + 0.5) * self._period_s


@dataclass(frozen=True)
class Difference:
    tick: int
    time_s: float
    recorded: str
    replayed: str


@dataclass(frozen=True)
class ReplayResult:
    kind: NodeKind
    period_s: float
    ticks: int
    #: frames compared bit for bit
    frames: int
    #: ticks whose recorded frame never reached the bus, so there is nothing to compare
    unverified: int
    difference: Difference | None
    #: where the log parts from its journal (frames missing, remarked, cut short or run on)
    mismatch: Mismatch | None = None

    @property
    def identical(self) -> bool:
        return self.difference is None and self.mismatch is None


def _text(frames: Sequence[can.Message]) -> str:
    if not frames:
        return "no frame"
    return ", ".join(f"{m.arbitration_id:08X}#{bytes(m.data).hex().upper()}" if m.is_extended_id
                     else f"{m.arbitration_id:03X}#{bytes(m.data).hex().upper()}" for m in frames)


def _key(frames: Sequence[can.Message]) -> list[tuple[int, bool, bytes]]:
    return [(m.arbitration_id, m.is_extended_id, bytes(m.data)) for m in frames]


def replay(path: str, dbc: str | None = None) -> ReplayResult:
    """Replay the recording ``path`` and compare what the node sends with what it sent then."""
    recording = load(path)
    settings = settings_of(recording, dbc)
    kind = recording.kind
    profile = load_profile(settings)
    period = settings.run.period_s
    bus = ReplayBus(recording)
    clock = ReplayClock(period, recording.ticks, bus)
    port = Port(bus, own_ids=[output_codec(kind, profile).frame_id])
    route = recording.head.get("route")
    node = (make_ecu(port, profile, settings, GradeSchedule.from_points(route) if route else None)
            if kind == "ecu" else make_ccm(port, profile, settings))
    recorded_faults = recording.head["faults"]
    schedule = FaultSchedule(tuple(Fault(**f) for f in recorded_faults["faults"]), recorded_faults["seed"])
    attach_faults(node, kind, profile, schedule, period)
    bus.tick = lambda: node.tick_index
    loop = TickLoop(clock, period, [node])
    try:
        loop.run(max_ticks=len(recording.ticks))
        bus.finish()
    finally:
        port.close()
    return _compare(kind, recording, bus, period)


def _compare(kind: NodeKind, recording: Recording, bus: ReplayBus, period_s: float) -> ReplayResult:
    sent: list[list[can.Message]] = [[] for _ in recording.ticks]
    for tick, msg in bus.sent:
        sent[tick].append(msg)
    ticks = len(bus.recorded)
    frames = unverified = 0
    for tick in range(ticks):
        recorded, replayed = bus.recorded[tick], sent[tick]
        if recording.ticks[tick].failed:
            unverified += 1
            continue
        if _key(recorded) != _key(replayed):
            difference = Difference(tick, tick * period_s, _text(recorded), _text(replayed))
            return ReplayResult(kind, period_s, ticks, frames, unverified, difference, bus.mismatch)
        frames += len(recorded)
    return ReplayResult(kind, period_s, ticks, frames, unverified, None, bus.mismatch)
