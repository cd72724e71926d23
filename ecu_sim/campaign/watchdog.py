"""What ends a case early because of its controller: the program exited, never sent, or floods
the bus. A case never waits on a controller."""

from __future__ import annotations

import can

from ecu_sim.bus.listener import Direction
from ecu_sim.campaign.child import Child
from ecu_sim.campaign.spec import Program
from ecu_sim.runs.private import PrivateRun
from ecu_sim.runtime.ticks import ticks_in


class Watchdog:
    """Ends the case when the program exits early, has sent nothing after ``silent_s``, or sends
    more than ``flood_fps`` frames in a second; ``failure`` says which."""

    def __init__(self, child: Child, run: PrivateRun, program: Program) -> None:
        self._child = child
        self._run = run
        period = run.settings.run.resolved_period_s
        self._period = period
        self._second = max(1, ticks_in(1.0, period))
        self._flood = program.flood_fps * self._second * period
        self.frames = 0
        self._window = 0
        self.failure: str | None = None

    def on_frame(self, msg: can.Message, direction: Direction) -> None:
        if direction is Direction.RECEIVED or direction is Direction.FOREIGN:
            self.frames += 1

    def on_tick(self, tick: int, now: float, transmitted: bool) -> None:
        code = self._child.exited()
        if code is not None:
            said = self._child.last_words()
            self._fail(f"the controller exited with status {code} after {(tick + 1) * self._period:.1f} s"
                       + (f": {said}" if said else ""))
        elif (tick + 1) % self._second == 0:
            sent, self._window = self.frames - self._window, self.frames
            if sent > self._flood:
                self._fail(f"the controller floods the bus: {sent} frames in one second")

    def _fail(self, reason: str) -> None:
        if self.failure is None:
            self.failure = reason
        self._run.loop.stop()
