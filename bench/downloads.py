"""What downloads of the page's recording cost the node's loop: late ticks of the 10 Hz testbed
ECU in a run where twenty downloads are asked for at once, beside the same run without them
(docs/web.md, issue 49).

Each run is the testbed ECU with its page on loopback and a CCM beside it on a private
udp_multicast bus, as on a rig. The run records from a few seconds in to the middle of the run
(``record`` start and stop through the API), and then, in the run with downloads, every
``--every`` seconds twenty GETs of the recording go out at once from this process (aiohttp); the
run without them makes the same requests for the state instead, so that both serve the same
number of connections. Per run: the node's ``late`` counter (ticks that started later than its
threshold, as the status line counts them), its ticks, the answers' statuses, and how many
recordings the node says it started making (its log, ``web: making the recording ...``; a
commit before issue 49 logs none). With ``--baseline REV`` the same runs of that commit follow,
so the figures say what one recording at a time changed. The runs go one after another: nodes
running at once would delay each other's ticks.

Run: ``scripts/bench downloads [--seconds S] [--every S] [--requests N] [--baseline REV]``; prints
JSON and a Markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench.processes import REPO, child_env
from bench.web import beside, free_port, new_bus

#: what a run asks for in each burst
KINDS = {"twenty downloads at once": "api/recording", "as many requests for the state": "api/state"}
#: the line the node logs for each recording it starts making
MAKING = re.compile(r"web: making the recording to tick \d+ for a download")


def _get(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=60) as answer:
        state = json.loads(answer.read())
    assert isinstance(state, dict)
    return state


def _control(url: str, body: dict[str, Any]) -> None:
    request = urllib.request.Request(url + "api/control", data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60):
        pass


async def _burst(url: str, count: int) -> list[int]:
    """``count`` GETs of ``url`` at once, each on a connection of its own; their statuses."""
    import aiohttp

    connector = aiohttp.TCPConnector(limit=count)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def one() -> int:
            async with session.get(url) as answer:
                await answer.read()
                return int(answer.status)

        return list(await asyncio.gather(*(one() for _ in range(count))))


def _served(url: str, process: subprocess.Popen[str]) -> None:
    give_up = time.monotonic() + 60
    while True:
        try:
            _get(url + "api/state")
            return
        except OSError:
            if process.poll() is not None or time.monotonic() > give_up:
                raise SystemExit(f"bench.downloads: the node at {url} did not serve its page") from None
            time.sleep(0.1)


def run(tree: str, kind: str, seconds: float, every: float, requests: int) -> dict[str, Any]:
    """One run of ``seconds``: its late ticks, ticks, the answers' statuses and the recordings made."""
    bus = new_bus()
    url = f"http://127.0.0.1:{free_port()}/"
    env = {**child_env(), "PYTHONPATH": tree}
    command = [sys.executable, "-m", "ecu_sim", *bus, "--web", url.removeprefix("http://").rstrip("/"),
               "--duration", str(seconds + 30)]
    log: list[str] = []
    with beside("testbed, 10 Hz", bus):
        process = subprocess.Popen(command, env=env, cwd=tempfile.gettempdir(), stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True)
        assert process.stderr is not None
        reader = threading.Thread(target=lambda: log.extend(process.stderr or ()), daemon=True)
        reader.start()
        try:
            _served(url, process)
            start = time.monotonic()
            _control(url, {"record": "start"})
            time.sleep(seconds / 2)
            _control(url, {"record": "stop"})
            statuses: collections.Counter[int] = collections.Counter()
            while time.monotonic() - start < seconds:
                statuses.update(asyncio.run(_burst(url + KINDS[kind], requests)))
                time.sleep(max(0.0, min(every, seconds - (time.monotonic() - start))))
            state = _get(url + "api/state")
        finally:
            process.terminate()
            process.wait(60)
            reader.join(10)
    return {"late": state["counters"]["late"], "ticks": state["tick"],
            "statuses": {str(status): n for status, n in sorted(statuses.items())},
            "recordings_made": sum(bool(MAKING.search(line)) for line in log)}


def table(result: dict[str, Any]) -> str:
    rows = ["| tree | run | late ticks | ticks | answers | recordings made |", "|---|---|---:|---:|---|---:|"]
    for tree, runs in result["trees"].items():
        for kind, f in runs.items():
            answers = ", ".join(f"{n} x {status}" for status, n in f["statuses"].items())
            rows.append(f"| {tree} | {kind} | {f['late']} | {f['ticks']} | {answers} | "
                        f"{f['recordings_made']} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="each run's length")
    parser.add_argument("--every", type=float, default=5.0, help="seconds between bursts, after the stop")
    parser.add_argument("--requests", type=int, default=20, help="requests in a burst")
    parser.add_argument("--baseline", metavar="REV", help="the same runs of this commit, after this tree's")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        trees = {"this tree": str(REPO)}
        if args.baseline:
            from bench.versus import export

            trees[args.baseline] = str(export(args.baseline, Path(folder)))
        result: dict[str, Any] = {"seconds": args.seconds, "every": args.every, "requests": args.requests,
                                  "trees": {}}
        for name, tree in trees.items():
            result["trees"][name] = {kind: run(tree, kind, args.seconds, args.every, args.requests)
                                     for kind in KINDS}
    print(json.dumps(result, indent=2))
    print(table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
