"""``scripts/bench campaign``: campaign throughput against one ``simulate`` process, in the same run.

Phases, interleaved so that a change in the machine's load hits all of them alike:

1. ``simulate``: ``ecu-sim simulate --duration 3600`` as a process, several times; its own log
   line gives the in-loop time of one one-hour case (start-up excluded), the process's wall time
   the whole cost.
2. ``campaign --workers 1`` and ``--workers 2`` of N one-hour cases (different set speeds, gains,
   starting speeds, routes), and ``--executor dask`` (a two-worker LocalCluster): cases per second
   of wall time, from the command's start to its table.
3. ``overhead``: in this process, CPU time of one case run as a campaign runs it (settings from
   the case, the probe, the key figures) against the same simulation run bare.

Results go to OUT/campaign.json and a Markdown table on stdout (docs/performance.md).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent

CAMPAIGN = """
[base]
run.duration_s = 3600

[random]
count = {count}
seed = 1
run.set_speed_kph = {{uniform = [60, 100]}}
run.initial_speed_kph = {{uniform = [40, 100]}}
controller.kp = {{choice = [10, 20, 40]}}
controller.ki = {{choice = [1, 2, 4]}}
run.grade_pct = {{choice = [-2.0, 0.0, 1.0, 3.0]}}
"""


#: simulate's summary line; its group is the loop's own seconds, start-up excluded
LOOP_LINE = re.compile(r"simulated [\d.]+ s in ([\d.]+) s")


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "ecu_sim", *args]


def env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("CAN_", "ECU_SIM_"))}


def simulate_once() -> dict[str, float]:
    started = time.perf_counter()
    done = subprocess.run(command("simulate", "--duration", "3600"), env=env(), capture_output=True,
                          text=True, check=True)
    wall = time.perf_counter() - started
    match = LOOP_LINE.search(done.stderr)
    return {"loop_s": float(match.group(1)) if match else float("nan"), "process_s": wall}


def campaign_once(path: Path, out: Path, cases: int, *options: str) -> dict[str, float]:
    started = time.perf_counter()
    subprocess.run(command("campaign", str(path), "--out", str(out), "--overwrite", *options), env=env(),
                   capture_output=True, text=True, check=True)
    wall = time.perf_counter() - started
    return {"wall_s": wall, "cases_per_s": cases / wall}


def overhead(repeats: int) -> dict[str, float]:
    """CPU seconds of a one-hour case, bare and as a campaign runs it, alternating (least and median)."""
    from ecu_sim.campaign import matrix, spec
    from ecu_sim.campaign.case import run_case
    from ecu_sim.runs import simulation

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "one.toml"
        path.write_text("[base]\nrun.duration_s = 3600\n")
        (case,) = matrix.expand(spec.load(path))
    settings = case.settings()
    bare, campaign = [], []
    for _ in range(repeats):
        t0 = time.process_time()
        simulation.run(settings, simulation.DriverSetup("ccm"), link="direct")
        t1 = time.process_time()
        run_case(case)
        t2 = time.process_time()
        bare.append(t1 - t0)
        campaign.append(t2 - t1)
    # the least of each: what the work costs when nothing else on the machine disturbs it
    return {"bare_cpu_s": min(bare), "campaign_cpu_s": min(campaign),
            "bare_cpu_s_median": statistics.median(bare),
            "campaign_cpu_s_median": statistics.median(campaign)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/bench campaign", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=1000, help="one-hour cases per campaign (default 1000)")
    parser.add_argument("--simulate-runs", type=int, default=5, help="simulate processes per round")
    parser.add_argument("--overhead-runs", type=int, default=15, help="bare/campaign case pairs in process")
    parser.add_argument("--no-dask", action="store_true", help="skip the Dask LocalCluster phase")
    parser.add_argument("--out", type=Path, default=REPO / "out" / "bench")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="ecu-sim-campaign-bench-"))
    path = work / "bench.toml"
    path.write_text(CAMPAIGN.format(count=args.cases))
    result: dict[str, Any] = {"cases": args.cases, "cpus": os.cpu_count(), "loadavg_start": os.getloadavg()}
    simulate: list[dict[str, float]] = []
    phases: list[tuple[str, tuple[str, ...]]] = [("workers_1", ("--workers", "1")),
                                                 ("workers_2", ("--workers", "2"))]
    if not args.no_dask:
        phases.append(("dask_local_2", ("--workers", "2", "--executor", "dask")))
    simulate += [simulate_once() for _ in range(args.simulate_runs)]
    for name, options in phases:
        print(f"campaign {name}: {args.cases} cases", file=sys.stderr)
        result[name] = campaign_once(path, work / name, args.cases, *options)
        simulate += [simulate_once() for _ in range(args.simulate_runs)]
    result["overhead"] = overhead(args.overhead_runs)
    result["loadavg_end"] = os.getloadavg()
    loop = statistics.median(s["loop_s"] for s in simulate)
    process = statistics.median(s["process_s"] for s in simulate)
    result["simulate"] = {"runs": simulate, "loop_s_median": loop, "process_s_median": process,
                          "cases_per_s_loop": 1 / loop, "cases_per_s_process": 1 / process}
    (args.out / "campaign.json").write_text(json.dumps(result, indent=2))
    print(report(result))
    return 0


def report(r: dict[str, Any]) -> str:
    sim = r["simulate"]
    runs = len(sim["runs"])
    rows = [f"| one `simulate` process, in-loop (median of {runs}) | {sim['cases_per_s_loop']:.2f} |",
            f"| one `simulate` process, whole process | {sim['cases_per_s_process']:.2f} |"]
    for name in ("workers_1", "workers_2", "dask_local_2"):
        if name in r:
            rows.append(f"| campaign {name} | {r[name]['cases_per_s']:.2f} |")
    two = r["workers_2"]["cases_per_s"]
    lines = ["| what | one-hour cases/s |", "|---|---|", *rows, "",
             f"workers 2 / (2 x simulate in-loop): {two / (2 * sim['cases_per_s_loop']):.0%}",
             f"workers 2 / workers 1: {two / r['workers_1']['cases_per_s']:.2f}"]
    if "dask_local_2" in r:
        lines.append(f"dask LocalCluster / local processes: {r['dask_local_2']['cases_per_s'] / two:.0%}")
    o = r["overhead"]
    lines.append(f"per-case CPU: bare {o['bare_cpu_s']:.3f} s, "
                 f"as a campaign case {o['campaign_cpu_s']:.3f} s "
                 f"(+{o['campaign_cpu_s'] - o['bare_cpu_s']:.3f} s); per-case wall overhead at 1 worker: "
                 f"{1 / r['workers_1']['cases_per_s'] - sim['loop_s_median']:+.3f} s")
    lines.append(f"load average at start {r['loadavg_start'][0]:.1f}, at end {r['loadavg_end'][0]:.1f} "
                 f"on {r['cpus']} CPUs")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
