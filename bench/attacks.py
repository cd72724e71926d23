"""``scripts/bench attacks [--rev REV]``: the published J1939 floods against a real ECU process,
this tree beside a baseline commit in the same run.

Each case starts ``ecu-sim --vehicle class6 --profile j1939 --network powertrain`` on a private
host-local udp_multicast bus, waits for its EEC1, and plays an attacker at 0x80 from this
process with python-can:

- ``overload``: 3,500 global requests for EC1 (a 40-byte answer by BAM) in 5 s;
- ``exhaustion``: 6,400 requests for EC1 addressed to the engine in 8 s, its RTS never answered;
- ``scan``: a request for Address Claimed from source 0x00 to each of the 256 destinations.

Figures: EEC1's largest gap during the flood (its period is 20 ms), how long after the flood
the node still answers (BAMs closer than 4 s apart, its own EC1 cycle being 5 s; RTS or aborts
to the attacker), the RSS growth, and the nodes the scan found. The timing figures are wall-clock
on a shared machine: they are read beside the baseline's, not against a fixed limit.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import can

from bench.processes import REPO, child_env, private_bus
from bench.versus import export
from ecu_sim.attack.tick import frame
from ecu_sim.j1939.request import request as j1939_request

EEC1_ID = 0x0CF00400
EC1 = 0xFEE3
ATTACKER = 0x80
#: the window after a flood in which answers are looked for
AFTER_S = 15.0
#: BAMs closer than this are answers, not the node's own 5-second EC1 cycle
ANSWER_GAP_S = 4.0


@dataclass
class Result:
    tree: str
    case: str
    eec1_median_gap_ms: float = float("nan")
    eec1_max_gap_ms: float = float("nan")
    answers_after_s: float = float("nan")
    still_answering: bool = False
    rss_growth_mib: float = float("nan")
    nodes_found: int = 0


def _request(pgn: int, source: int, destination: int) -> can.Message:
    """A request as the attacker builds one, so the bench asks in the bytes an attack would."""
    return frame(j1939_request(pgn, destination), source)


def _rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


class Node:
    """The ECU process of one tree on a private bus, and this process's view of that bus."""

    def __init__(self, pythonpath: str) -> None:
        group, port = private_bus()
        env = child_env()
        env["PYTHONPATH"] = pythonpath
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ecu_sim", "--vehicle", "class6", "--profile", "j1939", "--network",
             "powertrain", "-i", "udp_multicast", "-c", group, "--bus-kwargs", f"port={port}"],
            cwd=tempfile.gettempdir(), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        from ecu_sim.bus.hostlocal import HostLocalUdpMulticastBus

        self.bus = HostLocalUdpMulticastBus(channel=group, port=port)
        self.heard: list[tuple[float, int, bytes]] = []

    def listen(self, seconds: float, each: Callable[[float], None] | None = None) -> None:
        """Keep what the bus carries for ``seconds``; ``each`` is called every 10 ms with the time."""
        end = time.monotonic() + seconds
        next_call = time.monotonic()
        while (now := time.monotonic()) < end:
            if each is not None and now >= next_call:
                each(now)
                next_call += 0.01
            msg = self.bus.recv(max(0.0, min(next_call, end) - time.monotonic()))
            if msg is not None:
                self.heard.append((time.monotonic(), msg.arbitration_id, bytes(msg.data)))

    def wait_ready(self) -> None:
        for _ in range(100):
            self.listen(0.1)
            if any(ident == EEC1_ID for _, ident, _ in self.heard):
                return
        raise SystemExit("scripts/bench attacks: the ECU process sent no EEC1 within 10 s")

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)
        self.bus.shutdown()


def _flood(node: Node, per_tick: int, seconds: float, destination: int) -> tuple[float, float]:
    """Requests for EC1 from the attacker, ``per_tick`` every 10 ms for ``seconds``: (start, end)."""
    request = _request(EC1, ATTACKER, destination)

    def send(now: float) -> None:
        for _ in range(per_tick):
            node.bus.send(request)

    start = time.monotonic()
    node.listen(seconds, send)
    return start, time.monotonic()


