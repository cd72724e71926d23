"""``scripts/bench dataset``: labelled frames a second, beside the same case unlabelled, in one run.

Three kinds of ``ecu-sim simulate`` process of the powertrain network, interleaved so a change in
the machine's load hits all alike, each timed by its own log line (the loop's time, start-up
excluded):

1. ``plain``: no attacker, no capture: what ``simulate`` costs today;
2. ``unlabelled``: the attacked case without a capture: the same frames, not written;
3. ``labelled``: the attacked case with ``--capture``: the frames written, labelled;
4. ``journal``: the attacked case with ``--record FILE.log``: the ECU's recording, its tick
   journal labelled;
5. ``mcap``: the attacked case with ``--record FILE.mcap``: the ECU's recording with its signals
   decoded and a label message per frame.

The frames of a case are counted from its labels file (a case repeats bit for bit, so the
unlabelled run carried the same frames). Then ``--workers`` labelled cases at once, as a campaign
on this host runs them, until ``--frames`` labelled frames are written: the wall time to a
dataset of that size. Results: a Markdown table on stdout and OUT/dataset.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.campaign import LOOP_LINE, command, env
from ecu_sim.attack.capture import read_labels

POWERTRAIN = ["--vehicle", "class6", "--profile", "j1939", "--network", "powertrain", "--no-progress",
              "--log-level", "info"]
#: a mix of a command injection, a flood and fuzzing, each a tenth of the run
ATTACKS = ["tsc1:speed=1500@{a}+{w}", "request:rate=200@{b}+{w}", "fuzz:rate=500@{c}+{w}"]


def simulate(seconds: float, attacked: bool, capture: Path | None, seed: int = 0,
             record: Path | None = None) -> float:
    """One simulate process; the loop's own seconds from its log line."""
    args = command("simulate", *POWERTRAIN, "--duration", f"{seconds:g}")
    if attacked:
        w = seconds / 10
        for spec in ATTACKS:
            args += ["--attack", spec.format(a=w, b=4 * w, c=7 * w, w=w)]
        args += ["--attack-seed", str(seed)]
    if capture is not None:
        args += ["--capture", str(capture)]
    if record is not None:
        args += ["--record", str(record)]
    done = subprocess.run(args, env=env(), capture_output=True, text=True, check=True)
    found = LOOP_LINE.findall(done.stderr)
    if not found:
        raise RuntimeError(f"no summary line in: {done.stderr[-500:]}")
    return float(found[-1])


def frames_of(capture: Path) -> int:
    return len(read_labels(str(capture))[1])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="scripts/bench dataset", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=600.0, help="simulated seconds a case")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--frames", type=int, default=10_000_000, help="the dataset's size to time")
    parser.add_argument("--out", default="bench-results")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ecu-sim-dataset-") as tmp:
        folder = Path(tmp)
        times: dict[str, list[float]] = {"plain": [], "unlabelled": [], "labelled": [], "journal": [],
                                         "mcap": []}
        frames = 0
        for n in range(args.repeats):
            times["plain"].append(simulate(args.seconds, False, None))
            times["unlabelled"].append(simulate(args.seconds, True, None))
            capture = folder / f"case{n}.log"
            times["labelled"].append(simulate(args.seconds, True, capture))
            frames = frames_of(capture)
            times["journal"].append(simulate(args.seconds, True, None, record=folder / "case.log"))
            times["mcap"].append(simulate(args.seconds, True, None, record=folder / "case.mcap"))
        per_case = frames
        cases = -(-args.frames // per_case)
        started = time.perf_counter()
        with ThreadPoolExecutor(args.workers) as pool:
            list(pool.map(lambda k: simulate(args.seconds, True, folder / f"big{k}.log", k), range(cases)))
        wall = time.perf_counter() - started
        written = sum(frames_of(folder / f"big{k}.log") for k in range(cases))
    median = {k: statistics.median(v) for k, v in times.items()}
    rates = {k: per_case / v for k, v in median.items()}
    result = {"seconds": args.seconds, "repeats": args.repeats, "frames_per_case": per_case,
              "loop_s_median": median, "frames_per_s": rates,
              "labelled_vs_unlabelled": rates["labelled"] / rates["unlabelled"],
              "journal_vs_unlabelled": rates["journal"] / rates["unlabelled"],
              "mcap_vs_unlabelled": rates["mcap"] / rates["unlabelled"],
              "dataset": {"workers": args.workers, "cases": cases, "frames": written, "wall_s": wall}}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "dataset.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    print(f"| run ({args.seconds:g} s simulated, {per_case:,} frames, median of {args.repeats}) "
          "| loop time | frames/s |\n|---|---|---|")
    for kind in times:
        print(f"| {kind} | {median[kind]:.2f} s | {rates[kind]:,.0f} |")
    print(f"\nlabelled / unlabelled: {result['labelled_vs_unlabelled']:.0%}; the ECU's labelled "
          f"recording / unlabelled: journal {result['journal_vs_unlabelled']:.0%}, "
          f"MCAP {result['mcap_vs_unlabelled']:.0%}")
    print(f"{written:,} labelled frames in {cases} cases on {args.workers} workers: {wall:.0f} s wall")
    return 0
