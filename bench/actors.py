"""The processes of a benchmark run besides ecu-sim itself: ``python -m bench.actors ROLE ...``.

This module is only the command line that starts a role; each role lives with the others of its
kind (bench/receiver.py, bench/loops.py, bench/load.py, bench/inprocess.py).

- ``receiver``: the measuring ear, a separate process on one or more udp_multicast ports. It keeps
  the kernel's receive timestamp (SO_TIMESTAMPNS) of every frame, so its own scheduling does not
  enter the figures, and writes them out on SIGTERM.
- ``periodic``: the baseline a user would pick, python-can's ``bus.send_periodic`` with static
  data (a thread sleeping to absolute deadlines on these interfaces).
- ``testbed``: the original testbed's loop style, re-implemented: wait up to 110 ms for an APP
  frame, step the model with the measured interval, send, sleep the rest of the 100 ms window.
- ``stimulus``: APP steps at random moments, for the latency measurement.
- ``flood``: about 2000 unrelated frames a second on every port.
- ``hog``: a busy loop (start one per core).
- ``sleeper``: a loop that only sleeps, once or twice a period: what a wake-up costs here.
- ``floor``: the ECU's tick with no structure around it: what the same work costs in Python here.
- ``throughput``: virtual-time ticks per second of ECU + CCM in this process.
- ``startup-steps``: where the time to the first frame goes inside one fresh process.

Every role runs until SIGTERM or SIGINT unless it has a duration.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from bench.inprocess import startup_steps, throughput
from bench.load import flood, hog, stimulus
from bench.loops import floor, periodic, sleeper, testbed
from bench.receiver import receiver


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.actors")
    sub = parser.add_subparsers(dest="role", required=True)
    p = sub.add_parser("receiver")
    p.add_argument("--ports", type=int, nargs="+", required=True)
    p.add_argument("--out", required=True)
    p = sub.add_parser("periodic")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--period", type=float, default=0.1)
    p = sub.add_parser("testbed")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--period", type=float, default=0.1)
    p.add_argument("--initial-speed", type=float, default=80.0)
    p.add_argument("--grade", type=float, default=0.0)
    p = sub.add_parser("stimulus")
    p.add_argument("--ports", type=int, nargs="+", required=True)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--low", type=float, default=0.0)
    p.add_argument("--high", type=float, default=100.0)
    p = sub.add_parser("flood")
    p.add_argument("--ports", type=int, nargs="+", required=True)
    p.add_argument("--rate", type=float, default=2000.0)
    sub.add_parser("hog")
    p = sub.add_parser("sleeper")
    p.add_argument("--wakes", type=int, default=1)
    p.add_argument("--period", type=float, default=0.1)
    p = sub.add_parser("floor")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--period", type=float, default=0.1)
    p = sub.add_parser("throughput")
    p.add_argument("--link", choices=("direct", "virtual"), required=True)
    p.add_argument("--seconds", type=float, default=300.0)
    p.add_argument("--repeats", type=int, default=5)
    p = sub.add_parser("startup-steps")
    p.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    role = args.role
    if role == "receiver":
        receiver(args.ports, args.out)
    elif role == "periodic":
        periodic(args.port, args.period)
    elif role == "testbed":
        testbed(args.port, args.period, args.initial_speed, args.grade)
    elif role == "stimulus":
        stimulus(args.ports, args.seed, args.low, args.high)
    elif role == "flood":
        flood(args.ports, args.rate)
    elif role == "hog":
        hog()
    elif role == "sleeper":
        sleeper(args.wakes, args.period)
    elif role == "floor":
        floor(args.port, args.period)
    elif role == "throughput":
        throughput(args.link, args.seconds, args.repeats)
    elif role == "startup-steps":
        startup_steps(args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
