"""Replaying a recording: the recorded input through the same node, in virtual time, bit for bit.

A replay builds the node the way a real run does (:func:`ecu_sim.nodes.factory.build_node`:
same settings, codec, node, fault injector and :class:`~ecu_sim.runtime.loop.TickLoop`) and
changes only two things:

- the bus is a :class:`ReplayBus`, which hands the node the recorded received frames, each one
  before the tick it fell before in the recording, and keeps what the node sends;
- the clock is a :class:`ReplayClock`: virtual time that, where the journal says the real loop
  ran overdue ticks without sending, jumps just as far, so the same loop skips the same ticks.

A recording of a session driven from the node's page (``--web``) holds the controls a person
applied; a :class:`~ecu_sim.controls.desk.ControlDesk` applies them before the same ticks.

Then every frame the node sends is compared with the recorded one of the same tick. Ticks whose
frame never reached the bus in the recording (bus down, send error) cannot be compared and are
counted. The first tick that differs is reported.

The log must be the one its journal was written with: each frame's direction (received or sent,
which .log, .asc and .blf all keep) must fit the journal's split of every tick, the log must not
end before the journal's last tick, and after it it must hold exactly the frames the journal's
``end`` line counts. Where they part, the replay reports a :class:`Mismatch` at that tick: a sent
frame deleted from the log, a received one marked sent, a log cut short or run on.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import can

from ecu_sim.bus.listener import Direction
from ecu_sim.bus.port import Port
from ecu_sim.controls.desk import ControlDesk, Replayed
from ecu_sim.io.journal import TickRecord
from ecu_sim.io.recording import Recording, load, settings_of
from ecu_sim.io.split import Mismatch, TickSplit, text
from ecu_sim.nodes.factory import NodeKind, build_node
from ecu_sim.nodes.input import InputNode
from ecu_sim.runs.prepare import load_ccm_road, load_vehicle_route, prepare
from ecu_sim.runtime.clock import Inputs, VirtualClock
from ecu_sim.runtime.loop import TickLoop, TickObserver


class ReplayBus(can.BusABC):
    """The recorded frames, in order: received ones before their tick, sent ones kept to compare.

    The loop feeds it the ticks (it is a tick observer): after tick ``k`` it loads the frames
    that fell before tick ``k + 1``; a later tick's frames are held back. Each tick's frames are
    checked against the journal: how many there are and their direction. The first that does not
    fit is kept as ``mismatch``, and no frames are handed over after it.
    """

    def __init__(self, recording: Recording) -> None:
        self.channel_info = f"replay of {recording.path}"
        super().__init__(channel="replay")
        self._recording = recording
        self._ticks = recording.ticks
        self._split = TickSplit(recording)
        self._queue: deque[can.Message] = deque()
        self._loaded = -1
        #: the tick the node runs next: frames sent now belong to it
        self.tick = 0
        #: (tick, frame) for every frame the replayed node sent, as its port reported them
        self.sent: list[tuple[int, can.Message]] = []

    @property
    def recorded(self) -> list[list[can.Message]]:
        """Per tick: the frames the recording says the node sent."""
        return self._split.recorded

    @property
    def mismatch(self) -> Mismatch | None:
        """The first place where the log does not fit its journal."""
        return self._split.mismatch

    def _load(self, tick: int) -> None:
        ticks = self._ticks
        while self._loaded < tick and self._loaded + 1 < len(ticks) and self.mismatch is None:
            index = self._loaded + 1
            frames = self._split.received(index, ticks[index])
            if frames is None:
                return
            self._loaded = index
            self._queue.extend(frames)

    def finish(self) -> None:
        """After the run: the ticks the loop did not get to, and the frames after the last tick."""
        self._load(len(self._ticks) - 1)
        if self.mismatch is None:
            self._split.finish(len(self._ticks), self._recording.trailing)

    def feed(self, tick: int) -> None:
        """Queue the frames that fell before ``tick``, the tick the node runs next."""
        self.tick = tick
        self._load(tick)

    def on_tick(self, tick: int, now: float, transmitted: bool) -> None:
        self.feed(tick + 1)

    def pending(self) -> bool:
        return bool(self._queue)

    def _recv_internal(self, timeout: float | None) -> tuple[can.Message | None, bool]:
        return (self._queue.popleft() if self._queue else None), False

    def send(self, msg: can.Message, timeout: float | None = None) -> None:
        """The replayed node's frames go nowhere: the port shows them to :meth:`on_frame`."""

    def on_frame(self, msg: can.Message, direction: Direction) -> None:
        """A port listener: keeps what the node sent, by the tick that sent it."""
        if direction is Direction.SENT:
            self.sent.append((self.tick, msg))


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

    def wait_until(self, deadline: float, inputs: Inputs) -> None:
        super().wait_until(deadline, inputs)
        while self._bus.pending():  # all of the tick's frames, however many a drain may take
            inputs.poll(0.0)
        stall = self._stalls.get(self._bus.tick)
        if stall:
            # Half a period past the last overdue slot: the loop skips exactly ``stall`` ticks.
            self._now = deadline + (stall + 0.5) * self._period_s


