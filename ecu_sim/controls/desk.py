"""The desk that applies a person's checked controls between two ticks, and journals each one.

The loop applies a queued control at the next tick boundary, in :class:`ControlDesk`, a tick
observer that comes after the recorder: the node never sees a control in the middle of a tick, and
the recording's tick journal holds each applied control right after the line of the tick before it
(:mod:`ecu_sim.io.journal`). A replay feeds the journal's controls to a desk of its own, which
checks them again (ecu_sim.controls.check) and applies them before the same tick.
"""

from __future__ import annotations

import functools
import logging
import queue
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ecu_sim.codec.role import RoleCodec
from ecu_sim.controls.check import Control, check
from ecu_sim.controls.live import ControlRecord, LiveControl, apply_live
from ecu_sim.controls.node import Controlled, network_of
from ecu_sim.controls.refusals import ControlError
from ecu_sim.errors import ConfigError
from ecu_sim.faults.spec import DTC_KIND, Fault
from ecu_sim.j1939.dm import Dtc

log = logging.getLogger("ecu_sim")


def apply(control: Control, built: Controlled, tick: int) -> str | None:
    """Apply ``control`` before ``tick``; None when applied, else why it changed nothing."""
    if isinstance(control.value, LiveControl):
        return apply_live(control.value, built, tick)
    if control.name == "fault":
        return _switch_fault(control, built, tick)
    if control.name in built.node.CONTROLS:
        built.node.take_control(control.name, control.value)
    return None


def _switch_fault(control: Control, built: Controlled, tick: int) -> str | None:
    fault, on = control.value, control.on
    assert isinstance(fault, Fault)  # check() gives a fault control a Fault
    powertrain = network_of(built) if control.node is not None else None
    network = built.node.network if powertrain is None else powertrain.others[str(control.node)]
    if fault.kind == DTC_KIND and fault.dtc is not None and network is not None:
        changed = network.switch_dtc(Dtc(*fault.dtc), on, tick)
    else:
        changed = built.faults is not None and built.faults.switch(fault, on, tick)
    if changed:
        return None
    return f"fault {fault} is already {'on' if on else 'off'}"


#: called with the tick a control acted before, or None and the reason it changed nothing
Done = Callable[[int | None, str | None], None]


def _told(control: Control, tick: int | None, problem: str | None) -> None:
    """A planned control, in the log: applied, or why it changed nothing."""
    if problem is None:
        log.info("control %s applied before tick %s", control.record(), tick)
    else:
        log.warning("control %s changed nothing: %s", control.record(), problem)


@dataclass(frozen=True)
class Replayed:
    """A recording's journal of controls, by the tick each acted before, and what checking them
    again takes: the speed codec (the set speed's range) and the period (a fault's window)."""

    controls: Mapping[int, list[dict[str, Any]]]
    speed: RoleCodec
    period_s: float


class ControlDesk:
    """A tick observer that applies the queued controls between ticks and journals each one.

    ``journal`` takes an applied control's record (the recorder's); ``marks`` takes the record
    controls with their tick (the session recording, ecu_sim.web.session) and says why one
    changed nothing. ``replayed`` holds a journal's controls, for a replay: then nothing is
    queued. ``planned`` holds checked controls by the tick they act
    before (the settings', ecu_sim.controls.planned). What is due before tick 0 is applied as the desk
    is made: the runs make it once the node is built, before its loop runs.
    """

    def __init__(self, built: Controlled, journal: Callable[[ControlRecord], None] | None = None,
                 marks: Callable[[str, int], str | None] | None = None,
                 replayed: Replayed | None = None,
                 planned: Mapping[int, list[Control]] | None = None) -> None:
        self._built = built
        self._journal = journal
        self._marks = marks
        self._replay_of = replayed
        self._replayed = dict(replayed.controls) if replayed is not None else {}
        self._planned = dict(planned or {})
        self._queue: queue.SimpleQueue[tuple[Control, Done]] = queue.SimpleQueue()
        self._due(0)

    def submit(self, control: Control, done: Done) -> None:
        """Queue a checked control from any thread; ``done`` is called from the loop's thread."""
        self._queue.put((control, done))

    def on_tick(self, tick: int, now: float, transmitted: bool) -> None:
        before = tick + 1
        self._due(before)
        pending = self._queue
        while not pending.empty():
            control, done = pending.get_nowait()
            self.apply_now(control, before, done)

    def apply_now(self, control: Control, before: int, done: Done) -> None:
        """Apply a checked control before tick ``before`` and journal it. Only the loop's own thread
        calls this, between two ticks: the desk's ``on_tick``, or a lockstep peer's request
        (ecu_sim.cosim), whose loop stands still between its steps."""
        problem = (apply(control, self._built, before) if control.name != "record"
                   else "this node makes no recording" if self._marks is None
                   else self._marks(str(control.value), before))
        if problem is None and self._journal is not None:
            self._journal(control.record())
        done(None if problem is not None else before, problem)

    def _due(self, before: int) -> None:
        """The replayed and the planned controls that act before tick ``before``."""
        if self._replayed and self._replay_of is not None:
            for record in self._replayed.pop(before, ()):
                self._replay(record, before, self._replay_of)
        if self._planned:
            for control in self._planned.pop(before, ()):
                self.apply_now(control, before, functools.partial(_told, control))

    def _replay(self, record: dict[str, Any], tick: int, replayed: Replayed) -> None:
        if "record" in record:
            return  # a mark of the session's download, nothing the node sees
        try:
            control = check(record, self._built, replayed.speed, replayed.period_s)
        except ControlError as exc:
            raise ConfigError(f"the recording's control {record} before tick {tick} cannot be "
                              f"applied: {exc.reason}") from None
        problem = apply(control, self._built, tick)
        if problem is not None:
            raise ConfigError(f"the recording's control {record} before tick {tick}: {problem}")
