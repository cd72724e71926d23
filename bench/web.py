"""What the node's page costs: CPU per tick and tick lateness without ``--web``, with it and no page
open, and with a page open, for the 10 Hz testbed ECU and the 10 ms powertrain, side by side in
the same minutes (docs/performance.md, "The page: CPU, memory, lateness").

Each node is an ``ecu-sim`` process on a private udp_multicast bus: the testbed ECU beside a CCM
(it receives APP and sends its speed, as on a rig), the powertrain (``--vehicle class6 --profile
j1939 --network powertrain``) on its own, its four nodes talking to each other. A page is what a
browser keeps open, one WebSocket taking every snapshot, read in this process so that the node's
figures hold no browser's rendering. Per run:

- CPU per tick: the node's threads' CPU time (the scheduler's ``se.sum_exec_runtime`` in
  ``/proc/PID/task/*/sched``, nanoseconds) over a window that starts once the node has run a few
  seconds (start-up and the page's connection left out), divided by the window's ticks;
- lateness: a second run with the tick probe (``--tick-probe``, the same in every configuration),
  of every tree: the worst tick and the ticks later than 200 us.

In each round every configuration (and, with ``--baseline REV``, the same configurations of
another commit exported with ``git archive``) runs at the same time, each on a bus of its own,
so all of them share whatever the machine does in that window (how much that narrows the
spread of the rounds: docs/performance.md); the figures are medians over the rounds, and each
configuration's extra CPU over the run without ``--web`` is taken within its round, both as a
share of that run's CPU and as a share of one core (the extra CPU a tick over the node's tick
period), the form the page's budget is written in (docs/performance.md, "The targets"). The
lateness runs go one after another, since nodes running at once would delay each other's ticks.

Run: ``.venv/bin/python -m bench.web [--seconds S] [--rounds N] [--baseline REV] [--spin-us US]``;
prints JSON and a Markdown table. ``--node HOST:PORT`` instead measures nothing and only holds
pages open on a node started elsewhere (the ARM stage).
"""

from __future__ import annotations

import argparse
import asyncio
import glob
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from bench.processes import REPO, child_env, private_bus

NODES = {"testbed, 10 Hz": ([], 0.1, True),
         "powertrain, 10 ms": (["--vehicle", "class6", "--profile", "j1939", "--network", "powertrain"], 0.01,
                               False)}
CONFIGURATIONS = ("without --web", "--web, no page open", "--web, a page open",
                  "--web, web_record = no, no page open")
#: per configuration: --web, a page open, the environment's settings
RUNS = {CONFIGURATIONS[0]: (False, False, {}), CONFIGURATIONS[1]: (True, False, {}),
        CONFIGURATIONS[2]: (True, True, {}),
        CONFIGURATIONS[3]: (True, False, {"ECU_SIM_RUN_WEB_RECORD": "no"})}
#: what a baseline runs: a commit before ``[run] web_record`` knows no such setting
BASELINE = CONFIGURATIONS[:3]
#: seconds a node runs before the CPU window opens: start-up, the first page's connection
WARM_S = 4.0


def free_port() -> int:
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


def cpu_s(pid: int) -> float:
    """The CPU time of every thread of ``pid`` so far, from the scheduler's own account."""
    total = 0.0
    for path in glob.glob(f"/proc/{pid}/task/*/sched"):
        try:
            with open(path, encoding="ascii") as sched:
                for line in sched:
                    if line.startswith("se.sum_exec_runtime"):
                        total += float(line.split(":")[1]) / 1000.0
                        break
        except OSError:
            continue  # a thread that ended meanwhile
    return total


@contextmanager
def _node(tree: str, args: list[str],
          configuration: str) -> Iterator[tuple[subprocess.Popen[bytes], list[int]]]:
    """An ECU process of ``tree`` (its folder first on PYTHONPATH) as ``configuration`` says."""
    web, page, settings = RUNS[configuration]
    env = {**child_env(), **settings, "PYTHONPATH": tree}
    command = [sys.executable, "-m", "ecu_sim", *args, "--log-level", "warning"]
    port = free_port()
    if web:
        command += ["--web", f"127.0.0.1:{port}"]
    process = subprocess.Popen(command, env=env, cwd=tempfile.gettempdir())
    stop = threading.Event()
    thread, counts = hold_pages(f"http://127.0.0.1:{port}/", 1, stop) if page else (None, [0])
    try:
        yield process, counts
    finally:
        stop.set()
        if thread is not None:
            thread.join(10)
        if process.poll() is None:
            process.terminate()
        process.wait(30)


