"""Draw a run as a PNG: speed and set speed, pedal, grade (and gear, engine speed) over time or distance.

The input is a `simulate --out` CSV, a recording (.log, .asc or .blf with its .ticks, replayed
through the recorded node so the model's own state is drawn) or an .mcap recording; faults and
late ticks are marked. Needs matplotlib: pip install 'ecu-sim[plot]'.

Examples:
  ecu-sim simulate --duration 600 --out run.csv && ecu-sim plot run.csv -o run.png
  ecu-sim plot ecu.log -o ecu.png --x distance
  ecu-sim plot ecu.mcap ccm.mcap -o run.png     # both nodes of one run: the set speed too
  ecu-sim plot ecu.mcap --show
"""

from __future__ import annotations

import argparse
import logging

from ecu_sim.errors import ConfigError
from ecu_sim.settings.model import LOG_LEVELS

log = logging.getLogger("ecu_sim")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE",
                        help="a simulate --out .csv, a recording (.log/.asc/.blf) or an .mcap "
                             "recording; a second one (the CCM's recording of the same run) adds "
                             "what the first lacks, e.g. the set speed")
    parser.add_argument("-o", "--out", metavar="OUT.png", help="write the picture here")
    parser.add_argument("--x", choices=("time", "distance"), default="time",
                        help="the horizontal axis (default time; distance needs the ECU's output)")
    parser.add_argument("--show", action="store_true", help="also open the picture in a window, "
                                                            "where a display exists")
    parser.add_argument("--dbc", metavar="PATH", help="the DBC of a recording whose DBC has moved")
    parser.add_argument("--log-level", choices=LOG_LEVELS, default="warning")


def run(args: argparse.Namespace) -> int:
    from ecu_sim.plot import figure
    from ecu_sim.plot.series import load_series, merge
    from ecu_sim.service.logs import configure_logging

    configure_logging(args.log_level)
    if args.out is None and not args.show:
        raise ConfigError("say where the picture goes: -o OUT.png (or --show for a window)")
    series = load_series(args.files[0], args.dbc)
    for path in args.files[1:]:
        series = merge(series, load_series(path, args.dbc))
    window = figure.window_figure() if args.show else None
    if args.show and window is None:
        log.warning("--show: no display (DISPLAY or WAYLAND_DISPLAY is not set), so no window opens")
    drawn = figure.draw(series, args.x, window)
    if args.out is not None:
        figure.save(drawn, args.out)
        print(f"{args.out}: {len(series.t_s)} ticks of {series.source}")
    if window is not None:
        figure.show()
    return 0
