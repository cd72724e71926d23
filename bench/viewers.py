"""What watching a run costs: CPU per tick without and with ``--stream``, ``--record .log`` and ``.mcap``.

Two measurements (docs/performance.md, "Live stream and MCAP: CPU per tick"):

- ``virtual``: ``ecu-sim run`` in this process through its real command line, on python-can's
  ``virtual`` bus, its clock replaced by virtual time and a peer sending APP before every tick,
  so a tick costs only the node and its observers. The CPU time of the loop's thread (not the
  viewer's, which runs in this process too) over many ticks, per tick.
- ``realtime``: ``ecu-sim run`` as a process on a private udp_multicast bus, sleeping to its
  deadlines as on a board; its user + system CPU (``wait4``) of a long run minus that of a short
  one, so start-up cancels out, per tick of the difference.

Run: ``.venv/bin/python -m bench.viewers [--ticks N] [--seconds S]``; prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import can

from bench.processes import private_bus
from ecu_sim import cli
from ecu_sim.codec.profile import Profile
from ecu_sim.runs import tuned
from ecu_sim.runtime.clock import Inputs, VirtualClock


class _PeerClock(VirtualClock):
    def __init__(self, bus: can.BusABC) -> None:
        super().__init__()
        self._app = Profile.load("amp").app
        self._bus = bus
        self._k = 0

    def wait_until(self, deadline: float, inputs: Inputs) -> None:
        self._k += 1
        self._bus.send(can.Message(arbitration_id=self._app.frame_id, data=self._app.encode(self._k % 100)))
        super().wait_until(deadline, inputs)


@contextmanager
def _listener() -> Iterator[str]:
    """A viewer that reads and drops every datagram, as PlotJuggler would."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(0.2)
    stop = threading.Event()

    def drain() -> None:
        while not stop.is_set():
            try:
                sock.recv(1 << 16)
            except OSError:
                continue

    thread = threading.Thread(target=drain, daemon=True)
    thread.start()
    try:
        yield f"udp://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        sock.close()


def _nobody() -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return f"udp://127.0.0.1:{sock.getsockname()[1]}"


def _configurations(folder: Path, viewer: str) -> dict[str, list[str]]:
    return {
        "plain": [],
        "stream (viewer listening)": ["--stream", viewer],
        "stream (nobody listening)": ["--stream", _nobody()],
        "record .log": ["--record", str(folder / "run.log")],
        "record .mcap": ["--record", str(folder / "run.mcap")],
        "record .mcap + stream": ["--record", str(folder / "both.mcap"), "--stream", viewer],
    }


def _clock_of(peer: can.BusABC) -> Any:
    return lambda period_s, *args, **kwargs: _PeerClock(peer)


def virtual(ticks: int, repeats: int) -> dict[str, float]:
    """Microseconds of CPU per tick of ``ecu-sim run`` in virtual time, best of ``repeats``."""
    import logging

    result: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as folder, _listener() as viewer:
        for name, extra in _configurations(Path(folder), viewer).items():
            best = float("inf")
            for _ in range(repeats):
                channel = f"bench-{uuid.uuid4().hex[:8]}"
                peer = can.Bus(interface="virtual", channel=channel, receive_own_messages=False)
                setattr(tuned, "MonotonicClock", _clock_of(peer))  # noqa: B010  # the clock a test swaps too
                started = time.thread_time()
                status = cli.main(["run", "-i", "virtual", "-c", channel, "--duration", str(ticks / 10),
                                   "--log-level", "warning", *extra])
                best = min(best, (time.thread_time() - started) / ticks)
                peer.shutdown()
                logging.getLogger().handlers.clear()
                assert status == 0, name
            result[name] = round(best * 1e6, 1)
    return result


def _cpu_s(command: list[str], env: dict[str, str]) -> float:
    process = subprocess.Popen(command, env=env)
    _, status, usage = os.wait4(process.pid, 0)
    assert status == 0, command
    return float(usage.ru_utime + usage.ru_stime)


def real(seconds: float, short_s: float = 3.0) -> dict[str, float]:
    """Microseconds of CPU (user + system) per tick of an ``ecu-sim run`` process, per configuration."""
    group, port = private_bus()
    bus = ["-i", "udp_multicast", "-c", group, "--bus-kwargs", f"port={port}"]
    result: dict[str, float] = {}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CAN_", "ECU_SIM_"))}
    with tempfile.TemporaryDirectory() as folder, _listener() as viewer:
        for name, extra in _configurations(Path(folder), viewer).items():
            cpu = [_cpu_s([sys.executable, "-m", "ecu_sim", *bus, "--duration", str(duration),
                           "--log-level", "warning", *extra], env) for duration in (short_s, seconds)]
            result[name] = round((cpu[1] - cpu[0]) / ((seconds - short_s) * 10) * 1e6, 1)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ticks", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=30.0)
    args = parser.parse_args()
    measured: dict[str, Any] = {"virtual_us_per_tick": virtual(args.ticks, args.repeats),
                                "realtime_us_per_tick": real(args.seconds)}
    print(json.dumps(measured, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