def flood_case(case: str, tree: str, pythonpath: str) -> Result:
    node = Node(pythonpath)
    try:
        node.wait_ready()
        before = _rss_mib(node.proc.pid)
        per_tick, seconds, destination = (7, 5.0, 0xFF) if case == "overload" else (8, 8.0, 0x00)
        start, end = _flood(node, per_tick, seconds, destination)
        node.listen(AFTER_S)
        result = Result(tree, case, rss_growth_mib=_rss_mib(node.proc.pid) - before)
    finally:
        node.close()
    eec1 = [t for t, ident, _ in node.heard if ident == EEC1_ID and start <= t <= end]
    gaps = [(b - a) * 1000.0 for a, b in itertools.pairwise(eec1)]
    result.eec1_median_gap_ms, result.eec1_max_gap_ms = statistics.median(gaps), max(gaps)
    if case == "overload":
        bams = [t for t, ident, data in node.heard if ident & 0xFFFFFF == 0xECFF00 and data[0] == 0x20]
        answers = [b for a, b in itertools.pairwise(bams) if b - a < ANSWER_GAP_S and b > end]
    else:
        answers = [t for t, ident, data in node.heard
                   if ident & 0xFFFFFF == 0xEC0000 | ATTACKER << 8 and data[0] in (0x10, 0xFF) and t > end]
    result.answers_after_s = max(answers) - end if answers else 0.0
    result.still_answering = bool(answers) and max(answers) > end + AFTER_S - ANSWER_GAP_S
    return result


def scan_case(tree: str, pythonpath: str) -> Result:
    node = Node(pythonpath)
    try:
        node.wait_ready()
        start = time.monotonic()
        for destination in range(256):
            node.bus.send(_request(0xEE00, 0x00, destination))
        node.listen(1.0)
    finally:
        node.close()
    found = {ident & 0xFF for t, ident, _ in node.heard if t >= start and ident & 0xFFFF00 == 0xEEFF00}
    return Result(tree, "scan", nodes_found=len(found - {0xFE}))


def measure(rev: str) -> list[Result]:
    results: list[Result] = []
    with tempfile.TemporaryDirectory() as folder:
        # this tree first on the path too: the environment's ecu-sim may be another checkout's
        trees = (("baseline " + rev, str(export(rev, Path(folder)))), ("this tree", str(REPO)))
        for case in ("overload", "exhaustion"):
            for tree, path in trees:
                results.append(flood_case(case, tree, path))
        for tree, path in trees:
            results.append(scan_case(tree, path))
    return results


def table(results: list[Result]) -> str:
    lines = ["| case | tree | EEC1 gap during the flood, median / largest | answers after the flood | "
             "RSS growth | nodes found |", "|---|---|---|---|---|---|"]
    for r in results:
        if r.case == "scan":
            lines.append(f"| scan from SA 0x00 | {r.tree} | | | | {r.nodes_found} of 4 |")
            continue
        after = (f"still at +{AFTER_S - ANSWER_GAP_S:.0f} s" if r.still_answering
                 else f"{r.answers_after_s:.2f} s")
        gaps = f"{r.eec1_median_gap_ms:.1f} / {r.eec1_max_gap_ms:.1f} ms"
        lines.append(f"| {r.case} | {r.tree} | {gaps} | {after} | {r.rss_growth_mib:+.1f} MiB | |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="scripts/bench attacks", description=__doc__.split("\n")[0])
    parser.add_argument("--rev", default="main", help="the baseline commit (default: main)")
    parser.add_argument("--out", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    results = measure(args.rev)
    print(table(results))
    if args.out is not None:
        args.out.write_text(json.dumps([asdict(r) for r in results], indent=1) + "\n")
    return 0
