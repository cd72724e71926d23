"""Simulate ECU and driver in virtual time, as fast as the CPU allows, optionally to a CSV file.

The same model, controller, codec and loop as a real run, on a private in-process bus.
Examples:
  ecu-sim simulate --duration 600 --set-speed 90 --out run.csv
  ecu-sim simulate --no-ccm --initial-speed 80 --grade 0      # coastdown
  ecu-sim simulate --app 40 --initial-speed 0                 # standing start, constant pedal
  ecu-sim simulate --duration 60 --diag-script reflash.txt --diag-answers answers.csv
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from contextlib import ExitStack
from typing import IO

from ecu_sim.cli import common
from ecu_sim.errors import CannotCreateError, ConfigError, OutputError
from ecu_sim.runs import progress, simulation
from ecu_sim.settings.sources import add_option
from ecu_sim.vehicle.class6 import Class6State

log = logging.getLogger("ecu_sim")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # No real bus: frames are handed over in process. A simulation needs an end to write its
    # trace, so it has a duration of its own.
    common.add_common(parser, tx_mode=False,
                      duration_default=f"{simulation.DEFAULT_DURATION_S:g} s, an hour of driving")
    common.add_ecu_options(parser)
    driver = parser.add_argument_group("driver (one of)").add_mutually_exclusive_group()
    add_option(driver, "--set-speed", key="run.set_speed_kph", type=float, metavar="KPH",
               help="close the loop with the cruise control module (the default, 90 km/h)")
    driver.add_argument("--app", type=float, metavar="PCT", help="hold the pedal at a constant APP")
    driver.add_argument("--no-ccm", action="store_true", help="no pedal at all: a coastdown")
    common.add_gains(parser.add_argument_group("cruise control gains (with --set-speed)"))
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="a progress bar on stderr for a run longer than a second (default: "
                             "only on a terminal)")
    parser.add_argument("--out", metavar="FILE.csv",
                        help="write t_s,speed_kph,app_pct,grade_pct,distance_m, one row per tick "
                             "('-' for stdout)")
    common.add_stream_option(parser)
    parser.add_argument("--state-hash", metavar="FILE",
                        help="write 'tick hash' of the ECU's full-precision state, one line per tick, "
                             "to compare machines bit for bit")
    common.add_diag_script_options(parser)
    common.add_attack_options(parser)
    add_option(parser.add_argument_group("recording"), "--record", key="record.file", metavar="FILE",
               help="record the ECU's frames, received and sent, to FILE (.log, .asc, .blf with "
                    "FILE.ticks, or FILE.mcap), in simulated time and labelled under --attack, for "
                    "analysis and `ecu-sim replay FILE`")


def run(args: argparse.Namespace) -> int:
    settings = common.settings(args)
    if args.app is not None and not 0 <= args.app <= 100:
        raise ConfigError(f"--app must be within 0..100 % (got {args.app})")
    driver = (simulation.DriverSetup("pedal", args.app) if args.app is not None
              else simulation.DriverSetup("none") if args.no_ccm else simulation.DriverSetup("ccm"))
    attack = common.attack_setup(args, "simulate")
    started = time.perf_counter()
    # The in-process link: bit-identical to python-can's virtual bus (which the tests use), and
    # much faster because frames are not deep-copied and queued under a lock (docs/performance.md).
    link: simulation.Link = "direct"
    bar = sys.stderr if progress.wanted(args.progress, sys.stderr) else None
    paths = [p for p in (args.out, args.state_hash, args.capture, settings.record.file,
                         settings.diagnostics.answers)
             if p not in (None, "-")]
    try:
        with ExitStack() as files:
            out = sys.stdout if args.out == "-" else None if args.out is None else _create(files, args.out)
            hashes = None if args.state_hash is None else _create(files, args.state_hash)
            result = simulation.run(settings, driver, out, link=link, progress=bar, hashes=hashes,
                                    attack=attack)
    except OSError as exc:  # a full disk while writing, or when the files are closed
        raise OutputError(f"writing {' and '.join(paths) or 'the output'} failed: "
                          f"{exc.strerror or exc}; what was written holds the rows up to the "
                          "failure") from None
    elapsed = time.perf_counter() - started
    ticks = result.loop.stats.ticks
    state = result.ecu.state
    simulated = ticks * result.settings.run.resolved_period_s
    rate = ticks / elapsed if elapsed else 0.0
    factor = f"{simulated / elapsed:,.0f}x real time" if elapsed else "instant"
    burnt = ""
    if isinstance(state, Class6State):  # a truck with an engine map
        fuel = state.fuel_used_l
        burnt = f", fuel {fuel:.3f} L" + (f" ({fuel * 1e5 / state.distance_m:.1f} L/100 km)"
                                          if state.distance_m > 0.0 else "")
    log.info("simulated %.1f s in %.2f s (%d ticks, %.0f ticks/s, %s): final speed %.2f km/h, "
             "distance %.0f m%s", simulated, elapsed, ticks, rate, factor, state.speed_kph,
             state.distance_m, burnt)
    return 0


def _create(files: ExitStack, path: str) -> IO[str]:
    """``path`` opened for the run's rows, closed with ``files``; 73 when it cannot be created."""
    try:
        return files.enter_context(open(path, "w", encoding="ascii", buffering=1 << 16))
    except OSError as exc:
        raise CannotCreateError(f"cannot create {path}: {exc.strerror or exc}") from None
