"""What the node's page costs: CPU per tick, memory and tick lateness without ``--web``, with it and
no page open, and with two pages open (docs/performance.md, "The page: CPU, memory, lateness").

The node is an ``ecu-sim`` ECU process on a private udp_multicast bus with a CCM beside it, so it
receives and sends as on a rig. A page is what a browser keeps open: one WebSocket taking every
snapshot (the page's files are fetched once and cached); two clients in this process read them
as two browsers on two laptops would, so the board's figures are not mixed with a browser's own
rendering. Per configuration:

- CPU per tick: the process's user + system time (``wait4``) of a long run minus a short one, so
  the start-up cancels out, over the ticks of the difference;
- memory: the long run's peak resident set (``ru_maxrss``);
- lateness: a third run with the tick probe (``--tick-probe``, the same in every configuration):
  the worst tick and the lateness histogram.

Run: ``.venv/bin/python -m bench.web [--seconds S] [--pages N]``; prints JSON. ``--node HOST:PORT``
instead measures nothing and only holds N pages open on a node started elsewhere (the ARM stage).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ENV = {k: v for k, v in os.environ.items() if not k.startswith(("CAN_", "ECU_SIM_"))}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _page(url: str, stop: threading.Event, counts: list[int]) -> None:
    """One open page: a WebSocket read to its end, retried until the node serves it."""
    import aiohttp

    async with aiohttp.ClientSession() as session:
        while not stop.is_set():
            try:
                async with session.ws_connect(url + "api/ws") as socket_:
                    async for message in socket_:
                        counts[0] += len(message.data)
                        if stop.is_set():
                            return
            except aiohttp.ClientError:
                await asyncio.sleep(0.05)


def hold_pages(url: str, pages: int, stop: threading.Event) -> tuple[threading.Thread, list[int]]:
    """``pages`` pages open on ``url`` in a thread of their own until ``stop``; bytes received."""
    counts = [0]

    async def all_pages() -> None:
        await asyncio.gather(*(_page(url, stop, counts) for _ in range(pages)))

    thread = threading.Thread(target=lambda: asyncio.run(all_pages()), daemon=True)
    thread.start()
    return thread, counts


def _run(bus: list[str], seconds: float, web: int | None, pages: int,
         extra: list[str]) -> tuple[float, int, int]:
    """One ECU run; its CPU seconds, peak RSS (KiB) and the bytes its pages received."""
    args = [sys.executable, "-m", "ecu_sim", *bus, "--duration", str(seconds), "--log-level", "warning",
            *extra]
    stop = threading.Event()
    thread = None
    counts = [0]
    if web is not None:
        args += ["--web", f"127.0.0.1:{web}"]
        if pages:
            thread, counts = hold_pages(f"http://127.0.0.1:{web}/", pages, stop)
    process = subprocess.Popen(args, env=ENV)
    peak = 0
    while True:  # the peak as the kernel counts it (VmHWM): ru_maxrss would include this process's
        peak = max(peak, _peak_kib(process.pid))  # size at the fork
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            break
        time.sleep(0.2)
    stop.set()
    if thread is not None:
        thread.join(10)
    assert status == 0, args
    return float(usage.ru_utime + usage.ru_stime), peak, counts[0]


def _peak_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def virtual(ticks: int, repeats: int) -> dict[str, float]:
    """Microseconds of the loop thread's CPU per tick in virtual time, without and with ``--web``
    (no page open): the work ``--web`` adds to a tick, without the sleeping, as bench.viewers."""
    import logging

    import can

    from bench.viewers import _clock_of
    from ecu_sim import cli
    from ecu_sim.runs import tuned

    result: dict[str, float] = {}
    for name, extra in (("without --web", []), ("--web", ["--web", "127.0.0.1:0"])):
        best = float("inf")
        for _ in range(repeats):
            channel = f"bench-{random.SystemRandom().getrandbits(32):08x}"
            peer = can.Bus(interface="virtual", channel=channel, receive_own_messages=False)
            setattr(tuned, "MonotonicClock", _clock_of(peer))  # noqa: B010  # as bench.viewers does
            started = time.thread_time()
            status = cli.main(["run", "-i", "virtual", "-c", channel, "--duration", str(ticks / 10),
                               "--log-level", "warning", *extra])
            best = min(best, (time.thread_time() - started) / ticks)
            peer.shutdown()
            logging.getLogger().handlers.clear()
            assert status == 0, name
        result[name] = round(best * 1e6, 1)
    return result


def measure(seconds: float, pages: int, short_s: float = 3.0) -> dict[str, Any]:
    rng = random.SystemRandom()
    bus = ["-i", "udp_multicast", "-c", f"239.255.{rng.randint(1, 254)}.{rng.randint(1, 254)}",
           "--bus-kwargs", f"port={rng.randint(20000, 60000)}"]
    ccm = subprocess.Popen([sys.executable, "-m", "ecu_sim", "ccm", *bus, "--log-level", "warning"], env=ENV)
    result: dict[str, Any] = {}
    try:
        with tempfile.TemporaryDirectory() as folder:
            for name, web, open_pages in (("without --web", None, 0), ("--web, no page open", 0, 0),
                                          (f"--web, {pages} pages open", 0, pages)):
                port = None if web is None else _free_port()
                short, _, _ = _run(bus, short_s, port, open_pages, [])
                port = None if web is None else _free_port()
                long, rss, received = _run(bus, seconds, port, open_pages, [])
                probe = Path(folder) / "probe.json"
                port = None if web is None else _free_port()
                _run(bus, seconds, port, open_pages, ["--tick-probe", str(probe)])
                probed = json.loads(probe.read_text())
                result[name] = {
                    "cpu_us_per_tick": round((long - short) / ((seconds - short_s) * 10) * 1e6, 1),
                    "peak_rss_mib": round(rss / 1024, 1),
                    "page_kib_per_s": round(received / 1024 / seconds, 1),
                    "worst_lateness_us": round(probed["worst_us"]["lateness"], 1),
                    "late_ticks": probed["late"],
                    "ticks": probed["ticks"],
                    "lateness_histogram_us": probed["lateness_histogram_us"],
                }
    finally:
        ccm.terminate()
        ccm.wait(10)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--pages", type=int, default=2)
    parser.add_argument("--node", metavar="HOST:PORT", help="only hold the pages open on this node")
    parser.add_argument("--hold", type=float, default=60.0, help="with --node: for this long (s)")
    args = parser.parse_args()
    if args.node:
        stop = threading.Event()
        thread, counts = hold_pages(f"http://{args.node}/", args.pages, stop)
        time.sleep(args.hold)
        stop.set()
        thread.join(10)
        print(json.dumps({"pages": args.pages, "bytes": counts[0]}))
        return 0
    print(json.dumps({"virtual_us_per_tick": virtual(3000, 3),
                      "realtime": measure(args.seconds, args.pages)}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