@contextmanager
def _running(tree: str, node: str, configuration: str, seconds: float,
             options: tuple[str, ...]) -> Iterator[subprocess.Popen[bytes]]:
    """One measured node on a private bus of its own (the testbed ECU with its CCM beside it)."""
    args, _, _ = NODES[node]
    bus = new_bus()
    run = [*bus, *args, *options, "--duration", str(WARM_S + seconds + 5)]
    with beside(node, bus), _node(tree, run, configuration) as (process, _):
        yield process


def cpu_per_tick_us(runs: list[tuple[str, str, str]], node: str, seconds: float,
                    options: tuple[str, ...] = ()) -> list[float]:
    """The CPU per tick of each (tree, configuration) in ``runs``, all running at once over the
    same window of ``seconds`` after WARM_S, so they share what the machine does in it, which
    windows one after another cannot. Each node is a few per cent of a core, so they seldom
    meet."""
    _, period, _ = NODES[node]
    with ExitStack() as stack:
        processes = []
        for path, configuration, _ in runs:
            processes.append(stack.enter_context(_running(path, node, configuration, seconds, options)))
        time.sleep(WARM_S)
        start_cpu, start = [cpu_s(p.pid) for p in processes], time.monotonic()
        time.sleep(seconds)
        used, spent = [cpu_s(p.pid) for p in processes], time.monotonic() - start
        for process, (_, configuration, _) in zip(processes, runs, strict=True):
            assert process.poll() is None, f"{node} {configuration}: the node ended early"
    return [round((after - before) / (spent / period) * 1e6, 1)
            for before, after in zip(start_cpu, used, strict=True)]


def lateness(tree: str, bus: list[str], node: str, configuration: str, seconds: float,
             options: tuple[str, ...] = ()) -> dict[str, Any]:
    """The tick probe's worst tick and late ticks of one run of ``seconds``."""
    args, _, _ = NODES[node]
    with tempfile.TemporaryDirectory() as folder:
        probe = Path(folder) / "probe.json"
        run = [*bus, *args, *options, "--duration", str(seconds), "--tick-probe", str(probe)]
        with _node(tree, run, configuration) as (process, counts):
            process.wait(seconds + 60)
        probed = json.loads(probe.read_text())
    return {"worst_lateness_us": round(probed["worst_us"]["lateness"], 1), "late_ticks": probed["late"],
            "ticks": probed["ticks"], "page_kib_per_s": round(counts[0] / 1024 / seconds, 1)}


def new_bus() -> list[str]:
    group, port = private_bus()
    return ["-i", "udp_multicast", "-c", group, "--bus-kwargs", f"port={port}"]


@contextmanager
def beside(node: str, bus: list[str]) -> Iterator[None]:
    """The CCM the testbed ECU runs beside; the powertrain runs alone."""
    if not NODES[node][2]:
        yield
        return
    env = {**child_env(), "PYTHONPATH": str(REPO)}
    ccm = subprocess.Popen([sys.executable, "-m", "ecu_sim", "ccm", *bus, "--log-level", "warning"], env=env,
                           cwd=tempfile.gettempdir())
    try:
        yield
    finally:
        ccm.terminate()
        ccm.wait(30)


