"""Replay a recording (--record FILE): the recorded input through the same node, compared bit for bit.

The node (ECU or CCM, as recorded) is rebuilt with the recorded settings, route and faults and
runs in virtual time on the recorded received frames, each before the tick it fell before in
the recording. Every frame it sends is compared with the recorded one of the same tick.
Exit status 0: identical; 1: the first tick that differs is reported; 2: not a usable recording.

Examples:
  ecu-sim --record ecu.log --duration 60      # record a run of the ECU ...
  ecu-sim replay ecu.log                      # ... and replay it
"""

from __future__ import annotations

import argparse
import sys

from ecu_sim import replay


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="the recording: FILE.log/.asc/.blf with FILE.ticks")
    parser.add_argument("--dbc", metavar="PATH",
                        help="the DBC to use when the recorded one has moved (default: as recorded)")
    parser.add_argument("--log-level", choices=("debug", "info", "warning", "error"), default="warning")


def run(args: argparse.Namespace) -> int:
    from ecu_sim.service import configure_logging

    configure_logging(args.log_level)
    result = replay.replay(args.file, args.dbc)
    node = result.kind.upper()
    span = f"{result.ticks} ticks ({result.ticks * result.period_s:.1f} s)"
    notes = []
    if result.unverified:
        notes.append(f"{result.unverified} ticks whose frame never reached the bus not compared")
    if result.ends_at is not None:
        notes.append(f"the log ends at tick {result.ends_at}, before the journal does")
    note = f" ({'; '.join(notes)})" if notes else ""
    difference = result.difference
    if difference is None:
        print(f"{args.file}: {node} replayed {span}: {result.frames} frames sent bit for bit as "
              f"recorded{note}")
        return 0
    print(f"{args.file}: {node} differs at tick {difference.tick} (t = {difference.time_s:.1f} s): "
          f"recorded {difference.recorded}, replayed {difference.replayed}; the {result.frames} "
          f"frames before it are identical{note}", file=sys.stderr)
    return 1

