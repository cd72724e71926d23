"""What the node's page costs in instructions a tick: the work ``--web`` adds, counted, not timed.

``bench.web`` times the node's CPU per tick, and on a shared virtual machine a 10 Hz node's
ticks vary from one window to the next (which core it wakes on, what ran there before, the
host) by more than the page is meant to add. An instruction
count does not vary with any of that: valgrind's callgrind counts every instruction the node
executes, in all its threads, between two commands sent to the running process. So each
configuration of ``bench.web`` runs the testbed ECU (beside its CCM, which runs natively) under
callgrind with counting off through the start-up; once the node has logged its first status
line and run ``WARM_S`` more (a page open where the configuration has one), counting is turned
on for a window of ``--seconds`` and the count dumped. Instructions per tick are the count over
the window's ticks.

A count says what work is added, not what it costs in time: code that runs cold after a
period's sleep costs more per instruction than the same code in a tight loop, so ``bench.web``
stays the measure of CPU time, and this the measure that tells a small change from noise. The
window's ticks are its seconds over the period (a tick the node skips would count as run, and
the table shows each run's late and skipped ticks). Only the 10 Hz testbed: under callgrind
the node runs many times slower, which a 10 ms powertrain tick does not fit into (it falls
behind and skips ticks, which changes its work). Docs: docs/performance.md.

Run: ``.venv/bin/python -m bench.web_instructions [--seconds S] [--baseline REV]`` (needs
valgrind: ``apt-get install valgrind``); prints JSON and a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.processes import REPO, child_env
from bench.web import BASELINE, CONFIGURATIONS, NODES, RUNS, WARM_S, beside, free_port, hold_pages, new_bus

NODE = "testbed, 10 Hz"
#: seconds the node may take to log its first status line under callgrind
START_S = 300.0


def _status_logged(log: Path, process: subprocess.Popen[bytes]) -> None:
    give_up = time.monotonic() + START_S
    while "INFO    ecu_sim: speed" not in log.read_text(errors="replace"):
        if process.poll() is not None or time.monotonic() > give_up:
            raise RuntimeError(f"the node did not start under callgrind: {log.read_text(errors='replace')}")
        time.sleep(0.5)


def _control(option: str, pid: int) -> None:
    subprocess.run(["callgrind_control", option, str(pid)], check=True, capture_output=True)


def _dumped(folder: Path) -> int:
    """The instructions of the dump asked for (``.1``; the file without a number is the exit's)."""
    for line in next(folder.glob("callgrind.*.1")).read_text().splitlines():
        if line.startswith("summary:"):
            return int(line.split()[1])
    raise RuntimeError(f"no summary line in the dump in {folder}")


def instructions_per_tick(tree: str, configuration: str, seconds: float) -> dict[str, Any]:
    """One run of ``configuration`` of ``tree``: instructions per tick over the window."""
    web, page, settings = RUNS[configuration]
    _, period, _ = NODES[NODE]
    bus = new_bus()
    port = free_port()
    with tempfile.TemporaryDirectory() as name, beside(NODE, bus):
        folder = Path(name)
        log = folder / "node.log"
        command = ["valgrind", "--tool=callgrind", "--instr-atstart=no",
                   f"--callgrind-out-file={folder}/callgrind.%p", sys.executable, "-m", "ecu_sim", *bus,
                   "--log-level", "info", "--spin-us", "0", "--duration", str(START_S + seconds + 60),
                   *(["--web", f"127.0.0.1:{port}"] if web else [])]
        stop = threading.Event()
        with log.open("wb") as output:
            process = subprocess.Popen(command, stdout=output, stderr=output, cwd=tempfile.gettempdir(),
                                       env={**child_env(), **settings, "PYTHONPATH": tree})
        try:
            _status_logged(log, process)
            if page:
                hold_pages(f"http://127.0.0.1:{port}/", 1, stop)
            time.sleep(WARM_S)
            _control("--instr=on", process.pid)
            start = time.monotonic()
            time.sleep(seconds)
            _control("--dump", process.pid)
            spent = time.monotonic() - start
        finally:
            stop.set()
            process.terminate()
            process.wait(60)
        late = log.read_text(errors="replace").rpartition("stopped after ")[2].split("|")[0].strip()
        return {"instructions_per_tick": round(_dumped(folder) / (spent / period)), "run": late}


def measure(seconds: float, trees: dict[str, str]) -> dict[str, Any]:
    this = next(iter(trees))
    result: dict[str, Any] = {"seconds": seconds, "node": NODE, "trees": {}}
    for tree, path in trees.items():
        configurations = CONFIGURATIONS if tree == this else BASELINE
        runs = {c: instructions_per_tick(path, c, seconds) for c in configurations}
        plain = runs[CONFIGURATIONS[0]]["instructions_per_tick"]
        for figures in runs.values():
            figures["extra_pct"] = round((figures["instructions_per_tick"] - plain) / plain * 100, 1)
        result["trees"][tree] = runs
    return result


def table(result: dict[str, Any]) -> str:
    rows = ["| tree | configuration | instructions a tick | extra over no `--web` | the run (ticks, late, "
            "skipped) |", "|---|---|---:|---:|---|"]
    for tree, runs in result["trees"].items():
        for configuration, f in runs.items():
            rows.append(f"| {tree} | {configuration} | {f['instructions_per_tick']:,} | "
                        f"{f['extra_pct']:+.1f} % | {f['run']} |")
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="the counted window of a run")
    parser.add_argument("--baseline", metavar="REV", help="the same runs of this commit (or the package "
                        "in this folder)")
    args = parser.parse_args()
    if shutil.which("callgrind_control") is None:
        print("bench.web_instructions needs valgrind: apt-get install valgrind", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as folder:
        trees = {"this tree": str(REPO)}
        if args.baseline and Path(args.baseline).is_dir():
            trees[args.baseline] = args.baseline
        elif args.baseline:
            from bench.versus import export

            trees[args.baseline] = str(export(args.baseline, Path(folder)))
        result = measure(args.seconds, trees)
    print(json.dumps(result, indent=2))
    print(table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
