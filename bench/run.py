"""Orchestration of a benchmark run: the phases, the processes, the measurements.

Phases (see docs/performance.md for the method and how to read the results):

1. ``startup``: ``ecu-sim`` and ``ecu-sim ccm`` started one at a time, process start to their first
   frame at a listener; the import-time breakdown; the steps inside one start.
2. ``quiet``, ``flood``, ``hog``: three closed loops side by side, each on its own udp_multicast
   port, recorded by one receiver process: (A) ``ecu-sim`` + ``ecu-sim ccm``; (B) python-can's
   ``send_periodic``; (C) the testbed's loop style + ``ecu-sim ccm``. ``flood`` adds ~2000
   unrelated frames/s on every port, ``hog`` a busy loop on every core.
3. ``latency``: APP steps at random moments to ``ecu-sim`` (port A) and to the testbed loop
   (port C); the time to the first speed frame that reflects each step.
4. ``throughput``: virtual-time ticks per second of ``ecu-sim simulate`` and of ECU + CCM on
   the in-process link and on python-can's ``virtual`` bus.
5. ``cosim``: ``ecu-sim cosim`` stepped over loopback UDP with one and a hundred ticks a request,
   beside the same ECU in process (bench/cosim.py).
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from bench import cosim, latency, levers, results, startup, throughput, timing
from bench.machine import environment
from bench.processes import REPO, child_env
from bench.session import Options, Session


def run(options: Options) -> Path:
    """The chosen phases in their order, then the results; returns the run's folder."""
    session = Session(options)
    result = session.result
    result["environment"] = environment()
    phases = options.phases
    session.say(f"writing to {session.dir}")
    if "startup" in phases:
        session.say(f"start-up: {options.startup_runs} starts each of ecu-sim and ecu-sim ccm")
        result["startup"] = startup.measure(session)
    result.update(timing.measure(session))
    if "levers" in phases:
        session.say("levers: ecu-sim with each lever on, side by side with it off and with send_periodic")
        result["levers"] = levers.measure(session)
    if "latency" in phases:
        session.say(f"latency: {options.latency_s:.0f} s of APP steps")
        result["latency"] = latency.measure(session)
    if "throughput" in phases:
        session.say("throughput: virtual time")
        result["throughput"] = throughput.measure(session)
    if "cosim" in phases:
        session.say("cosim: ecu-sim cosim over loopback UDP, n = 1 and n = 100, beside simulate")
        result["cosim"] = cosim.measure(quick=options.throughput_repeats == 1)
        session.say("cosim:\n" + cosim.text(result["cosim"]))
    if "viewers" in phases:
        session.say("viewers: CPU per tick without and with --stream, --record .log and .mcap")
        span = "5" if options.quiet_s < 10 else "13"
        done = subprocess.run([sys.executable, "-m", "bench.viewers", "--seconds", span], cwd=REPO,
                              env=child_env(), capture_output=True, text=True, check=True)
        result["viewers"] = json.loads(done.stdout)
    result["environment"]["loadavg_end"] = os.getloadavg()
    results.write(session.dir, result)
    if options.figure:
        figure = results.draw(session.dir, result, session.timings, session.latencies)
        session.say(f"figure: {figure}" if figure else "no figure: matplotlib is not installed "
                    "(scripts/bench installs it: pip install -e '.[bench]')")
    session.say(f"results: {session.dir}")
    return session.dir


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="scripts/bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--long", action="store_true",
                        help="a 10-minute quiet phase (drift after 10 min), once unless --repeats")
    parser.add_argument("--quick", action="store_true", help="a few seconds per phase: a smoke test")
    parser.add_argument("--quiet-seconds", type=float, help="length of the quiet phase (default 30)")
    parser.add_argument("--phases", help="comma-separated subset of: " + ",".join(Options.phases))
    parser.add_argument("--out", type=Path, help="results folder (default out/bench)")
    parser.add_argument("--no-figure", action="store_true", help="skip the PNG figure")
    parser.add_argument("--repeats", type=int, metavar="R",
                        help="repetitions of each timing phase, in rounds (default 5; --quick 2)")
    parser.add_argument("--no-probe", action="store_true",
                        help="no fourth, instrumented ECU in the timing phases")
    parser.add_argument("--port", type=int, default=0, help="first udp_multicast port (default random)")
    parser.add_argument("--reanalyze", type=Path, metavar="DIR",
                        help="recompute table, JSON and figure of a finished run from its raw recordings")
    args = parser.parse_args(argv)
    if args.reanalyze:
        return results.reanalyze(args.reanalyze, not args.no_figure)
    options = Options(figure=not args.no_figure, port_base=args.port, long=args.long)
    if args.long:
        options.quiet_s = 610.0
        options.repeats = 1  # the drift test is one long quiet phase; --repeats still applies
    if args.quick:
        options = dataclasses.replace(options, quiet_s=4.0, load_s=3.0, latency_s=4.0, startup_runs=1,
                                      throughput_repeats=1, repeats=2)
    if args.repeats is not None:
        if args.repeats < 1:
            parser.error("--repeats must be at least 1")
        options.repeats = args.repeats
    options.probe = not args.no_probe
    if args.quiet_seconds:
        options.quiet_s = args.quiet_seconds
    if args.phases:
        chosen = tuple(p.strip() for p in args.phases.split(",") if p.strip())
        unknown = set(chosen) - set(Options.phases)
        if unknown:
            parser.error(f"unknown phases: {', '.join(sorted(unknown))}")
        options.phases = chosen
    if args.out:
        options.out = args.out
    run(options)
    return 0