def measure(seconds: float, rounds: int, trees: dict[str, str], probe_s: float,
            options: tuple[str, ...] = ()) -> dict[str, Any]:
    """Per tree, node and configuration: CPU per tick in each round, medians, the extra over
    the run without ``--web`` (within each round), and the lateness of one run."""
    this = next(iter(trees))
    cpu: dict[str, dict[str, dict[str, list[float]]]] = {
        tree: {node: {c: [] for c in (CONFIGURATIONS if tree == this else BASELINE)} for node in NODES}
        for tree in trees}
    for _ in range(rounds):
        for node in NODES:
            runs = [(path, configuration, tree) for tree, path in trees.items()
                    for configuration in cpu[tree][node]]
            for (_, configuration, tree), value in zip(runs, cpu_per_tick_us(runs, node, seconds, options),
                                                       strict=True):
                cpu[tree][node][configuration].append(value)
    result: dict[str, Any] = {"seconds": seconds, "rounds": rounds, "options": list(options), "trees": {}}
    for tree, nodes in cpu.items():
        result["trees"][tree] = {node: summary(runs, NODES[node][1]) for node, runs in nodes.items()}
    for node in NODES:
        bus = new_bus()
        with beside(node, bus):
            for tree, path in trees.items():
                for configuration in cpu[tree][node]:
                    result["trees"][tree][node][configuration].update(
                        lateness(path, bus, node, configuration, probe_s, options))
    return result


def summary(runs: dict[str, list[float]], period_s: float) -> dict[str, dict[str, Any]]:
    """Medians over the rounds; each round's extra over the run without ``--web`` of the same
    round, as a share of that run and as a share of one core (extra CPU a tick over the period)."""
    plain = runs[CONFIGURATIONS[0]]
    summary: dict[str, dict[str, Any]] = {}
    for configuration, values in runs.items():
        extra = [(v - p) / p * 100 for v, p in zip(values, plain, strict=True)]
        core = [(v - p) / (period_s * 1e6) * 100 for v, p in zip(values, plain, strict=True)]
        summary[configuration] = {"cpu_us_per_tick": values, "median_us": round(statistics.median(values), 1),
                                  "extra_pct_median": round(statistics.median(extra), 1),
                                  "extra_pct_range": [round(min(extra), 1), round(max(extra), 1)],
                                  "extra_core_pct_median": round(statistics.median(core), 3),
                                  "extra_core_pct_range": [round(min(core), 3), round(max(core), 3)]}
    return summary


def table(result: dict[str, Any]) -> str:
    """The Markdown table docs/performance.md shows."""
    rows = ["| tree | node | configuration | CPU a tick, median (us) | extra over no `--web`, median "
            "(range) | extra, % of one core, median of interleaved runs (range) | worst tick | "
            "ticks later than 200 us |", "|---|---|---|---:|---:|---:|---:|---:|"]
    for tree, nodes in result["trees"].items():
        for node, configurations in nodes.items():
            for configuration, f in configurations.items():
                late = (f"{f['worst_lateness_us'] / 1000:.1f} ms", f"{f['late_ticks']} of {f['ticks']}") \
                    if "worst_lateness_us" in f else ("", "")
                low, high = f["extra_pct_range"]
                core_low, core_high = f["extra_core_pct_range"]
                rows.append(f"| {tree} | {node} | {configuration} | {f['median_us']:,.0f} | "
                            f"{f['extra_pct_median']:+.1f} % ({low:+.1f} .. {high:+.1f}) | "
                            f"{f['extra_core_pct_median']:+.3f} % ({core_low:+.3f} .. {core_high:+.3f}) | "
                            f"{late[0]} | {late[1]} |")
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="the CPU window of a run")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--probe-seconds", type=float, default=20.0, help="the lateness run")
    parser.add_argument("--baseline", metavar="REV", help="the same runs of this commit (or the package "
                        "in this folder), side by side")
    parser.add_argument("--spin-us", type=float, help="every measured node's --spin-us (0: the tick's work "
                        "alone, without the spin before its deadline); default: the node's own")
    parser.add_argument("--pages", type=int, default=2, help="with --node: how many pages")
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
    options = () if args.spin_us is None else ("--spin-us", f"{args.spin_us:g}")
    with tempfile.TemporaryDirectory() as folder:
        trees = {"this tree": str(REPO)}
        if args.baseline and Path(args.baseline).is_dir():
            trees[args.baseline] = args.baseline  # a tree exported before, e.g. by bench.versus
        elif args.baseline:
            from bench.versus import export

            trees[args.baseline] = str(export(args.baseline, Path(folder)))
        result = measure(args.seconds, args.rounds, trees, args.probe_seconds, options)
    print(json.dumps(result, indent=2))
    print(table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
