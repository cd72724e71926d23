"""``scripts/bench uds [--kib N] [--seconds S]``: a download to the real-time powertrain over UDS on
the host's bus, beside the same bytes echoed by a plain python-can loop, and EEC1's cadence
during it (issue 46's speed).

Three runs, one after another on a private host-local udp_multicast bus each (runs at once would
delay each other's ticks):

- **download**: the powertrain standing (``ecu-sim --network powertrain``, its 10 ms tick), and
  ``ecu-sim diag``'s tester (udsoncan over can-isotp, block size 0 and STmin 0 both ways) in
  this process asking the transmission (the engine, whose EEC1 is timed, ticks in the same loop;
  an erase would take the node it programs into boot mode, without its messages): the extended
  and programming sessions, security access, the erase and RequestDownload of its calibration
  area, then ``--kib`` KiB of TransferData in
  requests of ``--block`` bytes of data (default 1024; the node takes up to 4093, but on
  udp_multicast a request of 4 KiB, 585 frames sent at once, overflows the receiving sockets'
  buffers between two of the node's ticks and is lost: "no answer"). A node's area is 256 bytes,
  so every request is sent as the first block and refused (0x71, more than the download
  announced) once it has arrived whole: the transport and the server do all of a download's
  work but the write, and the answers' codes are printed. The figure: the bytes over the seconds from the
  first TransferData to the last answer.
- **no tester**: the same powertrain for as long, nothing asked.
- **echo**: the same bytes as 7-byte frames (as ISO-TP's consecutive frames carry them), sent
  by python-can from this process in windows of ECHO_WINDOW frames, each frame sent back by a
  plain python-can loop in a process of its own, the next window once the last one's echoes came
  (a window of more frames, or none, loses frames in the sockets' buffers as a 4 KiB block
  does); the seconds from the first frame to the last echo, lost echoes counted.

EEC1 (the engine's message, every other tick of the 10 ms loop: a 20 ms message in the j1939
profile) is heard by a bus of this process, timestamped by the kernel (SO_TIMESTAMPNS), over
the window of the transfer (the same length of the run without one): its gaps, how many exceed
30 ms (one and a half of its cycle), and the node's own count of late ticks: over the run (its
last line) and between its status lines (one a second) just before and just after the window.
Prints JSON and a Markdown table; the figures belong to the machine they were measured on, and
to its load.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import can

from bench.processes import REPO, child_env, private_bus
from ecu_sim.bus.hostlocal import HostLocalUdpMulticastBus

#: the download goes to the transmission, EEC1 is the engine's: both nodes tick in the one loop of
#: the powertrain, and an erase puts the node it programs in boot mode, without its messages
TRANSMISSION, TESTER = 0x03, 0xF9
EEC1_ID = 0x0CF00400
#: EEC1's cycle in the j1939 profile's DBC (the powertrain ticks every 10 ms and sends it every other
#: tick); a gap above one and a half of it is a late one
EEC1_PERIOD_S = 0.020
LATE_GAP_S = 1.5 * EEC1_PERIOD_S
#: the echo run sends this many frames, then waits for their echoes (or ECHO_WAIT_S) before the next
ECHO_WINDOW = 16
ECHO_WAIT_S = 0.5
#: the echo run's identifiers: the tester's ISO-TP request identifier and its answer's
ECHO_OUT, ECHO_BACK = 0x18DA03F9, 0x18DAF903
STOPPED = re.compile(r"stopped after (\d+) ticks: (\d+) late")
#: a status line, once a second: its time and the late ticks so far
STATUS = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) .*\| late (\d+) \|")
POWERTRAIN = ["--vehicle", "class6", "--profile", "j1939", "--network", "powertrain", "--grade", "0",
              "--initial-speed", "0"]


@dataclass
class Eec1:
    """EEC1's kernel timestamps, heard by a thread of this process."""

    bus: can.BusABC
    stamps: list[float] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None

    def start(self) -> None:
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def close(self) -> None:
        """Stop the thread, then close its bus (never under a recv)."""
        self.stop.set()
        if self.thread is not None:
            self.thread.join(5)
        self.bus.shutdown()

    def run(self) -> None:
        while not self.stop.is_set():
            msg = self.bus.recv(0.1)
            if msg is not None and msg.arbitration_id == EEC1_ID:
                self.stamps.append(msg.timestamp)

    def window(self, start: float, end: float) -> dict[str, Any]:
        inside = [s for s in self.stamps if start <= s <= end]
        gaps = [b - a for a, b in itertools.pairwise(inside)]
        if not gaps:
            return {"frames": len(inside)}
        return {"frames": len(inside), "median_gap_ms": round(statistics.median(gaps) * 1e3, 2),
                "max_gap_ms": round(max(gaps) * 1e3, 1), "gaps_over_30_ms": sum(g > LATE_GAP_S for g in gaps)}