@dataclass(frozen=True)
class ReplayDifference:
    tick: int
    time_s: float
    recorded: str
    replayed: str


@dataclass(frozen=True)
class ReplayResult:
    #: the recorded node, ``ecu`` or ``ccm``
    kind: str
    period_s: float
    ticks: int
    #: frames compared bit for bit
    frames: int
    #: ticks whose recorded frame never reached the bus, so there is nothing to compare
    unverified: int
    difference: ReplayDifference | None
    #: where the log parts from its journal (frames missing, remarked, cut short or run on)
    mismatch: Mismatch | None = None
    #: the journal has no end line: the run was killed (or its disk filled) before it stopped,
    #: and the recording ends at its last tick
    cut: bool = False

    @property
    def identical(self) -> bool:
        return self.difference is None and self.mismatch is None


def _key(frames: Sequence[can.Message]) -> list[tuple[int, bool, bytes]]:
    return [(m.arbitration_id, m.is_extended_id, bytes(m.data)) for m in frames]


def replay(path: str, dbc: str | None = None,
           watch: Callable[[InputNode], TickObserver] | None = None) -> ReplayResult:
    """Replay the recording ``path`` and compare what the node sends with what it sent then.

    ``watch(node)`` gives an observer of the replayed node's ticks: the state a recording does
    not hold (the model's grade and distance), which a replay reproduces exactly.
    """
    recording = load(path)
    settings, profile = prepare(settings_of(recording, dbc))
    kind = NodeKind(recording.kind)
    period = settings.run.resolved_period_s
    bus = ReplayBus(recording)
    clock = ReplayClock(period, recording.ticks, bus)
    with Port(bus, own_ids=kind.frame_ids(profile, settings)) as port:
        port.add_listener(bus)
        route = recording.route() or (load_vehicle_route(settings) if kind is NodeKind.ECU
                                      else load_ccm_road(settings) if kind is NodeKind.CCM else None)
        built = build_node(kind, port, profile, settings, route=route,
                           schedule=recording.schedule(), switchable_faults=bool(recording.controls))
        bus.feed(0)
        observers: list[TickObserver] = [bus] if watch is None else [bus, watch(built.node)]
        if recording.controls:  # a session driven from the node's page: its controls, at their ticks
            observers.append(ControlDesk(built, replayed=Replayed(recording.controls, profile.speed, period)))
        TickLoop(clock, period, [built.node], observers=observers).run(max_ticks=len(recording.ticks))
        bus.finish()
    return _compare(kind.value, recording, bus, period)


def _compare(kind: str, recording: Recording, bus: ReplayBus, period_s: float) -> ReplayResult:
    sent: list[list[can.Message]] = [[] for _ in recording.ticks]
    for tick, msg in bus.sent:
        sent[tick].append(msg)
    ticks = len(bus.recorded) if bus.mismatch is None else min(len(bus.recorded), bus.mismatch.tick)
    frames = unverified = 0
    cut = recording.trailing is None and recording.directions_kept
    for tick in range(ticks):
        recorded, replayed = bus.recorded[tick], sent[tick]
        if recording.ticks[tick].failed:
            unverified += 1
            continue
        if _key(recorded) != _key(replayed):
            difference = ReplayDifference(tick, tick * period_s, text(recorded), text(replayed))
            return ReplayResult(kind, period_s, ticks, frames, unverified, difference, bus.mismatch, cut)
        frames += len(recorded)
    return ReplayResult(kind, period_s, ticks, frames, unverified, None, bus.mismatch, cut)
