"""The co-simulation phase: ``ecu-sim cosim`` stepped over loopback UDP, side by side with ``simulate``.

A real ``ecu-sim cosim`` process and a peer in this process, as a Simulink or CARLA peer would
drive it: one request at a time, the next sent when the answer is in. Measured: steps per second
with one tick a request, ticks per second with a hundred, the round trip of each request
(percentiles), the CPU both processes spend per step, and, in the same run, in-process ticks per
second of the same ECU with a constant pedal (what ``simulate --app`` runs), so the cost of the
UDP exchange shows against the work of the ticks.
"""

from __future__ import annotations

import math
import re
import socket
import struct
import subprocess
import sys
import tempfile
import time
from typing import Any

from bench.analysis import percentile
from bench.machine import cpu_seconds
from bench.processes import child_env, ecu_sim_command

HEADER = struct.Struct("<4d")
REQUEST = struct.Struct("<6d")


def _server(pythonpath: str | None) -> tuple[subprocess.Popen[str], tuple[str, int]]:
    """``ecu-sim cosim`` of this tree, or of the package found first on ``pythonpath``."""
    env = child_env()
    command = ecu_sim_command()
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
        command = [sys.executable, "-m", "ecu_sim"]
    # Not from the repository's folder: ``python -m`` puts the working folder first on sys.path,
    # where this tree's package would hide the baseline's.
    proc = subprocess.Popen([*command, "cosim", "--listen", "127.0.0.1:0", "--peer-timeout", "5"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env=env, cwd=tempfile.gettempdir())
    assert proc.stderr is not None
    for line in proc.stderr:
        match = re.search(r"listening on udp ([\d.]+):(\d+)", line)
        if match:
            return proc, (match[1], int(match[2]))
    raise RuntimeError("ecu-sim cosim ended before it listened")


def exchange(n: int, requests: int, pythonpath: str | None = None) -> dict[str, Any]:
    """``requests`` requests of ``n`` ticks each against a fresh ``ecu-sim cosim`` (of the package
    first on ``pythonpath`` when given: a baseline's)."""
    proc, address = _server(pythonpath)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.settimeout(10.0)
    sock.connect(address)
    rtts: list[float] = []
    try:
        for seq in range(1, 51):  # warm-up: imports, caches, the first ticks
            sock.send(REQUEST.pack(1.0, seq, 1, 0, 40.0, math.nan))
            sock.recv(65535)
        server_cpu0, peer_cpu0 = cpu_seconds(proc.pid), time.process_time()
        started = time.perf_counter()
        clock = time.perf_counter
        for seq in range(51, 51 + requests):
            t0 = clock()
            sock.send(REQUEST.pack(1.0, seq, n, 0, 40.0, math.nan))
            data = sock.recv(65535)
            rtts.append(clock() - t0)
            if HEADER.unpack_from(data)[2] < 0:
                raise RuntimeError(data[32:].decode())
        wall = time.perf_counter() - started
        server_cpu, peer_cpu = cpu_seconds(proc.pid) - server_cpu0, time.process_time() - peer_cpu0
    finally:
        sock.close()
        proc.terminate()
        proc.wait(30)
    return {"n": n, "requests": requests, "steps_per_s": requests / wall, "ticks_per_s": requests * n / wall,
            "rtt_p50_ms": percentile(rtts, 50) * 1e3, "rtt_p99_ms": percentile(rtts, 99) * 1e3,
            "server_cpu_us_per_step": server_cpu / requests * 1e6,
            "peer_cpu_us_per_step": peer_cpu / requests * 1e6}


def in_process(ticks: int) -> dict[str, Any]:
    """Ticks per second of the same ECU and a constant pedal on the in-process link."""
    from ecu_sim.runs.prepare import prepare
    from ecu_sim.runs.simulation import DriverSetup, Simulation
    from ecu_sim.settings.model import Settings

    settings, profile = prepare(Settings())
    with Simulation(settings, DriverSetup("pedal", 40.0), profile, link="direct") as simulation:
        simulation.loop.run(1000)
        c0, w0 = time.process_time(), time.perf_counter()
        simulation.loop.run(ticks)
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    return {"ticks": ticks, "ticks_per_s": ticks / wall, "cpu_us_per_tick": cpu / ticks * 1e6}


def measure(quick: bool = False, repeats: int = 3) -> dict[str, Any]:
    """Each measurement ``repeats`` times, interleaved, so a busy spell of the machine hits all three
    alike; the text reports the best run of each (the machine's capacity) and the median."""
    scale = 10 if quick else 1
    runs: dict[str, list[dict[str, Any]]] = {"n1": [], "n100": [], "simulate_pedal": []}
    for _ in range(1 if quick else repeats):
        runs["n1"].append(exchange(1, 20000 // scale))
        runs["n100"].append(exchange(100, 2000 // scale))
        runs["simulate_pedal"].append(in_process(200000 // scale))
    return {name: {"best": max(found, key=lambda r: r["ticks_per_s"]),
                   "median": sorted(found, key=lambda r: r["ticks_per_s"])[len(found) // 2],
                   "runs": found}
            for name, found in runs.items()}


def text(result: dict[str, Any]) -> str:
    return "\n\n".join(f"{which}:\n" + _table(result["n1"][which], result["n100"][which],
                                               result["simulate_pedal"][which])
                       for which in ("best", "median"))


def _table(one: dict[str, Any], hundred: dict[str, Any], local: dict[str, Any]) -> str:
    return "\n".join([
        "| run | rate | round trip p50 / p99 | CPU per step (ecu-sim + peer) |",
        "|---|---|---|---|",
        f"| cosim, n = 1 | {one['steps_per_s']:,.0f} steps/s | {one['rtt_p50_ms']:.3f} / "
        f"{one['rtt_p99_ms']:.3f} ms | {one['server_cpu_us_per_step']:.0f} + "
        f"{one['peer_cpu_us_per_step']:.0f} us |",
        f"| cosim, n = 100 | {hundred['ticks_per_s']:,.0f} ticks/s ({hundred['steps_per_s']:,.0f} steps/s) | "
        f"{hundred['rtt_p50_ms']:.3f} / {hundred['rtt_p99_ms']:.3f} ms | "
        f"{hundred['server_cpu_us_per_step']:.0f} + {hundred['peer_cpu_us_per_step']:.0f} us |",
        f"| simulate --app, in process | {local['ticks_per_s']:,.0f} ticks/s | - | "
        f"{local['cpu_us_per_tick']:.1f} us per tick |",
    ])
