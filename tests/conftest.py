"""Shared fixtures: the command line in this process, real ``ecu-sim`` processes, and a private bus.

Tests assert rules that hold on any machine, however loaded: what a node counted, how many ticks
a run of a given duration has, what a process logs and how it exits. Nothing here measures how
fast or how often something happens in wall-clock time, and no test counts the UDP datagrams
that survive a flood (the kernel may drop any of them); those figures belong to scripts/bench.
A timeout here only guards against a hang, and is never what a test checks.
"""

from __future__ import annotations

import logging
import os
import random
import re
import selectors
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

import can
import pytest
from hypothesis import settings

from ecu_sim import cli
from ecu_sim.bus.hostlocal import HostLocalUdpMulticastBus
from ecu_sim.runtime.clock import VirtualClock

REPO = Path(__file__).resolve().parent.parent
#: ``--hypothesis-profile emulated`` (scripts/arm-test): no time limit per example, because qemu's
#: user-mode emulation runs the same code many times slower
settings.register_profile("emulated", deadline=None)
#: how long a test waits for a process before it calls it hung: never the rule being checked
HANG_S = 120.0
#: environment that would reach into a run from outside the test: python-can's and ecu-sim's own
#: variables, a service manager's notify socket and watchdog, the journal
_FOREIGN_PREFIXES = ("CAN_", "ECU_SIM_")
_FOREIGN_NAMES = ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "JOURNAL_STREAM", "STATE_DIRECTORY")


def ecu_sim_command(*args: str) -> list[str]:
    """The real ``ecu-sim`` command line, run by this interpreter so it finds the package."""
    return [sys.executable, "-m", "ecu_sim", *args]


def run_cli(*args: str, timeout: float = HANG_S) -> subprocess.CompletedProcess[str]:
    """``ecu-sim ARGS`` as a process, to its end."""
    return subprocess.run(ecu_sim_command(*args), capture_output=True, text=True, timeout=timeout,
                          env=clean_env(), check=False)


def clean_env() -> dict[str, str]:
    """The environment without python-can or ecu-sim configuration leaking in from the caller."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith(_FOREIGN_PREFIXES) and k not in _FOREIGN_NAMES}


# -- the command line in this process ---------------------------------------------------------------


@dataclass(frozen=True)
class Result:
    """What ``ecu_sim.cli.main(argv)`` returned (or exited with) and printed."""

    status: int
    out: str
    err: str


Cli = Callable[..., Result]


@pytest.fixture
def cli_main(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Iterator[Cli]:
    """``ecu-sim ARGS`` run in this process: ``cli_main("--grade", "x").status == 2``.

    The environment is cleaned as for a process; the signal handlers and the logging handler
    that ``main`` installs are put back afterwards.
    """
    for name in list(os.environ):
        if name.startswith(_FOREIGN_PREFIXES) or name in _FOREIGN_NAMES:
            monkeypatch.delenv(name)
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    root = logging.getLogger()
    root_level = root.level
    installed: list[logging.Handler] = []

    def run(*args: str) -> Result:
        capsys.readouterr()
        before = root.handlers[:]
        try:
            status = cli.main(list(args))
        except SystemExit as exc:  # argparse: a usage error, --help
            status = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
        finally:
            installed.extend(h for h in root.handlers if h not in before)
        out, err = capsys.readouterr()
        return Result(status, out, err)

    try:
        yield run
    finally:
        for sig, previous in handlers.items():
            signal.signal(sig, previous)
        for handler in installed:
            root.removeHandler(handler)
            handler.close()
        root.setLevel(root_level)


@pytest.fixture
def virtual_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Real-time commands (``run``, ``ccm``) run in this process tick on virtual time instead.

    Everything else is the real run: options, settings, bus, port, node, faults, recording. Every
    tick falls on its deadline, so none is late or skipped, and a run takes no real time.
    """
    monkeypatch.setattr("ecu_sim.runs.tuned.MonotonicClock",
                        lambda period_s, *args, **kwargs: VirtualClock())


@pytest.fixture
def virtual_channel() -> str:
    """A python-can virtual bus channel no other test uses."""
    return f"ecu-sim-test-{uuid.uuid4().hex[:12]}"


# -- a private udp_multicast bus ----------------------------------------------------------------------


@dataclass(frozen=True)
class Udp:
    """A udp_multicast bus of one test: its own group and port, so parallel runs never hear each other."""

    group: str
    port: int

    def args(self) -> list[str]:
        """Bus options for a process under test."""
        return ["-i", "udp_multicast", "-c", self.group, "--bus-kwargs", f"port={self.port}"]

    def bus(self) -> can.BusABC:
        """The processes' kind of bus: udp_multicast kept on this host, as ecu-sim opens it."""
        return HostLocalUdpMulticastBus(channel=self.group, port=self.port)