def _env() -> dict[str, str]:
    return {**child_env(), "PYTHONPATH": str(REPO)}


def _bus_args(group: str, port: int) -> list[str]:
    return ["-i", "udp_multicast", "-c", group, "--bus-kwargs", f"port={port}"]


def _powertrain(group: str, port: int, seconds: float) -> tuple[subprocess.Popen[str], list[str]]:
    command = [sys.executable, "-m", "ecu_sim", *POWERTRAIN, *_bus_args(group, port),
               "--duration", str(seconds)]
    process = subprocess.Popen(command, env=_env(), cwd=tempfile.gettempdir(), stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    log: list[str] = []
    threading.Thread(target=lambda: log.extend(process.stderr or ()), daemon=True).start()
    return process, log


def _late_ticks(process: subprocess.Popen[str], log: list[str], start: float, end: float) -> dict[str, Any]:
    """The run's late ticks, and those between the status lines just before ``start`` and just
    after ``end`` (the window, widened to whole seconds of status lines)."""
    process.wait(120)
    time.sleep(0.5)  # the reader thread takes the last lines
    found: dict[str, Any] = {}
    for line in reversed(log):
        if (match := STOPPED.search(line)) is not None:
            found = {"ticks": int(match[1]), "late_ticks": int(match[2])}
            break
    statuses = [(datetime.strptime(m[1], "%Y-%m-%d %H:%M:%S,%f").timestamp(), int(m[2]))
                for line in log if (m := STATUS.search(line)) is not None]
    before = [s for s in statuses if s[0] <= start]
    after = [s for s in statuses if s[0] >= end]
    if before and after:
        (t0, late0), (t1, late1) = before[-1], after[0]
        found["window_s"] = round(t1 - t0, 1)
        found["late_in_window"] = late1 - late0
    return found


def _transfer(tester: Any, kib: int, block: int) -> dict[str, Any]:
    """The preamble (refusals noted, not fatal), then ``kib`` KiB of TransferData in requests of
    ``block`` bytes of data; seconds and the answers' codes (a lost request: "no answer")."""
    from udsoncan import MemoryLocation

    from ecu_sim.diag.flash import programming_session
    from ecu_sim.diag.refusals import NoAnswerError, RefusedError
    from ecu_sim.uds.codes import ROUTINE_ERASE_MEMORY
    from ecu_sim.uds.security import default_key

    codes: dict[str, int] = {}

    def step(name: str, call: Any) -> Any:
        try:
            return tester.ask(name, call)
        except (RefusedError, NoAnswerError) as exc:
            outcome = f"{name}: 0x{exc.code:02X}" if isinstance(exc, RefusedError) else f"{name}: no answer"
            codes[outcome] = codes.get(outcome, 0) + 1
            return None

    programming_session(tester)
    tester.client.config["security_algo"] = lambda level, seed, params: default_key(bytes(seed), level)
    step("security access", lambda c: c.unlock_security_access(1))
    step("erase", lambda c: c.start_routine(ROUTINE_ERASE_MEMORY))
    step("RequestDownload", lambda c: c.request_download(MemoryLocation(0x80000, 256, 32, 32)))
    data = bytes(range(256)) * (kib * 4)
    start = time.time()
    for at in range(0, len(data), block):
        chunk = data[at:at + block]
        step("TransferData", lambda c, d=chunk: c.transfer_data(1, d))
    end = time.time()
    return {"bytes": len(data), "block": block, "seconds": round(end - start, 3),
            "kB_per_s": round(len(data) / (end - start) / 1e3, 1), "answers": codes, "window": (start, end)}


def download(kib: int, block: int, seconds: float) -> dict[str, Any]:
    from ecu_sim.diag.client import WorkshopTester

    group, port = private_bus()
    process, log = _powertrain(group, port, seconds)
    listener = Eec1(HostLocalUdpMulticastBus(channel=group, port=port))
    listener.start()
    tester_bus = HostLocalUdpMulticastBus(channel=group, port=port)
    try:
        while not listener.stamps:
            time.sleep(0.1)
        time.sleep(2.0)  # past the claims and the first second's start-up
        with WorkshopTester(tester_bus, TRANSMISSION, TESTER, timeout_s=5.0) as tester:
            result = _transfer(tester, kib, block)
        window = result.pop("window")
        result["eec1"] = listener.window(*window)
        result.update(_late_ticks(process, log, *window))
    finally:
        listener.close()
        process.terminate()
        tester_bus.shutdown()
    return result


def quiet(window_s: float, seconds: float) -> dict[str, Any]:
    group, port = private_bus()
    process, log = _powertrain(group, port, seconds)
    listener = Eec1(HostLocalUdpMulticastBus(channel=group, port=port))
    listener.start()
    try:
        while not listener.stamps:
            time.sleep(0.1)
        time.sleep(2.0)
        start = time.time()
        time.sleep(window_s)
        end = time.time()
        result: dict[str, Any] = {"eec1": listener.window(start, end)}
        result.update(_late_ticks(process, log, start, end))
    finally:
        listener.close()
        process.terminate()
    return result


ECHO = f"""
import can, sys
from ecu_sim.bus.hostlocal import HostLocalUdpMulticastBus
bus = HostLocalUdpMulticastBus(channel=sys.argv[1], port=int(sys.argv[2]))
print("ready", flush=True)
for msg in bus:
    if msg.arbitration_id == {ECHO_OUT}:
        bus.send(can.Message(arbitration_id={ECHO_BACK}, data=msg.data, is_extended_id=True))
"""


def echo(kib: int) -> dict[str, Any]:
    group, port = private_bus()
    loop = subprocess.Popen([sys.executable, "-c", ECHO, group, str(port)], env=_env(),
                            stdout=subprocess.PIPE, text=True)
    assert loop.stdout is not None
    loop.stdout.readline()
    bus = HostLocalUdpMulticastBus(channel=group, port=port)
    frames, echoed = -(-kib * 1024 // 7), 0
    start = last = time.time()
    try:
        for first in range(0, frames, ECHO_WINDOW):
            window = min(ECHO_WINDOW, frames - first)
            for index in range(first, first + window):
                bus.send(can.Message(arbitration_id=ECHO_OUT, data=bytes((0x20 | index & 0x0F,)) + bytes(7),
                                     is_extended_id=True))
            echoed += _echoes(bus, window)
            last = time.time()
    finally:
        loop.terminate()
        bus.shutdown()
    return {"bytes": frames * 7, "frames": frames, "echoed": echoed, "seconds": round(last - start, 3),
            "kB_per_s": round(echoed * 7 / (last - start) / 1e3, 1)}


def _echoes(bus: can.BusABC, count: int) -> int:
    """The echoes of a window heard, waiting at most ECHO_WAIT_S for each."""
    heard = 0
    while heard < count:
        msg = bus.recv(ECHO_WAIT_S)
        if msg is None:
            break
        heard += msg.arbitration_id == ECHO_BACK
    return heard


def table(result: dict[str, Any]) -> str:
    rows = ["| run | bytes | seconds | kB/s | EEC1 median gap | EEC1 max gap | EEC1 gaps > 30 ms "
            "| late ticks around it | late ticks of the run |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, f in result.items():
        eec1 = f.get("eec1", {})
        late = f"{f['late_ticks']} of {f['ticks']}" if "ticks" in f else ""
        around = f"{f['late_in_window']} in {f['window_s']} s" if "window_s" in f else ""
        rows.append(f"| {name} | {f.get('bytes', '')} | {f.get('seconds', '')} | {f.get('kB_per_s', '')} | "
                    f"{eec1.get('median_gap_ms', '')} | {eec1.get('max_gap_ms', '')} | "
                    f"{eec1.get('gaps_over_30_ms', '')} | {around} | {late} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kib", type=int, default=64, help="KiB to transfer (default 64)")
    parser.add_argument("--block", type=int, default=1024,
                        help="bytes of data in each TransferData request (the node takes up to 4093)")
    parser.add_argument("--seconds", type=float, default=30.0, help="each powertrain run's length")
    args = parser.parse_args(argv)
    result: dict[str, Any] = {"download": download(args.kib, args.block, args.seconds)}
    result["no tester"] = quiet(result["download"]["seconds"], args.seconds)
    result["echo"] = echo(args.kib)
    print(json.dumps(result, indent=2))
    print(table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
