"""``scripts/bench controller``: how many real-time cases with a controller under test fit at once.

One case (the example controller, examples/cut_ccm.py, 80 -> 90 km/h) is run as a campaign that
repeats it K times with ``--workers K``, so K cases run side by side, each its ECU in the worker
and its Python controller in a process of its own. For each K: the campaign's wall time, the late
ticks of every case's ECU (ticks that started more than a tenth of a period late, the ECU's own
count) and the spread of the cases' figures. The baseline, in the same run, is the same case
alone (K = 1), as a person would run it by hand one at a time.

Then the suite of the issue: ``--suite`` cases of ``--duration`` seconds (different set speeds)
with ``--workers`` the largest K tried, timed from the command's start to its table.

With ``--realtime-priority N`` every one of these runs twice, one after the other: the ECUs at
normal scheduling, then with ``run.realtime_priority = N`` (``SCHED_FIFO``; root), so the two
are side by side under the same load.

  scripts/bench controller                          # K = 1, 10, 20 of 60 s, then the suite
  scripts/bench controller --duration 20 --ks 1,4   # a quick look
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "cut_ccm.py"
COMMAND = f"{{python}} {EXAMPLE} --channel {{channel}} --port {{port}} --set-speed {{run.set_speed_kph}}"

REPEATED = """
[program]
command = "{command}"
repeat = {k}

[base]
run.duration_s = {duration}
run.set_speed_kph = 90
run.initial_speed_kph = 80
run.realtime_priority = {priority}
"""

SUITE = """
[program]
command = "{command}"

[base]
run.duration_s = {duration}
run.realtime_priority = {priority}

[random]
count = {count}
seed = 34
run.set_speed_kph = {{uniform = [60, 100]}}
run.initial_speed_kph = {{uniform = [50, 100]}}
"""


def campaign(text: str, work: Path, name: str, workers: int) -> dict[str, Any]:
    path = work / f"{name}.toml"
    path.write_text(text)
    out = work / name
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ecu_sim", "campaign", str(path), "--out", str(out),
                    "--workers", str(workers), "--overwrite"], check=True, capture_output=True, text=True)
    wall = time.perf_counter() - started
    with open(out / "results.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    late = [int(r["late_ticks"] or 0) for r in rows]
    latest = [float(r["max_late_ms"] or 0) for r in rows]
    ok = [r for r in rows if r["status"] == "ok"]
    return {"wall_s": wall, "cases": len(rows), "failed": len(rows) - len(ok), "late_ticks": late,
            "max_late_ms": latest,
            "final_speed_kph": [float(r["final_speed_kph"]) for r in ok],
            "speed_dev_rms_kph": [float(r["speed_dev_rms_kph"]) for r in ok],
            "stops": sorted({r["controller_stop"] for r in rows})}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/bench controller", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=60.0, help="seconds per case (default 60)")
    parser.add_argument("--ks", default="1,10,20", help="cases at once to try (default 1,10,20)")
    parser.add_argument("--suite", type=int, default=20, help="cases in the suite (default 20; 0: none)")
    parser.add_argument("--realtime-priority", type=int, default=0,
                        help="also run each with the ECUs at SCHED_FIFO N (default 0: normal only)")
    parser.add_argument("--out", type=Path, default=REPO / "out" / "bench")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="ecu-sim-controller-bench-"))
    result: dict[str, Any] = {"cpus": os.cpu_count(), "duration_s": args.duration, "ks": args.ks,
                              "loadavg_start": os.getloadavg(), "at_once": [], "suite": []}
    priorities = [0] + ([args.realtime_priority] if args.realtime_priority else [])
    ks = [int(text) for text in args.ks.split(",")]
    for k in ks:
        for priority in priorities:
            print(f"{k} cases of {args.duration:g} s at once, {_scheduling(priority)}", file=sys.stderr)
            text = REPEATED.format(command=COMMAND, k=k, duration=args.duration, priority=priority)
            result["at_once"].append({"k": k, "priority": priority,
                                      **campaign(text, work, f"k{k}p{priority}", k)})
    workers = max(ks)
    for priority in priorities if args.suite else []:
        print(f"the suite: {args.suite} cases of {args.duration:g} s, --workers {workers}, "
              f"{_scheduling(priority)}", file=sys.stderr)
        text = SUITE.format(command=COMMAND, duration=args.duration, count=args.suite, priority=priority)
        result["suite"].append({"workers": workers, "priority": priority,
                                **campaign(text, work, f"suite-p{priority}", workers)})
    result["loadavg_end"] = os.getloadavg()
    (args.out / "controller.json").write_text(json.dumps(result, indent=2))
    print(report(result))
    return 0


def _spread(values: Sequence[float]) -> str:
    return f"{max(values) - min(values):.3f}" if len(values) > 1 else "-"


def _scheduling(priority: int) -> str:
    return f"SCHED_FIFO {priority}" if priority else "normal"


def report(r: dict[str, Any]) -> str:
    lines = [f"cases of {r['duration_s']:g} s, {r['cpus']} CPUs, "
             f"load {r['loadavg_start'][0]:.1f} at the start, {r['loadavg_end'][0]:.1f} at the end",
             "", "| cases at once | ECU scheduling | wall s | failed | cases with a late tick "
             "| late ticks (max of a case) | latest tick ms | final speed, median km/h | its spread "
             "| speed dev RMS spread km/h |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for x in r["at_once"]:
        speeds = x["final_speed_kph"]
        alone = " (baseline: alone)" if x["k"] == 1 else ""
        lines.append(f"| {x['k']}{alone} | {_scheduling(x['priority'])} | {x['wall_s']:.1f} | {x['failed']} "
                     f"| {sum(1 for n in x['late_ticks'] if n)} | {max(x['late_ticks'], default=0)} "
                     f"| {max(x['max_late_ms'], default=0):.1f} "
                     f"| {statistics.median(speeds) if speeds else float('nan'):.3f} | {_spread(speeds)} "
                     f"| {_spread(x['speed_dev_rms_kph'])} |")
    for s in r["suite"]:
        lines += ["", f"suite: {s['cases']} cases, --workers {s['workers']}, ECUs at "
                      f"{_scheduling(s['priority'])}: {s['wall_s']:.1f} s wall, "
                      f"{s['failed']} failed, {sum(1 for n in s['late_ticks'] if n)} cases with a late tick "
                      f"(max {max(s['late_ticks'], default=0)}, latest tick "
                      f"{max(s['max_late_ms'], default=0):.1f} ms), "
                      f"controllers stopped by {', '.join(s['stops'])}"]
    return "\n".join(lines)
