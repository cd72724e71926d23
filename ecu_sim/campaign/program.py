"""A controller under test: another program on a case's private bus, started, watched and stopped.

For each case the ECU runs in real time on a bus of its own (``ecu_sim.runs.private``) and the
campaign's ``[program] command`` is started with that bus's address and the case's settings
filled into its placeholders (ecu_sim.campaign.command), in a process of its own
(ecu_sim.campaign.child). A program that exits before the case is over, never sends or floods the
bus ends its case early as a failed row naming the reason (ecu_sim.campaign.watchdog).
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from typing import IO

from ecu_sim.campaign.child import Child
from ecu_sim.campaign.command import command_line
from ecu_sim.campaign.figures import Probe, StopAt, figures
from ecu_sim.campaign.matrix import Case
from ecu_sim.campaign.row import Figure, Fixed
from ecu_sim.campaign.spec import Program
from ecu_sim.campaign.watchdog import Watchdog
from ecu_sim.io.trace import CsvTrace
from ecu_sim.link.private import private_vcan
from ecu_sim.runs.private import PrivateRun, private_address
from ecu_sim.runtime.loop import TickObserver

#: the columns a controller under test adds to a row: how it was stopped, the ECU's late ticks
#: (started more than a tenth of a period after their deadline) and the latest tick's lateness
COLUMNS = ("controller_stop", "late_ticks", "max_late_ms")


class ProgramFailed(Exception):
    """The case ended because of its controller; ``columns`` still says how it was stopped."""

    def __init__(self, reason: str, columns: dict[str, Figure]) -> None:
        super().__init__(reason)
        self.columns = columns


def run(case: Case, program: Program, trace: IO[str] | None) -> dict[str, Figure]:
    """Run the case in real time against the program; its figures, how the program was stopped
    and the ECU's late ticks. ProgramFailed when the program ended the case."""
    settings = case.settings()
    probes: list[Probe] = []
    watchdogs: list[Watchdog] = []
    with ExitStack() as stack:
        # entered first, so the vcan outlives the program and the ECU on it and goes last
        iface = stack.enter_context(private_vcan()) if program.socketcan else None
        address = private_address()
        argv = command_line(program, settings, iface or address[0], address[1], case.id)
        child = stack.enter_context(Child(argv, case.folder, program.grace_s))

        def watch(run: PrivateRun) -> list[TickObserver]:
            probes.append(Probe(run))
            watchdogs.append(Watchdog(child, run, program))
            run.port.add_listener(watchdogs[0])
            found: list[TickObserver] = [probes[0], watchdogs[0]]
            if trace is not None:
                found.append(CsvTrace(trace, run.ecu))
            if case.distance_m is not None:
                found.append(StopAt(run, case.distance_m))
            return found

        private = stack.enter_context(PrivateRun(settings, watch, address, iface))
        silent = _first_frame(private, child, program.silent_s)
        if silent is None:
            private.run()
        stopped = child.stop()
    stats = private.stats
    columns: dict[str, Figure] = {"controller_stop": stopped, "late_ticks": stats.late,
                                  "max_late_ms": Fixed(stats.max_lateness_s * 1e3, 1)}
    failure = silent or watchdogs[0].failure
    if failure is not None:
        raise ProgramFailed(failure, columns)
    set_speed = private.settings.run.set_speed_kph
    return {**figures(probes[0], set_speed, case.settle_band_kph), **columns}


def _first_frame(private: PrivateRun, child: Child, wait_s: float) -> str | None:
    """Wait for the program's first frame: the case's time starts when the controller is heard, so
    how long it took to start (an interpreter, an emulator) is no difference between two runs.
    Why the case cannot start, or None (an early exit is the watchdog's to report)."""
    until = time.monotonic() + wait_s
    while (left := until - time.monotonic()) > 0:
        if child.exited() is not None or private.port.recv(min(left, 0.05)) is not None:
            return None
    return f"the controller sent no frame in {wait_s:g} s"
