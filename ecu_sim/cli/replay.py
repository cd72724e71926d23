"""Replay a recording (--record FILE): the recorded input through the same node, compared bit for bit.

The node (ECU or CCM, as recorded) is rebuilt with the recorded settings, route and faults and
runs in virtual time on the recorded received frames, each before the tick it fell before in
the recording. Every frame it sends is compared with the recorded one of the same tick, and
the log is checked against its tick journal: each tick's frames, received and sent, and the
frames after the last tick.
Exit status 0: identical; 1: the first tick that differs, or where the log does not fit its
journal, is reported; 2: not a usable recording (no journal, a damaged file, a DBC that moved).
A run that was killed replays up to the last tick its journal holds, and says so.

Examples:
  ecu-sim --record ecu.log --duration 60      # record a run of the ECU ...
  ecu-sim replay ecu.log                      # ... and replay it
"""

from __future__ import annotations

import argparse
import sys

from ecu_sim.runs import replay
from ecu_sim.settings.model import LOG_LEVELS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="the recording: FILE.log/.asc/.blf with FILE.ticks")
    parser.add_argument("--dbc", metavar="PATH",
                        help="the DBC to use when the recorded one has moved (default: as recorded)")
    parser.add_argument("--log-level", choices=LOG_LEVELS, default="warning")


def run(args: argparse.Namespace) -> int:
    from ecu_sim.service.logs import configure_logging

    configure_logging(args.log_level)
    result = replay.replay(args.file, args.dbc)
    node = result.kind.upper()
    span = f"{result.ticks} ticks ({result.ticks * result.period_s:.1f} s)"
    notes = []
    if result.unverified:
        notes.append(f"{result.unverified} ticks whose frame never reached the bus not compared")
    note = f" ({'; '.join(notes)})" if notes else ""
    difference, mismatch = result.difference, result.mismatch
    if difference is not None:
        print(f"{args.file}: {node} differs at tick {difference.tick} (t = {difference.time_s:.1f} s): "
              f"recorded {difference.recorded}, replayed {difference.replayed}; the {result.frames} "
              f"frames before it are identical{note}", file=sys.stderr)
        return 1
    if mismatch is not None:
        print(f"{args.file}: the log does not fit its tick journal at tick {mismatch.tick} "
              f"(t = {mismatch.tick * result.period_s:.1f} s): {mismatch.what}; the {result.frames} "
              f"frames before it are identical{note}. Replay the log and journal one run wrote, "
              f"unedited", file=sys.stderr)
        return 1
    end = ""
    if result.cut:
        last = result.ticks - 1
        where = (f"ends at tick {last} (t = {last * result.period_s:.1f} s), its last flushed tick"
                 if last >= 0 else "holds no tick: the run ended before its first flush")
        end = (f"; the recording {where}, as the run ended without stopping in order (killed, a "
               f"power cut or a full disk)")
    print(f"{args.file}: {node} replayed {span}: {result.frames} frames sent bit for bit as "
          f"recorded{note}{end}")
    return 0

