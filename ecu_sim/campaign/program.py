"""A controller under test: another program on a case's private bus, started, watched and stopped.

For each case the ECU runs in real time on a bus of its own (``ecu_sim.runs.private``) and the
campaign's ``[program] command`` is started with that bus's address and the case's settings
filled into its placeholders. The program is in a session of its own, so a stop reaches every
process it started, and it is killed if the worker running the case dies first, so an
interrupted campaign leaves no controller behind. A program that exits before the case is over,
never sends or floods the bus ends its case early as a failed row naming the reason: a case
never waits on a controller.
"""

from __future__ import annotations

import ctypes
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from contextlib import ExitStack, suppress
from pathlib import Path
from typing import IO

import can

from ecu_sim.bus.listener import Direction
from ecu_sim.campaign.figures import Probe, StopAt, figures
from ecu_sim.campaign.matrix import Case
from ecu_sim.campaign.spec import Program
from ecu_sim.errors import ConfigError
from ecu_sim.io.trace import CsvTrace
from ecu_sim.link.private import private_vcan, socketcan_problem
from ecu_sim.runs.private import PrivateRun, private_address
from ecu_sim.runtime.loop import TickObserver
from ecu_sim.runtime.ticks import ticks_in
from ecu_sim.settings.model import SECTIONS, Settings

#: the columns a controller under test adds to a row: how it was stopped, the ECU's late ticks
#: (started more than a tenth of a period after their deadline) and the latest tick's lateness
COLUMNS = ("controller_stop", "late_ticks", "max_late_ms")
#: the bus's placeholders, by whether the cases run on SocketCAN
_BUS_PLACES = {False: "{channel}, {port}", True: "{iface}, {channel}"}
#: Linux's prctl option that signals a child when the thread that started it dies
_PR_SET_PDEATHSIG = 1


class ProgramFailed(Exception):
    """The case ended because of its controller; ``columns`` still says how it was stopped."""

    def __init__(self, reason: str, columns: dict[str, str]) -> None:
        super().__init__(reason)
        self.columns = columns


def command_line(program: Program, settings: Settings, channel: str, port: int, case_id: str) -> list[str]:
    """The program's argv for a case: ``{channel}``, ``{port}``, ``{interface}``, ``{id}``,
    ``{python}`` (the interpreter running ecu-sim) and any setting as ``{section.key}``; on
    SocketCAN ``{iface}`` (also ``{channel}``) instead of ``{port}``."""
    bus: dict[str, object] = ({"iface": channel, "channel": channel, "interface": "socketcan"}
                              if program.socketcan else
                              {"channel": channel, "port": port, "interface": "udp_multicast"})
    places = {**bus, "id": case_id, "python": sys.executable, **{s: getattr(settings, s) for s in SECTIONS}}
    try:
        return [word.format_map(places) for word in shlex.split(program.command)]
    except KeyError as exc:
        name = exc.args[0] if exc.args else "?"
        if name == "iface":
            raise ConfigError(f"{program.origin}: {{iface}} is a SocketCAN interface, and these cases run "
                              "on udp_multicast: use {channel} and {port}, or socketcan = true in "
                              "[program] (--socketcan)") from None
        if name == "port":
            raise ConfigError(f"{program.origin}: {{port}} is a udp_multicast port, and these cases run "
                              "on SocketCAN: use {iface}") from None
        raise ConfigError(f"{program.origin}: the placeholder {{{name}}} names no setting; use "
                          f"{_BUS_PLACES[program.socketcan]}, {{interface}}, {{id}}, {{python}} or "
                          "{section.key}") from None
    except AttributeError as exc:
        raise ConfigError(f"{program.origin}: a placeholder names no setting ({exc})") from None
    except (ValueError, IndexError) as exc:
        raise ConfigError(f"{program.origin}: {exc} (write a literal brace as {{{{ or }}}})") from None


def check(program: Program, settings: Iterable[Settings], folder: str) -> None:
    """Refuse before any case runs a command whose placeholders or program cannot work with some
    case's ``settings``, or SocketCAN asked of a host without it. The host is asked once, and each
    program named once, however many cases name it."""
    argvs = [command_line(program, s, "vcan0" if program.socketcan else "239.74.0.1", 1, "0")
             for s in settings]
    if any(not argv for argv in argvs):
        raise ConfigError(f"{program.origin}: the command is empty")
    for name in dict.fromkeys(argv[0] for argv in argvs):
        if _executable(name, folder) is None:
            raise ConfigError(f"{program.origin}: command not found: {name} (a program on PATH, or a "
                              "path relative to the campaign file)")
    if program.socketcan and (problem := socketcan_problem()) is not None:
        raise ConfigError(f"SocketCAN was asked for (socketcan = true or --socketcan) and {problem}: run "
                          "where vcan exists (scripts/vm-test's VM), or drop it for udp_multicast")


def _executable(name: str, folder: str) -> str | None:
    if os.sep in name:
        path = Path(folder) / name
        return str(path) if path.is_file() and os.access(path, os.X_OK) else None
    return shutil.which(name)


def run(case: Case, program: Program, trace: IO[str] | None) -> dict[str, str]:
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
    columns = {"controller_stop": stopped, "late_ticks": str(stats.late),
               "max_late_ms": f"{stats.max_lateness_s * 1e3:.1f}"}
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


class Child:
    """The program's process, in a session of its own; killed when the thread that started it
    dies, and on leaving the ``with`` block whatever happened."""

    def __init__(self, argv: list[str], folder: str, grace_s: float) -> None:
        self.grace_s = grace_s
        # open for the program's whole life, closed by __exit__
        self.output = tempfile.TemporaryFile()  # noqa: SIM115
        try:
            self.process = subprocess.Popen(argv, cwd=folder, stdin=subprocess.DEVNULL, stdout=self.output,
                                            stderr=subprocess.STDOUT, start_new_session=True,
                                            preexec_fn=_die_with_parent)
        except OSError as exc:
            self.output.close()
            raise ConfigError(f"cannot start {argv[0]}: {exc.strerror}") from None

    def __enter__(self) -> Child:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self.output.close()

    def exited(self) -> int | None:
        return self.process.poll()

    def stop(self) -> str:
        """End the program: SIGTERM to its session, SIGKILL after the grace period. Which one it
        took, or ``exited N`` when it had already ended by itself."""
        code = self.process.poll()
        if code is not None:
            self._signal(signal.SIGKILL)  # anything it left running in its session
            return f"exited {code}"
        self._signal(signal.SIGTERM)
        try:
            self.process.wait(self.grace_s)
            how = "SIGTERM"
        except subprocess.TimeoutExpired:
            self._signal(signal.SIGKILL)
            self.process.wait()
            how = "SIGKILL"
        self._signal(signal.SIGKILL)
        return how

    def _signal(self, signum: int) -> None:
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signum)

    def last_words(self) -> str:
        """The last line the program wrote, for a failed row's error."""
        self.output.seek(0)
        lines = [line for line in self.output.read().decode("utf-8", "replace").splitlines() if line.strip()]
        return lines[-1].strip()[:200] if lines else ""


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL when the worker that started it dies (Linux)."""
    with suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


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