def private_udp(ipv6: bool = False) -> Udp:
    """A random administratively scoped group (IPv4 239.255.x.y, no .0 or .255; IPv6 ff15::ec:x,
    a transient site-local one) and port.

    Drawn from the operating system's randomness, not the ``random`` module, which pytest or
    hypothesis may have seeded alike in two CI jobs on one host.
    """
    rng = random.SystemRandom()
    group = (f"ff15::ec:{rng.randint(1, 0xFFFF):x}" if ipv6
             else f"239.255.{rng.randint(1, 254)}.{rng.randint(1, 254)}")
    return Udp(group, rng.randint(20000, 60000))


@pytest.fixture
def udp() -> Udp:
    """The test's private udp_multicast bus (group and port)."""
    return private_udp()


@pytest.fixture
def udp_bus(udp: Udp) -> Iterator[can.BusABC]:
    """The test's own ear and mouth on the processes' bus."""
    bus = udp.bus()
    try:
        yield bus
    finally:
        bus.shutdown()


# -- machines: network namespaces -------------------------------------------------------------------


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


@pytest.fixture
def two_machines() -> Iterator[tuple[list[str], list[str]]]:
    """The command prefixes that run a process on machine A and on machine B.

    Two network namespaces joined by a veth pair, each with its own loopback and a default route
    over the pair, as two hosts on one office network; each has its own ports, so processes there
    use any group and port untouched by other tests. Like a laptop whose wired interface is up
    with no cable while it works over another one, each machine's first interface has no link.
    """
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("needs root and iproute2 to make network namespaces")
    tag = uuid.uuid4().hex[:6]
    names = (f"ecusim-{tag}-a", f"ecusim-{tag}-b")
    links = (f"esa{tag}", f"esb{tag}")
    try:
        for name in names:
            _ip("netns", "add", name)
            # IPv6 addresses usable at once: no duplicate address detection on a private link
            subprocess.run(["ip", "netns", "exec", name, "sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0",
                            "net.ipv6.conf.default.accept_dad=0"], check=True, capture_output=True)
            _ip("-n", name, "link", "add", "unplugged", "type", "veth", "peer", "name", "cable")
            _ip("-n", name, "link", "set", "unplugged", "up")
        _ip("link", "add", links[0], "netns", names[0], "type", "veth", "peer", "name", links[1],
            "netns", names[1])
        for number, (name, link) in enumerate(zip(names, links, strict=True), start=1):
            _ip("-n", name, "addr", "add", f"10.74.163.{number}/24", "dev", link)
            _ip("-n", name, "link", "set", link, "up")
            _ip("-n", name, "link", "set", "lo", "up")
            _ip("-n", name, "route", "add", "default", "dev", link)
        yield (["ip", "netns", "exec", names[0]], ["ip", "netns", "exec", names[1]])
    finally:
        for name in names:
            subprocess.run(["ip", "netns", "del", name], check=False, capture_output=True)


@pytest.fixture
def machine(two_machines: tuple[list[str], list[str]]) -> list[str]:
    """The command prefix that runs a process on a machine of its own with a LAN: what a process
    sends with python-can's defaults reaches that LAN (machine B), never this host's network."""
    return two_machines[0]


# -- real processes --------------------------------------------------------------------------------------


def first_line(process: subprocess.Popen[str]) -> str:
    """The first line ``process`` prints, or "" when it prints none before it ends or the hang
    guard runs out."""
    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        return process.stdout.readline() if selector.select(HANG_S) else ""


