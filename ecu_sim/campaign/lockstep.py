"""A controller under test that speaks the co-simulation protocol: its case in virtual time.

With ``[program] cosim = true`` the case's ECU is the one ``ecu-sim cosim`` serves
(:class:`~ecu_sim.cosim.stepper.Stepper`), listening on a UDP port of this host's loopback that
the kernel had free; the program gets it as ``{channel}`` (the address) and ``{port}`` and steps
the ECU as fast as it answers. Nothing reads a clock, so the same program gives the same row, bit
for bit, on every run. The program is started, stopped and told apart by the same rules as a
controller in real time (ecu_sim.campaign.program); one that stops stepping before the case's
last tick (an exit, a silence of ``silent_s``) fails the row.
"""

from __future__ import annotations

import socket
import threading
from typing import IO

from ecu_sim.campaign.child import Child
from ecu_sim.campaign.command import command_line
from ecu_sim.campaign.figures import Probe, figures
from ecu_sim.campaign.matrix import Case
from ecu_sim.campaign.program import ProgramFailed
from ecu_sim.campaign.row import Figure
from ecu_sim.campaign.spec import Program
from ecu_sim.controls.planned import ByName
from ecu_sim.cosim.server import CosimServer
from ecu_sim.cosim.stepper import Stepper
from ecu_sim.io.trace import CsvTrace
from ecu_sim.runs.prepare import load_vehicle_route, prepare
from ecu_sim.runs.simulation import fault_schedule, run_ticks
from ecu_sim.runtime.loop import TickObserver

#: the loopback address the case's ECU listens on
HOST = "127.0.0.1"
#: how often the watcher looks at the program while the ECU waits for its requests
_LOOK_S = 0.05


def run(case: Case, program: Program, trace: IO[str] | None) -> dict[str, Figure]:
    """The case stepped by the program; its figures and how the program was stopped."""
    settings, profile = prepare(case.settings())
    schedule = fault_schedule(settings, profile)
    ticks = run_ticks(settings)
    probes: list[Probe] = []
    controls: list[ByName] = []

    def watch(stepper: Stepper) -> list[TickObserver]:
        probes.append(Probe(stepper))
        # the case's controls and the program's
        controls.append(ByName(settings.ahead(), stepper.built, profile.speed))
        observers: list[TickObserver] = [*controls[0].observers(), probes[0]]
        return observers if trace is None else [*observers, CsvTrace(trace, stepper.ecu)]

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock, \
            Stepper(settings, profile, load_vehicle_route(settings), schedule, watch) as stepper:
        sock.bind((HOST, 0))
        argv = command_line(program, settings, HOST, int(sock.getsockname()[1]), case.id)
        server = CosimServer(sock, stepper, program.silent_s, ticks, controls=controls[0])
        with Child(argv, case.folder, program.grace_s) as child:
            done = threading.Event()
            watcher = threading.Thread(target=_watch, args=(child, server, stepper, program.silent_s, done),
                                       daemon=True)
            watcher.start()
            why = server.serve()
            done.set()
            watcher.join()
            stopped = child.stop()
            said = child.last_words()
    columns: dict[str, Figure] = {"controller_stop": stopped, "late_ticks": None, "max_late_ms": None}
    if stepper.next_tick < ticks:
        raise ProgramFailed(f"the co-simulation ended after {stepper.next_tick} of {ticks} ticks: {why}"
                            + (f"; the program said: {said}" if said else ""), columns)
    return {**figures(probes[0], settings.run.set_speed_kph, case.settle_band_kph), **columns}


def _watch(child: Child, server: CosimServer, stepper: Stepper, silent_s: float,
           done: threading.Event) -> None:
    """Stop the server when the program has exited, or has sent no request within ``silent_s``
    of its start: the server itself waits for a first request for ever."""
    waited = 0.0
    while not done.wait(_LOOK_S):
        waited += _LOOK_S
        if child.exited() is not None or (stepper.next_tick == 0 and waited >= silent_s):
            server.stop()
            return
