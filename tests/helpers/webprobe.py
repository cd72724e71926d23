"""The node's page on a board (the ARM stage, scripts/arm-test): ``ecu-sim --web 0.0.0.0:PORT``
serves ``/api/state``, refuses a control without its token, and what the page costs there.

Run by the board's Python with the installed ecu-sim and aiohttp: ``python webprobe.py PORT``.
Three ECU runs of ``--seconds`` each on a private host-local bus, beside a CCM: without ``--web``,
with it and no page open, with it and two pages open (WebSockets of this process); per run the
node's CPU per tick (user + system, ``wait4``, start-up included) and peak memory. Prints one
JSON line; exit status 1 when the page did not answer as it should.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from typing import Any

ECU_SIM = [sys.executable, "-m", "ecu_sim"]


def _get(url: str, data: bytes | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()
    except OSError:
        return 0, b""


def _pages(url: str, count: int, stop: threading.Event) -> threading.Thread:
    import aiohttp

    async def page() -> None:
        async with aiohttp.ClientSession() as session:
            while not stop.is_set():
                try:
                    async with session.ws_connect(url + "api/ws") as socket:
                        async for _ in socket:
                            if stop.is_set():
                                return
                except aiohttp.ClientError:
                    await asyncio.sleep(0.2)

    async def pages() -> None:
        await asyncio.gather(*(page() for _ in range(count)))

    thread = threading.Thread(target=lambda: asyncio.run(pages()), daemon=True)
    thread.start()
    return thread


def run(bus: list[str], seconds: float, port: int | None, pages: int) -> dict[str, Any]:
    args = [*ECU_SIM, *bus, "--duration", str(seconds), "--log-level", "warning"]
    if port is not None:
        args += ["--web", f"0.0.0.0:{port}"]
    process = subprocess.Popen(args)
    found: dict[str, Any] = {}
    stop = threading.Event()
    thread = None
    if port is not None:
        url = f"http://127.0.0.1:{port}/"
        give_up = time.monotonic() + seconds
        while (status := _get(url + "api/state")[0]) != 200 and time.monotonic() < give_up:
            time.sleep(0.2)
        state = json.loads(_get(url + "api/state")[1] or b"{}")
        found["state"] = status == 200 and "speed_kph" in state
        found["control_without_token"] = _get(url + "api/control", b'{"pedal_override": 10}')[0]
        if pages:
            thread = _pages(url, pages, stop)
    _, status, usage = os.wait4(process.pid, 0)
    stop.set()
    if thread is not None:
        thread.join(10)
    found.update(status=status, cpu_s=usage.ru_utime + usage.ru_stime,
                 peak_rss_mib=round(usage.ru_maxrss / 1024, 1))
    return found


def main() -> int:
    port = int(sys.argv[1])
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 30.0
    rng = random.SystemRandom()
    bus = ["-i", "udp_multicast", "-c", f"239.255.{rng.randint(1, 254)}.{rng.randint(1, 254)}",
           "--bus-kwargs", f"port={rng.randint(20000, 60000)}"]
    ccm = subprocess.Popen([*ECU_SIM, "ccm", *bus, "--log-level", "warning"])
    try:
        runs = {"without --web": run(bus, seconds, None, 0),
                "--web, no page open": run(bus, seconds, port, 0),
                "--web, 2 pages open": run(bus, seconds, port + 1, 2)}
    finally:
        ccm.terminate()
        ccm.wait(30)
    for figures in runs.values():
        figures["cpu_us_per_tick"] = round(figures.pop("cpu_s") / (seconds * 10) * 1e6)
    print(json.dumps(runs))
    served = all(r.get("state", True) and r.get("control_without_token", 401) == 401 and r["status"] == 0
                 for r in runs.values())
    return 0 if served else 1


if __name__ == "__main__":
    sys.exit(main())