class Node:
    """A running ``ecu-sim`` process whose log is read while it is written.

    A reader thread keeps the pipe empty (a full pipe would block the process) and lets a test
    wait for a log line: an event the process reports, never a guess of how long it takes.
    """

    def __init__(self, *args: str, inside: Sequence[str] = ()) -> None:
        """``inside``: a command the process runs under, e.g. ``ip netns exec NAME``."""
        # faulthandler: a process that hangs is made to print every thread's stack (wait below)
        self.process = subprocess.Popen([*inside, *ecu_sim_command(*args)], stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                        env={**clean_env(), "PYTHONFAULTHANDLER": "1"})
        self._lines: list[str] = []
        self._ended = False
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            with self._changed:
                self._lines.append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._ended = True
            self._changed.notify_all()

    @property
    def log(self) -> str:
        with self._changed:
            return "\n".join(self._lines)

    def wait_for(self, pattern: str, nth: int = 1) -> re.Match[str]:
        """The ``nth`` log line that ``pattern`` matches (re.search), once the process logged it."""
        regex = re.compile(pattern)
        seen = 0
        give_up = time.monotonic() + HANG_S
        with self._changed:
            while True:
                for line in self._lines[seen:]:
                    if (match := regex.search(line)) is not None:
                        nth -= 1
                        if nth == 0:
                            return match
                seen = len(self._lines)
                if self._ended:
                    raise AssertionError(f"the process ended without logging /{pattern}/:\n{self.log}")
                if not self._changed.wait(max(0.0, give_up - time.monotonic())):
                    raise AssertionError(f"no log line /{pattern}/ after {HANG_S:g} s (hung?):\n{self.log}")

    def wait(self) -> int:
        """Wait for the process to end by itself; its exit status. One that does not end within
        HANG_S is hung: SIGABRT makes it print its threads' stacks into the log, which the
        failure shows."""
        try:
            status = self.process.wait(HANG_S)
        except subprocess.TimeoutExpired:
            self.process.send_signal(signal.SIGABRT)
            with suppress(subprocess.TimeoutExpired):
                self.process.wait(10)
            self._reader.join(10)
            raise AssertionError(f"the process did not end within {HANG_S:g} s (hung); its log and "
                                 f"stacks:\n{self.log}") from None
        self._reader.join(HANG_S)
        return status

    def stop(self) -> int:
        """SIGTERM, as systemd or Ctrl-C would stop it; its exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.wait()

    def kill(self) -> None:
        """For a test's clean-up: end the process however it is doing."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(HANG_S)
        self._reader.join(HANG_S)


@pytest.fixture
def start() -> Iterator[Callable[..., Node]]:
    """``start(*args)`` starts ``ecu-sim ARGS``; whatever is still running at the end is killed."""
    nodes: list[Node] = []

    def launch(*args: str, inside: Sequence[str] = ()) -> Node:
        nodes.append(Node(*args, inside=inside))
        return nodes[-1]

    try:
        yield launch
    finally:
        for node in nodes:
            node.kill()


# -- a run's summary --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Summary:
    """The last line of a run, ``stopped after N ticks: ...``, as numbers."""

    ticks: int
    late: int
    skipped: int
    rx: int
    tx: int
    invalid: dict[str, int]
    other: int
    overruns: int
    echo: int
    #: frames of another node with our identifier
    foreign: int
    tx_errors: int
    tx_dropped: int
    faults: dict[str, int]
    line: str

    @property
    def invalid_total(self) -> int:
        return sum(self.invalid.values())


_STOPPED = re.compile(r"stopped after (\d+) ticks: (\d+) late, (\d+) skipped, rx (\d+) tx (\d+) "
                      r"invalid (\d+)(?: \(([^)]*)\))?(?: other (\d+))?(?: conflicts \d+)?"
                      r"(?: overruns (\d+))?(.*)$")


def _counts(text: str) -> dict[str, int]:
    """``"drop 3, silent 10"`` -> ``{"drop": 3, "silent": 10}``."""
    return {kind: int(n) for kind, n in re.findall(r"(\w+) (\d+)", text)}


def summary_of(log: str) -> Summary:
    """The summary a run logs when it stops (the last such line of ``log``)."""
    lines = [line for line in log.splitlines() if "stopped after" in line]
    assert lines, f"no summary line in the log:\n{log[-3000:]}"
    match = _STOPPED.search(lines[-1])
    assert match is not None, lines[-1]
    ticks, late, skipped, rx, tx, invalid_total, kinds, other, overruns, rest = match.groups()
    invalid = _counts(kinds or "")
    assert sum(invalid.values()) == int(invalid_total), lines[-1]
    parts = rest.split(" | ")
    faults = next((_counts(p[len("faults "):]) for p in parts if p.startswith("faults ")), {})

    port = " | ".join(p for p in parts if not p.startswith("faults "))

    def counter(name: str) -> int:
        found = re.search(rf"(?:^| ){name} (\d+)", port)
        return int(found[1]) if found else 0

    return Summary(int(ticks), int(late), int(skipped), int(rx), int(tx), invalid, int(other or 0),
                   int(overruns or 0), counter("echo"), counter("foreign"), counter("tx_errors"),
                   counter("tx_dropped"), faults,
                   lines[-1])


#: a plain (non-J1939) DBC: 11-bit identifiers carry no source address; speed 0..120 km/h, 20 ms
PLAIN_DBC = """VERSION ""
NS_ :
BS_:
BU_: A B
BO_ 291 VEH: 8 A
 SG_ Speed : 0|16@1+ (0.01,0) [0|120] "km/h" B
BO_ 292 PEDAL: 8 B
 SG_ Pedal : 0|8@1+ (0.5,0) [0|100] "%" A
BA_DEF_ BO_ "GenMsgCycleTime" INT 0 65535;
BA_DEF_DEF_ "GenMsgCycleTime" 0;
BA_ "GenMsgCycleTime" BO_ 291 20;
"""
