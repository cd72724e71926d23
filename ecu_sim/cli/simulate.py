"""Simulate ECU and driver in virtual time, as fast as the CPU allows, optionally to a CSV file.

The same model, controller, codec and loop as a real run, on a private in-process bus.
Examples:
  ecu-sim simulate --duration 600 --set-speed 90 --out run.csv
  ecu-sim simulate --no-ccm --initial-speed 80 --grade 0      # coastdown
  ecu-sim simulate --app 40 --initial-speed 0                 # standing start, constant pedal
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from contextlib import ExitStack
from typing import IO

from ecu_sim.cli import common
from ecu_sim.errors import ConfigError
from ecu_sim.runs import simulation
from ecu_sim.settings.sources import add_option

log = logging.getLogger("ecu_sim")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    common.add_common(parser, tx_mode=False)  # no real bus: frames are handed over in process
    common.add_ecu_options(parser)
    driver = parser.add_argument_group("driver (one of)").add_mutually_exclusive_group()
    add_option(driver, "--set-speed", key="run.set_speed_kph", type=float, metavar="KPH",
               help="close the loop with the cruise control module (the default, 90 km/h)")
    driver.add_argument("--app", type=float, metavar="PCT", help="hold the pedal at a constant APP")
    driver.add_argument("--no-ccm", action="store_true", help="no pedal at all: a coastdown")
    common.add_gains(parser.add_argument_group("cruise control gains (with --set-speed)"))
    parser.add_argument("--out", metavar="FILE.csv",
                        help="write t_s,speed_kph,app_pct,grade_pct,distance_m, one row per tick "
                             "('-' for stdout)")
    parser.add_argument("--state-hash", metavar="FILE",
                        help="write 'tick hash' of the ECU's full-precision state, one line per tick, "
                             "to compare machines bit for bit")


def run(args: argparse.Namespace) -> int:
    settings = common.settings(args)
    if args.app is not None and not 0 <= args.app <= 100:
        raise ConfigError(f"--app must be within 0..100 % (got {args.app})")
    driver = (simulation.Driver("pedal", args.app) if args.app is not None
              else simulation.Driver("none") if args.no_ccm else simulation.Driver("ccm"))
    started = time.perf_counter()
    # The in-process link: bit-identical to python-can's virtual bus (which the tests use), and
    # much faster because frames are not deep-copied and queued under a lock (docs/performance.md).
    link: simulation.Link = "direct"
    with ExitStack() as files:
        out = sys.stdout if args.out == "-" else None if args.out is None else _open(files, args.out)
        hashes = None if args.state_hash is None else _open(files, args.state_hash)
        try:
            result = simulation.run(settings, driver, out, link=link, hashes=hashes)
        except OSError as exc:  # a full disk while writing
            raise ConfigError(f"cannot write the output: {exc.strerror}") from None
    elapsed = time.perf_counter() - started
    ticks = result.loop.stats.ticks
    state = result.ecu.state
    simulated = ticks * result.settings.run.resolved_period_s
    rate = ticks / elapsed if elapsed else 0.0
    log.info("simulated %.1f s in %.2f s (%d ticks, %.0f ticks/s): final speed %.2f km/h, distance %.0f m",
             simulated, elapsed, ticks, rate, state.speed_kph, state.distance_m)
    return 0


def _open(files: ExitStack, path: str) -> IO[str]:
    try:
        return files.enter_context(open(path, "w", encoding="ascii", buffering=1 << 16))
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror}") from None
