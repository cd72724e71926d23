"""Run thousands of simulations from a TOML campaign file, or compare two campaigns' results.

Each case runs through the same code as `ecu-sim simulate` and yields one row of key figures in
OUT/results.csv (settle time, overshoot, errors after settling, APP activity, wheel energy,
faults, a hash of the frame stream). Examples:
  ecu-sim campaign examples/regression.toml                         # every core of this machine
  ecu-sim campaign examples/regression.toml --executor dask --scheduler tcp://10.0.0.2:8786
  ecu-sim campaign examples/regression.toml --resume                # after an interruption
  ecu-sim campaign compare before/results.csv after/results.csv --png compare.png
  ecu-sim campaign compare eco-results/results.csv --by controller.mode --png eco.png
  ecu-sim campaign compare original/results.csv patched/results.csv --traces   # two controllers
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ecu_sim.errors import ConfigError

EXIT_INTERRUPTED = 130


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE.toml | compare BEFORE.csv AFTER.csv",
                        help="the campaign file; or 'compare' and two results tables")
    run = parser.add_argument_group("running a campaign")
    run.add_argument("--out", metavar="DIR", help="results folder (default: FILE's name + '-results')")
    run.add_argument("--workers", type=int, metavar="N",
                     help="worker processes (default: every core; a LocalCluster's size with dask)")
    run.add_argument("--executor", choices=("local", "dask"), default="local",
                     help="local processes (default), or a Dask distributed cluster")
    run.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                     help="with --executor dask: a running scheduler (default: start a LocalCluster)")
    run.add_argument("--resume", action="store_true", help="finish an interrupted campaign in --out")
    run.add_argument("--overwrite", action="store_true", help="start again, replacing --out's table")
    run.add_argument("--keep-traces", action="store_true",
                     help="also write each case's per-tick CSV to OUT/traces/ID.csv")
    run.add_argument("--command", metavar="COMMAND",
                     help="the controller under test's command line instead of the file's [program] "
                          "command (another version of it: its cases keep their ids)")
    run.add_argument("--socketcan", action="store_true",
                     help="each case of a controller under test on a vcan of its own ({iface}; needs "
                          "SocketCAN and CAP_NET_ADMIN) instead of a udp_multicast group")
    run.add_argument("--parquet", action="store_true",
                     help="also write OUT/results.parquet (the 'parquet' extra: pyarrow)")
    compare = parser.add_argument_group("compare")
    compare.add_argument("--relative", type=float, default=0.05, metavar="FRACTION",
                         help="worse means beyond this fraction of the value before (default 0.05)")
    compare.add_argument("--tolerance", action="append", default=[], metavar="FIGURE=AMOUNT",
                         help="an absolute allowance for one figure, e.g. settle_time_s=1 (repeatable)")
    compare.add_argument("--png", metavar="FILE.png",
                         help="the distributions before and after as one figure (matplotlib); with "
                              "--traces a folder: a figure per case that is not the same")
    compare.add_argument("--traces", action="store_true",
                         help="two versions of a controller: each case's traces (--keep-traces) "
                              "aligned, a verdict per case: same, differs or inconclusive")
    # no defaults here: traces.Tolerance holds them, and importing it would load the campaign
    # package for every command's parser
    compare.add_argument("--speed-tolerance", type=float, metavar="KM/H",
                         help="with --traces: a speed difference allowed beyond the spread "
                              "(default 0.5, as the campaign's Tolerance says)")
    compare.add_argument("--command-tolerance", type=float, metavar="PCT",
                         help="with --traces: a command difference allowed beyond the spread "
                              "(default 2, as the campaign's Tolerance says)")
    compare.add_argument("--by", metavar="SECTION.KEY",
                         help="one table's cases side by side by this setting, e.g. controller.mode: "
                              "fuel, travel time and speed deviation of each value, grouped by the "
                              "other settings")


def run(args: argparse.Namespace) -> int:
    if args.files[0] == "compare":
        return _compare(args)
    if len(args.files) != 1:
        raise ConfigError("give one campaign file, or: ecu-sim campaign compare BEFORE.csv AFTER.csv")
    return _campaign(args, args.files[0])


def _campaign(args: argparse.Namespace, path: str) -> int:
    from ecu_sim.campaign import executors, runner

    if args.scheduler and args.executor != "dask":
        raise ConfigError("--scheduler needs --executor dask")
    if args.workers is not None and args.workers < 1:
        raise ConfigError(f"--workers must be at least 1 (got {args.workers})")
    out = Path(args.out) if args.out else Path(Path(path).stem + "-results")
    options = runner.Options(out=out, workers=args.workers or executors.default_workers(),
                             executor=args.executor, scheduler=args.scheduler, resume=args.resume,
                             overwrite=args.overwrite, keep_traces=args.keep_traces, parquet=args.parquet,
                             command=args.command, socketcan=args.socketcan)
    try:
        outcome = runner.run(path, options, sys.stderr)
    except KeyboardInterrupt:
        print(f"ecu-sim: campaign interrupted; the finished cases are in {out}: run it again with "
              "--resume to finish it", file=sys.stderr)
        return EXIT_INTERRUPTED
    failed = f", {outcome.failed} failed (see the error column)" if outcome.failed else ""
    print(f"{outcome.total} cases ({outcome.ran} run now{failed}): {outcome.table}")
    return 0


def _compare(args: argparse.Namespace) -> int:
    from ecu_sim.campaign import compare

    if args.by is not None:
        return _side_by_side(args)
    if args.traces:
        return _traces(args)
    if len(args.files) != 3:
        raise ConfigError("compare takes two results tables: ecu-sim campaign compare BEFORE.csv AFTER.csv")
    tolerances = compare.parse_tolerances(args.tolerance)
    report = compare.compare(args.files[1], args.files[2], args.relative, tolerances)
    for line in report.lines():
        print(line)
    if args.png:
        compare.plot(report, args.png)
    return 1 if report.worse else 0


def _side_by_side(args: argparse.Namespace) -> int:
    from ecu_sim.campaign import sidebyside

    if len(args.files) != 2:
        raise ConfigError("compare --by takes one results table: ecu-sim campaign compare "
                          "RESULTS.csv --by SECTION.KEY")
    result = sidebyside.side_by_side(args.files[1], args.by)
    for line in result.lines():
        print(line)
    if args.png:
        sidebyside.plot(result, args.png)
    return 0


def _traces(args: argparse.Namespace) -> int:
    from ecu_sim.campaign import traces

    if len(args.files) != 3:
        raise ConfigError("compare --traces takes two results tables: ecu-sim campaign compare "
                          "A/results.csv B/results.csv --traces")
    default = traces.Tolerance()
    tolerance = traces.Tolerance(
        default.speed_kph if args.speed_tolerance is None else args.speed_tolerance,
        default.command_pct if args.command_tolerance is None else args.command_tolerance)
    if tolerance.speed_kph < 0 or tolerance.command_pct < 0:
        raise ConfigError("--speed-tolerance and --command-tolerance must be >= 0")
    verdicts = traces.compare(args.files[1], args.files[2], tolerance)
    for verdict in verdicts:
        print(verdict.line())
    print(traces.summary(verdicts))
    if args.png:
        for path in traces.plot(verdicts, args.png):
            print(f"figure: {path}")
    return 0 if all(v.verdict == traces.SAME for v in verdicts) else 1
